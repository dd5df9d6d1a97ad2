"""The multilevel analysis (edm_ars.analysis.multilevel): planted variance shares and context effects are recovered,
cluster means use the training rows only, and the skipped and few-cluster cases say so."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from edm_ars.analysis.multilevel import LOGISTIC_VAR, agq_logit, cluster_means, cluster_stats, multilevel, reml_null

LEVEL = [{"unit": "school", "columns": ["school_id"], "reconstructed": False}]
CFG = {"min_clusters": 30, "n_bootstrap_icc": 100, "max_predictors": 20}


def split_of(n_clusters: int) -> dict:
    return {"clustered": True, "grouped": True, "grouped_by": "cluster", "n_groups": n_clusters,
            "school_reconstruction": {"status": "success", "n_clusters": n_clusters}}


def simulate(seed: int, *, n_clusters: int = 80, size: int = 25, between: float = 0.25, within: float = 0.75,
             context: float = 0.0, binary: bool = False, tau2: float = 1.0):
    """Clustered rows: predictor x = cluster part + own part, a second predictor z; the outcome has a random
    intercept (variance `between`, or `tau2` on the latent scale), the effect of x and `context` times the
    cluster's mean of x. Every 5th cluster is a test cluster (a grouped split)."""
    rng = np.random.default_rng(seed)
    school = np.repeat(np.arange(n_clusters), size)
    x_cluster = rng.normal(0, 1, n_clusters)
    x = x_cluster[school] + rng.normal(0, 1, len(school))
    z = rng.normal(0, 1, len(school))
    frame = pd.DataFrame({"x": x, "z": z})
    xbar = frame.groupby(school)["x"].transform("mean").to_numpy()
    if binary:
        u = rng.normal(0, math.sqrt(tau2), n_clusters)
        eta = -0.3 + u[school]
        y = (rng.random(len(school)) < 1 / (1 + np.exp(-eta))).astype(float)
    else:
        u = rng.normal(0, math.sqrt(between), n_clusters)
        y = 0.3 * x + context * xbar + u[school] + rng.normal(0, math.sqrt(within), len(school))
    test = school % 5 == 0
    ids = np.array([f"s{s}" for s in school])
    return (frame[~test].reset_index(drop=True), y[~test], ids[~test],
            frame[test].reset_index(drop=True), y[test], ids[test])


def run(data, task="regression", cfg=CFG, levels=LEVEL, seed=7):
    trX, trY, trG, teX, teY, teG = data
    n = len(set(trG) | set(teG))
    return multilevel(task, levels, split_of(n), trX, trY, trG, teX, teY, teG, seed=seed, n_bootstrap=300,
                      cfg=cfg)


def test_linear_icc_recovered_within_its_interval():
    data = simulate(1, between=0.25, within=0.75)  # ICC of the outcome given nothing: includes x's cluster part
    doc = run(data)
    assert doc["skipped"] is None and doc["outcome_scale"] == "observed"
    lv = doc["levels"][0]
    null = lv["null_model"]
    # the outcome's planted between variance: the random intercept plus x's cluster part (0.3^2 * 1)
    planted = (0.25 + 0.09) / (0.25 + 0.09 + 0.75 + 0.09)
    assert null["icc_ci"][0] <= planted <= null["icc_ci"][1]
    assert abs(null["icc"] - planted) < 0.08
    assert null["icc_ci"][0] < null["icc"] < null["icc_ci"][1]
    # the predictors explain the part of each variance that x carries
    assert lv["explained"]["between"] > 0 and lv["explained"]["within"] > 0
    assert lv["predictor_model"]["n_predictors"] == 2
    assert "MixedLM" in doc["estimator"]


