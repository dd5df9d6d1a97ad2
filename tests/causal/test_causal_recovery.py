"""Recovery of a planted effect (edm_ars.causal.recovery): the study's interval against the generator's record."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_causal_estimate import FAST, OBSERVATIONAL, confounded

from edm_ars.causal.estimate import estimate
from edm_ars.causal.recovery import causal_recovery
from edm_ars.core.errors import DataError

SPEC = {"task": "causal", "outcome": {"name": "score"},
        "treatment": {"variable": "program", "treated": "1", "control": "0"}}


@pytest.fixture(scope="module")
def planted():
    frame, tau = confounded(n=2500, seed=11)
    kept = frame["outcome"].notna().to_numpy()
    girl = frame["g__sex"].to_numpy() == "girl"
    dgp = {"treatments": {"program": {
        "outcome": "score", "treated_value": 1, "control_value": 0,
        "effect": {"base": 2.0, "group": {"attribute": "sex", "group": "girl", "extra": 1.0}},
        "ate": float(tau.mean()), "ate_observed": float(tau[kept].mean()),
        "group_effects": {"girl": float(tau[kept & girl].mean()), "boy": float(tau[kept & ~girl].mean())},
        "propensity": {"intercept": 0.0, "coefficients": {"x0": 0.9, "x1": -0.7}}, "confounders": ["x0", "x1"],
        "notes": "test"}}}
    return dgp, estimate(frame, OBSERVATIONAL, FAST, seed=3)


def test_the_planted_effect_is_covered_and_the_naive_difference_is_not(planted):
    dgp, results = planted
    rec = causal_recovery(dgp, SPEC, results)
    assert rec["covered"] is True and rec["naive_covered"] is False
    assert rec["planted_ate"] == pytest.approx(dgp["treatments"]["program"]["ate_observed"], abs=1e-6)
    assert (rec["estimate"], rec["ci_low"], rec["ci_high"]) == tuple(results["primary"][k] for k in
                                                                     ("estimate", "ci_low", "ci_high"))
    assert rec["naive"] == results["naive"]["estimate"] and rec["treatment"] == "program"
    g = rec["group"]
    assert g["attribute"] == "sex" and g["group"] == "girl" and g["covered"] is True
    assert g["planted"] == pytest.approx(dgp["treatments"]["program"]["group_effects"]["girl"], abs=1e-6)


def test_an_interval_that_misses_the_planted_effect_is_not_covered(planted):
    dgp, results = planted
    moved = copy.deepcopy(dgp)
    moved["treatments"]["program"]["ate_observed"] += 10 * results["primary"]["se"]
    moved["treatments"]["program"]["group_effects"]["girl"] += 5.0
    rec = causal_recovery(moved, SPEC, results)
    assert rec["covered"] is False and rec["group"]["covered"] is False


def test_no_group_effect_planted_or_the_group_skipped(planted):
    dgp, results = planted
    plain = copy.deepcopy(dgp)
    plain["treatments"]["program"]["effect"] = {"base": 2.0}
    assert causal_recovery(plain, SPEC, results)["group"] is None
    skipped = copy.deepcopy(results)
    skipped["heterogeneity"]["groups"] = [g for g in skipped["heterogeneity"]["groups"] if g["group"] != "girl"]
    g = causal_recovery(dgp, SPEC, skipped)["group"]
    assert g["estimate"] is None and g["covered"] is False


def test_a_treatment_the_generator_did_not_plant_is_refused(planted):
    dgp, results = planted
    with pytest.raises(DataError, match="planted no effect of treatment 'tutoring'"):
        causal_recovery(dgp, {**SPEC, "treatment": {"variable": "tutoring"}}, results)
    with pytest.raises(DataError, match="planted for treated_value = 1"):
        causal_recovery(dgp, {**SPEC, "treatment": {"variable": "program", "treated": "2", "control": "0"}},
                        results)
    with pytest.raises(DataError, match="outcome 'score'"):
        causal_recovery(dgp, {**SPEC, "outcome": {"name": "gpa"}}, results)
    assert np.isfinite(results["primary"]["se"])
