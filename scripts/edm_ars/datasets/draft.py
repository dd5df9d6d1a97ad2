"""`edm-ars init-registry DATA.csv`: a draft registry for a researcher's own CSV, to edit before a run.

Every decision is a stated suspicion from the column's name and values (identifier, weight or flag,
missing code, cluster, protected attribute, outcome with its task); the draft loads, passes
`validate_registry` and matches its own file, and its header lists each suspicion for the user to check.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..errors import DataError

MISSING_LABELS = ["NA", "N/A", "n/a", "Missing", "missing", "Refused", "Don't know", "Unknown", ".", ""]
ID_NAME = re.compile(r"(^|_)(id|ids|rownames|uuid)$|[a-z]ID$|^(student|learner|user|person)(_?(no|num|number))?$",
                     re.IGNORECASE)
WEIGHT_NAME = re.compile(r"(^|_)(weight|wt|wgt)s?($|_)|^W\d", re.IGNORECASE)
FLAG_NAME = re.compile(r"(flag|_flg|_imp)$", re.IGNORECASE)
CLUSTER_NAME = re.compile(r"^(school|class|classroom|section|course|cluster|district|teacher|site|campus)"
                          r"(_?id)?$", re.IGNORECASE)
PROTECTED_NAME = re.compile(r"^(sex|gender|race|ethnicity|ethnic|minority|lunch|frl|free_lunch|ses|disability|"
                            r"iep|ell|esl|language|home_language)$", re.IGNORECASE)
OUTCOME_NAME = re.compile(r"score|grade|gpa|exam|achieve|outcome|pass|dropout|drop_out|complete|completion|final|"
                          r"post|graduat|retain|attain", re.IGNORECASE)
PRIOR_NAME = re.compile(r"prior|^pre_?|_pre$|pretest|baseline|intake|entry|previous|last_year", re.IGNORECASE)
MAX_PREDICTORS = 30


def _numeric_codes(values: pd.Series) -> list[float]:
    """Reserve codes in a numeric column: negative integers in an otherwise non-negative column, or 9s-codes
    (99, 999, 9999) far above the rest of the values."""
    present = values.dropna()
    if present.empty or not pd.api.types.is_numeric_dtype(present):
        return []
    codes = []
    negatives = present[present < 0]
    if len(negatives) and (present >= 0).mean() > 0.5 and (negatives == negatives.round()).all():
        codes += sorted(float(v) for v in negatives.unique() if -99 <= v <= -1)
    rest = present[present >= 0]
    for nines in (99.0, 999.0, 9999.0):
        others = rest[rest != nines]
        if (rest == nines).any() and len(others) and others.max() < nines / 3:
            codes.append(nines)
    return codes


def _clean(values: pd.Series, codes: set[float], labels: set[str]) -> pd.Series:
    if pd.api.types.is_numeric_dtype(values):
        return values.mask(values.isin(codes))
    text = values.astype("string").str.strip()
    cleaned = values.mask(text.isin(labels).fillna(False).astype(bool))
    numeric = pd.to_numeric(cleaned, errors="coerce")
    return numeric if numeric.notna().sum() == cleaned.notna().sum() and cleaned.notna().any() else cleaned


def column_type(values: pd.Series) -> str:
    """continuous, binary or categorical, from the values (missing codes already removed)."""
    present = values.dropna()
    n = present.nunique()
    if n <= 2:
        return "binary"
    if pd.api.types.is_numeric_dtype(present) and n > 12:
        return "continuous"
    return "categorical"


def _is_identifier(name: str, values: pd.Series) -> bool:
    present = values.dropna()
    unique = len(present) > 1 and present.nunique() == len(values)
    integer_like = pd.api.types.is_integer_dtype(present) or (
        pd.api.types.is_numeric_dtype(present) and bool((present == present.round()).all()))
    textual = not pd.api.types.is_numeric_dtype(present)
    return bool(ID_NAME.search(name)) and present.nunique() > len(values) / 2 or (unique and (integer_like or textual))


def _binary_outcome_ok(values: pd.Series) -> bool:
    """Two values the DataEngineer maps to 0/1 without further instructions."""
    observed = {str(v).strip() for v in values.dropna().unique()}
    return observed <= {"0", "1", "0.0", "1.0"} or observed == {"No", "Yes"}


def draft_registry(frame: pd.DataFrame, name: str) -> tuple[dict[str, Any], list[str]]:
    """The draft registry of a data frame, and the suspicions behind it (one line each)."""
    source = name
    name = re.sub(r"[^a-z0-9_]+", "_", Path(name).stem.lower()).strip("_") or "dataset"
    if len(frame) == 0:
        raise DataError(f"{source}: the file has no rows; nothing to draft a registry from")
    if frame.shape[1] < 2:
        raise DataError(f"{source}: the file has {frame.shape[1]} column(s); a study needs an outcome and predictors")
    notes: list[str] = []
    codes: set[float] = set()
    labels: set[str] = set()
    for col in frame.columns:
        found = _numeric_codes(frame[col])
        if found:
            codes.update(found)
            notes.append(f"missing codes in {col}: {', '.join(f'{c:g}' for c in found)}")
        if not pd.api.types.is_numeric_dtype(frame[col]):
            text = frame[col].astype("string").str.strip()
            hits = sorted({t for t in MISSING_LABELS if (text == t).any()})
            if hits:
                labels.update(hits)
                notes.append(f"missing labels in {col}: {hits}")
    clean = {col: _clean(frame[col], codes, labels) for col in frame.columns}
    ids, excluded, cluster, protected, outcomes, variables = [], [], None, [], [], []
    for col in frame.columns:
        values = clean[col]
        pct = round(float(values.isna().mean() * 100), 2)
        if values.notna().sum() == 0:
            notes.append(f"empty column (every value missing): {col}; left out")
            excluded.append(col)
            continue
        if _is_identifier(col, values):
            ids.append(col)
            notes.append(f"suspected identifier: {col} (unique per row or named like an ID); never a predictor")
            continue
        if WEIGHT_NAME.search(col) or FLAG_NAME.search(col):
            excluded.append(col)
            notes.append(f"suspected {'weight' if WEIGHT_NAME.search(col) else 'flag'}: {col}; never a predictor")
            continue
        if cluster is None and CLUSTER_NAME.match(col) and values.nunique() <= len(frame) / 2:
            cluster = col
            excluded.append(col)
            notes.append(f"suspected cluster: {col} ({values.nunique()} groups); the split keeps each on one side")
            continue
        typ = column_type(values)
        rec: dict[str, Any] = {"name": col, "label": col.replace("_", " ").capitalize(), "role": "predictor",
                               "type": typ, "pct_missing": pct}
        if PROTECTED_NAME.match(col):
            rec.update(role="protected", protected=True)
            protected.append(col)
            notes.append(f"suspected protected attribute: {col}; audited for subgroup gaps, not a predictor")
        elif OUTCOME_NAME.search(col) and not PRIOR_NAME.search(col) and (typ == "continuous" or (typ == "binary" and _binary_outcome_ok(values))):
            rec["role"] = "outcome"
            outcomes.append(col)
            notes.append(f"candidate outcome: {col} ({'regression' if typ == 'continuous' else 'binary classification'})")
        variables.append(rec)
    if not outcomes:  # no name says outcome: any 0/1 or continuous column can still serve
        for rec in variables:
            if rec["role"] == "predictor" and (rec["type"] == "continuous" or (
                    rec["type"] == "binary" and _binary_outcome_ok(clean[rec["name"]]))):
                rec["role"] = "outcome"
                outcomes.append(rec["name"])
                notes.append(f"candidate outcome (by its values only): {rec['name']}")
                break
    if not outcomes:
        raise DataError(f"{source}: no column can serve as an outcome (a 0/1, Yes/No or continuous column)")
    predictors = [r["name"] for r in variables if r["role"] == "predictor"]
    questions = []
    for outcome in outcomes:
        chosen = predictors[:MAX_PREDICTORS]  # another outcome is never a predictor (it may be a proxy)
        if len(chosen) < 3:
            continue
        questions.append({
            "id": f"{re.sub(r'[^a-z0-9_]+', '_', outcome.lower())}_prediction", "default": not questions,
            "question": f"How accurately can {outcome} be predicted from the other variables of {Path(source).name}"
                        + (", and is the prediction equally accurate across " + " and ".join(protected) + " groups?"
                           if protected else "?"),
            "outcome": outcome,
            "keywords": [w for w in re.split(r"[^a-z0-9]+", outcome.lower()) if w],
            "population": f"The rows of {Path(source).name} with a recorded {outcome}.",
            "subgroups": protected,
            "predictors": {p: "Drafted by init-registry: check that it is measured before the outcome." for p in chosen},
        })
    if not questions:
        raise DataError(f"{source}: fewer than 3 usable predictors for any outcome ({predictors})")
    dataset = {
        "name": name, "title": f"{Path(source).name} (drafted by edm-ars init-registry)",
        "id_column": ids[0] if len(ids) == 1 else ids, "require_all_variables": True,
        "prose": {"short": f"{name.replace('_', ' ')} data", "long": f"{Path(source).name} data",
                  "about": "", "source": f"the data file {Path(source).name}", "design": "", "unit": "student",
                  "units": "students"},
        "grouping": {"unit": (cluster or "school").lower().removesuffix("_id"), "columns": [cluster] if cluster else [],
                     "reconstructed": False},
        "waves": [],
        "sentinels": {"numeric": sorted(codes), "labels": sorted(labels)},
        "protected_default": protected,
        "protected_intersections": [protected[:2]] if len(protected) >= 2 else [],
        "limitations": [],
    }
    draft = {"dataset": dataset, "variables": variables, "tier3": {"exact": ids + excluded}, "pitfalls": [],
             "questions": questions}
    return draft, notes


HEADER = """\
# DRAFT registry written by `edm-ars init-registry` from {source}: check every line before you trust a paper.
# Format: registry/README.md in the EDM-ARS repository. At least:
#   - dataset.prose: the names, population and source the paper states;
#   - waves: the data's time order ([] means one cross-section: the temporal gate says it could not check
#     precedence); with waves, give every variable a `wave` so predictors strictly precede the outcome;
#   - variables: labels, types and roles; the questions' predictors and their rationales.
# What the draft suspects:
{notes}
"""


def render_yaml(draft: dict[str, Any], notes: list[str], source: str) -> str:
    body = yaml.safe_dump(draft, sort_keys=False, allow_unicode=True, width=110)
    lines = "\n".join(f"#   - {n}" for n in notes) or "#   (nothing)"
    return HEADER.format(source=source, notes=lines) + body
