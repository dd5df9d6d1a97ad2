"""Claims consistent with each other and with the evidence (edm_ars.review.consistency): planted defects are
caught, the Writer's own papers pass, and the Critic cannot PASS inconsistent claims."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from edm_ars.review.claims import code_claims, document
from edm_ars.review.consistency import check_consistency, claim_problems
from edm_ars.review.evidence import comparison_evidence, evidence_for, stacking_base

ROOT = Path(__file__).resolve().parents[2]


def results() -> dict:
    """Three models: XGBoost's interval overlaps logistic regression's; stacking is clearly better than logistic
    regression by its paired difference (the single model the selection rule chose) although the intervals
    overlap; random forest is clearly worse than both (disjoint intervals)."""
    models = {
        "logistic": {"label": "Logistic regression", "metrics": {"auc": 0.80}, "ci": {"auc": [0.77, 0.83]}},
        "xgboost": {"label": "XGBoost", "metrics": {"auc": 0.81}, "ci": {"auc": [0.78, 0.84]}},
        "random_forest": {"label": "Random forest", "metrics": {"auc": 0.70}, "ci": {"auc": [0.66, 0.74]}},
        "stacking": {"label": "Stacking", "metrics": {"auc": 0.815}, "ci": {"auc": [0.785, 0.845]}},
    }
    return {"task": "binary_classification", "primary_metric": "auc", "best_model": "stacking", "models": models,
            "selection_evidence": {"top_single": "xgboost", "overlapping_top": ["logistic", "xgboost"],
                                   "stacking_minus_selected": {"mean": 0.015, "ci": [0.004, 0.026]}}}


def paper(results_text: str = "", methods: str = "", limitations: str = "No further limitations.",
          floats: str = "") -> str:
    return (
        "\\documentclass{acmart}\n\\begin{document}\n"
        "\\section{Introduction}\\label{sec:introduction}\nWe predict an outcome.\n"
        "\\section{Methods}\\label{sec:methods}\n\\subsection{Models}\\label{sec:models}\n"
        f"We fitted four models. {methods}\n"
        "\\section{Results}\\label{sec:results}\n\\subsection{Model Comparison}\\label{sec:comparison}\n"
        f"Table~\\ref{{tab:results}} reports the models. {results_text}\n"
        "\\begin{table}\\caption{All models.}\\label{tab:results}\\begin{tabular}{l}x\\\\\\end{tabular}\\end{table}\n"
        f"{floats}\n"
        "\\section{Discussion}\\label{sec:discussion}\nThe models predict the outcome.\n"
        f"\\section{{Limitations}}\\label{{sec:limitations}}\n{limitations}\n"
        "\\end{document}\n")


def reasons(tex: str, res: dict | None = None, outline: dict | None = None) -> list[str]:
    return [str(f) for f in check_consistency(tex, res or results(), outline).findings]


# ---- the evidence -----------------------------------------------------------------------------------------
def test_the_evidence_prefers_the_paired_comparison_and_reads_either_way():
    ev = comparison_evidence(results())
    assert stacking_base(results()) == "logistic"
    paired = evidence_for(ev, "stacking", "logistic")
    assert (paired.kind, paired.verdict) == ("paired", "better")
    assert evidence_for(ev, "logistic", "stacking").verdict == "worse"
    assert evidence_for(ev, "stacking", "logistic", "intervals").verdict == "indistinct"
    assert evidence_for(ev, "xgboost", "logistic").verdict == "indistinct"
    assert evidence_for(ev, "random_forest", "xgboost").verdict == "worse"


def test_a_consistent_paper_passes():
    text = ("The stacked ensemble was selected because it was clearly better than logistic regression: the paired "
            "bootstrap difference in AUC was \\Diff{} (\\DiffCI{}), an interval that lies entirely above zero. "
            "The 95\\% intervals of XGBoost and logistic regression overlapped, so these models could not be "
            "distinguished on the test set. XGBoost predicts better than random forest. The selected model "
            "predicts the outcome better than chance. The AUC of the models ranged from \\Low{} (random forest) to "
            "\\High{} (the stacked ensemble).")
    assert reasons(paper(text)) == []


# ---- planted defects ----------------------------------------------------------------------------------------
def test_a_contradiction_is_caught():
    text = ("The stacked ensemble was clearly better than logistic regression. The evidence does not settle "
            "whether stacking predicts better than logistic regression, or whether the gaps are real.")
    found = reasons(paper(text))
    assert any("contradicts line" in r and "logistic and stacking" in r for r in found), found
    # the second sentence is also held to the evidence: the paired difference excludes zero
    assert any("not settled against logistic" in r and "stacking_minus_selected" in r for r in found), found


def test_an_open_question_the_evidence_decides_is_allowed_only_when_the_debate_left_it_open_for_another_reason():
    text = "The evidence does not settle whether stacking predicts better than logistic regression."
    found = reasons(paper(text))
    assert len(found) == 1 and "shows stacking clearly better than logistic" in found[0], found
    claim = {"id": "outperforms_logistic", "status": "inconclusive", "compares": {"a": "stacking", "b": "logistic"},
             "lenses": {"skeptic": {"status": "supported"}, "methodologist": {"status": "inconclusive"}}}
    report = check_consistency(paper(text), results(), claims={"claims": [claim]})
    assert report.ok, [str(f) for f in report.findings]
    claim["lenses"]["skeptic"]["status"] = "inconclusive"  # the evidence lens: then the paper contradicts it
    assert not check_consistency(paper(text), results(), claims={"claims": [claim]}).ok


def test_a_contradiction_is_caught_without_evidence_on_either_side():
    res = results()
    res["selection_evidence"].pop("stacking_minus_selected")
    for m in res["models"].values():
        m.pop("ci")
    found = reasons(paper("XGBoost outperforms logistic regression. Logistic regression was clearly better than "
                          "XGBoost."), res)
    assert any("contradicts line" in r for r in found), found
    assert any("no comparison of xgboost and logistic" in r for r in found), found


def test_a_claim_the_evidence_does_not_support_is_caught():
    found = reasons(paper("XGBoost was clearly better than logistic regression."))
    assert len(found) == 1 and "shows xgboost not distinguishable from logistic" in found[0], found
    found = reasons(paper("XGBoost and random forest could not be distinguished."))
    assert len(found) == 1 and "clearly better than random_forest" in found[0], found
    found = reasons(paper("That logistic regression matched or exceeded XGBoost indicates additive relations."))
    assert len(found) == 1 and "matched or exceeded xgboost, but its auc is lower" in found[0], found


@pytest.mark.parametrize("sentence, named", [
    ("Stacking the models improves on the best single model.", "names only stacking"),
    ("Combining the models did not improve on the single model.", "names no model"),
    ("The tree ensemble improved on logistic regression by \\Margin{}.", "names only logistic"),
])
def test_a_comparison_naming_one_model_only_is_caught(sentence, named):
    found = reasons(paper(sentence))
    assert len(found) == 1 and named in found[0] and "names both models" in found[0], found


def test_a_dangling_section_promise_is_caught():
    methods = ("The check that failed was \\texttt{no\\_duplicated\\_columns}; Section~\\ref{sec:limitations} "
               "discusses their consequences.")
    found = reasons(paper(methods=methods))
    assert len(found) == 1 and "Section 5 (Limitations) discusses no_duplicated_columns" in found[0], found
    kept = paper(methods=methods, limitations="The data check \\texttt{no\\_duplicated\\_columns} failed.")
    assert reasons(kept) == []
    # a literal section number is resolved the same way
    found = reasons(paper(methods="Section 5 discusses \\texttt{retention}."))
    assert len(found) == 1 and "Section 5 (Limitations) discusses retention" in found[0], found


def test_a_reference_to_an_undefined_label_or_number_is_caught():
    found = reasons(paper("Figure~\\ref{fig:roc} shows the curves, as Table~\\ref{tab:results} does."))
    assert len(found) == 1 and "\\ref{fig:roc} names a label the paper does not define" in found[0], found
    found = reasons(paper("Table 2 and Figure 1 list them; Section 9 explains why."))
    assert {r.split(": ")[1].split(" does")[0] for r in found} == {"Table 2", "Figure 1", "Section 9"}, found


def test_recorded_comparisons_and_promises_are_held_to_the_evidence_and_the_text():
    text = "XGBoost and logistic regression could not be distinguished."
    ok = {"comparisons": [{"a": "xgboost", "b": "logistic", "assertion": "indistinct", "phrase": "p"}],
          "promises": [{"from": "sec:results", "target": "sec:limitations", "topics": ["leakage"], "phrase": "q"}]}
    assert reasons(paper(text, limitations="Leakage may remain."), outline=ok) == []
    bad = copy.deepcopy(ok)
    bad["comparisons"].append({"a": "stacking", "b": "logistic", "assertion": "indistinct", "phrase": "r"})
    found = reasons(paper(text), outline=bad)
    assert any("discusses leakage; it does not" in r for r in found), found
    assert any("records that stacking is not distinguishable from logistic" in r for r in found), found
    assert any("not in the paper's text" in r for r in found), found


def test_a_float_caption_and_general_statements_are_not_claims():
    text = ("Among models whose 95\\% intervals overlap the top model's, the simplest is preferred. Differences "
            "between groups that cannot be distinguished from sampling variation are reported as such.")
    assert reasons(paper(text, floats="\\begin{figure}\\caption{Stacking improves on the best single model.}"
                                      "\\label{fig:x}\\end{figure}")) == []


def test_verify_paper_fails_with_the_sentence_and_the_reason(tmp_path):
    """The check runs inside verify-paper (and so in the Writer's job, which fails on a failed verification)."""
    from edm_ars.cli import main
    from edm_ars.writer.verify import verify_paper

    tex = tmp_path / "paper.tex"
    tex.write_text(paper("XGBoost was clearly better than logistic regression."))
    (tmp_path / "results.json").write_text(json.dumps(results()))
    report = verify_paper(tex, given={"results.json": str(tmp_path / "results.json")})
    failing = [f for f in report.failures if ": consistency: " in f]
    assert len(failing) == 1 and "XGBoost was clearly better than logistic regression." in failing[0], failing
    assert "shows xgboost not distinguishable from logistic" in failing[0]
    assert main(["verify-paper", str(tex), "--artifact", f"results.json={tmp_path / 'results.json'}"]) == 1


# ---- the results debate's claims and the Critic -----------------------------------------------------------------
def _claim(id_, status, statement, **extra):
    return {"id": id_, "statement": statement, "status": status, "reason": "", "evidence": [], "source": "code",
            **extra}


def test_contradicting_claims_are_inconsistent():
    doc = {"claims": [
        _claim("stacking_improves", "supported", "Stacking improves on logistic.",
               compares={"a": "stacking", "b": "logistic", "assertion": "better"}),
        _claim("outperforms_logistic", "inconclusive", "The selected model (stacking) predicts better than logistic.",
               compares={"a": "stacking", "b": "logistic", "assertion": "better"}),
        _claim("model_claim", "supported", "Logistic predicts better than stacking.", source="model"),
    ]}
    problems = claim_problems(doc, results())
    assert any("judge the same comparison of logistic and stacking differently" in p for p in problems), problems
    assert any("contradict each other on logistic and stacking" in p for p in problems), problems
    assert any("claim model_claim (supported) says logistic is better than stacking" in p for p in problems), problems


def test_the_debate_claims_of_the_analysis_are_consistent():
    """The rule debate itself judges stacking against the single model it was compared with by the paired
    difference, so that the selection, stacking_improves and outperforms_* agree (the STAR defect)."""
    res = results()
    res["thresholds"] = {"quality_floor": 0.6, "leakage_auc": 0.95}
    res["flags"], res["errors"] = [], []
    claims = {c["id"]: c for c in code_claims(res, {})}
    assert claims["outperforms_logistic"]["status"] == claims["stacking_improves"]["status"] == "supported"
    assert "logistic" in claims["stacking_improves"]["statement"]
    assert claims["outperforms_xgboost"]["status"] == "inconclusive"
    assert claim_problems(document(list(claims.values()), round_=0, backend="offline"), res) == []


def test_the_critic_cannot_pass_contradicting_claims(tmp_path):
    from edm_ars.data.registry import load_registry
    from edm_ars.formulate.spec import offline_spec
    from edm_ars.review.critic import review

    reg = load_registry(ROOT / "registry" / "hsls09")
    spec = offline_spec(reg, prompt=None, question_id="college_attendance", round_=0)
    names = [p["name"] for p in spec["predictors"]]
    outcome = spec["outcome"]["name"]
    report = {"analytic_n": 5000, "test_n": 1000, "outcome": outcome, "outcome_source": outcome,
              "predictors_before": names, "predictors_after": names, "feature_sources": {n: n for n in names},
              "split": {"group_overlap": 0}, "checks": [{"name": "no_missing_values", "passed": True}]}
    res = results()
    for k, m in enumerate(["elastic_net", "mlp"]):
        res["models"][m] = {"metrics": {"auc": 0.78 - 0.01 * k}, "ci": {"auc": [0.75 - 0.01 * k, 0.81 - 0.01 * k]}}
    figures = [{"path": f"figures/{k}.pdf", "kind": k, "caption": k}
               for k in ("roc", "calibration", "shap_summary", "shap_importance", "fairness")]
    res.update(interpreted_model="xgboost", test_n=1000, figures=figures, flags=[], errors=[],
               top_features=[{"feature": "X1SES", "label": "SES", "mean_abs_shap": 0.4}],
               fairness={"attributes": {"X1SEX": {"groups": [{"group": "F", "n": 500, "reliable": True, "metric": 0.8}],
                                                  "gaps": {}, "flags": []}}, "flags": []},
               stability={"unstable": False, "top5_overlap": {"mean": 0.9}, "n_perturbations": 3,
                          "thresholds": {"unstable_top5": 0.6}},
               thresholds={"quality_floor": 0.6, "leakage_auc": 0.95})
    consistent = document(code_claims(res, report), round_=0, backend="offline")
    good = review(spec, report, res, reg, round_=0, max_revisions=2, claims=consistent)
    assert good["verdict"] == "PASS", good["issues"]
    assert next(c for c in good["checks"] if c["id"] == "sv_claims_consistent")["passed"] is True
    planted = copy.deepcopy(consistent)
    for c in planted["claims"]:
        if c["id"] == "outperforms_logistic":
            c["status"] = "inconclusive"  # the selection says stacking is clearly better than logistic
    bad = review(spec, report, res, reg, round_=0, max_revisions=2, claims=planted)
    issue = next(i for i in bad["issues"] if i["id"] == "sv_claims_consistent")
    assert issue["caps_verdict"] is True and "judge the same comparison" in issue["description"]
    # the verdict is capped: REVISE by the rubric; a write-targeted issue re-runs no stage, so the paper is written
    # flagged UNVERIFIED (never a plain PASS)
    assert bad["rubric_verdict"] == "REVISE"
    assert bad["verdict"] != "PASS" or bad["unverified"] is True


# ---- the Writer's own papers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("regression", [False, True])
def test_the_writers_fixture_papers_pass(tmp_path, regression):
    from test_writer import _artifacts_by_name, _build_real

    from edm_ars.review.consistency import check_paper

    _, out, arts = _build_real(tmp_path, regression)
    report = check_paper(out / "paper.tex", _artifacts_by_name(arts))
    assert report.ok, "\n".join(report.failures())
    assert report.claims, "the fixture paper compares models"
    outline = json.loads((out / "outline.json").read_text())
    assert outline.get("comparisons"), outline


def test_the_writer_keeps_the_promise_on_a_failed_data_check(tmp_path):
    """Methods say that the Limitations discuss the failed check (the STAR paper's dangling promise), and the
    Results send a leakage flag there: the Limitations hold both."""
    import test_writer

    from edm_ars.review.consistency import check_paper
    from edm_ars.writer.paper import slot_content

    arts = test_writer.real_artifacts()
    arts["data_report"]["checks"].append({"name": "no_duplicated_columns", "passed": False, "detail": ["a__b"]})
    best = arts["results"]["best_model"]
    arts["results"]["flags"].append(f"possible_leakage: {best} AUC above the leakage threshold")
    _, out = test_writer.build_fixture_paper(tmp_path, arts)
    tex = (out / "paper.tex").read_text()
    limitations = slot_content(tex, "LIMITATIONS")
    assert "no\\_duplicated\\_columns" in limitations and "leakage" in limitations
    assert "(Section~\\ref{sec:limitations})" in slot_content(tex, "RESULTS")
    report = check_paper(out / "paper.tex", test_writer._artifacts_by_name(arts))
    assert report.ok, "\n".join(report.failures())
    outline = json.loads((out / "outline.json").read_text())
    assert {"from": "sec:methods", "target": "sec:limitations", "topics": ["no_duplicated_columns"],
            "phrase": "methods.checks_failed_one"} in outline["promises"]
    assert any(p["topics"] == ["leakage"] for p in outline["promises"])
    # without the Limitations' sentences the promises dangle, and the check says so
    broken = tex.replace("The data check \\texttt{no\\_duplicated\\_columns} failed", "A data check failed")
    (out / "paper.tex").write_text(broken)
    found = check_paper(out / "paper.tex", test_writer._artifacts_by_name(arts)).failures()
    assert any("discusses no_duplicated_columns, which that section never mentions" in f for f in found), found
    assert any("outline.json records a promise that Section 6 (Limitations) discusses no_duplicated_columns" in f
               for f in found), found


def test_a_model_written_section_with_an_inconsistent_comparison_is_rejected(tmp_path):
    """With a model backend, a rewritten section whose comparison the evidence does not support keeps the draft."""
    import test_writer

    from edm_ars.writer.model_prose import check

    arts = test_writer.real_artifacts()
    figs = test_writer._real_figures(tmp_path / "round_0", arts["results"])
    seen: dict[str, tuple] = {}

    def rewriter(ctx, drafts):
        seen["draft"] = check(ctx, "DISCUSSION", drafts["DISCUSSION"])
        seen["planted"] = check(ctx, "DISCUSSION", drafts["DISCUSSION"] + "\n\nXGBoost was clearly better than "
                                "logistic regression, and stacking improves on the best single model.")
        return {}, []

    test_writer.build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                            figures_dir=figs, template=test_writer.TEMPLATE, out_dir=tmp_path / "paper",
                            phrases=test_writer.PHRASES, registry_labels=test_writer.REAL_LABELS,
                            dataset=test_writer.HSLS_PROSE, rewriter=rewriter)
    assert seen["draft"][0] is not None, seen["draft"]
    text, why = seen["planted"]
    assert text is None and "inconsistent comparative claim" in why, why
    assert "shows xgboost not distinguishable from logistic" in why and "names only stacking" in why, why
