"""Result figures (matplotlib, headless): written as PDF for LaTeX with a PNG rendering next to it (same stem, for
the model Critic); and what every figure of the run shares: labels wrapped rather than cut (:func:`wrap_label`), a
check that no text leaves the figure (:func:`texts_outside`), a save that cannot clip (:func:`save_figure`), and the
record of what a drawn figure shows (:func:`figure_facts`: titles, axis labels, legend entries, categories in their
drawn order, the series plotted), read from its matplotlib objects and checked by the Critic
(edm_ars.analysis.figure_sanity)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.category import StrCategoryConverter  # noqa: E402
from matplotlib.container import Container  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FixedFormatter, FixedLocator  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

plt.rcParams.update({"font.size": 8, "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"})

ELLIPSIS = "\u2026"
AXIS_LABEL_WIDTH = 40  # an axis label that names a model, wrapped (8-point text along a 3-inch side)
LEGEND_WIDTH = 36  # a legend entry that names a model (6-point text inside a 3-inch axes)
PNG_DPI = 150  # the PNG next to each PDF: ~500 pixels across a 3.3-inch column, a few hundred kB at most
REFERENCE = "reference"  # the gid of a guide line (chance diagonal, zero line, whole-sample marker): not a series
#: no date (PDF) and no software version (PNG) in a figure file, so that the same inputs write the same bytes
PDF_METADATA = {"CreationDate": None, "ModDate": None}
PNG_METADATA = {"Software": None}


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


def png_path(path: Path) -> Path:
    """The PNG rendering of a figure file: the same stem, next to it."""
    return Path(path).with_suffix(".png")


def _write(fig: Any, path: Path, dpi: int | None, **kw: Any) -> dict[str, Any]:
    """Write `fig` to `path` (its format from the suffix) and, for a PDF, a PNG rendering next to it at PNG_DPI;
    returns what the drawn figure shows (:func:`figure_facts`) and closes it. No dates, no software version in
    either file, so that a rerun on the same inputs writes the same bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf = path.suffix.lower() == ".pdf"
    fig.savefig(path, dpi=dpi, metadata=PDF_METADATA if pdf else PNG_METADATA if path.suffix.lower() == ".png"
                else None, **kw)
    if pdf:
        fig.savefig(png_path(path), dpi=PNG_DPI, metadata=PNG_METADATA, **kw)
    facts = figure_facts(fig)
    plt.close(fig)
    return facts


def save_figure(fig: Any, path: Path, dpi: int | None = None) -> dict[str, Any]:
    """Save (PDF and its PNG) and close; returns the figure's facts. The bounding box is the drawn content
    (bbox_inches="tight"), so even a layout that let a text out of the figure cannot cut it."""
    return _write(fig, path, dpi, bbox_inches="tight", pad_inches=0.02)


def _save(fig, path: Path) -> dict[str, Any]:
    fig.tight_layout()
    return _write(fig, path, None)


# ---- what a drawn figure shows -----------------------------------------------------------------
def _text(t: Any) -> str:
    return t.get_text() if hasattr(t, "get_text") else str(t or "")


def _label(artist: Any) -> str | None:
    """An artist's legend label; None for matplotlib's unlabelled ones ("_child0", "_nolegend_")."""
    label = str(artist.get_label() or "")
    return None if not label or label.startswith("_") else label


def _is_number(text: str) -> bool:
    try:
        float(text.replace("\u2212", "-").rstrip("%").strip())
    except ValueError:
        return False
    return True


def _axis_facts(ax: Axes, axis: Any, siblings: list[int]) -> dict[str, Any]:
    """An axis: its label, whether it is categorical or numeric, the categories in the order of their positions
    (left to right, bottom to top), the axes it is shared with. An axis is categorical when its tick labels are
    fixed texts (set with the ticks, or a FixedFormatter) that are not numbers, or when it plots strings."""
    lo, hi = sorted(axis.get_view_interval())
    ticks = sorted((tick.get_loc(), tick.label1.get_text()) for tick in axis.get_major_ticks()
                   if lo - 1e-9 <= tick.get_loc() <= hi + 1e-9 and tick.label1.get_text().strip())
    fixed = isinstance(axis.get_major_formatter(), FixedFormatter) or isinstance(axis.get_major_locator(),
                                                                                 FixedLocator)
    categorical = isinstance(axis.get_converter(), StrCategoryConverter) or (
        fixed and any(not _is_number(t) for _, t in ticks))
    out: dict[str, Any] = {"label": axis.get_label_text(), "kind": "categorical" if categorical else "numeric"}
    if categorical:
        out["categories"] = [t for _, t in ticks]
    out["shared_with"] = siblings
    return out


