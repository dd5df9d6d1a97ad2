"""The paper's outline: the narrative archetype chosen by rule from the supported claims."""

from __future__ import annotations

import pytest

from edm_ars.writer.outline import DISCUSSION_ORDER, choose

BASE = {"predicts_above_chance": "supported", "meets_quality_floor": "supported",
        "strongest_predictor": "supported", "ranking_robust": "supported"}
RESULTS = {"best_model": "logistic", "top_features": [{"feature": "X3TGPAACAD"}]}
EXPECTED = ["academic", "academic_followup", "course_taking", "family", "outcomes"]  # the HSLS:09 registry's


@pytest.mark.parametrize("claims, results, groups, expected", [
    ({**BASE, "predicts_above_chance": "inconclusive", "subgroup_gap_X1RACE": "supported"}, RESULTS, {},
     "limits_of_prediction"),
    ({**BASE, "meets_quality_floor": "unsupported"}, RESULTS, {}, "limits_of_prediction"),
    ({**BASE, "subgroup_gap_X1RACE": "supported"}, RESULTS, {}, "fairness_audit"),
    ({**BASE, "subgroup_gap_X1RACE": "inconclusive"}, RESULTS, {"X3TGPAACAD": "academic_followup"}, "policy_brief"),
    (BASE, {"best_model": "logistic", "top_features": [{"feature": "X1MTHEFF"}]}, {"X1MTHEFF": "math_attitudes"},
     "surprising_predictor"),
    ({**BASE, "ranking_robust": "unsupported"}, {"best_model": "logistic", "top_features": [{"feature": "X1MTHEFF"}]},
     {"X1MTHEFF": "math_attitudes"}, "policy_brief"),  # an unstable ranking is no finding
    ({**BASE, "outperforms_logistic": "supported"}, {**RESULTS, "best_model": "xgboost"}, {}, "complexity_pays"),
    ({**BASE, "outperforms_mlp": "supported"}, {**RESULTS, "best_model": "xgboost"}, {}, "policy_brief"),
])
def test_archetype_follows_the_supported_claims(claims, results, groups, expected):
    out = choose(claims, results, groups, expected=EXPECTED)
    assert out["archetype"] == expected and out["rule"]
    assert out["discussion"] == DISCUSSION_ORDER[expected]


def test_without_expected_groups_no_predictor_is_surprising():
    top = {"best_model": "logistic", "top_features": [{"feature": "X1MTHEFF"}]}
    assert choose(BASE, top, {"X1MTHEFF": "math_attitudes"})["archetype"] == "policy_brief"
