"""Limits counted over all of an attempt's processes together (edm_ars.codegen.sandbox), on top of the
per-process rlimits (kept as defence in depth: they still end a single process that goes over on its own).

Two mechanisms, the first where the host allows it, the second always:

- AttemptCgroup: a cgroup of the attempt's own, under the launcher's, in cgroup v2 when the launcher's cgroup
  is writable and delegates the memory and pids controllers, else in the cgroup v1 memory, pids and cpuacct
  hierarchies when they are writable (as root on a cgroup v1 host). memory.max / memory.limit_in_bytes (and
  the swap/memsw limit where present) hold the total memory at memory_mb plus the sandbox's /tmp, pids.max holds
  the processes (threads) at max_procs plus the sandbox's own helpers, and the CPU time of every process that
  ever ran in it (cpu.stat / cpuacct.usage) is what the watcher compares with cpu_s. The launched process joins
  it itself, in the child before exec (AttemptCgroup.join as the pre-exec hook), so nothing the script runs is
  ever outside it; the cgroup is removed after the attempt.
- Watcher: a thread of the launcher that, every POLL_S seconds, walks the attempt's process tree (every process
  whose chain of parents reaches the launched one, from /proc/<pid>/stat), sums the resident memory (with the
  memory files it holds open: a memfd is memory that no resident size shows) and the CPU time, sums the sizes of
  the files under out/ (every OUT_POLL_S seconds; every POLL_S with the files it deleted but holds open, still
  on disk), and kills the whole attempt (every process of the tree and of the cgroup; bubblewrap's pid namespace
  ends with its first process) as soon as the memory total exceeds memory_mb, the CPU total exceeds cpu_s
  (+ CPU_GRACE_S, so a single process meets its own RLIMIT_CPU first), or out/ exceeds output_mb. Without a
  cgroup (an ordinary user on a host without delegation) this bounds the totals everywhere, within one poll
  interval; the CPU time of processes that ended counts with their last reading. Resident sizes count pages
  shared by forked processes once per process; before a kill for memory the total is taken again as the
  proportional set size (PSS, shared pages split), so sharing alone never kills an attempt. In mode "none" a
  process that leaves the tree (a double fork reparents it to init) escapes the watcher, not the cgroup.

A launcher killed during an attempt (SIGKILL of the job) leaves an empty cgroup folder PREFIX<hex> behind; it
holds nothing and limits nothing, and `rmdir` removes it.

out/ is bounded by the watcher rather than by a size-limited tmpfs copied out afterwards: a tmpfs would count the
output against memory, needs a copy of up to output_mb after every attempt, and bwrap's --size exists only from
0.8 on; the watcher stops the writer within OUT_POLL_S (plus the time of the walk), so out/ grows past output_mb by
at most what a script writes in that time (a few MB to a few tens of MB at page-cache speed; RLIMIT_FSIZE still
bounds any one file at output_mb).
"""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from edm_ars.codegen.limits import Limits

#: seconds between two looks at the attempt's processes (a read of /proc/<pid>/stat for every process: ~2 ms)
POLL_S = 0.05
#: seconds between two looks at the output folder (writing is fast: ~1 GB/s into the page cache)
OUT_POLL_S = 0.01
#: the CPU total may exceed cpu_s by this much before the watcher kills: a single busy process then meets its own
#: RLIMIT_CPU (SIGXCPU at cpu_s) first, as before
CPU_GRACE_S = 1.0
#: processes beyond max_procs the cgroup allows: bubblewrap, its pid 1 and the launcher-side helpers
EXTRA_PIDS = 4
#: memory the cgroup allows beyond memory_mb: the sandbox's private /tmp (tmpfs, charged to the cgroup)
EXTRA_MB = 64
#: the name of an attempt's cgroup (a fresh suffix for each)
PREFIX = "edm_ars_attempt_"

MB = 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Verdict:
    """Why the watcher (or the cgroup) ended an attempt: a SandboxResult status and its one-line reason."""

    status: str  # "memory" | "cpu" | "output_too_large"
    reason: str


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / MB:,.0f} MB"


