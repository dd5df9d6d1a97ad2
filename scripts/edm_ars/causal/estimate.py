"""Estimation of the causal study (results.json), chosen by the design.

Randomised: the difference in means with block fixed effects and cluster-robust standard errors (statsmodels OLS),
a covariate-adjusted estimate as a check, balance, attrition by arm and exploratory group effects. Observational:
augmented inverse-probability weighting by double machine learning (DoubleML IRM with K-fold cross-fitting),
overlap of the cross-fitted propensities and the trimming, balance before and after weighting, omitted-variable
bounds (DoubleML sensitivity analysis) and exploratory group average treatment effects (DoubleML gate).

The analytic frame (edm_ars causal data job): `treated` (0/1), `outcome` (NaN = missing), optional `block` and
`cluster`, features `x__*`, subgroup labels `g__*`. Every number returned is a plain float rounded to 6 digits (None
where it is undefined), so that the dict is written as JSON as it is."""

from __future__ import annotations

import platform
import warnings
from importlib import metadata
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from threadpoolctl import threadpool_limits

from edm_ars.core.errors import DataError

KINDS = ("randomized", "observational")
DEFAULT_SETTINGS: dict[str, Any] = {"alpha": 0.05, "trimming_threshold": 0.01, "n_folds": 5, "n_rep": 1,
                                    "sensitivity": {"cf_y": 0.03, "cf_d": 0.03, "rho": 1.0}, "min_group_n": 50}
BALANCE_THRESHOLD = 0.1
OVERLAP_BOUNDS = (0.05, 0.95)
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
FEATURE, GROUP = "x__", "g__"


# ---- small helpers -------------------------------------------------------------------------------
def _f(x: Any) -> float | None:
    """A plain float rounded to 6 digits; None for a missing or non-finite value."""
    if x is None:
        return None
    x = float(np.asarray(x).reshape(-1)[0]) if np.ndim(x) else float(x)
    return round(x, 6) if np.isfinite(x) else None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """The versions of the libraries the estimates come from (installed distributions)."""
    return {"python": platform.python_version(), "numpy": _version("numpy"), "pandas": _version("pandas"),
            "scikit-learn": _version("scikit-learn"), "statsmodels": _version("statsmodels"),
            "doubleml": _version("doubleml")}


def covariate_of(feature: str) -> str:
    """The covariate a feature column encodes: `x__lunchk=free` and `x__age__missing` -> `lunchk`, `age`."""
    name = feature[len(FEATURE):] if feature.startswith(FEATURE) else feature
    name = name.split("=", 1)[0]
    return name[: -len("__missing")] if name.endswith("__missing") else name


def _settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    given = dict(settings or {})
    unknown = sorted(set(given) - set(DEFAULT_SETTINGS))
    if unknown:
        raise DataError(f"causal estimation settings: unknown key(s) {unknown}; known: {sorted(DEFAULT_SETTINGS)}")
    out = {**DEFAULT_SETTINGS, **given}
    sens = dict(out["sensitivity"] or {})
    unknown = sorted(set(sens) - set(DEFAULT_SETTINGS["sensitivity"]))
    if unknown:
        raise DataError(f"causal estimation settings: unknown sensitivity key(s) {unknown}; known: cf_y, cf_d, rho")
    out["sensitivity"] = {**DEFAULT_SETTINGS["sensitivity"], **sens}

    def integer(v: Any, least: int) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= least

    def number(v: Any, lo: float, hi: float, closed: bool = False) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            return False
        return lo <= v <= hi if closed else lo < v < hi

    sens = out["sensitivity"]
    checks = [("alpha", out["alpha"], number(out["alpha"], 0, 1), "a number in (0, 1)"),
              ("trimming_threshold", out["trimming_threshold"], number(out["trimming_threshold"], 0, 0.5),
               "a number in (0, 0.5)"),
              ("n_folds", out["n_folds"], integer(out["n_folds"], 2), "an integer >= 2"),
              ("n_rep", out["n_rep"], integer(out["n_rep"], 1), "an integer >= 1"),
              ("min_group_n", out["min_group_n"], integer(out["min_group_n"], 2), "an integer >= 2"),
              ("sensitivity.cf_y", sens["cf_y"], number(sens["cf_y"], 0, 1) or sens["cf_y"] == 0,
               "a number in [0, 1)"),
              ("sensitivity.cf_d", sens["cf_d"], number(sens["cf_d"], 0, 1) or sens["cf_d"] == 0,
               "a number in [0, 1)"),
              ("sensitivity.rho", sens["rho"], number(sens["rho"], -1, 1, closed=True), "a number in [-1, 1]")]
    for key, value, ok, what in checks:
        if not ok:
            raise DataError(f"causal estimation settings: {key} = {value!r} must be {what}")
    return out


