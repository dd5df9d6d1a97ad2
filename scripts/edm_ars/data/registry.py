"""The data registry: everything dataset-specific, as data, read through pure functions.

A registry is either one YAML file with the sections `dataset`, `variables` (Tier 1), `tier3`,
`pitfalls` and `questions`, or a folder holding them as dataset.yaml, tier1.yaml, tier3.yaml,
pitfalls.yaml and canonical_questions.yaml. Tier 2 is generated from the data
(and a codebook layout file, when the registry names one) by the `registry_tier2` rule and passed
in as a dict. `validate_registry` (edm_ars.data.registry_validation) lists every inconsistency of a registry,
naming the variable.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from edm_ars.core.errors import EdmArsError, yaml_problem
from edm_ars.core.yamlio import load_yaml

# What a canonical question may say about why its outcome is predicted (else the data set's prose says it).
QUESTION_PROSE = ("purpose", "actors", "decision_time")


@dataclass
class Registry:
    dataset: dict[str, Any]
    tier1: dict[str, dict[str, Any]]
    tier3: dict[str, Any]
    pitfalls: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    tier2: dict[str, dict[str, Any]] = field(default_factory=dict)
    root: Path | None = None

    # ---- identity and prose -------------------------------------------------------------
    @property
    def name(self) -> str:
        return str(self.dataset.get("name", "unknown"))

    @property
    def prose(self) -> dict[str, Any]:
        """What the Writer says about the data set (names, population, source, unit, wave labels):
        the registry's `prose` section completed from its other facts."""
        given = dict(self.dataset.get("prose") or {})
        title = self.dataset.get("title", self.name)
        out = {
            "short": given.get("short", self.name), "long": given.get("long", title),
            "agency": given.get("agency", ""), "about": given.get("about", ""),
            "source": given.get("source", ""), "design": given.get("design", ""),
            "used_for": given.get("used_for", ""),
            # why prediction from these data matters: what it serves, who acts on it and when (a question
            # may say it for its own outcome: questions[].purpose, actors, decision_time)
            "purpose": given.get("purpose", ""), "actors": given.get("actors", ""),
            "decision_time": given.get("decision_time", ""),
            "measures": given.get("measures", ""), "collected_for": given.get("collected_for", ""),
            "question_prose": {str(q["id"]): {k: q[k] for k in QUESTION_PROSE if q.get(k)}
                               for q in self.questions if q.get("id") and any(q.get(k) for k in QUESTION_PROSE)},
            "unit": given.get("unit", "student"), "units": given.get("units", given.get("unit", "student") + "s"),
            "weights_note": given.get("weights_note", ""),
            "waves": {w["key"]: w.get("prose", w.get("label", w["key"])) for w in self.waves},
            "wave_labels": {w["key"]: w.get("label", w.get("prose", w["key"])) for w in self.waves},
            "wave_order": [w["key"] for w in sorted(self.waves, key=lambda w: int(w["order"]))],
            "group_phrases": dict(given.get("group_phrases") or {}),
            "expected_groups": list(given.get("expected_groups") or []),
            "study_topics": list((self.dataset.get("literature") or {}).get("study_topics") or []),
            "topic": given.get("topic", self.dataset.get("literature", {}).get("topic", self.name)),
            "grouping": self.grouping,
        }
        return out

    @property
    def limitations(self) -> list[str]:
        """Limitations every prediction study of this data set carries (stated in each specification)."""
        return self.limitations_for("prediction")

    def limitations_for(self, task: str) -> list[str]:
        """Limitations every study of the given task carries: each item of `dataset.limitations` is a sentence
        (every study) or {text: ..., task: prediction | causal} (that kind of study only)."""
        out = []
        for item in self.dataset.get("limitations", []):
            if isinstance(item, dict):
                if item.get("task", task) != task:
                    continue
                item = item.get("text", "")
            out.append(" ".join(str(item).split()))
        return out

    # ---- waves -------------------------------------------------------------------------
    @property
    def waves(self) -> list[dict[str, Any]]:
        return list(self.dataset.get("waves") or [])

    @property
    def has_waves(self) -> bool:
        """False for a single cross-section: the registry records no time order to check."""
        return bool(self.waves)

    @cached_property
    def wave_order(self) -> dict[str, int]:
        return {w["key"]: int(w["order"]) for w in self.waves}

    @cached_property
    def _prefix_wave(self) -> dict[str, str]:
        return {p.upper(): w["key"] for w in self.waves for p in w.get("prefixes", [])}

    def wave(self, key: str) -> dict[str, Any]:
        for w in self.waves:
            if w["key"] == key:
                return w
        raise KeyError(key)

    # ---- units and groups --------------------------------------------------------------
    @property
    def grouping(self) -> dict[str, Any]:
        """How students are clustered: {unit, columns, reconstructed}. `columns` name the cluster: one
        identifier column, or a fingerprint of cluster-level variables (`reconstructed: true`)."""
        g = self.dataset.get("grouping")
        if g:
            out = {"unit": g.get("unit", "school"), "columns": list(g.get("columns", [])),
                   "reconstructed": bool(g.get("reconstructed", False))}
            if isinstance(g, dict) and g.get("also"):  # further cluster levels (cluster_levels): only when declared
                out["also"] = [{"unit": str(lv.get("unit") or "cluster"), "columns": list(lv.get("columns") or []),
                                "reconstructed": bool(lv.get("reconstructed", False))}
                               for lv in (g["also"] if isinstance(g["also"], list) else []) if isinstance(lv, dict)]
                out["split_by"] = str(g.get("split_by") or "all")
            return out
        fingerprint = self.dataset.get("school_fingerprint") or []
        return {"unit": "school", "columns": list(fingerprint), "reconstructed": bool(fingerprint)}

    @property
    def cluster_levels(self) -> list[dict[str, Any]]:
        """Every declared cluster level, the grouping's own first, then `dataset.grouping.also` (pupils in primary
        AND secondary schools): [{unit, columns, reconstructed}]; empty when the registry declares no cluster."""
        g = self.grouping
        first = [{k: g[k] for k in ("unit", "columns", "reconstructed")}] if g["columns"] else []
        return first + [lv for lv in g.get("also", []) if lv["columns"]]

    @property
    def repeated(self) -> dict[str, Any] | None:
        """Repeated records of a unit (long format), `dataset.repeated`: {unit, units, id, time}; None when every
        row is its own unit. `id` is the column identifying the unit (a child), `time` the column ordering a unit's
        records (a year; None when not given). The split keeps a unit's records on one side."""
        r = self.dataset.get("repeated")
        if not r or not isinstance(r, dict):
            return None
        unit = str(r.get("unit") or "unit")
        return {"unit": unit, "units": str(r.get("units") or f"{unit}s"),
                "id": r.get("id"), "time": r.get("time")}

    @property
    def id_columns(self) -> list[str]:
        ids = self.dataset.get("id_column")
        return [ids] if isinstance(ids, str) else list(ids or [])

    @property
    def protected_default(self) -> list[str]:
        return list(self.dataset.get("protected_default") or [])

    @property
    def protected_intersections(self) -> list[tuple[str, str]]:
        return [tuple(pair) for pair in self.dataset.get("protected_intersections") or []]

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
        return [float(c) for c in (self.dataset.get("sentinels") or {}).get("numeric", [])]

    @property
    def sentinel_labels(self) -> list[str]:
        return [str(t) for t in (self.dataset.get("sentinels") or {}).get("labels", [])]


