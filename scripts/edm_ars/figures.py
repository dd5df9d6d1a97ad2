"""Result figures (matplotlib, headless): written as PDF for LaTeX; and what every figure of the run shares:
labels wrapped rather than cut (:func:`wrap_label`), a check that no text leaves the figure (:func:`texts_outside`)
and a save that cannot clip (:func:`save_figure`)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

plt.rcParams.update({"font.size": 8, "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"})

ELLIPSIS = "\u2026"
AXIS_LABEL_WIDTH = 40  # an axis label that names a model, wrapped (8-point text along a 3-inch side)
LEGEND_WIDTH = 36  # a legend entry that names a model (6-point text inside a 3-inch axes)


# ---- labels and layout shared by the figures -------------------------------------------------------
def wrap_label(text: Any, width: int, max_lines: int) -> str:
    """A label wrapped at spaces and hyphens into lines of at most `width` characters. All of it is kept when it
    fits in `max_lines` lines; only a longer one is cut, after its last whole word that fits, with an ellipsis."""
    lines = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    if len(lines) <= max_lines:
        return "\n".join(lines)
    last = lines[max_lines - 1]
    while len(last) + 1 > width and " " in last:
        last = last.rsplit(" ", 1)[0]
    return "\n".join(lines[: max_lines - 1] + [last[: width - 1].rstrip() + ELLIPSIS])


def n_lines(label: str) -> int:
    return label.count("\n") + 1


def _not_drawn(fig: Any) -> set[int]:
    """Texts a draw leaves out: the tick and axis labels of axes drawn without their axes (ax.axis("off")), and the
    labels of ticks outside the axis' view (matplotlib keeps them, at stale places, but does not draw them)."""
    out = set()
    for ax in fig.findobj(Axes):
        for axis in (ax.xaxis, ax.yaxis):
            if not ax.axison:
                out |= {id(t) for t in axis.findobj(Text)}
                continue
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * max(1.0, abs(hi - lo))
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - slack <= tick.get_loc() <= hi + slack:
                    out |= {id(tick.label1), id(tick.label2)}
    return out


def texts_outside(fig: Any, tolerance: float = 0.5) -> list[str]:
    """The visible, non-empty texts of `fig` whose extent, once drawn, leaves the figure (what a plain savefig
    would cut off), each as its text; [] when everything fits."""
    fig.canvas.draw()
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    out, hidden = [], _not_drawn(fig)
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or id(t) in hidden:
            continue
        bb = t.get_window_extent(renderer)
        if (bb.x0 < box.x0 - tolerance or bb.y0 < box.y0 - tolerance or bb.x1 > box.x1 + tolerance
                or bb.y1 > box.y1 + tolerance):
            out.append(t.get_text())
    return out


def fit_text(fig: Any, artist: Text, full: Any, width: int, max_lines: int) -> None:
    """Wrap `full` into `artist` (a title, a label): see :func:`fit_texts`."""
    fit_texts(fig, [(artist, full)], width, max_lines)


def fit_texts(fig: Any, texts: list[tuple[Text, Any]], width: int, max_lines: int) -> None:
    """Wrap each `full` text into its artist at `width` characters, narrower while the drawn text would leave
    the figure, down to a third of `width`. The layout is redone once per try for all texts that still stick
    out (a constrained layout is the costly part of a draw)."""
    pending = list(texts)
    for w in range(width, max(width // 3, 8) - 1, -2):
        for artist, full in pending:
            artist.set_text(wrap_label(full, w, max_lines))
        fig.draw_without_rendering()
        box = fig.bbox
        pending = [(a, f) for a, f in pending
                   if not (a.get_window_extent().x0 >= box.x0 and a.get_window_extent().x1 <= box.x1)]
        if not pending:
            return


def save_figure(fig: Any, path: Path, dpi: int | None = None) -> None:
    """Save and close: the bounding box is the drawn content (bbox_inches="tight"), so even a layout that let a text
    out of the figure cannot cut it; no timestamps, so that a rerun writes the same file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", pad_inches=0.02, metadata={"CreationDate": None, "ModDate": None})
    plt.close(fig)


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, metadata={"CreationDate": None, "ModDate": None})
    plt.close(fig)


def roc_figure(y: np.ndarray, predictions: dict[str, np.ndarray], labels: dict[str, str],
               aucs: dict[str, float], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    for name, prob in predictions.items():
        fpr, tpr, _ = roc_curve(y, prob)
        ax.plot(fpr, tpr, lw=1.2, label=f"{wrap_label(labels[name], LEGEND_WIDTH, 2)} (AUC {aucs[name]:.3f})")
    ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=0.8)
    ax.set_xlabel("False-positive rate")
    ax.set_ylabel("True-positive rate")
    ax.legend(loc="lower right", fontsize=6, frameon=False)
    _save(fig, path)


def calibration_figure(y: np.ndarray, prob: np.ndarray, label: str, path: Path, bins: int = 10) -> None:
    edges = np.quantile(prob, np.linspace(0, 1, bins + 1))
    idx = np.clip(np.searchsorted(edges, prob, side="right") - 1, 0, bins - 1)
    mean_pred = np.array([prob[idx == b].mean() for b in range(bins) if (idx == b).any()])
    mean_obs = np.array([y[idx == b].mean() for b in range(bins) if (idx == b).any()])
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=0.8)
    ax.plot(mean_pred, mean_obs, marker="o", ms=3, lw=1.2, label=wrap_label(label, LEGEND_WIDTH, 2))
    ax.set_xlabel("Mean predicted probability (decile)")
    ax.set_ylabel("Observed proportion")
    ax.legend(loc="upper left", fontsize=6, frameon=False)
    _save(fig, path)


def observed_predicted_figure(y: np.ndarray, pred: np.ndarray, label: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.scatter(y, pred, s=2, alpha=0.3, rasterized=True)
    lo, hi = float(min(y.min(), pred.min())), float(max(y.max(), pred.max()))
    ax.plot([lo, hi], [lo, hi], ls=":", color="grey", lw=0.8)
    ax.set_xlabel("Observed")
    ax.set_ylabel(wrap_label(f"Predicted ({label})", AXIS_LABEL_WIDTH, 2))
    _save(fig, path)


def residual_figure(y: np.ndarray, pred: np.ndarray, label: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.scatter(pred, y - pred, s=2, alpha=0.3, rasterized=True)
    ax.axhline(0, ls=":", color="grey", lw=0.8)
    ax.set_xlabel(wrap_label(f"Predicted ({label})", AXIS_LABEL_WIDTH, 2))
    ax.set_ylabel("Residual")
    _save(fig, path)