def _flatten(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [a for x in obj for a in _flatten(x)]
    return [] if obj is None else [obj]


def _series(ax: Axes) -> list[dict[str, Any]]:
    """The data series drawn in `ax`: each container (bars, error bars) is one series, and each line or
    collection outside a container, except guides (gid REFERENCE)."""
    out, inside = [], set()
    for c in ax.containers:
        parts = _flatten(list(c)) if isinstance(c, Container) else []
        inside |= {id(a) for a in parts}
        kind = type(c).__name__.replace("Container", "").lower() or "container"
        out.append({"kind": kind, "label": _label(c), "n": len(c) if kind == "bar" else None})
    for a in [*ax.get_lines(), *ax.collections]:
        if id(a) in inside or a.get_gid() == REFERENCE:
            continue
        if hasattr(a, "get_offsets"):
            out.append({"kind": "scatter", "label": _label(a), "n": int(len(a.get_offsets()))})
        else:
            out.append({"kind": "line", "label": _label(a), "n": int(len(a.get_xdata()))})
    return out


def _legend(legend: Any) -> dict[str, Any] | None:
    if legend is None or not legend.get_visible():
        return None
    return {"title": _text(legend.get_title()), "entries": [t.get_text() for t in legend.get_texts()]}


def figure_facts(fig: Any) -> dict[str, Any]:
    """What a reader checks on the drawn figure, read from its matplotlib objects (after a draw): per axes its
    titles, axis labels, categories in their drawn order, legend and the series plotted; each colour bar's
    label; the figure's own legends. An axes' gid (set where it is drawn, e.g. the attribute a fairness panel
    shows) is kept as its `panel`."""
    fig.draw_without_rendering()
    plain = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    index = {id(ax): i for i, ax in enumerate(plain)}
    axes = []
    for ax in plain:
        def shared(group: Any, ax: Axes = ax) -> list[int]:
            return sorted(index[id(o)] for o in group.get_siblings(ax) if o is not ax and id(o) in index)

        titles = [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        axes.append({
            "panel": ax.get_gid(), "drawn": bool(ax.axison), "title": " ".join(t for t in titles if t),
            "x": _axis_facts(ax, ax.xaxis, shared(ax.get_shared_x_axes())),
            "y": _axis_facts(ax, ax.yaxis, shared(ax.get_shared_y_axes())),
            "legend": _legend(ax.get_legend()), "series": _series(ax),
            "texts": [t.get_text() for t in ax.texts if t.get_visible() and t.get_text().strip()]})
    bars = [{"label": cb.ax.get_ylabel() if cb.orientation == "vertical" else cb.ax.get_xlabel()}
            for cb in (getattr(ax, "_colorbar", None) for ax in fig.axes) if cb is not None]
    return {"axes": axes, "colorbars": bars, "legends": [x for x in map(_legend, fig.legends) if x]}


def roc_figure(y: np.ndarray, predictions: dict[str, np.ndarray], labels: dict[str, str],
               aucs: dict[str, float], path: Path) -> dict[str, Any]:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    for name, prob in predictions.items():
        fpr, tpr, _ = roc_curve(y, prob)
        ax.plot(fpr, tpr, lw=1.2, label=f"{wrap_label(labels[name], LEGEND_WIDTH, 2)} (AUC {aucs[name]:.3f})")
    ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=0.8, gid=REFERENCE)
    ax.set_xlabel("False-positive rate")
    ax.set_ylabel("True-positive rate")
    ax.legend(loc="lower right", fontsize=6, frameon=False)
    return _save(fig, path)


def calibration_figure(y: np.ndarray, prob: np.ndarray, label: str, path: Path, bins: int = 10) -> dict[str, Any]:
    edges = np.quantile(prob, np.linspace(0, 1, bins + 1))
    idx = np.clip(np.searchsorted(edges, prob, side="right") - 1, 0, bins - 1)
    mean_pred = np.array([prob[idx == b].mean() for b in range(bins) if (idx == b).any()])
    mean_obs = np.array([y[idx == b].mean() for b in range(bins) if (idx == b).any()])
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=0.8, gid=REFERENCE)
    ax.plot(mean_pred, mean_obs, marker="o", ms=3, lw=1.2, label=wrap_label(label, LEGEND_WIDTH, 2))
    ax.set_xlabel("Mean predicted probability (decile)")
    ax.set_ylabel("Observed proportion")
    ax.legend(loc="upper left", fontsize=6, frameon=False)
    return _save(fig, path)


def observed_predicted_figure(y: np.ndarray, pred: np.ndarray, label: str, path: Path) -> dict[str, Any]:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.scatter(y, pred, s=2, alpha=0.3, rasterized=True)
    lo, hi = float(min(y.min(), pred.min())), float(max(y.max(), pred.max()))
    ax.plot([lo, hi], [lo, hi], ls=":", color="grey", lw=0.8, gid=REFERENCE)
    ax.set_xlabel("Observed")
    ax.set_ylabel(wrap_label(f"Predicted ({label})", AXIS_LABEL_WIDTH, 2))
    return _save(fig, path)


def residual_figure(y: np.ndarray, pred: np.ndarray, label: str, path: Path) -> dict[str, Any]:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.scatter(pred, y - pred, s=2, alpha=0.3, rasterized=True)
    ax.axhline(0, ls=":", color="grey", lw=0.8, gid=REFERENCE)
    ax.set_xlabel(wrap_label(f"Predicted ({label})", AXIS_LABEL_WIDTH, 2))
    ax.set_ylabel("Residual")
    return _save(fig, path)
