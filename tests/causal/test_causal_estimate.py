"""The causal estimation (edm_ars.causal.estimate): planted effects are recovered by the design's estimator, the
naive difference is shown biased under confounding, and the diagnostics (balance, attrition, overlap, sensitivity,
group effects) respond to what was planted."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from edm_ars.causal.estimate import covariate_of, estimate
from edm_ars.core.errors import DataError

FAST = {"n_folds": 3, "min_group_n": 50}


def confounded(n: int = 3000, seed: int = 1, base: float = 2.0, extra: float = 1.0, attrition: float = 0.05):
    """Observational data: uptake depends on x0, x1 (logistic) and so does the outcome; the effect is `base`,
    plus `extra` for girls (sex independent of the rest). Returns the frame and each row's planted effect."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    ses = rng.choice(["low", "mid", "high"], size=n, p=[0.3, 0.4, 0.3])
    e = 1 / (1 + np.exp(-(0.9 * x[:, 0] - 0.7 * x[:, 1] + 0.5 * (ses == "high"))))
    t = (rng.random(n) < e).astype(int)
    sex = np.where(rng.random(n) < 0.5, "girl", "boy")
    tau = base + extra * (sex == "girl")
    y = tau * t + 2.0 * x[:, 0] + 1.5 * x[:, 1] + 1.0 * (ses == "high") + np.sin(x[:, 2]) + rng.normal(size=n)
    frame = pd.DataFrame({"unit_id": [f"s{i}" for i in range(n)], "treated": t, "outcome": y})
    for j in range(4):
        frame[f"x__x{j}"] = x[:, j]
    for level in ("low", "mid", "high"):
        frame[f"x__ses={level}"] = (ses == level).astype(float)
    frame["g__sex"] = sex
    frame.loc[rng.random(n) < attrition, "outcome"] = np.nan
    return frame, tau


def experiment(n_schools: int = 40, per: int = 60, seed: int = 0, base: float = 5.0, extra: float = 3.0,
               class_sd: float = 3.0, miss_treated: float = 0.05, miss_control: float = 0.15):
    """A blocked, class-randomised experiment: within each school a third of the students form the one treated
    class, the rest two control classes; school and class effects make the outcomes clustered; the effect is
    `base` (+ `extra` for girls); outcomes go missing at different rates by arm."""
    rng = np.random.default_rng(seed)
    school = np.repeat(np.arange(n_schools), per)
    n = len(school)
    cls, t = np.empty(n, dtype=object), np.zeros(n, int)
    for s in range(n_schools):
        idx = rng.permutation(np.where(school == s)[0])
        k = len(idx) // 3
        t[idx[:k]] = 1
        cls[idx[:k]], cls[idx[k:2 * k]], cls[idx[2 * k:]] = f"{s}a", f"{s}b", f"{s}c"
    class_effect = pd.Series(cls).map({c: rng.normal(0, class_sd) for c in sorted(set(cls))}).to_numpy()
    x = rng.normal(size=n)
    sex = np.where(rng.random(n) < 0.5, "girl", "boy")
    tau = base + extra * (sex == "girl")
    y = rng.normal(0, 5, n_schools)[school] + class_effect + tau * t + 2 * x + rng.normal(0, 3, n)
    frame = pd.DataFrame({"unit_id": np.arange(n).astype(str), "treated": t, "outcome": y,
                          "block": school.astype(str), "cluster": cls, "x__x": x,
                          "x__sex=girl": (sex == "girl").astype(float), "x__sex=boy": (sex == "boy").astype(float),
                          "g__sex": sex})
    frame.loc[rng.random(n) < np.where(t == 1, miss_treated, miss_control), "outcome"] = np.nan
    return frame, tau


RANDOMIZED = {"kind": "randomized", "unit": "class", "blocks": "school", "cluster": "class"}
OBSERVATIONAL = {"kind": "observational"}


@pytest.fixture(scope="module")
def randomized():
    frame, tau = experiment()
    return frame, tau, estimate(frame, RANDOMIZED, FAST, seed=7)


def truth(frame: pd.DataFrame, tau: np.ndarray, mask=None) -> float:
    keep = frame["outcome"].notna().to_numpy() & (True if mask is None else mask)
    return float(tau[keep].mean())


