"""The large-data policy (config `analysis.large_data`): how a study with many rows is tuned.

Above `rows` rows in the data set (the data report's `original_n`, the rows of `output/data/dataset.json`), each
model family's hyperparameters are tuned on a subsample of the training clusters (schools), not on all training
rows, and the chosen configuration is refitted on all training rows:

- the subsample: whole clusters, the grouping unit of the split and of the tuning folds, drawn at random within
  `strata` bands of the clusters' training outcome rate (binary outcome) or mean (continuous), each band giving
  the subsample its share of the training rows; the clusters of a band are shuffled with the study's seed and
  taken in that order until the band holds its share. The subsample holds about `tune_rows` training rows
  (default 50,000, so the cost of tuning does not grow with the data; null: as many as a data set of `rows` rows
  would give for training, so tuning costs about what it costs at the threshold);
- tuning is the usual grouped, raced search (edm_ars.analysis.models.tune) within the subsample;
- stacking needs a held-out prediction of every training row: the rows in the subsample keep their out-of-fold
  predictions from the tuning folds; the other rows get the prediction of the chosen configuration fitted on the
  subsample (which never saw their cluster). One prediction per row: linear in the rows;
- the random forest's trees each draw `rf_max_samples` rows (null: as many as a tree drew in tuning, half of a
  tuning fold's training rows), so the depth and leaf size tuned for trees of that size keep their meaning and a
  tree's cost does not grow with the data.

Below the threshold nothing changes (edm_ars.analysis.models.tune on all training rows). What was done is recorded as the
model's `large_data` record, which the Writer states in the Methods. Intervals, SHAP and the fairness audit keep
their own sample rules."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from edm_ars.core.conventions import BINARY, RANDOM_FOREST
from edm_ars.core.errors import EdmArsError

log = logging.getLogger("edm_ars")

FOREST = RANDOM_FOREST
# a tree of the random forest draws this share of its training rows when the policy does not apply
# (edm_ars.analysis.models._forest's default max_samples)
FOREST_SHARE = 0.5


@dataclass(frozen=True)
class Policy:
    rows: int
    tune_rows: int | None = None
    strata: int = 5
    rf_max_samples: int | None = None


def policy_of(cfg: Mapping[str, Any] | None) -> Policy:
    """The policy from the config section `analysis.large_data` (schema-checked; checked again here, as a job
    may be given a section by hand)."""
    cfg = dict(cfg or {})
    policy = Policy(rows=int(cfg.get("rows", 200_000)), tune_rows=cfg.get("tune_rows"),
                    strata=int(cfg.get("strata", 5)), rf_max_samples=cfg.get("rf_max_samples"))
    if policy.rows < 1 or policy.strata < 1:
        raise EdmArsError(f"analysis.large_data: rows ({policy.rows}) and strata ({policy.strata}) must be at least 1")
    for key in ("tune_rows", "rf_max_samples"):
        value = getattr(policy, key)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise EdmArsError(f"analysis.large_data.{key}: {value!r} is neither null nor a positive whole number")
    return policy


def applies(policy: Policy, data_rows: int | None) -> bool:
    """True when the data set has more rows than the threshold."""
    return data_rows is not None and int(data_rows) > policy.rows


def tuning_target(policy: Policy, data_rows: int, train_rows: int) -> int:
    """Training rows the tuning subsample aims at: `tune_rows`, else the training rows of a data set at the
    threshold (rows x this study's share of rows in training)."""
    if policy.tune_rows is not None:
        return int(policy.tune_rows)
    return max(1, round(policy.rows * train_rows / data_rows))


def cluster_strata(y: np.ndarray, groups: np.ndarray, n_strata: int) -> pd.DataFrame:
    """One row per training cluster (sorted by id): its rows, its outcome mean (the rate of a binary outcome) and
    its stratum, the band of that mean (equal shares of the clusters, ranked; ties share a band)."""
    frame = pd.DataFrame({"group": groups, "y": np.asarray(y, dtype=float)})
    per = frame.groupby("group", sort=True)["y"].agg(rows="size", mean="mean")
    ranks = per["mean"].rank(method="average").to_numpy()
    bands = np.floor((ranks - 0.5) / len(per) * n_strata).astype(int)
    per["stratum"] = np.clip(bands, 0, n_strata - 1)
    return per


def tuning_subsample(y: np.ndarray, groups: np.ndarray, *, target_rows: int, n_strata: int, seed: int
                     ) -> tuple[np.ndarray, dict[str, Any]]:
    """(mask of the training rows in the subsample, its facts). Whole clusters drawn within strata of the
    clusters' outcome mean: each stratum gives its share of `target_rows` (its share of the training rows); its
    clusters are shuffled (seeded) and taken in that order until the stratum holds its share. Deterministic in the
    seed; another seed draws other clusters."""
    per = cluster_strata(y, groups, n_strata)
    total = int(per["rows"].sum())
    rng = np.random.default_rng(seed)
    chosen: list[Any] = []
    strata = []
    for stratum, block in per.groupby("stratum", sort=True):
        share = target_rows * int(block["rows"].sum()) / total
        order = rng.permutation(len(block))
        counts = block["rows"].to_numpy()[order]
        # the clusters whose cumulative rows, before them, are still under the stratum's share
        take = int(np.searchsorted(np.cumsum(counts), share, side="left")) + 1
        take = min(len(block), max(1, take))
        picked = block.index.to_numpy()[order[:take]]
        chosen.extend(picked.tolist())
        strata.append({"stratum": int(stratum), "clusters": int(len(block)), "rows": int(block["rows"].sum()),
                       "outcome_low": float(block["mean"].min()), "outcome_high": float(block["mean"].max()),
                       "tune_clusters": int(take), "tune_rows": int(counts[:take].sum())})
    mask = np.isin(groups, np.asarray(chosen, dtype=per.index.dtype))
    facts = {"target_tune_rows": int(target_rows), "tune_rows": int(mask.sum()), "tune_clusters": len(chosen),
             "train_rows": total, "train_clusters": int(len(per)), "strata": len(strata),
             "strata_requested": int(n_strata), "by_stratum": strata}
    return mask, facts


def forest_max_samples(policy: Policy, tune_rows: int, n_folds: int) -> tuple[int, str]:
    """(rows each tree of the random forest draws, where the number comes from): the configured value, else what a
    tree drew in tuning (half of a tuning fold's training rows)."""
    if policy.rf_max_samples is not None:
        return int(policy.rf_max_samples), "config"
    return max(1, math.floor(FOREST_SHARE * tune_rows * (n_folds - 1) / n_folds)), "tuning"


def tune(name: str, task: str, X: pd.DataFrame, y: pd.Series | np.ndarray, groups: np.ndarray, *, seed: int,
         n_folds: int, policy: Policy, data_rows: int | None) -> dict[str, Any]:
    """edm_ars.analysis.models.tune, under the policy: on all training rows when the data set has at most `policy.rows`
    rows; above, tuned on the subsample of clusters and refitted on all training rows (module docstring). The
    result has what models.tune returns (the model fitted on all training rows, out-of-fold predictions of every
    training row) and, above the threshold, `large_data`: the policy's facts."""
    from edm_ars.analysis import models

    if not applies(policy, data_rows):
        return models.tune(name, task, X, y, groups, seed=seed, n_folds=n_folds)
    y = np.asarray(y, dtype=float)
    groups = np.asarray(groups)
    target = tuning_target(policy, int(data_rows), len(y))
    facts: dict[str, Any] = {"threshold_rows": policy.rows, "data_rows": int(data_rows), "seed": int(seed),
                             "outcome_by": "rate" if task == BINARY else "mean",
                             "target_from": "threshold" if policy.tune_rows is None else "config"}
    if target < len(y):
        mask, drawn = tuning_subsample(y, groups, target_rows=target, n_strata=policy.strata, seed=seed)
    else:  # the training rows are no more than the subsample would hold: tuned on all of them
        mask = np.ones(len(y), dtype=bool)
        drawn = {"target_tune_rows": target, "tune_rows": len(y), "tune_clusters": int(len(np.unique(groups))),
                 "train_rows": len(y), "train_clusters": int(len(np.unique(groups))), "strata": 0,
                 "strata_requested": policy.strata, "by_stratum": []}
    facts |= drawn | {"subsampled": bool(not mask.all())}
    log.info("%s: large-data policy: %d data rows > %d; tuning on %d of %d training rows (%d of %d clusters, %d "
             "strata)", name, data_rows, policy.rows, facts["tune_rows"], len(y), facts["tune_clusters"],
             facts["train_clusters"], facts["strata"])
    Xs = X.iloc[np.flatnonzero(mask)]
    fit = models.tune(name, task, Xs, y[mask], groups[mask], seed=seed, n_folds=n_folds)
    oof = np.full(len(y), np.nan)
    oof[mask] = fit["oof"]
    if not mask.all():
        oof[~mask] = models.predict(fit["model"], task, X.iloc[np.flatnonzero(~mask)])
    params = dict(fit["best_params"])
    if name == FOREST:
        params["max_samples"], source = forest_max_samples(policy, facts["tune_rows"], n_folds)
        facts |= {"forest_max_samples": params["max_samples"], "forest_max_samples_from": source}
    cpu, wall = time.process_time(), time.perf_counter()
    fit["model"] = models.fit(name, task, seed, params, X, y)
    log.info("%s: refitted on all %d training rows in %.1f s (%.1f CPU s)", name, len(y),
             time.perf_counter() - wall, time.process_time() - cpu)
    facts |= {"refit_rows": len(y), "oof_from_subsample_fit": int((~mask).sum())}
    return fit | {"best_params": params, "oof": oof, "large_data": facts}
