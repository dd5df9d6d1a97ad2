"""Subgroup fairness audit: per-group performance, calibration and error rates at a decision rule, with bootstrap
intervals, gaps between groups, flags.

Binary outcomes: per group the AUC, calibration in the large (CITL: mean predicted probability minus the observed
rate of the positive class) and the calibration slope (logistic regression of the outcome on the logit of the
predicted probability), and the flag rate, TPR and FPR at the decision rule "flag the k% of test students most at
risk" (:func:`top_share_flags`; the at-risk class and k come from the caller). Continuous outcomes: per group RMSE,
mean error (bias: mean of predicted minus observed) and MAE, in the units the caller passes (the workflow divides
by the training outcome's SD); R2 is not audited per group (it is not comparable across groups whose outcome
variances differ).

Every group's metrics are evaluated on a (B x n_group) count matrix: an ordinary bootstrap resamples WITHIN each
group; when the test rows come in clusters (``clusters``), one cluster bootstrap of the whole test set
(metrics.cluster_bootstrap_counts) is shared by every group, so a gap's draws are paired. Gaps (max - min) are
taken over reliable groups only; a group is reliable when it has at least ``min_group`` test students and its
primary metric is defined (both outcome classes for AUC).

The groups themselves (names, order, quintiles, an attribute derived from a predictor) are made in
edm_ars.analysis.fairness_groups; the audit's figures are drawn by edm_ars.analysis.fairness_figures.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from edm_ars.analysis.fairness_groups import _grouping, derived_predictor
from edm_ars.analysis.figure_sanity import ordered_groups
from edm_ars.analysis.metrics import bootstrap_counts, cluster_bootstrap_counts, prepare_binary
from edm_ars.data.registry import code_key

METRIC_NAMES = {"auc": "AUC", "tpr": "TPR", "fpr": "FPR", "flag_rate": "flag-rate",
                "citl": "calibration-in-the-large", "calibration_slope": "calibration-slope",
                "equalized_odds": "equalized-odds difference", "rmse": "RMSE", "mae": "MAE",
                "mean_error": "mean-error", "base_rate": "base rate", "at_risk_rate": "at-risk rate"}
#: the audit's primary metric per task (regression: RMSE, not R2)
AUDIT_PRIMARY = {"binary_classification": "auc", "regression": "rmse"}
BINARY_GROUP_METRICS = ["auc", "citl", "calibration_slope", "flag_rate", "tpr", "fpr", "base_rate", "at_risk_rate"]
REGRESSION_GROUP_METRICS = ["rmse", "mean_error", "mae"]
BINARY_GAPS = ["auc", "citl", "tpr", "fpr", "flag_rate"]
REGRESSION_GAPS = ["rmse", "mean_error"]
DEFAULT_FLAG_SHARE = 0.20  # k when the at-risk class is not declared
_CHUNK_CELLS = 250_000  # bootstrap weight cells evaluated at once: bounds memory, and the working arrays stay in cache
_EPS = 1e-6


# ---- small helpers ----------------------------------------------------------------------------


def _num(x: Any) -> float | None:
    """A plain float, or None for NaN/inf/None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


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


# ---- the decision rule ------------------------------------------------------------------------


def top_share_flags(risk: np.ndarray, share: float) -> np.ndarray:
    """Flag the round(share * n) rows with the highest risk (ties broken by row order): the rule "flag the k% most
    at risk" a school would apply to the whole cohort, instead of a 0.5 threshold."""
    risk = np.asarray(risk, dtype=float).ravel()
    if not 0.0 < share < 1.0:
        raise ValueError(f"flag share must be in (0, 1), got {share}")
    m = int(round(share * len(risk)))
    flags = np.zeros(len(risk), dtype=bool)
    flags[np.argsort(-risk, kind="stable")[:m]] = True
    return flags