def check_group_effects(frame: pd.DataFrame, tau: np.ndarray, res: dict) -> None:
    """The group effects by sex contain each group's planted effect, the girls' above the boys'."""
    if True:
        sex = frame["g__sex"].to_numpy()
        groups = {g["group"]: g for g in res["heterogeneity"]["groups"] if g["attribute"] == "sex"}
        assert set(groups) == {"girl", "boy"} and res["heterogeneity"]["exploratory"] is True
        for label in ("girl", "boy"):
            g = groups[label]
            assert g["ci_low"] <= truth(frame, tau, sex == label) <= g["ci_high"]
            assert g["n"] == int((frame["outcome"].notna() & (frame["g__sex"] == label)).sum())
        assert groups["girl"]["estimate"] > groups["boy"]["estimate"]


def test_group_effects_recover_the_planted_group_difference(randomized):
    check_group_effects(*randomized)
    assert "cluster-robust" in randomized[2]["heterogeneity"]["method"]


def test_groups_below_the_minimum_size_are_skipped_with_the_reason():
    frame, _ = experiment(n_schools=10, per=30, seed=2)
    frame.loc[frame.index[:40], "g__sex"] = "other"  # a small third group
    res = estimate(frame, RANDOMIZED, {"min_group_n": 20}, seed=1)
    skipped = {s["group"]: s for s in res["heterogeneity"]["skipped"]}
    assert set(skipped) == {"other"} and "fewer than 20" in skipped["other"]["reason"]
    assert {g["group"] for g in res["heterogeneity"]["groups"]} == {"girl", "boy"}
    # a group whose treated and control rows are in different blocks has no within-block comparison
    frame["g__site"] = np.where(frame["block"].isin(["0", "1", "2"]), "north", "south")
    cut = ((frame["g__site"] == "north") & (frame["block"] == "0") & (frame["treated"] == 0)) | (
        (frame["g__site"] == "north") & (frame["block"] != "0") & (frame["treated"] == 1))
    res = estimate(frame[~cut], RANDOMIZED, {"min_group_n": 5}, seed=1)
    skipped = {s["group"]: s for s in res["heterogeneity"]["skipped"]}
    assert "no block has both treated and control rows" in skipped["north"]["reason"]
    assert "south" in {g["group"] for g in res["heterogeneity"]["groups"]}


def test_a_blocked_cluster_randomised_experiment(randomized):
    frame, tau, res = randomized
    p, nv = res["primary"], res["naive"]
    assert p["ci_low"] <= truth(frame, tau) <= p["ci_high"]
    assert res["adjusted"]["ci_low"] <= truth(frame, tau) <= res["adjusted"]["ci_high"]
    # outcomes clustered by class: the iid standard errors (naive, and of the same regression) are too small
    X = pd.get_dummies(frame["block"], drop_first=True, dtype=float).assign(treated=frame["treated"], const=1.0)
    keep = frame["outcome"].notna()
    iid = sm.OLS(frame.loc[keep, "outcome"], X[keep]).fit().bse["treated"]
    assert p["se"] > 1.3 * iid and p["se"] > 1.3 * nv["se"]
    assert p["estimator"].startswith("difference in means with block fixed effects")
    assert "class" in p["standard_errors"] and "120 clusters" in p["standard_errors"]
    assert res["n"]["clusters"] == 120 and res["n"]["blocks"] == 40
    assert res["balance"]["max_abs_smd"] < 0.1 and res["balance"]["n_above"] == 0
    assert res["balance"]["max_abs_smd_weighted"] is None and res["overlap"] is None
    assert res["sensitivity"] is None and res["learners"] is None
    json.dumps(res, allow_nan=False)


def test_attrition_that_differs_by_arm_is_detected(randomized):
    frame, _, res = randomized
    a = res["attrition"]
    t, miss = frame["treated"].to_numpy(), frame["outcome"].isna().to_numpy()
    assert a["missing_treated"] == int(miss[t == 1].sum()) and a["missing_control"] == int(miss[t == 0].sum())
    assert a["rate_treated"] == pytest.approx(miss[t == 1].mean(), abs=1e-6)
    assert a["ci_low"] <= a["difference"] <= a["ci_high"] < 0 and a["p_value"] < 0.01
    assert a["stayers_max_abs_smd"] < 0.1


