"""The school-level structure in the paper (issue 36): Methods, a Results subsection with its table, a Discussion
paragraph that follows the result (context adds to the prediction or not), a Limitations item with few clusters,
every number a macro that verify-paper reconciles; nothing of it without the analysis."""

from __future__ import annotations

import copy
import re

import pytest
import test_writer as tw

from edm_ars.writer.verify import verify_paper


def multilevel(improves: bool, n_clusters: int = 120, few: bool = False) -> dict:
    diff = 0.021 if improves else 0.002
    return {
        "estimator": "binomial random-intercept (logistic) mixed model, maximum likelihood by adaptive Gauss-Hermite quadrature (15 nodes)",
        "library": "statsmodels 0.15.0", "outcome_scale": "latent", "skipped": None,
        "levels": [{
            "unit": "school", "column": "SCH_ID", "n_clusters": n_clusters, "n_rows": 9876,
            "cluster_size": {"mean": 82.3, "min": 3, "max": 240},
            "null_model": {"between_var": 0.412, "within_var": 3.29, "icc": 0.1113, "icc_ci": [0.0871, 0.1392],
                           "ci_method": "a cluster bootstrap of 50 resamples"},
            "predictor_model": {"between_var": 0.152, "within_var": 3.29, "n_predictors": 14},
            "explained": {"within": 0.0, "between": 0.631, "level1_r2": 0.271, "level2_r2": 0.402},
            "context": {"metric": "auc", "without": 0.801, "with": 0.801 + diff, "difference": diff,
                        "ci": [diff - 0.01, diff + 0.01] if not improves else [0.011, 0.031], "better": "higher",
                        "improves": improves, "model": "logistic regression", "n_context_features": 14,
                        "means_from": "the training rows of each school"},
            "few_clusters": few,
            "support": ("With 12 schools the variance between them is estimated from few clusters: it describes "
                        "these schools, not schools in general.") if few else "",
        }],
    }


def _paper(tmp_path, ml: dict | None) -> tuple[str, dict]:
    arts = copy.deepcopy(tw.real_artifacts())
    if ml is not None:
        arts["results"]["multilevel"] = ml
    _, out = tw.build_fixture_paper(tmp_path, arts)
    return (out / "paper.tex").read_text(), arts


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_school_level_structure_is_reported_and_every_number_reconciles(tmp_path):
    tex, arts = _paper(tmp_path, multilevel(improves=True))
    flat = _flat(tex)
    assert "\\subsection{School-level structure}\\label{sec:multilevel-method}" in tex
    assert "\\label{sec:multilevel}" in tex and "\\label{tab:multilevel}" in tex
    assert "on that latent scale" in flat and "adaptive Gauss-Hermite quadrature" in flat
    assert "the school context added to what the measures of the students themselves predict" in flat
    assert "a model that ignores the school leaves part of the structure unused" in flat
    abstract = flat.split("%%BEGIN:ABSTRACT%%")[1].split("%%END:ABSTRACT%%")[0]
    assert ("A share of \\MLSchoolICC{} of the outcome's variance lay between schools, and the school means of the "
            "predictors added to the prediction.") in abstract
    numbers = (tmp_path / "paper" / "numbers.tex").read_text()
    assert re.search(r"\\newcommand\{\\MLSchoolICC\}\{0\.111\} % results.json:multilevel.levels.0.null_model.icc",
                     numbers)
    report = verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts))
    assert report.ok, report.summary()


def test_the_discussion_follows_the_context_result(tmp_path):
    flat = _flat(_paper(tmp_path, multilevel(improves=False))[0])
    assert "an interval that includes no change" in flat
    assert "the differences between schools are largely differences in the students they serve" in flat
    assert "leaves part of the structure unused" not in flat


def test_few_clusters_are_said_to_describe_these_clusters_only(tmp_path):
    flat = _flat(_paper(tmp_path, multilevel(improves=False, n_clusters=12, few=True))[0])
    assert "describes these schools, not schools in general" in flat  # the analysis's own sentence
    assert "they describe these schools and do not support a statement about schools in general" in flat
    assert "The school-level shares rest on" in flat


def test_no_analysis_no_section(tmp_path):
    tex = _paper(tmp_path, None)[0]
    assert "School-level structure" not in tex and "tab:multilevel" not in tex
    skipped = {"estimator": "", "library": "", "outcome_scale": "observed", "levels": [],
               "skipped": "no cluster level is declared in the registry"}
    assert "School-level structure" not in _paper(tmp_path / "skipped", skipped)[0]