def decision_rule(at_risk_class: int | None, share: float | None, train_y: np.ndarray | None) -> dict[str, Any]:
    """The rule's parameters: which outcome class is "at risk" (1, 0, or None = not declared: the positive class is
    flagged) and k: `share` when given (config), else the at-risk class's share of the training outcomes, else
    DEFAULT_FLAG_SHARE."""
    cls = 1 if at_risk_class is None else int(at_risk_class)
    if cls not in (0, 1):
        raise ValueError(f"at-risk class must be 0 or 1, got {at_risk_class}")
    if share is not None:
        k, source = float(share), "config"
    elif at_risk_class is not None and train_y is not None and len(train_y):
        ty = np.asarray(train_y, dtype=float)
        k, source = float(np.mean(ty == cls)), "at_risk_share"
    else:
        k, source = DEFAULT_FLAG_SHARE, "default"
    if not 0.0 < k < 1.0:
        raise ValueError(f"flag share {k} (from {source}) must be in (0, 1)")
    return {"at_risk_class": cls, "at_risk_declared": at_risk_class is not None, "share": k, "share_source": source}


# ---- per-group metrics ------------------------------------------------------------------------


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), _EPS, 1 - _EPS)
    return np.log(p / (1 - p))


def calibration_slope(y: np.ndarray, prob: np.ndarray, w: np.ndarray, iters: int = 30,
                      start: tuple[float, float] | None = None) -> np.ndarray:
    """The calibration slope for every row of w (see _calibration_fit); NaN where undefined."""
    return _calibration_fit(y, prob, w, iters, start)[1]


def _calibration_fit(y: np.ndarray, prob: np.ndarray, w: np.ndarray, iters: int = 30,
                     start: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The slope of a logistic regression of y on logit(prob) (with an intercept), fitted by Newton's method for
    every row of the count matrix w at once; NaN where it is undefined (one outcome class, constant predictions) or
    does not converge (separation). 1 is perfect calibration; under 1 predictions too extreme, over 1 too timid.

    `start` (intercept, slope) is where Newton's method begins (default 0, 0; the log-likelihood is concave, so the
    fit is the same from anywhere; a bootstrap starts from the full sample's fit and needs fewer steps). Each step
    works on the rows not yet converged, in place."""
    x = _logit(prob)
    y = np.asarray(y, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    b_rows = w.shape[0]
    a0, b0 = start if start is not None and all(np.isfinite(start)) else (0.0, 0.0)
    a, b = np.full(b_rows, float(a0)), np.full(b_rows, float(b0))
    done = np.zeros(b_rows, dtype=bool)
    bad = np.zeros(b_rows, dtype=bool)
    cols = np.column_stack([np.ones_like(x), x, x * x])
    for _ in range(iters):
        act = np.flatnonzero(~done)
        if not act.size:
            break
        wa = w[act] if act.size < b_rows else w
        mu = np.multiply.outer(b[act], x)
        mu += a[act][:, None]
        np.clip(mu, -30, 30, out=mu)
        np.negative(mu, out=mu)
        np.exp(mu, out=mu)
        mu += 1.0
        np.reciprocal(mu, out=mu)  # the fitted probabilities
        v = mu * mu
        np.subtract(mu, v, out=v)  # mu (1 - mu)
        v *= wa
        np.subtract(y, mu, out=mu)
        mu *= wa  # w (y - mu)
        g0, g1 = mu @ cols[:, 0], mu @ x
        h00, h01, h11 = (v @ cols).T
        det = h00 * h11 - h01 ** 2
        ok = det > 1e-10 * np.maximum(h00 * h11, 1e-300)
        bad[act] |= ~ok
        with np.errstate(divide="ignore", invalid="ignore"):
            da = np.where(ok, (h11 * g0 - h01 * g1) / np.where(ok, det, 1), 0.0)
            db = np.where(ok, (h00 * g1 - h01 * g0) / np.where(ok, det, 1), 0.0)
        step = np.maximum(1.0, np.maximum(np.abs(da), np.abs(db)) / 2.0)  # damped: at most 2 per step
        a[act] += da / step
        b[act] += db / step
        done[act] = (np.abs(da) < 1e-7) & (np.abs(db) < 1e-7)
    pos, neg = w @ y, w @ (1 - y)
    defined = done & ~bad & (pos > 0) & (neg > 0) & (np.abs(b) < 50)
    return np.where(defined, a, np.nan), np.where(defined, b, np.nan)


def _binary_values(y: np.ndarray, prob: np.ndarray, flags: np.ndarray, at_risk: np.ndarray
                   ) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """Every binary group metric as a function of the weight matrix w (one row per resample); undefined values are
    NaN. TPR and FPR are of the decision rule's flags against the at-risk class (TPR: flagged share of the at-risk
    students). What depends on the group's rows alone (the AUC's sort, the linear terms, the calibration fit of
    the whole group as the resamples' starting point) is prepared once."""
    auc_of = prepare_binary(y, prob, 0.5)
    terms = np.column_stack([y, 1 - y, at_risk, 1 - at_risk, prob, flags, flags * at_risk, flags * (1 - at_risk)])
    a, b = _calibration_fit(y, prob, np.ones((1, len(y))))
    start = (float(a[0]), float(b[0])) if np.isfinite(b[0]) else None

    def values(w: np.ndarray) -> dict[str, np.ndarray]:
        wf = np.asarray(w, dtype=np.float64)
        n = wf.sum(axis=1)
        pos, neg, risk_n, safe_n, sum_prob, flagged, flagged_risk, flagged_safe = (wf @ terms).T
        with np.errstate(divide="ignore", invalid="ignore"):
            auc = auc_of(w)["auc"]
            return {
                "auc": np.where((pos > 0) & (neg > 0), auc, np.nan),
                "citl": np.where(n > 0, (sum_prob - pos) / n, np.nan),
                "calibration_slope": calibration_slope(y, prob, wf, start=start),
                "flag_rate": np.where(n > 0, flagged / n, np.nan),
                "tpr": np.where(risk_n > 0, flagged_risk / risk_n, np.nan),
                "fpr": np.where(safe_n > 0, flagged_safe / safe_n, np.nan),
                "base_rate": np.where(n > 0, pos / n, np.nan),
                "at_risk_rate": np.where(n > 0, risk_n / n, np.nan),
            }

    return values


