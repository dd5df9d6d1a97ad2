"""The edge between Snakemake and the library: logging to the rule's log, clear failures."""

from __future__ import annotations

import logging
import os
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edm_ars.core.errors import EdmArsError, OutputWriteError
from edm_ars.data.layout import Layout, load_layout
from edm_ars.data.registry import Registry, load_registry

log = logging.getLogger("edm_ars")

#: `log.info(..., extra=RESULT)`: a result line the user sees on the console (the question a run studies), not only
#: in the job's log; every other INFO line goes to the log alone, warnings and errors to both.
RESULT = {"console": True}


class _Console(logging.Filter):
    """The console of a job: warnings, errors and result lines (RESULT); the rest is in the job's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or bool(getattr(record, "console", False))


class _ConsoleFormat(logging.Formatter):
    def __init__(self, rule: str) -> None:
        super().__init__("%(levelname)s [%(name)s] %(message)s")
        self.rule = rule

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "console", False) and record.levelno < logging.WARNING:
            return f"{self.rule}: {record.getMessage()}"  # "EDM-ARS <rule>:" starts a failure (_stop)
        return super().format(record)


def _keep_model_calls(smk: Any) -> str | None:
    """A failed agent job's model calls, copied from its ledger (an output Snakemake deletes) to its logs."""
    from edm_ars.core.ledger import keep_failed

    output, logs = getattr(smk, "output", None), getattr(smk, "log", None)
    if output is None or "ledger" not in output.keys() or not logs:
        return None
    try:
        kept = keep_failed(output.ledger, logs[0])
    except (OSError, ValueError) as exc:
        log.warning("could not keep the model calls of the failed job: %s", exc)
        return None
    if kept is None:
        return None
    path, n = kept
    return f"its {n} model call attempt(s) are kept in {path}"


def run(smk: Any, main: Callable[[Any], None]) -> None:
    """Run a rule's entry: log to snakemake.log[0] (the console gets warnings, errors and RESULT lines only, so a
    run's console stays short); on a user-facing error print it to the terminal too and exit 1, so Snakemake stops with the message and keeps what earlier rules produced. A failed
    agent job's ledger lines are appended to `<log>.llm_calls.jsonl` (Snakemake deletes the ledger)."""
    log_path = smk.log[0] if len(smk.log) else None
    rule = getattr(smk, "rule", "rule")
    console = logging.StreamHandler(sys.stderr)
    console.addFilter(_Console())
    console.setFormatter(_ConsoleFormat(rule))
    handlers: list[logging.Handler] = [console]
    if log_path:
        try:
            handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
        except OSError as exc:
            _stop(rule, str(OutputWriteError.of(exc, log_path)))
    else:  # no log to keep the details: they stay on the console
        console.filters.clear()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
                        handlers=handlers, force=True)
    logging.raiseExceptions = False  # a log line that cannot be written (a full disk) is dropped, not a traceback
    logging.getLogger("fontTools").setLevel(logging.WARNING)  # matplotlib's PDF font subsetting, glyph by glyph
    try:
        _profiled(smk, rule, main)
        log.info("job resources: %s", usage())
    except EdmArsError as exc:
        message = str(exc)
        kept = _keep_model_calls(smk)
        if kept:
            message += ("\n" if "\n" in message else "; ") + kept
        _stop(rule, message)
    except Exception as exc:
        if OutputWriteError.is_write_failure(exc):  # a write outside edm_ars.core.artifacts (a figure, a copy, a model)
            outputs = ", ".join(map(str, list(getattr(smk, "output", []) or [])[:3]))
            unnamed = None if exc.filename or exc.filename2 else f"an output of {rule} ({outputs or 'none declared'})"
            _stop(rule, str(OutputWriteError.of(exc, unnamed)))
        _keep_model_calls(smk)
        log.error("%s failed with an unexpected error:\n%s", rule, traceback.format_exc())
        raise