def test_a_continuous_outcome_is_described_on_its_observed_scale(tmp_path):
    ml = multilevel(improves=False)
    ml.update(estimator="linear mixed model (random intercept), REML, statsmodels MixedLM", outcome_scale="observed")
    ml["levels"][0]["context"]["model"] = "ridge regression (alpha = 1, standardised predictors), scikit-learn"
    flat = _flat(_paper(tmp_path, ml)[0])
    assert "restricted maximum likelihood (statsmodels MixedLM)" in flat and "(observed scale)" in flat
    assert "an intercept-only model splits the outcome's variance" in flat.lower()
    assert "ridge regression on standardised predictors, the penalty chosen by cross-validation over whole training schools" in flat


def test_a_context_that_could_not_be_tested_is_not_said_to_add_nothing(tmp_path):
    ml = multilevel(improves=False)
    ml["levels"][0]["context"] = {"metric": "auc", "n_context_features": 0,
                                  "skipped": "no predictor varies within the clusters"}
    tex, arts = _paper(tmp_path, ml)
    flat = _flat(tex)
    assert "could not be tested here" in flat
    assert "added nothing measurable" not in flat and "paired cluster-bootstrap interval" not in flat
    assert verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts)).ok


def test_differences_between_schools_are_called_differences_in_students_only_when_the_predictors_explain_most(tmp_path):
    ml = multilevel(improves=False)
    ml["levels"][0]["explained"]["between"] = 0.474  # STAR: less than half
    flat = _flat(_paper(tmp_path, ml)[0])
    assert "largely differences in the students they serve" not in flat
    assert "the predictors account for only \\MLSchoolExplainedBetween{} of that between-school variance" in flat


def test_the_section_is_named_by_the_cluster_unit(tmp_path):
    ml = multilevel(improves=False)
    ml["levels"][0]["unit"] = "class"
    flat = _flat(_paper(tmp_path, ml)[0])
    assert "\\subsection{Class-level structure}\\label{sec:multilevel-method}" in flat
    assert "\\caption{Class-level structure of the outcome" in flat and "School-level" not in flat
    assert "between the \\MLClassClusters{} classes of the training rows" in flat


def test_a_declared_level_that_could_not_be_estimated_is_named_with_its_reason(tmp_path):
    ml = multilevel(improves=False)
    ml["not_estimated"] = [{"unit": "local education authority", "reason": "the split keeps 2410 groups, the level "
                            "has 131 clusters and is not kept together"}]
    tex, arts = _paper(tmp_path, ml)
    flat = _flat(tex)
    assert "could not estimate: the local education authority level (the split keeps" in flat
    assert verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts)).ok


@pytest.mark.workflow
@tw.needs_latex
def test_a_long_cluster_unit_fits_the_column(tmp_path):
    """ScotsSec's 'secondary school' made the table 28pt too wide for its column, and compile_pdf refused the paper."""
    from edm_ars.writer import compile_pdf

    ml = multilevel(improves=False, n_clusters=15, few=True)
    ml["levels"][0]["unit"] = "secondary school"
    ml["levels"][0]["context"]["difference"] = -0.000116
    _paper(tmp_path, ml)
    compile_pdf(tmp_path / "paper" / "paper.tex", tmp_path / "paper" / "latexmk.log")
    assert "Overfull \\hbox" not in (tmp_path / "paper" / "paper.log").read_text(encoding="latin-1")


def test_on_generated_rows_the_discussion_is_a_check_against_the_planted_school_effect(tmp_path):
    arts = copy.deepcopy(tw.real_artifacts())
    arts["results"]["multilevel"] = multilevel(improves=False)
    recovery = {"school": {"planted_between_var": 0.09, "estimated_between_var": 0.063, "scale": "logit",
                           "unit": "school"}}
    _, out = tw.build_fixture_paper(tmp_path, arts, provenance_record={"data": {"kind": "generated"}},
                                    recovery=recovery)
    flat = _flat((out / "paper.tex").read_text())
    assert "the generator planted a school effect with a variance of \\MLPlantedBetweenVar{} beyond the predictors" in flat
    assert "a check of the multilevel analysis rather than a finding about schools" in flat
    assert "largely differences in the students they serve" not in flat


def test_two_levels_are_each_reported_and_said_to_be_modelled_apart(tmp_path):
    ml = multilevel(improves=False)
    second = copy.deepcopy(ml["levels"][0])
    second.update(unit="local education authority", n_clusters=130)
    second["null_model"]["icc"] = 0.0531
    ml["levels"].append(second)
    tex, arts = _paper(tmp_path, ml)
    flat = _flat(tex)
    assert "Each cluster level is modelled on its own" in flat
    assert "lay between the \\MLLocalEducationAuthorityClusters{} local education authorities" in flat
    assert "local education authority & \\MLLocalEducationAuthorityClusters{}" in flat
    assert verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts)).ok
