"""The data registry: waves, sentinels, Tier 1/2/3 variables, read through pure functions.

A registry is a folder of YAML files (registry/<dataset>/): dataset.yaml, tier1.yaml, tier3.yaml,
pitfalls.yaml, canonical_questions.yaml. Tier 2 is generated from the data and the layout file by
the `registry_tier2` rule and passed in as a dict.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from .errors import EdmArsError


@dataclass
class Registry:
    dataset: dict[str, Any]
    tier1: dict[str, dict[str, Any]]
    tier3: dict[str, Any]
    pitfalls: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    tier2: dict[str, dict[str, Any]] = field(default_factory=dict)
    root: Path | None = None

    # ---- waves -------------------------------------------------------------------------
    @cached_property
    def wave_order(self) -> dict[str, int]:
        return {w["key"]: int(w["order"]) for w in self.dataset["waves"]}

    @cached_property
    def _prefix_wave(self) -> dict[str, str]:
        return {p.upper(): w["key"] for w in self.dataset["waves"] for p in w["prefixes"]}

    def wave(self, key: str) -> dict[str, Any]:
        for w in self.dataset["waves"]:
            if w["key"] == key:
                return w
        raise KeyError(key)

    # ---- variables ---------------------------------------------------------------------
    def variable(self, name: str) -> dict[str, Any] | None:
        """The curated (Tier 1) or generated (Tier 2) record of a variable, or None."""
        return self.tier1.get(name) or self.tier2.get(name)

    def knows(self, name: str) -> bool:
        return self.variable(name) is not None

    @property
    def layout_path(self) -> Path | None:
        if self.root is None or not self.dataset.get("layout_file"):
            return None
        return self.root / self.dataset["layout_file"]

    @property
    def sentinel_codes(self) -> list[float]:
        return [float(c) for c in self.dataset["sentinels"]["numeric"]]

    @property
    def sentinel_labels(self) -> list[str]:
        return list(self.dataset["sentinels"]["labels"])


def load_registry(root: str | Path, tier2: dict[str, Any] | None = None) -> Registry:
    """Load a registry folder; `tier2` is the parsed output/registry/tier2.json when available."""
    root = Path(root)
    if not (root / "dataset.yaml").exists():
        raise EdmArsError(f"registry not found: {root}/dataset.yaml does not exist")

    def read(name: str) -> Any:
        path = root / name
        return yaml.safe_load(path.read_text()) if path.exists() else {}

    tier1 = {v["name"]: v for v in read("tier1.yaml").get("variables", [])}
    t2 = (tier2 or {}).get("variables", {}) if tier2 else {}
    return Registry(
        dataset=read("dataset.yaml"),
        tier1=tier1,
        tier3=read("tier3.yaml"),
        pitfalls=read("pitfalls.yaml").get("pitfalls", []),
        questions=read("canonical_questions.yaml").get("questions", []),
        tier2=t2,
        root=root,
    )


# ---- pure functions over a registry --------------------------------------------------------


def wave_of(reg: Registry, name: str) -> str | None:
    """The survey wave of a variable: curated wave first, else inferred from the name prefix."""
    rec = reg.variable(name)
    if rec and rec.get("wave"):
        return rec["wave"]
    return reg._prefix_wave.get(name[:2].upper())


def is_temporally_valid(reg: Registry, predictor: str, outcome: str) -> bool:
    """True when the predictor's wave is strictly earlier than the outcome's (same wave = leakage)."""
    pw, ow = wave_of(reg, predictor), wave_of(reg, outcome)
    if pw is None or ow is None:
        return False
    return reg.wave_order[pw] < reg.wave_order[ow]


def is_excluded(reg: Registry, name: str, category: str | None = None) -> bool:
    """Tier 3: weights, IDs, flags and design variables. A curated Tier 1 name always wins."""
    if name in reg.tier1:
        return False
    upper = name.upper()
    t3 = reg.tier3
    if upper in {e.upper() for e in t3.get("exact", [])}:
        return True
    if any(re.match(p, upper) for p in t3.get("prefix_patterns", [])):
        return True
    if any(re.search(p, upper) for p in t3.get("suffix_patterns", [])):
        return True
    return category is not None and category in t3.get("categories", [])


def is_protected(reg: Registry, name: str) -> bool:
    rec = reg.tier1.get(name)
    return bool(rec and rec.get("protected"))


def sentinels(reg: Registry) -> tuple[frozenset[float], frozenset[str]]:
    """The numeric reserve codes and text missing labels that mean 'missing' in this data set."""
    return frozenset(reg.sentinel_codes), frozenset(reg.sentinel_labels)


def is_sentinel(reg: Registry, value: Any) -> bool:
    codes, labels = sentinels(reg)
    if isinstance(value, str):
        text = value.strip()
        if text in labels:
            return True
        try:
            return float(text) in codes
        except ValueError:
            return False
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return float(value) in codes
    return False


def outcomes(reg: Registry) -> list[str]:
    return [n for n, v in reg.tier1.items() if v.get("role") == "outcome"]


def find_question(reg: Registry, question_id: str) -> dict[str, Any]:
    for q in reg.questions:
        if q["id"] == question_id:
            return q
    raise EdmArsError(f"unknown canonical question '{question_id}' (known: {[q['id'] for q in reg.questions]})")
