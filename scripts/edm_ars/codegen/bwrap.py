"""The bubblewrap layer of the sandbox (edm_ars.codegen.sandbox): the command line that runs a script in
namespaces of its own (network, pid, ipc, uts, cgroup, user) on a minimal read-only file system, as an
unprivileged uid when started as root, under rlimits (`prlimit`), in a fresh, empty session keyring and under a
seccomp filter that refuses execve, the keyring calls and the other calls an analysis never needs (_BOOTSTRAP,
REFUSED_CALLS); and the probe of whether bubblewrap can run a trivial sandbox here (sandbox_available).

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


#: System calls the filter answers with EPERM, by name and number per architecture (checked against the kernel
#: headers by tests/codegen/test_seccomp.py). None of them is needed by an analysis in numpy, pandas, scipy,
#: sklearn, xgboost, shap or matplotlib: program execution; the kernel keyring (a fresh, empty session keyring is
#: joined first, so a call that got through would still see nothing of the launcher's); other processes' memory
#: (ptrace, process_vm_*, kcmp, pidfd_getfd); kernel code and state (modules, kexec, bpf, perf, syslog, clocks,
#: reboot, swap, accounting, quotas, host/domain names); mounts and namespaces (mount and the new mount API,
#: unshare, setns); file handles that bypass paths (open_by_handle_at); userfaultfd and io_uring (kernel attack
#: surface; io_uring also runs calls the filter never sees); fanotify; vhangup; x86 port I/O and uselib. Not refused,
#: on purpose: clone (but any CLONE_NEW* flag is EPERM), fork, futex, mmap/mprotect/madvise, sched_*, prctl,
#: set_mempolicy/mbind (threads, OpenMP, BLAS and xgboost use them); personality (its flags act on exec, refused).
#: clone3 answers ENOSYS: its flags sit in memory the filter cannot read, and glibc then falls back to clone.
REFUSED_CALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "execve": 59, "execveat": 322, "keyctl": 250, "add_key": 248, "request_key": 249, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "bpf": 321,
        "perf_event_open": 298, "syslog": 103, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
        "clock_adjtime": 305, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179,
        "quotactl_fd": 443, "sethostname": 170, "setdomainname": 171, "lookup_dcookie": 212, "mount": 165,
        "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "unshare": 272, "setns": 308,
        "name_to_handle_at": 303, "open_by_handle_at": 304, "userfaultfd": 323, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "fanotify_init": 300, "vhangup": 153, "iopl": 172,
        "ioperm": 173, "uselib": 134,
    },
    "aarch64": {
        "execve": 221, "execveat": 281, "keyctl": 219, "add_key": 217, "request_key": 218, "ptrace": 117,
        "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438, "init_module": 105,
        "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "bpf": 280,
        "perf_event_open": 241, "syslog": 116, "settimeofday": 170, "clock_settime": 112, "adjtimex": 171,
        "clock_adjtime": 266, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "quotactl": 60,
        "quotactl_fd": 443, "sethostname": 161, "setdomainname": 162, "lookup_dcookie": 18, "mount": 40,
        "umount2": 39, "pivot_root": 41, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "unshare": 97, "setns": 268,
        "name_to_handle_at": 264, "open_by_handle_at": 265, "userfaultfd": 282, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "fanotify_init": 262, "vhangup": 58,
    },
}
#: (audit architecture, clone, clone3) per architecture
_ARCH = {"x86_64": (0xC000003E, 56, 435), "aarch64": (0xC00000B7, 220, 435)}
#: CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
CLONE_NEW_FLAGS = 0x7E020000

#: Runs in the sandbox before the script: join a new, empty session keyring (KEYCTL_JOIN_SESSION_KEYRING with no
#: name), so the launcher's keys are not this process's to find; then a seccomp filter (classic BPF built by
#: hand): kill on a foreign architecture (and the whole x32 range on x86_64 is EPERM), EPERM for REFUSED_CALLS
#: (so no program beyond this interpreter starts, from subprocess, os.system or os.exec*, and no keyring is
#: reachable) and for clone with a CLONE_NEW* flag, ENOSYS for clone3, allow the rest; then the script as
#: __main__. A keyring join that fails with EPERM/ENOSYS (keyrings already refused, e.g. by a container's own
#: filter, or not built in) goes on; any other failure stops the attempt. Arguments: the script path.
_BOOTSTRAP = r"""
import ctypes, platform, struct, sys
ARCH, REFUSED = @ARCH@, @REFUSED@
arch, clone, clone3 = ARCH[platform.machine()]
refused = REFUSED[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(refused["keyctl"], 1, None) < 0 and ctypes.get_errno() not in (1, 38):
    sys.exit("sandbox: cannot join a new session keyring (errno %d)" % ctypes.get_errno())
def op(code, jt, jf, k): return struct.pack("HBBI", code, jt, jf, k)
LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
checks = [(JGE, 0x40000000, "eperm")] if arch == 0xC000003E else []
checks += [(JEQ, nr, "eperm") for nr in sorted(refused.values())] + [(JEQ, clone3, "enosys"), (JEQ, clone, "clone")]
n = len(checks)
to = {"clone": n + 1, "eperm": n + 4, "enosys": n + 5}
prog = [op(LD, 0, 0, 4), op(JEQ, 1, 0, arch), op(RET, 0, 0, 0x80000000), op(LD, 0, 0, 0)]
prog += [op(code, to[where] - i - 1, 0, k) for i, (code, k, where) in enumerate(checks)]
prog += [op(RET, 0, 0, 0x7FFF0000), op(LD, 0, 0, 16), op(JSET, 1, 0, @CLONE_NEW@), op(RET, 0, 0, 0x7FFF0000),
         op(RET, 0, 0, 0x00050000 | 1), op(RET, 0, 0, 0x00050000 | 38)]
code = b"".join(prog)
buf = ctypes.create_string_buffer(code, len(code))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(prog), ctypes.addressof(buf))
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
    sys.exit("sandbox: cannot install the seccomp filter (errno %d)" % ctypes.get_errno())
del ctypes, platform, struct, ARCH, REFUSED, arch, clone, clone3, refused, libc, op, checks, n, to, prog, code, buf
del Fprog, fprog
path = sys.argv[1]
sys.argv = [path]
with open(path, encoding="utf-8") as fh:
    source = fh.read()
exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
""".replace("@ARCH@", repr(_ARCH)).replace("@REFUSED@", repr(REFUSED_CALLS)).replace(
    "@CLONE_NEW@", str(CLONE_NEW_FLAGS))


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
    # /proc/keys and /proc/key-users masked (as container runtimes do): an ordinary user's sandbox shares the
    # user's uid, and /proc/keys would list the names of the user's keys (their contents stay unreadable)
    masked = [a for f in ("/proc/keys", "/proc/key-users") if os.path.exists(f) for a in ("--ro-bind", "/dev/null", f)]
    cmd += [*_system_binds(), "--proc", "/proc", *masked, "--dev", "/dev", "--perms", "1777", *tmp_size,
            "--tmpfs", "/tmp", *_interpreter_binds(folders), "--dir", SANDBOX, *binds, "--remount-ro", "/",
            "--chdir", SANDBOX, "--"]
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
