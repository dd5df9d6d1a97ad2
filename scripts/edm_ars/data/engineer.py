"""DataEngineer: the certified, leakage-safe data preparation.

Order of operations (each step is a pure function, tested on small frames):
1. select the outcome, predictors, subgroup and school-fingerprint columns;
2. recode every numeric reserve code and text missing label to NaN, before anything else;
3. build the outcome (explicit label mapping, derived outcomes) and drop rows whose outcome is
   missing (the outcome is never imputed);
4. reconstruct schools from the fingerprint and split 80/20 before any encoding (stratified for
   classification, grouped by school so no school is on both sides);
5. impute per variable with imputers fitted on training rows only;
6. one-hot encode with encoders fitted on training rows only (with a cardinality guard);
7. run the data checks and write the report.

This module holds the outcome (3) and the driver, `prepare`; the other steps live in their own modules:
1-2 in edm_ars.data.raw, 4 in edm_ars.data.split, 5-6 in edm_ars.data.impute, 7 in edm_ars.data.checks, and
the thresholds they follow (`Protocol`) in edm_ars.data.protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.experimental import enable_iterative_imputer  # noqa: F401  (enables IterativeImputer)

from edm_ars.core.conventions import LEAKAGE_CORR
from edm_ars.core.errors import DataError
from edm_ars.data.checks import data_checks
from edm_ars.data.impute import (
    coerce_types,
    duplicated_columns,
    fit_encoder,
    fit_imputer,
    imputation_protocol,
    variable_kinds,
)
from edm_ars.data.layout import Layout
from edm_ars.data.protocol import Protocol
from edm_ars.data.raw import recode_sentinels
from edm_ars.data.registry import Registry, value_labels
from edm_ars.data.sample import codebook_order, describe_sample, sample_flow
from edm_ars.data.split import reconstruct_schools, split_train_test

log = logging.getLogger(__name__)


# ---- 1-2. selection and sentinel recoding: edm_ars.data.raw ---------------------------------


# ---- 3. outcome ------------------------------------------------------------------------------


def binary_mapping(reg: Registry, layout: Layout | None, name: str, values: list[str],
                   positive_label: str | None = None) -> dict[str, int]:
    """Explicit label -> {0, 1} map for a binary outcome (never `to_numeric(errors='coerce')`)."""
    rec = reg.variable(name) or {}
    if rec.get("derive"):
        return {str(k): int(v) for k, v in rec["derive"]["map"].items()}
    observed = sorted({str(v).strip() for v in values})
    if positive_label:
        if positive_label not in observed:
            raise DataError(f"outcome {name}: positive label '{positive_label}' not among its values {observed}")
        return {v: int(v == positive_label) for v in observed}
    codes = layout.substantive_codes(name) if layout else {}
    if set(codes) == {0, 1}:
        mapping = {codes[0]: 0, codes[1]: 1}
        unknown = [v for v in observed if v not in mapping and v not in {"0", "1"}]
        if unknown:
            raise DataError(f"outcome {name}: values {unknown} are not in its codebook labels {sorted(mapping)}")
        return {**mapping, "0": 0, "1": 1}
    if set(observed) <= {"0", "1", "0.0", "1.0"}:
        return {"0": 0, "1": 1, "0.0": 0, "1.0": 1}
    if set(observed) == {"No", "Yes"}:
        return {"No": 0, "Yes": 1}
    raise DataError(
        f"outcome {name}: cannot map values {observed[:6]} to 0/1; give research_spec outcome.positive_label"
    )


def build_outcome(frame: pd.DataFrame, reg: Registry, layout: Layout | None, name: str, task: str,
                  positive_label: str | None = None) -> pd.Series:
    """The outcome as numbers (NaN where missing), derived from its source when the registry says so."""
    rec = reg.variable(name) or {}
    source = rec.get("derive", {}).get("from", name) if rec.get("derive") else name
    if source not in frame.columns:
        raise DataError(f"outcome {name}: column '{source}' is not in the data")
    s = frame[source]
    derive = rec.get("derive") or {}
    if "threshold" in derive:  # a binary outcome from a numeric source: 1 above the stated threshold
        num = pd.to_numeric(s, errors="coerce")
        bad = s[num.isna() & s.notna()]
        if len(bad):
            raise DataError(f"outcome {name}: source column {source} has non-numeric values such as "
                            f"{bad.astype(str).unique()[:3].tolist()}")
        return (num > float(derive["threshold"])).astype(float).where(num.notna()).rename(name)
    if task == "regression":
        num = pd.to_numeric(s, errors="coerce")
        bad = s[num.isna() & s.notna()]
        if len(bad):
            raise DataError(f"outcome {name}: non-numeric values such as {bad.astype(str).unique()[:3].tolist()}")
        return num.astype(float).rename(name)
    present = s.dropna().astype(str).str.strip()
    mapping = binary_mapping(reg, layout, name, present.unique().tolist(), positive_label)
    mapped = s.astype("string").str.strip().map(mapping)
    unmapped = s.notna() & mapped.isna()
    if rec.get("derive"):
        mapped = mapped.mask(unmapped)  # labels outside the derivation map count as missing
    elif unmapped.any():
        raise DataError(f"outcome {name}: unmapped values {s[unmapped].astype(str).unique()[:5].tolist()}")
    return pd.to_numeric(mapped, errors="raise").astype(float).rename(name)


def is_structural(reg: Registry, outcome: str) -> bool:
    """Structural (MNAR) outcome missingness: a later-wave outcome recorded > 30% missing."""
    rec = reg.variable(outcome) or {}
    wave = rec.get("wave")
    pct = rec.get("pct_missing") or 0
    return bool(wave and reg.wave_order.get(wave, 0) > 0 and pct > 30)


# ---- 4. schools and the split: edm_ars.data.split ---------------------------------------------


# ---- 5-6. imputation and encoding: edm_ars.data.impute --------------------------------------


# ---- 7. checks: edm_ars.data.checks ---------------------------------------------------------


# ---- the whole protocol -----------------------------------------------------------------------


@dataclass
class Prepared:
    train_X: pd.DataFrame
    train_y: pd.Series
    test_X: pd.DataFrame
    test_y: pd.Series
    test_protected: pd.DataFrame
    train_groups: pd.Series
    report: dict[str, Any]
    # cluster ids of the test rows (a cluster bootstrap resamples them); each row its own id when the split is
    # not grouped, so the cluster bootstrap is then the ordinary one
    test_groups: pd.Series
    # sample.json: Table 1 of the analytic sample and the sample flow (edm_ars.data.sample)
    sample: dict[str, Any] | None = None


def outcome_source(reg: Registry, outcome: str) -> str:
    """The data column an outcome is read from (itself, or the source of a derived outcome)."""
    rec = reg.variable(outcome) or {}
    return rec["derive"]["from"] if rec.get("derive") else outcome


def needed_columns(spec: dict[str, Any], reg: Registry) -> list[str]:
    """The columns the protocol reads for a specification: predictors, the outcome's source column,
    subgroup attributes and the grouping columns."""
    return list(dict.fromkeys([p["name"] for p in spec["predictors"]]
                              + [outcome_source(reg, spec["outcome"]["name"])]
                              + list(spec.get("subgroups", [])) + reg.grouping["columns"]))


def protocol(cfg: dict[str, Any], seed: int, imputation: str | None = None) -> Protocol:
    """The protocol of the config's `engineer` section with the run's seed; `imputation` is the strategy the
    reviews' revisions chose (edm_ars.review.actions.imputation), the section's own when None."""
    return Protocol(test_fraction=cfg["test_fraction"], seed=seed, simple_below=cfg["simple_below"],
                    warn_above=cfg["warn_above"], min_analytic_n=cfg["min_analytic_n"],
                    min_retention=cfg["min_retention"], max_categories=cfg["max_categories"],
                    structural_above=cfg.get("structural_above", Protocol.structural_above),
                    imputation=imputation or cfg["imputation"],
                    leakage_corr=float(cfg.get("leakage_corr", LEAKAGE_CORR)))


def read_needed(path: str | Path, spec: dict[str, Any], reg: Registry, available: Iterable[str]) -> pd.DataFrame:
    """The columns of the raw data file the protocol reads for a specification (needed_columns), of those the
    data have (`available`: the data set's manifest columns); a missing subgroup or grouping column is left to
    prepare, which reports it. DataError naming the predictor and outcome columns the data lack."""
    from edm_ars.data.raw import read_raw

    available = set(available)
    absent = [c for c in [p["name"] for p in spec["predictors"]] + [outcome_source(reg, spec["outcome"]["name"])]
              if c not in available]
    if absent:
        raise DataError(f"{path}: columns named by the specification are not in the data: {absent}")
    return read_raw(path, usecols=[c for c in needed_columns(spec, reg) if c in available])


def prepare(raw: pd.DataFrame, spec: dict[str, Any], reg: Registry, layout: Layout | None,
            proto: Protocol, describe: bool = True) -> Prepared:
    """Run the DataEngineer protocol on a raw frame for a validated research specification. `describe`: also
    describe the analytic sample (Prepared.sample, Table 1); a re-preparation for a sensitivity analysis (another
    split, another imputation) has no use for it and leaves it out."""
    outcome = spec["outcome"]["name"]
    task = spec["task"]
    predictors = [p["name"] for p in spec["predictors"]]
    subgroups = list(spec.get("subgroups", []))
    fingerprint = reg.grouping["columns"]
    rec = reg.variable(outcome) or {}
    source = outcome_source(reg, outcome)
    missing = [c for c in predictors + [source] if c not in raw.columns]
    if missing:
        raise DataError(f"columns not in the data: {missing}")
    original_n = len(raw)
    warnings_: list[str] = []

    # 1-2. select, then recode sentinels before anything else (including the outcome filter)
    needed = list(dict.fromkeys(predictors + [source] + subgroups + fingerprint))
    needed = [c for c in needed if c in raw.columns]
    absent_sub = [c for c in subgroups if c not in raw.columns]
    if absent_sub:
        warnings_.append(f"subgroup attributes not in the data: {absent_sub}")
    data, recoded = recode_sentinels(raw[needed], reg)

    # 3. outcome; rows with a missing outcome leave (never imputed)
    y_all = build_outcome(data, reg, layout, outcome, task, spec["outcome"].get("positive_label"))
    keep = y_all.notna().to_numpy()
    data, y = data.loc[keep].reset_index(drop=True), y_all.loc[keep].reset_index(drop=True)
    analytic_n = len(y)
    retention = analytic_n / original_n if original_n else 0.0
    structural = is_structural(reg, outcome)
    if analytic_n < proto.min_analytic_n:
        raise DataError(f"outcome {outcome}: only {analytic_n} students have a valid value; at least "
                        f"{proto.min_analytic_n} analytic cases are required")
    if retention < proto.min_retention and not structural:
        raise DataError(f"outcome {outcome}: {analytic_n} of {original_n} students ({retention:.1%}) have a valid "
                        f"value, under the {proto.min_retention:.0%} retention floor, and the registry does not "
                        "record its missingness as structural")
    if structural:
        pct = rec.get("pct_missing")
        warnings_.append(
            f"Outcome {outcome} has structural missingness ({pct}% in full dataset); analytic sample represents "
            f"students with a valid {rec.get('label', outcome)} record. This is a population restriction, not "
            "random dropout. Findings generalize to this subpopulation only.")

    # predictors that the data suppress (all but entirely missing) carry no information
    kinds = variable_kinds(predictors, reg, data)
    dropped = [c for c in predictors if data[c].isna().mean() * 100 >= proto.drop_above]
    for c in dropped:
        warnings_.append(f"predictor {c} is {data[c].isna().mean():.0%} missing (suppressed) and was dropped")
        kinds.pop(c)
    if not kinds:
        raise DataError("no usable predictor is left after dropping suppressed variables")
    X = coerce_types(data, kinds)
    complete_case_n = int(X.notna().all(axis=1).sum())

    # 4. schools, then the split, before any encoding or imputation
    groups, school = reconstruct_schools(data, fingerprint, proto.min_clusters)
    use_groups = school["status"] == "success"
    if not use_groups and school["status"] != "no_grouping":
        warnings_.append(f"{reg.grouping['unit']} clusters: {school['status']} ({school['n_clusters']} clusters); "
                         f"the split is not grouped by {reg.grouping['unit']}")
    grouping = reg.grouping
    label = (f"reconstructed {grouping['unit']}" if grouping["reconstructed"]
             else f"{grouping['unit']} ({', '.join(grouping['columns'])})")
    train_idx, test_idx, split = split_train_test(y, groups if use_groups else None, task, proto.test_fraction,
                                                  proto.seed, group_label=label)
    split["school_reconstruction"] = school
    split["grouping"] = grouping
    split["clustered"] = bool(use_groups)
    if not use_groups:
        groups = pd.Series(np.arange(len(data)), index=data.index, name="pseudo_school_id")
    split["train_clusters"] = int(groups.iloc[train_idx].nunique())
    split["test_clusters"] = int(groups.iloc[test_idx].nunique())
    X_train, X_test = X.iloc[train_idx], X.iloc[test_idx]

    # 5. imputation fitted on training rows only
    imputer, notes = fit_imputer(X_train, kinds, proto)
    # the flagged missing shares are Table 1's missing-share column (sample.json) and missingness[var].flagged in
    # this report, not one warning per variable
    for note in notes:
        log.info(note)
    X_train_i, X_test_i = imputer.transform(X_train), imputer.transform(X_test)

    # 6. encoding fitted on training rows only
    encoder = fit_encoder(X_train_i, kinds | {ind: "continuous" for ind in imputer.indicators.values()}, proto)
    train_X, sources = encoder.transform(X_train_i)
    test_X, _ = encoder.transform(X_test_i)
    sources |= {ind: col for col, ind in imputer.indicators.items()}
    constant = [c for c in train_X.columns if train_X[c].nunique() <= 1]
    if constant:
        warnings_.append(f"constant columns removed after encoding: {constant}")
        train_X, test_X = train_X.drop(columns=constant), test_X.drop(columns=constant)
        sources = {k: v for k, v in sources.items() if k not in constant}
    # identical columns on the training rows (two variables missing for the same students give the same
    # missing-category indicator): the later copy carries no information and is removed, as decided on training rows
    copies = duplicated_columns(train_X)
    if copies:  # the Methods state it (data_report.duplicated_columns), so it is no data warning
        log.info("columns identical to an earlier column on the training rows removed after encoding: %s",
                 ", ".join(f"{c} (= {first})" for c, first in copies.items()))
        train_X, test_X = train_X.drop(columns=list(copies)), test_X.drop(columns=list(copies))
        sources = {k: v for k, v in sources.items() if k not in copies}
    train_X, test_X = train_X.reset_index(drop=True), test_X.reset_index(drop=True)
    train_y, test_y = y.iloc[train_idx].reset_index(drop=True), y.iloc[test_idx].reset_index(drop=True)

    # protected snapshot: original labels of the subgroup variables, test rows, before encoding
    present_sub = [c for c in subgroups if c in data.columns]
    test_protected = data.iloc[test_idx][present_sub].reset_index(drop=True)

    checks = data_checks(train_X, test_X, train_y, test_y, task, outcome, len(kinds), analytic_n, retention,
                         split["group_overlap"], proto, structural, rec.get("range"))
    analytic_missing = {c: round(float(X[c].isna().mean() * 100), 2) for c in kinds}
    flow = sample_flow(original_n, analytic_n, analytic_n, X, train_idx, test_idx, groups, bool(use_groups),
                       data[present_sub])
    described = list(kinds) + [c for c in present_sub if c not in kinds]
    sample = None if not describe else describe_sample(X, kinds, y, task, data[present_sub], flow,
                             labels={c: value_labels(reg, c) for c in described},
                             var_labels={c: (reg.variable(c) or {}).get("label") or c for c in described},
                             orders={c: codebook_order((reg.variable(c) or {}).get("values"),
                                                       layout.value_labels.get(c) if layout else None)
                                     for c in described})
    report = {
        "original_n": original_n,
        "analytic_n": analytic_n,
        "retention": round(retention, 4),
        "complete_case_n": complete_case_n,
        "train_n": len(train_y),
        "test_n": len(test_y),
        "outcome": outcome,
        "outcome_source": source,
        "task": task,
        "class_balance": ({str(int(k)): int(v) for k, v in y.value_counts().sort_index().items()}
                          if task == "binary_classification" else None),
        "outcome_summary": (None if task == "binary_classification" else
                            {"mean": float(y.mean()), "sd": float(y.std()), "min": float(y.min()),
                             "max": float(y.max())}),
        "missingness": {c: {"pct_missing": analytic_missing[c], "pct_missing_train": imputer.pct_missing[c],
                            "method": imputer.methods[c], "kind": kinds[c],
                            "flagged": imputer.pct_missing[c] > proto.warn_above,
                            "structural": imputer.pct_missing[c] > proto.structural_above,
                            **({"indicator": imputer.indicators[c]} if c in imputer.indicators else {})}
                        for c in kinds},
        "duplicated_columns": copies,
        "missing_thresholds": {"warn_above": proto.warn_above, "structural_above": proto.structural_above},
        "predictors_before": predictors,
        "predictors_dropped": dropped,
        "predictors_after": list(train_X.columns),
        "feature_sources": sources,
        "split": split,
        "checks": checks,
        "validation_passed": all(c["passed"] for c in checks),
        "warnings": warnings_,
        "sentinel_recoding": {"n_values_recoded": int(sum(recoded.values())), "by_variable": recoded,
                              "codes": sorted(int(c) for c in reg.sentinel_codes),
                              "labels": reg.sentinel_labels},
        "imputation_strategy": proto.imputation,
        "imputation_protocol": imputation_protocol(proto),
        "protected": present_sub,
        "thresholds": {"leakage_corr": proto.leakage_corr},
    }
    return Prepared(train_X, train_y, test_X, test_y, test_protected, groups.iloc[train_idx].reset_index(drop=True),
                    report, groups.iloc[test_idx].reset_index(drop=True), sample)
