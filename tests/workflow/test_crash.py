"""Crash safety and byte reproducibility of whole runs: two clean runs give the same bytes; a run killed during a
model fit or during the LaTeX build, followed by the command the message names, gives the same bytes as one that
was never interrupted; artifacts follow the umask; a full disk during the Writer is one line naming the path;
`edm-ars status` during a run names its running jobs and after a kill the stopped ones."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import BASE_RUN_UMASK
from workflow import ROOT, TEST_CONFIG, jobs_run, snakemake

pytestmark = pytest.mark.workflow

#: output files allowed to differ between two runs of the same inputs, with the reason
EXEMPT: dict[str, str] = {
    "output/lessons.json": "the lessons this run added to the store shared by later runs (lessons.store), stamped "
                           "with when they were stored (their recency weights them) and with a run id derived from "
                           "the working folder",
}


def outputs(workdir: Path) -> dict[str, bytes]:
    """Every file under output/, by path relative to the run directory."""
    return {str(p.relative_to(workdir)): p.read_bytes() for p in sorted((workdir / "output").rglob("*"))
            if p.is_file()}


def copy_run(run: Path, tmp_path_factory, name: str) -> Path:
    """A copy of a finished run beside it (a folder made by tmp_path_factory, as the shared run's is): the inputs
    Snakemake recorded are paths relative to the working directory (the workflow's own files too), so a copy at
    the same depth keeps them and reruns nothing; one a folder deeper would rerun every job."""
    workdir = tmp_path_factory.mktemp(name)
    shutil.copytree(run, workdir, dirs_exist_ok=True, symlinks=True)
    return workdir


def differing(a: Path, b: Path) -> list[str]:
    """The output files that are not byte-identical (or exist in one run only), less the listed exemptions."""
    left, right = outputs(a), outputs(b)
    names = sorted(set(left) | set(right))
    return [n for n in names if n not in EXEMPT and left.get(n) != right.get(n)]


def start(workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Snakemake in its own process group, so the whole run (jobs included) can be killed at once."""
    cmd = [sys.executable, "-m", "snakemake", *args, "--snakefile", str(ROOT / "Snakefile"), "--directory",
           str(workdir), "--cores", "2", "--configfile", str(TEST_CONFIG)]
    return subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=env)


def kill_when(proc: subprocess.Popen, ready, what: str, after: float = 1.0, timeout: float = 300) -> None:
    """SIGKILL the run's process group `after` seconds once `ready()` holds."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.1)
    time.sleep(after)
    assert proc.poll() is None, f"the run ended before it could be killed during {what}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def recover(workdir: Path) -> subprocess.CompletedProcess:
    """What a user does after a kill: the run names `--unlock`; `edm-ars status` says the lock is stale and gives
    the same command; after it, the same command completes (outputs the killed jobs left are remade)."""
    status = subprocess.run(["edm-ars", "status", "--directory", str(workdir)], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert "stale lock:" in status.stdout and "snakemake --unlock" in status.stdout, status.stdout
    again = snakemake(workdir, "output/paper.pdf")
    assert again.returncode != 0 and "LockException" in again.stderr and "--unlock" in again.stderr
    unlocked = snakemake(workdir, "--unlock")
    assert unlocked.returncode == 0, unlocked.stderr[-3000:]
    done = snakemake(workdir, "output/paper.pdf")
    assert done.returncode == 0, done.stderr[-5000:]
    assert "IncompleteFilesException" not in done.stderr
    status = subprocess.run(["edm-ars", "status", "--directory", str(workdir)], capture_output=True, text=True)
    assert "stale lock" not in status.stdout and "incomplete:" not in status.stdout, status.stdout
    return done


def test_two_clean_runs_are_byte_identical(base_run, tmp_path_factory):
    """The default target (the paper, costs, lessons, revision history) twice from empty, in two folders."""
    reference = copy_run(base_run[0], tmp_path_factory, "first")  # the shared run from empty, its default target
    first = snakemake(reference)  # completed: only the jobs the paper does not need run
    assert first.returncode == 0, first.stderr[-5000:]
    assert "write" not in jobs_run(first) and "lessons" in jobs_run(first), jobs_run(first)
    second = tmp_path_factory.mktemp("second")
    again = snakemake(second)
    assert again.returncode == 0, again.stderr[-5000:]
    assert len(outputs(second)) > 50 and set(EXEMPT) <= set(outputs(second))
    assert differing(reference, second) == []


def test_artifacts_follow_the_umask(base_run):
    workdir, _ = base_run
    files = [p for p in (workdir / "output").rglob("*") if p.is_file()]
    folders = [p for p in (workdir / "output").rglob("*") if p.is_dir()]
    assert files and folders
    wrong = {str(p.relative_to(workdir)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files
             if stat.S_IMODE(p.stat().st_mode) != 0o666 & ~BASE_RUN_UMASK}
    wrong |= {str(p.relative_to(workdir)): oct(stat.S_IMODE(p.stat().st_mode)) for p in folders
              if stat.S_IMODE(p.stat().st_mode) != 0o777 & ~BASE_RUN_UMASK}
    assert wrong == {}


def test_a_kill_during_a_model_fit_then_the_named_command_gives_the_same_bytes(base_run, tmp_path):
    reference, _ = base_run
    fit_log = tmp_path / "logs" / "branch_1" / "fit_model" / "round_0" / "xgboost.log"
    proc = start(tmp_path, "output/paper.pdf")
    kill_when(proc, fit_log.exists, "xgboost's fit")
    assert not (tmp_path / "output" / "paper.pdf").exists()
    recover(tmp_path)
    assert differing(reference, tmp_path) == []


def test_a_kill_during_the_latex_build_leaves_no_build_state(base_run, tmp_path, tmp_path_factory):
    reference, _ = base_run
    workdir = copy_run(reference, tmp_path_factory, "latex")
    (workdir / "output" / "paper.pdf").unlink()
    scratch = tmp_path / "scratch"  # the LaTeX build's private folder is made under TMPDIR
    scratch.mkdir()
    proc = start(workdir, "output/paper.pdf", env=dict(os.environ, TMPDIR=str(scratch)))
    kill_when(proc, lambda: any(scratch.glob("*/build/paper.bbl")), "BibTeX's paper.bbl")
    paper = workdir / "output" / "paper"
    assert not (workdir / "output" / "paper.pdf").exists()
    assert not [p.name for p in paper.iterdir() if p.suffix in (".aux", ".bbl", ".blg", ".fdb_latexmk", ".fls")]
    assert jobs_run(recover(workdir)) == ["compile_pdf"]  # the build again, and nothing before it
    assert (workdir / "output" / "paper.pdf").read_bytes() == (reference / "output" / "paper.pdf").read_bytes()
    assert differing(reference, workdir) == []


def status(workdir: Path) -> str:
    """`edm-ars status` in the run's directory, as a user types it there."""
    printed = subprocess.run([sys.executable, "-m", "edm_ars.cli", "status"], capture_output=True, text=True,
                             cwd=workdir, timeout=120)
    assert printed.returncode == 0, printed.stdout + printed.stderr
    return printed.stdout


def test_status_mid_run_names_the_running_jobs_and_after_a_kill_the_stopped_ones(tmp_path):
    """During a run `edm-ars status` says which jobs are running (the model fit, by rule and wildcards) and
    suggests nothing that would start a second run; once the run is killed, the same outputs are those of jobs
    that were stopped, with the command that resumes the run. The run is paused (SIGSTOP) while status reads it,
    so the fit cannot end meanwhile."""
    target = "output/branch_1/round_0/models/xgboost.joblib"
    fit_log = tmp_path / "logs" / "branch_1" / "fit_model" / "round_0" / "xgboost.log"
    marker = tmp_path / ".snakemake" / "incomplete" / base64.urlsafe_b64encode(target.encode()).decode()
    locks = tmp_path / ".snakemake" / "locks"
    proc = start(tmp_path, target)
    deadline = time.monotonic() + 180
    try:
        while not (fit_log.exists() and marker.exists() and any(locks.glob("*.lock"))):
            assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before xgboost's fit"
            assert time.monotonic() < deadline, "no xgboost fit within 180 s"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGSTOP)
        during = status(tmp_path)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert f"running: Snakemake (pid {proc.pid}" in during, during
    assert "running job: fit_model (branch=1, round=0, model=xgboost), writing " + target in during, during
    assert "tail -f .snakemake/log/" in during and "starting another run here now would stop at its lock" in during
    assert "of jobs that were stopped" not in during and "snakemake --cores" not in during, during
    assert "xgboost.joblib" not in "".join(line for line in during.splitlines() if line.startswith("incomplete"))
    assert "paper: not built yet (a Snakemake run is under way here: wait for it to end)" in during, during
    after = status(tmp_path)
    assert "running" not in after and "stale lock:" in after, after
    stopped = next(line for line in after.splitlines() if line.startswith("incomplete:"))
    assert "of jobs that were stopped" in stopped and target in stopped and "resume with `snakemake " in stopped, after


@pytest.fixture
def tiny_disk(small_disk):
    return small_disk("96k")


def test_a_full_disk_during_the_writer_is_one_line_naming_the_path(base_run, tmp_path_factory, tiny_disk):
    reference, _ = base_run
    workdir = copy_run(reference, tmp_path_factory, "disk")
    paper = workdir / "output" / "paper"
    for name in ("provenance.json", "recovery.json"):  # the Writer's inputs that live in its folder
        shutil.copy2(paper / name, tiny_disk / name)
    shutil.rmtree(paper)
    paper.symlink_to(tiny_disk, target_is_directory=True)
    result = snakemake(workdir, "output/paper.pdf", "-R", "write")
    assert result.returncode != 0 and jobs_run(result) == ["write"], jobs_run(result)
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("EDM-ARS write:")]
    assert len(lines) == 1 and "cannot write output/paper/" in lines[0] and "no space left" in lines[0], \
        result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    left = sorted(p.name for p in tiny_disk.iterdir())
    assert left == ["provenance.json", "recovery.json"], left  # nothing half-written kept
