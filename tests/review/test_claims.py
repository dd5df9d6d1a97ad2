"""The results debate (edm_ars.review.claims): each claim's status from the three lenses, evidence read from the
artifacts, and a model that may only make claims more conservative."""

from __future__ import annotations

import copy

import pytest

from edm_ars.core.errors import EdmArsError
from edm_ars.review.claims import code_claims, lookup, merge_model_judgments


def results(**changes) -> dict:
    base = {
        "task": "binary_classification", "primary_metric": "auc", "best_model": "logistic",
        "interpreted_model": "logistic", "flags": [], "errors": [],
        "thresholds": {"quality_floor": 0.6, "leakage_auc": 0.95},
        "models": {
            "logistic": {"metrics": {"auc": 0.84}, "ci": {"auc": [0.82, 0.86]}},
            "xgboost": {"metrics": {"auc": 0.83}, "ci": {"auc": [0.81, 0.85]}},
            "mlp": {"metrics": {"auc": 0.74}, "ci": {"auc": [0.71, 0.77]}},
            "stacking": {"metrics": {"auc": 0.845}, "ci": {"auc": [0.82, 0.87]}},
        },
        "selection_evidence": {"stacking_minus_selected": {"mean": 0.004, "ci": [-0.001, 0.009]}},
        "top_features": [{"feature": "X3TGPAACAD"}, {"feature": "X1SES"}],
        "stability": {"unstable": False, "top5_overlap": {"mean": 0.9}, "rule": "mean top-5 overlap >= 0.6",
                      "thresholds": {"unstable_top5": 0.6},
                      "reference_top": ["X3TGPAACAD", "X1SES"],
                      "runs": [{"top5": ["X3TGPAACAD", "X1SES"]}, {"top5": ["X3TGPAACAD", "X2TXMTSCOR"]}]},
        "fairness": {"primary_metric": "auc", "gap_threshold": 0.05, "min_group": 50, "attributes": {
            "X1RACE": {"label": "race", "groups": [{"group": "A", "reliable": True}, {"group": "B", "reliable": True}],
                       "gaps": {"auc": {"gap": 0.12, "ci": [0.05, 0.19], "min_group": "A", "max_group": "B"}}},
            "X1SEX": {"label": "sex", "groups": [{"group": "F", "reliable": True}, {"group": "M", "reliable": True}],
                      "gaps": {"auc": {"gap": 0.02, "ci": [0.0, 0.05], "min_group": "F", "max_group": "M"}}},
        }},
    }
    for key, value in changes.items():
        cur = base
        *path, last = key.split(".")
        for part in path:
            cur = cur[part]
        cur[last] = value
    return base


def status(claims, id_):
    return next(c["status"] for c in claims if c["id"] == id_)


def test_claim_statuses_follow_the_evidence():
    claims = code_claims(results())
    assert status(claims, "predicts_above_chance") == "supported"
    assert status(claims, "meets_quality_floor") == "supported"
    assert status(claims, "outperforms_mlp") == "supported"  # disjoint intervals
    assert status(claims, "outperforms_xgboost") == "inconclusive"  # overlapping intervals
    assert status(claims, "stacking_improves") == "inconclusive"  # the paired difference's interval holds 0
    assert status(claims, "strongest_predictor") == "supported"  # first in every perturbed analysis
    assert status(claims, "ranking_robust") == "supported"
    assert status(claims, "subgroup_gap_X1RACE") == "supported"
    assert status(claims, "subgroup_gap_X1SEX") == "unsupported"  # under the threshold
    ev = next(c for c in claims if c["id"] == "outperforms_mlp")["evidence"]
    assert {"artifact": "results.json", "key": "models.mlp.ci.auc", "value": [0.71, 0.77]} in ev


@pytest.mark.parametrize("changes, claim, expected", [
    ({"models.logistic.ci": {"auc": [0.48, 0.60]}}, "predicts_above_chance", "inconclusive"),
    ({"models.logistic.metrics": {"auc": 0.97}, "models.logistic.ci": {"auc": [0.96, 0.98]}},
     "predicts_above_chance", "inconclusive"),  # a leakage signal
    ({"models.logistic.metrics": {"auc": 0.58}, "models.logistic.ci": {"auc": [0.55, 0.61]}},
     "meets_quality_floor", "unsupported"),
    ({"selection_evidence.stacking_minus_selected": {"mean": -0.01, "ci": [-0.02, -0.001]}},
     "stacking_improves", "unsupported"),
    ({"stability.unstable": True}, "ranking_robust", "unsupported"),
    ({"stability.runs": [{"top5": ["X1SES"]}, {"top5": ["X3TGPAACAD"]}]}, "strongest_predictor", "inconclusive"),
    ({"interpreted_model": None}, "strongest_predictor", "unsupported"),
])
def test_one_weak_lens_decides(changes, claim, expected):
    assert status(code_claims(results(**changes)), claim) == expected


