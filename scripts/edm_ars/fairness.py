"""Subgroup fairness audit: per-group performance with bootstrap intervals, gaps between groups, flags.

Every group's metrics come from ``metrics.binary_metrics`` / ``metrics.regression_metrics`` evaluated on a
(B x n_group) matrix of multinomial counts, so the bootstrap resamples WITHIN each group and is vectorized.
Gaps (max - min) are taken over reliable groups only; a group is reliable when it has at least ``min_group`` test
students and its primary metric is defined (both outcome classes for AUC, a non-constant outcome for R2).
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from edm_ars.figure_sanity import ordered_groups  # noqa: E402
from edm_ars.figures import REFERENCE, fit_texts, n_lines, save_figure, wrap_label  # noqa: E402
from edm_ars.metrics import PRIMARY, binary_metrics, bootstrap_counts, regression_metrics  # noqa: E402
from edm_ars.registry import code_key  # noqa: E402

METRIC_NAMES = {"auc": "AUC", "r2": "R2", "tpr": "TPR", "fpr": "FPR", "selection_rate": "selection-rate",
                "equalized_odds": "equalized-odds difference", "rmse": "RMSE", "mae": "MAE",
                "mean_error": "mean-error", "base_rate": "base rate"}
BINARY_GROUP_METRICS = ["auc", "selection_rate", "tpr", "fpr", "base_rate"]
REGRESSION_GROUP_METRICS = ["r2", "rmse", "mae", "mean_error"]
BINARY_GAPS = ["auc", "tpr", "fpr", "selection_rate"]
REGRESSION_GAPS = ["r2", "rmse", "mae", "mean_error"]
CONTINUOUS_MIN_UNIQUE = 10  # a numeric protected attribute with more distinct values is binned into quintiles
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_CHUNK_CELLS = 4_000_000  # bootstrap weight cells evaluated at once (bounds memory for large groups)


# ---- small helpers ----------------------------------------------------------------------------


def _num(x: Any) -> float | None:
    """A plain float, or None for NaN/inf/None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _value_label(v: Any, values: dict[str, str] | None = None) -> str:
    """A group's name: the registry's label of the code (`values:`), else the code itself, float-coded integers
    normalised ('1.0' -> '1')."""
    key = code_key(float(v) if isinstance(v, np.floating) else v)
    return (values or {}).get(key, key)


def _sort_key(label: str) -> tuple[int, str]:
    """Ordinal words first in their natural order ("First quintile" < "Second quintile"), then text order."""
    low = label.strip().lower()
    for i, word in enumerate(_ORDINALS):
        if low.startswith(word + " ") or low == word:
            return (i, low)
    return (len(_ORDINALS), low)


def _group_seed(seed: int, attribute: str, group: str) -> int:
    """A per-(attribute, group) seed, stable across processes (unlike hash())."""
    crc = zlib.crc32(f"{attribute}\x00{group}".encode())
    return int(np.random.SeedSequence([int(seed), crc]).generate_state(1)[0])


def _percentile_ci(values: np.ndarray, valid: np.ndarray) -> list[float] | None:
    v = values[valid]
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    return [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))]


# ---- grouping ---------------------------------------------------------------------------------


def _is_continuous(s: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
            and s.dropna().nunique() > CONTINUOUS_MIN_UNIQUE)


def _quintile_labels(k: int) -> list[str]:
    labels = [f"Q{i + 1}" for i in range(k)]
    if k >= 2:
        labels[0] += " (lowest)"
        labels[-1] += " (highest)"
    return labels


