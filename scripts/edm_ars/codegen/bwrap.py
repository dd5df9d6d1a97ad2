"""The bubblewrap layer of the sandbox (edm_ars.codegen.sandbox): the command line that runs a script in
namespaces of its own (network, pid, ipc, uts, cgroup, user) on a minimal read-only file system, as an
unprivileged uid when started as root, under rlimits (`prlimit`) and a seccomp filter that refuses execve; and
the probe of whether bubblewrap can run a trivial sandbox here (sandbox_available).

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
import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from edm_ars.codegen.limits import NOFILE, Limits

#: where the contract puts things inside the sandbox
SANDBOX = "/sandbox"
#: the uid/gid the script runs as when the workflow runs as root ("nobody" on Debian)
UNPRIVILEGED_ID = 65534
#: the private /tmp inside the sandbox (tmpfs, counts against memory)
TMP_MB = 64

INSTALL_HINT = ("install bubblewrap (`apt-get install bubblewrap`), or set `codegen.sandbox: none` in the "
                "configuration to run generated code without a sandbox (the paper then says so)")


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