def test_the_thresholds_are_the_ones_the_results_record():
    # an AUC of 0.96: a leakage signal under the recorded ceiling 0.95, not under a recorded 0.97
    high = {"models.logistic.metrics": {"auc": 0.96}, "models.logistic.ci": {"auc": [0.955, 0.965]}}
    flagged = next(c for c in code_claims(results(**high)) if c["id"] == "predicts_above_chance")
    assert flagged["status"] == "inconclusive" and "leakage threshold 0.95" in flagged["reason"]
    assert {"artifact": "results.json", "key": "thresholds.leakage_auc", "value": 0.95} in flagged["evidence"]
    assert status(code_claims(results(**high, **{"thresholds.leakage_auc": 0.97})), "predicts_above_chance") \
        == "supported"
    assert status(code_claims(results(**{"thresholds.leakage_auc": None})), "predicts_above_chance") == "supported"
    # the floor: 0.84 [0.82, 0.86] meets 0.6, is inconclusive against 0.83 and fails 0.9
    floor = next(c for c in code_claims(results()) if c["id"] == "meets_quality_floor")
    assert {"artifact": "results.json", "key": "thresholds.quality_floor", "value": 0.6} in floor["evidence"]
    assert status(code_claims(results(**{"thresholds.quality_floor": 0.83})), "meets_quality_floor") == "inconclusive"
    assert status(code_claims(results(**{"thresholds.quality_floor": 0.9})), "meets_quality_floor") == "unsupported"


@pytest.mark.parametrize("name", ["quality_floor", "leakage_auc"])
def test_a_missing_threshold_is_an_error_naming_the_file_and_key(name):
    res = results()
    del res["thresholds"][name]
    with pytest.raises(EdmArsError, match=f"results.json: no thresholds.{name} recorded"):
        code_claims(res)


def test_a_gap_between_small_groups_is_inconclusive():
    res = results()
    res["fairness"]["attributes"]["X1RACE"]["groups"][0]["reliable"] = False
    claim = next(c for c in code_claims(res) if c["id"] == "subgroup_gap_X1RACE")
    assert claim["status"] == "inconclusive" and "fewer than 50" in claim["reason"]


def test_lookup_reads_dotted_keys_and_list_items():
    res = results()
    assert lookup(res, "models.logistic.ci.auc.1") == 0.86
    assert lookup(res, "top_features.0.feature") == "X3TGPAACAD"
    with pytest.raises(KeyError):
        lookup(res, "models.random_forest.metrics.auc")


def test_a_model_can_only_make_claims_more_conservative():
    res = results()
    claims = code_claims(res)
    answer = {"claims": [{"id": "outperforms_xgboost", "status": "supported", "reason": "clearly better"},
                         {"id": "subgroup_gap_X1RACE", "status": "inconclusive", "reason": "only one split"},
                         {"id": "no_such_claim", "status": "supported", "reason": "?"}],
              "new_claims": [
                  {"id": "mlp_weakest", "statement": "The MLP is the weakest model.", "status": "supported",
                   "evidence": [{"artifact": "results.json", "key": "models.mlp.metrics.auc"}]},
                  {"id": "invented", "statement": "Random forests win on this task.", "status": "supported",
                   "evidence": [{"artifact": "results.json", "key": "models.random_forest.metrics.auc"}]}]}
    merged, notes = merge_model_judgments(copy.deepcopy(claims), answer, {"results.json": res})
    assert status(merged, "outperforms_xgboost") == "inconclusive"  # not upgraded
    assert status(merged, "subgroup_gap_X1RACE") == "inconclusive"  # downgraded
    new = next(c for c in merged if c["id"] == "mlp_weakest")
    assert new["status"] == "supported" and new["evidence"][0]["value"] == 0.74 and new["source"] == "model"
    invented = next(c for c in merged if c["id"] == "invented")
    assert invented["status"] == "unsupported" and "not found" in invented["reason"]
    assert any("not honoured" in n for n in notes) and any("no_such_claim" in n for n in notes)
