"""Run model-written analysis code under a fixed contract, inside bubblewrap, with resource limits.

The contract, as the script sees it: the working directory is /sandbox; the script is /sandbox/analysis.py
(read-only); every input is a read-only file /sandbox/inputs/<name>, listed with its size in
/sandbox/inputs/manifest.json; /sandbox/out is the only writable place (plus a private, small /tmp). There is no
network, no environment beyond a fixed handful of variables (no API keys, HOME is the out folder), no /home,
/root, /work or /var: only the interpreter and the system libraries, read-only.

Two layers, on purpose:
- scan() (edm_ars.codegen.codescan, re-exported here) is the early, explainable refusal: it reads the source (never
  runs it) and names each line that imports a network, process or introspection module, calls eval/exec and
  friends, reaches for dunder attributes, or gives a file function a path outside the contract. It is a list
  of rules, not a proof.
- run_sandboxed() is the real boundary: bubblewrap namespaces (network, pid, ipc, uts, cgroup, user), a
  minimal read-only file system, an unprivileged uid when started as root, rlimits (CPU, address space,
  processes, file size, open files), a seccomp filter that refuses execve (no programs beyond the
  interpreter), and a wall clock that kills the whole sandbox.

How the uid drop works when the workflow runs as root (RLIMIT_NPROC is not enforced for uid 0): bwrap itself
runs as root so it can bind the interpreter from inside /root (pyenv), creates every namespace but the user
one, and runs `setpriv` to uid/gid 65534 with no capabilities and no_new_privs; `unshare --user` then puts the
script in a user namespace of its own, so RLIMIT_NPROC counts this sandbox's processes only (two analyses
running side by side do not share one budget; where unprivileged user namespaces are off, the probe falls
back to running without this one, and the budget is then shared by all processes of uid 65534); `prlimit` sets
the limits last. Started as any other user, bwrap makes the user namespace itself (--unshare-all) and the same
`prlimit` follows.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path

from edm_ars.codegen.codescan import FORBIDDEN_MODULES, scan

__all__ = ["FORBIDDEN_MODULES", "Limits", "SandboxResult", "run_sandboxed", "sandbox_available", "scan"]

#: where the contract puts things inside the sandbox
SANDBOX = "/sandbox"
#: the uid/gid the script runs as when the workflow runs as root ("nobody" on Debian)
UNPRIVILEGED_ID = 65534
#: how much of stdout/stderr a result keeps (the end: where the traceback is)
TRIM_CHARS = 4000
#: the private /tmp inside the sandbox (tmpfs, counts against memory)
TMP_MB = 64
#: open files allowed
NOFILE = 256

INSTALL_HINT = ("install bubblewrap (`apt-get install bubblewrap`), or set `codegen.sandbox: none` in the "
                "configuration to run generated code without a sandbox (the paper then says so)")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run."""

    cpu_s: int = 120  # RLIMIT_CPU of the interpreter (SIGXCPU at cpu_s, SIGKILL 2 s later)
    memory_mb: int = 2048  # RLIMIT_AS
    wall_s: int = 300  # the whole sandbox is killed after this
    max_procs: int = 16  # RLIMIT_NPROC (threads count), in the sandbox's own user namespace
    output_mb: int = 50  # RLIMIT_FSIZE, and the out folder's total size afterwards


#: the memory limit for scripts given large frames: this much for the interpreter and its libraries, plus
#: FRAME_COPIES times the frames' size in memory (8 bytes a cell), room for a few working copies of them
BASE_MB = 1024
FRAME_COPIES = 6


def memory_for(limits: Limits, frame_cells: int) -> Limits:
    """The limits with memory_mb raised, when the frames a script is given need more, to BASE_MB + FRAME_COPIES x
    their size (8-byte cells): a plain refit on a million students' rows then fits, while small data keep the
    configured limit. The configured memory_mb is the floor, never lowered."""
    need = BASE_MB + math.ceil(FRAME_COPIES * 8 * int(frame_cells) / 2**20)
    return limits if need <= limits.memory_mb else replace(limits, memory_mb=need)