def _processes(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


# ---------------------------------------------------------------------------------------------------------
# the cgroup


def _mountinfo() -> list[tuple[str, str, str, set[str]]]:
    """(root in the file system, mount point, fs type, super options) of each cgroup mount."""
    mounts = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        pre, _, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in {"cgroup", "cgroup2"}:
            mounts.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return mounts


def _own_cgroups() -> dict[str, str]:
    """The launcher's cgroup path per v1 controller, and under "" its cgroup v2 path."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _place(mount_root: str, mount_point: str, path: str) -> Path | None:
    """The folder of cgroup `path` under a mount that shows the hierarchy from `mount_root` (None if outside)."""
    rel = os.path.relpath(path, mount_root)
    return None if rel.startswith("..") else Path(os.path.normpath(os.path.join(mount_point, rel)))


def _writable(folder: Path | None) -> bool:
    return folder is not None and folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


class AttemptCgroup:
    """An attempt's own cgroup (v2, or v1 memory + pids + cpuacct): see the module docstring."""

    def __init__(self, version: int, folders: dict[str, Path]):
        self.version = version
        self.folders = folders  # controller -> folder ("" for v2: one folder holds them all)
        self._procs = [str(f / "cgroup.procs") for f in folders.values()]

    @classmethod
    def create(cls, limits: Limits) -> AttemptCgroup | None:
        """A fresh cgroup with the limits set, or None when the host gives this process none to make."""
        own, mounts = _own_cgroups(), _mountinfo()
        name = PREFIX + uuid.uuid4().hex[:12]
        for root, point, fstype, _ in mounts:
            if fstype != "cgroup2" or "" not in own:
                continue
            parent = _place(root, point, own[""])
            try:
                delegated = {"memory", "pids"} <= set((parent / "cgroup.subtree_control").read_text().split()) \
                    if _writable(parent) else False
            except OSError:
                delegated = False
            if delegated:
                made = cls._make(2, {"": parent / name}, limits)  # type: ignore[operator]
                if made is not None:
                    return made
        parents: dict[str, Path] = {}
        for controller in ("memory", "pids", "cpuacct"):
            for root, point, fstype, options in mounts:
                if fstype == "cgroup" and controller in options and controller in own:
                    folder = _place(root, point, own[controller])
                    if _writable(folder):
                        parents[controller] = folder  # type: ignore[assignment]
        if len(parents) == 3:
            return cls._make(1, {c: p / name for c, p in parents.items()}, limits)
        return None

    @classmethod
    def _make(cls, version: int, folders: dict[str, Path], limits: Limits) -> AttemptCgroup | None:
        made = cls(version, {})
        try:
            for controller, folder in folders.items():
                folder.mkdir()
                made.folders[controller] = folder
            made._procs = [str(f / "cgroup.procs") for f in made.folders.values()]
            memory, pids = (limits.memory_mb + EXTRA_MB) * MB, limits.max_procs + EXTRA_PIDS
            if version == 2:
                folder = folders[""]
                _write(folder / "memory.max", memory)
                _write(folder / "memory.swap.max", 0, optional=True)
                _write(folder / "pids.max", pids)
            else:
                _write(folders["memory"] / "memory.limit_in_bytes", memory)
                _write(folders["memory"] / "memory.memsw.limit_in_bytes", memory, optional=True)
                _write(folders["pids"] / "pids.max", pids)
        except OSError:
            made.remove()
            return None
        return made

    def join(self) -> None:
        """The pre-exec hook: move the calling process (the launched child, before exec) into the cgroup. A
        failure leaves it outside (the watcher then counts on its own; see holds). Plain system calls only: it runs
        between fork and exec, where a lock another thread of the launcher held at the fork would never be freed."""
        pid = str(os.getpid()).encode()
        for procs in self._procs:
            try:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            except OSError:
                return

    def holds(self, pid: int) -> bool:
        """Whether `pid` is in the cgroup (in every hierarchy)."""
        try:
            return all(str(pid) in Path(p).read_text().split() for p in self._procs)
        except OSError:
            return False

    def pids(self) -> set[int]:
        found: set[int] = set()
        for procs in self._procs:
            try:
                found |= {int(p) for p in Path(procs).read_text().split()}
            except OSError:
                pass
        return found

    def cpu_seconds(self) -> float | None:
        """CPU time of every process that ran in the cgroup, ended ones included."""
        try:
            if self.version == 2:
                stat = dict(line.split() for line in (self.folders[""] / "cpu.stat").read_text().splitlines())
                return int(stat["usage_usec"]) / 1e6
            return int((self.folders["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
        except (OSError, KeyError, ValueError):
            return None

    def oom_kills(self) -> int:
        """How many processes the kernel killed at the cgroup's memory limit."""
        events = self.folders[""] / "memory.events" if self.version == 2 else \
            self.folders["memory"] / "memory.oom_control"
        try:
            fields = dict(line.split() for line in events.read_text().splitlines())
            return int(fields.get("oom_kill", 0))
        except (OSError, ValueError):
            return 0

    def remove(self) -> None:
        """Kill whatever is left in it and remove it (retrying while the killed processes exit)."""
        for _ in range(100):
            left = self.pids()
            for pid in left:
                _kill(pid)
            for folder in list(self.folders.values()):
                try:
                    folder.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
            if all(not f.exists() for f in self.folders.values()):
                return
            time.sleep(0.01)


def _write(path: Path, value: int, optional: bool = False) -> None:
    if optional and not path.exists():
        return
    path.write_text(str(value))


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------------------------------------
# the watcher


def _stats() -> dict[int, tuple[int, int, float, int, bytes]]:
    """pid -> (parent pid, start time, CPU seconds, resident bytes, state) of every process, from
    /proc/<pid>/stat."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = text[text.rfind(b")") + 2:].split()
        try:
            table[int(entry.name)] = (int(fields[1]), int(fields[19]), (int(fields[11]) + int(fields[12])) / _TICK,
                                      int(fields[21]) * _PAGE, fields[0])
        except (IndexError, ValueError):
            continue
    return table


def _start_time(pid: int) -> int:
    """The start time of process `pid` (clock ticks after boot), -1 when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read()
        return int(text[text.rfind(b")") + 2:].split()[19])
    except (OSError, IndexError, ValueError):
        return -1


def tree(root: int, table: dict[int, tuple[int, int, float, int, bytes]]) -> list[int]:
    """`root` and every process descending from it, in `table` (from _stats)."""
    children: dict[int, list[int]] = {}
    for pid, row in table.items():
        children.setdefault(row[0], []).append(pid)
    found, todo = [], [root] if root in table else []
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _pss(pid: int) -> int | None:
    """The proportional set size in bytes (shared pages split among their sharers), or None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def folder_bytes(folder: Path) -> int:
    """Total size of the regular files under `folder` (links not followed), at any depth: without recursion and
    through folder descriptors (one open per level), so paths longer than PATH_MAX count too. A folder the script
    locked (mode 000: as an ordinary user the launcher could not look in) is opened for its owner again, as the
    tidy step after the attempt does. A level that cannot be opened (e.g. out of descriptors) is left out: the
    check after the attempt still sees everything."""
    top = _open_folder(str(folder), None)
    if top is None:
        return 0
    total, size = 0, _scan(top)
    stack = [(top, size[1])]
    total += size[0]
    try:
        while stack:
            fd, subfolders = stack[-1]
            if not subfolders:
                os.close(fd)
                stack.pop()
                continue
            child = _open_folder(subfolders.pop(), fd)
            if child is None:
                continue
            size = _scan(child)
            total += size[0]
            stack.append((child, size[1]))
    finally:
        for fd, _ in stack:
            os.close(fd)
    return total


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _open_folder(name: str, dir_fd: int | None) -> int | None:
    """A descriptor of folder `name` (never through a link), unlocking it for its owner when it is locked."""
    try:
        return os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=dir_fd)
    except PermissionError:
        pass
    except OSError:
        return None
    try:  # O_PATH needs no permission on the folder; the chmod and the open then go through that very folder
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        via = f"/proc/self/fd/{handle}"
        os.chmod(via, stat.S_IMODE(os.stat(via).st_mode) | 0o700)
        return os.open(via, _FOLDER)
    except OSError:
        return None
    finally:
        os.close(handle)


def _scan(fd: int) -> tuple[int, list[str]]:
    """(bytes of the regular files, names of the subfolders) of the folder open as `fd`."""
    total, subfolders = 0, []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.name)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
    except OSError:
        pass
    return total, subfolders


def _held_files(pids: list[int]) -> tuple[int, int]:
    """(bytes in memory files, bytes in other deleted files) that the processes `pids` hold open: memory and disk
    that neither the resident sizes nor a walk of out/ would show (a memfd never mapped, a file in out/ deleted
    while still open). Allocated bytes (st_blocks), so a sparse file counts what it uses; each file once."""
    memfd = deleted = 0
    seen: set[tuple[int, int]] = set()
    for pid in pids:
        try:
            entries = list(os.scandir(f"/proc/{pid}/fd"))
        except OSError:
            continue
        for entry in entries:
            try:
                target = os.readlink(entry.path)
                if not target.endswith(" (deleted)"):
                    continue
                info = os.stat(entry.path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            if target.startswith("/memfd:"):
                memfd += info.st_blocks * 512
            else:
                deleted += info.st_blocks * 512
    return memfd, deleted


class Watcher(threading.Thread):
    """Polls the attempt launched as `root` (and its cgroup, when it holds it) and kills the whole attempt when a
    total goes over its limit; `verdict` then says which and why. See the module docstring."""

    def __init__(self, root: int, out_dir: Path, limits: Limits, cgroup: AttemptCgroup | None):
        super().__init__(name=f"edm_ars_watcher_{root}", daemon=True)
        self.root, self.out_dir, self.limits, self.cgroup = root, out_dir, limits, cgroup
        # the launched process's start time: once it is reaped its pid may be reused, and is then no longer ours
        self._root_start = _start_time(root)
        self.verdict: Verdict | None = None
        self._stop_event = threading.Event()
        self._seen: dict[tuple[int, int], float] = {}  # (pid, start time) -> last CPU seconds
        self._gone = 0.0  # CPU seconds of the tree's processes that ended

    def run(self) -> None:
        polls = 0
        while not self._stop_event.wait(OUT_POLL_S):
            polls += 1
            verdict = self.check_output()
            if verdict is None and polls % round(POLL_S / OUT_POLL_S) == 0:
                verdict = self.check()
            if verdict is not None:
                self.verdict = verdict
                self.kill()
                return

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def check(self) -> Verdict | None:
        """One look: the verdict if a total is over its limit, else None."""
        table = _stats()
        pids = self._tree(table)
        live = {(pid, table[pid][1]): table[pid][2] for pid in pids}
        self._gone += sum(cpu for key, cpu in self._seen.items() if key not in live)
        self._seen = live
        cgroup_cpu = self.cgroup.cpu_seconds() if self.cgroup is not None else None
        cpu = cgroup_cpu if cgroup_cpu is not None else self._gone + sum(live.values())
        if cpu > self.limits.cpu_s + CPU_GRACE_S:
            return Verdict("cpu", f"{_processes(len(pids))} used {cpu:,.1f} CPU-s together, over the CPU limit of "
                                  f"{self.limits.cpu_s} s")
        memfd, deleted = _held_files(pids)
        limit = self.limits.memory_mb * MB
        if sum(table[pid][3] for pid in pids) + memfd > limit:
            sizes = [_pss(pid) for pid in pids]
            held = memfd + sum(s if s is not None else table[pid][3] for pid, s in zip(pids, sizes, strict=True))
            if held > limit:
                return Verdict("memory", f"{_processes(len(pids))} held {_mb(held)} together, over the memory "
                                         f"limit of {self.limits.memory_mb:,} MB")
        return self.check_output(deleted)

    def check_output(self, deleted: int = 0) -> Verdict | None:
        """One look at out/ (cheap: a walk of a few files), taken more often than the processes; `deleted`: the
        bytes of files the attempt deleted but holds open (still on disk), counted with out/."""
        written = folder_bytes(self.out_dir) + deleted
        if written > self.limits.output_mb * MB:
            held = f" ({_mb(deleted)} of it in deleted files still held open)" if deleted else ""
            return Verdict("output_too_large", f"the output folder reached {_mb(written)} while the script wrote "
                                               f"it{held}, over the output limit of {self.limits.output_mb:,} MB")
        return None

    def kill(self) -> None:
        """SIGKILL every process of the attempt (its tree, its cgroup, its process group) until none is left."""
        for _ in range(50):
            table = _stats()
            left = {pid for pid in self._tree(table) if table[pid][4] != b"Z"}  # zombies wait for a reaper
            left |= {pid for pid in (self.cgroup.pids() if self.cgroup is not None else ())
                     if table.get(pid, (0, 0, 0.0, 0, b"Z"))[4] != b"Z"}
            left.discard(os.getpid())
            if not left:
                return
            for pid in sorted(left, key=lambda p: p != self.root):  # the launched process first
                _kill(pid)
            if self._tree(table):
                try:
                    os.killpg(self.root, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def _tree(self, table: dict[int, tuple[int, int, float, int, bytes]]) -> list[int]:
        """The attempt's processes in `table`: none once the launched process is gone (its pid not ours)."""
        row = table.get(self.root)
        return tree(self.root, table) if row is not None and row[1] == self._root_start else []

    def cgroup_verdict(self) -> Verdict | None:
        """After the attempt: a process the kernel killed at the cgroup's memory limit (between two polls)."""
        if self.cgroup is not None and self.cgroup.oom_kills() > 0:
            return Verdict("memory", f"the attempt's processes together reached the memory limit of "
                                     f"{self.limits.memory_mb:,} MB (the kernel ended one at the cgroup's limit)")
        return None