def test_reml_on_cluster_statistics_equals_statsmodels():
    from statsmodels.regression.mixed_linear_model import MixedLM

    trX, y, g, *_ = simulate(2, n_clusters=40, size=12)
    _, codes = np.unique(g, return_inverse=True)
    k = codes.max() + 1
    between, within = reml_null(*cluster_stats(y, codes, k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = MixedLM(y, np.ones((len(y), 1)), groups=codes).fit(reml=True)
    assert between == pytest.approx(float(res.cov_re.iloc[0, 0] if hasattr(res.cov_re, "iloc")
                                          else res.cov_re[0, 0]), rel=1e-3)
    assert within == pytest.approx(float(res.scale), rel=1e-3)


def test_binary_latent_icc_near_the_planted_one():
    data = simulate(3, n_clusters=150, size=30, binary=True, tau2=1.0)
    doc = run(data, task="binary_classification")
    lv = doc["levels"][0]
    planted = 1.0 / (1.0 + LOGISTIC_VAR)
    assert doc["outcome_scale"] == "latent" and "binomial" in doc["estimator"]
    assert lv["null_model"]["within_var"] == pytest.approx(LOGISTIC_VAR, rel=1e-5)
    assert abs(lv["null_model"]["icc"] - planted) < 0.05
    assert lv["null_model"]["icc_ci"][0] <= planted <= lv["null_model"]["icc_ci"][1]
    assert lv["context"]["metric"] == "auc"


def test_quadrature_matches_a_plain_logistic_fit_without_clusters():
    """No cluster variance planted: tau^2 near 0 and the slopes of an ordinary logistic regression."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(4)
    n, k = 3000, 100
    codes = rng.integers(0, k, n)
    x = rng.normal(0, 1, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.5 + 0.8 * x)))).astype(float)
    fit = agq_logit(y, np.ones(n), np.column_stack([np.ones(n), x]), codes, k)
    plain = LogisticRegression(C=1e6, max_iter=1000).fit(x[:, None], y)
    assert fit["tau2"] < 0.05
    assert fit["beta"][1] == pytest.approx(plain.coef_[0, 0], abs=0.03)


def test_planted_context_effect_improves_and_no_effect_does_not():
    with_effect = run(simulate(5, context=1.0, between=0.1))["levels"][0]["context"]
    assert with_effect["improves"] is True and with_effect["difference"] > 0
    assert with_effect["ci"][0] > 0 and with_effect["metric"] == "r2" and with_effect["better"] == "higher"
    without = run(simulate(6, context=0.0, between=0.1))["levels"][0]["context"]
    assert without["improves"] is False
    assert "own test rows" in without["means_from"]


def test_cluster_means_of_seen_clusters_use_training_rows_only():
    train = pd.DataFrame({"x": [1.0, 3.0, 10.0, 20.0]})
    train_ids = np.array(["a", "a", "b", "b"])
    test = pd.DataFrame({"x": [100.0, 7.0, 9.0]})
    test_ids = np.array(["a", "c", "c"])
    tr1, te1, how = cluster_means(train, train_ids, test, test_ids)
    assert te1["x"].tolist() == [2.0, 8.0, 8.0]  # a: its training rows; c (unseen): its own test rows
    changed = test.copy()
    changed.loc[0, "x"] = -500.0  # a test row of a seen cluster
    tr2, te2, _ = cluster_means(train, train_ids, changed, test_ids)
    pd.testing.assert_frame_equal(tr1, tr2)
    assert te2["x"].tolist() == [2.0, 8.0, 8.0]
    assert "1 test clusters seen in training" in how and "never their outcome" in how


def test_no_cluster_level_is_skipped():
    doc = run(simulate(7, n_clusters=20, size=5), levels=[])
    assert doc["levels"] == [] and "no cluster level" in doc["skipped"]


def test_split_not_grouped_by_the_level_is_not_estimated():
    trX, trY, trG, teX, teY, teG = simulate(8, n_clusters=20, size=5)
    split = {"clustered": False, "school_reconstruction": {"status": "failed_zero_clusters", "n_clusters": 0}}
    doc = multilevel("regression", LEVEL, split, trX, trY, trG, teX, teY, teG, seed=1, n_bootstrap=50, cfg=CFG)
    assert doc["levels"] == [] and "not grouped" in doc["skipped"]
    assert doc["not_estimated"][0]["unit"] == "school"


def test_few_clusters_are_flagged():
    doc = run(simulate(9, n_clusters=15, size=20))
    lv = doc["levels"][0]
    assert lv["n_clusters"] == 12 and lv["few_clusters"] is True
    assert "fewer than 30" in lv["support"]
    many = run(simulate(9, n_clusters=50, size=20))["levels"][0]
    assert many["few_clusters"] is False and "fewer than" not in many["support"]


def test_a_level_that_cannot_be_estimated_is_recorded_not_raised():
    """One outcome class only: the context model cannot be fitted; the level is listed with the reason."""
    trX, trY, trG, teX, teY, teG = simulate(10, n_clusters=20, size=10)
    doc = multilevel("binary_classification", LEVEL, split_of(20), trX, np.ones(len(trY)), trG, teX,
                     np.ones(len(teY)), teG, seed=1, n_bootstrap=50, cfg=CFG)
    assert doc["levels"] == [] and "estimation failed" in doc["skipped"]


def test_a_second_level_without_its_own_ids_is_listed_as_not_estimated():
    """grouping.also: the groups files hold the split's groups, which are the school clusters when the split keeps
    only the schools together; the class level's ids are not among the engineered files."""
    data = simulate(11, n_clusters=40, size=10)
    levels = LEVEL + [{"unit": "class", "columns": ["class_id"], "reconstructed": False}]
    split = split_of(40) | {"cluster_levels": [{"unit": "school", "n_clusters": 40, "kept_together": True},
                                               {"unit": "class", "n_clusters": 120, "kept_together": False}]}
    trX, trY, trG, teX, teY, teG = data
    doc = multilevel("regression", levels, split, trX, trY, trG, teX, teY, teG, seed=1, n_bootstrap=50, cfg=CFG)
    assert [lv["unit"] for lv in doc["levels"]] == ["school"] and doc["skipped"] is None
    assert doc["not_estimated"][0]["unit"] == "class" and "rows on both sides of the split" in doc["not_estimated"][0]["reason"]


def test_the_linear_icc_is_the_same_reml_estimate_as_its_bootstrap_and_lies_in_its_interval():
    """The point estimate and the bootstrap resamples use one estimator (REML of the one-way model), so the estimate
    cannot fall outside its own interval as a stalled optimiser's would (HS&B: 0.137 against [0.140, 0.220])."""
    from edm_ars.analysis.multilevel import null_model

    rng = np.random.default_rng(7)
    sizes = rng.integers(5, 70, size=120)  # unbalanced clusters, as in HS&B
    codes = np.repeat(np.arange(120), sizes)
    y = 12.0 + rng.normal(0, 2.9, 120)[codes] + rng.normal(0, 6.3, codes.size)
    record, between, within = null_model(y, codes, 120, False, n_boot=100, seed=42)
    n, mean, wss = cluster_stats(y, codes, 120)
    assert (between, within) == reml_null(n, mean, wss)
    lo, hi = record["icc_ci"]
    assert lo <= record["icc"] <= hi


def test_cluster_level_columns_give_no_context_of_their_own():
    """A school's sector is its own school mean: only columns that vary within a cluster become context features."""
    from edm_ars.analysis.multilevel import context, varying_within

    rng = np.random.default_rng(3)
    codes = np.repeat(np.arange(40), 25)
    X = pd.DataFrame({"ses": rng.normal(size=codes.size), "sector": rng.integers(0, 2, 40)[codes].astype(float)})
    assert varying_within(X, codes, ["ses", "sector"]) == ["ses"]
    y = X["ses"].to_numpy() + rng.normal(size=codes.size)
    test = slice(800, None)
    found = context("regression", X.iloc[:800], y[:800], codes[:800], X.iloc[test], y[test], codes[test], [],
                    n_boot=20, seed=1)
    assert found["n_context_features"] == 0 and "cluster-level measure" in found["skipped"]


def test_the_context_takes_common_within_cluster_measures_at_most_one_per_ten_clusters():
    """Rare indicators (a birth quarter held by 1 student in 400) and cluster-level columns give no context, and with
    60 training clusters at most 6 means enter, the most related to the clusters' mean outcome first (STAR: 53 means
    of 60 schools made the held-out R2 fall from 0.49 to 0.14)."""
    from edm_ars.analysis.multilevel import context_columns

    rng = np.random.default_rng(5)
    codes = np.repeat(np.arange(60), 40)
    cols = {f"x{j}": rng.normal(size=codes.size) + rng.normal(size=60)[codes] for j in range(10)}
    cols["rare"] = (rng.random(codes.size) < 0.0025).astype(float)
    cols["sector"] = rng.integers(0, 2, 60)[codes].astype(float)
    X = pd.DataFrame(cols)
    y = 2.0 * X["x7"].groupby(codes).transform("mean").to_numpy() + rng.normal(size=codes.size)
    chosen = context_columns(X, y, codes, list(X.columns))
    assert len(chosen) == 6 and chosen[0] == "x7"
    assert "rare" not in chosen and "sector" not in chosen


def test_the_quadrature_fit_agrees_with_statsmodels_variational_mixed_glm():
    """The binary random-intercept model is fitted by adaptive Gauss-Hermite quadrature (statsmodels has no
    maximum-likelihood GLMM); its between-cluster variance agrees with statsmodels' BinomialBayesMixedGLM."""
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    from edm_ars.analysis.multilevel import null_model

    rng = np.random.default_rng(11)
    codes = np.repeat(np.arange(80), 30)
    y = (rng.random(codes.size) < 1 / (1 + np.exp(0.3 - rng.normal(0, 0.9, 80)[codes]))).astype(float)
    _, between, _ = null_model(y, codes, 80, True, n_boot=0, seed=1)
    fit = BinomialBayesMixedGLM.from_formula("y ~ 1", {"g": "0 + C(g)"}, pd.DataFrame({"y": y, "g": codes})).fit_vb()
    assert between == pytest.approx(math.exp(fit.vcp_mean[0]) ** 2, rel=0.05)


def test_a_second_level_with_its_own_ids_is_estimated_with_them():
    """The engineer writes each declared level's ids (train_levels.parquet): a class level that the school split does
    not keep together is estimated from its own ids, its clusters seen on both sides."""
    trX, trY, trG, teX, teY, teG = simulate(11, n_clusters=40, size=10)
    levels = LEVEL + [{"unit": "local authority", "columns": ["lea"], "reconstructed": False}]
    split = split_of(40) | {"cluster_levels": [{"unit": "school", "n_clusters": 40, "kept_together": True},
                                               {"unit": "local authority", "n_clusters": 8, "kept_together": False}]}
    lea = {"school": (trG, teG),
           "local authority": (np.asarray([f"a{int(str(g)[1:]) % 8}" for g in trG]),
                               np.asarray([f"a{int(str(g)[1:]) % 8}" for g in teG]))}
    doc = multilevel("regression", levels, split, trX, trY, trG, teX, teY, teG, seed=1, n_bootstrap=50, cfg=CFG,
                     level_ids=lea)
    assert [lv["unit"] for lv in doc["levels"]] == ["school", "local authority"] and doc["not_estimated"] == []
    authority = doc["levels"][1]
    assert authority["n_clusters"] == 8 and authority["few_clusters"] is True
    assert authority["context"]["means_from"].startswith("training rows")  # authorities seen in training
