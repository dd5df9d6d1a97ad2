"""The causal study's paper (edm_ars.causal.paper): built from tiny hand-made artifacts of a randomized (STAR-like) and
an observational (HSLS-like, generated, with a planted effect) study, verified by verify-paper with every number
reconciled, and the paper lint's causal-wording rule for causal papers."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edm_ars.causal.paper import build_causal_paper
from edm_ars.core.errors import EdmArsError
from edm_ars.writer.integrity import lint
from edm_ars.writer.verify import verify_paper

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "config" / "paper_template.tex"
BIB = ROOT / "registry" / "bibliography" / "references.bib"
needs_latex = pytest.mark.skipif(shutil.which("latexmk") is None or shutil.which("pdftotext") is None,
                                 reason="latexmk/pdftotext not installed")


# ---- fixtures -----------------------------------------------------------------------------------------------------
def _paper(key: str, title: str, author: str, year: int, topics: list[str]) -> dict:
    bib = f"@article{{{key},\n  author = {{{author}}},\n  title = {{{title}}},\n  journal = {{J}},\n  year = {{{year}}}\n}}"
    return {"key": key, "title": title, "authors": [author], "year": year, "venue": "J", "doi": None, "url": None,
            "topics": topics, "status": "VERIFIED", "bibtex": bib}


def literature() -> dict:
    return {"source": "curated", "retrieval_failed": True, "retrieval_note": "offline: curated bibliography used.",
            "papers": [_paper("finn1990answers", "Answers and Questions about Class Size", "Finn, Jeremy D.", 1990,
                              ["star"]),
                       _paper("mosteller1995tennessee", "The Tennessee Study of Class Size in the Early School Grades",
                              "Mosteller, Frederick", 1995, ["star"]),
                       _paper("chernozhukov2018double", "Double/Debiased Machine Learning for Treatment and "
                              "Structural Parameters", "Chernozhukov, Victor", 2018, ["causal", "dml"]),
                       _paper("lundberg2017unified", "A Unified Approach to Interpreting Model Predictions",
                              "Lundberg, Scott", 2017, ["shap"])]}


#: the registry's findings on the STAR-like data (registry dataset.findings): one restatable, one holding a number no
#: artifact backs, one with causal wording that does not name the treatment
FINDINGS = [{"id": "f1", "claim": "Students in small classes scored higher in the early grades.",
             "cite": "finn1990answers", "where": "p. 1"},
            {"id": "f2", "claim": "Scores were 4 points higher.", "cite": "finn1990answers", "where": "p. 2"},
            {"id": "f3", "claim": "Free lunch status affects the scores.", "cite": "mosteller1995tennessee",
             "where": "p. 3"}]


def _review(passed: bool = True) -> dict:
    checklist = [{"id": "identification", "label": "Identification argument stated", "passed": True,
                  "severity": "critical", "detail": "The design statement and the assumptions are given."},
                 {"id": "pre_treatment", "label": "No post-treatment adjustment", "passed": True,
                  "severity": "critical", "detail": "All 3 covariates precede the treatment."},
                 {"id": "attrition", "label": "Attrition by arm", "passed": passed, "severity": "major",
                  "detail": "Attrition rates are reported by arm."},
                 {"id": "heterogeneity_exploratory", "label": "Heterogeneity labelled exploratory", "passed": True,
                  "severity": "minor", "detail": "Labelled exploratory."}]
    return {"verdict": "PASS" if passed else "REVISE", "round": 0, "rerun_from": None if passed else "estimate",
            "issues": [] if passed else [{"id": "C1", "severity": "major", "target_stage": "estimate",
                                          "description": "Attrition check failed.", "recommendation": None}],
            "actions": [], "abort_reason": None, "unverified": not passed, "checklist": checklist}


def star() -> dict:
    """A STAR-like randomized study: small against regular classes, blocks and clusters at the school."""
    spec = {
        "task": "causal", "question_id": "class_size_k",
        "research_question": "Does assignment to a small class in kindergarten raise the combined reading and "
                             "mathematics score at the end of kindergarten?",
        "population": "Kindergarten students in the schools of Project STAR",
        "outcome": {"name": "totalk", "label": "Total scaled score in kindergarten", "type": "continuous",
                    "wave": "k", "sum_of": ["readk", "mathk"]},
        "treatment": {"variable": "stark", "label": "Class type in kindergarten", "wave": "k", "treated": "small",
                      "control": "regular", "treated_label": "Small class", "control_label": "Regular class",
                      "phrase": "a small class", "control_phrase": "a regular class",
                      "other_levels": ["regular+aide"], "phrases": ["small class", "small classes"]},
        "design": {"kind": "randomized", "unit": "student", "blocks": "schoolidk", "cluster": "schoolidk",
                   "statement": "Students and teachers were assigned at random to class types within each school."},
        "estimand": {"name": "ATE", "statement": "the average effect of assignment to a small rather than a regular "
                                                 "class on the total score, among students of the schools"},
        "covariates": [{"name": "gender", "label": "Gender", "type": "categorical", "wave": "k", "rationale": "r"},
                       {"name": "lunchk", "label": "Free lunch in kindergarten", "type": "binary", "wave": "k",
                        "rationale": "r"}],
        "subgroups": [{"name": "gender", "label": "Gender"}],
        "identification": "Students and teachers were assigned at random to class types within each school. Random "
                          "assignment within schools makes the arms comparable.",
        "time_order": [{"check": "covariates before treatment", "ok": True, "detail": "all precede"}],
        "published_estimates": [{"cite": "krueger1999experimental", "where": "Table 5", "estimate": 5.37, "se": 1.26,
                                 "estimator": "OLS with school effects", "outcome": "pctk",
                                 "note": "percentile rank of the average score, with school effects"}],
        "literature_keys": ["finn1990answers", "mosteller1995tennessee"], "round": 0}
    data = {"task": "causal", "n_rows": 4000, "n_treated": 1900, "n_control": 2100,
            "excluded_levels": {"regular+aide": 2015}, "n_missing_treatment": 110,
            "outcome_missing": {"treated": 170, "control": 230},
            "features": ["x__gender=female", "x__gender=male", "x__lunchk", "x__lunchk__missing"],
            "covariates": [{"name": "gender", "label": "Gender", "type": "categorical", "wave": "k",
                            "features": ["x__gender=female", "x__gender=male"], "pct_missing": 0.0},
                           {"name": "lunchk", "label": "Free lunch in kindergarten", "type": "binary", "wave": "k",
                            "features": ["x__lunchk", "x__lunchk__missing"], "pct_missing": 2.3}],
            "blocks": {"column": "schoolidk", "n": 79}, "cluster": {"column": "schoolidk", "n": 79},
            "subgroups": [{"name": "gender", "label": "Gender", "levels": {"female": 1770, "male": 1830}}]}
    results = {
        "task": "causal", "design": "randomized", "estimand": "ATE", "alpha": 0.05,
        "n": {"analysed": 3600, "treated": 1730, "control": 1870, "clusters": 79, "blocks": 79},
        "naive": {"estimator": "difference in means", "estimate": 14.12, "se": 2.61, "ci_low": 9.0, "ci_high": 19.24,
                  "p_value": 0.00001},
        "primary": {"estimator": "difference in means with block fixed effects", "library": "statsmodels 0.14.1",
                    "estimate": 13.87, "se": 2.44, "ci_low": 9.09, "ci_high": 18.65, "p_value": 0.00002,
                    "standard_errors": "cluster-robust at schoolidk (79 clusters)"},
        "adjusted": {"estimator": "regression on treatment, block fixed effects and covariates",
                     "library": "statsmodels 0.14.1", "estimate": 13.31, "se": 2.30, "ci_low": 8.8, "ci_high": 17.82,
                     "p_value": 0.00003, "standard_errors": "cluster-robust at schoolidk"},
        "balance": {"threshold": 0.1, "rows": [
            {"feature": "x__gender=female", "covariate": "gender", "mean_treated": 0.49, "mean_control": 0.48,
             "smd": 0.02, "smd_weighted": None},
            {"feature": "x__gender=male", "covariate": "gender", "mean_treated": 0.51, "mean_control": 0.52,
             "smd": -0.02, "smd_weighted": None},
            {"feature": "x__lunchk", "covariate": "lunchk", "mean_treated": 0.47, "mean_control": 0.49,
             "smd": -0.041, "smd_weighted": None},
            {"feature": "x__lunchk__missing", "covariate": "lunchk", "mean_treated": 0.02, "mean_control": 0.025,
             "smd": -0.033, "smd_weighted": None}],
            "max_abs_smd": 0.041, "max_abs_smd_weighted": None, "n_above": 0, "n_above_weighted": None},
        "attrition": {"missing_treated": 170, "missing_control": 230, "rate_treated": 0.0895, "rate_control": 0.1095,
                      "difference": -0.02, "ci_low": -0.041, "ci_high": 0.001, "p_value": 0.061,
                      "stayers_max_abs_smd": 0.044},
        "overlap": None, "sensitivity": None,
        "heterogeneity": {"exploratory": True, "method": "the primary estimator within each subgroup",
                          "groups": [{"attribute": "gender", "group": "female", "n": 1770, "estimate": 15.2, "se": 3.4,
                                      "ci_low": 8.54, "ci_high": 21.86},
                                     {"attribute": "gender", "group": "male", "n": 1830, "estimate": 12.6, "se": 3.3,
                                      "ci_low": 6.13, "ci_high": 19.07}],
                          "skipped": [{"attribute": "gender", "group": "other", "n": 3,
                                       "reason": "fewer than 50 analysed rows in an arm (1 treated, 2 control)"},
                                      {"attribute": "gender", "group": "unknown", "n": 2,
                                       "reason": "fewer than 50 analysed rows in an arm (1 treated, 1 control)"}]},
        "versions": {"python": "3.11.7", "numpy": "1.26.4", "pandas": "2.2.1", "scikit-learn": "1.4.1",
                     "statsmodels": "0.14.1", "doubleml": None},
        "learners": None, "seed": 20240517}
    dataset = {"short": "Project STAR", "long": "Project STAR (Student/Teacher Achievement Ratio) public access data",
               "agency": "the Tennessee State Department of Education", "about": "a class-size experiment in "
               "kindergarten to third grade", "source": "the public STAR student file", "design": "randomized "
               "experiment", "unit": "student", "units": "students", "topic": "star"}
    return {"spec": spec, "literature": literature(), "data_report": data, "results": results,
            "review": _review(True), "dataset": dataset, "provenance": None, "recovery": None,
            "findings": FINDINGS}


def hsls() -> dict:
    """An HSLS-like observational study on generated rows with a planted effect of a ninth-grade program."""
    spec = {
        "task": "causal", "question_id": "program_math",
        "research_question": "Does taking part in the ninth-grade mathematics program raise the eleventh-grade "
                             "mathematics score?",
        "population": "Ninth graders of 2009 in the generated stand-in",
        "outcome": {"name": "X2TXMTSCOR", "label": "Mathematics score in eleventh grade", "type": "continuous",
                    "wave": "first_follow_up", "sum_of": None},
        "treatment": {"variable": "X1PROGRAM", "label": "Ninth-grade mathematics program", "wave": "base_year",
                      "treated": 1, "control": 0, "treated_label": "program participation",
                      "control_label": "no program", "phrase": "the program", "control_phrase": "no program",
                      "other_levels": [], "phrases": ["the program", "program"]},
        "design": {"kind": "observational", "unit": None, "blocks": None, "cluster": None,
                   "statement": "Students chose whether to take part in the program."},
        "estimand": {"name": "ATE", "statement": "the average effect of taking part in the program on the "
                                                 "eleventh-grade mathematics score over all ninth graders"},
        "covariates": [{"name": "X1SES", "label": "Socioeconomic status", "type": "continuous", "wave": "base_year",
                        "rationale": "r"},
                       {"name": "X1TXMTSCOR", "label": "Mathematics score in ninth grade", "type": "continuous",
                        "wave": "base_year", "rationale": "r"}],
        "subgroups": [{"name": "X1SEX", "label": "Sex"}],
        "identification": "Uptake depends on measured base-year covariates.",
        "time_order": [{"check": "covariates before treatment", "ok": True, "detail": "base year"}],
        "published_estimates": [], "literature_keys": ["chernozhukov2018double"], "round": 1}
    data = {"task": "causal", "n_rows": 2000, "n_treated": 640, "n_control": 1360, "excluded_levels": {},
            "n_missing_treatment": 0, "outcome_missing": {"treated": 40, "control": 110},
            "features": ["x__X1SES", "x__X1TXMTSCOR", "x__X1TXMTSCOR__missing"],
            "covariates": [{"name": "X1SES", "label": "Socioeconomic status", "type": "continuous",
                            "wave": "base_year", "features": ["x__X1SES"], "pct_missing": 0.0},
                           {"name": "X1TXMTSCOR", "label": "Mathematics score in ninth grade", "type": "continuous",
                            "wave": "base_year", "features": ["x__X1TXMTSCOR", "x__X1TXMTSCOR__missing"],
                            "pct_missing": 4.5}],
            "blocks": None, "cluster": None,
            "subgroups": [{"name": "X1SEX", "label": "Sex", "levels": {"Female": 930, "Male": 920}}]}
    results = {
        "task": "causal", "design": "observational", "estimand": "ATE", "alpha": 0.05, "n_folds": 5, "n_rep": 1,
        "n": {"analysed": 1850, "treated": 600, "control": 1250, "clusters": None, "blocks": None},
        "naive": {"estimator": "difference in means", "estimate": 4.93, "se": 0.52, "ci_low": 3.91, "ci_high": 5.95,
                  "p_value": 0.00001},
        "primary": {"estimator": "the interactive regression model (AIPW) of double machine learning",
                    "library": "doubleml 0.11.4", "estimate": 2.08, "se": 0.47, "ci_low": 1.16, "ci_high": 3.0,
                    "p_value": 0.00001, "standard_errors": "from the influence function of the score"},
        "adjusted": None,
        "balance": {"threshold": 0.1, "rows": [
            {"feature": "x__X1SES", "covariate": "X1SES", "mean_treated": 0.41, "mean_control": -0.19, "smd": 0.62,
             "smd_weighted": 0.03},
            {"feature": "x__X1TXMTSCOR", "covariate": "X1TXMTSCOR", "mean_treated": 53.1, "mean_control": 48.6,
             "smd": 0.45, "smd_weighted": 0.02},
            {"feature": "x__X1TXMTSCOR__missing", "covariate": "X1TXMTSCOR", "mean_treated": 0.04,
             "mean_control": 0.05, "smd": -0.05, "smd_weighted": 0.01}],
            "max_abs_smd": 0.62, "max_abs_smd_weighted": 0.03, "n_above": 2, "n_above_weighted": 0},
        "attrition": {"missing_treated": 40, "missing_control": 110, "rate_treated": 0.0625, "rate_control": 0.0809,
                      "difference": -0.0184, "ci_low": -0.042, "ci_high": 0.0052, "p_value": 0.13,
                      "stayers_max_abs_smd": 0.61},
        "overlap": {"propensity_min": 0.031, "propensity_max": 0.912, "share_below": 0.012, "share_above": 0.0,
                    "bounds": [0.05, 0.95], "trimming_threshold": 0.01, "n_trimmed": 0,
                    "propensity_quantiles": {"treated": [0.11, 0.24, 0.35, 0.47, 0.66],
                                             "control": [0.06, 0.15, 0.24, 0.35, 0.53]}},
        "sensitivity": {"kind": "omitted-variable bounds (DoubleML sensitivity_analysis)", "cf_y": 0.03, "cf_d": 0.03,
                        "rho": 1.0, "theta_lower": 1.51, "theta_upper": 2.65, "ci_lower": 0.73, "ci_upper": 3.42,
                        "rv": 0.112, "rva": 0.061},
        "heterogeneity": {"exploratory": True, "method": "the doubly robust score averaged within each subgroup",
                          "groups": [{"attribute": "X1SEX", "group": "Female", "n": 930, "estimate": 3.05, "se": 0.66,
                                      "ci_low": 1.76, "ci_high": 4.34},
                                     {"attribute": "X1SEX", "group": "Male", "n": 920, "estimate": 1.12, "se": 0.67,
                                      "ci_low": -0.19, "ci_high": 2.43}],
                          "skipped": [{"attribute": "X1SEX", "group": "Missing", "n": 12,
                                       "reason": "fewer than 50 students"}]},
        "versions": {"python": "3.11.7", "numpy": "1.26.4", "pandas": "2.2.1", "scikit-learn": "1.4.1",
                     "statsmodels": "0.14.1", "doubleml": "0.11.4"},
        "learners": {"outcome": "random forest regression (scikit-learn)",
                     "propensity": "logistic regression with L2 penalty (scikit-learn)"}, "seed": 7}
    recovery = {"treatment": "X1PROGRAM", "outcome": "X2TXMTSCOR", "planted_ate": 2.0, "estimate": 2.08,
                "ci_low": 1.16, "ci_high": 3.0, "covered": True, "naive": 4.93, "naive_ci_low": 3.91,
                "naive_ci_high": 5.95, "naive_covered": False,
                "group": {"attribute": "X1SEX", "group": "Female", "planted": 3.0, "estimate": 3.05, "ci_low": 1.76,
                          "ci_high": 4.34, "covered": True}}
    provenance = {"dataset": "hsls09", "data": {"kind": "generated", "citation": None, "n_rows": 2110,
                                                 "sha256": "ab12"},
                  "citation": None, "workflow": {"short": "1a2b3c4", "modified": False},
                  "config_hash": "0f1e2d3c", "config_hash_algorithm": "SHA-256",
                  "software": {"python": "3.11.7", "snakemake": "9.1.0", "pandas": "2.2.1", "xgboost": "3.2.0",
                               "shap": "0.51.0"}}
    dataset = {"short": "HSLS:09", "long": "High School Longitudinal Study of 2009",
               "agency": "the National Center for Education Statistics", "about": "a national survey of ninth graders",
               "source": "the public-use student file of HSLS:09", "design": "longitudinal survey",
               "unit": "student", "units": "students"}
    return {"spec": spec, "literature": literature(), "data_report": data, "results": results,
            "review": _review(False), "dataset": dataset, "provenance": provenance, "recovery": recovery}


def _make_figures(folder: Path, names: tuple[str, ...]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        fig, ax = plt.subplots(figsize=(3.3, 2.0))
        ax.barh(["a", "b"], [0.1, 0.02])
        fig.tight_layout()
        fig.savefig(folder / f"{name}.pdf")
        plt.close(fig)
    return folder


def build(tmp_path: Path, arts: dict, figures: tuple[str, ...] = ()) -> tuple[dict, Path]:
    """Write the artifacts as the job would, build the paper and its sources.json beside it."""
    art_dir = tmp_path / "artifacts"
    art_dir.mkdir(parents=True, exist_ok=True)
    files = {"research_spec.json": arts["spec"], "literature_context.json": arts["literature"],
             "data_report.json": arts["data_report"], "results.json": arts["results"],
             "review_report.json": arts["review"]}
    if arts.get("provenance"):
        files["provenance.json"] = arts["provenance"]
    if arts.get("recovery"):
        files["recovery.json"] = arts["recovery"]
    for name, obj in files.items():
        (art_dir / name).write_text(json.dumps(obj))
    out = tmp_path / "paper"
    summary = build_causal_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"],
                                 arts["review"], figures_dir=_make_figures(tmp_path / "causal", figures),
                                 template=TEMPLATE, out_dir=out, authors="EDM-ARS", dataset=arts["dataset"],
                                 provenance_record=arts.get("provenance"), recovery=arts.get("recovery"),
                                 bib_source=BIB, findings=arts.get("findings"))
    (out / "sources.json").write_text(json.dumps({name: f"../artifacts/{name}" for name in files}))
    return summary, out


def flat(out: Path) -> str:
    return " ".join((out / "paper.tex").read_text().split())


@pytest.fixture(scope="module")
def star_paper(tmp_path_factory):
    return build(tmp_path_factory.mktemp("star"), star(), ("balance",))


@pytest.fixture(scope="module")
def hsls_paper(tmp_path_factory):
    return build(tmp_path_factory.mktemp("hsls"), hsls(), ("balance", "overlap"))


# ---- the two papers -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["star_paper", "hsls_paper"])
def test_every_number_reconciles_and_the_paper_verifies(which, request):
    summary, out = request.getfixturevalue(which)
    report = verify_paper(out / "paper.tex")
    assert report.ok, report.summary()
    assert report.counts["unmatched"] == 0, report.summary()
    assert report.counts["matched"] > 40
    assert summary["raw_numbers"] == {}
    for name in ("paper.tex", "numbers.tex", "numbers.json", "references.bib"):
        assert (out / name).is_file()
    macros = json.loads((out / "numbers.json").read_text())["macros"]
    assert all(m["source"] for m in macros)


def _slot(text: str, name: str) -> str:
    return text.split(f"%%BEGIN:{name}%%", 1)[1].split(f"%%END:{name}%%", 1)[0]


def test_the_randomized_paper_states_its_design_and_estimates(star_paper):
    summary, out = star_paper
    text = flat(out)
    numbers = {m["macro"]: m for m in json.loads((out / "numbers.json").read_text())["macros"]}
    # the title names the treatment by its phrase, the outcome by its label, and the design's evidence
    assert ("The Effect of a Small Class on the Total Scaled Score in Kindergarten: Evidence from the Project STAR "
            "Experiment") in _slot(text, "TITLE")
    # the estimate with its interval, in the abstract and the table, through macros; the treatment by its phrase
    assert numbers["\\PrimaryEst"]["value"] == "13.87" and numbers["\\PrimaryEst"]["source"] == \
        "results.json:primary.estimate"
    assert "The estimated effect of a small class rather than a regular class on the total scaled score in " \
           "kindergarten is \\PrimaryEst{} (95\\% CI [\\PrimaryLo{}, \\PrimaryHi{}])." in text
    assert "The interval excludes zero: under random assignment" in text
    # a p-value under 0.001 reads 'p < 0.001', never 'p = <0.001'
    assert "\\PrimaryEst{} (95\\% CI [\\PrimaryLo{}, \\PrimaryHi{}]), $p$ \\PrimaryP{}." in text
    assert numbers["\\PrimaryP"]["value"] == "$<0.001$" and "p = $<$" not in text
    assert "blocks defined by \\texttt{schoolidk} (\\DataBlocksN{} blocks)" in text
    assert "cluster-robust at \\texttt{schoolidk} (\\DataClusterN{} clusters)" in text
    # the data section: the rows of the data, then the frame's arms (n_treated + n_control, not n_rows)
    assert numbers["\\DataNRows"]["value"] == "4{,}000" and numbers["\\DataNTreated"]["value"] == "1{,}900"
    assert ("The data hold \\DataNRows{} rows. The analytic frame keeps \\DataNTreated{} students assigned to a "
            "small class (the treated arm) and \\DataNControl{} students assigned to a regular class (the comparison "
            "arm).") in text
    assert "frame holds \\DataNRows" not in text
    assert ("Left out are the \\ExcludedRegularAide{} students in the level regular+aide of class type in "
            "kindergarten, which is neither arm.") in text
    assert "Another \\DataNMissingTreatment{} rows had no recorded value of class type in kindergarten" in text
    assert ("The outcome is missing for \\OutcomeMissingTreated{} of the students assigned to a small class and "
            "\\OutcomeMissingControl{} of those assigned to a regular class.") in text
    # the design states the assignment once, then the identification argument without it
    methods = _slot(text, "METHODS")
    assert methods.count("assigned at random to class types within each school") == 1
    assert "Random assignment within schools makes the arms comparable." in methods
    # table of estimates with naive, primary and the adjusted check; balance table and figure; attrition
    assert "Naive difference in means &" in text and "Covariate-adjusted check &" in text
    assert "\\label{tab:balance}" in text and "figures/balance.pdf" in text and (out / "figures/balance.pdf").is_file()
    assert "Free lunch in kindergarten: missing &" in text and "Gender: female &" in text
    assert "Its interval includes zero: the data do not show an unequal loss by arm." in text
    assert "exploratory" in text and "\\label{tab:heterogeneity}" in text
    # the skipped groups in one sentence, by rule, not one reason each
    assert "analysed students in an arm have no estimate: Gender other and unknown." in text
    # no observational parts
    assert "propensity" not in text.lower() and "RVa" not in text
    # related work: the confirmed finding restated with its key; a claim with a number or with causal wording that
    # does not name the treatment is not; no list of titles; the published estimates' source once
    related = _slot(text, "RELATED_WORK")
    assert "\\citet{finn1990answers} analysed Project STAR and reported that students in small classes scored " \
           "higher in the early grades." in related
    assert "4 points" not in text and "Free lunch status affects" not in text
    assert "mosteller1995tennessee" in related  # a study of the data set (its topic)
    assert " wrote " not in text and "lundberg2017unified" not in text and "Unified Approach" not in text
    assert "\\citet{krueger1999experimental} reported an estimate of the effect of a small class" in related
    assert "\\citep{krueger1999experimental,krueger1999experimental" not in text
    # the published estimate: its key from the curated bibliography, a table, agreement judged against our interval
    assert "krueger1999experimental" in summary["cited_keys"]
    assert "@article{krueger1999experimental" in (out / "references.bib").read_text()
    discussion = _slot(text, "DISCUSSION")
    assert "\\label{tab:published}" in discussion
    assert ("\\citet{krueger1999experimental} & Table \\TextNumThree{} & OLS with school effects & "
            "\\PublishedZeroEstimate{} (\\PublishedZeroSe{}) & no \\\\") in discussion
    assert "Our primary estimate, \\PrimaryEst{} (95\\% CI [\\PrimaryLo{}, \\PrimaryHi{}]), does not agree with it" \
        in discussion
    assert discussion.count("\\PrimaryEst{}") == 1
    assert ("What differs: the published model kept the \\texttt{regular+aide} level of class type in kindergarten, "
            "which our comparison leaves out; the published estimate is on \\texttt{pctk}, not on "
            "\\texttt{totalk}") in discussion
    # versions (no provenance record: in the Estimation section) and the review's checklist, one sentence per item
    assert "statsmodels \\VersionStatsmodels{}" in text
    assert ("Attrition by arm: passed; the arms' shares with a missing outcome differ by \\AttritionDifferencePoints{} "
            "percentage points.") in text
    assert "Attrition rates are reported by arm" not in text and "All 3 covariates" not in text
    assert "No post-treatment adjustment: passed; the \\NCovariates{} covariates are measured before the treatment." \
        in text
    # no frame column names anywhere
    assert "x__" not in text and "x\\_\\_" not in text
    assert "\\unverifiedbox" not in text.split("\\maketitle", 1)[1]
    # the conclusion says what the checks found
    assert ("The largest absolute SMD of the covariates is \\BalanceMaxAbsSmd{}, and no feature column exceeds "
            "\\BalanceThreshold{}.") in text
    assert "an interval that includes zero." in text and "qualify how far" not in text
    assert "\\section{Conclusion}" in text
    assert summary["tables"] == 4 and summary["figures"] == 1


def test_the_observational_paper_states_assumptions_overlap_sensitivity_and_recovery(hsls_paper):
    summary, out = hsls_paper
    text = flat(out)
    for assumption in ("conditional exchangeability", "positivity", "consistency", "no interference"):
        assert assumption in text
    assert "stated here as assumptions" in text
    assert "Socioeconomic status (\\texttt{X1SES}, base\\_year wave)" in text
    assert "every covariate measured before the treatment" in text
    assert "cross-fitting with \\NFolds{} folds, repeated \\NRep{} times" in text
    assert "random forest regression (scikit-learn)" in text
    assert "figures/overlap.pdf" in text and (out / "figures/overlap.pdf").is_file()
    assert "lie between \\OverlapPropensityMin{} and \\OverlapPropensityMax{}" in text
    assert "RV = \\SensitivityRv{}" in text and "RVa = \\SensitivityRva{}" in text
    assert "After weighting it is \\BalanceMaxAbsSmdWeighted{}" in text
    # generated data: said in the abstract and in the data section; the planted effect recovered, naive biased
    abstract = text.split("\\begin{abstract}", 1)[1].split("\\end{abstract}", 1)[0]
    assert "On these generated data, with a planted average effect of the program of \\RecoveryPlantedAte{}" in abstract
    assert "covers the planted value, and the interval of the naive difference in means" in abstract
    assert "does not cover it." in abstract
    assert "The rows are generated data" in text
    assert "\\section{Conclusion}" in text and "\\subsection{Validation against known truth}" in text
    assert "its interval does not cover the planted value, as expected when uptake depends on the covariates" in text
    assert "For the group Female of Sex, the planted effect of the program is \\RecoveryGroupPlanted{}" in text
    assert "\\textbf{Untestable exchangeability.}" in text
    # no published estimates: no comparison section; the review did not pass: the UNVERIFIED block
    assert "Comparison with published estimates" not in text
    assert summary["unverified"] and "\\unverifiedbox{\\textbf{Unverified draft.}" in text
    assert "Attrition by arm: failed (major);" in text
    assert "Data and Code Availability" in text
    # the title of a generated stand-in; the DML papers cited where the estimator is named
    assert "The Effect of the Program on the Mathematics Score in Eleventh Grade: Evidence from Generated Data" \
        in _slot(text, "TITLE")
    assert "fitted with doubleml \\LibraryPrimaryDoubleml{}~\\citep{chernozhukov2018double}." in text
    # the availability statement lists the causal stage's software, not the prediction study's
    availability = _slot(text, "AVAILABILITY")
    assert "NumPy \\VersionNumpy{}" in availability and "DoubleML \\VersionDoubleml{}" in availability
    assert "Snakemake \\VersionSnakemake{}" in availability
    assert "XGBoost" not in text and "SHAP" not in text
    # the conclusion states the sensitivity result
    assert "The robustness value is \\SensitivityRv{}:" in _slot(text, "LIMITATIONS")
    assert "x__" not in text and "x\\_\\_" not in text


def test_an_identification_argument_that_states_the_assumptions_is_printed_once(tmp_path):
    """An observational specification whose argument states the four assumptions itself: no second list of them;
    a wave-prefixed label is printed without its prefix; a p-value of 0.001 or more reads 'p = ...'."""
    arts = hsls()
    arts["spec"]["identification"] = ("Students chose whether to take part in the program. Conditional "
                                      "exchangeability: given x1 Socioeconomic status, uptake is unrelated to the "
                                      "potential outcomes. Positivity holds. Consistency and no interference: "
                                      "the program is the same for all.")
    arts["spec"]["covariates"][0]["label"] = "X1 Socioeconomic status"
    _, out = build(tmp_path, arts)
    methods = _slot(flat(out), "METHODS")
    assert "stated here as assumptions" not in methods
    assert methods.count("Students chose whether to take part in the program.") == 1
    assert "given socioeconomic status, uptake is unrelated" in methods and "x1 " not in methods
    assert "$p$ = \\AttritionP{}" in flat(out)
    assert verify_paper(out / "paper.tex").ok


def test_a_method_paper_from_the_bibliography_is_cited_for_its_curated_role(tmp_path):
    """A specification key retrieval did not return (chernozhukov2022long) comes from references.bib with its
    topics from topics.yaml beside it, so the sensitivity analysis cites it."""
    arts = hsls()
    arts["spec"]["literature_keys"] = ["chernozhukov2018double", "chernozhukov2022long"]
    summary, out = build(tmp_path, arts)
    text = flat(out)
    assert "chernozhukov2022long" in summary["cited_keys"]
    assert "(DoubleML sensitivity\\_analysis)~\\citep{chernozhukov2022long}" in _slot(text, "RESULTS")
    assert verify_paper(out / "paper.tex").ok


def test_findings_without_a_claim_or_key_are_refused(tmp_path):
    arts = star()
    arts["findings"] = [{"id": "f", "claim": "", "cite": "finn1990answers"}]
    with pytest.raises(EdmArsError, match=r"findings\[0\]"):
        build(tmp_path, arts)


def test_a_changed_artifact_fails_verification(tmp_path):
    """The paper is checked against the artifacts: a number changed after writing is unmatched."""
    _, out = build(tmp_path, star())
    results = json.loads((tmp_path / "artifacts" / "results.json").read_text())
    results["primary"]["estimate"] = 12.0
    (tmp_path / "artifacts" / "results.json").write_text(json.dumps(results))
    report = verify_paper(out / "paper.tex")
    assert not report.ok and any("PrimaryEst" in f for f in report.failures), report.summary()


def test_an_interval_covering_zero_is_read_as_no_evidence_of_an_effect(tmp_path):
    arts = star()
    arts["results"]["primary"].update(estimate=1.2, ci_low=-3.5, ci_high=5.9, p_value=0.6)
    _, out = build(tmp_path, arts)
    text = flat(out)
    assert "The interval includes zero: under random assignment, these data do not rule out that the average " \
           "effect of a small class on the total scaled score in kindergarten is zero." in text
    assert "agrees with it: it lies inside our interval" in text
    assert verify_paper(out / "paper.tex").ok


def test_a_study_that_lost_no_one_says_so_instead_of_printing_zeros(tmp_path):
    arts = hsls()
    arts["data_report"].update(n_missing_treatment=0, outcome_missing={"treated": 0, "control": 0})
    arts["results"]["attrition"].update(missing_treated=0, missing_control=0, rate_treated=0.0, rate_control=0.0,
                                        difference=0.0, ci_low=0.0, ci_high=0.0, p_value=1.0)
    _, out = build(tmp_path, arts)
    text = flat(out)
    assert "so neither arm lost members" in text and "No outcome is missing." in text
    assert "Another 0 rows" not in text and "missing for 0 of" not in text
    assert "differ by 0.0 percentage points" not in text and "Attrition." not in text
    assert verify_paper(out / "paper.tex").ok


def test_a_checklist_limit_other_than_the_tables_is_named_beside_it(tmp_path):
    """A rubric whose balance limit (config/rubric.yaml causal.smd_threshold) is not the one the balance table counts
    at: the review's sentence names both, through verified macros; with the same limit it names neither."""
    arts = star()
    arts["review"]["checklist"].append({"id": "balance", "label": "Covariate balance", "passed": False,
                                        "severity": "minor", "detail": "largest baseline |SMD| above 0.01"})
    arts["review"]["thresholds"] = {"smd_threshold": 0.01}
    _, out = build(tmp_path / "other", arts)
    text = flat(out)
    assert ("Covariate balance: failed (minor); the largest absolute SMD is \\BalanceMaxAbsSmd{}, against the "
            "checklist's limit of \\ReviewBalanceThreshold{} (the balance table counts an absolute SMD above "
            "\\BalanceThreshold{} as imbalance).") in text
    report = verify_paper(out / "paper.tex")
    assert report.ok and report.counts["unmatched"] == 0, report.summary()
    arts["review"]["thresholds"] = {"smd_threshold": arts["results"]["balance"]["threshold"]}
    _, out = build(tmp_path / "same", arts)
    assert "checklist's limit" not in flat(out) and "ReviewBalanceThreshold" not in (out / "numbers.tex").read_text()


