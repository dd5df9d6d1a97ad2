"""Every sentence follows the facts of the design (issue 33): a sentence whose truth depends on a count or a
condition of the study (a package export without a package name, a regression, an interval containing 0, fewer
predictors than a "top k", nothing missing, no waves, the registry's unit noun) is chosen by that fact or left out.
Each test builds the paper of the real fixture run changed to have the fact and reads its text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import test_writer as tw

from edm_ars.writer import build_paper, compile_pdf, slot_content
from edm_ars.writer.phrases import LITERATURE_MARK, Phrases, unit_words
from edm_ars.writer.verify import verify_paper


def _paper(tmp_path: Path, arts: dict, *, labels: dict | None = None, dataset: dict | None = None, **kw) -> str:
    """paper.tex of the fixture artifacts `arts` (tw.build_fixture_paper with other labels or registry prose)."""
    figs = tw._real_figures(tmp_path / "round_0", arts["results"])
    out = tmp_path / "paper"
    build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                figures_dir=figs, template=tw.TEMPLATE, out_dir=out, phrases=tw.PHRASES,
                registry_labels=labels or tw.REAL_LABELS, dataset=tw.HSLS_PROSE if dataset is None else dataset, **kw)
    return (out / "paper.tex").read_text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_package_export_without_a_package_name_is_not_called_a_local_file(tmp_path):
    arts = tw.real_artifacts()
    record = {"data": {"kind": "package_export"}, "workflow": {}, "software": {}}
    tex = _flat(_paper(tmp_path, arts, provenance_record=record))
    assert "a local file supplied to the workflow" not in tex
    assert "distributed with a software package" in tex
    local = _flat(_paper(tmp_path / "local", arts, provenance_record={"data": {"kind": "local_file"}}))
    assert "a local file supplied to the workflow" in local  # the sentence a local file keeps


def test_a_regression_paper_names_no_threshold_and_no_roc_reference(tmp_path):
    reg = tw.regression_variant(tw.real_artifacts())
    reg_tex = _flat(_paper(tmp_path / "reg", reg))
    assert "group-specific thresholds" not in reg_tex and "weight a flag deserves" not in reg_tex
    assert "fawcett2006introduction" not in reg_tex  # a ROC analysis is no further work for a regression study
    assert re.search(r"recalibration (within the groups|or additional information)", reg_tex)
    binary_tex = _flat(_paper(tmp_path / "bin", tw.real_artifacts()))
    assert "group-specific thresholds" in binary_tex
    assert "fawcett2006introduction" in binary_tex


# a snake_case word in running text is an internal code (a status, a key), not English
_CODE = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b")
_NOT_PROSE = re.compile(r"\\(?:label|ref|cite[pt]?\*?|texttt|includegraphics|begin|end|input)(?:\[[^\]]*\])*\{[^}]*\}|%.*$", re.M)


def _codes(tex: str) -> list[str]:
    body = "\n".join(slot_content(tex, s) for s in tw.SECTION_SLOTS)
    return sorted(set(_CODE.findall(_NOT_PROSE.sub(" ", body))))


def test_a_split_status_code_never_reaches_the_prose(tmp_path):
    arts = tw.real_artifacts()
    school = arts["data_report"]["split"]["school_reconstruction"]
    school.update(status="degenerate_few_clusters", n_clusters=19)
    arts["data_report"]["split"].update(method="row-level random split", clustered=False)
    tex = _paper(tmp_path, arts)
    assert "degenerate" not in tex
    assert _codes(tex) == []
    methods = _flat(slot_content(tex, "METHODS"))
    assert "too few for a split that keeps each" in methods


def test_an_indicator_attribute_is_not_spliced_in_as_a_noun(tmp_path):
    arts = tw.real_artifacts()
    rec = arts["results"]["fairness"]["attributes"]["X1SEX"]
    rec["label"] = "black"
    for g, name in zip(rec["groups"], ("black", "not black"), strict=True):
        g["group"] = name
    for p in arts["spec"]["predictors"]:
        if p["name"] == "X1SEX":
            p["label"] = "black"
    tex = _flat(_paper(tmp_path, arts, labels={**tw.REAL_LABELS, "X1SEX": "black"}))
    assert not re.search(r"groups (of|such as) (\\emph\{)?black", tex)
    assert "the indicator black" in tex
    plain = _flat(_paper(tmp_path / "plain", tw.real_artifacts()))
    assert "the indicator" not in plain  # sex is a characteristic: its label stays as it is


def _with_mean_error_cis(half_width: float) -> dict:
    reg = tw.regression_variant(tw.real_artifacts())
    for rec in reg["results"]["fairness"]["attributes"].values():
        for g in rec["groups"]:
            if g.get("mean_error") is not None:
                g["cis"] = {"mean_error": [g["mean_error"] - half_width, g["mean_error"] + half_width]}
    return reg


def test_a_mean_error_whose_interval_contains_zero_is_no_under_prediction(tmp_path):
    wide = _flat(slot_content(_paper(tmp_path / "wide", _with_mean_error_cis(0.5)), "RESULTS"))
    assert "under-predicted the outcome for the first group" not in wide
    assert "over-predicted it for the second" not in wide
    assert "intervals of both groups contain zero" in wide
    narrow = _flat(slot_content(_paper(tmp_path / "narrow", _with_mean_error_cis(0.001)), "RESULTS"))
    assert "the model under-predicted the outcome for the first group and over-predicted it for the second" in narrow
    assert "contain zero" not in narrow


def test_nothing_missing_leaves_out_the_imputation_sentences(tmp_path):
    arts = tw.real_artifacts()
    for rec in arts["data_report"]["missingness"].values():
        rec.update(pct_missing=0.0, pct_missing_train=0.0, flagged=False)
    tex = _flat(_paper(tmp_path / "complete", arts))
    assert "alternative imputation of the missing values" not in tex
    assert "when the imputation" not in tex and "perturbations of the imputation" not in tex
    assert "depended on the imputation method" not in tex
    assert "no value was missing, so it changed no value" in tex
    assert "changed little when the training sample or the random seed changed" in tex
    assert "No predictor had a missing value in the analytic sample" in tex
    missing = _flat(_paper(tmp_path / "missing", tw.real_artifacts()))
    assert "alternative imputation of the missing values" in missing
    assert "when the imputation, the training sample or the random seed changed" in missing


def test_no_waves_leave_the_wave_column_out(tmp_path):
    arts = tw.real_artifacts()
    for p in arts["spec"]["predictors"]:
        p["wave"] = None
    arts["spec"]["outcome"]["wave"] = None
    prose = dict(tw.HSLS_PROSE, waves={}, wave_labels={}, wave_order=[])
    tex = _paper(tmp_path / "none", arts, dataset=prose)
    table = tw._float_block(tex, "tab:predictors")
    assert "Wave" not in table and "the wave in which each was measured" not in table
    assert "Variable & Label" in table
    assert "the wave in which each was measured" in tw._float_block(_paper(tmp_path / "waves", tw.real_artifacts()),
                                                                    "tab:predictors")


def test_a_wave_text_that_names_variables_is_not_presented_as_the_predictors(tmp_path):
    prose = dict(tw.HSLS_PROSE)
    prose["waves"] = dict(prose["waves"], base_year="measures taken at entry to high school (school attended and "
                                                    "socio-economic status)")
    tex = _flat(_paper(tmp_path, tw.real_artifacts(), dataset=prose,
                       labels={**tw.REAL_LABELS, "SCHID": "School attended"}))
    assert "school attended" not in tex  # the wave's text is not printed where it would list the predictors
    assert "predictors from the 9th grade (fall 2009) wave, first follow-up (eleventh-grade) wave" in tex


def _three_predictors() -> dict:
    """The fixture run cut to the three leading predictors (every top-five set then holds all of them)."""
    arts = tw.real_artifacts()
    keep = ["X3TGPAACAD", "X1SES", "X2STUEDEXPCT"]
    arts["spec"]["predictors"] = [p for p in arts["spec"]["predictors"] if p["name"] in keep]
    rep = arts["data_report"]
    rep["predictors_before"] = keep
    rep["predictors_after"] = [f for f in rep["predictors_after"] if (rep.get("feature_sources") or {}).get(f, f) in keep]
    res = arts["results"]
    res["top_features"] = [f for f in res["top_features"] if f["feature"] in keep]
    for v in res["shap"]["by_model"].values():
        v["top_features"] = [f for f in v["top_features"] if f["feature"] in keep]
    st = res["stability"]
    st["reference_top"] = [f for f in st["reference_top"] if (f if isinstance(f, str) else f.get("feature")) in keep]
    st["top5_overlap"] = {"mean": 1.0, "sd": 0.0, "min": 1.0, "max": 1.0}
    st["top10_overlap"] = {"mean": 1.0, "sd": 0.0, "min": 1.0, "max": 1.0}
    for run in st["runs"]:
        run["top5_overlap"] = 1.0
    return arts


def test_three_predictors_report_no_top_k_finding_that_holds_by_construction(tmp_path):
    tex = _flat(_paper(tmp_path / "three", _three_predictors()))
    assert "ten most important predictors" not in tex
    assert "all three predictors" in tex
    assert "were among the top five of every one" not in tex and "was among the top five of every one" not in tex
    assert "does not depend on the choice of model family" not in tex
    assert "of the original top-five features" not in tex and "of the top ten" not in tex
    assert "holds by construction and is not reported as a finding" in tex
    assert "complete by construction" in tex
    assert "the conclusions are stable" not in tex
    full = _flat(_paper(tmp_path / "full", tw.real_artifacts()))
    assert "ten most important predictors" in full and "of the original top-five features" in full
    assert "by construction" not in full


def _nothing_missing() -> dict:
    arts = tw.real_artifacts()
    for rec in arts["data_report"]["missingness"].values():
        rec.update(pct_missing=0.0, pct_missing_train=0.0, flagged=False)
    return arts


def _no_waves() -> dict:
    arts = tw.real_artifacts()
    for p in arts["spec"]["predictors"]:
        p["wave"] = None
    arts["spec"]["outcome"]["wave"] = None
    return arts


DESIGNS = {"three_predictors": _three_predictors, "nothing_missing": _nothing_missing, "no_waves": _no_waves,
           "mean_error_cis": lambda: _with_mean_error_cis(0.5)}


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_every_design_paper_passes_verify_paper(tmp_path, design):
    """The papers of these designs keep every integrity rule: each number reconciles with the artifacts."""
    arts = DESIGNS[design]()
    dataset = dict(tw.HSLS_PROSE, waves={}, wave_labels={}, wave_order=[]) if design == "no_waves" else None
    tex = _paper(tmp_path, arts, dataset=dataset)
    report = verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts))
    assert report.ok, report.summary()
    assert _codes(tex) == []


def _in_pupils(value):
    """A registry text, label or artifact text written about pupils instead of students."""
    text = json.dumps(value)
    for a, b in (("students", "pupils"), ("Students", "Pupils"), ("student", "pupil"), ("Student", "Pupil")):
        text = text.replace(a, b)
    return json.loads(text)


def test_the_registry_unit_noun_replaces_students_in_the_fixed_sentences(tmp_path):
    arts = tw.real_artifacts()
    figures = arts["results"]["figures"]  # captions as the analysis writes them ("test students")
    arts = _in_pupils(arts)
    arts["results"]["figures"] = figures
    prose = _in_pupils(dict(tw.HSLS_PROSE, unit="pupil", units="pupils"))
    tex = _paper(tmp_path, arts, dataset=prose, labels=_in_pupils(tw.REAL_LABELS))
    body = " ".join(slot_content(tex, s) for s in tw.SECTION_SLOTS)
    # what the literature found is said of students (phrases marked '= '), everything else of pupils
    table = Phrases.load(tw.PHRASES).table
    before = {_flat(t)[max(0, m.start() - 25):m.start()] for t in table.values() if t.startswith(LITERATURE_MARK)
              for m in re.finditer(r"\b[Ss]tudents?\b", _flat(t))}
    flat_body = _flat(body)
    said = [flat_body[max(0, m.start() - 25):m.start()] for m in re.finditer(r"\b[Ss]tudents?\b", flat_body)]
    assert said and before and set(said) <= before, set(said) - before
    flat = _flat(body)
    assert re.search(r"test set of \\TestN\{\} pupils", flat)
    assert "\\subsection{Data and Pupils}" in flat
    assert "held-out test pupils" in flat  # a figure caption of the analysis
    default = _flat(_paper(tmp_path / "students", tw.real_artifacts()))
    assert re.search(r"test set of \\TestN\{\} students", default) and "pupil" not in default


def test_unit_words_keep_the_article_and_the_capital():
    assert unit_words("A student and a student's Students.", "applicant", "applicants") == \
        "An applicant and an applicant's Applicants."
    assert unit_words("a student, the students", "child", "children") == "a child, the children"
    assert unit_words("a student", "student", "students") == "a student"


@pytest.mark.workflow
@tw.needs_latex
@pytest.mark.parametrize("design", ["no_waves", "three_predictors"])
def test_design_papers_compile(tmp_path, design):
    arts = DESIGNS[design]()
    dataset = dict(tw.HSLS_PROSE, waves={}, wave_labels={}, wave_order=[]) if design == "no_waves" else None
    _paper(tmp_path, arts, dataset=dataset)
    out = tmp_path / "paper"
    pdf = compile_pdf(out / "paper.tex", out / "compile.log")
    assert pdf.exists()


def test_few_predictors_methods_describe_what_the_stability_analysis_compares(tmp_path):
    """With at most five predictors every top five holds all of them: the Methods describe the comparison of their
    order and of the metric, and state no top-five criterion (it cannot fail); with 17 they keep the criterion."""
    three = _flat(slot_content(_paper(tmp_path / "three", _three_predictors()), "METHODS"))
    stab = three[three.index("sec:stability-method"):]
    assert "top-five and top-ten features that each refit recovered" not in stab
    assert "was regarded as stable when the mean top-five overlap" not in stab
    assert "rank correlation between each refit's order of the predictors and the original one" in stab
    assert "since every refit meets it when there are only \\NPredictors{} predictors" in stab
    full = _flat(slot_content(_paper(tmp_path / "full", tw.real_artifacts()), "METHODS"))
    assert "the share of the original top-five and top-ten features that each refit recovered" in full
    assert "was regarded as stable when the mean top-five overlap" in full
    assert "order of the predictors" not in full


def _eight_predictors() -> dict:
    """The fixture run cut to its eight leading predictors (every top ten then holds all of them, a top five not)."""
    arts = tw.real_artifacts()
    keep = [f["feature"] for f in arts["results"]["top_features"][:8]]
    arts["data_report"]["predictors_before"] = keep
    return arts


def test_at_most_ten_predictors_methods_compare_no_top_ten(tmp_path):
    tex = _flat(slot_content(_paper(tmp_path, _eight_predictors()), "METHODS"))
    stab = tex[tex.index("sec:stability-method"):]
    assert "top-ten" not in stab
    assert "the share of the original top-five features that each refit recovered" in stab
    assert "was regarded as stable when the mean top-five overlap" in stab  # a top five can still fail


def _long_format(regression: bool = False) -> tuple[dict, dict]:
    """The fixture run as a long-format study (yearly records of children, tests/writer/test_repeated_records_paper),
    with the fairness figures' captions as the analysis writes them (jobs/analysis/fairness.py)."""
    from test_repeated_records_paper import long_artifacts

    arts, prose = long_artifacts(regression)
    figures = [f for f in arts["results"]["figures"] if f["kind"] != "fairness"]
    figures.append({"path": "figures/fairness/fairness.pdf", "kind": "fairness", "caption": (
        "Held-out AUC of the selected model by student subgroup with 95% cluster bootstrap intervals; the number of "
        "test students beside each group; the dotted line marks the whole test set.")})
    figures.append({"path": "figures/fairness/fairness_calibration.pdf", "kind": "fairness_calibration", "caption": (
        "Calibration of the selected model by student subgroup: the observed proportion of the positive outcome "
        "against the mean predicted probability in bins of the whole test set's predictions (bins with fewer than "
        "ten of a group's students left out); the legend gives each group's number of test students; the dotted "
        "diagonal marks perfect calibration.")})
    arts["results"]["figures"] = figures
    return arts, prose


