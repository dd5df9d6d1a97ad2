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
  processes, file size, open files), a fresh, empty session keyring and a seccomp filter that refuses execve
  (no programs beyond the interpreter), the keyring calls and the other calls an analysis never needs
  (edm_ars.codegen.bwrap.REFUSED_CALLS), and a wall clock that kills the whole sandbox. The bubblewrap command
  line and the probe of whether it can run here are edm_ars.codegen.bwrap; the limits are edm_ars.codegen.limits.
  Memory, CPU, processes and out/ are also bounded over all of an attempt's processes together, in both modes:
  a cgroup of the attempt's own where the host allows one, and a watcher of the process tree and of out/ that
  kills the whole attempt at a total over its limit (edm_ars.codegen.totals).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from edm_ars.codegen.bwrap import (
    _BOOTSTRAP,
    SANDBOX,
    UNPRIVILEGED_ID,
    _bwrap_command,
    _child_env,
    _interpreter,
    _probe,
    sandbox_available,
)
from edm_ars.codegen.codescan import FORBIDDEN_MODULES, scan
from edm_ars.codegen.limits import NOFILE, Limits
from edm_ars.codegen.outputs import MAX_DEPTH, empty_folder, listing, shown, tidy
from edm_ars.codegen.totals import AttemptCgroup, Verdict, Watcher

__all__ = ["FORBIDDEN_MODULES", "SandboxResult", "run_sandboxed", "scan"]

#: how much of stdout/stderr a result keeps (the end: where the traceback is)
TRIM_CHARS = 4000


@dataclass(frozen=True)
class SandboxResult:
    """What a run came to; `stderr` and `reason` are what a repair prompt gets."""

    status: str  # "ok" | "refused" | "error" | "timeout" | "cpu" | "memory" | "output_too_large"
    exit_code: int | None
    stdout: str  # the last TRIM_CHARS characters
    stderr: str  # the last TRIM_CHARS characters
    seconds: float  # wall seconds: for logs and the benchmark only, never written to artifacts
    reason: str  # one line: why it is not "ok" ("" when ok)


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
    """Total bytes of the out folder's regular files and what was removed with why (edm_ars.codegen.outputs.tidy:
    links, fifos, sockets, names that are not printable UTF-8, folders nested too deep), everything kept handed
    back to `owner` when given, special mode bits stripped, locked folders unlocked, never following a link. When
    the folder cannot be walked at all it is emptied, and that is the one removal listed."""
    try:
        return tidy(out_dir, owner)
    except OSError as exc:
        empty_folder(out_dir)
        if owner is not None:
            os.chown(out_dir, owner, os.getegid(), follow_symlinks=False)
        return 0, [f"everything (the folder could not be read: {shown(str(exc))})"]


def _empty(out_dir: Path) -> None:
    empty_folder(out_dir)


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


def run_sandboxed(script: Path, inputs: dict[str, Path], out_dir: Path, limits: Limits = Limits(),  # noqa: B008 (frozen)
                  mode: str = "bwrap", python: str = sys.executable, skip_scan: bool = False) -> SandboxResult:
    """Run `script` (a .py file) under the contract (see the module docstring) and classify how it ended.

    mode "bwrap" is the sandbox; mode "none" runs the script directly (same limits, same empty environment, a
    private working folder laid out like /sandbox with links, the same fresh session keyring and seccomp filter
    in the child; but no namespaces, so no network isolation, no read-only file system (the script can read
    what the caller can, and /proc/keys still lists the names of the caller's keys, never their contents), no
    uid drop, and RLIMIT_NPROC only on top of the caller's own processes and not at all as root) and only when
    the caller passes it explicitly. scan() runs first unless skip_scan; a violation, a non-empty out_dir or a missing bubblewrap is
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
            code, killed, seconds, verdict = _execute(*plan, staging, limits, out_dir)
        finally:
            total, removed = _tidy_out(out_dir, os.geteuid() if drop else None)
        stdout, stderr = _trim(staging / "stdout.txt"), _trim(staging / "stderr.txt")
    status, reason = (verdict.status, verdict.reason) if verdict is not None else _classify(code, killed, stderr,
                                                                                              limits)
    if status == "ok" and total > limits.output_mb * 1024 * 1024:
        status, reason = "output_too_large", f"the output folder holds {total} bytes, over {limits.output_mb} MB"
    if status == "output_too_large":
        _empty(out_dir)
    elif status == "ok" and removed:
        status, reason = "error", ("the output folder may hold only files and folders with printable UTF-8 names, "
                                   f"at most {MAX_DEPTH} folders deep; removed: {listing(removed)}")
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
    # the same bootstrap as in the sandbox: a fresh session keyring and the seccomp filter, in the child only
    return [python, "-I", "-B", "-c", _BOOTSTRAP, "analysis.py"], work, env, partial(_set_limits, limits, nproc)


def _execute(cmd: list[str], cwd: Path, env: dict[str, str], preexec: Callable[[], None] | None, staging: Path,
             limits: Limits, out_dir: Path) -> tuple[int, bool, float, Verdict | None]:
    """Run in a session of its own with stdout/stderr into files (RLIMIT_FSIZE bounds them; a pipe would not),
    in a cgroup of the attempt's own where the host allows one, under the watcher of the totals (memory, CPU,
    out/; edm_ars.codegen.totals); kill the whole attempt at the wall limit. Returns (exit code, 128+n for signal
    n; killed at the wall; s; the watcher's or the cgroup's verdict when a total went over its limit)."""
    start = time.monotonic()
    killed = False
    cgroup = AttemptCgroup.create(limits)
    if cgroup is not None:
        hook = cgroup.join if preexec is None else partial(_both, cgroup.join, preexec)
    else:
        hook = preexec
    try:
        with open(staging / "stdout.txt", "wb") as out_fh, open(staging / "stderr.txt", "wb") as err_fh:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_fh, stderr=err_fh, cwd=cwd, env=env,
                                    start_new_session=True, preexec_fn=hook)
            watcher = Watcher(proc.pid, out_dir, limits, cgroup if cgroup is not None and cgroup.holds(proc.pid)
                              else None)
            watcher.start()
            try:
                proc.wait(timeout=limits.wall_s)
            except subprocess.TimeoutExpired:
                killed = True
                try:  # bwrap dies; --die-with-parent takes the pid namespace (every process in it) along
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:  # it ended just now
                    pass
                watcher.kill()
                proc.wait()
            finally:
                watcher.stop()
            verdict = watcher.verdict or watcher.cgroup_verdict()
    finally:
        if cgroup is not None:
            cgroup.remove()
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    return code, killed and verdict is None, time.monotonic() - start, verdict


def _both(first: Callable[[], None], second: Callable[[], None]) -> None:
    first()
    second()