def test_without_a_cluster_column_the_standard_errors_are_hc2():
    frame, tau = experiment(n_schools=10, per=30, seed=4, class_sd=0.0)
    res = estimate(frame.drop(columns=["cluster"]), {"kind": "randomized", "blocks": "school"}, FAST, seed=1)
    assert "HC2" in res["primary"]["standard_errors"] and res["n"]["clusters"] is None
    res = estimate(frame.drop(columns=["cluster", "block"]), {"kind": "randomized"}, FAST, seed=1)
    assert res["primary"]["estimator"] == "difference in means (OLS)"
    assert res["primary"]["estimate"] == pytest.approx(res["naive"]["estimate"], abs=1e-6)


@pytest.mark.parametrize("change, design, settings, message", [
    (lambda f: f.drop(columns=["outcome"]), RANDOMIZED, {}, "no column outcome"),
    (lambda f: f.drop(columns=["cluster"]), RANDOMIZED, {}, "cluster (design cluster: class)"),
    (lambda f: f.assign(outcome=np.where(f["treated"] == 1, np.nan, f["outcome"])), RANDOMIZED, {},
     "fewer than 2 treated rows with an outcome"),
    (lambda f: f.assign(treated=1), RANDOMIZED, {}, "fewer than 2 control rows"),
    (lambda f: f.assign(treated=f["treated"].replace(1, 2)), RANDOMIZED, {}, "treated must be 0 or 1"),
    (lambda f: f.assign(x__x=np.where(f.index < 3, np.nan, f["x__x"])), RANDOMIZED, {}, "x__x has 3 missing"),
    (lambda f: f, {"kind": "quasi"}, {}, "design kind 'quasi' is not known"),
    (lambda f: f, RANDOMIZED, {"folds": 3}, "unknown key(s) ['folds']"),
    (lambda f: f, RANDOMIZED, {"alpha": 1.5}, "alpha = 1.5"),
    (lambda f: f, OBSERVATIONAL, {"trimming_threshold": 0}, "trimming_threshold = 0 must be"),
    (lambda f: f, OBSERVATIONAL, {"n_folds": "5"}, "n_folds = '5' must be an integer"),
    (lambda f: f, OBSERVATIONAL, {"sensitivity": {"cf_z": 0.1}}, "unknown sensitivity key(s) ['cf_z']"),
    (lambda f: f.drop(columns=["x__x", "x__sex=girl", "x__sex=boy"]), OBSERVATIONAL, {}, "no x__ feature"),
])
def test_bad_input_is_refused_naming_what_is_wrong(change, design, settings, message):
    frame, _ = experiment(n_schools=4, per=30, seed=1)
    with pytest.raises(DataError) as err:
        estimate(change(frame), design, settings, seed=1)
    assert message in str(err.value)


def test_a_randomised_design_returns_no_propensity():
    frame, _ = experiment(n_schools=4, per=30, seed=1)
    res, e = estimate(frame, RANDOMIZED, {}, seed=1, return_propensity=True)
    assert e is None and res["task"] == "causal"


def test_covariate_of_a_feature():
    assert covariate_of("x__lunchk=free") == "lunchk"
    assert covariate_of("x__age__missing") == "age"
    assert covariate_of("x__age") == "age"


def test_alpha_sets_the_level_of_every_interval_and_constant_features_are_dropped():
    frame, _ = experiment(n_schools=8, per=30, seed=6)
    frame["x__const"] = 1.0  # no variation: left out of the adjusted regression, SMD 0
    wide = estimate(frame, RANDOMIZED, {"alpha": 0.01}, seed=1)
    narrow = estimate(frame, RANDOMIZED, {"alpha": 0.2}, seed=1)
    for part in ("naive", "primary", "adjusted"):
        w, n = wide[part], narrow[part]
        assert w["estimate"] == n["estimate"] and w["ci_high"] - w["ci_low"] > n["ci_high"] - n["ci_low"]
    assert "3 covariate features" in wide["adjusted"]["estimator"]
    assert {r["feature"]: r["smd"] for r in wide["balance"]["rows"]}["x__const"] == 0.0
    assert wide["alpha"] == 0.01