@dataclass(frozen=True)
class SandboxResult:
    """What a run came to; `stderr` and `reason` are what a repair prompt gets."""

    status: str  # "ok" | "refused" | "error" | "timeout" | "cpu" | "memory" | "output_too_large"
    exit_code: int | None
    stdout: str  # the last TRIM_CHARS characters
    stderr: str  # the last TRIM_CHARS characters
    seconds: float  # wall seconds: for logs and the benchmark only, never written to artifacts
    reason: str  # one line: why it is not "ok" ("" when ok)


#: Runs in the sandbox before the script: a seccomp filter that answers execve/execveat with EPERM (so no
#: program beyond this interpreter can start, from subprocess, os.system or os.exec*), then the script as
#: __main__. The filter is classic BPF built by hand: check the architecture, refuse the exec calls (and the
#: whole x32 range on x86_64), allow the rest. Arguments: the script path.
_BOOTSTRAP = r"""
import ctypes, platform, struct, sys
ARCH = {"x86_64": (0xC000003E, (59, 322)), "aarch64": (0xC00000B7, (221, 281))}
arch, calls = ARCH[platform.machine()]
def op(code, jt, jf, k): return struct.pack("HBBI", code, jt, jf, k)
LD, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
prog = [op(LD, 0, 0, 4), op(JEQ, 1, 0, arch), op(RET, 0, 0, 0x80000000), op(LD, 0, 0, 0)]
if arch == 0xC000003E:
    prog.append(op(JGE, len(calls) + 1, 0, 0x40000000))
for i, nr in enumerate(calls):
    prog.append(op(JEQ, len(calls) - i, 0, nr))
prog += [op(RET, 0, 0, 0x7FFF0000), op(RET, 0, 0, 0x00050000 | 1)]
code = b"".join(prog)
buf = ctypes.create_string_buffer(code, len(code))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(prog), ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
    sys.exit("sandbox: cannot install the seccomp filter (errno %d)" % ctypes.get_errno())
del ctypes, platform, struct, ARCH, arch, calls, op, prog, code, buf, Fprog, fprog, libc
path = sys.argv[1]
sys.argv = [path]
with open(path, encoding="utf-8") as fh:
    source = fh.read()
exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
"""


@lru_cache(maxsize=4)
def _interpreter(python: str) -> tuple[str, tuple[str, ...]]:
    """The interpreter's path as it names itself (a venv's bin/python stays unresolved: pyvenv.cfg is found
    beside it) and the folders it needs (prefixes, site-packages, the real binary's folder), each both as named
    and resolved; asked of the interpreter once."""
    code = ("import json, site, sys; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix, "
            "sys.exec_prefix, sys.base_exec_prefix] + site.getsitepackages()))")
    out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin"}, check=True).stdout
    executable, *folders = json.loads(out)
    folders += [os.path.dirname(executable), os.path.dirname(os.path.realpath(executable))]
    named = {os.path.abspath(f) for f in folders if os.path.isdir(f)}
    return executable, tuple(sorted(named | {os.path.realpath(f) for f in named}))


def _system_binds() -> list[str]:
    """Read-only binds of /usr, the /lib* and /bin links and the loader cache."""
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--perms", "0755", "--dir", "/etc"]  # else 0700 (bwrap's default for a made parent)
    for etc in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    return args


def _interpreter_binds(folders: tuple[str, ...]) -> list[str]:
    """Read-only binds of the interpreter's folders and only those: a pyenv under /root brings that version's
    folder, nothing else of /root. After the private /tmp, so an interpreter under /tmp stays visible."""
    args: list[str] = []
    kept: list[str] = []
    for folder in folders:  # sorted, so a parent comes before its children
        if folder == "/usr" or folder.startswith("/usr/") or any(folder.startswith(k + "/") for k in kept):
            continue
        kept.append(folder)
        for parent in [str(p) for p in reversed(Path(folder).parents) if str(p) not in {"/", "/tmp"}]:
            args += ["--perms", "0755", "--dir", parent]  # bwrap would make them 0700, closed to uid 65534
        args += ["--ro-bind", folder, folder]
    return args


