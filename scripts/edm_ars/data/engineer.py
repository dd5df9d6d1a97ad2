"""DataEngineer: the certified, leakage-safe data preparation.

Order of operations (each step is a pure function, tested on small frames):
1. select the outcome, predictors, subgroup and school-fingerprint columns;
2. recode every numeric reserve code and text missing label to NaN, before anything else;
3. build the outcome (explicit label mapping, derived outcomes) and drop rows whose outcome is
   missing (the outcome is never imputed);
4. reconstruct schools from the fingerprint and split 80/20 before any encoding (stratified for
   classification, grouped by school so no school is on both sides, and by the unit of repeated records,
   dataset.repeated, so no unit is either; fewer clusters than engineer.min_clusters stop the run);
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
from edm_ars.data.outcome_shape import outcome_shape
from edm_ars.data.protocol import Protocol, too_few_cases
from edm_ars.data.raw import recode_sentinels
from edm_ars.data.registry import Registry, value_labels
from edm_ars.data.sample import codebook_order, describe_sample, sample_flow
from edm_ars.data.split import (
    connected_groups,
    fingerprint_ids,
    reconstruct_schools,
    split_groups,
    split_train_test,
)

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
    # the cluster ids of every declared level (a column per level unit; the split's groups alone when the registry
    # declares one level), for the analyses of each level (edm_ars.analysis.multilevel)
    train_levels: pd.DataFrame | None = None
    test_levels: pd.DataFrame | None = None


def outcome_source(reg: Registry, outcome: str) -> str:
    """The data column an outcome is read from (itself, or the source of a derived outcome)."""
    rec = reg.variable(outcome) or {}
    return rec["derive"]["from"] if rec.get("derive") else outcome


def needed_columns(spec: dict[str, Any], reg: Registry) -> list[str]:
    """The columns the protocol reads for a specification: predictors, the outcome's source column,
    subgroup attributes, the grouping columns and the unit identifier of repeated records (dataset.repeated.id)."""
    return list(dict.fromkeys([p["name"] for p in spec["predictors"]]
                              + [outcome_source(reg, spec["outcome"]["name"])]
                              + list(spec.get("subgroups", []))
                              + [c for lv in reg.cluster_levels for c in lv["columns"]]
                              + ([reg.repeated["id"]] if reg.repeated else [])))


def repeated_units(raw: pd.DataFrame, reg: Registry, keep: np.ndarray) -> pd.Series | None:
    """The unit id (dataset.repeated.id) of each kept row, as read (never recoded as a missing code); None when the
    registry declares no repeated records. DataError naming the column when it is absent or has missing values
    (a record without its unit could sit on both sides of the split)."""
    rep = reg.repeated
    if rep is None:
        return None
    col = rep["id"]
    if col not in raw.columns:
        raise DataError(f"column {col} (dataset.repeated.id, the {rep['unit']} identifier) is not in the data; "
                        "add it or remove dataset.repeated from the registry")
    units = raw[col].reset_index(drop=True).loc[keep].reset_index(drop=True)
    if units.isna().any():
        raise DataError(f"column {col} (dataset.repeated.id): {int(units.isna().sum())} analytic rows have no "
                        f"{rep['unit']} identifier; fill or drop them, so that every record belongs to a "
                        f"{rep['unit']}")
    return units.rename(col)


#: fewest clusters a grouped study can use: a test fold of whole clusters and grouped 5-fold tuning on the rest
WORKABLE_CLUSTERS = 7


def few_clusters_message(reg: Registry, n_clusters: int, floor: int) -> str:
    """The one line that stops a study whose declared clusters are fewer than engineer.min_clusters: the count, the
    floor, the --configfile line that lowers it (when the clusters can still carry a grouped split and grouped
    tuning folds) and the registry change that drops the grouping."""
    unit, columns = reg.grouping["unit"], ", ".join(reg.grouping["columns"])
    head = (f"the data have {n_clusters} {unit} cluster{'s' if n_clusters != 1 else ''} ({columns}), fewer than the "
            f"floor engineer.min_clusters = {floor}, so the split is not grouped by {unit}: ")
    drop = f"remove dataset.grouping from the registry if the rows of one {unit} are independent"
    if n_clusters >= WORKABLE_CLUSTERS:
        return head + (f"to group by these {n_clusters} clusters, pass --configfile with a YAML file holding "
                       f"`engineer: {{min_clusters: {n_clusters}}}`, or {drop}")
    return head + (f"{n_clusters} clusters cannot hold a test set of whole clusters and grouped 5-fold tuning (at "
                   f"least {WORKABLE_CLUSTERS} are needed); {drop}, or use data with more {unit}s")


def merged_clusters_message(reg: Registry, units: pd.Series, clusters: pd.Series, n_groups: int, floor: int) -> str:
    """The one line that stops a study whose units moved between clusters so often that the groups a split must
    keep whole (clusters joined by the units they share) are fewer than engineer.min_clusters."""
    rep, unit = reg.repeated or {}, reg.grouping["unit"]
    movers = int((pd.DataFrame({"u": units.to_numpy(), "c": clusters.to_numpy()}).groupby("u")["c"].nunique()
                  > 1).sum())
    return (f"{movers} {rep.get('units', 'units')} ({rep.get('id')}) have records in more than one {unit}, which joins "
            f"the {int(clusters.nunique())} {unit} clusters into {n_groups} group(s) that a split must keep whole, "
            f"fewer than the floor engineer.min_clusters = {floor}; remove dataset.grouping from the registry to "
            f"keep each {rep.get('unit', 'unit')}'s records together without the {unit}s, or lower the floor with "
            f"--configfile (a YAML file holding `engineer: {{min_clusters: {max(n_groups, 2)}}}`)")


def level_clusters(data: pd.DataFrame, reg: Registry, floor: int
                   ) -> tuple[pd.Series, dict[str, Any], list[dict[str, Any]], list[pd.Series]]:
    """The clusters of a registry with more than one cluster level (dataset.grouping.also): the connected
    components of the rows sharing a cluster of any level the split keeps together (dataset.grouping.split_by: all,
    or one level's unit), their summary as reconstruct_schools gives it, each level's record ({unit, columns,
    n_clusters, kept_together}) and each level's cluster ids. DataError naming the levels and the fix when the
    groups are fewer than engineer.min_clusters."""
    split_by = reg.grouping.get("split_by", "all")
    levels, ids = [], []
    for lv in reg.cluster_levels:
        present = [c for c in lv["columns"] if c in data.columns]
        if not present:
            raise DataError(f"the {lv['unit']} level's column(s) {lv['columns']} (dataset.grouping) are not in the "
                            "data")
        level_ids = pd.Series(fingerprint_ids(data[present]), index=data.index)
        ids.append(level_ids)
        levels.append({"unit": lv["unit"], "columns": present, "n_clusters": int(level_ids.nunique()),
                       "kept_together": split_by in ("all", lv["unit"])})
    kept = [i for i, lv in zip(ids, levels, strict=True) if lv["kept_together"]]
    groups = pd.Series(connected_groups([k.to_numpy() for k in kept]), index=data.index, name="pseudo_school_id")
    n = int(groups.nunique())
    names = " and ".join(f"{lv['n_clusters']} {lv['unit']} clusters ({', '.join(lv['columns'])})"
                         for lv in levels if lv["kept_together"])
    if n < floor:
        if split_by == "all":
            fix = ("keep one level together instead: set dataset.grouping.split_by to the unit of one level ("
                   + " or ".join(lv["unit"] for lv in levels) + "; the paper then states that the other level is "
                   "not kept together)")
        else:
            fix = "use data with more clusters or remove dataset.grouping from the registry"
        lower = (f", or lower the floor with --configfile (a YAML file holding `engineer: {{min_clusters: {n}}}`)"
                 if n >= WORKABLE_CLUSTERS else "")
        raise DataError(f"the {names} join into {n} group(s) that the split must keep whole (rows sharing a cluster "
                        f"of any of these levels), fewer than the floor engineer.min_clusters = {floor}; {fix}{lower}")
    sizes = groups.value_counts()
    school = {"status": "success", "n_clusters": n,
              "columns": [c for lv in levels if lv["kept_together"] for c in lv["columns"]],
              "median_cluster_size": float(sizes.median()), "max_cluster_size": int(sizes.max())}
    return groups, school, levels, ids


def protocol(cfg: dict[str, Any], seed: int, imputation: str | None = None) -> Protocol:
    """The protocol of the config's `engineer` section with the run's seed; `imputation` is the strategy the
    reviews' revisions chose (edm_ars.review.actions.imputation), the section's own when None."""
    return Protocol(test_fraction=cfg["test_fraction"], seed=seed, simple_below=cfg["simple_below"],
                    warn_above=cfg["warn_above"], min_analytic_n=cfg["min_analytic_n"],
                    min_retention=cfg["min_retention"], max_categories=cfg["max_categories"],
                    structural_above=cfg.get("structural_above", Protocol.structural_above),
                    imputation=imputation or cfg["imputation"],
                    leakage_corr=float(cfg.get("leakage_corr", LEAKAGE_CORR)),
                    min_clusters=int(cfg.get("min_clusters", Protocol.min_clusters)))


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
    needed = list(dict.fromkeys(predictors + [source] + subgroups + fingerprint
                                + [c for lv in reg.cluster_levels[1:] for c in lv["columns"]]))
    needed = [c for c in needed if c in raw.columns]
    absent_sub = [c for c in subgroups if c not in raw.columns]
    if absent_sub:
        warnings_.append(f"subgroup attributes not in the data: {absent_sub}")
    data, recoded = recode_sentinels(raw[needed], reg)

    # 3. outcome; rows with a missing outcome leave (never imputed)
    y_all = build_outcome(data, reg, layout, outcome, task, spec["outcome"].get("positive_label"))
    keep = y_all.notna().to_numpy()
    data, y = data.loc[keep].reset_index(drop=True), y_all.loc[keep].reset_index(drop=True)
    units = repeated_units(raw, reg, keep)  # the unit of each analytic row (long format), read before recoding
    analytic_n = len(y)
    retention = analytic_n / original_n if original_n else 0.0
    structural = is_structural(reg, outcome)
    if analytic_n < proto.min_analytic_n:
        raise DataError(f"outcome {outcome}: only {analytic_n} rows have a valid value, fewer than the floor of "
                        f"{proto.min_analytic_n} analytic cases; "
                        + too_few_cases(analytic_n, "analytic cases", proto.min_analytic_n))
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

    # 4. schools, then the split, before any encoding or imputation; the split's groups keep every cluster and
    # every unit's records (long format) on one side (edm_ars.data.split.split_groups)
    levels, level_ids = None, []
    if len(reg.cluster_levels) > 1:  # more than one cluster level (dataset.grouping.also)
        clusters, school, levels, level_ids = level_clusters(data, reg, proto.min_clusters)
    else:
        clusters, school = reconstruct_schools(data, fingerprint, proto.min_clusters)
    if school["status"] == "degenerate_few_clusters":
        raise DataError(few_clusters_message(reg, school["n_clusters"], proto.min_clusters))
    use_groups = school["status"] == "success"
    if not use_groups and school["status"] != "no_grouping":
        warnings_.append(f"{reg.grouping['unit']} clusters: {school['status']} ({school['n_clusters']} clusters); "
                         f"the split is not grouped by {reg.grouping['unit']}")
    grouping = reg.grouping
    label = (f"reconstructed {grouping['unit']}" if grouping["reconstructed"]
             else f"{grouping['unit']} ({', '.join(grouping['columns'])})")
    if levels:
        label = " and ".join(f"{lv['unit']} ({', '.join(lv['columns'])})" for lv in levels if lv["kept_together"])
    rep = reg.repeated
    if units is not None:
        label = (f"{label} and {rep['unit']} ({rep['id']})" if use_groups
                 else f"{rep['unit']} ({rep['id']})")
        groups = pd.Series(split_groups(clusters.to_numpy() if use_groups else None, units.to_numpy()),
                           index=data.index, name="pseudo_school_id")
        n_groups = int(groups.nunique())
        if use_groups and n_groups < proto.min_clusters:
            raise DataError(merged_clusters_message(reg, units, clusters, n_groups, proto.min_clusters))
    else:
        groups = clusters
    grouped = bool(use_groups or units is not None)
    train_idx, test_idx, split = split_train_test(y, groups if grouped else None, task, proto.test_fraction,
                                                  proto.seed, group_label=label)
    split["school_reconstruction"] = school
    split["grouping"] = grouping
    split["clustered"] = bool(use_groups)
    # the split's groups are not rows: the tuning folds and the bootstrap intervals resample them whole
    split["grouped"] = grouped
    split["grouped_by"] = ("cluster_and_unit" if use_groups and units is not None else "cluster" if use_groups
                           else "unit" if units is not None else None)
    split["n_groups"] = int(groups.nunique()) if grouped else len(data)
    if not grouped:
        groups = pd.Series(np.arange(len(data)), index=data.index, name="pseudo_school_id")
    counted = clusters if use_groups else groups  # clusters on each side: the clusters themselves, not merged
    split["group_overlap"] = int(len(set(counted.iloc[train_idx]) & set(counted.iloc[test_idx])))
    split["train_clusters"] = int(counted.iloc[train_idx].nunique())
    split["test_clusters"] = int(counted.iloc[test_idx].nunique())
    if levels:  # each cluster level: its clusters on each side, and those on both (none when kept together)
        split["split_by"] = grouping.get("split_by", "all")
        split["cluster_levels"] = [
            {**lv, "train_clusters": int(ids.iloc[train_idx].nunique()),
             "test_clusters": int(ids.iloc[test_idx].nunique()),
             "on_both_sides": int(len(set(ids.iloc[train_idx]) & set(ids.iloc[test_idx])))}
            for lv, ids in zip(levels, level_ids, strict=True)]
        split_leak = [lv for lv in split["cluster_levels"] if lv["kept_together"] and lv["on_both_sides"]]
        if split_leak:
            raise DataError(f"the split put {split_leak[0]['on_both_sides']} {split_leak[0]['unit']} clusters on "
                            "both sides although dataset.grouping keeps them together")
    split["repeated"] = None if units is None else {
        **rep, "train_units": int(units.iloc[train_idx].nunique()), "test_units": int(units.iloc[test_idx].nunique()),
        "train_records": len(train_idx), "test_records": len(test_idx),
        "units_on_both_sides": int(len(set(units.iloc[train_idx]) & set(units.iloc[test_idx])))}
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
                         split["group_overlap"], proto, structural, rec.get("range"),
                         units_on_both_sides=None if units is None else split["repeated"]["units_on_both_sides"])
    if units is not None and split["repeated"]["units_on_both_sides"]:
        raise DataError(f"data check no_unit_on_both_sides failed: {split['repeated']['units_on_both_sides']} "
                        f"{rep['units']} ({rep['id']}) have records in both the training and the test rows")
    analytic_missing = {c: round(float(X[c].isna().mean() * 100), 2) for c in kinds}
    flow = sample_flow(original_n, analytic_n, analytic_n, X, train_idx, test_idx, counted, bool(use_groups),
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
        "outcome_shape": None if task == "binary_classification" else outcome_shape(train_y, outcome),
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
    by_level = ({lv["unit"]: ids for lv, ids in zip(levels, level_ids, strict=True)} if levels
                else {"split group": groups})

    def level_frame(idx: Any) -> pd.DataFrame:
        return pd.DataFrame({unit: ids.iloc[idx].astype(str).to_numpy() for unit, ids in by_level.items()})

    return Prepared(train_X, train_y, test_X, test_y, test_protected, groups.iloc[train_idx].reset_index(drop=True),
                    report, groups.iloc[test_idx].reset_index(drop=True), sample,
                    level_frame(train_idx), level_frame(test_idx))