FOLDER_FILES = {"dataset": "dataset.yaml", "variables": "tier1.yaml", "tier3": "tier3.yaml",
                "pitfalls": "pitfalls.yaml", "questions": "canonical_questions.yaml"}


def _yaml(path: Path) -> Any:
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise EdmArsError(f"registry {path}: not valid YAML at {yaml_problem(exc)}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise EdmArsError(f"registry {path}: cannot be read ({' '.join(str(exc).split())})") from exc


def registry_sections(path: str | Path) -> dict[str, Any]:
    """The sections of a registry file or folder, as plain data."""
    path = Path(path)
    if path.is_file() and path.name != FOLDER_FILES["dataset"]:
        doc = _yaml(path) or {}
        if not isinstance(doc, dict) or not isinstance(doc.get("dataset"), dict):
            raise EdmArsError(f"registry {path}: expected a YAML mapping with a 'dataset' section")
        unknown = sorted(set(doc) - set(FOLDER_FILES))
        if unknown:
            raise EdmArsError(f"registry {path}: unknown section(s) {unknown} (known: {sorted(FOLDER_FILES)})")
        return {"root": path.parent, **{k: doc.get(k) for k in FOLDER_FILES}}
    root = path.parent if path.is_file() else path
    if not (root / FOLDER_FILES["dataset"]).exists():
        raise EdmArsError(f"registry not found: {path} is neither a registry file nor a folder with dataset.yaml")
    sections: dict[str, Any] = {"root": root}
    for key, name in FOLDER_FILES.items():
        doc = _yaml(root / name) if (root / name).exists() else None
        # the folder's files wrap their lists in one key (variables:, pitfalls:, questions:)
        sections[key] = doc.get(key) if isinstance(doc, dict) and key in doc else doc
    return sections


def load_registry(path: str | Path, tier2: dict[str, Any] | None = None) -> Registry:
    """Load a registry file or folder; `tier2` is the parsed output/registry/tier2.json when available."""
    sec = registry_sections(path)
    variables = sec["variables"] or []
    if not isinstance(variables, list) or not all(isinstance(v, dict) and v.get("name") for v in variables):
        raise EdmArsError(f"registry {path}: 'variables' must be a list of mappings, each with a 'name'")
    t2 = (tier2 or {}).get("variables", {}) if tier2 else {}
    reg = Registry(
        dataset=sec["dataset"] or {},
        tier1={str(v["name"]): v for v in variables},
        tier3=sec["tier3"] or {},
        pitfalls=sec["pitfalls"] or [],
        questions=sec["questions"] or [],
        tier2=t2,
        root=Path(sec["root"]),
    )
    if reg.dataset.get("findings") is not None:  # published findings (data/registry_findings.py): refused when wrong
        from edm_ars.data.registry_findings import bibliography_keys, finding_problems

        given = Path(path)
        file = given if given.is_file() else given / FOLDER_FILES["dataset"]
        problems = finding_problems(reg, bibliography_keys(reg))
        if problems:
            raise EdmArsError(f"registry {file}: {len(problems)} problem(s) with dataset.findings:\n"
                              + "\n".join(f"  - {p}" for p in problems))
    return reg


#: What the rows of a data set are (`dataset.provenance.kind`): stated in the paper's abstract, data section,
#: limitations and availability statement.
PROVENANCE_KINDS = ("public_use_file", "restricted_use_file", "generated", "package_export", "local_file")


#: The literal prefix `edm-ars init-registry` puts on every placeholder it drafts (prose, labels, questions,
#: rationales, value labels, the provenance statement). A registry that still holds it anywhere is refused by
#: validate_registry (so by the `dataset` rule and `edm-ars validate-registry`), naming each key to edit.
DRAFT_MARKER = "[DRAFT]"


def _marker_paths(node: Any, path: str) -> list[str]:
    if isinstance(node, str):
        return [path] if DRAFT_MARKER in node else []
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _marker_paths(v, f"{path}.{k}" if path else str(k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _marker_paths(v, f"{path}[{i}]")]
    return []


def draft_marker_keys(reg: Registry) -> list[str]:
    """The keys of a registry whose text still holds :data:`DRAFT_MARKER` (a placeholder init-registry drafted),
    in file order: `dataset.prose.short`, `variables[sex].values.0`, `questions[passed_prediction].predictors.x`."""
    keys = _marker_paths(reg.dataset, "dataset")
    for name, rec in reg.tier1.items():
        keys += [f"variables[{name}]" + p[len("v"):] for p in _marker_paths(rec, "v")]
    for q in reg.questions:
        keys += [f"questions[{q.get('id', '?')}]" + p[len("q"):] for p in _marker_paths(q, "q")]
    keys += _marker_paths(reg.pitfalls, "pitfalls") + _marker_paths(reg.tier3, "tier3")
    return keys


def code_key(value: Any) -> str:
    """A value code as text, float-coded integers normalised ('1.0', 1.0 and 1 all give '1'), so that value labels
    match whatever type the data were read as and '0.0/1.0' never reaches the paper."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return str(int(value)) if float(value).is_integer() else str(value)
    text = str(value).strip()
    if re.fullmatch(r"[+-]?\d+\.0*", text):
        return str(int(float(text)))
    return text


def value_labels(reg: Registry, name: str) -> dict[str, str]:
    """The readable labels of a variable's codes (`values: {code: label}` in the registry), keyed by code_key."""
    values = (reg.variable(name) or {}).get("values") or {}
    return {code_key(k): " ".join(str(v).split()) for k, v in values.items()} if isinstance(values, dict) else {}


# ---- timing words: the one rule the paper's "early", "prior" and "before the outcome" follow ----------------

EARLY, PRIOR = "early", "prior"


def timing_class(wave_order: list[str], predictor_wave: Any, outcome_wave: Any) -> str | None:
    """How a predictor's wave stands to the outcome's, in the words the paper may use: 'early' when it is in
    the first wave or at least two waves before the outcome; 'prior' when it is in any earlier wave; None for
    the same wave, a later one, an unknown wave or data without waves (no timing word may be used)."""
    if predictor_wave not in wave_order or outcome_wave not in wave_order:
        return None
    p, o = wave_order.index(predictor_wave), wave_order.index(outcome_wave)
    if p >= o:
        return None
    return EARLY if p == 0 or o - p >= 2 else PRIOR


def common_timing(classes: list[str | None]) -> str | None:
    """The timing word that holds for every one of several predictors: 'early' only if all are early, 'prior' if
    all are at least prior, else None (also for none at all)."""
    if not classes or any(c is None for c in classes):
        return None
    return EARLY if all(c == EARLY for c in classes) else PRIOR


def early_warning_waves(question: dict[str, Any] | None) -> list[str] | None:
    """The waves an early-warning question restricts its predictors to (`early_warning: {waves: [...]}`), or None."""
    ew = (question or {}).get("early_warning")
    if not ew:
        return None
    return [str(w) for w in (ew.get("waves") if isinstance(ew, dict) else ew) or []]


# ---- pure functions over a registry --------------------------------------------------------


def wave_of(reg: Registry, name: str) -> str | None:
    """The survey wave of a variable: curated wave first, else inferred from the name prefix."""
    rec = reg.variable(name)
    if rec and rec.get("wave"):
        return rec["wave"]
    return reg._prefix_wave.get(name[:2].upper())


def is_temporally_valid(reg: Registry, predictor: str, outcome: str) -> bool:
    """True when the predictor's wave is strictly earlier than the outcome's (same wave = leakage).

    A registry without waves (one cross-section) records no order to check: every predictor passes,
    except one the registry marks as measured after the outcome (`after_outcome: true`); the
    specification then carries `temporal_order_note` and the paper states it."""
    if not reg.has_waves:
        return not (reg.variable(predictor) or {}).get("after_outcome", False)
    pw, ow = wave_of(reg, predictor), wave_of(reg, outcome)
    if pw not in reg.wave_order or ow not in reg.wave_order:
        return False  # an unknown wave is never valid
    return reg.wave_order[pw] < reg.wave_order[ow]


def is_excluded(reg: Registry, name: str, category: str | None = None) -> bool:
    """Tier 3: weights, IDs, flags and design variables. A curated Tier 1 name always wins."""
    if name in reg.id_columns:
        return True
    if name in reg.tier1:
        return bool(reg.tier1[name].get("role") in ("identifier", "weight", "flag", "design"))
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


def temporal_order_note(reg: Registry) -> str | None:
    """What the temporal gate could not check, in words (None when the registry has waves)."""
    if reg.has_waves:
        return None
    if reg.dataset.get("time_order_note"):
        return reg.dataset["time_order_note"]
    rep = reg.repeated
    # the data set's name as the paper says it (dataset.prose.short, e.g. "College Distance data")
    data = str((reg.dataset.get("prose") or {}).get("short") or f"{reg.name} data")
    if rep:  # long format without waves: not a cross-section, but no record is declared to precede the outcome
        held = (f"The records of each {rep['unit']} in the {data} are ordered by {rep['time']}"
                if rep.get("time") else f"The {data} hold several records of each {rep['unit']}")
        return (f"{held}, but the registry declares no waves, so the temporal gate could not establish that every "
                "predictor was measured before the outcome.")
    return (f"The {data} have no wave structure: predictors and outcome come from one cross-section, "
            "so the temporal gate could not establish that every predictor was measured before the outcome.")


def rules_text(reg: Registry | None) -> str:
    """The data set's rules in words, for the agents' prompts (time order, excluded variables, missing
    codes, clusters, weights); the same rules are enforced in code at the stage boundaries."""
    if reg is None:
        return "- (no registry given)"
    lines = []
    if reg.has_waves:
        order = " < ".join(f"{w['key']} ({w.get('label', w['key'])})" for w in sorted(reg.waves, key=lambda w: w["order"]))
        lines.append(f"- Time order of the waves: {order}. Every predictor must come from a wave STRICTLY EARLIER "
                     "than the outcome's wave; a predictor from the same wave as the outcome is leakage.")
    elif reg.repeated:
        rep = reg.repeated
        order = f", ordered by {rep['time']}" if rep.get("time") else ""
        lines.append(f"- The data hold several records of each {rep['unit']} (identified by {rep['id']}{order}) but "
                     "declare no waves: temporal precedence cannot be checked; never use a variable measured after "
                     "the outcome or a component of the outcome.")
    else:
        lines.append("- The data have no wave structure (one cross-section): temporal precedence cannot be checked; "
                     "never use a variable measured after the outcome or a component of the outcome.")
    t3 = reg.tier3
    excluded = reg.id_columns + list(t3.get("exact", []))[:12]
    patterns = list(t3.get("prefix_patterns", [])) + list(t3.get("suffix_patterns", []))
    lines.append("- Never predictors: identifiers, weights and flags"
                 + (f" ({', '.join(dict.fromkeys(excluded))}" if excluded else "")
                 + (f"; names matching {', '.join(patterns)}" if patterns else "")
                 + (")" if excluded else "") + ".")
    codes, labels = reg.sentinel_codes, reg.sentinel_labels
    if codes or labels:
        lines.append("- Missing data are coded as reserve codes (" + ", ".join(f"{c:g}" for c in codes)
                     + (") and labels such as " + ", ".join(f'"{t}"' for t in labels[:4]) if labels else ")")
                     + "; the data engineer recodes them.")
    g = reg.grouping
    if g["columns"] and g["reconstructed"]:
        lines.append(f"- {g['unit'].capitalize()} identifiers are not in the data; {g['unit']}s are reconstructed from "
                     f"{g['unit']}-level variables and the split keeps every reconstructed {g['unit']} on one side.")
    elif g["columns"]:
        lines.append(f"- {reg.prose['units'].capitalize()} are nested in {g['unit']}s ({', '.join(g['columns'])}); the "
                     f"split keeps every {g['unit']} on one side.")
    if "survey" in str(reg.prose["design"]).lower():
        lines.append("- Analyses are unweighted: they describe the analytic sample, not the population the survey "
                     "represents.")
    return "\n".join(lines)


def find_question(reg: Registry, question_id: str) -> dict[str, Any]:
    for q in reg.questions:
        if q["id"] == question_id:
            return q
    raise EdmArsError(f"unknown canonical question '{question_id}' (known: {[q['id'] for q in reg.questions]})")