def test_long_format_fairness_captions_count_records_beside_each_group(tmp_path):
    arts, prose = _long_format()
    tex = _flat(_paper(tmp_path / "long", arts, dataset=prose))
    assert "the number of test records beside each group" in tex
    assert "each group's number of test records" in tex
    assert "fewer than ten of a group's records" in tex
    for wrong in ("test children", "test child", "a group's children", "test students"):
        assert wrong not in tex, wrong
    assert "by child subgroup" in tex  # a subgroup is of children: only the counts are records
    default = _long_format()[0]
    default["data_report"] = tw.real_artifacts()["data_report"]  # one row per student: the captions as written
    tex = _flat(_paper(tmp_path / "rows", default))
    assert "the number of test students beside each group" in tex and "ten of a group's students" in tex


def test_groups_are_groups_of_children_not_of_records(tmp_path):
    """The subgroup audit compares groups of children (a long-format study) or of students (one row each), never
    'groups of records'."""
    arts, prose = _long_format()
    tex = _flat(_paper(tmp_path / "long", arts, dataset=prose))
    assert "group of records" not in tex and "groups of records" not in tex
    assert "for each group of children; they are not estimates of a causal influence" in tex
    assert "reserved for checking performance across groups of children" in tex
    assert "predictive performance across groups of children defined by" in tex
    rows = _flat(_paper(tmp_path / "rows", tw.real_artifacts()))
    assert "for each group of students; they are not estimates of a causal influence" in rows
    assert "predictive performance across groups of students defined by" in rows


