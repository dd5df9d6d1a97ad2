"""Stability under perturbation (the predictability-computability-stability view).

Each perturbation refits the interpreted model family with its tuned parameters on perturbed
training data, scores it on the same test students and ranks its SHAP features; agreement with
the original top features says whether the substantive conclusion is stable."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from edm_ars.core.conventions import UNSTABLE_TOP5

if TYPE_CHECKING:
    from edm_ars.data.engineer import Prepared

log = logging.getLogger("edm_ars")


def perturbations(cfg: dict[str, Any]) -> list[str]:
    """Names of the perturbation jobs configured: impute_<method>, bootstrap_<k>, seed_<k>."""
    names = [f"impute_{m}" for m in cfg.get("imputation", [])]
    names += [f"bootstrap_{k}" for k in range(1, int(cfg.get("bootstrap", 0)) + 1)]
    names += [f"seed_{k}" for k in range(1, int(cfg.get("seeds", 0)) + 1)]
    return names


def bootstrap_rows(n: int, k: int, seed: int, groups: np.ndarray | None = None) -> np.ndarray:
    """Training rows of bootstrap perturbation k (sampled with replacement, seeded). With `groups` (one id per
    training row: the split's groups, train_groups.parquet) whole groups are drawn instead, as many as there are,
    and every row of a drawn group is taken as often as its group was drawn (in the order of the draws, each
    group's rows in their order): a child's records, or a school's students, are never separated by the draw."""
    rng = np.random.default_rng(seed + 7919 * k)
    if groups is None:
        return rng.integers(0, n, n)
    groups = np.asarray(groups)
    if len(groups) != n:
        raise ValueError(f"bootstrap_rows: {len(groups)} group ids for {n} training rows (train_groups.parquet "
                         "must hold one id per training row)")
    codes = pd.factorize(pd.Series(groups, dtype=object), use_na_sentinel=False)[0]
    n_groups = int(codes.max()) + 1 if n else 0
    order = np.argsort(codes, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(codes, minlength=n_groups))[:-1])
    drawn = rng.integers(0, n_groups, n_groups)
    return np.concatenate([members[g] for g in drawn]) if n_groups else np.zeros(0, dtype=np.int64)


def resamples_groups(split: dict[str, Any]) -> bool:
    """Whether the stability bootstrap draws the split's groups whole (data_report.json:split): when the split kept
    together what the registry declares, its cluster columns (dataset.grouping with reconstructed: false, or
    several levels) and/or the repeated records of a unit (dataset.repeated). Rows are drawn, as always, when the
    split is not grouped, and when its only groups are clusters reconstructed from school-level characteristics
    (the HSLS:09 default, whose resampled rows stay those of earlier runs)."""
    if not split.get("grouped", split.get("clustered")):
        return False
    if split.get("repeated") or split.get("grouped_by") in ("unit", "cluster_and_unit"):
        return True
    return not bool((split.get("grouping") or {}).get("reconstructed", True))


def perturbed(kind: str, arg: str, seed: int, X: pd.DataFrame, y: np.ndarray, X_test: pd.DataFrame,
              sources: dict[str, str], reprepare: Callable[[str], Prepared], groups: np.ndarray | None = None
              ) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame, dict[str, str]]:
    """Training and test features (and their sources) under perturbation <kind>_<arg>, on the same split and the
    same test students. X, y, X_test, sources: the DataEngineer's; reprepare(strategy): the DataEngineer's
    preparation of the same data with another imputation strategy (edm_ars.data.engineer.prepare); groups: the
    training rows' split groups when the bootstrap draws them whole (:func:`resamples_groups`), else None."""
    if kind == "bootstrap":
        rows = bootstrap_rows(len(y), int(arg), seed, groups)
        return X.iloc[rows].reset_index(drop=True), y[rows], X_test, sources
    if kind == "impute":
        if arg != "simple":
            raise ValueError(f"unknown imputation perturbation '{arg}' (known: simple)")
        # every variable imputed by median/mode
        prep = reprepare("simple")
        if len(prep.test_y) != len(X_test):
            raise ValueError("the alternative imputation changed the test rows")
        return prep.train_X, prep.train_y.to_numpy(dtype=float), prep.test_X, prep.report["feature_sources"]
    if kind == "seed":
        return X, y, X_test, sources
    raise ValueError(f"unknown perturbation '{kind}'")


