"""Limits counted over all of an attempt's processes together (edm_ars.codegen.totals): forked children over the
total memory, forked busy loops over the total CPU and a script writing many files into out/ each end with their
status and a reason naming the total, well before the wall limit, in both modes, with the attempt's cgroup (where
this host gives one) and with the watcher alone (the fallback for hosts without a writable cgroup). The limits
are small (256 MB in all), so the machine's memory is never approached."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from edm_ars.codegen import totals
from edm_ars.codegen.bwrap import sandbox_available
from edm_ars.codegen.limits import Limits
from edm_ars.codegen.sandbox import run_sandboxed
from edm_ars.codegen.totals import AttemptCgroup, Watcher, folder_bytes, tree

UNAVAILABLE = sandbox_available()


def _host_cgroup() -> str | None:
    made = AttemptCgroup.create(Limits())
    if made is None:
        return "no writable cgroup for this process here (the watcher alone bounds the totals)"
    made.remove()
    return None


NO_CGROUP = _host_cgroup()

#: (mode, with the host's cgroup): the sandbox and the direct mode, each with and without the attempt's cgroup
SETUPS = [pytest.param("bwrap", True, id="bwrap-cgroup"), pytest.param("bwrap", False, id="bwrap-watcher"),
          pytest.param("none", True, id="none-cgroup"), pytest.param("none", False, id="none-watcher")]

#: four children of 100 MB each (touched, so resident), sleeping: 400 MB together under a limit of 256 MB
FORKED_MEMORY = """\
import os, time
for _ in range(4):
    if os.fork() == 0:
        block = bytearray(100 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(30)
        os._exit(0)
time.sleep(30)
"""

#: five busy loops (the script and four children)
FORKED_CPU = """\
import os
for _ in range(4):
    if os.fork() == 0:
        break
while True:
    pass
"""

#: children that each burn 0.8 CPU-s and end, one after another: no live process ever holds much
ENDED_CPU = """\
import os, time
for _ in range(6):
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + 0.8
        while time.process_time() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
"""

#: 2,000 files of 100 kB: 200 MB if nothing stopped it
MANY_FILES = """\
for i in range(2000):
    with open(f"out/part{i}.bin", "wb") as fh:
        fh.write(b"x" * 100_000)
"""


#: the cgroups the attempts of a test made (others' attempts may run on this machine at the same time)
MADE: list[AttemptCgroup | None] = []


def _leftover_cgroups() -> list[str]:
    """Folders of this test's attempts' cgroups still there (none: each is removed after its attempt)."""
    left = [str(f) for c in MADE if c is not None for f in c.folders.values() if f.exists()]
    MADE.clear()
    return left


#: 20 files of 3 MB in out/, each deleted while still open: 60 MB on disk that no walk of out/ sees
DELETED_OPEN = """\
import os, time
held = []
for i in range(20):
    fh = open(f"out/part{i}.bin", "wb")
    os.unlink(f"out/part{i}.bin")
    fh.write(b"x" * 3_000_000)
    fh.flush()
    held.append(fh)
time.sleep(30)
"""

#: 8 memory files of 40 MB, written and never mapped: 320 MB that no resident size shows
MEMFD = """\
import os, time
held = []
for i in range(8):
    fd = os.memfd_create(f"block{i}")
    for _ in range(40):
        os.write(fd, b"x" * (1024 * 1024))
    held.append(fd)
time.sleep(30)
"""


@pytest.fixture
def attempt(tmp_path, monkeypatch):
    def go(source: str, limits: Limits, mode: str, cgroup: bool):
        if mode == "bwrap" and UNAVAILABLE is not None:
            pytest.skip(f"bubblewrap cannot run here: {UNAVAILABLE}")
        if cgroup and NO_CGROUP is not None:
            pytest.skip(NO_CGROUP)
        if not cgroup:
            monkeypatch.setattr(AttemptCgroup, "create", classmethod(lambda cls, limits: None))
        else:
            create = AttemptCgroup.create

            def spy(limits):
                MADE.append(create(limits))
                return MADE[-1]

            monkeypatch.setattr(AttemptCgroup, "create", spy)
        script = tmp_path / "analysis.py"
        script.write_text(source, encoding="utf-8")
        return run_sandboxed(script, {}, tmp_path / "out", limits, mode=mode, skip_scan=True), tmp_path / "out"

    return go


@pytest.mark.parametrize(("mode", "cgroup"), SETUPS)
def test_forked_children_over_the_total_memory_end_the_attempt(attempt, mode, cgroup):
    result, _ = attempt(FORKED_MEMORY, Limits(memory_mb=256, wall_s=30), mode, cgroup)
    assert result.status == "memory", result
    assert re.fullmatch(r"\d+ processes held [\d,]+ MB together, over the memory limit of 256 MB", result.reason) \
        or "the attempt's processes together reached the memory limit of 256 MB" in result.reason, result
    assert result.seconds < 5, result  # the wall limit is 30 s; each child alone is within its rlimit
    assert _leftover_cgroups() == []


@pytest.mark.workflow
@pytest.mark.parametrize(("mode", "cgroup"), SETUPS)
def test_forked_busy_loops_over_the_total_cpu_end_the_attempt(attempt, mode, cgroup):
    result, _ = attempt(FORKED_CPU, Limits(cpu_s=2, wall_s=30), mode, cgroup)
    assert result.status == "cpu", result
    assert re.fullmatch(r"\d+ processes used [\d.]+ CPU-s together, over the CPU limit of 2 s", result.reason), result
    # 5 busy loops on this machine's cores reach 2 + 1 CPU-s (the grace) in a few seconds of wall time
    assert result.seconds < 12, result
    assert _leftover_cgroups() == []


@pytest.mark.workflow
@pytest.mark.parametrize(("mode", "cgroup"), [SETUPS[1], SETUPS[0]])
def test_cpu_of_children_that_ended_counts_too(attempt, mode, cgroup):
    result, _ = attempt(ENDED_CPU, Limits(cpu_s=2, wall_s=30), mode, cgroup)
    assert result.status == "cpu" and "CPU-s together, over the CPU limit of 2 s" in result.reason, result
    assert result.seconds < 10, result


@pytest.mark.parametrize(("mode", "cgroup"), SETUPS)
def test_many_files_over_the_output_limit_are_stopped_while_written(attempt, mode, cgroup):
    result, out_dir = attempt(MANY_FILES, Limits(output_mb=5, wall_s=30), mode, cgroup)
    assert result.status == "output_too_large", result
    match = re.fullmatch(r"the output folder reached ([\d,]+) MB while the script wrote it, over the output limit "
                         r"of 5 MB", result.reason)
    assert match, result
    assert int(match.group(1).replace(",", "")) < 60, result  # 200 MB if only the check afterwards caught it
    assert list(out_dir.iterdir()) == []
    assert result.seconds < 5, result


@pytest.mark.parametrize(("mode", "cgroup"), SETUPS)
def test_files_deleted_but_held_open_count_with_the_output(attempt, mode, cgroup):
    result, out_dir = attempt(DELETED_OPEN, Limits(output_mb=5, wall_s=30), mode, cgroup)
    assert result.status == "output_too_large", result
    assert "in deleted files still held open), over the output limit of 5 MB" in result.reason, result
    assert result.seconds < 5 and list(out_dir.iterdir()) == [], result


@pytest.mark.parametrize(("mode", "cgroup"), SETUPS)
def test_memory_files_count_with_the_memory(attempt, mode, cgroup):
    result, _ = attempt(MEMFD, Limits(memory_mb=256, wall_s=30), mode, cgroup)
    assert result.status == "memory", result
    assert re.fullmatch(r"1 process held [\d,]+ MB together, over the memory limit of 256 MB", result.reason) \
        or re.fullmatch(r"\d+ processes held [\d,]+ MB together, over the memory limit of 256 MB", result.reason) \
        or "the attempt's processes together reached the memory limit of 256 MB" in result.reason, result
    assert result.seconds < 5, result


@pytest.mark.parametrize(("mode", "cgroup"), [SETUPS[1], SETUPS[3]])
def test_an_attempt_within_its_totals_is_untouched(attempt, mode, cgroup):
    source = ("import os, json\nif os.fork() == 0:\n    os._exit(0)\nos.wait()\n"
              "open('out/result.json', 'w').write(json.dumps({'ok': 1}))\n")
    result, out_dir = attempt(source, Limits(memory_mb=256, cpu_s=5, output_mb=1), mode, cgroup)
    assert (result.status, result.reason) == ("ok", ""), result
    assert (out_dir / "result.json").read_text() == '{"ok": 1}'


@pytest.mark.skipif(NO_CGROUP is not None, reason=str(NO_CGROUP))
def test_the_cgroup_holds_the_memory_and_reports_the_kernel_kill(tmp_path):
    """Without the watcher: a process that joined the cgroup is ended by the kernel at its limit (memory_mb + the
    /tmp allowance), the verdict names the memory limit, and the cgroup goes away afterwards."""
    limits = Limits(memory_mb=16)
    cgroup = AttemptCgroup.create(limits)
    assert cgroup is not None
    try:
        grow = "b = bytearray(300 * 1024 * 1024)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
        proc = subprocess.run([sys.executable, "-c", grow], preexec_fn=cgroup.join, capture_output=True, timeout=60)
        assert proc.returncode == -9, proc
        verdict = Watcher(0, tmp_path, limits, cgroup).cgroup_verdict()
        assert verdict is not None and verdict.status == "memory" and "16 MB" in verdict.reason, verdict
    finally:
        cgroup.remove()
    assert not any(folder.exists() for folder in cgroup.folders.values())


def test_tree_finds_every_descendant_and_nothing_else():
    table = {1: (0, 0, 0.0, 0, b"S"), 10: (1, 0, 0.0, 0, b"S"), 11: (10, 0, 0.0, 0, b"S"),
             12: (11, 0, 0.0, 0, b"Z"), 20: (1, 0, 0.0, 0, b"S"), 13: (10, 0, 0.0, 0, b"R")}
    assert sorted(tree(10, table)) == [10, 11, 12, 13]
    assert tree(99, table) == []


def test_folder_bytes_counts_files_at_any_depth_without_links(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY)
    for _ in range(3000):  # deeper than Python's recursion limit, and a path longer than PATH_MAX
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    leaf = os.open("f.bin", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(leaf, b"x" * 1000)
    os.close(leaf)
    os.close(fd)
    (tmp_path / "g.bin").write_bytes(b"y" * 24)
    (tmp_path / "link").symlink_to("/usr/bin/python3")
    assert folder_bytes(tmp_path) == 1024
    subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=True)  # pytest's own cleanup recurses


def test_folder_bytes_looks_into_a_locked_folder(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "f.bin").write_bytes(b"x" * 100)
    locked.chmod(0)
    assert folder_bytes(tmp_path) == 100
    if os.geteuid() != 0:  # root looks in without opening it
        assert locked.stat().st_mode & 0o700 == 0o700  # opened for its owner again


def test_a_host_without_cgroups_gets_none(monkeypatch):
    monkeypatch.setattr(totals, "_mountinfo", lambda: [])
    assert AttemptCgroup.create(Limits()) is None