def _resampled_groups(arts: dict, n_groups: int) -> dict:
    """The stability runs as a grouped split's bootstrap records them (analysis.stability.resamples_groups)."""
    for r in arts["results"]["stability"]["runs"]:
        if r["kind"] == "bootstrap":
            r["resampled"] = {"by": "groups", "n_groups": n_groups}
    return arts


def test_a_grouped_stability_bootstrap_says_what_it_resampled(tmp_path):
    arts, prose = _long_format()
    raw = _paper(tmp_path / "long", _resampled_groups(arts, 1300), dataset=prose)
    tex, methods = _flat(raw), _flat(slot_content(raw, "METHODS"))
    assert "bootstrap resamples of the training set's children with all their records" in methods
    assert "bootstrap resamples of the training set," not in tex
    clusters = tw.real_artifacts()  # a split by declared school clusters, one row per student
    clusters["data_report"]["split"].update(grouped=True, grouped_by="cluster",
                                            grouping={"unit": "school", "reconstructed": False})
    tex = _flat(_paper(tmp_path / "schools", _resampled_groups(clusters, 755)))
    assert "bootstrap resamples of the training set's schools with all their students" in tex
    rows = _flat(_paper(tmp_path / "rows", tw.real_artifacts()))  # a row bootstrap (the default): as before
    assert "bootstrap resamples of the training set," in rows and "with all their" not in rows


@pytest.mark.parametrize("design", ["long_grouped_bootstrap", "eight_predictors"])
def test_the_new_design_papers_pass_verify_paper(tmp_path, design):
    if design == "eight_predictors":
        arts, prose = _eight_predictors(), None
    else:
        arts, prose = _long_format()
        arts = _resampled_groups(arts, 1300)
    tex = _paper(tmp_path, arts, dataset=prose)
    report = verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts))
    assert report.ok, report.summary()
    assert _codes(tex) == []