def _child_env(python_bin: str, home: str, tmp: str) -> dict[str, str]:
    """The script's whole environment: built from nothing, never from os.environ."""
    return {"PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HOME": home,
            # pyarrow (the Parquet inputs) sizes its CPU pool by OMP_NUM_THREADS; its I/O pool (8) by this
            "ARROW_IO_THREADS": "1",
            "MPLCONFIGDIR": tmp, "PYTHONDONTWRITEBYTECODE": "1",
            "JOBLIB_MULTIPROCESSING": "0"}  # serial joblib, without its warning about the missing /dev/shm


def _prlimit(limits: Limits, *, nproc: int | None) -> list[str]:
    mb = 1024 * 1024
    args = ["prlimit", f"--cpu={limits.cpu_s}:{limits.cpu_s + 2}", f"--as={limits.memory_mb * mb}",
            f"--fsize={limits.output_mb * mb}", f"--nofile={NOFILE}", "--core=0"]
    if nproc is not None:
        args.append(f"--nproc={nproc}")
    return args + ["--"]


#: As root, after the uid drop: a user namespace of the script's own, so that RLIMIT_NPROC counts this
#: sandbox's processes only. Where unprivileged user namespaces are off (a sysctl, an AppArmor policy) the
#: probe falls back to running without it: the limit is then shared by every process of UNPRIVILEGED_ID.
OWN_USERNS = ("unshare", "--user", "--")


def _drop_privileges(own_userns: bool) -> list[str]:
    """As root: become UNPRIVILEGED_ID with no capabilities (and no way to regain any), then, where the
    kernel allows it, a user namespace of the script's own."""
    ident = str(UNPRIVILEGED_ID)
    return ["setpriv", f"--reuid={ident}", f"--regid={ident}", "--clear-groups", "--no-new-privs",
            "--inh-caps=-all", "--bounding-set=-all", "--", *(OWN_USERNS if own_userns else ())]


def _bwrap_command(bwrap: str, python: str, binds: list[str], env: dict[str, str], limits: Limits,
                   script_args: list[str], own_userns: bool = True) -> list[str]:
    root = os.geteuid() == 0
    # as root, the user namespace comes after the uid drop (see the module docstring); otherwise bwrap makes it
    namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"] \
        if root else ["--unshare-all"]
    interpreter, folders = _interpreter(python)
    cmd = [bwrap, *namespaces, "--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv"]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    tmp_size = ["--size", str(TMP_MB * 1024 * 1024)] if _supports(bwrap, "--size") else []  # bwrap >= 0.8
    cmd += [*_system_binds(), "--proc", "/proc", "--dev", "/dev", "--perms", "1777", *tmp_size, "--tmpfs", "/tmp",
            *_interpreter_binds(folders), "--dir", SANDBOX, *binds, "--remount-ro", "/", "--chdir", SANDBOX, "--"]
    cmd += _drop_privileges(own_userns) if root else []
    return cmd + _prlimit(limits, nproc=limits.max_procs) + [interpreter, "-I", "-B", "-c", _BOOTSTRAP,
                                                              *script_args]


