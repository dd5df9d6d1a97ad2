"""Analysis phases keep what worked: a step stopped by a condition of the data is recorded, not fatal to the
other steps; anything else is a bug and stops the rule with its traceback."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from edm_ars.core.errors import AnalysisLimitation

log = logging.getLogger("edm_ars")

# What an analysis phase records and survives: the conditions of the data its steps detect and raise
# (edm_ars.core.errors.AnalysisLimitation), and running out of memory, which depends on the machine, the data's size
# and the model family, and cannot be checked before the step. Anything else (TypeError, ValueError, KeyError,
# ImportError of a library the env provides...) is a bug or a broken installation, and stops the rule.
RECORDED: tuple[type[BaseException], ...] = (AnalysisLimitation, MemoryError)


def error_record(phase: str, exc: BaseException, what: str | None = None) -> dict[str, Any]:
    """The record of a recorded failure: the phase, the step (`what`), the condition (`type`, the exception's
    class name: SingleClass, SHAPTimeout, MemoryError...) and its message."""
    reason = getattr(exc, "reason", None) or str(exc) or ("out of memory" if isinstance(exc, MemoryError) else "")
    return {"phase": phase, "what": what, "type": type(exc).__name__, "message": reason[:500]}


@contextmanager
def recorded(errors: list[dict[str, Any]], phase: str, what: str | None = None) -> Iterator[None]:
    """Run a step; a recorded failure (RECORDED) is appended to `errors` (with the phase) and swallowed,
    anything else propagates."""
    try:
        yield
    except RECORDED as exc:
        errors.append(error_record(phase, exc, what))
        log.error("%s%s failed (%s): %s", phase, f" {what}" if what else "", type(exc).__name__, exc)
