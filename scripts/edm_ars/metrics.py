"""Held-out metrics and vectorized bootstrap confidence intervals.

Bootstrap resamples are represented by a (B x n) matrix of multinomial counts, so every metric
over all resamples is a handful of matrix operations instead of B Python-level metric calls.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

BINARY_METRICS = ["auc", "accuracy", "precision", "recall", "f1", "balanced_accuracy", "brier"]
REGRESSION_METRICS = ["rmse", "mae", "r2"]
PRIMARY = {"binary_classification": "auc", "regression": "r2"}
HIGHER_IS_BETTER = {"auc": True, "accuracy": True, "precision": True, "recall": True, "f1": True,
                    "balanced_accuracy": True, "brier": False, "rmse": False, "mae": False, "r2": True}


#: cells (resamples x rows) of a count matrix handled at a time: the draws and every metric over all resamples
#: then need a few times this many floats of memory, whatever the size of the test set
CHUNK_CELLS = 2_000_000


def compact_counts(counts: np.ndarray) -> np.ndarray:
    """Counts (non-negative integers) in the smallest unsigned integer type that holds them: a count matrix of a
    large test set takes one byte a cell instead of eight (the metrics turn a block at a time into floats)."""
    counts = np.asarray(counts)
    top = int(counts.max()) if counts.size else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return counts.astype(dtype)
    return counts.astype(np.uint64)


def _step(n: int) -> int:
    """Resamples per block for a test set of n rows."""
    return max(1, CHUNK_CELLS // max(n, 1))


def bootstrap_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """A (B x n) matrix: how often each test row appears in each bootstrap resample (compact integers). Drawn a
    block of resamples at a time from one generator: the same draws as one call for all B."""
    rng = np.random.default_rng(seed)
    p = np.full(n, 1.0 / n)
    step = _step(n)
    blocks = [compact_counts(rng.multinomial(n, p, size=min(step, n_resamples - i)))
              for i in range(0, n_resamples, step)]
    return compact_counts(np.concatenate(blocks)) if blocks else np.zeros((0, n), dtype=np.uint8)


def cluster_bootstrap_counts(groups: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """A (B x n) matrix for a cluster bootstrap (compact integers): each resample draws as many clusters as there
    are, with replacement, and every row counts as often as its cluster was drawn. With one row per cluster this
    is the ordinary bootstrap (though not the same draws as bootstrap_counts)."""
    _, codes = np.unique(np.asarray(groups), return_inverse=True)
    k = int(codes.max()) + 1 if len(codes) else 0
    rng = np.random.default_rng(seed)
    drawn = compact_counts(rng.multinomial(k, np.full(k, 1.0 / k), size=n_resamples))
    return drawn[:, codes]


def over_resamples(fn: Callable[..., dict[str, np.ndarray]], y: np.ndarray, pred: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """fn(y, pred, w) (binary_metrics or regression_metrics) for every row of the count matrix, computed a block of
    resamples at a time (as floats) and joined: memory bounded by CHUNK_CELLS, not by B x n."""
    step = _step(counts.shape[1])
    parts = [fn(y, pred, np.asarray(counts[i:i + step], dtype=np.float64)) for i in range(0, counts.shape[0], step)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)


def weighted_auc(y: np.ndarray, score: np.ndarray, w: np.ndarray) -> np.ndarray:
    """AUC (ties count one half) for each row of the weight matrix w (B x n)."""
    order = np.argsort(score, kind="mergesort")
    s, yy, ww = score[order], y[order], w[:, order]
    starts = np.r_[0, np.flatnonzero(np.diff(s)) + 1]
    neg = np.add.reduceat(ww * (yy == 0), starts, axis=1)
    pos = np.add.reduceat(ww * (yy == 1), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    num = (pos * (below + 0.5 * neg)).sum(axis=1)
    return _safe_div(num, pos.sum(axis=1) * neg.sum(axis=1))


def binary_metrics(y: np.ndarray, prob: np.ndarray, w: np.ndarray, threshold: float = 0.5) -> dict[str, np.ndarray]:
    y = y.astype(float)
    pred = (prob >= threshold).astype(float)
    n = w.sum(axis=1)
    tp = w @ (pred * y)
    fp = w @ (pred * (1 - y))
    fn = w @ ((1 - pred) * y)
    tn = w @ ((1 - pred) * (1 - y))
    precision = _safe_div(tp, tp + fp)
    recall = _safe_div(tp, tp + fn)
    specificity = _safe_div(tn, tn + fp)
    return {
        "auc": weighted_auc(y, prob, w),
        "accuracy": (tp + tn) / n,
        "precision": precision,
        "recall": recall,
        "f1": _safe_div(2 * precision * recall, precision + recall),
        "balanced_accuracy": (recall + specificity) / 2,
        "brier": (w @ (prob - y) ** 2) / n,
    }


def regression_metrics(y: np.ndarray, pred: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    n = w.sum(axis=1)
    resid2 = w @ (y - pred) ** 2
    mean = (w @ y) / n
    total = (w * (y[None, :] - mean[:, None]) ** 2).sum(axis=1)
    return {
        "rmse": np.sqrt(resid2 / n),
        "mae": (w @ np.abs(y - pred)) / n,
        "r2": 1 - _safe_div(resid2, total),
    }


def evaluate(task: str, y: np.ndarray, pred: np.ndarray, n_resamples: int = 1000, seed: int = 42,
             counts: np.ndarray | None = None) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Point estimates on the full test set and 95% percentile bootstrap intervals."""
    y = np.asarray(y, dtype=float)
    pred = np.asarray(pred, dtype=float)
    fn = binary_metrics if task == "binary_classification" else regression_metrics
    point = {k: float(v[0]) for k, v in fn(y, pred, np.ones((1, len(y)))).items()}
    if counts is None:
        counts = bootstrap_counts(len(y), n_resamples, seed)
    boot = over_resamples(fn, y, pred, counts)
    ci = {k: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] for k, v in boot.items()}
    return point, ci