def _validate(frame: Any, design: dict[str, Any]) -> pd.DataFrame:
    """The rows with a treatment, checked: the columns the design needs, 0/1 treatment, complete features."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"the analytic frame must be a pandas DataFrame, not {type(frame).__name__}")
    if not isinstance(design, dict) or design.get("kind") not in KINDS:
        kind = design.get("kind") if isinstance(design, dict) else design
        raise DataError(f"design kind {kind!r} is not known; use one of {list(KINDS)}")
    missing = [c for c in ("treated", "outcome") if c not in frame.columns]
    for key, col in (("blocks", "block"), ("cluster", "cluster")):
        if design.get(key) and col not in frame.columns:
            missing.append(f"{col} (design {key}: {design[key]})")
    if missing:
        raise DataError(f"the analytic frame has no column {', '.join(missing)}")
    # positions as the index: a propensity returned for the frame is aligned with its rows by position
    frame = frame.reset_index(drop=True)
    treated = pd.to_numeric(frame["treated"], errors="coerce")
    bad = sorted(set(frame.loc[treated.notna() & ~treated.isin([0, 1]), "treated"].astype(str)))
    if bad or (treated.isna() & frame["treated"].notna()).any():
        bad += sorted(set(frame.loc[treated.isna() & frame["treated"].notna(), "treated"].astype(str)))
        raise DataError(f"column treated must be 0 or 1; found {bad[:5]}")
    rows = frame.loc[treated.notna()].copy()
    rows["treated"] = treated[treated.notna()].astype(int)
    rows["outcome"] = pd.to_numeric(rows["outcome"], errors="coerce")
    for col in [c for c in rows.columns if c.startswith(FEATURE)]:
        values = pd.to_numeric(rows[col], errors="coerce")
        if values.isna().any():
            raise DataError(f"feature column {col} has {int(values.isna().sum())} missing or non-numeric value(s)")
        rows[col] = values.astype(float)
    for col in ("block", "cluster"):
        if col in rows.columns and rows[col].isna().any():
            raise DataError(f"column {col} has {int(rows[col].isna().sum())} missing value(s)")
    analysed = rows[rows["outcome"].notna()]
    for arm, name in ((1, "treated"), (0, "control")):
        if int((analysed["treated"] == arm).sum()) < 2:
            raise DataError(f"fewer than 2 {name} rows with an outcome (column outcome): "
                            f"{int((analysed['treated'] == arm).sum())}")
    return rows


def features(rows: pd.DataFrame) -> list[str]:
    """The x__ feature columns that vary in `rows`."""
    return [c for c in rows.columns if c.startswith(FEATURE) and rows[c].nunique() > 1]


def _interval(est: float, se: float, alpha: float) -> tuple[float, float, float]:
    z = stats.norm.ppf(1 - alpha / 2)
    p = 2 * stats.norm.sf(abs(est / se)) if se > 0 else np.nan
    return est - z * se, est + z * se, p


def naive(y: np.ndarray, t: np.ndarray, alpha: float) -> dict[str, Any]:
    """Difference in means treated - control with Welch's standard error and a normal interval."""
    y1, y0 = y[t == 1], y[t == 0]
    est = y1.mean() - y0.mean()
    se = float(np.sqrt(y1.var(ddof=1) / len(y1) + y0.var(ddof=1) / len(y0)))
    lo, hi, p = _interval(est, se, alpha)
    return {"estimator": "difference in means", "estimate": _f(est), "se": _f(se), "ci_low": _f(lo),
            "ci_high": _f(hi), "p_value": _f(p)}