def test_another_confidence_level_is_printed_from_alpha(tmp_path):
    arts = star()
    arts["results"]["alpha"] = 0.1
    _, out = build(tmp_path, arts)
    text = flat(out)
    assert "\\ConfidenceLevel{} CI [\\PrimaryLo{}, \\PrimaryHi{}]" in text and "95\\% CI" not in text
    assert "\\newcommand{\\ConfidenceLevel}{90\\%}" in (out / "numbers.tex").read_text()
    assert verify_paper(out / "paper.tex").ok


def test_bad_input_is_refused_with_the_key(tmp_path):
    arts = star()
    arts["spec"]["treatment"]["phrases"] = []
    with pytest.raises(EdmArsError, match="treatment.phrases"):
        build(tmp_path / "a", arts)
    arts = star()
    del arts["data_report"]["n_missing_treatment"]
    with pytest.raises(EdmArsError, match="n_missing_treatment"):
        build(tmp_path / "b", arts)
    arts = star()
    arts["spec"]["task"] = "prediction"
    with pytest.raises(EdmArsError, match="task"):
        build(tmp_path / "c", arts)


def test_a_paper_from_the_real_estimator_and_critic_verifies(tmp_path):
    """The paper reads what edm_ars.causal.estimate and edm_ars.causal.review write (a small blocked, class-randomised
    experiment with a planted effect of 5): every number reconciles."""
    import numpy as np
    import pandas as pd

    from edm_ars.causal.estimate import estimate
    from edm_ars.causal.review import review_causal

    rng = np.random.default_rng(3)
    school = np.repeat(np.arange(8), 45)
    n = len(school)
    treated = np.zeros(n, int)
    cls = np.empty(n, dtype=object)
    for k in range(8):
        idx = rng.permutation(np.where(school == k)[0])
        treated[idx[:15]] = 1
        cls[idx[:15]], cls[idx[15:30]], cls[idx[30:]] = f"{k}a", f"{k}b", f"{k}c"
    female = rng.random(n) < 0.5
    lunch = rng.random(n) < 0.45
    y = 900 + 5 * treated + rng.normal(0, 4, 8)[school] - 10 * lunch + rng.normal(0, 8, n)
    frame = pd.DataFrame({"unit_id": np.arange(n).astype(str), "treated": treated, "outcome": y,
                          "block": school.astype(str), "cluster": cls.astype(str),
                          "x__gender=female": female.astype(float), "x__gender=male": (~female).astype(float),
                          "x__lunchk": lunch.astype(float), "g__gender": np.where(female, "female", "male")})
    frame.loc[rng.random(n) < 0.08, "outcome"] = np.nan
    arts = star()
    design = {"kind": "randomized", "unit": "student", "blocks": "schoolidk", "cluster": "schoolidk"}
    arts["results"] = json.loads(json.dumps(estimate(frame, design, {"n_folds": 2, "min_group_n": 30}, seed=5)))
    arts["data_report"].update(features=[c for c in frame.columns if c.startswith("x__")],
                               n_rows=n, n_treated=int(treated.sum()), n_control=int(n - treated.sum()))
    arts["review"] = review_causal(arts["spec"], arts["data_report"], arts["results"], round=0, max_revisions=2)
    _, out = build(tmp_path, arts)
    report = verify_paper(out / "paper.tex")
    assert report.ok and report.counts["unmatched"] == 0, report.summary()
    text = flat(out)
    assert "\\PrimaryEst{} (95\\% CI [\\PrimaryLo{}, \\PrimaryHi{}])" in text and "\\label{tab:balance}" in text
    lo, hi = arts["results"]["primary"]["ci_low"], arts["results"]["primary"]["ci_high"]
    assert ("The interval excludes zero" in text) == (not lo <= 0 <= hi)


