"""Analysis phases keep what worked: failures are classified and recorded, not fatal to earlier phases."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("edm_ars")

# The failures an analysis phase records and survives; anything else is a bug and stops the rule.
RECORDED = (ImportError, MemoryError, FileNotFoundError, ValueError, TypeError, RuntimeError, TimeoutError)


def error_record(phase: str, exc: BaseException, what: str | None = None) -> dict[str, Any]:
    kind = type(exc).__name__
    reason = getattr(exc, "reason", None) or str(exc)
    if kind == "ExplainSkipped" and "timeout" in reason.lower():
        kind = "SHAPTimeout"
    return {"phase": phase, "what": what, "type": kind, "message": reason[:500]}


@contextmanager
def recorded(errors: list[dict[str, Any]], phase: str, what: str | None = None,
             extra: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Run a step; a recorded failure type is appended to `errors` (with the phase) and swallowed."""
    try:
        yield
    except RECORDED + extra as exc:
        errors.append(error_record(phase, exc, what))
        log.error("%s%s failed (%s): %s", phase, f" {what}" if what else "", type(exc).__name__, exc)

