"""The short console of a run (issue 39): Snakemake's console handler shortened, its log file untouched."""

import io
import logging

from snakemake.logging import ColorizingTextHandler, DefaultFormatter
from snakemake_interface_logger_plugins.common import LogEvent

from edm_ars.run.console import shorten


def _logger(name):
    """A logger with Snakemake's console handler and a second, log-file-like handler, both Snakemake-formatted."""
    logger = logging.getLogger(name)
    logger.handlers.clear()
    logger.setLevel(logging.INFO)
    logger.propagate = False
    console, file = io.StringIO(), io.StringIO()
    handler = ColorizingTextHandler(nocolor=True, stream=console)
    handler.setFormatter(DefaultFormatter())
    handler.name = "DefaultStreamHandler"
    full = logging.StreamHandler(file)
    full.setFormatter(DefaultFormatter())
    logger.addHandler(handler)
    logger.addHandler(full)
    return logger, console, file


def _job(logger, rule, jobid, wildcards=None):
    logger.info(None, extra=dict(event=LogEvent.JOB_INFO, jobid=jobid, rule_name=rule, rule_msg=None, local=True,
                                 is_checkpoint=False, input=["in.csv"], output=["out.json"], log=[f"logs/{rule}.log"],
                                 benchmark=None, reason="Missing output files: out.json",
                                 wildcards=wildcards or {}, priority=0, threads=1, resources={}, indent=False))


def _run(logger):
    logger.info("Select jobs to execute...")
    logger.info("Execute 1 jobs...", extra=dict(event=LogEvent.JOB_STARTED, jobs=[3]))
    _job(logger, "fit_model", 3, {"branch": "1", "round": "0", "model": "xgboost"})
    logger.info(None, extra=dict(event=LogEvent.SHELLCMD, cmd=None))
    logger.info("Finished jobid: 3 (Rule: fit_model)", extra=dict(event=LogEvent.JOB_FINISHED, job_id=3))
    logger.info(None, extra=dict(event=LogEvent.PROGRESS, done=1, total=4))
    logger.warning("a warning of Snakemake's")
    logger.error(None, extra=dict(event=LogEvent.JOB_ERROR, rule_name="write", rule_msg=None, jobid=5,
                                  input=[], output=["output/paper/paper.tex"], log=["logs/write.log"],
                                  conda_env=None, shellcmd=None, aux={}, indent=False))


def test_the_console_gets_a_line_per_job_start_and_end_the_log_everything(monkeypatch):
    monkeypatch.delenv("EDM_ARS_CONSOLE", raising=False)
    logger, console, file = _logger("edm_ars_test_console")
    assert shorten(logger) is True
    assert shorten(logger) is False  # once
    _run(logger)
    lines = console.getvalue().splitlines()
    assert lines[0].endswith("] localrule fit_model: branch=1, round=0, model=xgboost") and lines[0].startswith("[")
    assert lines[1].endswith("] done fit_model (1 of 4 steps, 25%)")
    assert lines[2] == "a warning of Snakemake's"
    assert "Error in rule write:" in lines[4] and "    jobid: 5" in lines  # a failure in full
    assert not any(t in console.getvalue() for t in ("Select jobs", "Execute 1 jobs", "Shell command", "reason:"))
    logged = file.getvalue()  # the log file's handler sees what Snakemake wrote, unshortened
    for text in ("Select jobs to execute...", "localrule fit_model:", "    jobid: 3", "    reason: Missing output",
                 "Finished jobid: 3 (Rule: fit_model)", "1 of 4 steps (25%) done", "Error in rule write:"):
        assert text in logged, text


def test_the_full_console_on_request_and_in_a_dry_run(monkeypatch):
    monkeypatch.setenv("EDM_ARS_CONSOLE", "full")
    logger, console, _ = _logger("edm_ars_test_console_full")
    assert shorten(logger) is False
    monkeypatch.delenv("EDM_ARS_CONSOLE")
    assert shorten(logger, dryrun=True) is False
    _run(logger)
    assert "localrule fit_model:\n    input: in.csv" in console.getvalue()
    assert "Finished jobid: 3 (Rule: fit_model)" in console.getvalue()


def test_a_dry_run_is_seen_on_the_command_line():
    from edm_ars.run.console import dry_run

    assert dry_run(["snakemake", "-n", "output/paper.pdf"]) and dry_run(["snakemake", "-np"])
    assert dry_run(["python", "--dry-run"]) and dry_run(["snakemake", "--dryrun"])
    assert not dry_run(["snakemake", "--cores", "2", "output/paper.pdf"]) and not dry_run(["snakemake", "-j2"])
    assert not dry_run(["snakemake", "--notemp"])


def _failed(logger, rule, output):
    logger.error("RuleException:\nCalledProcessError in file \"/wf/rules/gates.smk\", line 30:\nCommand failed."
                 if rule == "gate" else "RuleException:\nCalledProcessError in file \"/wf/rules/write.smk\", line 9",
                 extra=dict(event=LogEvent.ERROR, exception="RuleException"))
    logger.error(None, extra=dict(event=LogEvent.JOB_ERROR, rule_name=rule, rule_msg=None, jobid=7, input=[],
                                  output=[output], log=[f"logs/{rule}.log"], conda_env=None, shellcmd=None, aux={},
                                  indent=False))
    logger.info("Shutting down, this might take some time.")
    logger.error("Exiting because a job execution failed. Look above for error messages")


GATE_OUTPUT = "output/branch_1/gates/round_0/formulate.approved.json"


def test_a_gate_that_waits_leaves_snakemakes_failure_report_to_the_log(monkeypatch, tmp_path):
    """A gate job that stopped the run because it waits for the researcher (its waiting file written) is a normal end:
    the console keeps none of Snakemake's failure report, which the run's last block replaces; the log keeps it."""
    from edm_ars.run.gates import waiting_path

    monkeypatch.delenv("EDM_ARS_CONSOLE", raising=False)
    monkeypatch.chdir(tmp_path)
    logger, console, file = _logger("edm_ars_test_console_gate")
    shorten(logger)
    waiting = waiting_path(tmp_path, "formulate", 0)
    waiting.parent.mkdir(parents=True)
    waiting.write_text("gate 'formulate' (round 0) is waiting for your review: not approved yet\n")
    _failed(logger, "gate", GATE_OUTPUT)
    assert console.getvalue().strip() == ""
    for text in ("RuleException", "Error in rule gate:", "Shutting down", "Exiting because a job execution failed"):
        assert text in file.getvalue(), text


def test_any_other_failure_is_reported_in_full(monkeypatch, tmp_path):
    """A gate job that failed without waiting (no waiting file), or a failure of another rule: the report stays."""
    monkeypatch.delenv("EDM_ARS_CONSOLE", raising=False)
    monkeypatch.chdir(tmp_path)
    for name, rule, output in (("gate", "gate", GATE_OUTPUT), ("write", "write", "output/paper/paper.tex")):
        logger, console, _ = _logger(f"edm_ars_test_console_fail_{name}")
        shorten(logger)
        _failed(logger, rule, output)
        for text in ("RuleException", f"Error in rule {rule}:", "Exiting because a job execution failed"):
            assert text in console.getvalue(), (rule, text)