# ---- the lint's causal wording --------------------------------------------------------------------------------------
SENTENCE = "Assignment to a small class raises the total score, so small classes affect achievement."
OTHER = "Free lunch status affects the total score of the students in the sample."


def _causal(findings):
    return [f for f in findings if f.kind == "causal"]


def test_a_causal_sentence_about_the_treatment_passes_only_in_a_causal_paper():
    assert _causal(lint({"RESULTS": SENTENCE}, treatment_phrases=["small class", "small classes"])) == []
    assert _causal(lint({"RESULTS": SENTENCE}))  # a prediction paper: the same sentence fails
    assert _causal(lint({"RESULTS": SENTENCE.upper().capitalize()}, treatment_phrases=["Small Class"])) == []


def test_a_causal_sentence_about_another_variable_fails_in_a_causal_paper():
    found = _causal(lint({"RESULTS": SENTENCE + " " + OTHER}, treatment_phrases=["small class"]))
    assert len(found) == 1 and "Free lunch" in found[0].message


def test_verify_applies_the_causal_rule_from_the_specification(tmp_path):
    """verify-paper reads research_spec.json: in a causal paper a sentence naming the treatment passes, one about
    another variable fails; with a prediction specification the treatment sentence fails too."""
    _, out = build(tmp_path, star())
    tex = (out / "paper.tex").read_text()
    spiked = tex.replace("%%END:DISCUSSION%%", SENTENCE + "\n%%END:DISCUSSION%%")
    (out / "paper.tex").write_text(spiked)
    assert not [f for f in verify_paper(out / "paper.tex").failures if "causal" in f]
    (out / "paper.tex").write_text(spiked.replace("%%END:DISCUSSION%%", OTHER + "\n%%END:DISCUSSION%%"))
    failures = [f for f in verify_paper(out / "paper.tex").failures if "lint [causal]" in f]
    assert len(failures) == 1 and "Free lunch" in failures[0]
    (out / "paper.tex").write_text(spiked)
    spec = copy.deepcopy(star()["spec"])
    spec["task"] = "prediction"
    (tmp_path / "artifacts" / "research_spec.json").write_text(json.dumps(spec))
    failures = [f for f in verify_paper(out / "paper.tex").failures if "lint [causal]" in f]
    assert failures and "small classes affect" in " ".join(failures)


