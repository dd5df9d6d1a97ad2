import copy

from edm_ars.review.revisions import changes, render


def artifacts(auc=0.84, predictors=("X1SES", "X1TXMTSCOR", "X3TGPAACAD"), method="median", verdict="PASS"):
    spec = {"research_question": "How well can attendance be predicted?", "outcome": {"name": "X4EVRATNDCLG"},
            "predictors": [{"name": p} for p in predictors]}
    report = {"missingness": {"X1SES": {"method": method}}, "analytic_n": 1000, "predictors_after": ["a", "b"]}
    results = {"best_model": "logistic", "primary_metric": "auc",
               "models": {"logistic": {"metrics": {"auc": auc}, "ci": {"auc": [auc - 0.02, auc + 0.02]}}}}
    review = {"verdict": verdict, "overall_score": 8.0, "rerun_from": None, "issues": []}
    return {"spec": spec, "report": report, "results": results, "review": review}


def test_single_round_says_no_revision():
    text = render([{"round": 0, **artifacts(), "reran": ["formulate", "engineer", "analyze", "critique"]}])
    assert "No revision" in text and "PASS" in text


def test_changes_name_what_moved():
    a, b = artifacts(), artifacts(predictors=("X1SES", "X3TGPAACAD", "X1PAREDU"), method="iterative_imputer")
    text = "\n".join(changes(a, b))
    assert "predictors added: X1PAREDU" in text and "predictors dropped: X1TXMTSCOR" in text
    assert "X1SES: median -> iterative_imputer" in text
    same = copy.copy(a)
    assert changes(a, same) == []  # the same artifacts (reused by path) changed nothing


def test_round_by_round_report():
    r0 = {"round": 0, **artifacts(verdict="REVISE"), "reran": ["formulate", "engineer", "analyze", "critique"]}
    r0["review"] = {"verdict": "REVISE", "overall_score": 6.0, "rerun_from": "engineer", "issues": [
        {"severity": "major", "description": "X1SES imputation is too crude", "recommendation": "Use iterative",
         "target_stage": "engineer"}]}
    r1 = {"round": 1, **artifacts(auc=0.85, method="iterative_imputer"), "reran": ["engineer", "analyze"]}
    r1["spec"] = r0["spec"]  # reused by path
    text = render([r0, r1])
    assert "## Round 1" in text and "re-run from engineer" in text and "X1SES imputation is too crude" in text
    assert "X1SES: median -> iterative_imputer" in text and "(+0.010)" in text and "predictors" not in text
