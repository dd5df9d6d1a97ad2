"""Tests of the Writer stage (scripts/edm_ars/writer)."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edm_ars.writer import (
    LatexError,
    build_paper,
    cited_keys,
    compile_pdf,
    escape_latex,
    fill_slot,
    macro_name,
    raw_numbers,
    slot_content,
)
from edm_ars.writer.latex import latex_errors, undefined_refs
from edm_ars.writer.macros import MacroTable, fmt_ci, fmt_count, fmt_metric, fmt_pct, text_with_macros

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "config" / "paper_template.tex"
SECTION_SLOTS = ["ABSTRACT", "INTRODUCTION", "RELATED_WORK", "METHODS", "RESULTS", "DISCUSSION",
                 "LIMITATIONS", "APPENDIX"]
SPECIAL_LABEL = "X1 Parents' income & R_D spending: top 5% $ #1"


# ---- fixtures -------------------------------------------------------------------------------------
def _bib(key: str, kind: str, fields: dict[str, str]) -> str:
    body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields.items())
    return f"@{kind}{{{key},\n{body}\n}}"


def _paper(key, title, authors, year, venue, topics, kind="article", status="VERIFIED", bibkey=None):
    fields = {"author": " and ".join(authors), "title": title, "year": str(year)}
    fields["journal" if kind == "article" else "booktitle"] = venue
    return {"key": key, "title": title, "authors": authors, "year": year, "venue": venue, "doi": None,
            "url": None, "topics": topics, "status": status,
            "bibtex": _bib(bibkey or key, kind, fields)}


def literature() -> dict:
    return {
        "source": "curated",
        "retrieval_failed": True,
        "retrieval_note": "Semantic Scholar unreachable (offline backend); curated bibliography used.",
        "papers": [
            _paper("baker2009state", "The State of Educational Data Mining in 2009: A Review and Future "
                   "Visions", ["Ryan S. J. d. Baker", "Kalina Yacef"], 2009,
                   "Journal of Educational Data Mining", ["edm"]),
            _paper("romero2010edm", "Educational Data Mining: A Review of the State of the Art",
                   ["Crist{\\'o}bal Romero", "Sebasti{\\'a}n Ventura"], 2010,
                   "IEEE Transactions on Systems, Man, and Cybernetics, Part C", ["edm"]),
            _paper("ingels2011hsls", "High School Longitudinal Study of 2009 (HSLS:09) Base-Year Data File "
                   "Documentation", ["Steven J. Ingels", "Daniel J. Pratt"], 2011, "NCES 2011-328",
                   ["hsls09"]),
            _paper("chen2016xgboost", "XGBoost: A Scalable Tree Boosting System",
                   ["Tianqi Chen", "Carlos Guestrin"], 2016, "Proceedings of KDD", ["xgboost"],
                   kind="inproceedings"),
            _paper("breiman2001random", "Random Forests", ["Leo Breiman"], 2001, "Machine Learning",
                   ["random_forest"]),
            _paper("zou2005regularization", "Regularization and Variable Selection via the Elastic Net",
                   ["Hui Zou", "Trevor Hastie"], 2005, "Journal of the Royal Statistical Society B",
                   ["elastic_net"]),
            _paper("lundberg2017unified", "A Unified Approach to Interpreting Model Predictions",
                   ["Scott M. Lundberg", "Su-In Lee"], 2017, "Advances in NeurIPS", ["shap"],
                   kind="inproceedings", bibkey="lundberg_wrong_key"),
            _paper("kaufman2012leakage", "Leakage in Data Mining: Formulation, Detection, and Avoidance",
                   ["Shachar Kaufman", "Saharon Rosset", "Claudia Perlich"], 2012, "ACM TKDD",
                   ["leakage"]),
            _paper("kizilcec2022fairness", "Algorithmic Fairness in Education",
                   ["Ren{\\'e} F. Kizilcec", "Hansol Lee"], 2022, "The Ethics of Artificial "
                   "Intelligence in Education", ["fairness"], kind="inproceedings"),
            _paper("efron1994bootstrap", "An Introduction to the Bootstrap",
                   ["Bradley Efron", "Robert J. Tibshirani"], 1994, "Chapman and Hall", ["bootstrap"]),
            _paper("fake2023made", "A Paper That Does Not Exist", ["Nobody"], 2023, "Nowhere", ["edm"],
                   status="HALLUCINATED"),
        ],
    }


def data_report(binary: bool) -> dict:
    miss = {"X1SES": 0.0, "X1TXMTSCOR": 3.1, "X1PARINC": 18.4, "X2STUEDEXPCT": 12.7}
    rep = {
        "original_n": 23503,
        "analytic_n": 17012 if binary else 18600,
        "retention": 0.7238 if binary else 0.7914,
        "train_n": 13602 if binary else 14880,
        "test_n": 3410 if binary else 3720,
        "outcome": "X4EVRATNDCLG" if binary else "X2TXMTSCOR",
        "task": "binary_classification" if binary else "regression",
        "class_balance": {"0": 5103, "1": 11909} if binary else None,
        "outcome_summary": None if binary else {"mean": 50.11, "sd": 9.87, "min": 22.24, "max": 84.91},
        "missingness": {k: {"pct_missing": v, "method": "median (train)"} for k, v in miss.items()},
        "predictors_before": list(miss) + ["X1SEX"],
        "predictors_after": ["X1SES", "X1TXMTSCOR", "X1PARINC", "X2STUEDEXPCT_2", "X2STUEDEXPCT_3",
                             "X1SEX_2"],
        "feature_sources": {"X1SES": "X1SES", "X1TXMTSCOR": "X1TXMTSCOR", "X1PARINC": "X1PARINC",
                            "X2STUEDEXPCT_2": "X2STUEDEXPCT", "X2STUEDEXPCT_3": "X2STUEDEXPCT",
                            "X1SEX_2": "X1SEX"},
        "split": {"method": "group_shuffle_split", "seed": 20240917, "test_fraction": 0.2,
                  "group_overlap": 0,
                  "school_reconstruction": {"status": "reconstructed", "n_clusters": 912}},
        "checks": [{"name": "temporal_order", "passed": True, "detail": "all predictors precede outcome"},
                   {"name": "group_disjoint", "passed": True, "detail": None},
                   {"name": "no_sentinels_left", "passed": binary, "detail": "2 values of -9 remained"}],
        "validation_passed": binary,
        "warnings": ["X1PARINC has 18.4% missing values; imputed with the training median."],
        "sentinel_recoding": {"n_values_recoded": 48213, "n_variables": 5, "codes": [-9, -8, -7]},
        "imputation_protocol": "Numeric predictors were imputed with training-set medians and "
                               "categorical predictors with a separate missing category, fitted on "
                               "the 80% training split only.",
        "protected": ["X1SEX", "X1RACE"],
    }
    return rep


def spec(binary: bool) -> dict:
    preds = [
        {"name": "X1SES", "label": "X1 Socio-economic status composite", "wave": "base_year",
         "rationale": "Family socio-economic status is the most consistent predictor of college access."},
        {"name": "X1TXMTSCOR", "label": "X1 Mathematics standardized theta score", "wave": "base_year",
         "rationale": "Ninth-grade mathematics achievement signals academic preparation."},
        {"name": "X1PARINC", "label": SPECIAL_LABEL, "wave": "base_year",
         "rationale": "Family income shapes the resources available for schooling."},
        {"name": "X1SEX", "label": "X1 Student's sex", "wave": "base_year",
         "rationale": "Included to describe differences between groups of students."},
    ]
    if binary:
        preds.append({"name": "X2STUEDEXPCT", "label": "X2 How far in school 9th grader thinks he/she "
                      "will get", "wave": "first_follow_up",
                      "rationale": "Expectations in 11th grade are closer to the enrollment decision."})
        outcome = {"name": "X4EVRATNDCLG", "label": "X4 Ever attended college as of Feb 2016",
                   "wave": "update_panel", "type": "binary", "positive_label": "attended college"}
        rq = ("How accurately can postsecondary attendance by February 2016 be predicted from "
              "students' 9th-grade background and 11th-grade expectations, and is the prediction "
              "equally accurate across sex and race/ethnicity?")
    else:
        preds.append({"name": "X2STUEDEXPCT", "label": "X2 Educational expectations",
                      "wave": "first_follow_up",
                      "rationale": "Expectations relate to effort in mathematics."})
        outcome = {"name": "X2TXMTSCOR", "label": "X2 Mathematics standardized theta score",
                   "wave": "first_follow_up", "type": "continuous", "positive_label": None}
        rq = ("How accurately can 11th-grade mathematics achievement be predicted from 9th-grade "
              "achievement, attitudes and family background, and which early indicators matter most?")
    return {
        "dataset": "hsls09", "question_id": "college_attendance" if binary else "math_achievement",
        "research_question": rq, "outcome": outcome,
        "task": "binary_classification" if binary else "regression", "predictors": preds,
        "population": "Fall 2009 ninth-graders in the HSLS:09 public-use file with a valid outcome.",
        "subgroups": ["X1SEX", "X1RACE"],
        "expected_contribution": "A reproducible estimate of how well early records predict the outcome.",
        "limitations": ["Public-use data suppress school identifiers.",
                        "Predictors are self-reported and may contain 5-10% measurement error."],
        "novelty_score": 2.5, "prompt": None, "backend": "offline", "round": 0,
    }


def _model(label, metrics, ci, params, cv):
    model = {"metrics": metrics, "ci": ci, "best_params": params, "cv_score": cv}
    if label:
        model["label"] = label
    return model


def results(binary: bool) -> dict:
    if binary:
        models = {
            "xgboost": _model("XGBoost", {"auc": 0.8231, "accuracy": 0.7712, "precision": 0.8104,
                                          "recall": 0.8733, "f1": 0.8407, "balanced_accuracy": 0.7011,
                                          "brier": 0.1552},
                              {"auc": [0.8068, 0.8389], "balanced_accuracy": [0.6852, 0.7170]},
                              {"clf__max_depth": 4, "clf__learning_rate": 0.05, "clf__n_estimators": 400},
                              0.8187),
            "random_forest": _model("Random forest", {"auc": 0.8174, "accuracy": 0.7650, "precision": 0.8001,
                                                      "recall": 0.8801, "f1": 0.8382,
                                                      "balanced_accuracy": 0.6894, "brier": 0.1583},
                                    {"auc": [0.8010, 0.8335]}, {"clf__min_samples_leaf": 20}, 0.8120),
            "logistic_regression": _model("Logistic regression (L2)",
                                          {"auc": 0.8102, "accuracy": 0.7598, "precision": 0.7988,
                                           "recall": 0.8705, "f1": 0.8331, "balanced_accuracy": 0.6850,
                                           "brier": 0.1601},
                                          {"auc": [0.7931, 0.8270]}, {"clf__C": 0.1}, 0.8081),
        }
        top = [
            {"feature": "X1TXMTSCOR", "label": "X1 Mathematics standardized theta score",
             "mean_abs_shap": 0.412, "direction": "positive"},
            {"feature": "X1PARINC", "label": SPECIAL_LABEL, "mean_abs_shap": 0.305, "direction": "positive"},
            {"feature": "X2STUEDEXPCT_3", "label": None, "mean_abs_shap": 0.221, "direction": "negative"},
            {"feature": "X1SES", "mean_abs_shap": 0.118, "direction": "positive"},
        ]
        figures = [
            {"path": "figures/roc.pdf", "kind": "roc",
             "caption": "ROC curves on the test set (n = 3,410); the diagonal marks chance (AUC 0.5)."},
            {"path": "figures/shap_importance.png", "kind": "importance",
             "caption": "Mean absolute SHAP values of the 10 most predictive features & their direction."},
            {"path": "figures/calibration.pdf", "kind": "calibration", "caption": "Missing on disk."},
        ]
        flags = ["auc_below_leakage_threshold", "class_imbalance: 70% positive"]
        primary, best = "auc", "xgboost"
    else:
        models = {
            "elastic_net": _model(None, {"rmse": 6.012, "mae": 4.781, "r2": 0.6234},
                                  {"r2": [0.6011, 0.6452], "rmse": [5.87, 6.15]},
                                  {"alpha": 0.0031, "l1_ratio": 0.5}, 0.6188),
            "random_forest": _model(None, {"rmse": 6.104, "mae": 4.853, "r2": 0.6118},
                                    {"r2": [0.5890, 0.6339]}, {"max_features": "sqrt"}, 0.6090),
            "xgboost": _model(None, {"rmse": 6.071, "mae": 4.822, "r2": 0.6160},
                              {"r2": [0.5931, 0.6380]}, {}, None),
        }
        top = [{"feature": "X1TXMTSCOR", "importance": 5.21, "direction": "positive"},
               {"feature": "X1SES", "importance": 1.33, "direction": "positive"}]
        figures = [{"path": "figures/roc.pdf", "kind": "predicted_vs_actual",
                    "caption": "Predicted against observed 11th-grade scores for the elastic net."}]
        flags = []
        primary, best = "r2", "elastic_net"
    return {"task": "binary_classification" if binary else "regression", "primary_metric": primary,
            "best_model": best,
            "selection_rule": f"highest mean 5-fold CV {primary.upper()} on training data",
            "n_bootstrap": 1000, "test_n": 3410 if binary else 3720, "models": models,
            "top_features": top, "figures": figures, "flags": flags, "errors": []}


def review(passed: bool) -> dict:
    return {
        "round": 0, "verdict": "PASS" if passed else "REVISE", "model_verdict": None,
        "overall_score": 7.5 if passed else 5.5,
        "dimension_scores": {"problem_formulation": 8.0, "data_preparation": 6.5, "analysis": 7.0,
                             "substantive_validity": 6.0},
        "issues": [] if passed else [
            {"id": "R1", "severity": "major", "target_stage": "engineer",
             "description": "2 sentinel values (-9) remained after recoding in X1PARINC & X1SES_2.",
             "recommendation": "Recode all negative reserve codes before the split."},
            {"id": "R2", "severity": "minor", "target_stage": "write",
             "description": "Subgroup performance (sex, race) is not reported.", "recommendation": None},
        ],
        "revision_instructions": {}, "rerun_from": None if passed else "engineer", "abort_reason": None,
        "unverified": not passed, "backend": "offline",
    }


needs_latex = pytest.mark.skipif(shutil.which("latexmk") is None or shutil.which("pdftotext") is None,
                                 reason="latexmk/pdftotext not installed")


REGISTRY_LABELS = {"X1RACE": "X1 Student's race/ethnicity-composite", "X1SEX": "X1 Student's sex",
                   "X2STUEDEXPCT": "X2 How far in school 11th grader thinks he/she will get"}


def _make_figures(folder: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = folder / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(3.3, 2.6))
    ax.plot([0, 0.1, 0.3, 1], [0, 0.5, 0.8, 1], label="XGBoost")
    ax.plot([0, 1], [0, 1], "k--", lw=0.8)
    ax.set_xlabel("False positive rate")
    ax.set_ylabel("True positive rate")
    ax.legend()
    fig.tight_layout()
    fig.savefig(figs / "roc.pdf")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3.3, 2.2))
    ax.barh(["Math score", "Income", "Expectations"], [0.41, 0.31, 0.22])
    fig.tight_layout()
    fig.savefig(figs / "shap_importance.png", dpi=100)
    plt.close(fig)
    return figs


def _build(tmp_path: Path, binary: bool, passed: bool, name: str = "paper", **changes) -> tuple[dict, Path]:
    round_dir = tmp_path / f"round_{name}"
    figs = _make_figures(round_dir)
    arts = {"spec": spec(binary), "literature": literature(), "data_report": data_report(binary),
            "results": results(binary), "review": review(passed)}
    arts.update(changes)
    out = tmp_path / name
    summary = build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"],
                          arts["review"], figures_dir=figs, template=TEMPLATE, out_dir=out,
                          registry_labels=REGISTRY_LABELS)
    return summary, out


@pytest.fixture
def binary_paper(tmp_path):
    return _build(tmp_path, binary=True, passed=False, name="binary")


@pytest.fixture
def regression_paper(tmp_path):
    return _build(tmp_path, binary=False, passed=True, name="regression")


@pytest.fixture(params=["binary", "regression"])
def any_paper(request, tmp_path):
    binary = request.param == "binary"
    return _build(tmp_path, binary=binary, passed=not binary)


def _bib_keys(path: Path) -> list[str]:
    return re.findall(r"@\w+\{([^,\s]+),", path.read_text())


# ---- unit tests ---------------------------------------------------------------------------------
def test_formats_and_macro_names():
    assert fmt_count(23503) == "23{,}503"
    assert fmt_metric(0.82312) == "0.823"
    assert fmt_metric(-0.0123) == "$-$0.012"
    assert fmt_pct(72.38) == r"72.4\%"
    assert fmt_ci(0.80081, 0.8449) == r"95\% CI [0.801, 0.845]"
    assert macro_name("logistic_regression", "auc") == "LogisticRegressionAUC"
    assert macro_name("Miss", "X1SES") == "MissXOneSES"
    assert macro_name("xgboost", "f1") == "XgboostFOne"
    assert re.fullmatch(r"[A-Za-z]+", macro_name("model-2", "r2", "CI"))


def test_macro_table_dedupes_and_suffixes():
    m = MacroTable()
    a = m.metric("BestAUC", 0.8, "results.json:a")
    assert m.metric("BestAUC", 0.8, "results.json:a") == a
    b = m.metric("BestAUC", 0.7, "results.json:b")
    assert a == r"\BestAUC{}" and b == r"\BestAUCA{}"
    tex = m.to_tex()
    assert r"\newcommand{\BestAUC}{0.800} % results.json:a" in tex
    text = text_with_macros("Top 5% of 23,503 students in HSLS:09 (X1SES, 9th grade), 2016.", m, "src")
    assert "HSLS:09" in text and "X1SES" in text and "9th" in text and r"\%" in text
    assert not raw_numbers(text)
    values = {d["value"] for d in json.loads(m.to_json())["macros"] if d.get("quoted")}
    assert {"5", "23{,}503", "2016"} <= values


def test_escape_latex():
    assert escape_latex("R&D 50% $5 #1 a_b {x} ~ ^") == (
        r"R\&D 50\% \$5 \#1 a\_b \{x\} \textasciitilde{} \textasciicircum{}")
    assert escape_latex("Student's") == "Student's"
    assert escape_latex("a \u2014 b \u2265 c") == r"a --- b \ensuremath{\geq} c"


def test_fill_slot_is_idempotent():
    tex = "a\n%%PLACEHOLDER:UNVERIFIED%%\nb\n"
    once = fill_slot(tex, "UNVERIFIED", "WARN")
    twice = fill_slot(once, "UNVERIFIED", "WARN")
    assert once == twice and twice.count("WARN") == 1
    cleared = fill_slot(twice, "UNVERIFIED", "")
    assert "WARN" not in cleared and "%%BEGIN:UNVERIFIED%%" in cleared
    with pytest.raises(Exception, match="NOPE"):
        fill_slot(tex, "NOPE", "x")


def test_template_has_all_slots():
    text = TEMPLATE.read_text()
    for name in ["TITLE", "AUTHORS", "ABSTRACT", "KEYWORDS", "MACROS", "UNVERIFIED", "INTRODUCTION",
                 "RELATED_WORK", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS", "APPENDIX"]:
        assert re.search(rf"^%%PLACEHOLDER:{name}%%$", text, re.M), name
    assert r"\documentclass[sigconf" in text and "printacmref=false" in text


def test_undefined_and_error_parsing():
    log = ("LaTeX Warning: Citation `foo2020' on page 1 undefined on input line 12.\n"
           "LaTeX Warning: Reference `fig:roc' on page 2 undefined on input line 40.\n"
           "! Undefined control sequence.\nl.42 \\BestAUCX\n")
    assert undefined_refs(log) == ["Citation `foo2020' undefined", "Reference `fig:roc' undefined"]
    assert latex_errors(log) == ["! Undefined control sequence.\nl.42 \\BestAUCX"]


# ---- build_paper ---------------------------------------------------------------------------------
def test_build_writes_files(binary_paper):
    summary, out = binary_paper
    for name in ("paper.tex", "references.bib", "numbers.tex", "numbers.json"):
        assert (out / name).is_file(), name
    assert (out / "figures" / "roc.pdf").is_file()
    assert (out / "figures" / "shap_importance.png").is_file()
    assert summary["figures"] == 2 and summary["missing_figures"] == ["figures/calibration.pdf"]
    assert summary["macros"] == len(json.loads((out / "numbers.json").read_text())["macros"])
    assert set(summary["sections"]) >= {"abstract", "introduction", "methods", "results", "discussion",
                                        "limitations"}
    assert summary["tables"] >= 2
    tex = (out / "paper.tex").read_text()
    assert not re.search(r"^%%PLACEHOLDER", tex, re.M)
    assert r"\input{numbers.tex}" in tex
    for fig in ("fig:roc", "fig:importance"):
        assert f"\\label{{{fig}}}" in tex and f"\\ref{{{fig}}}" in tex
    assert r"\includegraphics[width=\columnwidth]{figures/roc.pdf}" in tex


def test_numbers_come_through_macros(any_paper):
    summary, out = any_paper
    tex = (out / "paper.tex").read_text()
    assert summary["raw_numbers"] == {}
    for name in SECTION_SLOTS + ["TITLE"]:
        assert raw_numbers(slot_content(tex, name)) == [], name
    results_text = slot_content(tex, "RESULTS")
    assert not re.search(r"\d\.\d", _strip_cmds(results_text))
    assert not re.search(r"\d\.\d", _strip_cmds(slot_content(tex, "ABSTRACT")))
    # every capitalised macro used is defined in numbers.tex (or is the template's \Rsq)
    defined = set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", (out / "numbers.tex").read_text()))
    used = set(re.findall(r"\\([A-Z][A-Za-z]*)\{\}", tex))
    assert used - defined <= {"Rsq"}, used - defined
    records = json.loads((out / "numbers.json").read_text())["macros"]
    assert all(re.fullmatch(r"\\[A-Za-z]+", r["macro"]) and r["source"] for r in records)


def _strip_cmds(tex: str) -> str:
    return re.sub(r"\\(label|ref|cite[tp]?|includegraphics|begin|end)(\[[^]]*\])?\{[^}]*\}", "", tex)


def test_macro_values_match_artifacts(binary_paper):
    _, out = binary_paper
    recs = {r["macro"]: r for r in json.loads((out / "numbers.json").read_text())["macros"]}
    assert recs[r"\BestAUC"]["value"] == "0.823"
    assert recs[r"\BestAUC"]["source"] == "results.json:models.xgboost.metrics.auc"
    assert recs[r"\BestAUCCI"]["value"] == r"95\% CI [0.807, 0.839]"
    assert recs[r"\OriginalN"]["value"] == "23{,}503"
    assert recs[r"\RetentionPct"]["value"] == r"72.4\%"
    assert recs[r"\XgboostAUC"]["raw"] == pytest.approx(0.8231)
    tex = (out / "numbers.tex").read_text()
    assert r"\newcommand{\BestAUC}{0.823} % results.json:models.xgboost.metrics.auc" in tex
    results_text = slot_content((out / "paper.tex").read_text(), "RESULTS")
    assert r"\BestAUC{}" in results_text or r"\XgboostAUC{}" in results_text
    assert r"\begin{tabular}" in results_text and r"\toprule" in results_text
    assert r"\fitcolumn" in results_text


def test_citations_resolve(any_paper):
    summary, out = any_paper
    tex = (out / "paper.tex").read_text()
    keys = cited_keys(tex)
    bib = _bib_keys(out / "references.bib")
    assert len(keys) >= 5
    assert set(keys) == set(bib) and len(bib) == len(set(bib))
    assert set(summary["cited_keys"]) == set(keys)
    assert "fake2023made" not in bib
    assert "lundberg2017unified" in bib and "lundberg_wrong_key" not in (out / "references.bib").read_text()
    assert r"\citep{" in tex and r"\citet{" in tex


def test_special_characters_escaped(binary_paper):
    _, out = binary_paper
    tex = (out / "paper.tex").read_text()
    assert r"Parents' income \& R\_D spending: top \TextNum" in tex
    assert r"\% \$ \#" in tex
    assert SPECIAL_LABEL[3:] not in tex


def test_unverified_block(tmp_path):
    _, out = _build(tmp_path, binary=True, passed=False)
    tex = (out / "paper.tex").read_text()
    assert tex.count(r"\unverifiedbox{\textbf{Unverified draft.}") == 1
    assert r"\label{app:review}" in tex and "Recode all negative reserve codes" in tex
    block = slot_content(tex, "UNVERIFIED")
    assert block.strip() and tex.index(block) < tex.index(r"\section{Introduction}")
    # building again into the same folder, or re-filling the written paper, does not duplicate it
    _build(tmp_path, binary=True, passed=False)
    tex2 = (out / "paper.tex").read_text()
    assert tex2 == tex
    again = fill_slot(tex2, "UNVERIFIED", block)
    assert again.count(r"\unverifiedbox{\textbf") == 1
    # a PASS review: no block, no review appendix
    _, out_pass = _build(tmp_path, binary=True, passed=True, name="pass")
    tex_pass = (out_pass / "paper.tex").read_text()
    assert r"\unverifiedbox{\textbf" not in tex_pass and "app:review" not in tex_pass
    # PASS but unverified (e.g. offline review) still warns
    rv = review(True)
    rv["unverified"] = True
    _, out_u = _build(tmp_path, binary=True, passed=True, name="pass_unverified", review=rv)
    assert (out_u / "paper.tex").read_text().count(r"\unverifiedbox{\textbf") == 1


def test_prose_rules(any_paper):
    summary, out = any_paper
    tex = (out / "paper.tex").read_text()
    for section in ("ABSTRACT", "RESULTS", "DISCUSSION"):
        low = slot_content(tex, section).lower()
        for phrase in (" causes ", "caused by", "leads to", "led to", "effect of", "impact of"):
            assert phrase not in low, (section, phrase)
    assert "subjects" not in tex.lower()
    methods = slot_content(tex, "METHODS")
    assert "generated automatically by EDM-ARS" in methods and "offline backend" in methods
    assert "students" in methods
    for word in ("sentinel", "reserve", "school clusters", "before any encoding", "bootstrap"):
        assert word in methods or word in methods.replace("\n", " "), word
    limitations = slot_content(tex, "LIMITATIONS")
    assert "curated bibliography" in limitations
    assert "Public-use data suppress school identifiers." in limitations
    assert 150 <= summary["sections"]["abstract"] <= 250, summary["sections"]["abstract"]
    assert summary["sections"]["introduction"] >= 300
    assert summary["sections"]["methods"] >= 400


def test_conditioned_on_results(binary_paper, regression_paper):
    tex_b = (binary_paper[1] / "paper.tex").read_text()
    tex_r = (regression_paper[1] / "paper.tex").read_text()
    assert "tree ensemble improved on" in slot_content(tex_b, "DISCUSSION")
    assert "largely additive" in slot_content(tex_r, "DISCUSSION")
    assert "SHAP" in slot_content(tex_b, "RESULTS") and r"\Rsq{}" in slot_content(tex_r, "RESULTS")
    assert "did not report performance separately" in slot_content(tex_b, "DISCUSSION")
    assert "Analysis flag:" in slot_content(tex_b, "LIMITATIONS")


def test_without_verified_papers(tmp_path):
    lit = {"source": "semantic_scholar", "retrieval_failed": False, "retrieval_note": "ok", "papers": []}
    summary, out = _build(tmp_path, binary=False, passed=True, literature=lit)
    tex = (out / "paper.tex").read_text()
    assert cited_keys(tex) == [] and summary["cited_keys"] == []
    assert r"\bibliography{" not in tex and (out / "references.bib").read_text() == ""


def test_unknown_dataset_and_sparse_artifacts(tmp_path):
    sp = spec(False)
    sp["dataset"] = "els2002"
    for p in sp["predictors"]:
        p["wave"] = None
    res = results(False)
    res["top_features"], res["figures"] = [], []
    for m in res["models"].values():
        m["ci"], m["best_params"], m["cv_score"] = {}, {}, None
    rep = data_report(False)
    rep["outcome_summary"] = None
    rep["split"]["school_reconstruction"] = {"status": "unavailable", "n_clusters": None}
    summary, out = _build(tmp_path, binary=False, passed=True, spec=sp, results=res, data_report=rep)
    tex = (out / "paper.tex").read_text()
    assert summary["raw_numbers"] == {} and summary["figures"] == 0
    assert "may therefore appear in both" in tex and "the ELS2002 data" in tex
    assert "from the ," not in tex and "No feature attributions" in tex


def test_best_model_without_primary_metric(tmp_path):
    res = results(True)
    del res["models"]["xgboost"]["metrics"]["auc"]
    with pytest.raises(Exception, match="no 'auc' metric"):
        _build(tmp_path, binary=True, passed=True, results=res)


@needs_latex
def test_compile_without_references(tmp_path):
    lit = {"source": "semantic_scholar", "retrieval_failed": False, "retrieval_note": "ok", "papers": []}
    _, out = _build(tmp_path, binary=True, passed=True, literature=lit)
    assert compile_pdf(out / "paper.tex", out / "latexmk.log").is_file()


def test_bad_best_model_is_reported(tmp_path):
    res = results(True)
    res["best_model"] = "svm"
    with pytest.raises(Exception, match="svm"):
        _build(tmp_path, binary=True, passed=True, results=res)


# ---- compiling ----------------------------------------------------------------------------------


@needs_latex
@pytest.mark.parametrize("binary", [True, False])
def test_compile_pdf(tmp_path, binary):
    _, out = _build(tmp_path, binary=binary, passed=not binary)
    pdf = compile_pdf(out / "paper.tex", out / "latexmk.log")
    pages = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    assert re.search(r"Pages:\s+[3-8]\b", pages) or not shutil.which("pdfinfo"), pages
    assert pdf.is_file()
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = re.sub(r"\s+", " ", text)
    for name in ("INTRODUCTION", "RELATED WORK", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS",
                 "REFERENCES"):
        assert name in flat.upper(), name
    assert "??" not in text
    assert "0.823" in flat if binary else "0.623" in flat
    assert ("UNVERIFIED DRAFT" in flat.upper()) == binary


@needs_latex
def test_compile_error_reports_latex_lines(tmp_path):
    tex = tmp_path / "broken.tex"
    tex.write_text("\\documentclass{article}\n\\begin{document}\nok\n\\undefinedmacro\n\\end{document}\n")
    with pytest.raises(LatexError) as info:
        compile_pdf(tex, tmp_path / "broken.log")
    msg = str(info.value)
    assert "! Undefined control sequence." in msg and "l.4" in msg


@needs_latex
def test_compile_reports_undefined_references(tmp_path):
    tex = tmp_path / "refs.tex"
    tex.write_text("\\documentclass{article}\n\\begin{document}\nSee \\ref{fig:nope}.\n\\end{document}\n")
    with pytest.raises(LatexError, match="fig:nope"):
        compile_pdf(tex, tmp_path / "refs.log")


def test_inputs_are_not_mutated(tmp_path):
    arts = {"spec": spec(True), "results": results(True)}
    before = copy.deepcopy(arts)
    _build(tmp_path, binary=True, passed=False, **arts)
    assert arts == before
