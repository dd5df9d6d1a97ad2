"""Validation of a data registry (edm_ars.data.registry): `validate_registry` lists every inconsistency inside one
(waves, variables, protected attributes, grouping, canonical questions, provenance, drafted text), each naming the
wave, variable, question or key.
"""

from __future__ import annotations

from edm_ars.data.registry import (
    DRAFT_MARKER,
    PROVENANCE_KINDS,
    Registry,
    draft_marker_keys,
    early_warning_waves,
    is_excluded,
    is_temporally_valid,
    wave_of,
)
from edm_ars.data.registry_causal import TASKS, causal_question_problems, question_task
from edm_ars.data.registry_rules import predictor_minimum_problems, prose_problems, registry_citation

TASK_TYPES = {"continuous": "regression", "binary": "binary_classification"}


def provenance_problems(reg: Registry) -> list[str]:
    """What is wrong with `dataset.provenance` (absent is allowed: the source kind then decides), naming the key."""
    prov = reg.dataset.get("provenance")
    if prov is None:
        return []
    if not isinstance(prov, dict):
        return ["dataset.provenance must be a mapping with kind (and optional citation, statement)"]
    errors = []
    if prov.get("kind") not in PROVENANCE_KINDS:
        errors.append(f"dataset.provenance.kind {prov.get('kind')!r} is not one of {list(PROVENANCE_KINDS)}")
    for key in ("citation", "statement"):
        if prov.get(key) is not None and not isinstance(prov.get(key), str):
            errors.append(f"dataset.provenance.{key} must be text (got {type(prov.get(key)).__name__})")
    unknown = sorted(set(prov) - {"kind", "citation", "statement"})
    if unknown:
        errors.append(f"dataset.provenance: unknown key(s) {unknown} (known: kind, citation, statement)")
    return errors


def cluster_level_problems(reg: Registry) -> list[str]:
    """What is wrong with the further cluster levels, `dataset.grouping.also` (a list of {unit, columns,
    reconstructed}), and `dataset.grouping.split_by` (all, or the unit of the one level the split keeps together),
    naming the key."""
    g = reg.dataset.get("grouping")
    if not isinstance(g, dict) or ("also" not in g and "split_by" not in g):
        return []
    example = "also: [{unit: primary school, columns: [primary]}]"
    also = g.get("also")
    if not isinstance(also, list) or not also:
        return [f"dataset.grouping.also must be a non-empty list of further cluster levels, e.g. {example} "
                "(split_by needs it)"]
    errors = []
    for k, lv in enumerate(also):
        if not isinstance(lv, dict):
            errors.append(f"dataset.grouping.also[{k}] must be a mapping {{unit, columns}}, e.g. {example}")
            continue
        unknown = sorted(set(lv) - {"unit", "columns", "reconstructed"})
        if unknown:
            errors.append(f"dataset.grouping.also[{k}]: unknown key(s) {unknown} (known: unit, columns, "
                          "reconstructed)")
        if not lv.get("unit") or not isinstance(lv.get("unit"), str):
            errors.append(f"dataset.grouping.also[{k}].unit must name the cluster level (e.g. primary school)")
        cols = lv.get("columns")
        if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
            errors.append(f"dataset.grouping.also[{k}].columns must list the column(s) identifying the cluster")
            continue
        for col in cols:
            if col in reg.tier1 and reg.tier1[col].get("role") == "outcome":
                errors.append(f"dataset.grouping.also[{k}] column {col} is an outcome")
            if col in reg.grouping["columns"]:
                errors.append(f"dataset.grouping.also[{k}] column {col} is already a column of the grouping")
    units = [str(reg.grouping["unit"])] + [str(lv.get("unit")) for lv in also if isinstance(lv, dict)]
    if len(set(units)) != len(units):
        errors.append(f"dataset.grouping: the cluster levels' units {units} must differ (split_by names one)")
    if not reg.grouping["columns"]:
        errors.append("dataset.grouping.columns is empty: the first cluster level needs its column(s) before "
                      "grouping.also adds more")
    split_by = g.get("split_by", "all")
    if split_by != "all" and split_by not in units:
        errors.append(f"dataset.grouping.split_by is {split_by!r}: use all (keep together the rows that share "
                      f"any level) or the unit of one level, one of {units}")
    return errors


