"""The fairness audit's figures (edm_ars.analysis.fairness): the audit's primary metric per reliable group with its
95% interval, one panel per attribute (:func:`fairness_figure`), and, for a binary outcome, the calibration of the
selected model per group (:func:`group_calibration_curves`, :func:`calibration_group_figure`); each saved as PDF and
PNG, returning what the drawn figure shows (edm_ars.analysis.figures.figure_facts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from edm_ars.analysis.fairness import METRIC_NAMES  # noqa: E402
from edm_ars.analysis.fairness_groups import _grouping  # noqa: E402
from edm_ars.analysis.figure_sanity import ordered_groups  # noqa: E402
from edm_ars.analysis.figures import REFERENCE, fit_texts, n_lines, save_figure, wrap_label  # noqa: E402
from edm_ars.data.registry import code_key  # noqa: E402

#: group labels are wrapped to LABEL_LINES lines of LABEL_WIDTH characters, panel titles (the attribute's label) to
#: TITLE_LINES lines of at most TITLE_WIDTH (narrower when the panel is); an ellipsis only beyond that
LABEL_WIDTH, LABEL_LINES = 28, 3
TITLE_WIDTH, TITLE_LINES = 60, 2


_LINE_IN = 0.115  # inches per line of 7-point text


def _panels(audit_result: dict[str, Any], attributes: list[str] | None) -> list[tuple[str, list[dict[str, Any]]]]:
    """(attribute, its reliable groups with a metric) for each attribute shown (intersections left out): the
    groups of an ordered attribute (quintiles, grades: figure_sanity.ordered_groups) in their order from the
    bottom up, a nominal attribute's by metric."""
    attrs = audit_result.get("attributes", {})
    names = ([a for a in attributes if a in attrs] if attributes is not None
             else [a for a, r in attrs.items() if r["kind"] == "attribute"])
    panels = []
    for a in names:
        gs = [g for g in attrs[a]["groups"] if g["reliable"] and g["metric"] is not None]
        order = ordered_groups(attrs[a])
        if gs:
            panels.append((a, sorted(gs, key=lambda g: order.index(str(g["group"]))) if order is not None
                           else sorted(gs, key=lambda g: (g["metric"], g["group"]))))
    return panels


def n_suffix(n: Any) -> str:
    """The group size a figure shows beside a group's name (figure_sanity.shows ignores it)."""
    return f"(n = {int(n):,})"


def _metric_axis_label(audit_result: dict[str, Any]) -> str:
    primary = audit_result.get("primary_metric", "")
    metric = METRIC_NAMES.get(primary, str(primary))
    boot = "cluster bootstrap" if audit_result.get("bootstrap") == "cluster" else "bootstrap"
    if audit_result.get("task") == "regression":
        return f"{metric} in outcome SDs (95% {boot} CI)"
    return f"{metric} (95% {boot} CI)"


def fairness_plot(audit_result: dict[str, Any], attributes: list[str] | None = None) -> Any:
    """The figure of :func:`fairness_figure` (not saved): every text inside the figure, none cut. Each panel is as
    tall as its wrapped group labels need; the panels share the metric's scale, their left edges aligned. Each
    group's label ends with its number of test students."""
    attrs = audit_result.get("attributes", {})
    panels = _panels(audit_result, attributes)
    overall = (audit_result.get("overall") or {}).get(audit_result.get("primary_metric", ""))
    with plt.rc_context({"font.size": 7, "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"}):
        if not panels:
            return _no_groups_figure()
        labels = [[wrap_label(g["group"], LABEL_WIDTH, LABEL_LINES) + ("\n" + n_suffix(g["n"]) if "n" in g else "")
                   for g in gs] for _, gs in panels]
        rows = [len(ls) * (0.06 + _LINE_IN * max(n_lines(x) for x in ls)) for ls in labels]
        titles = [attrs[a]["label"] for a, _ in panels]
        height = 0.45 + sum(rows) + sum(0.1 + _LINE_IN * n_lines(wrap_label(t, TITLE_WIDTH, TITLE_LINES))
                                        for t in titles)
        fig, axes = plt.subplots(len(panels), 1, figsize=(3.3, height), squeeze=False, sharex=True,
                                 layout="constrained", gridspec_kw={"height_ratios": rows})
        axes = axes[:, 0]
        for ax, (attribute, gs), ls in zip(axes, panels, labels, strict=True):
            ax.set_gid(attribute)  # the panel's attribute, recorded with the figure's facts
            vals = np.array([g["metric"] for g in gs])
            lo = np.array([g["ci"][0] if g["ci"] else g["metric"] for g in gs])
            hi = np.array([g["ci"][1] if g["ci"] else g["metric"] for g in gs])
            pos = np.arange(len(gs))
            ax.errorbar(vals, pos, xerr=[np.maximum(vals - lo, 0), np.maximum(hi - vals, 0)], fmt="o", ms=3,
                        lw=1.0, capsize=2)
            if overall is not None:
                ax.axvline(overall, ls=":", color="grey", lw=0.8, gid=REFERENCE)
            ax.set_yticks(pos, ls)
            ax.set_ylim(-0.7, len(gs) - 0.3)
        axes[-1].set_xlabel(_metric_axis_label(audit_result))
        # left-aligned over each panel, wrapped to fit the figure
        fit_texts(fig, [(ax.set_title(t, fontsize=7, loc="left"), t) for ax, t in zip(axes, titles, strict=True)],
                  TITLE_WIDTH, TITLE_LINES)
    return fig