def refit(out: dict[str, Any], name: str, task: str, params: dict[str, Any],
          data: Callable[[], tuple[pd.DataFrame, np.ndarray, pd.DataFrame, dict[str, str]]], y_test: np.ndarray, *,
          seed: int, shap: dict[str, Any]) -> dict[str, Any]:
    """A perturbation's refit of the interpreted model family `name` with its tuned params, scored on the same
    test students, and its ten top SHAP features: the run record `out` ("perturbation" <kind>_<arg>, "errors")
    with "metric", "top_features" and "explainer" filled in. data(): the perturbed (X, y, X_test, sources)
    (:func:`perturbed`); seed_<k> refits with seed + 1000 k. shap: the config's analysis.shap. A refit stopped
    by a condition of the data (edm_ars.core.errors.AnalysisLimitation) or the memory is recorded and leaves the
    metric None; a failed or timed-out explanation keeps the refit's metric. Anything else raises. (The model
    libraries are imported here: the workflow imports this module for its perturbation names.)"""
    from edm_ars.analysis.explain import shap_values, top_features
    from edm_ars.analysis.metrics import PRIMARY
    from edm_ars.analysis.models import fit, predict, score
    from edm_ars.core.phases import recorded

    kind, _, arg = out["perturbation"].partition("_")
    fitted = None
    with recorded(out["errors"], "stability", out["perturbation"]):
        X, y, Xt, sources = data()
        fit_seed = seed + 1000 * int(arg) if kind == "seed" else seed
        model = fit(name, task, fit_seed, params, X, y)
        out["metric"] = score(task, y_test, predict(model, task, Xt))
        fitted = model
    if fitted is not None:
        with recorded(out["errors"], "stability", f"{out['perturbation']} SHAP"):
            values, rows, info = shap_values(fitted, name, task, X.sample(min(len(X), 500), random_state=seed), Xt,
                                             max_samples=shap["stability_samples"],
                                             kernel_samples=shap["kernel_samples"], timeout_s=shap["timeout_s"],
                                             seed=seed)
            out["top_features"] = top_features(values, rows, sources, k=10)
            out["explainer"] = info.get("explainer")
        log.info("%s: %s %s %.4f; top 5 %s", out["perturbation"], name, PRIMARY[task], out["metric"],
                 [f["feature"] for f in out["top_features"][:5]])
    out["metric"] = None if out["metric"] is None or np.isnan(out["metric"]) else out["metric"]
    return out


def overlap(a: list[str], b: list[str], k: int) -> float:
    """Share of the reference's top-k features that are also in the other top-k."""
    top_a, top_b = a[:k], b[:k]
    return len(set(top_a) & set(top_b)) / max(1, min(k, len(top_a)))


def rank_correlation(a: list[str], b: list[str], k: int = 10) -> float | None:
    """Spearman correlation of ranks over the union of two top-k lists (absent = rank k + 1)."""
    union = list(dict.fromkeys(a[:k] + b[:k]))
    if len(union) < 3:
        return None
    ra = [a[:k].index(f) + 1 if f in a[:k] else k + 1 for f in union]
    rb = [b[:k].index(f) + 1 if f in b[:k] else k + 1 for f in union]
    from scipy.stats import spearmanr  # here: the workflow imports this module for its perturbation names

    rho = spearmanr(ra, rb).statistic
    return None if np.isnan(rho) else float(rho)


def summarize(reference_top: list[str], reference_metric: float, runs: list[dict[str, Any]], metric: str
              ) -> dict[str, Any]:
    """Spread of the metric and agreement of the top features across perturbations."""
    rows = []
    for r in runs:
        feats = [f["feature"] for f in r.get("top_features", [])]
        rows.append({
            "perturbation": r["perturbation"], "kind": r["kind"], metric: r.get("metric"),
            "top5_overlap": overlap(reference_top, feats, 5) if feats else None,
            "top10_overlap": overlap(reference_top, feats, 10) if feats else None,
            "rank_correlation": rank_correlation(reference_top, feats) if feats else None,
            "top5": feats[:5],
            **({"resampled": r["resampled"]} if r.get("resampled") else {}),  # a bootstrap of whole groups
        })
    frame = pd.DataFrame(rows)
    values = frame[metric].dropna().to_numpy(dtype=float) if len(frame) else np.array([])
    top5 = frame["top5_overlap"].dropna().to_numpy(dtype=float) if len(frame) else np.array([])
    top10 = frame["top10_overlap"].dropna().to_numpy(dtype=float) if len(frame) else np.array([])
    rho = frame["rank_correlation"].dropna().to_numpy(dtype=float) if len(frame) else np.array([])

    def spread(v: np.ndarray) -> dict[str, float] | None:
        if not len(v):
            return None
        return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                "min": float(v.min()), "max": float(v.max())}

    mean5 = float(top5.mean()) if len(top5) else None
    return {
        "metric": metric,
        "reference_metric": reference_metric,
        "reference_top": reference_top[:10],
        "n_perturbations": len(runs),
        "metric_spread": spread(values),
        "top5_overlap": spread(top5),
        "top10_overlap": spread(top10),
        "rank_correlation": spread(rho),
        "unstable": bool(mean5 is not None and mean5 < UNSTABLE_TOP5),
        "rule": f"a conclusion is flagged unstable when the mean top-5 overlap with the original model's SHAP "
                f"ranking falls under {UNSTABLE_TOP5}",
        "thresholds": {"unstable_top5": UNSTABLE_TOP5},
        "runs": rows,
    }
