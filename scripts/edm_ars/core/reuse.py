"""Reuse within a run: a revision round whose data did not change refits nothing that it already has.

Fitted models are reused by path (the input functions point round r at the round whose fit serves it).
Results computed from a model (its SHAP values, a stability refit) are recorded with the inputs they came
from; the same job of the next round takes the earlier record as a declared input (`earlier`) and keeps
an entry whose inputs are the same files and settings instead of computing it again. The analysis is
deterministic (seeds from config), so a kept entry is the one the job would compute.
"""

from __future__ import annotations

from typing import Any

from edm_ars.core.artifacts import read_json


def earlier_record(smk: Any, name: str = "earlier") -> dict[str, Any] | None:
    """The same job's output of the previous round, when the rule declares it (absent in round 0 and in
    a round whose data changed)."""
    if name not in smk.input.keys():
        return None
    return read_json(smk.input[name])


def same_inputs(record: dict[str, Any] | None, inputs: dict[str, Any]) -> bool:
    """Whether an earlier entry was computed, without error, from exactly these inputs."""
    return bool(record) and record.get("inputs") == inputs and not record.get("errors")
