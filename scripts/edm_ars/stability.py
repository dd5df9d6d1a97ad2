"""Stability under perturbation (the predictability-computability-stability view): pure functions.

Each perturbation refits the interpreted model family with its tuned parameters on perturbed
training data, scores it on the same test students and ranks its SHAP features; agreement with
the original top features says whether the substantive conclusion is stable."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .conventions import UNSTABLE_TOP5


def perturbations(cfg: dict[str, Any]) -> list[str]:
    """Names of the perturbation jobs configured: impute_<method>, bootstrap_<k>, seed_<k>."""
    names = [f"impute_{m}" for m in cfg.get("imputation", [])]
    names += [f"bootstrap_{k}" for k in range(1, int(cfg.get("bootstrap", 0)) + 1)]
    names += [f"seed_{k}" for k in range(1, int(cfg.get("seeds", 0)) + 1)]
    return names


def bootstrap_rows(n: int, k: int, seed: int) -> np.ndarray:
    """Training rows of bootstrap perturbation k (sampled with replacement, seeded)."""
    return np.random.default_rng(seed + 7919 * k).integers(0, n, n)


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