def repeated_problems(reg: Registry) -> list[str]:
    """What is wrong with `dataset.repeated` (repeated records of a unit, long format), naming the key: the id column
    must be named and be no outcome or predictor; a time column, if given, is no outcome or predictor either."""
    r = reg.dataset.get("repeated")
    if r is None:
        return []
    if not isinstance(r, dict):
        return ["dataset.repeated must be a mapping {unit: child, id: childid, time: year} (id: the column "
                "identifying the unit; time: optional, the column ordering its records)"]
    errors = []
    unknown = sorted(set(r) - {"unit", "units", "id", "time"})
    if unknown:
        errors.append(f"dataset.repeated: unknown key(s) {unknown} (known: unit, units, id, time)")
    if not isinstance(r.get("id"), str) or not r["id"].strip():
        errors.append("dataset.repeated.id must name the column identifying the unit (e.g. id: childid)")
    for key in ("unit", "units", "time"):
        if r.get(key) is not None and not isinstance(r[key], str):
            errors.append(f"dataset.repeated.{key} must be text (got {type(r[key]).__name__})")
    for key in ("id", "time"):
        col = r.get(key)
        role = (reg.tier1.get(col) or {}).get("role") if isinstance(col, str) else None
        if role in ("outcome", "predictor"):
            errors.append(f"dataset.repeated.{key} column {col} is a{'n' if role == 'outcome' else ''} {role}; the "
                          f"{'unit identifier' if key == 'id' else 'time column'} cannot be one (give it role: "
                          f"{'identifier' if key == 'id' else 'design'})")
        if key == "time" and isinstance(col, str) and any(col in (q.get("predictors") or {}) for q in reg.questions):
            errors.append(f"dataset.repeated.time column {col} is a predictor of a question; remove it there")
    return errors


