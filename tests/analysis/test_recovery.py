"""The recovery check of a study on generated data: the planted school variance beside the estimate."""

from __future__ import annotations


def test_the_planted_school_variance_is_set_beside_the_multilevel_estimate():
    from edm_ars.analysis.recovery import school_recovery

    truth = {"link": "logistic", "school_noise_sd": 0.5}
    ml = {"levels": [{"unit": "school", "predictor_model": {"between_var": 0.231}}]}
    assert school_recovery(truth, ml) == {"planted_between_var": 0.25, "estimated_between_var": 0.231,
                                          "scale": "logit", "unit": "school"}
    assert school_recovery({"link": "identity", "school_noise_sd": 2.0}, ml)["scale"] == "outcome"
    assert school_recovery(truth, {"levels": [], "skipped": "no cluster level"}) == {}
    assert school_recovery({"link": "logistic"}, ml) == {}
