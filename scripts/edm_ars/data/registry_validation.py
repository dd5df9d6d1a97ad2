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
        out = q.get("outcome")
        orec = reg.tier1.get(out) if out else None
        if orec is None:
            errors.append(f"question {qid}: outcome {out} is not a variable of the registry")
        elif orec.get("type") not in TASK_TYPES:
            errors.append(f"question {qid}: outcome {out} has type {orec.get('type')} (binary or continuous)")
        for pred in (q.get("predictors") or {}):
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
    for key in draft_marker_keys(reg):
        errors.append(f"{key}: still the {DRAFT_MARKER} text init-registry drafted; replace it with what is true "
                      "of your data")
    return errors
