"""The floors a run applies to a data file's rows, checked before any run (`edm-ars validate-registry --data`)
with the run's own settings: the analytic cases of each studied outcome against both floors that stop a run
(engineer.min_analytic_n at the dataset and data steps, critic.abort_below_n at the Critic), the outcome's
retention floor (engineer.min_retention), the cluster floor (engineer.min_clusters) when the registry declares a
grouping, and the test set the engineer's split would hold against critic.min_test_n (a warning: it caps the
review, it does not stop the run).

The counts are made the way the DataEngineer makes them (edm_ars.data.engineer.prepare): sentinels recoded, the
outcome built from its source, the clusters fingerprinted from the declared columns, a unit's records joined
(dataset.repeated) and the train/test split drawn with the run's test fraction and seed; the messages are the
engineer's own (too_few_cases, few_clusters_message, merged_clusters_message, level_clusters)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from edm_ars.core.errors import DataError
from edm_ars.data.engineer import (
    build_outcome,
    few_clusters_message,
    is_structural,
    level_clusters,
    merged_clusters_message,
    outcome_source,
    repeated_units,
)
from edm_ars.data.protocol import Protocol, too_few_cases
from edm_ars.data.raw import recode_sentinels
from edm_ars.data.registry import Registry
from edm_ars.data.split import reconstruct_schools, split_groups, split_train_test

#: the settings read, as (section, key): each Floors field is the configuration's `section.key`
SETTINGS = {"min_analytic_n": ("engineer", "min_analytic_n"), "abort_below_n": ("critic", "abort_below_n"),
            "min_retention": ("engineer", "min_retention"), "min_clusters": ("engineer", "min_clusters"),
            "min_test_n": ("critic", "min_test_n"), "test_fraction": ("engineer", "test_fraction"),
            "seed": ("", "seed")}
_FRACTIONS = {"min_retention", "test_fraction"}


@dataclass(frozen=True)
class Floors:
    """The run's settings that decide whether a data file's rows can carry a study (defaults: the code's own, the
    same as config/config.yaml)."""

    min_analytic_n: int = Protocol.min_analytic_n
    abort_below_n: int = 1000
    min_retention: float = Protocol.min_retention
    min_clusters: int = Protocol.min_clusters
    min_test_n: int = 200
    test_fraction: float = Protocol.test_fraction
    seed: int = Protocol.seed

    @classmethod
    def from_config(cls, config: dict[str, Any], where: str = "the configuration") -> Floors:
        """The floors of a merged configuration (config/config.yaml updated by each --configfile); a key it lacks
        keeps the default. DataError naming the key, its value and `where` when a value is not a number of the
        right kind."""
        values: dict[str, Any] = {}
        for field, (section, key) in SETTINGS.items():
            node = config if not section else config.get(section)
            if not isinstance(node, dict) or key not in node:
                continue
            value, name = node[key], f"{section}.{key}" if section else key
            if field in _FRACTIONS:
                ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1
                kind = "a fraction between 0 and 1"
            else:
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
                kind = "a whole number of at least 0"
            if not ok:
                raise DataError(f"{where}: {name} = {value!r} is not {kind}")
            values[field] = value
        return cls(**values)


def _task(reg: Registry, outcome: str) -> str | None:
    typ = (reg.variable(outcome) or {}).get("type")
    return {"continuous": "regression", "binary": "binary_classification"}.get(typ)


def _valid_outcome(recoded: pd.DataFrame, reg: Registry, outcome: str, task: str) -> pd.Series:
    """The outcome as the engineer builds it (NaN where missing); where it cannot be built without the data set's
    codebook (a binary outcome whose labels only the layout maps), its source column's recorded values."""
    try:
        return build_outcome(recoded, reg, None, outcome, task)
    except DataError:
        return recoded[outcome_source(reg, outcome)]


