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
from edm_ars.core.runstate import Job, RunState, _works_in, describe, run_state, started_jobs
from edm_ars.jobs.rule_io import RESULT, run
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


def test_a_jobs_console_has_warnings_and_results_its_log_everything(tmp_path, capsys):
    """Issue 39: the INFO lines of a job go to its log only; warnings and result lines reach the console too."""
    import logging

    def main(_smk):
        log = logging.getLogger("edm_ars")
        log.info("a detail: %d rows", 12)
        logging.getLogger("shap").info("num_full_subsets = 2")
        log.warning("a lesson from an earlier run skipped")
        log.info("question: %s (%s)", "math_achievement", "matched the prompt 'math'", extra=RESULT)

    run(_rule(tmp_path), main)
    err = capsys.readouterr().err.splitlines()
    assert err == ["WARNING [edm_ars] a lesson from an earlier run skipped",
                   "write: question: math_achievement (matched the prompt 'math')"]
    logged = (tmp_path / "write.log").read_text()
    for text in ("a detail: 12 rows", "num_full_subsets = 2", "lesson from an earlier run skipped",
                 "question: math_achievement", "job resources: cpu_s="):
        assert text in logged


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
    assert lines[1].startswith("incomplete: 2 output(s) of jobs that were stopped")
    assert "resume with `snakemake --cores 8 output/paper.pdf` after the unlock: it remakes them" in lines[1]
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
        assert state.live == [holder.pid] and not state.stale_lock and state.jobs == []
        # its log shows the mlp fit started (and the logistic one finished), whose outputs are marked
        logs = tmp_path / ".snakemake" / "log"
        logs.mkdir(parents=True)
        (logs / "2026-11-28T030406.332974.snakemake.log").write_text(MID_RUN_LOG)
        for name in ("output/branch_1/round_0/models/mlp.joblib", "output/branch_1/round_0/models/mlp.json"):
            (tmp_path / ".snakemake" / "incomplete" / base64.urlsafe_b64encode(name.encode()).decode()).write_text("{}")
        state = run_state(tmp_path)
        assert [j.name for j in state.jobs] == ["fit_model (branch=1, round=0, model=mlp)"] and state.orphans == []
        assert state.log == ".snakemake/log/2026-11-28T030406.332974.snakemake.log"
        printed = subprocess.run([sys.executable, "-m", "edm_ars.cli", "status"], capture_output=True, text=True,
                                 cwd=tmp_path).stdout
        assert "running job: fit_model (branch=1, round=0, model=mlp)" in printed, printed
        assert "stopped" not in printed and "snakemake --cores" not in printed and "no run yet" not in printed
        assert "no outputs yet in" in printed and "the run has just started" in printed
        assert "tail -f .snakemake/log/2026-11-28T030406.332974.snakemake.log" in printed
        assert describe(state, tmp_path)[0].startswith(
            f"running: Snakemake (pid {holder.pid}) is working in {tmp_path.resolve()}; ")
    finally:
        holder.kill()
        holder.wait()
    assert describe(run_state(tmp_path), tmp_path)[0].startswith("stale lock:")


