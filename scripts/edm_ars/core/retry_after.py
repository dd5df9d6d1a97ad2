"""How long a server asks a client to wait before trying again (HTTP 429, 503, 529)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from a response's `retry-after-ms` or `retry-after` header (delta-seconds or an HTTP
    date); None when absent or unreadable. `headers` is any mapping with a case-insensitive `get` (httpx,
    urllib and email headers are)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
