"""A short console for a workflow run: one line when a job starts and one when it is done (with the run's
progress), Snakemake's warnings and errors in full, and the jobs' own warnings and result lines
(edm_ars.jobs.rule_io); everything else stays in the logs (.snakemake/log/*.snakemake.log and logs/).

Snakemake's `--quiet rules` / `--quiet progress` would also silence its log file (the same filter serves both),
and with it the job records `edm-ars metrics` and `edm-ars status` read and the `Error in rule` block of a failed
job; so the Snakefile shortens only the console's handler (`shorten`). EDM_ARS_CONSOLE=full keeps Snakemake's
own console, as does a dry run (its job list is what it is for).
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Any

#: Snakemake's console handler (snakemake.logging.LoggerManager._default_streamhandler)
HANDLER = "DefaultStreamHandler"
#: plain messages of the scheduler that the console leaves to the log
_CHATTER = ("Select jobs to execute...", "Using shell:", "Assuming unrestricted shared filesystem usage.",
            "Conda environments: ignored", "Singularity containers: ignored",
            "DAG of jobs will be updated after completion.", "Updating checkpoint dependencies.")


#: a gate job's output (rules/gates.smk): branch, round, gate, from which its waiting file is found
_GATE_OUTPUT = re.compile(r"output/branch_(\d+)/gates/round_(\d+)/(\w+)\.approved\.json")
#: what Snakemake says after a failed job, which a run that stopped only at waiting gates does not need
_AFTER_FAILURE = ("Shutting down, this might take some time.", "Exiting because a job execution failed")


def _gate_waits(output: Any) -> bool:
    """Whether a failed job's output is a gate's approval and that gate's job recorded that it waits (the job removes
    its waiting file when it starts, so the file is this run's)."""
    from edm_ars.run.gates import waiting_path

    found = _GATE_OUTPUT.search(str(output or ""))
    return bool(found) and waiting_path(Path.cwd(), found.group(3), int(found.group(2)), int(found.group(1))).is_file()


def _event(record: logging.LogRecord) -> str | None:
    event = getattr(record, "event", None)
    return None if event is None else str(getattr(event, "value", event))


def _wildcards(wildcards: Any) -> str:
    try:
        items = dict(wildcards or {}).items()
    except (TypeError, ValueError):
        return ""
    return ", ".join(f"{k}={v}" for k, v in items)


class ShortConsole(logging.Filter):
    """Drops what the console does not need and rewrites job starts and progress as one line each (a filter may
    change the record: the log file's handler is a different one and sees the record Snakemake made)."""

    def __init__(self, handler: logging.Handler | None = None) -> None:
        super().__init__()
        self.handler = handler
        self.finished: list[str] = []  # rules finished since the last progress line
        self.started = time.time()
        self.gates_waiting = 0  # failed gate jobs that wait for the researcher
        self.other_failures = 0

    def _gate_error(self, record: logging.LogRecord) -> bool:
        """Snakemake's exception report of a failed gate job (it comes before the job's error block) while a gate of
        this run waits: the run ends with the gate's block instead (rules/gates.smk onerror)."""
        if "gates.smk" not in record.getMessage():
            return False
        try:  # a filter must not raise: Snakemake's own report would be lost with it
            waiting = Path.cwd().glob("logs/branch_*/gate/round_*/*.waiting.txt")
            return any(p.stat().st_mtime >= self.started - 1 for p in waiting)
        except OSError:
            return False

    def filter(self, record: logging.LogRecord) -> bool:
        event = _event(record)
        # a gate that waits is a normal end of the run: its block comes last (exit status 3), so Snakemake's failure
        # report of the gate job, and what Snakemake says after it when nothing else failed, stay in the log
        if event == "job_error":
            if record.__dict__.get("rule_name") == "gate" and _gate_waits(record.__dict__.get("output")):
                self.gates_waiting += 1
                return False
            self.other_failures += 1
            return True
        if event == "error" and self._gate_error(record):
            return False
        if (self.gates_waiting and not self.other_failures and event is None
                and record.getMessage().startswith(_AFTER_FAILURE)):
            return False
        if record.levelno >= logging.WARNING or event in ("group_error", "error"):
            return True
        now = time.strftime("%H:%M:%S")
        if event == "job_info":
            d = record.__dict__
            if d.get("rule_msg"):
                return True  # a rule's own message: as Snakemake writes it
            kind = f"{'local' if d.get('local') else ''}{'checkpoint' if d.get('is_checkpoint') else 'rule'}"
            wc = _wildcards(d.get("wildcards"))
            if self.handler is not None:  # Snakemake's handler writes a blank line before a job's block
                self.handler.last_msg_was_job_info = True
            return self._replace(record, f"[{now}] {kind} {d.get('rule_name')}:" + (f" {wc}" if wc else ""))
        if event == "job_finished":
            msg = str(record.__dict__.get("msg") or "")
            rule = msg.rsplit("(Rule: ", 1)[-1].rstrip(")") if "(Rule: " in msg else "a job"
            self.finished.append(rule)
            return False
        if event == "progress":
            d = record.__dict__
            done, total = d.get("done"), d.get("total")
            rules = ", ".join(self.finished) or "a job"
            self.finished = []
            pct = f"{100 * done / total:.0f}%" if isinstance(done, int) and total else "?"
            return self._replace(record, f"[{now}] done {rules} ({done} of {total} steps, {pct})")
        if event in ("shellcmd", "workflow_started", "job_started"):
            # `Shell command: None` of script rules; the banner (command, config files); `Execute 2 jobs...`
            return False
        if event is None:
            msg = record.getMessage()
            return not msg.startswith(_CHATTER)
        return True

    @staticmethod
    def _replace(record: logging.LogRecord, text: str) -> bool:
        """Turn the record into a plain message for the console's formatter (a copy's attributes would not
        reach the handler: the filter's verdict is all a handler takes)."""
        record.__dict__["_edm_ars_console"] = text
        return True


class ShortFormat(logging.Formatter):
    """The console's formatter: the lines ShortConsole rewrote, else Snakemake's own formatter."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        text = record.__dict__.get("_edm_ars_console")
        if text is not None:
            return text
        return self.inner.format(record) if self.inner is not None else super().format(record)


def dry_run(argv: list[str]) -> bool:
    """Whether a Snakemake command line asks for a dry run (-n, --dry-run, --dryrun, or -n among short flags such as
    -np): `workflow.dryrun` is not yet set while the Snakefile is read."""
    return any(a in ("--dry-run", "--dryrun") or (a.startswith("-") and not a.startswith("--") and "n" in a[1:]
                                                   and a[1:].isalpha())
               for a in argv[1:])


def shorten(logger: logging.Logger | None = None, *, dryrun: bool = False) -> bool:
    """Give Snakemake's console handler the short console; True when it did (False under EDM_ARS_CONSOLE=full,
    in a dry run, or when the handler is not there, e.g. a logger plugin writes the console)."""
    if dryrun or os.environ.get("EDM_ARS_CONSOLE", "").strip().lower() == "full":
        return False
    logger = logger or logging.getLogger("snakemake.logging")
    for handler in logger.handlers:
        if handler.name == HANDLER and not any(isinstance(f, ShortConsole) for f in handler.filters):
            handler.addFilter(ShortConsole(handler))
            handler.setFormatter(ShortFormat(handler.formatter))
            return True
    return False