#: a Snakemake 9 log mid-run: the engineer finished, two fits started, the logistic one finished, a checkpoint
#: started and failed
MID_RUN_LOG = """Building DAG of jobs...
[Sat Nov 28 03:04:10 2026]
localrule engineer:
    input: output/branch_1/round_0/research_spec.json
    output: output/branch_1/round_0/data/train_X.parquet, output/branch_1/round_0/data/data_report.json
    log: logs/branch_1/engineer/round_0.log
    jobid: 9
    reason: Missing output files: output/branch_1/round_0/data/data_report.json
    wildcards: branch=1, round=0
    resources: tmpdir=/tmp
Shell command: None
[Sat Nov 28 03:04:12 2026]
Finished jobid: 9 (Rule: engineer)
7 of 32 steps (22%) done
Execute 2 jobs...
[Sat Nov 28 03:04:12 2026]
localrule fit_model:
    input: output/branch_1/round_0/data/train_X.parquet
    output: output/branch_1/round_0/models/logistic.joblib, output/branch_1/round_0/models/logistic.json
    log: logs/branch_1/fit_model/round_0/logistic.log
    jobid: 13
    wildcards: branch=1, round=0, model=logistic
Shell command: None
[Sat Nov 28 03:04:12 2026]
rule fit_model:
    input: output/branch_1/round_0/data/train_X.parquet
    output: output/branch_1/round_0/models/mlp.joblib, output/branch_1/round_0/models/mlp.json, output/branch_1/round_0/models/mlp.oof.parquet
    log: logs/branch_1/fit_model/round_0/mlp.log
    jobid: 14
    benchmark: benchmarks/branch_1/fit_model/round_0/mlp.tsv
    wildcards: branch=1, round=0, model=mlp
Shell command: None
[Sat Nov 28 03:04:14 2026]
Finished jobid: 13 (Rule: fit_model)
localcheckpoint critique:
    output: output/branch_2/round_0/review_report.json
    jobid: 20
    wildcards: branch=2, round=0
[Sat Nov 28 03:04:15 2026]
Error in rule critique:
    message: failed
    jobid: 20
    output: output/branch_2/round_0/review_report.json
"""


def test_a_log_mid_run_names_the_jobs_started_and_not_ended():
    jobs = started_jobs(MID_RUN_LOG)
    assert [(j.jobid, j.name) for j in jobs] == [("14", "fit_model (branch=1, round=0, model=mlp)")]
    assert jobs[0].outputs == ("output/branch_1/round_0/models/mlp.joblib", "output/branch_1/round_0/models/mlp.json",
                               "output/branch_1/round_0/models/mlp.oof.parquet")
    # without finish lines (--quiet progress) every started job is listed; run_state keeps those still marked
    quiet = "\n".join(line for line in MID_RUN_LOG.splitlines() if not line.startswith("Finished"))
    assert [j.jobid for j in started_jobs(quiet)] == ["9", "13", "14"]
    assert started_jobs("") == []


def test_a_running_snakemake_s_jobs_are_running_not_stopped(tmp_path):
    mlp = Job("14", "fit_model", "branch=1, round=0, model=mlp",
              ("output/branch_1/round_0/models/mlp.joblib", "output/branch_1/round_0/models/mlp.json"))
    left = "output/branch_1/round_0/models/xgboost.json"  # marked by an earlier run that was killed
    state = RunState(locked=True, live=[4242], incomplete=sorted([*mlp.outputs, left]),
                     log=".snakemake/log/2026-11-28T030406.332974.snakemake.log", jobs=[mlp])
    lines = describe(state, tmp_path, resume="snakemake --cores 8 output/paper.pdf")
    text = "\n".join(lines)
    assert lines[0] == (f"running: Snakemake (pid 4242) is working in {tmp_path.resolve()}; follow it with `tail -f "
                        f"{tmp_path.resolve()}/.snakemake/log/2026-11-28T030406.332974.snakemake.log` or wait for it "
                        "to end; starting another run here now would stop at its lock")
    assert lines[1] == ("running job: fit_model (branch=1, round=0, model=mlp), writing "
                        "output/branch_1/round_0/models/mlp.joblib, output/branch_1/round_0/models/mlp.json")
    assert lines[2] == ("incomplete: 1 output(s) left by an earlier run that was stopped "
                        f"({left}); the running Snakemake remakes those its targets need")
    assert "of jobs that were stopped" not in text and "snakemake --cores" not in text and "--unlock" not in text
    # no job named in the log: the marked outputs are the running jobs'
    unnamed = describe(RunState(locked=True, live=[4242], incomplete=[left], log=None, jobs=[]), tmp_path)
    assert unnamed[1] == f"running jobs' outputs: 1 marked in progress ({left})"
    assert "follow it in its console" in unnamed[0]
    # the same markers with no Snakemake running: stopped jobs, and the command that resumes the run
    stopped = describe(RunState(locked=False, live=[], incomplete=[left]), tmp_path,
                       resume="snakemake --cores 2 --config hitl=gate-only")
    assert stopped == [f"incomplete: 1 output(s) of jobs that were stopped ({left}); resume with `snakemake "
                       "--cores 2 --config hitl=gate-only`: it remakes them and what depends on them, nothing else"]


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