def validate_registry(reg: Registry) -> list[str]:
    """Every inconsistency inside a registry, each naming the wave, variable or question (empty: valid)."""
    errors = []
    for key in ("name", "title"):
        if not reg.dataset.get(key):
            errors.append(f"dataset.{key} is missing")
    keys = [w.get("key") for w in reg.waves]
    if len(set(keys)) != len(keys) or any(w.get("order") is None for w in reg.waves):
        errors.append(f"waves: every wave needs a unique key and an order (got {keys})")
    ids = set(reg.id_columns)
    for name, rec in reg.tier1.items():
        if reg.has_waves and rec.get("wave") and rec["wave"] not in reg.wave_order:
            errors.append(f"variable {name}: wave '{rec['wave']}' is not one of the waves {keys}")
        if reg.has_waves and not wave_of(reg, name) and rec.get("role") in ("outcome", "predictor"):
            errors.append(f"variable {name}: no wave (the registry has waves, so every variable needs one)")
        if name in ids and rec.get("role") in ("outcome", "predictor"):
            errors.append(f"variable {name} is the identifier column and cannot be a {rec['role']}")
        if rec.get("derive") and not rec["derive"].get("from"):
            errors.append(f"variable {name}: derive needs 'from' (the source column)")
        if rec.get("derived_from") is not None and str(rec["derived_from"]) not in reg.tier1:
            errors.append(f"variable {name}: derived_from {rec['derived_from']} is not a variable of the registry")
        if rec.get("values") is not None and not (isinstance(rec["values"], dict) and rec["values"]):
            errors.append(f"variable {name}: values must be a mapping of codes to labels ({{code: label}})")
    for attr in reg.protected_default + [a for pair in reg.protected_intersections for a in pair]:
        if attr not in reg.tier1:
            errors.append(f"protected attribute {attr} is not a variable of the registry")
    for name in reg.dataset.get("prior_achievement") or []:  # the one-predictor baseline's candidates
        if (reg.tier1.get(name) or {}).get("role") != "predictor":
            errors.append(f"prior_achievement: {name} is not a predictor variable of the registry")
    for col in reg.grouping["columns"]:
        if col in reg.tier1 and reg.tier1[col].get("role") == "outcome":
            errors.append(f"grouping column {col} is an outcome")
    for q in reg.questions:
        qid = q.get("id", "?")
        if question_task(q) not in TASKS:
            errors.append(f"question {qid}: task {question_task(q)!r} is not one of {list(TASKS)}")
            continue
        if question_task(q) == "causal":  # treatment, design and time order (data/registry_causal.py)
            errors += causal_question_problems(reg, q)
            continue
        out = q.get("outcome")
        orec = reg.tier1.get(out) if out else None
        if orec is None:
            errors.append(f"question {qid}: outcome {out} is not a variable of the registry")
        elif orec.get("type") not in TASK_TYPES:
            errors.append(f"question {qid}: outcome {out} has type {orec.get('type')} (binary or continuous)")
        preds = q.get("predictors") or {}
        for pred, why in (preds.items() if isinstance(preds, dict) else ((p, None) for p in preds)):
            text = " ".join(why.split()) if isinstance(why, str) else why
            if text is not None and not (isinstance(text, str) and (text == "" or len(text) >= 5)):
                errors.append(f"questions[{qid}].predictors.{pred}: rationale {why!r} is not a sentence; write why "
                              "the predictor may predict the outcome (5 characters or more), or '' to state none")
            if pred in ids:
                errors.append(f"question {qid}: predictor {pred} is the identifier column")
            elif pred not in reg.tier1:
                errors.append(f"question {qid}: predictor {pred} is not a variable of the registry")
            elif is_excluded(reg, pred):
                errors.append(f"question {qid}: predictor {pred} is excluded (Tier 3: weights, IDs, flags)")
            elif out and orec is not None and not is_temporally_valid(reg, pred, out):
                errors.append(f"question {qid}: predictor {pred} ({wave_of(reg, pred)}) does not strictly "
                              f"precede outcome {out} ({wave_of(reg, out)})")
        if q.get("at_risk") is not None and q["at_risk"] not in (0, 1):
            errors.append(f"question {qid}: at_risk must be 0 or 1 (the outcome class a school acts on), got "
                          f"{q['at_risk']!r}")
        for attr in q.get("subgroups") or []:
            if attr not in reg.tier1:
                errors.append(f"question {qid}: subgroup attribute {attr} is not a variable of the registry")
        allowed = early_warning_waves(q)
        if allowed is not None:
            unknown = [w for w in allowed if w not in reg.wave_order]
            if not allowed or unknown:
                errors.append(f"question {qid}: early_warning.waves {allowed} must name waves of the registry "
                              f"({keys})")
            for pred in (q.get("predictors") or {}):
                if pred in reg.tier1 and wave_of(reg, pred) not in allowed:
                    errors.append(f"question {qid}: predictor {pred} ({wave_of(reg, pred)}) is not from the "
                                  f"early-warning waves {allowed}")
    if not reg.questions:
        errors.append("questions: the registry has no research question (the offline formulator needs one)")
    errors += provenance_problems(reg)
    errors += repeated_problems(reg) + cluster_level_problems(reg)
    errors += predictor_minimum_problems(reg) + prose_problems(reg)  # data/registry_rules.py: what a run applies
    errors += registry_citation(reg)[2]
    for key in draft_marker_keys(reg):
        errors.append(f"{key}: still the {DRAFT_MARKER} text init-registry drafted; replace it with what is true "
                      "of your data")
    return errors
