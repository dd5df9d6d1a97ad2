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
    resamples at a time and joined: memory bounded by CHUNK_CELLS, not by B x n. What the metric needs of (y, pred)
    alone (the sort by score) is done once, not once a block: the cost is linear in the test rows."""
    step = _step(counts.shape[1])
    prepared = _PREPARED[fn](y, pred) if fn in _PREPARED else (lambda w: fn(y, pred, w))
    parts = [prepared(counts[i:i + step]) for i in range(0, counts.shape[0], step)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)


def prepare_binary(y: np.ndarray, prob: np.ndarray, threshold: float = 0.5) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """binary_metrics for fixed (y, prob) as a function of the weight matrix w (B x n, any non-negative numbers,
    e.g. compact bootstrap counts).

    Each class's columns are ordered once by score. Per block of resamples: the negatives' cumulative weight in
    that order, read at each positive's score (below it, and up to it: ties count one half), gives the AUC; the
    confusion counts at the threshold are prefix sums of each class's order; the Brier score is a product with the
    squared errors. Integer weights (bootstrap counts) are summed as integers, so those sums are exact."""
    y = np.asarray(y, dtype=float)
    prob = np.asarray(prob, dtype=float)
    pos_rows, neg_rows = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    pos_rows = pos_rows[np.argsort(prob[pos_rows], kind="mergesort")]
    neg_rows = neg_rows[np.argsort(prob[neg_rows], kind="mergesort")]
    sp, sn = prob[pos_rows], prob[neg_rows]
    below, upto = np.searchsorted(sn, sp, side="left"), np.searchsorted(sn, sp, side="right")
    p_under, n_under = int(np.searchsorted(sp, threshold, side="left")), int(np.searchsorted(sn, threshold, side="left"))
    sq_p, sq_n = (sp - 1.0) ** 2, sn ** 2

    def apply(w: np.ndarray) -> dict[str, np.ndarray]:
        w = np.asarray(w)
        acc = np.int64 if np.issubdtype(w.dtype, np.integer) else np.float64
        wp, wn = np.take(w, pos_rows, axis=1), np.take(w, neg_rows, axis=1)
        cum_n = np.zeros((w.shape[0], len(neg_rows) + 1), dtype=acc)
        np.cumsum(wn, axis=1, dtype=acc, out=cum_n[:, 1:])
        twice = np.take(cum_n, below, axis=1) + np.take(cum_n, upto, axis=1)  # 2 x (negatives below + half the ties)
        pos, neg = wp.sum(axis=1, dtype=acc), cum_n[:, -1]
        auc = _safe_div(np.einsum("ij,ij->i", wp.astype(acc, copy=False), twice) / 2.0, pos * neg)
        fn, tn = wp[:, :p_under].sum(axis=1, dtype=acc), cum_n[:, n_under]
        tp, fp = pos - fn, neg - tn
        n = pos + neg
        precision = _safe_div(tp, tp + fp)
        recall = _safe_div(tp, tp + fn)
        specificity = _safe_div(tn, tn + fp)
        return {
            "auc": auc,
            "accuracy": (tp + tn) / n,
            "precision": precision,
            "recall": recall,
            "f1": _safe_div(2 * precision * recall, precision + recall),
            "balanced_accuracy": (recall + specificity) / 2,
            "brier": (wp.astype(np.float64) @ sq_p + wn.astype(np.float64) @ sq_n) / n,
        }

    return apply


def binary_metrics(y: np.ndarray, prob: np.ndarray, w: np.ndarray, threshold: float = 0.5) -> dict[str, np.ndarray]:
    """The binary metrics (labels 0/1) for each row of the weight matrix w (B x n)."""
    return prepare_binary(y, prob, threshold)(w)


def _regression(y: np.ndarray, pred: np.ndarray) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """regression_metrics for fixed (y, pred) as a function of the weight matrix: one product with the per-row
    terms (y centred first, so the total sum of squares is computed without cancellation)."""
    y = np.asarray(y, dtype=float)
    resid = y - np.asarray(pred, dtype=float)
    yc = y - (y.mean() if len(y) else 0.0)
    terms = np.column_stack([resid ** 2, np.abs(resid), yc, yc ** 2])

    def apply(w: np.ndarray) -> dict[str, np.ndarray]:
        wf = np.asarray(w, dtype=np.float64)
        s, n = wf @ terms, wf.sum(axis=1)
        total = np.maximum(s[:, 3] - _safe_div(s[:, 2] ** 2, n), 0.0)
        return {
            "rmse": np.sqrt(s[:, 0] / n),
            "mae": s[:, 1] / n,
            "r2": 1 - _safe_div(s[:, 0], total),
        }

    return apply


def regression_metrics(y: np.ndarray, pred: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """The regression metrics for each row of the weight matrix w (B x n)."""
    return _regression(y, pred)(w)


_PREPARED: dict[Callable[..., dict[str, np.ndarray]], Callable[..., Callable[[np.ndarray], dict[str, np.ndarray]]]] = {
    binary_metrics: prepare_binary, regression_metrics: _regression}


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