def smd(x: np.ndarray, t: np.ndarray, w: np.ndarray | None = None, sd: float | None = None) -> tuple:
    """(mean treated, mean control, standardised mean difference): the difference over the pooled SD of the two
    arms (unweighted, so that the SMD before and after weighting share their scale); weights `w` for the means."""
    x1, x0 = x[t == 1], x[t == 0]
    if w is None:
        m1, m0 = x1.mean(), x0.mean()
    else:
        m1, m0 = np.average(x1, weights=w[t == 1]), np.average(x0, weights=w[t == 0])
    if sd is None:
        sd = float(np.sqrt((x1.var(ddof=1) + x0.var(ddof=1)) / 2))
    d = (m1 - m0) / sd if sd > 0 else (0.0 if np.isclose(m1, m0) else np.nan)
    return m1, m0, d


def balance(rows: pd.DataFrame, weights: np.ndarray | None = None) -> dict[str, Any]:
    """The SMD of every feature between the arms in `rows` (and weighted by `weights`, aligned with rows)."""
    t = rows["treated"].to_numpy()
    out_rows, above, above_w, smds, smds_w = [], 0, 0, [], []
    for col in [c for c in rows.columns if c.startswith(FEATURE)]:
        x = rows[col].to_numpy(float)
        m1, m0, d = smd(x, t)
        x1, x0 = x[t == 1], x[t == 0]
        dw = None
        if weights is not None:
            dw = smd(x, t, weights, float(np.sqrt((x1.var(ddof=1) + x0.var(ddof=1)) / 2)))[2]
            smds_w.append(abs(dw) if np.isfinite(dw) else np.inf)
            above_w += int(not abs(dw) < BALANCE_THRESHOLD)
        smds.append(abs(d) if np.isfinite(d) else np.inf)
        above += int(not abs(d) < BALANCE_THRESHOLD)
        out_rows.append({"feature": col, "covariate": covariate_of(col), "mean_treated": _f(m1),
                         "mean_control": _f(m0), "smd": _f(d), "smd_weighted": _f(dw)})
    return {"threshold": BALANCE_THRESHOLD, "rows": out_rows, "max_abs_smd": _f(max(smds, default=np.nan)),
            "max_abs_smd_weighted": _f(max(smds_w, default=np.nan)) if weights is not None else None,
            "n_above": above, "n_above_weighted": above_w if weights is not None else None}


def _max_abs_smd(rows: pd.DataFrame) -> float | None:
    t = rows["treated"].to_numpy()
    vals = [abs(smd(rows[c].to_numpy(float), t)[2]) for c in features(rows)]
    vals = [v if np.isfinite(v) else np.inf for v in vals]
    return _f(max(vals, default=np.nan))