def _grouping(s: pd.Series, values: dict[str, str] | None = None
              ) -> tuple[list[str | None], list[str], dict[str, Any] | None]:
    """Row labels (None = missing), the ordered group labels, and binning details for a continuous attribute.
    `values` maps codes to the registry's labels (code_key form); labelled groups come in the registry's order."""
    if values:
        s = s.map(lambda v: v if pd.isna(v) else code_key(v))
        if s.dropna().isin(list(values)).all():  # every code labelled: groups, not a continuous scale
            rows = [None if pd.isna(v) else values[v] for v in s]
            present = {r for r in rows if r is not None}
            return rows, [lab for lab in dict.fromkeys(values.values()) if lab in present], None
    if _is_continuous(s):
        x = pd.to_numeric(s, errors="coerce").astype(float)
        _, edges = pd.qcut(x, 5, retbins=True, duplicates="drop")
        k = len(edges) - 1
        labels = _quintile_labels(k)
        binned = pd.cut(x, edges, labels=labels, include_lowest=True)
        rows = [None if pd.isna(v) else str(v) for v in binned]
        order = [lab for lab in labels if lab in set(rows)]
        return rows, order, {"bins": k, "edges": [float(e) for e in edges]}
    rows = [None if pd.isna(v) else _value_label(v, values) for v in s]
    present = {r for r in rows if r is not None}
    if isinstance(s.dtype, pd.CategoricalDtype):
        order = [c for c in (_value_label(c, values) for c in s.cat.categories) if c in present]
    else:
        order = sorted(present, key=_sort_key)
    return rows, order, None


# ---- per-group metrics ------------------------------------------------------------------------


def _binary_extra(y: np.ndarray, prob: np.ndarray, w: np.ndarray, threshold: float) -> dict[str, np.ndarray]:
    """Selection rate, FPR and base rate (TPR and AUC come from metrics.binary_metrics)."""
    pred = (prob >= threshold).astype(float)
    n = w.sum(axis=1)
    neg = w @ (1 - y)
    with np.errstate(divide="ignore", invalid="ignore"):
        fpr = np.where(neg > 0, (w @ (pred * (1 - y))) / np.where(neg > 0, neg, 1), np.nan)
    return {"selection_rate": (w @ pred) / n, "fpr": fpr, "base_rate": (w @ y) / n}


def _group_values(task: str, y: np.ndarray, pred: np.ndarray, w: np.ndarray, threshold: float) -> dict[str, np.ndarray]:
    """Every group metric for every row of w; undefined values (no positives, no negatives, constant y) are NaN."""
    if task == "binary_classification":
        base = binary_metrics(y, pred, w, threshold)
        pos, neg = w @ y, w @ (1 - y)
        out = {"auc": np.where((pos > 0) & (neg > 0), base["auc"], np.nan),
               "tpr": np.where(pos > 0, base["recall"], np.nan)}
        out.update(_binary_extra(y, pred, w, threshold))
        return out
    base = regression_metrics(y, pred, w)
    n = w.sum(axis=1)
    mean = (w @ y) / n
    total = (w * (y[None, :] - mean[:, None]) ** 2).sum(axis=1)
    defined = total > 1e-12 * (w @ (y * y)) + 1e-300  # a constant outcome (up to rounding) leaves R2 undefined
    return {"r2": np.where(defined, base["r2"], np.nan), "rmse": base["rmse"],
            "mae": base["mae"], "mean_error": (w @ (pred - y)) / n}