def usage() -> str:
    """`cpu_s=<CPU seconds> peak_rss_mb=<MB>` of this process and the processes it waited for, from the kernel's
    accounting (exact, unlike a benchmark that samples the job every few seconds): the last line of each job's log,
    which bench/large_data.py reads. A sandboxed script's usage is not in it (bubblewrap does not pass it up), so
    the benchmarks take the larger of this and Snakemake's samples."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    peak_kb = max(own.ru_maxrss, children.ru_maxrss)  # kilobytes on Linux
    return f"cpu_s={cpu:.2f} peak_rss_mb={peak_kb / 1024:.1f}"


USAGE_LINE = re.compile(r"job resources: cpu_s=([0-9.]+) peak_rss_mb=([0-9.]+)")


def logged_usage(log_path: str | Path) -> dict[str, float]:
    """{"cpu_s", "peak_rss_mb"} from the last `job resources:` line of a job's log (usage()); {} when the log is
    missing or has none (a job that failed, or one written before the line existed)."""
    try:
        found = USAGE_LINE.findall(Path(log_path).read_text(errors="replace"))
    except OSError:
        return {}
    return {"cpu_s": float(found[-1][0]), "peak_rss_mb": float(found[-1][1])} if found else {}


def _profiled(smk: Any, rule: str, main: Callable[[Any], None]) -> None:
    """Run main; with EDM_ARS_PROFILE=DIR set, under cProfile, its statistics in DIR/<rule>[_<wildcards>].prof
    (a developer's switch for finding where a job's time goes, e.g. beside bench/large_data.py)."""
    folder = os.environ.get("EDM_ARS_PROFILE")
    if not folder:
        main(smk)
        return
    import cProfile

    wildcards = "_".join(str(v) for v in dict(getattr(smk, "wildcards", {}) or {}).values())
    name = rule + (f"_{wildcards}" if wildcards else "")
    profiler = cProfile.Profile()
    try:
        profiler.runcall(main, smk)
    finally:
        Path(folder).mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(str(Path(folder) / f"{name}.prof"))


def _stop(rule: str, message: str) -> None:
    """Log a user-facing failure, print it to the terminal and exit 1 (Snakemake then removes the job's outputs)."""
    try:
        log.error("%s failed: %s", rule, message)
    except OSError:  # the log itself cannot be written (a full disk)
        pass
    sys.stderr.write(f"\nEDM-ARS {rule}: {message}\n")
    sys.exit(1)


def registry_of(smk: Any, tier2: dict[str, Any] | None = None) -> Registry:
    """The registry whose file(s) the rule declares as `registry` input (one file, or a folder's files)."""
    files = smk.input.registry
    return load_registry(files if isinstance(files, str) else files[0], tier2=tier2)


def layout_of(smk: Any) -> Layout | None:
    """The codebook layout the rule declares as `layout` input, when the registry names one."""
    return load_layout(smk.input.layout) if "layout" in smk.input.keys() else None


def earlier_reviews(smk: Any) -> list[dict[str, Any]]:
    """The reviews of every earlier round (input `earlier_reviews`, absent in round 0), in round order:
    their revision actions accumulate, and the last one is why this round re-runs."""
    from edm_ars.core.artifacts import read_json

    files = smk.input.get("earlier_reviews", []) if "earlier_reviews" in smk.input.keys() else []
    files = [files] if isinstance(files, str) else list(files)
    return [read_json(f, "review_report") for f in files]


def unacted_notes(smk: Any, why: str) -> list[dict[str, Any]]:
    """The researcher's notes of the job's gate (input `human_notes`) that this stage records but cannot act on
    (edm_ars.run.gates.notes_not_acted_on), with one warning in the job's log when there are any."""
    from edm_ars.run.gates import NOT_ACTED_ON, notes_not_acted_on

    found = notes_not_acted_on(smk.input.get("human_notes"), why)
    if found:
        log.warning("the researcher's note(s) recorded, not acted on: %s", NOT_ACTED_ON[why])
    return found
