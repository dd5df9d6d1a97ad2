"""The observational path of the causal estimation (edm_ars.causal.estimate): double machine learning recovers a
planted confounded effect that the naive difference misses, weighting balances the confounders, and the overlap,
sensitivity and group effects are read from the fit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_causal_estimate import FAST, OBSERVATIONAL, check_group_effects, confounded, truth

from edm_ars.causal.estimate import estimate


@pytest.fixture(scope="module")
def observed():
    frame, tau = confounded()
    results, e = estimate(frame, OBSERVATIONAL, FAST, seed=7, return_propensity=True)
    return frame, tau, results, e



def test_a_planted_confounded_effect_is_recovered_and_the_naive_difference_is_biased(observed):
    frame, tau, res, _ = observed
    ate = truth(frame, tau)
    p, nv = res["primary"], res["naive"]
    assert p["ci_low"] <= ate <= p["ci_high"]
    assert not nv["ci_low"] <= ate <= nv["ci_high"]
    assert nv["estimate"] - ate > 0.3  # uptake rises with x0 and with ses high, both of which raise the outcome
    assert p["library"].startswith("doubleml ") and "IRM" in p["estimator"] and "3-fold" in p["estimator"]
    assert res["design"] == "observational" and res["adjusted"] is None and res["estimand"] == "ATE"
    assert res["n"] == {"analysed": int(frame["outcome"].notna().sum()),
                        "treated": int((frame["treated"] == 1)[frame["outcome"].notna()].sum()),
                        "control": int((frame["treated"] == 0)[frame["outcome"].notna()].sum()),
                        "clusters": None, "blocks": None}
    assert set(res["learners"]) == {"outcome", "propensity"}
    assert set(res["versions"]) == {"python", "numpy", "pandas", "scikit-learn", "statsmodels", "doubleml"}
    json.dumps(res, allow_nan=False)  # plain floats only


def test_weighting_balances_the_confounders_and_overlap_is_read_from_the_propensities(observed):
    frame, _, res, e = observed
    bal = res["balance"]
    rows = {r["feature"]: r for r in bal["rows"]}
    assert abs(rows["x__x0"]["smd"]) > 0.3 and abs(rows["x__x0"]["smd_weighted"]) < 0.1
    assert bal["max_abs_smd_weighted"] < 0.1 < bal["max_abs_smd"]
    assert bal["n_above_weighted"] < bal["n_above"]
    assert rows["x__ses=high"]["covariate"] == "ses"
    ov = res["overlap"]
    analysed = frame["outcome"].notna().to_numpy()
    assert len(e) == len(frame) and np.isnan(e[~analysed]).all() and np.isfinite(e[analysed]).all()
    assert ov["propensity_min"] == pytest.approx(e[analysed].min(), abs=1e-6)
    assert ov["share_below"] == pytest.approx((e[analysed] < 0.05).mean(), abs=1e-6)
    t = frame["treated"].to_numpy()[analysed]
    assert ov["propensity_quantiles"]["treated"][2] > ov["propensity_quantiles"]["control"][2]
    assert ov["propensity_quantiles"]["treated"][2] == pytest.approx(np.median(e[analysed][t == 1]), abs=1e-6)


def test_trimming_counts_the_propensities_outside_the_threshold():
    frame, _ = confounded(n=2000, seed=3)
    frame["x__x0"] *= 4  # near-deterministic uptake: extreme propensities
    frame["treated"] = (frame["x__x0"] + np.random.default_rng(0).normal(size=len(frame)) > 0).astype(int)
    res, e = estimate(frame, OBSERVATIONAL, {**FAST, "trimming_threshold": 0.05}, seed=1, return_propensity=True)
    e = e[np.isfinite(e)]
    assert res["overlap"]["n_trimmed"] == int(((e < 0.05) | (e > 0.95)).sum()) > 0
    assert res["overlap"]["trimming_threshold"] == 0.05


def test_sensitivity_bounds_bracket_the_estimate(observed):
    _, _, res, _ = observed
    s, p = res["sensitivity"], res["primary"]
    assert s["kind"].startswith("omitted-variable bounds") and (s["cf_y"], s["cf_d"], s["rho"]) == (0.03, 0.03, 1.0)
    assert s["ci_lower"] <= s["theta_lower"] <= p["estimate"] <= s["theta_upper"] <= s["ci_upper"]
    assert 0 < s["rva"] <= s["rv"] < 1


def test_the_same_seed_gives_the_same_results_and_the_global_random_state_is_kept():
    frame, _ = confounded(n=1000, seed=5)
    res, e = estimate(frame, OBSERVATIONAL, FAST, seed=7, return_propensity=True)
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    again, e2 = estimate(frame, OBSERVATIONAL, FAST, seed=7, return_propensity=True)
    assert (np.random.get_state()[1] == before).all()
    assert again == res and np.array_equal(e, e2, equal_nan=True)
    other = estimate(frame, OBSERVATIONAL, FAST, seed=8)
    assert other["primary"]["estimate"] != res["primary"]["estimate"]


def test_group_effects_recover_the_planted_group_difference(observed):
    check_group_effects(*observed[:3])
    assert "gate" in observed[2]["heterogeneity"]["method"]


def test_attrition_at_the_same_rate_in_both_arms_is_not_flagged(observed):
    a = observed[2]["attrition"]
    assert a["ci_low"] < 0 < a["ci_high"]  # the rate is 5% in both arms


def test_the_propensities_follow_the_rows_of_the_frame_by_position():
    frame, _ = confounded(n=600, seed=9)
    frame.index = frame.index[::-1] * 7  # an index that is not the positions
    frame["treated"] = frame["treated"].astype(float)
    frame.iloc[:3, frame.columns.get_loc("treated")] = np.nan  # rows without a treatment: not analysed
    res, e = estimate(frame, OBSERVATIONAL, FAST, seed=1, return_propensity=True)
    analysed = (frame["treated"].notna() & frame["outcome"].notna()).to_numpy()
    assert len(e) == len(frame) and np.isnan(e[:3]).all()
    assert np.isfinite(e[analysed]).all() and np.isnan(e[~analysed]).all()
    assert res["n"]["analysed"] == int(analysed.sum())
    # a treated row has, on average, a higher propensity than a control row
    t = frame["treated"].to_numpy()
    assert e[analysed & (t == 1)].mean() > e[analysed & (t == 0)].mean()
