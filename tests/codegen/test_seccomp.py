"""The in-sandbox bootstrap (edm_ars.codegen.bwrap._BOOTSTRAP): every attempt joins a fresh, empty session keyring
and runs under a seccomp filter that refuses the keyring calls, program execution and the other calls an analysis
never needs (REFUSED_CALLS), while an ordinary numpy/pandas/sklearn/xgboost analysis with threads still runs.
The sandbox tests skip (with the reason) where bubblewrap cannot run."""

from __future__ import annotations

import ctypes
import json
import platform
import re
import uuid
from pathlib import Path

import pytest

from edm_ars.codegen.bwrap import REFUSED_CALLS, sandbox_available
from edm_ars.codegen.limits import Limits
from edm_ars.codegen.sandbox import run_sandboxed, scan

UNAVAILABLE = sandbox_available()
needs_bwrap = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"bubblewrap cannot run here: {UNAVAILABLE}")

KEY_SPEC_SESSION_KEYRING = -3
KEYCTL_READ = 11
EPERM = 1
HEADERS = {"x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           "aarch64": Path("/usr/include/asm-generic/unistd.h")}


@pytest.mark.parametrize("machine", sorted(REFUSED_CALLS))
def test_the_refused_call_numbers_are_the_kernels(machine):
    header = HEADERS[machine]
    if not header.is_file():
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    numbers = {name: int(nr) for name, nr in re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)\b", header.read_text())}
    wrong = {name: (nr, numbers.get(name)) for name, nr in REFUSED_CALLS[machine].items() if numbers.get(name) != nr}
    assert wrong == {}
    assert {"execve", "execveat", "keyctl", "add_key", "request_key", "ptrace", "unshare", "mount",
            "bpf"} <= set(REFUSED_CALLS[machine])
    assert not {"clone", "futex", "mmap", "madvise", "prctl", "sched_yield", "sched_getaffinity",
                "set_mempolicy"} & set(REFUSED_CALLS[machine])


def _syscall_numbers() -> dict[str, int]:
    return REFUSED_CALLS[platform.machine()]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


@pytest.fixture
def planted_key():
    """A user key with a fresh secret in this (the launcher's) session keyring, revoked afterwards; the test
    first reads it back itself, so a sandbox that shared the keyring would have something to find."""
    if platform.machine() not in REFUSED_CALLS:
        pytest.skip(f"no system call table for {platform.machine()}")
    nr = _syscall_numbers()
    libc = _libc()
    description, secret = f"edm_test_{uuid.uuid4().hex[:8]}", f"keyring-secret-{uuid.uuid4().hex}".encode()
    serial = libc.syscall(nr["add_key"], b"user", description.encode(), secret, len(secret), KEY_SPEC_SESSION_KEYRING)
    if serial < 0:
        pytest.skip(f"this kernel or container refuses add_key (errno {ctypes.get_errno()}): no keyring to plant in")
    buf = ctypes.create_string_buffer(256)
    assert libc.syscall(nr["keyctl"], KEYCTL_READ, serial, buf, 256) == len(secret)
    assert buf.raw[:len(secret)] == secret  # the launcher can read it: the sandbox must not
    yield description, secret.decode(), serial
    libc.syscall(nr["keyctl"], 3, serial)  # KEYCTL_REVOKE


#: Tries every way to the planted key (by search, by its serial, a new key, /proc/keys) and prints what each got.
STEAL = """\
import ctypes, json, platform
nr = json.loads(open("inputs/nr.json").read())
want = json.loads(open("inputs/key.json").read())
lib = ctypes.CDLL(None, use_errno=True)
lib.syscall.restype = ctypes.c_long
got = {}
buf = ctypes.create_string_buffer(256)
found = lib.syscall(nr["request_key"], b"user", want["description"].encode(), None, 0)
got["request_key"] = [found, ctypes.get_errno()]
got["keyctl_read"] = [lib.syscall(nr["keyctl"], 11, want["serial"], buf, 256), ctypes.get_errno()]
got["keyctl_search"] = [lib.syscall(nr["keyctl"], 10, -3, b"user", want["description"].encode(), 0),
                        ctypes.get_errno()]
got["add_key"] = [lib.syscall(nr["add_key"], b"user", b"mine", b"x", 1, -3), ctypes.get_errno()]
got["read"] = buf.raw.split(bytes(1))[0].decode("latin-1")
try:
    got["proc_keys"] = open("/proc/keys").read()
except OSError as exc:
    got["proc_keys"] = str(exc)
print(json.dumps(got))
open("out/got.json", "w").write(json.dumps(got))
"""


def _run(tmp_path: Path, source: str, inputs: dict[str, object], limits: Limits | None = None,
         mode: str = "bwrap", skip_scan: bool = True):
    paths = {}
    for name, value in inputs.items():
        paths[name] = tmp_path / name
        paths[name].write_text(json.dumps(value), encoding="utf-8")
    script = tmp_path / "analysis.py"
    script.write_text(source, encoding="utf-8")
    out_dir = tmp_path / "out"
    return run_sandboxed(script, paths, out_dir, limits or Limits(), mode=mode, skip_scan=skip_scan), out_dir


def _assert_the_key_is_out_of_reach(result, out_dir: Path, description: str, secret: str, *,
                                    listed: bool = False) -> None:
    assert result.status == "ok", result
    got = json.loads(result.stdout)
    for call in ("request_key", "keyctl_read", "keyctl_search", "add_key"):
        assert got[call] == [-1, EPERM], (call, got)
    assert got["read"] == ""
    # a fresh session keyring and another uid: the key is not this process's, not even by name
    assert (description in got["proc_keys"]) is listed
    seen = result.stdout + result.stderr + "".join(p.read_text(errors="replace") for p in out_dir.rglob("*")
                                                   if p.is_file())
    assert secret not in seen


@needs_bwrap
def test_a_key_in_the_launchers_session_keyring_cannot_be_read(tmp_path, planted_key):
    description, secret, serial = planted_key
    assert scan(STEAL)[0].startswith("line 1: import of ctypes")  # the scan refuses it; the sandbox must hold too
    result, out_dir = _run(tmp_path, STEAL, {"nr.json": _syscall_numbers(),
                                             "key.json": {"description": description, "serial": serial}})
    _assert_the_key_is_out_of_reach(result, out_dir, description, secret)


def test_mode_none_runs_the_same_keyring_and_filter(tmp_path, planted_key):
    description, secret, serial = planted_key
    result, out_dir = _run(tmp_path, STEAL, {"nr.json": _syscall_numbers(),
                                             "key.json": {"description": description, "serial": serial}},
                           mode="none")
    # same uid as the launcher, so /proc/keys still lists the key's name (its owner may view it); never its payload
    _assert_the_key_is_out_of_reach(result, out_dir, description, secret, listed=True)


#: Calls an analysis never needs, each expected EPERM; clone with CLONE_NEWUSER too.
REFUSED = """\
import ctypes, json
nr = json.loads(open("inputs/nr.json").read())
lib = ctypes.CDLL(None, use_errno=True)
lib.syscall.restype = ctypes.c_long
got = {}
for name, args in [("ptrace", (16, 1, 0, 0)), ("unshare", (0x10000000,)), ("mount", (b"none", b"/tmp", b"tmpfs", 0, None)),
                   ("bpf", (0, None, 0)), ("perf_event_open", (None, 0, -1, -1, 0)), ("userfaultfd", (0,)),
                   ("io_uring_setup", (1, None)), ("process_vm_readv", (1, None, 0, None, 0, 0)), ("execve", (b"/bin/true", None, None))]:
    got[name] = [lib.syscall(nr[name], *args), ctypes.get_errno()]
got["unshare_python"] = lib.unshare(0x10000000)
print(json.dumps(got))
"""


@needs_bwrap
def test_calls_an_analysis_never_needs_are_refused(tmp_path):
    result, _ = _run(tmp_path, REFUSED, {"nr.json": _syscall_numbers()})
    assert result.status == "ok", result
    got = json.loads(result.stdout)
    assert got.pop("unshare_python") == -1
    assert got == {name: [-1, EPERM] for name in got}


#: An ordinary analysis under the filter: threads (clone3 is ENOSYS, glibc falls back to clone), numpy, pandas,
#: sklearn, xgboost with two threads, a fork.
ORDINARY = """\
import json
from concurrent.futures import ThreadPoolExecutor
import numpy as np
import pandas as pd
import xgboost as xgb
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(3)
x = rng.normal(size=(400, 3))
y = (x[:, 0] + rng.normal(size=400) > 0).astype(int)
frame = pd.DataFrame(x, columns=["a", "b", "c"]).assign(y=y)
with ThreadPoolExecutor(max_workers=4) as pool:
    sums = list(pool.map(lambda k: float(np.linalg.svd(x + k, compute_uv=False)[0]), range(8)))
model = LogisticRegression().fit(frame[["a", "b", "c"]], frame["y"])
booster = xgb.XGBClassifier(n_estimators=10, max_depth=2, n_jobs=2).fit(x, y)
import os
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
result = {"threads": len(sums), "coef": float(model.coef_[0][0]), "xgb": float(booster.predict_proba(x)[:, 1].mean()),
          "child": os.waitstatus_to_exitcode(status)}
open("out/result.json", "w").write(json.dumps(result))
print(json.dumps(result))
"""


@needs_bwrap
@pytest.mark.workflow
def test_an_ordinary_analysis_with_threads_and_xgboost_still_runs(tmp_path):
    result, out_dir = _run(tmp_path, ORDINARY, {}, Limits(wall_s=120, cpu_s=60))
    assert result.status == "ok", result
    got = json.loads((out_dir / "result.json").read_text())
    assert got["threads"] == 8 and got["child"] == 7 and got["coef"] > 0.5 and 0 < got["xgb"] < 1