@lru_cache(maxsize=8)
def _supports(bwrap: str, option: str) -> bool:
    """Whether this bwrap knows an option (its --help lists it); older ones run without the extra."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        return False
    return f"{option} " in done.stdout + done.stderr


def _try_sandbox(bwrap: str, python: str, own_userns: bool) -> str | None:
    """Run an empty script through the whole chain (bwrap, uid drop, limits, exec filter): None or why not."""
    with tempfile.TemporaryDirectory(prefix="edm_ars_probe_") as tmp:
        empty = Path(tmp, "probe.py")
        empty.write_text("", encoding="utf-8")
        empty.chmod(0o644)
        binds = ["--ro-bind", str(empty), f"{SANDBOX}/analysis.py"]
        try:
            cmd = _bwrap_command(bwrap, python, binds, _child_env("/usr/bin", "/tmp", "/tmp"), Limits(),
                                 [f"{SANDBOX}/analysis.py"], own_userns)
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bubblewrap ({bwrap}) could not start a trivial sandbox: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap ({bwrap}) could not start a trivial sandbox here: {last}"
    return None


@lru_cache(maxsize=8)
def _probe(bwrap: str, python: str, euid: int) -> tuple[str | None, bool]:
    """(why the sandbox cannot run or None, whether the script gets a user namespace of its own): tried once."""
    missing = [tool for tool in (["setpriv"] if euid == 0 else []) + ["prlimit"] if not shutil.which(tool)]
    if missing:
        return f"{', '.join(missing)} (util-linux) not found on PATH; the sandbox needs it", False
    reason = _try_sandbox(bwrap, python, own_userns=True)
    if reason is not None and euid == 0 and _try_sandbox(bwrap, python, own_userns=False) is None:
        return None, False
    return reason, reason is None


def sandbox_available(python: str = sys.executable) -> str | None:
    """None when bubblewrap can run a trivial sandbox here (tried once per interpreter, then cached), else
    the reason, naming what to install or the `codegen.sandbox: none` escape."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"bubblewrap (bwrap) is not on PATH: {INSTALL_HINT}"
    reason, _ = _probe(bwrap, python, os.geteuid())
    return None if reason is None else f"{reason}; {INSTALL_HINT}"


def _trim(path: Path) -> str:
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - 4 * TRIM_CHARS))
        return fh.read().decode("utf-8", errors="replace")[-TRIM_CHARS:]


def _validate_inputs(inputs: dict[str, Path]) -> dict[str, Path]:
    checked: dict[str, Path] = {}
    for name, path in inputs.items():
        if not name or "/" in name or name in {".", "..", "manifest.json"} or name.startswith("."):
            raise ValueError(f"input name {name!r}: must be a plain file name (not manifest.json, no '/')")
        real = Path(path).resolve()
        if not real.is_file():
            raise FileNotFoundError(f"input {name!r}: {path} is not a file")
        checked[name] = real
    return checked


def _stage(staging: Path, script: Path, inputs: dict[str, Path], readable_by_other: bool) -> dict[str, Path]:
    """Copy the script, write the manifest; copy an input only when the dropped uid could not read it."""
    shutil.copyfile(script, staging / "analysis.py")
    (staging / "analysis.py").chmod(0o644)
    manifest = {name: {"path": f"inputs/{name}", "bytes": path.stat().st_size} for name, path in inputs.items()}
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (staging / "manifest.json").chmod(0o644)
    sources: dict[str, Path] = {}
    for name, path in inputs.items():
        if readable_by_other and not path.stat().st_mode & stat.S_IROTH:
            copy = staging / "inputs" / name
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(path, copy)
            copy.chmod(0o644)
            path = copy
        sources[name] = path
    return sources


def _refused(reason: str) -> SandboxResult:
    return SandboxResult("refused", None, "", "", 0.0, reason)


def _tidy_out(out_dir: Path, owner: int | None) -> tuple[int, list[str]]:
    """Total bytes of the out folder's regular files. Removes anything else (links, fifos, sockets), hands
    everything back to `owner` when given, strips setuid/setgid/sticky bits and unlocks folders the script
    locked (mode 000), never following a link."""
    total, removed = 0, []
    _unlock(out_dir)
    for dirpath, dirnames, filenames in os.walk(out_dir):  # top-down: a folder is unlocked before the descent
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                removed.append(str(path.relative_to(out_dir)))
                path.unlink()
                continue
            if owner is not None:
                os.chown(path, owner, os.getegid(), follow_symlinks=False)
            if mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX):
                os.chmod(path, stat.S_IMODE(mode) & 0o777)
            if stat.S_ISDIR(mode):
                _unlock(path)
            else:
                total += path.lstat().st_size
        dirnames[:] = [d for d in dirnames if Path(dirpath, d).is_dir() and not Path(dirpath, d).is_symlink()]
    if owner is not None:
        os.chown(out_dir, owner, os.getegid(), follow_symlinks=False)
    return total, removed