def _regression_values(y: np.ndarray, pred: np.ndarray) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    err = pred - y
    terms = np.column_stack([err * err, err, np.abs(err)])

    def values(w: np.ndarray) -> dict[str, np.ndarray]:
        wf = np.asarray(w, dtype=np.float64)
        n = wf.sum(axis=1)
        sq, total, absolute = (wf @ terms).T
        with np.errstate(divide="ignore", invalid="ignore"):
            return {"rmse": np.where(n > 0, np.sqrt(sq / n), np.nan),
                    "mean_error": np.where(n > 0, total / n, np.nan),
                    "mae": np.where(n > 0, absolute / n, np.nan)}

    return values


def _values(task: str, d: dict[str, np.ndarray]) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """The group's metrics as a function of a weight matrix (one row per resample; a row of ones: the point)."""
    if task == "binary_classification":
        return _binary_values(d["y"], d["pred"], d["flags"], d["at_risk"])
    return _regression_values(d["y"], d["pred"])


def _chunked(values: Callable[[np.ndarray], dict[str, np.ndarray]], counts: np.ndarray) -> dict[str, np.ndarray]:
    """values over every row of the count matrix, a few resamples at a time (the working arrays stay in cache)."""
    n = counts.shape[1]
    step = max(1, _CHUNK_CELLS // max(n, 1))
    parts = [values(counts[i:i + step]) for i in range(0, counts.shape[0], step)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _group_record(task: str, name: str, group: str, d: dict[str, np.ndarray], *, n_resamples: int, seed: int,
                  min_group: int, counts: np.ndarray | None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The group's record and its bootstrap draws (kept aside for the gap intervals). `counts` is the group's
    columns of a shared (cluster) bootstrap; None: an ordinary bootstrap within the group."""
    primary = AUDIT_PRIMARY[task]
    names = BINARY_GROUP_METRICS if task == "binary_classification" else REGRESSION_GROUP_METRICS
    n = len(d["y"])
    values = _values(task, d)
    point = {k: _num(v[0]) for k, v in values(np.ones((1, n))).items()}
    rec: dict[str, Any] = {"group": group, "n": int(n)}
    if task == "binary_classification":
        rec["n_positive"] = int(d["y"].sum())
        rec["n_at_risk"] = int(d["at_risk"].sum())
        rec["n_flagged"] = int(d["flags"].sum())
    reasons = []
    if n < min_group:
        reasons.append(f"{n} test students (< {min_group})")
    if point[primary] is None:
        reasons.append("only one outcome class: AUC undefined" if task == "binary_classification"
                       else "no test student")
    rec["reliable"] = not reasons
    rec["reason"] = "; ".join(reasons) or None
    rec["metric"] = point[primary]
    cis: dict[str, list[float] | None] = {k: None for k in names}
    n_valid = 0
    boot: dict[str, np.ndarray] = {}
    if n_resamples > 0 and n > 0:
        w = counts if counts is not None else bootstrap_counts(n, n_resamples, _group_seed(seed, name, group))
        boot = _chunked(values, w)
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
    extreme groups (resample b of each gives one draw of the difference: independent draws under the ordinary
    bootstrap, the same resampled clusters under the cluster bootstrap)."""
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
        order = ["auc", "citl", "tpr", "fpr", "equalized_odds", "flag_rate"]
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
    return f"{name}: group '{g['group']}' has only one outcome class, AUC undefined ({g['n']} test students): unreliable"


# ---- the audit --------------------------------------------------------------------------------


def _audit_one(task: str, name: str, label: str, kind: str, rows: list[str | None], order: list[str],
               d: dict[str, np.ndarray], *, n_resamples: int, seed: int, min_group: int, gap_threshold: float,
               shared: np.ndarray | None) -> dict[str, Any]:
    lab = np.array([r if r is not None else "" for r in rows], dtype=object)
    missing = np.array([r is None for r in rows], dtype=bool)
    groups, boots = [], {}
    for group in order:
        idx = np.flatnonzero((lab == group) & ~missing)
        if idx.size == 0:
            continue
        rec, boots[group] = _group_record(task, name, group, {k: v[idx] for k, v in d.items()},
                                          n_resamples=n_resamples, seed=seed, min_group=min_group,
                                          counts=None if shared is None else shared[:, idx])
        groups.append(rec)
    gaps = _gaps(task, groups, boots, gap_threshold)
    flags = [_gap_flag(name, m, g) for m, g in gaps.items() if g is not None and g["flagged"]]
    flags += [_unreliable_flag(name, g, min_group, task) for g in groups if not g["reliable"]]
    return {"label": label, "kind": kind, "n_missing": int(missing.sum()), "n_groups": len(groups),
            "n_reliable": sum(g["reliable"] for g in groups), "groups": groups, "gaps": gaps, "flags": flags}


def audit(task: str, y: np.ndarray, pred: np.ndarray, protected: pd.DataFrame, attributes: list[str], *,
          intersections: list[tuple[str, str]] | None = None, rule: dict[str, Any] | None = None,
          n_resamples: int = 1000, seed: int = 42, min_group: int = 50, gap_threshold: float = 0.05,
          labels: dict[str, str] | None = None, values: dict[str, dict[str, str]] | None = None,
          clusters: np.ndarray | None = None, derived: dict[str, dict[str, Any]] | None = None,
          predictors: pd.DataFrame | None = None, error_scale: dict[str, Any] | None = None) -> dict[str, Any]:
    """Audit predictive performance across the groups of each protected attribute and intersection.

    ``protected`` holds the test rows' original attribute labels in the same order as ``y``/``pred``. Attributes
    missing from it are listed under "skipped". Intersections (pairs of attributes, e.g. the registry's
    protected_intersections) are audited when both are columns of ``protected``. ``values`` gives, per attribute,
    the registry's labels of its codes ({code: label}); groups are named by them (afam -> African-American).
    ``rule`` (binary): :func:`decision_rule`'s parameters (default: the positive class, k = 20%). ``clusters``: the
    test rows' cluster ids when the split is clustered (a cluster bootstrap); None: an ordinary bootstrap.
    ``derived``: attributes declared as derived from a predictor ({attribute: {"predictor": ...}}); ``predictors``
    (the test rows' numeric predictors) lets the audit detect the others (:func:`derived_predictor`).
    ``error_scale`` (regression): what the errors were divided by, recorded as given.
    """
    if task not in AUDIT_PRIMARY:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(AUDIT_PRIMARY)}")
    y = np.asarray(y, dtype=float).ravel()
    pred = np.asarray(pred, dtype=float).ravel()
    if len(pred) != len(y) or len(protected) != len(y):
        raise ValueError(f"length mismatch: y has {len(y)} rows, pred {len(pred)}, protected {len(protected)}")
    d: dict[str, np.ndarray] = {"y": y, "pred": pred}
    rule_out = None
    if task == "binary_classification":
        if not np.isin(y, (0.0, 1.0)).all():
            raise ValueError("binary outcome must be coded 0/1")
        rule = dict(rule or decision_rule(None, None, None))
        cls = int(rule["at_risk_class"])
        risk = pred if cls == 1 else 1 - pred
        flags = top_share_flags(risk, float(rule["share"]))
        d["flags"] = flags.astype(float)
        d["at_risk"] = (y == cls).astype(float)
        cutoff = float(pred[flags].min() if cls == 1 else pred[flags].max()) if flags.any() else None
        rule_out = {**rule, "n_flagged": int(flags.sum()), "cutoff_probability": cutoff,
                    "rule": f"flag the {rule['share']:.1%} of test students most at risk (class {cls})"}
    labels = labels or {}
    protected = protected.reset_index(drop=True)
    shared = None
    if clusters is not None and n_resamples > 0:
        clusters = np.asarray(clusters).ravel()
        if len(clusters) != len(y):
            raise ValueError(f"length mismatch: {len(clusters)} cluster ids for {len(y)} test rows")
        shared = cluster_bootstrap_counts(clusters, int(n_resamples), int(seed))
    kw = {"n_resamples": int(n_resamples), "seed": int(seed), "min_group": int(min_group),
          "gap_threshold": float(gap_threshold), "shared": shared}
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
        rec = _audit_one(task, name, labels.get(name, name), "attribute", rows, order, d, **kw)
        if binning is not None:
            rec["binned"] = binning
        rec["ordered"] = ordered_groups(rec) is not None or binning is not None
        declared = (derived or {}).get(name)
        if declared:
            rec["derived_from"] = {"predictor": str(declared["predictor"]), "source": "registry",
                                   "label": declared.get("label")}
        elif predictors is not None:
            found = derived_predictor(rows, order, predictors.drop(columns=[name], errors="ignore"))
            if found:
                rec["derived_from"] = {**found, "label": (labels or {}).get(found["predictor"])}
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
        result_attrs[name] = _audit_one(task, name, label, "intersection", rows, order, d, **kw)

    overall = {k: _num(v[0]) for k, v in _values(task, d)(np.ones((1, len(y)))).items()}
    return {
        "task": task,
        "primary_metric": AUDIT_PRIMARY[task],
        "decision_rule": rule_out,
        "error_scale": error_scale if task == "regression" else None,
        "bootstrap": "cluster" if shared is not None else "ordinary",
        "n_clusters": int(len(np.unique(clusters))) if shared is not None else None,
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