# ---- randomised ----------------------------------------------------------------------------------
def ols_effect(rows: pd.DataFrame, y: str, alpha: float, covariates: list[str] | None = None) -> dict[str, Any]:
    """OLS of `y` on treated (+ block fixed effects when rows have a `block` column, + `covariates`); standard
    errors cluster-robust at `cluster` when rows have it, HC2 otherwise. The coefficient of treated with its
    interval; raises DataError when it cannot be estimated."""
    import statsmodels.api as sm

    parts = [pd.Series(1.0, index=rows.index, name="const"), rows["treated"].astype(float)]
    if "block" in rows.columns and rows["block"].nunique() > 1:
        if rows.groupby("block")["treated"].nunique().max() < 2:
            raise DataError("no block has both treated and control rows: no comparison within blocks")
        parts.append(pd.get_dummies(rows["block"].astype(str), prefix="block", drop_first=True, dtype=float))
    if covariates:
        parts.append(rows[covariates].astype(float))
    X = _independent(pd.concat(parts, axis=1))
    model = sm.OLS(rows[y].to_numpy(float), X)
    clustered = "cluster" in rows.columns
    if clustered:
        groups = pd.factorize(rows["cluster"].astype(str))[0]
        if len(np.unique(groups)) < 2:
            raise DataError("fewer than 2 clusters: no cluster-robust standard error")
        fit = model.fit(cov_type="cluster", cov_kwds={"groups": groups})
    else:
        fit = model.fit(cov_type="HC2")
    i = list(X.columns).index("treated")
    est, se, p = fit.params.iloc[i], fit.bse.iloc[i], fit.pvalues.iloc[i]
    lo, hi = fit.conf_int(alpha=alpha).iloc[i]
    if not np.isfinite(se):
        raise DataError("the effect of treated has no finite standard error")
    return {"estimate": est, "se": se, "ci_low": lo, "ci_high": hi, "p_value": p}


def _independent(X: pd.DataFrame) -> pd.DataFrame:
    """The columns of X without those that are linear combinations of the columns before them (a one-hot
    covariate with all its levels beside the intercept, a feature constant within blocks), so that the
    coefficient of treated, always kept (second), has a well-defined robust variance."""
    A = X.to_numpy(float)
    norms = np.linalg.norm(A, axis=0)
    r = np.abs(np.diag(np.linalg.qr(A / np.where(norms > 0, norms, 1), mode="r")))
    keep = (r > 1e-9) & (norms > 0)
    keep[:2] = True
    return X.loc[:, keep]


def _se_prose(rows: pd.DataFrame, design: dict[str, Any]) -> str:
    if "cluster" in rows.columns:
        return (f"cluster-robust (statsmodels cov_type='cluster', CR1) at {design.get('cluster') or 'cluster'}, "
                f"{rows['cluster'].nunique()} clusters")
    return "heteroskedasticity-robust (HC2); no cluster column"


def _randomized(rows: pd.DataFrame, analysed: pd.DataFrame, design: dict[str, Any], s: dict[str, Any]) -> dict:
    alpha = s["alpha"]
    blocked = "block" in analysed.columns
    name = "difference in means with block fixed effects" if blocked else "difference in means"
    lib = f"statsmodels {_version('statsmodels')}"
    prose = _se_prose(analysed, design)
    primary = {"estimator": name + " (OLS)", "library": lib,
               **{k: _f(v) for k, v in ols_effect(analysed, "outcome", alpha).items()}, "standard_errors": prose}
    covs = features(analysed)
    adjusted = {"estimator": name + f" adjusted for {len(covs)} covariate features (OLS)", "library": lib,
                **{k: _f(v) for k, v in ols_effect(analysed, "outcome", alpha, covs).items()},
                "standard_errors": prose}
    missing = rows.assign(missing=rows["outcome"].isna().astype(float))
    attrition = _attrition_rates(missing)
    if missing["missing"].nunique() > 1:
        diff = ols_effect(missing, "missing", alpha)
        attrition.update({"difference": _f(diff["estimate"]), "ci_low": _f(diff["ci_low"]),
                          "ci_high": _f(diff["ci_high"]), "p_value": _f(diff["p_value"])})
    attrition["stayers_max_abs_smd"] = _max_abs_smd(analysed)
    groups, skipped = [], []
    for attr, label, sub, n1, n0 in _groups(analysed):
        if min(n1, n0) < s["min_group_n"]:
            skipped.append(_skip(attr, label, sub, n1, n0, s["min_group_n"]))
            continue
        try:
            eff = ols_effect(sub, "outcome", alpha)
        except DataError as e:
            skipped.append({"attribute": attr, "group": label, "n": len(sub), "reason": str(e)})
            continue
        groups.append({"attribute": attr, "group": label, "n": len(sub), "estimate": _f(eff["estimate"]),
                       "se": _f(eff["se"]), "ci_low": _f(eff["ci_low"]), "ci_high": _f(eff["ci_high"])})
    return {"primary": primary, "adjusted": adjusted, "balance": balance(rows), "attrition": attrition,
            "overlap": None, "sensitivity": None, "learners": None,
            "heterogeneity": {"exploratory": True, "method": "the randomised comparison within each group, with "
                              f"{'cluster-robust' if 'cluster' in rows.columns else 'HC2'} intervals; exploratory",
                              "groups": groups, "skipped": skipped}}, None