def fairness_figure(audit_result: dict[str, Any], path: Path, attributes: list[str] | None = None
                    ) -> dict[str, Any]:
    """Primary metric per reliable group with its 95% CI, one panel per attribute (intersections left out); saved
    as PDF and PNG; returns what the drawn figure shows (figures.figure_facts)."""
    return save_figure(fairness_plot(audit_result, attributes), path)


CALIBRATION_BINS = 10


CALIBRATION_MIN_BIN = 10  # a group's bin with fewer test students is not drawn


def calibration_bins(y: np.ndarray, prob: np.ndarray, bins: int = CALIBRATION_BINS
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Bin edges (quantiles of the whole test set's predictions, so every group is binned alike) and each row's
    bin."""
    edges = np.unique(np.quantile(prob, np.linspace(0, 1, bins + 1)))
    idx = np.clip(np.searchsorted(edges, prob, side="right") - 1, 0, max(len(edges) - 2, 0))
    return edges, idx


def group_calibration_curves(y: np.ndarray, prob: np.ndarray, protected: pd.DataFrame, audit_result: dict[str, Any],
                             values: dict[str, dict[str, str]] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Per attribute (single attributes only), per reliable group in the audit's order: the group's mean predicted
    probability and observed rate in each bin of the whole test set's predictions (bins with at least
    CALIBRATION_MIN_BIN of the group's students)."""
    y = np.asarray(y, dtype=float)
    prob = np.asarray(prob, dtype=float)
    _, idx = calibration_bins(y, prob)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, rec in (audit_result.get("attributes") or {}).items():
        if rec.get("kind") != "attribute" or name not in protected.columns:
            continue
        rows, _, _ = _grouping(protected[name].reset_index(drop=True),
                               {code_key(k): str(v) for k, v in ((values or {}).get(name) or {}).items()})
        lab = np.array([r if r is not None else "" for r in rows], dtype=object)
        curves = []
        for g in rec["groups"]:
            if not g["reliable"]:
                continue
            mask = lab == g["group"]
            pts = []
            for b in np.unique(idx[mask]):
                sel = mask & (idx == b)
                if sel.sum() >= CALIBRATION_MIN_BIN:
                    pts.append((float(prob[sel].mean()), float(y[sel].mean()), int(sel.sum())))
            curves.append({"group": g["group"], "n": g["n"], "points": pts})
        if curves:
            out[name] = curves
    return out


def _no_groups_figure() -> Any:
    """A small figure that says there is nothing to draw (no reliable group)."""
    fig, ax = plt.subplots(figsize=(3.3, 1.0), layout="constrained")
    ax.text(0.5, 0.5, "No reliable groups to show", ha="center", va="center")
    ax.axis("off")
    fig.draw_without_rendering()
    return fig


def calibration_plot(curves: dict[str, list[dict[str, Any]]], audit_result: dict[str, Any]) -> Any:
    """One panel per attribute: observed rate against mean predicted probability by bin, a line per group (the
    legend names each with its number of test students), the diagonal of perfect calibration."""
    attrs = audit_result.get("attributes", {})
    names = [a for a in curves if any(c["points"] for c in curves[a])]
    with plt.rc_context({"font.size": 7, "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"}):
        if not names:
            return _no_groups_figure()
        heights = [2.4 + 0.1 * sum(n_lines(wrap_label(c["group"], LABEL_WIDTH, 2)) for c in curves[a]) for a in names]
        fig, axes = plt.subplots(len(names), 1, figsize=(3.3, sum(heights)), squeeze=False,
                                 gridspec_kw={"height_ratios": heights},
                                 layout="constrained")
        for ax, name in zip(axes[:, 0], names, strict=True):
            ax.set_gid(name)
            ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=0.8, gid=REFERENCE)
            shown = [c for c in curves[name] if c["points"]]
            # an ordered attribute's groups in a sequential palette (their order visible), a nominal one's apart
            colours = (plt.cm.viridis(np.linspace(0, 0.9, len(shown))) if attrs.get(name, {}).get("ordered")
                       else [f"C{i % 10}" for i in range(len(shown))])
            for c, colour in zip(shown, colours, strict=True):
                xs, ys, _ = zip(*c["points"], strict=True)
                ax.plot(xs, ys, marker="o", ms=2.5, lw=1.0, color=colour,
                        label=wrap_label(c["group"], LABEL_WIDTH, 2) + " " + n_suffix(c["n"]))
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_xlabel("Mean predicted probability (bin)")
            ax.set_ylabel("Observed proportion")
            # the legend below the panel, off the curves (which run along the diagonal)
            ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.22), fontsize=5.5, frameon=False, ncol=1,
                      borderaxespad=0.0)
            title = attrs.get(name, {}).get("label", name)
            fit_texts(fig, [(ax.set_title(title, fontsize=7, loc="left"), title)], TITLE_WIDTH, TITLE_LINES)
    return fig


def calibration_group_figure(curves: dict[str, list[dict[str, Any]]], audit_result: dict[str, Any], path: Path
                             ) -> dict[str, Any]:
    """:func:`calibration_plot`, saved as PDF and PNG; returns what the drawn figure shows."""
    return save_figure(calibration_plot(curves, audit_result), path)
