"""Analyst (multilevel phase): the school-level structure of the outcome, for every declared cluster level.

For each level whose cluster ids the engineered files carry (train_groups.parquet / test_groups.parquet):

- the null (intercept-only) random-intercept model on the training rows: between- and within-cluster variance and
  the intraclass correlation (ICC) with a percentile interval from a bootstrap of the training clusters;
- the random-intercept model with the study's predictors (the engineered training matrix, standardised, constant
  columns dropped, at most ``max_predictors`` columns): its variance components, the proportional reduction of the
  within- and between-cluster variance, and Snijders and Bosker's level-1 and level-2 R2;
- cluster context: the study's simple linear model (logistic regression for a binary outcome, ridge for a
  continuous one) with and without the cluster means of the predictors, compared on the test rows with a paired
  cluster bootstrap of the difference in the primary metric.

Continuous outcome: a linear mixed model fitted by REML with statsmodels' MixedLM (the point estimates); the
bootstrap refits the same REML estimator on each resample's cluster sufficient statistics (:func:`reml_null`,
identical to MixedLM on the null model, and fast). Binary outcome: a random-intercept logistic model fitted by
maximum likelihood with adaptive Gauss-Hermite quadrature (:func:`agq_logit`, the estimator of Stata's melogit
and of lme4's glmer with nAGQ > 1); the variances are on the latent scale, the level-1 variance being that of the
standard logistic distribution, pi^2/3, and the predictor model's components are rescaled to the null model's
total variance before the reductions are taken (Hox 2010, section 6.5), so that level1_r2 is Snijders and
Bosker's R2 for a dichotomous outcome, var(X b) / (var(X b) + tau^2 + pi^2/3).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

#: the level-1 variance of the latent logistic outcome
LOGISTIC_VAR = math.pi ** 2 / 3
#: nodes of the adaptive Gauss-Hermite quadrature
AGQ_NODES = 15
#: decimals of every reported number
DECIMALS = 6


def _r(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), DECIMALS)


# ---- the null linear model on cluster sufficient statistics -------------------------------------------------------

def cluster_stats(y: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster: its rows, its outcome mean and its within-cluster sum of squares."""
    n = np.bincount(codes, minlength=k).astype(float)
    s = np.bincount(codes, weights=y, minlength=k)
    mean = s / np.maximum(n, 1)
    within = np.bincount(codes, weights=(y - mean[codes]) ** 2, minlength=k)
    return n, mean, within


def reml_null(n: np.ndarray, mean: np.ndarray, within: np.ndarray, w: np.ndarray | None = None
              ) -> tuple[float, float]:
    """(between, within) variance of the random-intercept model y = mu + u_j + e_ij by REML, from each cluster's
    rows, mean and within sum of squares; ``w`` counts how often each cluster is drawn (a bootstrap resample:
    a cluster drawn twice is two clusters). The likelihood is profiled over mu and the residual variance and
    maximised over lambda = between / within."""
    from scipy.optimize import minimize_scalar

    w = np.ones_like(n) if w is None else np.asarray(w, dtype=float)
    keep = w > 0
    n, mean, within, w = n[keep], mean[keep], within[keep], w[keep]
    total = float((w * n).sum())
    ss_within = float((w * within).sum())

    def parts(lam: float) -> tuple[float, float]:
        a = n / (1 + n * lam)
        mu = float((w * a * mean).sum() / (w * a).sum())
        sigma2 = (ss_within + float((w * a * (mean - mu) ** 2).sum())) / (total - 1)
        return sigma2, float((w * a).sum())

    def negative(loglam: float) -> float:
        lam = math.exp(loglam)
        sigma2, sa = parts(lam)
        return 0.5 * ((total - 1) * math.log(sigma2) + float((w * np.log1p(n * lam)).sum()) + math.log(sa))

    best = minimize_scalar(negative, bounds=(-20.0, 10.0), method="bounded", options={"xatol": 1e-7})
    lam = math.exp(best.x) if best.x > -19.5 else 0.0
    sigma2, _ = parts(lam)
    return lam * sigma2, sigma2


# ---- the random-intercept logistic model by adaptive Gauss-Hermite quadrature -----------------------------------

