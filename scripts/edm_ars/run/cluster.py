"""Cluster job requests (memory, run time) from measured use, scaled by the data set's rows.

The table (profiles/slurm/resources.yaml, written by bench/slurm_resources.py) holds, per rule name,
the peak resident memory (MB) and the seconds of its jobs measured at one or more data sizes (rows of
output/data/dataset.json). A job's request is the measurement at its rows, times a margin, with a floor:

- one measured size: linear in the rows from the origin (rows twice as many -> twice the memory and time);
- two or more sizes: the straight line through the smallest and the largest (a fixed part, the interpreter
  and its libraries, plus a part per row), with a slope of at least 0 and never below the largest value
  measured at or under the job's rows (a flat or noisy pair never asks for less than was used); under the
  smallest size, at least that size's value scaled down from the origin;
- memory is times MEM_MARGIN, at least MEM_FLOOR_MB (the interpreter and libraries alone take
  150-250 MB), run time times TIME_MARGIN with at least RUNTIME_FLOOR_MIN minutes (SLURM counts in
  minutes; a job that starts on a busy node must not be killed for a few seconds of noise).

A rule missing from the table, or a job whose rows are unknown, gets the rule's largest measurement (or
the fallback below) without scaling.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

MEM_MARGIN = 1.5
TIME_MARGIN = 2.0
MEM_FLOOR_MB = 1000
RUNTIME_FLOOR_MIN = 10
# A rule that has no measurement yet: what the profile asked of every job before (4 GB, one hour).
FALLBACK = {"mem_mb": 4000, "runtime": 60}


def _points(table: Mapping, rule: str) -> list[dict]:
    entry = (table.get("rules") or {}).get(rule) or {}
    points = [p for p in entry.get("measured", []) if p.get("rows")]
    return sorted(points, key=lambda p: p["rows"])


def measured_at(points: list[dict], key: str, rows: int | None) -> float:
    """The measured `key` (mem_mb or s) predicted at `rows` from the points (sorted by rows)."""
    if rows is None or rows <= 0:
        return max(p[key] for p in points)
    lo, hi = points[0], points[-1]
    if lo["rows"] == hi["rows"]:
        return hi[key] * rows / hi["rows"]
    slope = max(0.0, (hi[key] - lo[key]) / (hi["rows"] - lo["rows"]))
    line = lo[key] + slope * (rows - lo["rows"])
    if rows >= hi["rows"]:
        return max(line, hi[key])
    if rows <= lo["rows"]:
        return max(line, lo[key] * rows / lo["rows"])
    return max(line, lo[key])


def request(table: Mapping, rule: str, rows: int | None) -> dict[str, int]:
    """{"mem_mb": MB, "runtime": minutes} for one job of `rule` on a data set of `rows` rows."""
    points = _points(table, rule)
    if not points:
        return dict(FALLBACK)
    mem = measured_at(points, "mem_mb", rows)
    seconds = measured_at(points, "s", rows)
    return {
        "mem_mb": int(math.ceil(max(MEM_FLOOR_MB, mem * MEM_MARGIN))),
        "runtime": int(math.ceil(max(RUNTIME_FLOOR_MIN, seconds * TIME_MARGIN / 60))),
    }


def slurm_settings(config: Mapping) -> dict[str, str]:
    """The SLURM account and partition from the configuration, only those that are set (an empty value is
    not passed: the plugin then guesses the account from `sacct` and uses the cluster's default partition)."""
    given = {"slurm_account": config.get("slurm_account"), "slurm_partition": config.get("slurm_partition")}
    return {key: str(value).strip() for key, value in given.items() if str(value or "").strip()}


# The cluster group of a round's model fits (the profile's group of fit_baselines and fit_stacking too).
FIT_GROUP = "fit_{round}"


def fit_group(rows: int | None, threshold: int) -> str | None:
    """FIT_GROUP (every model family of a round fitted inside one SLURM job) for a data set of at most `threshold`
    rows (analysis.large_data.rows) or of unknown size; None above it: each family is then a job of its own, asking
    for its own memory and run time, and the families run on as many nodes as the cluster gives."""
    return None if rows is not None and rows > threshold else FIT_GROUP


def file_rows(path: str) -> int | None:
    """The data rows of a CSV file (its lines less the header; a quoted line break counts as a row, which only
    errs towards a larger request), or None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            lines, last = 0, b"\n"
            while chunk := fh.read(1 << 24):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return None
    lines += last != b"\n"  # a last line without its line break
    return max(0, lines - 1)
