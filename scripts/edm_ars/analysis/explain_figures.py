"""The SHAP figures (edm_ars.analysis.explain): the importance bars (:func:`importance_figure`: mean |SHAP| per
source variable, largest at the top, coloured by direction) and the beeswarm-like summary (:func:`summary_figure`:
a point per explained student at its summed SHAP value, coloured by the predictor's value); each saved as PDF and
PNG, returning what the drawn figure shows (edm_ars.analysis.figures.figure_facts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from edm_ars.analysis.explain import as_matrix, top_features  # noqa: E402
from edm_ars.analysis.figure_sanity import RANKING  # noqa: E402
from edm_ars.analysis.figures import REFERENCE, fit_text, n_lines, save_figure, wrap_label  # noqa: E402

_RC = {"font.size": 7, "axes.titlesize": 8, "axes.labelsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7,
       "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"}
_POSITIVE, _NEGATIVE, _MIXED = "#c0392b", "#2e6da4", "#8c8c8c"

#: tick labels are wrapped to LABEL_LINES lines of LABEL_WIDTH characters (an ellipsis only beyond), titles likewise
LABEL_WIDTH, LABEL_LINES = 30, 3
TITLE_WIDTH, TITLE_LINES = 50, 3
FIGURE_WIDTH = 3.3  # inches: one ACM column


def _labels(texts: list[str]) -> tuple[list[str], float]:
    """The wrapped tick labels, and the height in inches of a row that holds the tallest of them."""
    wrapped = [wrap_label(t, LABEL_WIDTH, LABEL_LINES) for t in texts]
    return wrapped, 0.06 + 0.115 * max((n_lines(w) for w in wrapped), default=1)


def importance_plot(top: list[dict], title: str | None = None, xlabel: str = "Mean |SHAP value|") -> Any:
    """The figure of :func:`importance_figure` (not saved): every text inside the figure, none cut."""
    colours = {"positive": _POSITIVE, "negative": _NEGATIVE}
    with plt.rc_context(_RC):
        items = list(reversed(top))
        labels, row = _labels([t.get("label") or t["feature"] for t in items])
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, max(3.0, 0.9 + row * len(items))), layout="constrained")
        ax.set_gid(RANKING)  # the rows are ranked (largest at the top): recorded with the figure's facts
        y = np.arange(len(items))
        ax.barh(y, [t["mean_abs_shap"] for t in items], height=0.65,
                color=[colours.get(t.get("direction"), _MIXED) for t in items])
        ax.set_yticks(y, labels)
        ax.set_xlabel(xlabel)
        ax.set_ylim(-0.6, max(len(items), 1) - 0.4)
        ax.spines[["top", "right"]].set_visible(False)
        present = [d for d in ("positive", "negative", "mixed") if any(t.get("direction") == d for t in items)]
        if present:
            from matplotlib.patches import Patch

            ax.legend(handles=[Patch(color=colours.get(d, _MIXED), label=d) for d in present], loc="lower right",
                      fontsize=6, frameon=False, title="direction", title_fontsize=6)
        if title:  # over the bars, wrapped to fit the figure
            fit_text(fig, ax.set_title(title), title, TITLE_WIDTH, TITLE_LINES)
        fig.draw_without_rendering()  # ticks and layout made under these settings
    return fig


def importance_figure(top: list[dict], path: Path, title: str | None = None,
                      xlabel: str = "Mean |SHAP value|") -> dict[str, Any]:
    """Horizontal bars of mean |SHAP| per source variable, largest at the top, coloured by direction; saved as PDF
    and PNG; returns what the drawn figure shows (figures.figure_facts)."""
    return save_figure(importance_plot(top, title, xlabel), path, dpi=300)


def _swarm_offsets(x: np.ndarray, width: float = 0.38, bins: int = 60) -> np.ndarray:
    """Deterministic beeswarm-like vertical offsets: points sharing a histogram bin spread alternately up and down,
    scaled by the densest bin."""
    if len(x) == 0:
        return np.zeros(0)
    lo, hi = float(np.min(x)), float(np.max(x))
    b = np.zeros(len(x), dtype=int) if hi <= lo else np.clip(((x - lo) / (hi - lo) * bins).astype(int), 0, bins - 1)
    offsets = np.zeros(len(x))
    order = np.lexsort((x, b))
    counts = np.bincount(b, minlength=bins)
    scale = width / max(counts.max() / 2, 1)
    position = np.zeros(bins, dtype=int)
    for i in order:
        r = position[b[i]]
        position[b[i]] += 1
        offsets[i] = ((r + 1) // 2) * (1 if r % 2 else -1) * scale
    return offsets


def summary_plot(shap: np.ndarray, X: pd.DataFrame, feature_sources: dict[str, str], labels: dict[str, str] | None,
                 k: int = 10, xlabel: str = "SHAP value") -> Any:
    """The figure of :func:`summary_figure` (not saved): every text inside the figure, none cut."""
    shap = as_matrix(shap, len(X), X.shape[1])
    top = top_features(shap, X, feature_sources, labels, k=k)
    index = {c: j for j, c in enumerate(X.columns)}
    cmap = plt.get_cmap("coolwarm")
    with plt.rc_context(_RC):
        ticks, row = _labels([t["label"] for t in reversed(top)])
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, max(3.0, 0.9 + row * len(top))), layout="constrained")
        ax.set_gid(RANKING)  # the rows are ranked (largest at the top): recorded with the figure's facts
        xs, ys, zs = [], [], []
        for i, t in enumerate(reversed(top)):
            idx = [index[c] for c in t["columns"]]
            s = shap[:, idx].sum(axis=1)
            xs.append(s)
            ys.append(i + _swarm_offsets(s))
            if len(idx) == 1:
                v = X.iloc[:, idx[0]].to_numpy(dtype=float)
                sd = np.nanstd(v)
                zs.append(np.clip((v - np.nanmean(v)) / sd, -2, 2) if sd > 0 else np.zeros_like(v))
            else:  # a group of one-hot columns: no single value to colour by (grey, the colour map's "bad")
                zs.append(np.full(len(s), np.nan))
        z = np.concatenate(zs) if zs else np.zeros(0)
        # one series: every point (a test student's summed SHAP value in a predictor's row), drawn row by row
        points = ax.scatter(np.concatenate(xs) if xs else z, np.concatenate(ys) if ys else z, c=z,
                            cmap=cmap.with_extremes(bad=_MIXED), vmin=-2, vmax=2, s=1.5, lw=0,
                            rasterized=True, plotnonfinite=True)
        scatter = points if np.isfinite(z).any() else None
        ax.axvline(0, color="black", lw=0.5, gid=REFERENCE)
        ax.set_yticks(np.arange(len(top)), ticks)
        ax.set_ylim(-0.6, max(len(top), 1) - 0.4)
        ax.set_xlabel(xlabel)
        ax.spines[["top", "right"]].set_visible(False)
        if scatter is not None:
            bar = fig.colorbar(scatter, ax=ax, pad=0.02, fraction=0.05, aspect=30, ticks=[-2, 2])
            bar.ax.set_yticklabels(["low", "high"])
            bar.set_label("Feature value (grey: categorical)", fontsize=6)
            bar.ax.tick_params(labelsize=6, length=0)
            bar.outline.set_visible(False)
        fig.draw_without_rendering()
    return fig


def summary_figure(shap: np.ndarray, X: pd.DataFrame, feature_sources: dict[str, str],
                   labels: dict[str, str] | None, path: Path, k: int = 10, xlabel: str = "SHAP value"
                   ) -> dict[str, Any]:
    """Beeswarm-like summary: one row per source variable (top k by mean |summed SHAP|), a point per explained row
    at its summed SHAP value, coloured by the standardized value of a single-column source and grey for a group
    of one-hot columns; saved as PDF and PNG; returns what the drawn figure shows (figures.figure_facts)."""
    return save_figure(summary_plot(shap, X, feature_sources, labels, k=k, xlabel=xlabel), path, dpi=300)