def _clusters(data: pd.DataFrame, reg: Registry, floors: Floors) -> tuple[pd.Series | None, str | None]:
    """The cluster id of each analytic row when the registry declares a grouping the split can use (None when it
    declares none), or the engineer's message when the clusters are under engineer.min_clusters."""
    if not reg.cluster_levels:
        return None, None
    if len(reg.cluster_levels) > 1:
        try:
            clusters, _, _, _ = level_clusters(data, reg, floors.min_clusters)
        except DataError as exc:
            return None, str(exc)
        return clusters, None
    clusters, school = reconstruct_schools(data, reg.grouping["columns"], floors.min_clusters)
    if school["status"] == "degenerate_few_clusters":
        return None, few_clusters_message(reg, school["n_clusters"], floors.min_clusters)
    return (clusters, None) if school["status"] == "success" else (None, None)


def floor_problems(frame: pd.DataFrame, reg: Registry, floors: Floors) -> tuple[list[str], list[str]]:
    """What would stop a run on these rows (problems) and what would cap its review (warnings), for each outcome
    of the registry's questions, each naming the setting and the --configfile line that changes it."""
    problems: list[str] = []
    warnings: list[str] = []
    levels = [c for lv in reg.cluster_levels for c in lv["columns"]]
    for outcome in dict.fromkeys(q["outcome"] for q in reg.questions):
        task, source = _task(reg, outcome), outcome_source(reg, outcome)
        unit_id = (reg.repeated or {}).get("id")
        if (task is None or source not in frame.columns or any(c not in frame.columns for c in levels)
                or (unit_id is not None and unit_id not in frame.columns)):
            continue  # a type or a column the registry checks and data_problems name
        columns = list(dict.fromkeys([source, *levels]))
        recoded, _ = recode_sentinels(frame[columns], reg)
        y = _valid_outcome(recoded, reg, outcome, task)
        keep = y.notna().to_numpy()
        n = int(keep.sum())
        below = [f"the floor {name} = {value}" for name, value in (("engineer.min_analytic_n", floors.min_analytic_n),
                                                                   ("critic.abort_below_n", floors.abort_below_n))
                 if n < value]
        if below:
            noun = "rows with a valid outcome" if n < len(frame) else "rows"
            problems.append(f"outcome {outcome}: {n} {noun}, fewer than {' and '.join(below)}; "
                            + too_few_cases(n, noun, floors.min_analytic_n, floors.abort_below_n))
            continue
        retention = n / len(frame)
        if retention < floors.min_retention and not is_structural(reg, outcome):
            problems.append(f"outcome {outcome}: {n} of {len(frame)} rows ({retention:.1%}) have a valid value, under "
                            f"the retention floor engineer.min_retention = {floors.min_retention}; the data step stops "
                            f"such a run: lower it with --configfile (a YAML file holding `engineer: {{min_retention: "
                            f"{max(math.floor(retention * 100) / 100, 0.01)}}}`) if the rows without an outcome are missing "
                            "at random, or study another outcome")
            continue
        data = recoded.loc[keep].reset_index(drop=True)
        clusters, few = _clusters(data, reg, floors)
        if few:
            problems.append(few)
            continue
        try:
            units = repeated_units(frame, reg, keep)
        except DataError as exc:
            problems.append(str(exc))
            continue
        groups = clusters
        if units is not None:
            groups = pd.Series(split_groups(None if clusters is None else clusters.to_numpy(), units.to_numpy()))
            n_groups = int(groups.nunique())
            if clusters is not None and n_groups < floors.min_clusters:
                problems.append(merged_clusters_message(reg, units, clusters, n_groups, floors.min_clusters))
                continue
        y_kept = y.loc[keep].reset_index(drop=True)
        _, test, _ = split_train_test(y_kept, groups, task, floors.test_fraction, floors.seed)
        if len(test) < floors.min_test_n:
            how = "" if groups is None else f" of whole {'groups' if units is not None else 'clusters'}"
            warnings.append(f"outcome {outcome}: the test set would hold {len(test)} of {n} analytic cases (a split"
                            f"{how} with engineer.test_fraction = {floors.test_fraction}), under critic.min_test_n = "
                            f"{floors.min_test_n}: the run goes on, but the review's verdict is capped and the paper "
                            "is flagged UNVERIFIED; to accept this test set, lower the floor with --configfile (a YAML "
                            f"file holding `critic: {{min_test_n: {len(test)}}}`), or use more data")
    return list(dict.fromkeys(problems)), list(dict.fromkeys(warnings))