def agq_logit(succ: np.ndarray, trials: np.ndarray, X: np.ndarray, codes: np.ndarray, k: int,
              w: np.ndarray | None = None, nodes: int = AGQ_NODES, rounds: int = 3,
              start: np.ndarray | None = None) -> dict[str, Any]:
    """Maximum likelihood of the random-intercept logistic model logit P(y=1) = X b + u_j, u_j ~ N(0, tau^2), by
    adaptive Gauss-Hermite quadrature: each cluster's integral is taken on ``nodes`` points centred on the mode of
    its integrand and scaled by its curvature (Liu and Pierce 1994). Records are rows (trials 1) or binomial counts
    (a cluster's successes of its trials, the null model); ``w`` weights clusters (a bootstrap resample). The
    centres are updated ``rounds`` times, the parameters optimised by L-BFGS-B with the exact gradient in between.
    Returns {"beta", "tau2", "loglik"}."""
    import scipy.sparse as sp
    from scipy.optimize import minimize
    from scipy.special import expit, logsumexp

    succ, trials = np.asarray(succ, float), np.asarray(trials, float)
    X = np.asarray(X, float)
    cw = np.ones(k) if w is None else np.asarray(w, float)
    agg = sp.csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(k, len(codes)))
    xq, wq = np.polynomial.hermite.hermgauss(nodes)
    base = np.log(wq) + xq ** 2
    if start is None:
        rate = float(np.clip((cw[codes] * succ).sum() / (cw[codes] * trials).sum(), 1e-4, 1 - 1e-4))
        start = np.zeros(X.shape[1] + 1)
        start[0] = math.log(rate / (1 - rate))  # the first column is the intercept
        start[-1] = math.log(0.5)
    theta = np.asarray(start, float).copy()

    def modes(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eta, tau2 = X @ theta[:-1], math.exp(2 * theta[-1])
        u = np.zeros(k)
        h = np.ones(k)
        for _ in range(50):
            p = expit(eta + u[codes])
            g = agg @ (succ - trials * p) - u / tau2
            h = agg @ (trials * p * (1 - p)) + 1 / tau2
            step = g / h
            u += step
            if np.max(np.abs(step)) < 1e-10:
                break
        return u, 1 / np.sqrt(h)

    def objective(theta: np.ndarray, m: np.ndarray, s: np.ndarray) -> tuple[float, np.ndarray]:
        beta, logtau = theta[:-1], theta[-1]
        tau2 = math.exp(2 * logtau)
        U = m[:, None] + math.sqrt(2) * s[:, None] * xq[None, :]
        lin = (X @ beta)[:, None] + U[codes]
        ell = succ[:, None] * lin - trials[:, None] * np.logaddexp(0, lin)
        T = (base[None, :] + np.log(math.sqrt(2) * s)[:, None] + agg @ ell - U ** 2 / (2 * tau2) - logtau
             - 0.5 * math.log(2 * math.pi))
        lj = logsumexp(T, axis=1)
        post = np.exp(T - lj[:, None])
        resid = succ[:, None] - trials[:, None] * expit(lin)
        r = (post[codes] * resid).sum(axis=1) * cw[codes]
        g_beta = X.T @ r
        g_tau = float((cw * (post * (U ** 2 / tau2 - 1)).sum(axis=1)).sum())
        return -float((cw * lj).sum()), -np.append(g_beta, g_tau)

    bounds = [(None, None)] * X.shape[1] + [(-8.0, 4.0)]
    loglik = float("nan")
    for _ in range(rounds):
        m, s = modes(theta)
        fit = minimize(objective, theta, args=(m, s), jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": 500})
        theta, loglik = fit.x, -float(fit.fun)
    tau2 = math.exp(2 * theta[-1])
    return {"beta": theta[:-1], "tau2": tau2 if theta[-1] > -7.99 else 0.0, "loglik": loglik,
            "converged": bool(fit.success)}


# ---- the parts of one level ---------------------------------------------------------------------------------------

def _codes(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, codes = np.unique(np.asarray(ids).astype(str), return_inverse=True)
    return uniq, codes


def null_model(y: np.ndarray, codes: np.ndarray, k: int, binary: bool, *, n_boot: int, seed: int
               ) -> tuple[dict[str, Any], float, float]:
    """The intercept-only model: between and within variance, ICC and its cluster-bootstrap interval."""
    n, mean, within_ss = cluster_stats(y, codes, k)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot) if n_boot > 0 else np.zeros((0, k))
    if binary:
        succ = np.bincount(codes, weights=y, minlength=k)
        ones = np.ones((k, 1))
        fit = agq_logit(succ, n, ones, np.arange(k), k)
        between, within, converged = fit["tau2"], LOGISTIC_VAR, fit["converged"]
        iccs = []
        for d in draws:
            b = agq_logit(succ, n, ones, np.arange(k), k, w=d, rounds=1,
                          start=np.append(fit["beta"], 0.5 * math.log(max(between, 1e-4))))["tau2"]
            iccs.append(b / (b + LOGISTIC_VAR))
        how = "ML by adaptive Gauss-Hermite quadrature refitted on each resample's cluster counts"
    else:
        # the one-way model's REML estimate from the clusters' sufficient statistics (the same estimator as each
        # bootstrap resample's): statsmodels' MixedLM can stop short of the optimum of this one-parameter likelihood
        # (on the HS&B training rows it reported non-convergence at a between variance a quarter too small), so it is
        # kept as a check that both agree, recorded in `converged`
        from statsmodels.regression.mixed_linear_model import MixedLM

        between, within = reml_null(n, mean, within_ss)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = MixedLM(y, np.ones((len(y), 1)), groups=codes).fit(reml=True)
        check = float(np.asarray(res.cov_re)[0, 0])
        converged = bool(res.converged) or math.isclose(check, between, rel_tol=1e-3, abs_tol=1e-6)
        iccs = []
        for d in draws:
            b, e = reml_null(n, mean, within_ss, d)
            iccs.append(b / (b + e) if b + e > 0 else 0.0)
        how = "REML refitted on each resample's cluster sufficient statistics"
    icc = between / (between + within) if between + within > 0 else 0.0
    ci = [float(np.percentile(iccs, 2.5)), float(np.percentile(iccs, 97.5))] if iccs else None
    return ({"between_var": _r(between), "within_var": _r(within), "icc": _r(icc),
             "icc_ci": [_r(c) for c in ci] if ci else None, "converged": converged,
             "ci_method": (f"percentile interval of a bootstrap of the training clusters ({n_boot} resamples, "
                           f"seed {seed}; {how})")}, between, within)


def usable_columns(X: pd.DataFrame, y: np.ndarray, max_predictors: int) -> tuple[list[str], int]:
    """The numeric columns of the training matrix that vary, at most ``max_predictors`` of them (those with the
    largest absolute correlation with the outcome on the training rows, ties in column order); with the number of
    varying columns before the cap."""
    num = X.select_dtypes("number")
    varying = [c for c in num.columns if num[c].nunique(dropna=True) > 1 and num[c].notna().all()]
    if len(varying) <= max_predictors:
        return varying, len(varying)
    yc = y - y.mean()
    m = num[varying].to_numpy(float)
    m = m - m.mean(axis=0)
    corr = np.abs(m.T @ yc) / (np.sqrt((m ** 2).sum(axis=0)) * np.sqrt((yc ** 2).sum()) + 1e-300)
    order = sorted(range(len(varying)), key=lambda i: (-corr[i], i))[:max_predictors]
    return [varying[i] for i in sorted(order)], len(varying)


def predictor_model(y: np.ndarray, Xs: np.ndarray, codes: np.ndarray, k: int, binary: bool
                    ) -> tuple[float, float, float, bool]:
    """(between, within, var of the fixed part X b, converged) of the random-intercept model with the predictors (standardised
    matrix Xs, without intercept)."""
    design = np.column_stack([np.ones(len(y)), Xs])
    if binary:
        fit = agq_logit(y, np.ones(len(y)), design, codes, k)
        return fit["tau2"], LOGISTIC_VAR, float(np.var(Xs @ fit["beta"][1:])), fit["converged"]
    from statsmodels.regression.mixed_linear_model import MixedLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = MixedLM(y, design, groups=codes).fit(reml=True)
    beta = np.asarray(res.fe_params)
    return float(np.asarray(res.cov_re)[0, 0]), float(res.scale), float(np.var(Xs @ beta[1:])), bool(res.converged)


def explained(b0: float, w0: float, b1: float, w1: float, n_bar: float) -> dict[str, Any]:
    """Proportional reductions of the within and between variance and Snijders and Bosker's R2 at level 1
    (1 - (b1 + w1) / (b0 + w0)) and level 2 (1 - (b1 + w1 / n) / (b0 + w0 / n), n the mean cluster size).
    A reduction is None when the null model's component is zero."""
    return {"within": _r(1 - w1 / w0) if w0 > 0 else None, "between": _r(1 - b1 / b0) if b0 > 0 else None,
            "level1_r2": _r(1 - (b1 + w1) / (b0 + w0)) if b0 + w0 > 0 else None,
            "level2_r2": _r(1 - (b1 + w1 / n_bar) / (b0 + w0 / n_bar)) if b0 + w0 / n_bar > 0 else None,
            "cluster_size_used": _r(n_bar)}


def cluster_means(train_X: pd.DataFrame, train_ids: np.ndarray, test_X: pd.DataFrame, test_ids: np.ndarray
                  ) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The cluster mean of every column for the training and the test rows: a cluster seen in training takes the
    mean of its training rows only; a test cluster not seen in training (a grouped split) the mean of its own test
    rows' predictor values (never its outcome). With the sentence saying which."""
    train_ids, test_ids = np.asarray(train_ids).astype(str), np.asarray(test_ids).astype(str)
    tr = train_X.reset_index(drop=True)
    te = test_X.reset_index(drop=True)
    by_train = tr.groupby(train_ids).mean()
    by_test = te.groupby(test_ids).mean()
    seen = np.isin(test_ids, by_train.index)
    train_means = by_train.loc[train_ids].reset_index(drop=True)
    test_means = pd.DataFrame(index=range(len(te)), columns=tr.columns, dtype=float)
    if seen.any():
        test_means.loc[seen] = by_train.loc[test_ids[seen]].to_numpy()
    if (~seen).any():
        test_means.loc[~seen] = by_test.loc[test_ids[~seen]].to_numpy()
    n_seen, n_unseen = len(set(test_ids[seen])), len(set(test_ids[~seen]))
    if not n_unseen:
        how = "training rows"
    elif not n_seen:
        how = ("training rows for the training clusters; each test cluster (none seen in training) from its own test "
               "rows' predictor values, never their outcome")
    else:
        how = (f"training rows for the training clusters and the {n_seen} test clusters seen in training; the "
               f"{n_unseen} other test clusters from their own test rows' predictor values, never their outcome")
    return train_means, test_means.astype(float), how


#: the penalties tried for the context comparison's simple model, by grouped cross-validation (context)
CONTEXT_C = (0.001, 0.01, 0.1, 1.0)
CONTEXT_ALPHA = (1.0, 100.0, 10000.0, 1000000.0)
CONTEXT_FOLDS = 3
CONTEXT_MIN_SHARE = 0.05
CONTEXT_CLUSTERS_PER_FEATURE = 10


def varying_within(train_X: pd.DataFrame, codes: np.ndarray, columns: list[str]) -> list[str]:
    """The columns that vary within at least one training cluster: a cluster-level column (a school's sector or
    mean SES) is its own cluster mean, so only the measures of the students themselves give a context."""
    frame = train_X[columns].reset_index(drop=True)
    counts = frame.groupby(np.asarray(codes)).nunique()
    return [c for c in columns if bool((counts[c] > 1).any())]


def context_columns(train_X: pd.DataFrame, y: np.ndarray, codes: np.ndarray, columns: list[str]) -> list[str]:
    """The predictors whose cluster means form the context: those that vary within clusters (varying_within), without
    rare indicator columns (a 0/1 column with under CONTEXT_MIN_SHARE of either value: its cluster means are mostly 0
    and a new cluster's one case is an outlier), at most one per CONTEXT_CLUSTERS_PER_FEATURE training clusters, those
    whose cluster means correlate most with the clusters' mean outcome (training rows only) first."""
    frame = train_X.reset_index(drop=True)
    keep = []
    for c in varying_within(train_X, codes, columns):
        values = frame[c].to_numpy(float)
        if set(np.unique(values)) <= {0.0, 1.0} and min(values.mean(), 1 - values.mean()) < CONTEXT_MIN_SHARE:
            continue
        keep.append(c)
    k = int(codes.max()) + 1 if len(codes) else 0
    limit = max(1, k // CONTEXT_CLUSTERS_PER_FEATURE)
    if len(keep) <= limit:
        return keep
    means = frame[keep].groupby(np.asarray(codes)).mean()
    outcome = pd.Series(np.asarray(y, float)).groupby(np.asarray(codes)).mean()
    strength = {c: abs(float(np.nan_to_num(np.corrcoef(means[c], outcome)[0, 1]))) for c in keep}
    return sorted(keep, key=lambda c: (-strength[c], keep.index(c)))[:limit]


def context(task: str, train_X: pd.DataFrame, train_y: np.ndarray, train_ids: np.ndarray, test_X: pd.DataFrame,
            test_y: np.ndarray, test_ids: np.ndarray, columns: list[str], *, n_boot: int, seed: int
            ) -> dict[str, Any]:
    """The simple linear model with and without the cluster means of ``columns``, on the test rows: the primary
    metric of each, their paired difference (with - without) and its cluster-bootstrap interval."""
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from edm_ars.analysis.evaluation import evaluate_models, paired_difference, resample_counts
    from edm_ars.analysis.metrics import HIGHER_IS_BETTER, PRIMARY

    binary = task == "binary_classification"
    metric = PRIMARY[task]
    if not columns:
        return {"metric": metric, "skipped": "no predictor varies within the clusters: every one is a cluster-level "
                "measure, which is its own cluster mean", "n_context_features": 0}
    base_cols = [c for c in train_X.select_dtypes("number").columns if train_X[c].nunique() > 1]
    tr_means, te_means, how = cluster_means(train_X[columns], train_ids, test_X[columns], test_ids)
    tr_means.columns = te_means.columns = [f"context__{c}" for c in columns]

    groups = np.asarray(train_ids).astype(str)
    folds = min(CONTEXT_FOLDS, len(set(groups)))
    chosen: dict[str, float] = {}

    def fit_predict(name: str, tr: pd.DataFrame, te: pd.DataFrame) -> np.ndarray:
        """The penalty chosen by cross-validation over the training clusters (whole clusters per fold, as the test
        clusters are new): cluster means are constant within a cluster, so with few clusters an untuned fit would
        interpolate the training clusters and extrapolate to new ones (STAR: 53 means of 48 schools)."""
        from sklearn.model_selection import GridSearchCV, GroupKFold

        if binary:
            model, grid, scoring = LogisticRegression(max_iter=2000), {"model__C": CONTEXT_C}, "roc_auc"
        else:
            model, grid, scoring = Ridge(), {"model__alpha": CONTEXT_ALPHA}, "r2"
        pipe = Pipeline([("scale", StandardScaler()), ("model", model)])
        target = train_y.astype(int) if binary else train_y
        search = GridSearchCV(pipe, grid, cv=GroupKFold(n_splits=folds), scoring=scoring, n_jobs=1)
        search.fit(tr.to_numpy(float), target, groups=groups)
        chosen[name] = float(next(iter(search.best_params_.values())))
        fitted = search.best_estimator_
        te_ = te.to_numpy(float)
        return fitted.predict_proba(te_)[:, 1] if binary else fitted.predict(te_)

    tr0, te0 = train_X[base_cols].reset_index(drop=True), test_X[base_cols].reset_index(drop=True)
    without = fit_predict("without", tr0, te0)
    with_ = fit_predict("with", pd.concat([tr0, tr_means], axis=1), pd.concat([te0, te_means], axis=1))
    counts, _ = resample_counts(len(test_y), n_boot, seed, groups=np.asarray(test_ids).astype(str), clustered=True)
    models, dist = evaluate_models(task, test_y, {"without": without, "with": with_}, n_resamples=n_boot, seed=seed,
                                   counts=counts)
    diff = paired_difference(dist, "with", "without")
    higher = HIGHER_IS_BETTER[metric]
    a, b = models["with"]["metrics"][metric], models["without"]["metrics"][metric]
    ci = diff["ci"]
    improves = bool(ci[0] > 0) if higher else bool(ci[1] < 0)
    return {"metric": metric, "without": _r(b), "with": _r(a), "difference": _r(a - b), "ci": [_r(c) for c in ci],
            "better": "higher" if higher else "lower", "improves": improves,
            "model": (f"logistic regression (L2, standardised predictors; C from {list(CONTEXT_C)} by {folds}-fold "
                      "cross-validation over the training clusters), scikit-learn" if binary
                      else f"ridge regression (standardised predictors; alpha from {list(CONTEXT_ALPHA)} by {folds}-fold "
                      "cross-validation over the training clusters), scikit-learn"),
            "penalty": {"without": chosen["without"], "with": chosen["with"]},
            "n_context_features": len(columns), "means_from": how,
            "ci_method": f"paired bootstrap of the test clusters ({n_boot} resamples, seed {seed}), percentile"}


def support(unit: str, k: int, few: bool, icc: dict[str, Any], min_clusters: int) -> str:
    """One sentence: what the level's estimates can and cannot support."""
    ci = icc.get("icc_ci")
    span = f" (interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else ""
    if few:
        return (f"With {k} {unit} clusters, fewer than {min_clusters}, the between-{unit} variance and the ICC"
                f"{span} are estimated imprecisely: they can show whether {unit}s differ, not by how much, and the "
                f"context comparison rests on few {unit}s.")
    return (f"With {k} {unit} clusters the ICC{span} describes how much of the outcome's variance lies between "
            f"{unit}s in these data; it is an association with {unit} membership, not a causal {unit} effect.")


def level_analysis(task: str, unit: str, column: str, train_X: pd.DataFrame, train_y: np.ndarray,
                   train_ids: np.ndarray, test_X: pd.DataFrame, test_y: np.ndarray, test_ids: np.ndarray, *,
                   seed: int, n_bootstrap: int, n_bootstrap_icc: int, min_clusters: int, max_predictors: int
                   ) -> dict[str, Any]:
    """The record of one cluster level (the contract's `levels[i]`)."""
    binary = task == "binary_classification"
    y = np.asarray(train_y, float)
    _, codes = _codes(train_ids)
    k = int(codes.max()) + 1
    sizes = np.bincount(codes, minlength=k)
    null, b0, w0 = null_model(y, codes, k, binary, n_boot=n_bootstrap_icc, seed=seed)
    columns, n_varying = usable_columns(train_X, y, max_predictors)
    Xc = train_X[columns].to_numpy(float)
    sd = Xc.std(axis=0)
    Xs = (Xc - Xc.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    b1, w1, var_fixed, converged = predictor_model(y, Xs, codes, k, binary)
    n_bar = float(sizes.mean())
    pred: dict[str, Any] = {"between_var": _r(b1), "within_var": _r(w1), "n_predictors": len(columns),
                            "fixed_var": _r(var_fixed), "standardised": True, "converged": converged,
                            "capped": (f"{len(columns)} of {n_varying} varying columns (those most correlated with "
                                       "the outcome on the training rows; analysis.multilevel.max_predictors)")
                            if n_varying > len(columns) else None}
    if binary:  # rescaled to the null model's total latent variance (Hox 2010, section 6.5)
        scale = (b0 + w0) / (var_fixed + b1 + w1)
        pred["scale_correction"] = _r(scale)
        expl = explained(b0, w0, b1 * scale, w1 * scale, n_bar)
    else:
        expl = explained(b0, w0, b1, w1, n_bar)
    few = k < min_clusters
    return {"unit": unit, "column": column, "n_clusters": k, "n_rows": len(y),
            "cluster_size": {"mean": _r(n_bar), "min": int(sizes.min()), "max": int(sizes.max())},
            "null_model": null, "predictor_model": pred, "explained": expl,
            "context": context(task, train_X, y, train_ids, test_X, np.asarray(test_y, float), test_ids,
                               context_columns(train_X, y, codes, columns), n_boot=n_bootstrap, seed=seed),
            "few_clusters": few, "support": support(unit, k, few, null, min_clusters)}


def estimator(task: str) -> tuple[str, str, str]:
    """(estimator, library, outcome_scale) of a task."""
    import scipy
    import statsmodels

    if task == "binary_classification":
        return ("binomial random-intercept (logistic) mixed model, maximum likelihood by adaptive Gauss-Hermite "
                f"quadrature ({AGQ_NODES} nodes), variances on the latent scale (level-1 variance pi^2/3)",
                f"scipy {scipy.__version__} (L-BFGS-B on the quadrature likelihood); numpy {np.__version__}",
                "latent")
    return ("linear mixed model (random intercept), REML, statsmodels MixedLM", f"statsmodels {statsmodels.__version__}",
            "observed")


def _ids_by_level(split: dict[str, Any], levels: list[dict[str, Any]], train_groups: np.ndarray,
              test_groups: np.ndarray) -> list[tuple[dict[str, Any], str | None]]:
    """Each declared level with None when the engineered groups are its cluster ids, else why they are not. The
    groups files hold the split's groups: a level's clusters when the split kept that level together and no other
    level or unit joined its clusters (the groups are then exactly as many as the level's clusters)."""
    n_groups = len(set(np.asarray(train_groups).astype(str)) | set(np.asarray(test_groups).astype(str)))
    by_unit = {lv["unit"]: lv for lv in split.get("cluster_levels") or []}
    out = []
    for i, lv in enumerate(levels):
        if not split.get("clustered"):
            status = (split.get("school_reconstruction") or {}).get("status", "not used")
            out.append((lv, f"the split is not grouped by the {lv['unit']} clusters ({status})"))
            continue
        rec = by_unit.get(lv["unit"])
        if rec is not None:
            n_level, kept = rec["n_clusters"], rec["kept_together"]
        else:
            n_level = (split.get("school_reconstruction") or {}).get("n_clusters") if i == 0 else None
            kept = i == 0
        if kept and n_level == n_groups:
            out.append((lv, None))
        else:
            how = (f"the split keeps {n_groups} groups together, not the {n_level} {lv['unit']} clusters"
                   + ("" if kept else f", and a {lv['unit']} may have rows on both sides of the split"))
            out.append((lv, f"the prepared data carry only the split's groups as cluster ids: {how}"))
    return out


def multilevel(task: str, levels: list[dict[str, Any]], split: dict[str, Any], train_X: pd.DataFrame,
               train_y: np.ndarray, train_groups: np.ndarray, test_X: pd.DataFrame, test_y: np.ndarray,
               test_groups: np.ndarray, *, seed: int, n_bootstrap: int, cfg: dict[str, Any],
               level_ids: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> dict[str, Any]:
    """multilevel.json: every declared cluster level (the registry's cluster_levels) whose ids the engineer wrote
    (`level_ids`: unit -> training and test ids, train_levels.parquet / test_levels.parquet) or the split's groups
    carry; `skipped` says why there is none."""
    own = level_ids or {}
    est, lib, scale = estimator(task)
    doc: dict[str, Any] = {"estimator": est, "library": lib, "outcome_scale": scale, "skipped": None, "levels": [],
                           "not_estimated": []}
    if not levels:
        doc["skipped"] = "no cluster level declared in the registry (dataset.grouping)"
        return doc
    for lv, why in _ids_by_level(split, levels, train_groups, test_groups):
        column = ", ".join(lv["columns"])
        tr_ids, te_ids = own.get(lv["unit"], (train_groups, test_groups))
        if lv["unit"] in own:
            why = None  # the engineer wrote this level's own cluster ids
        if why is None and len(set(np.asarray(tr_ids).astype(str))) < 2:
            why = f"the training rows hold one {lv['unit']} cluster"
        if why is not None:
            doc["not_estimated"].append({"unit": lv["unit"], "reason": why})
            continue
        try:
            doc["levels"].append(level_analysis(
                task, lv["unit"], ("reconstructed from " if lv.get("reconstructed") else "") + column, train_X,
                train_y, tr_ids, test_X, test_y, te_ids, seed=seed, n_bootstrap=n_bootstrap,
                n_bootstrap_icc=int(cfg.get("n_bootstrap_icc", 200)), min_clusters=int(cfg.get("min_clusters", 30)),
                max_predictors=int(cfg.get("max_predictors", 100))))
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:  # a singular or degenerate fit
            doc["not_estimated"].append({"unit": lv["unit"], "reason": f"the estimation failed: "
                                                                       f"{type(exc).__name__}: {exc}"})
    if not doc["levels"]:
        doc["skipped"] = "; ".join(f"{n['unit']}: {n['reason']}" for n in doc["not_estimated"])
    return doc