def _attrition_rates(missing: pd.DataFrame) -> dict[str, Any]:
    t, m = missing["treated"].to_numpy(), missing["missing"].to_numpy()
    return {"missing_treated": int(m[t == 1].sum()), "missing_control": int(m[t == 0].sum()),
            "rate_treated": _f(m[t == 1].mean()), "rate_control": _f(m[t == 0].mean()),
            # no row lacks its outcome: no attrition to compare
            "difference": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0}


def _groups(analysed: pd.DataFrame):
    """(attribute, group label, rows, n treated, n control) for each label of each g__ column."""
    for col in sorted(c for c in analysed.columns if c.startswith(GROUP)):
        labels = analysed[col].dropna().astype(str)
        for label in sorted(labels.unique()):
            sub = analysed.loc[labels.index[labels == label]]
            yield (col[len(GROUP):], label, sub, int((sub["treated"] == 1).sum()),
                   int((sub["treated"] == 0).sum()))


def _skip(attr: str, label: str, sub: pd.DataFrame, n1: int, n0: int, min_n: int) -> dict[str, Any]:
    return {"attribute": attr, "group": label, "n": len(sub),
            "reason": f"fewer than {min_n} analysed rows in an arm ({n1} treated, {n0} control)"}


# ---- observational -------------------------------------------------------------------------------
def learners(seed: int) -> tuple[Any, Any]:
    """The nuisance learners: gradient-boosted trees for the outcome, a cross-validated (ridge) logistic
    regression on standardised features for the propensity."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    outcome = HistGradientBoostingRegressor(max_iter=300, learning_rate=0.1, max_leaf_nodes=15, min_samples_leaf=20,
                                            early_stopping=True, validation_fraction=0.1, n_iter_no_change=10,
                                            random_state=seed)
    propensity = make_pipeline(StandardScaler(), LogisticRegressionCV(
        Cs=10, cv=3, l1_ratios=(0.0,), scoring="neg_log_loss", max_iter=2000, use_legacy_attributes=False,
        random_state=seed))
    return outcome, propensity


LEARNER_PROSE = {"outcome": "HistGradientBoostingRegressor(max_iter=300, learning_rate=0.1, max_leaf_nodes=15, "
                            "min_samples_leaf=20, early stopping on a 10% validation split after 10 rounds "
                            "without improvement)",
                 "propensity": "StandardScaler + LogisticRegressionCV(Cs=10, cv=3, L2 penalty, "
                               "scoring=neg_log_loss)"}


def _observational(rows: pd.DataFrame, analysed: pd.DataFrame, design: dict[str, Any], s: dict[str, Any],
                   seed: int) -> tuple[dict, np.ndarray]:
    import doubleml as dml
    from doubleml.utils.propensity_score_processing import PSProcessorConfig
    from sklearn.base import clone

    alpha, thr = s["alpha"], float(s["trimming_threshold"])
    covs = features(analysed)
    if not covs:
        raise DataError("the analytic frame has no x__ feature that varies among the rows with an outcome: an "
                        "observational design needs covariates")
    data = analysed[covs + ["treated", "outcome"]].reset_index(drop=True)
    ml_g, ml_m = learners(seed)
    state = np.random.get_state()
    try:
        np.random.seed(seed)  # DoubleML draws its folds with numpy's global generator
        obj = dml.DoubleMLData(data, y_col="outcome", d_cols="treated", x_cols=covs)
        model = dml.DoubleMLIRM(obj, ml_g, ml_m, n_folds=int(s["n_folds"]), n_rep=int(s["n_rep"]), score="ATE",
                                ps_processor_config=PSProcessorConfig(clipping_threshold=thr))
        # the propensities cross-fitted on DoubleML's own folds, kept before its clipping (to count the trimmed)
        X, d = data[covs].to_numpy(float), data["treated"].to_numpy(int)
        raw = np.empty((len(data), int(s["n_rep"])))
        for r, folds in enumerate(model.smpls):
            for train, test in folds:
                raw[test, r] = clone(ml_m).fit(X[train], d[train]).predict_proba(X[test])[:, 1]
        model.fit(external_predictions={"treated": {"ml_m": raw}})
        ci = model.confint(level=1 - alpha)
        sens = s["sensitivity"]
        model.sensitivity_analysis(cf_y=float(sens["cf_y"]), cf_d=float(sens["cf_d"]), rho=float(sens["rho"]),
                                   level=1 - alpha)
        sp = model.sensitivity_params
        groups, skipped = [], []
        by_attr: dict[str, list] = {}
        for attr, label, sub, n1, n0 in _groups(analysed):
            if min(n1, n0) < s["min_group_n"]:
                skipped.append(_skip(attr, label, sub, n1, n0, s["min_group_n"]))
            else:
                by_attr.setdefault(attr, []).append((label, sub))
        pos = pd.Series(np.arange(len(analysed)), index=analysed.index)
        for attr, kept in by_attr.items():
            basis = pd.DataFrame({label: np.isin(np.arange(len(analysed)), pos[sub.index].to_numpy())
                                  for label, sub in kept})
            gate = model.gate(groups=basis)
            gci = gate.confint(level=1 - alpha)
            se = np.asarray(gate.se).reshape(-1)
            for j, (label, sub) in enumerate(kept):
                groups.append({"attribute": attr, "group": label, "n": len(sub),
                               "estimate": _f(gci["effect"].iloc[j]), "se": _f(se[j]),
                               "ci_low": _f(gci.iloc[j, 0]), "ci_high": _f(gci.iloc[j, 2])})
    finally:
        np.random.set_state(state)
    e = raw.mean(axis=1)
    clipped = np.clip(e, thr, 1 - thr)
    t = d
    weights = np.where(t == 1, 1 / clipped, 1 / (1 - clipped))
    lib = f"doubleml {_version('doubleml')}"
    primary = {"estimator": "augmented inverse-probability weighting (double machine learning, IRM, "
                            f"{int(s['n_folds'])}-fold cross-fitting)", "library": lib,
               "estimate": _f(model.coef[0]), "se": _f(model.se[0]), "ci_low": _f(ci.iloc[0, 0]),
               "ci_high": _f(ci.iloc[0, 1]), "p_value": _f(model.pval[0]),
               "standard_errors": "from the doubly robust (AIPW) score across the cross-fitting folds"
                                  + (f", aggregated over {int(s['n_rep'])} repetitions of the split"
                                     if int(s["n_rep"]) > 1 else "")
                                  + f"; propensities clipped to [{thr}, {1 - thr}]; not clustered"}
    overlap = {"propensity_min": _f(e.min()), "propensity_max": _f(e.max()),
               "share_below": _f((e < OVERLAP_BOUNDS[0]).mean()), "share_above": _f((e > OVERLAP_BOUNDS[1]).mean()),
               "bounds": list(OVERLAP_BOUNDS), "trimming_threshold": thr,
               "n_trimmed": int(((e < thr) | (e > 1 - thr)).sum()),
               "propensity_quantiles": {"treated": [_f(q) for q in np.quantile(e[t == 1], QUANTILES)],
                                        "control": [_f(q) for q in np.quantile(e[t == 0], QUANTILES)]}}
    sensitivity = {"kind": "omitted-variable bounds (DoubleML sensitivity_analysis)", "cf_y": _f(sens["cf_y"]),
                   "cf_d": _f(sens["cf_d"]), "rho": _f(sens["rho"]),
                   "theta_lower": _f(sp["theta"]["lower"]), "theta_upper": _f(sp["theta"]["upper"]),
                   "ci_lower": _f(sp["ci"]["lower"]), "ci_upper": _f(sp["ci"]["upper"]),
                   "rv": _f(sp["rv"]), "rva": _f(sp["rva"])}
    missing = rows.assign(missing=rows["outcome"].isna().astype(float))
    attrition = _attrition_rates(missing)
    if missing["missing"].nunique() > 1:
        diff = ols_effect(missing.drop(columns=[c for c in ("block", "cluster") if c in missing.columns]),
                          "missing", alpha)
        attrition.update({"difference": _f(diff["estimate"]), "ci_low": _f(diff["ci_low"]),
                          "ci_high": _f(diff["ci_high"]), "p_value": _f(diff["p_value"])})
    attrition["stayers_max_abs_smd"] = _max_abs_smd(analysed)
    out = {"primary": primary, "adjusted": None, "balance": balance(analysed, weights), "attrition": attrition,
           "overlap": overlap, "sensitivity": sensitivity, "learners": dict(LEARNER_PROSE),
           "heterogeneity": {"exploratory": True, "method": "group average treatment effects from the doubly "
                             "robust scores (DoubleML gate); exploratory", "groups": groups, "skipped": skipped}}
    return out, e


# ---- the entry point -----------------------------------------------------------------------------
def estimate(frame: pd.DataFrame, design: dict[str, Any], settings: dict[str, Any] | None, seed: int, *,
             return_propensity: bool = False) -> dict[str, Any] | tuple[dict[str, Any], np.ndarray | None]:
    """The results of the causal study (results.json) from the analytic frame, by the design's kind. With
    `return_propensity`, also the cross-fitted propensity of each row of `frame` (NaN for a row not analysed;
    None for a randomised design)."""
    s = _settings(settings)
    rows = _validate(frame, design)
    analysed = rows[rows["outcome"].notna()]
    t, y = analysed["treated"].to_numpy(), analysed["outcome"].to_numpy(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module="doubleml")
        warnings.filterwarnings("ignore", message=".*inplace.*")
        warnings.filterwarnings("ignore", message=".*keyword-only.*")
        if design["kind"] == "randomized":
            parts, e = _randomized(rows, analysed, design, s)
        else:
            # one OpenMP thread for the boosted trees: on a shared machine their spinning threads slow a fit
            # tenfold, and a single thread is nearly as fast on these sizes
            with threadpool_limits(limits=1, user_api="openmp"):
                parts, e = _observational(rows, analysed, design, s, int(seed))
    results = {"task": "causal", "design": design["kind"], "estimand": "ATE", "alpha": _f(s["alpha"]),
               "n": {"analysed": len(analysed), "treated": int((t == 1).sum()), "control": int((t == 0).sum()),
                     "clusters": int(analysed["cluster"].nunique()) if "cluster" in analysed.columns else None,
                     "blocks": int(analysed["block"].nunique()) if "block" in analysed.columns else None},
               "naive": naive(y, t, s["alpha"]), **parts, "versions": versions(), "seed": int(seed)}
    order = ["task", "design", "estimand", "alpha", "n", "naive", "primary", "adjusted", "balance", "attrition",
             "overlap", "sensitivity", "heterogeneity", "versions", "learners", "seed"]
    results = {k: results[k] for k in order}
    if not return_propensity:
        return results
    if e is None:
        return results, None
    full = np.full(len(frame), np.nan)
    full[analysed.index.to_numpy()] = e
    return results, full