def _unlock(folder: Path) -> None:
    mode = folder.lstat().st_mode
    if mode & 0o700 != 0o700:
        os.chmod(folder, stat.S_IMODE(mode) | 0o700)


def _empty(out_dir: Path) -> None:
    for child in out_dir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _classify(code: int | None, killed: bool, stderr: str, limits: Limits) -> tuple[str, str]:
    """The status and its one-line reason from how the process ended (exit code 128+n: killed by signal n)."""
    if killed:
        return "timeout", f"killed after the wall limit of {limits.wall_s} s"
    if code == 0:
        return "ok", ""
    sig = code - 128 if code is not None and code > 128 else None
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and "MemoryError" not in stderr):
        return "cpu", f"stopped at the CPU limit of {limits.cpu_s} s"
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr or "std::bad_alloc" in stderr:
        return "memory", f"ran out of memory at the limit of {limits.memory_mb} MB"
    if sig == signal.SIGXFSZ or "File too large" in stderr:
        return "output_too_large", f"a file outgrew the output limit of {limits.output_mb} MB"
    last = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "")
    how = f"killed by signal {signal.Signals(sig).name}" if sig else f"exit code {code}"
    return "error", f"{how}: {last}" if last else how


def _count_tasks(uid: int) -> int:
    """Threads of `uid` now (RLIMIT_NPROC counts them): the base of mode "none"'s process limit."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip())
    return count


def _set_limits(limits: Limits, nproc: int | None) -> None:
    import resource

    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 2))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_mb * mb, limits.output_mb * mb))
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def run_sandboxed(script: Path, inputs: dict[str, Path], out_dir: Path, limits: Limits = Limits(),
                  mode: str = "bwrap", python: str = sys.executable, skip_scan: bool = False) -> SandboxResult:
    """Run `script` (a .py file) under the contract (see the module docstring) and classify how it ended.

    mode "bwrap" is the sandbox; mode "none" runs the script directly (same limits, same empty environment, a
    private working folder laid out like /sandbox with links; no namespaces, no exec filter, and RLIMIT_NPROC
    only on top of the caller's own processes and not at all as root) and only when the caller passes it
    explicitly. scan() runs first unless skip_scan; a violation, a non-empty out_dir or a missing bubblewrap is
    status "refused" and nothing runs. Raises ValueError/FileNotFoundError for a bad input name or file."""
    if mode not in {"bwrap", "none"}:
        raise ValueError(f"sandbox mode {mode!r}: expected 'bwrap' or 'none'")
    script, out_dir = Path(script), Path(out_dir)
    checked = _validate_inputs(inputs)
    if not script.is_file():
        return _refused(f"{script}: the analysis script does not exist")
    if not skip_scan:
        violations = scan(script.read_text(encoding="utf-8", errors="replace"))
        if violations:
            return _refused(f"{script.name}: {len(violations)} violation(s) of the contract: " + "; ".join(violations))
    if mode == "bwrap":
        reason = sandbox_available(python)
        if reason is not None:
            return _refused(reason)
    if out_dir.is_symlink() or (out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir()))):
        return _refused(f"{out_dir}: the output folder must be new or empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    drop = mode == "bwrap" and os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="edm_ars_sandbox_") as tmp:
        staging = Path(tmp)
        sources = _stage(staging, script, checked, readable_by_other=drop)
        try:
            if mode == "bwrap":
                if drop:
                    os.chown(out_dir, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
                plan = _bwrap_plan(staging, sources, out_dir, python, limits)
            else:
                plan = _direct_plan(staging, sources, out_dir, python, limits)
            code, killed, seconds = _execute(*plan, staging, limits.wall_s)
        finally:
            total, removed = _tidy_out(out_dir, os.geteuid() if drop else None)
        stdout, stderr = _trim(staging / "stdout.txt"), _trim(staging / "stderr.txt")
    status, reason = _classify(code, killed, stderr, limits)
    if status == "ok" and total > limits.output_mb * 1024 * 1024:
        status, reason = "output_too_large", f"the output folder holds {total} bytes, over {limits.output_mb} MB"
    if status == "output_too_large":
        _empty(out_dir)
    elif status == "ok" and removed:
        status, reason = "error", f"the output folder may hold only files and folders; removed: {', '.join(removed)}"
    return SandboxResult(status, None if killed else code, stdout, stderr, seconds, reason)


_Plan = tuple[list[str], Path, dict[str, str], Callable[[], None] | None]


def _bwrap_plan(staging: Path, sources: dict[str, Path], out_dir: Path, python: str, limits: Limits) -> _Plan:
    """The bwrap command line: the contract's binds on top of the interpreter's; bwrap itself gets no secrets."""
    interpreter, _ = _interpreter(python)
    binds = ["--ro-bind", str(staging / "analysis.py"), f"{SANDBOX}/analysis.py", "--dir", f"{SANDBOX}/inputs",
             "--ro-bind", str(staging / "manifest.json"), f"{SANDBOX}/inputs/manifest.json"]
    for name, source in sources.items():
        binds += ["--ro-bind", str(source), f"{SANDBOX}/inputs/{name}"]
    binds += ["--bind", str(out_dir.resolve()), f"{SANDBOX}/out"]
    env = _child_env(os.path.dirname(interpreter), f"{SANDBOX}/out", "/tmp")
    bwrap = shutil.which("bwrap") or "bwrap"
    _, own_userns = _probe(bwrap, python, os.geteuid())
    cmd = _bwrap_command(bwrap, python, binds, env, limits, [f"{SANDBOX}/analysis.py"], own_userns)
    return cmd, staging, {"PATH": "/usr/bin:/bin"}, None


def _direct_plan(staging: Path, sources: dict[str, Path], out_dir: Path, python: str, limits: Limits) -> _Plan:
    """Mode "none": a private folder laid out like /sandbox (links to the inputs and to out_dir), the same
    environment and limits set in the child before exec."""
    work = staging / "sandbox"
    (work / "inputs").mkdir(parents=True)
    (work / "tmp").mkdir()
    shutil.copyfile(staging / "analysis.py", work / "analysis.py")
    shutil.copyfile(staging / "manifest.json", work / "inputs" / "manifest.json")
    for name, source in sources.items():
        (work / "inputs" / name).symlink_to(source)
    (work / "out").symlink_to(out_dir.resolve())
    nproc = None if os.geteuid() == 0 else _count_tasks(os.geteuid()) + limits.max_procs
    env = _child_env(os.path.dirname(python), str(work / "out"), str(work / "tmp"))
    return [python, "-I", "-B", "analysis.py"], work, env, partial(_set_limits, limits, nproc)


def _execute(cmd: list[str], cwd: Path, env: dict[str, str], preexec: Callable[[], None] | None, staging: Path,
             wall_s: int) -> tuple[int, bool, float]:
    """Run in a session of its own with stdout/stderr into files (RLIMIT_FSIZE bounds them; a pipe would not);
    kill the whole group at the wall limit. Returns (exit code, 128+n for signal n; killed at the wall; s)."""
    start = time.monotonic()
    killed = False
    with open(staging / "stdout.txt", "wb") as out_fh, open(staging / "stderr.txt", "wb") as err_fh:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_fh, stderr=err_fh, cwd=cwd, env=env,
                                start_new_session=True, preexec_fn=preexec)
        try:
            proc.wait(timeout=wall_s)
        except subprocess.TimeoutExpired:
            killed = True
            try:  # bwrap dies; --die-with-parent takes the pid namespace (every process in it) along
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended just now
                pass
            proc.wait()
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    return code, killed, time.monotonic() - start