def _bootstrap(task: str, y: np.ndarray, pred: np.ndarray, threshold: float, n_resamples: int,
               seed: int) -> dict[str, np.ndarray]:
    counts = bootstrap_counts(len(y), n_resamples, seed)
    step = max(1, _CHUNK_CELLS // max(len(y), 1))
    parts = [_group_values(task, y, pred, counts[i:i + step], threshold) for i in range(0, n_resamples, step)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _group_record(task: str, name: str, group: str, y: np.ndarray, pred: np.ndarray, *, threshold: float,
                  n_resamples: int, seed: int, min_group: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The group's record and its bootstrap draws (kept aside for the gap intervals)."""
    primary = PRIMARY[task]
    names = BINARY_GROUP_METRICS if task == "binary_classification" else REGRESSION_GROUP_METRICS
    n = len(y)
    point = {k: _num(v[0]) for k, v in _group_values(task, y, pred, np.ones((1, n)), threshold).items()}
    rec: dict[str, Any] = {"group": group, "n": int(n)}
    if task == "binary_classification":
        rec["n_positive"] = int(y.sum())
    reasons = []
    if n < min_group:
        reasons.append(f"{n} test students (< {min_group})")
    if point[primary] is None:
        reasons.append("only one outcome class: AUC undefined" if task == "binary_classification"
                       else "constant outcome: R2 undefined")
    rec["reliable"] = not reasons
    rec["reason"] = "; ".join(reasons) or None
    rec["metric"] = point[primary]
    cis: dict[str, list[float] | None] = {k: None for k in names}
    n_valid = 0
    boot: dict[str, np.ndarray] = {}
    if n_resamples > 0 and n > 0:
        boot = _bootstrap(task, y, pred, threshold, n_resamples, _group_seed(seed, name, group))
        for k in names:
            if point[k] is not None:
                cis[k] = _percentile_ci(boot[k], np.isfinite(boot[k]))
        n_valid = int(np.isfinite(boot[primary]).sum()) if point[primary] is not None else 0
    rec["ci"] = cis[primary]
    rec["n_resamples_valid"] = n_valid
    for k in names:
        rec[k] = point[k]
    rec["cis"] = cis
    return rec, boot


# ---- gaps and flags ---------------------------------------------------------------------------


def _gap(groups: list[dict[str, Any]], boots: dict[str, dict[str, np.ndarray]], metric: str) -> dict[str, Any] | None:
    """max - min over reliable groups; "ci" is the 95% bootstrap interval of the difference between the two
    extreme groups (their resamples are independent, so resample b of each gives one draw of the difference)."""
    vals = [(g["group"], g[metric]) for g in groups if g["reliable"] and g.get(metric) is not None]
    if len(vals) < 2:
        return None
    lo = min(vals, key=lambda t: t[1])
    hi = max(vals, key=lambda t: t[1])
    ci = None
    if metric in boots.get(hi[0], {}) and metric in boots.get(lo[0], {}):
        diff = boots[hi[0]][metric] - boots[lo[0]][metric]
        ci = _percentile_ci(diff, np.isfinite(diff))
    return {"gap": float(hi[1] - lo[1]), "ci": ci, "min_group": lo[0], "min_value": float(lo[1]),
            "max_group": hi[0], "max_value": float(hi[1]), "n_groups": len(vals)}


def _gaps(task: str, groups: list[dict[str, Any]], boots: dict[str, dict[str, np.ndarray]],
          gap_threshold: float) -> dict[str, Any]:
    gaps: dict[str, Any] = {}
    for metric in (BINARY_GAPS if task == "binary_classification" else REGRESSION_GAPS):
        gaps[metric] = _gap(groups, boots, metric)
    if task == "binary_classification":
        cands = [(m, gaps[m]) for m in ("tpr", "fpr") if gaps[m] is not None]
        if cands:
            src, g = max(cands, key=lambda t: t[1]["gap"])  # ties: TPR
            gaps["equalized_odds"] = {**g, "source": src}
        else:
            gaps["equalized_odds"] = None
        order = ["auc", "tpr", "fpr", "equalized_odds", "selection_rate"]
        gaps = {k: gaps[k] for k in order}
    for g in gaps.values():
        if g is not None:
            g["flagged"] = bool(g["gap"] > gap_threshold)
    return gaps


def _gap_flag(name: str, metric: str, g: dict[str, Any]) -> str:
    what = METRIC_NAMES[metric]
    if metric == "equalized_odds":
        what = f"{what} ({METRIC_NAMES[g['source']]})"
    else:
        what = f"{what} gap"
    return (f"{name}: {what} {g['gap']:.3f} between '{g['min_group']}' ({g['min_value']:.3f}) and "
            f"'{g['max_group']}' ({g['max_value']:.3f})")


def _unreliable_flag(name: str, g: dict[str, Any], min_group: int, task: str) -> str:
    if g["n"] < min_group:
        return f"{name}: group '{g['group']}' has {g['n']} test students (< {min_group}): unreliable"
    what = ("only one outcome class, AUC undefined" if task == "binary_classification"
            else "a constant outcome, R2 undefined")
    return f"{name}: group '{g['group']}' has {what} ({g['n']} test students): unreliable"


# ---- the audit --------------------------------------------------------------------------------


def _audit_one(task: str, name: str, label: str, kind: str, rows: list[str | None], order: list[str],
               y: np.ndarray, pred: np.ndarray, *, threshold: float, n_resamples: int, seed: int, min_group: int,
               gap_threshold: float) -> dict[str, Any]:
    lab = np.array([r if r is not None else "" for r in rows], dtype=object)
    missing = np.array([r is None for r in rows], dtype=bool)
    groups, boots = [], {}
    for group in order:
        idx = np.flatnonzero((lab == group) & ~missing)
        if idx.size == 0:
            continue
        rec, boots[group] = _group_record(task, name, group, y[idx], pred[idx], threshold=threshold,
                                          n_resamples=n_resamples, seed=seed, min_group=min_group)
        groups.append(rec)
    gaps = _gaps(task, groups, boots, gap_threshold)
    flags = [_gap_flag(name, m, g) for m, g in gaps.items() if g is not None and g["flagged"]]
    flags += [_unreliable_flag(name, g, min_group, task) for g in groups if not g["reliable"]]
    return {"label": label, "kind": kind, "n_missing": int(missing.sum()), "n_groups": len(groups),
            "n_reliable": sum(g["reliable"] for g in groups), "groups": groups, "gaps": gaps, "flags": flags}


def audit(task: str, y: np.ndarray, pred: np.ndarray, protected: pd.DataFrame, attributes: list[str], *,
          intersections: list[tuple[str, str]] | None = None, threshold: float = 0.5, n_resamples: int = 1000,
          seed: int = 42, min_group: int = 50, gap_threshold: float = 0.05,
          labels: dict[str, str] | None = None, values: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """Audit predictive performance across the groups of each protected attribute and intersection.

    ``protected`` holds the test rows' original attribute labels in the same order as ``y``/``pred``. Attributes
    missing from it are listed under "skipped". Intersections (pairs of attributes, e.g. the registry's
    protected_intersections) are audited when both are columns of ``protected``. ``values`` gives, per attribute,
    the registry's labels of its codes ({code: label}); groups are named by them (afam -> African-American).
    """
    if task not in PRIMARY:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(PRIMARY)}")
    y = np.asarray(y, dtype=float).ravel()
    pred = np.asarray(pred, dtype=float).ravel()
    if len(pred) != len(y) or len(protected) != len(y):
        raise ValueError(f"length mismatch: y has {len(y)} rows, pred {len(pred)}, protected {len(protected)}")
    if task == "binary_classification" and not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("binary outcome must be coded 0/1")
    labels = labels or {}
    protected = protected.reset_index(drop=True)
    kw = {"threshold": float(threshold), "n_resamples": int(n_resamples), "seed": int(seed),
          "min_group": int(min_group), "gap_threshold": float(gap_threshold)}
    result_attrs: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    groupings: dict[str, tuple[list[str | None], list[str], dict[str, Any] | None]] = {}

    def grouping(col: str):
        if col not in groupings:
            groupings[col] = _grouping(protected[col], {code_key(k): str(v) for k, v in
                                                        ((values or {}).get(col) or {}).items()})
        return groupings[col]

    for name in dict.fromkeys(attributes):
        if name not in protected.columns:
            skipped[name] = "not in the protected attributes of the test set"
            continue
        if protected[name].notna().sum() == 0:
            skipped[name] = "every test value is missing"
            continue
        rows, order, binning = grouping(name)
        rec = _audit_one(task, name, labels.get(name, name), "attribute", rows, order, y, pred, **kw)
        if binning is not None:
            rec["binned"] = binning
        result_attrs[name] = rec

    for a, b in intersections or []:
        name = f"{a} x {b}"
        absent = [c for c in (a, b) if c not in protected.columns]
        if absent:
            skipped[name] = f"not in the protected attributes of the test set: {absent}"
            continue
        ra, oa, _ = grouping(a)
        rb, ob, _ = grouping(b)
        rows = [None if (u is None or v is None) else f"{u} x {v}" for u, v in zip(ra, rb, strict=True)]
        if all(r is None for r in rows):
            skipped[name] = "every test row misses one of the two attributes"
            continue
        order = [f"{u} x {v}" for u in oa for v in ob]
        label = f"{labels.get(a, a)} x {labels.get(b, b)}"
        result_attrs[name] = _audit_one(task, name, label, "intersection", rows, order, y, pred, **kw)

    overall = {k: _num(v[0]) for k, v in _group_values(task, y, pred, np.ones((1, len(y))), threshold).items()}
    return {
        "task": task,
        "primary_metric": PRIMARY[task],
        "threshold": float(threshold),
        "min_group": int(min_group),
        "gap_threshold": float(gap_threshold),
        "n_resamples": int(n_resamples),
        "seed": int(seed),
        "n": int(len(y)),
        "overall": overall,
        "attributes": result_attrs,
        "flags": [f for rec in result_attrs.values() for f in rec["flags"]],
        "skipped": skipped,
    }


def disparity_flagged(audit_result: dict[str, Any], attribute: str, group: str) -> bool:
    """True when a flagged gap of this attribute (or intersection) has this group at one of its extremes."""
    rec = audit_result.get("attributes", {}).get(attribute)
    if not rec:
        return False
    return any(g is not None and g.get("flagged") and group in (g["min_group"], g["max_group"])
               for g in rec["gaps"].values())


# ---- figure -----------------------------------------------------------------------------------


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


def fairness_plot(audit_result: dict[str, Any], attributes: list[str] | None = None) -> Any:
    """The figure of :func:`fairness_figure` (not saved): every text inside the figure, none cut. Each panel is as
    tall as its wrapped group labels need; the panels share the metric's scale, their left edges aligned."""
    attrs = audit_result.get("attributes", {})
    panels = _panels(audit_result, attributes)
    metric = METRIC_NAMES.get(audit_result.get("primary_metric", ""), str(audit_result.get("primary_metric")))
    overall = (audit_result.get("overall") or {}).get(audit_result.get("primary_metric", ""))
    with plt.rc_context({"font.size": 7, "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"}):
        if not panels:
            fig, ax = plt.subplots(figsize=(3.3, 1.0), layout="constrained")
            ax.text(0.5, 0.5, "No reliable groups to show", ha="center", va="center")
            ax.axis("off")
            fig.draw_without_rendering()
            return fig
        labels = [[wrap_label(g["group"], LABEL_WIDTH, LABEL_LINES) for g in gs] for _, gs in panels]
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
        axes[-1].set_xlabel(f"{metric} (95% bootstrap CI)")
        # left-aligned over each panel, wrapped to fit the figure
        fit_texts(fig, [(ax.set_title(t, fontsize=7, loc="left"), t) for ax, t in zip(axes, titles, strict=True)],
                  TITLE_WIDTH, TITLE_LINES)
    return fig


def fairness_figure(audit_result: dict[str, Any], path: Path, attributes: list[str] | None = None
                    ) -> dict[str, Any]:
    """Primary metric per reliable group with its 95% CI, one panel per attribute (intersections left out); saved
    as PDF and PNG; returns what the drawn figure shows (figures.figure_facts)."""
    return save_figure(fairness_plot(audit_result, attributes), path)