# ---- compiling --------------------------------------------------------------------------------------------------
@pytest.mark.workflow
@needs_latex
def test_the_observational_paper_compiles(tmp_path):
    from edm_ars.writer import compile_pdf

    _, out = build(tmp_path, hsls(), ("balance", "overlap"))
    pdf = compile_pdf(out / "paper.tex", out / "latexmk.log")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    body = re.sub(r"\s+", " ", text)
    assert "??" not in text
    for name in ("INTRODUCTION", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS", "CONCLUSION", "REFERENCES"):
        assert name in body.upper(), name
    assert "2.08" in body and "Validation against known truth" in body


def test_the_links_to_the_sources_leave_the_verification_unchanged(tmp_path):
    """Issue 38: numbers.tex with every checked number a link, the appendix of sources and trace.json; what
    verify-paper counts is the same before and after."""
    from edm_ars.writer.trace import LINK_MACRO, write_links

    _, out = build(tmp_path, star())
    before = verify_paper(out / "paper.tex").counts
    records = write_links(out, tmp_path)
    after = verify_paper(out / "paper.tex").counts
    assert before == after and after["unmatched"] == 0
    numbers = (out / "numbers.tex").read_text()
    linked = [n for n in records["numbers"] if n["checked"]]
    assert linked and numbers.count(LINK_MACRO + "{src:") == len(linked)
    # a small integer or a year is exempt in verify-paper and is not a link
    for n in records["numbers"]:
        if not n["checked"]:
            assert f"\\newcommand{{{n['macro']}}}{{{LINK_MACRO}" not in numbers
    primary = next(n for n in records["numbers"] if n["source"] == "results.json:primary.estimate")
    assert primary["operands"][0]["pointer"] == "/primary/estimate" and not primary["derived"]
    appendix = (out / "sources.tex").read_text()
    targets = re.findall(r"\\hypertarget\{(src:[0-9a-f]+)\}", appendix)
    assert len(targets) == len(set(targets)) and primary["target"] in targets
    assert "no Snakemake record" in appendix  # the fixture's artifacts were not made by a workflow job
    assert "\\InputIfFileExists{sources.tex}" in (out / "paper.tex").read_text()
