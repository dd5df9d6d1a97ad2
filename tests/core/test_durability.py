"""Writes that survive a crash and a full disk, the umask of new files, and what `edm-ars status` says about a
killed run (a stale lock, incomplete outputs); the whole-run versions are in test_crash.py."""

from __future__ import annotations

import base64
import errno
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from edm_ars.core.artifacts import atomic_write_text, write_json
from edm_ars.core.errors import OutputWriteError
from edm_ars.core.runstate import _works_in, describe, run_state
from edm_ars.jobs.rule_io import run
from edm_ars.writer.latex import FALLBACK_DATE_EPOCH, LatexError, pdf_date_epoch


@pytest.fixture
def umask_027():
    previous = os.umask(0o027)
    yield
    os.umask(previous)


def test_atomic_writes_follow_the_umask_and_leave_no_temporary_file(tmp_path, umask_027):
    atomic_write_text(tmp_path / "a.txt", "one\n")
    write_json(tmp_path / "sub" / "b.json", {"x": 1})
    for path in (tmp_path / "a.txt", tmp_path / "sub" / "b.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, oct(path.stat().st_mode)
    atomic_write_text(tmp_path / "a.txt", "two\n")
    assert (tmp_path / "a.txt").read_text() == "two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "sub"]


@pytest.fixture
def tiny_disk(small_disk):
    return small_disk("16k")


def test_a_full_disk_names_the_file_and_keeps_nothing_half_written(tiny_disk):
    atomic_write_text(tiny_disk / "small.txt", "kept\n")
    with pytest.raises(OutputWriteError, match=r"cannot write .*big\.txt: no space left on the device"):
        atomic_write_text(tiny_disk / "big.txt", "x" * 200_000)
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["small.txt"]
    assert (tiny_disk / "small.txt").read_text() == "kept\n"


class _Outputs(list):
    """A rule's outputs as Snakemake hands them to a script: a list with named entries (none here)."""

    def keys(self) -> list[str]:
        return []


def _rule(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(rule="write", log=[str(tmp_path / "write.log")], output=_Outputs(["output/paper/paper.tex"]))


@pytest.mark.parametrize("code, reason", [(errno.ENOSPC, "no space left on the device"),
                                          (errno.EROFS, "the file system is read-only"),
                                          (errno.EACCES, "the folder is not writable")])
def test_a_rule_that_cannot_write_stops_with_one_line(tmp_path, capsys, code, reason):
    def main(_smk):
        raise OSError(code, os.strerror(code), "output/paper/figures/roc.pdf")  # as matplotlib's savefig raises

    with pytest.raises(SystemExit) as stopped:
        run(_rule(tmp_path), main)
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("EDM-ARS write:")]
    assert lines == [f"EDM-ARS write: cannot write output/paper/figures/roc.pdf: {reason}; nothing half-written "
                     f"was kept ({'free some space' if code == errno.ENOSPC else 'make it writable'}, then run the "
                     "same command again)"]
    assert "Traceback" not in err


def test_a_copy_onto_a_full_disk_names_the_copy_not_its_source(tmp_path, tiny_disk, capsys):
    source = tmp_path / "figure.pdf"
    source.write_bytes(b"%PDF" + bytes(200_000))

    def main(_smk):
        shutil.copyfile(source, tiny_disk / "figure.pdf")

    with pytest.raises(SystemExit):
        run(_rule(tmp_path), main)
    assert f"EDM-ARS write: cannot write {tiny_disk / 'figure.pdf'}: no space left" in capsys.readouterr().err


def test_other_errors_keep_their_traceback(tmp_path):
    def main(_smk):
        raise OSError(errno.ENOENT, "No such file or directory", "missing.csv")

    with pytest.raises(FileNotFoundError):
        run(_rule(tmp_path), main)


def _killed_run(directory: Path, incomplete: list[str]) -> None:
    locks = directory / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("output/data/raw.parquet\n")
    marks = directory / ".snakemake" / "incomplete"
    marks.mkdir()
    for name in incomplete:
        (marks / base64.urlsafe_b64encode(name.encode()).decode()).write_text('{"external_jobid": null}')


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="live processes are read from /proc")
def test_status_tells_a_stale_lock_and_the_command_that_clears_it(tmp_path):
    _killed_run(tmp_path, ["output/branch_1/round_0/models/xgboost.json", "output/branch_1/round_0/models/xgboost.joblib"])
    state = run_state(tmp_path)
    assert state.stale_lock and state.live == []
    assert state.incomplete == ["output/branch_1/round_0/models/xgboost.joblib", "output/branch_1/round_0/models/xgboost.json"]
    lines = describe(state, tmp_path)
    assert lines[0].startswith("stale lock:") and f"snakemake --unlock --directory {tmp_path.resolve()}" in lines[0]
    assert lines[1].startswith("incomplete: 2 output(s)") and "the next run remakes them" in lines[1]
    printed = subprocess.run([sys.executable, "-m", "edm_ars.cli", "status", "--directory", str(tmp_path)],
                             capture_output=True, text=True, cwd=tmp_path)
    assert "stale lock:" in printed.stdout and "snakemake --unlock`" in printed.stdout, printed.stdout + printed.stderr


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="live processes are read from /proc")
def test_status_tells_a_running_snakemake_from_a_stale_lock(tmp_path):
    _killed_run(tmp_path, [])
    fake = tmp_path / "bin" / "snakemake"  # a stand-in with Snakemake's name that just waits
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    fake.chmod(0o755)
    holder = subprocess.Popen([str(fake), "--directory", str(tmp_path)], cwd="/")
    try:
        import time

        for _ in range(50):  # until the interpreter has replaced the fork's command line
            if run_state(tmp_path).live:
                break
            time.sleep(0.05)
        state = run_state(tmp_path)
        assert state.live == [holder.pid] and not state.stale_lock
        assert describe(state, tmp_path)[0] == f"running: Snakemake (pid {holder.pid}) is working in {tmp_path.resolve()}"
    finally:
        holder.kill()
        holder.wait()
    assert describe(run_state(tmp_path), tmp_path)[0].startswith("stale lock:")


def test_which_command_lines_are_snakemake_runs_on_a_directory(tmp_path):
    here = tmp_path.resolve()
    assert _works_in(["/usr/bin/python3", "-m", "snakemake", "--cores", "2"], here, here)
    assert _works_in(["snakemake", "--directory", str(here)], Path("/"), here)
    assert _works_in(["/opt/venv/bin/snakemake", f"--directory={here}"], Path("/"), here)
    assert _works_in(["snakemake", "-d", "."], here, here)
    assert not _works_in(["snakemake", "--directory", "/elsewhere"], here, here)
    assert not _works_in(["python3", "train.py"], here, here)
    assert not _works_in(["python3", "-m", "snakemake"], Path("/"), here)


def test_the_pdf_date_comes_from_source_date_epoch_else_the_commit(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert pdf_date_epoch(1_700_000_000) == 1_700_000_000
    assert pdf_date_epoch(None) == FALLBACK_DATE_EPOCH
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1234567890")
    assert pdf_date_epoch(1_700_000_000) == 1_234_567_890
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(LatexError, match="SOURCE_DATE_EPOCH='yesterday'"):
        pdf_date_epoch(None)
