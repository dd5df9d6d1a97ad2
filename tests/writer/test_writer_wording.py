"""Wording from the data, not from one data set: the Writer's sentences that hold for one data set come from
its registry prose (purpose, actors, decision_time, measures, design, collected_for, group phrases), and the
sentences that hold for one task type are chosen by the task."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import test_writer as tw

from edm_ars.data.registry import load_registry
from edm_ars.writer import slot_content

ROOT = Path(__file__).resolve().parents[2]
STAR = load_registry(ROOT / "registry" / "star.yaml")
HSB = load_registry(ROOT / "registry" / "hsb_math.yaml")
# wording written for HSLS:09 that must not reach a paper on other data
HSLS_ONLY = ("postsecondary", "applications are due", "stated plans", "NCES", "National Center",
             "expectations and family background", "counsellor", "college")
PROSE_SECTIONS = ("ABSTRACT", "INTRODUCTION", "RELATED_WORK", "DISCUSSION")


def _hsls_wording(text: str) -> list[str]:
    return [p for p in HSLS_ONLY if re.search(r"\b" + re.escape(p) + r"\b", text, 0 if p.isupper() else re.I)]


def _neutral_spec(binary: bool, question_id: str) -> dict:
    """The fixture specification with its HSLS:09 texts replaced by neutral ones (the data set's prose is
    what the test varies)."""
    sp = tw.spec(binary)
    sp["dataset"], sp["question_id"] = "other", question_id
    sp["research_question"] = "How accurately can the outcome be predicted from earlier records?"
    sp["population"] = "All students with a recorded outcome."
    sp["outcome"]["label"] = "Outcome score" if not binary else "Outcome reached"
    sp["outcome"]["positive_label"] = None
    for p in sp["predictors"]:
        p["rationale"] = "It is recorded before the outcome."
    return sp


def test_the_check_finds_hsls_wording():
    assert _hsls_wording("before applications are due, NCES") == ["applications are due", "NCES"]
    assert _hsls_wording("differences between groups") == []


def _paper(tmp_path: Path, binary: bool, prose: dict, question_id: str = "q", name: str = "p") -> dict[str, str]:
    _, out = tw._build(tmp_path, binary=binary, passed=True, name=name, spec=_neutral_spec(binary, question_id),
                       dataset=prose)
    tex = (out / "paper.tex").read_text()
    return {s: slot_content(tex, s) for s in PROSE_SECTIONS}


def _star_prose(**changes) -> dict:
    prose = copy.deepcopy(STAR.prose)
    prose.update(changes)
    return prose


@pytest.mark.parametrize("binary", [True, False])
def test_no_hsls_wording_in_a_paper_on_other_data(tmp_path, binary):
    sections = _paper(tmp_path, binary, _star_prose())
    for name, text in sections.items():
        assert not _hsls_wording(text), name


def test_the_registry_says_why_the_prediction_matters(tmp_path):
    intro = _paper(tmp_path, False, _star_prose())["INTRODUCTION"]
    use = STAR.prose
    assert f"{use['decision_time'].capitalize()}, {use['actors']} could use such a prediction to " \
           f"{use['purpose']}." in intro
    assert f"they record {' '.join(use['measures'].split())}." in intro
    assert ("The data come from a randomized class-size experiment with longitudinal follow-up, which was carried "
            "out to assess the effect of reducing class size on test scores in the early grades.") in intro


def test_a_question_overrides_the_data_sets_purpose(tmp_path):
    qid = "math_grade3"
    q = STAR.prose["question_prose"][qid]
    intro = _paper(tmp_path, False, _star_prose(), question_id=qid)["INTRODUCTION"]
    assert f"{q['decision_time'].capitalize()}, {STAR.prose['actors']} could use such a prediction to " \
           f"{q['purpose']}." in intro
    assert STAR.prose["purpose"] not in intro


def test_without_registry_prose_the_wording_is_neutral(tmp_path):
    prose = _star_prose(purpose="", actors="", decision_time="", measures="", collected_for="", question_prose={})
    sections = _paper(tmp_path, True, prose)
    intro = sections["INTRODUCTION"]
    assert "could use such a prediction" not in intro and "The data come from a randomized" in intro
    assert "they record many variables on each of the students" in intro
    for name, text in sections.items():
        assert not _hsls_wording(text), name


def test_metric_paragraph_by_task(tmp_path):
    lit = tw.literature()
    lit["papers"].append(tw._paper("fawcett2006introduction", "An Introduction to ROC Analysis", ["Tom Fawcett"],
                                   2006, "Pattern Recognition Letters", ["roc", "metrics"]))
    lit["papers"].append(tw._paper("yu2020veridical", "Veridical Data Science", ["Bin Yu", "Karl Kumbier"], 2020,
                                   "PNAS", ["stability"]))
    related = {}
    for binary in (True, False):
        _, out = tw._build(tmp_path, binary=binary, passed=True, name=f"m{binary}", literature=lit,
                           spec=_neutral_spec(binary, "q"), dataset=_star_prose())
        related[binary] = slot_content((out / "paper.tex").read_text(), "RELATED_WORK")
    assert "ROC curve" in related[True] and "binary outcomes" in related[True]
    assert "ROC" not in related[False] and "binary outcomes" not in related[False]
    evaluation = related[False].split("\\paragraph{Evaluation and reproducibility}")[1].split("\n\n")[0]
    assert "root mean squared error" in evaluation and "fawcett2006introduction" not in evaluation


def test_cross_section_practice_does_not_flag_in_advance(tmp_path):
    prose = copy.deepcopy(HSB.prose)
    sp = _neutral_spec(False, "q")
    for p in sp["predictors"]:
        p["wave"] = None
    sp["outcome"]["wave"] = None
    _, out = tw._build(tmp_path, binary=False, passed=True, name="hsb", spec=sp, dataset=prose)
    tex = (out / "paper.tex").read_text()
    intro = slot_content(tex, "INTRODUCTION")
    assert "Researchers and school systems could use such a prediction to see how much" in intro
    assert "only informative if its accuracy is estimated on students the model has not seen" in intro
    assert "The data come from a cross-sectional multilevel study" in intro


def test_family_wording_only_from_the_registry_groups(tmp_path):
    """The leading features are described by what the registry says of their groups; a data set without a
    family group never reads of expectations and family background."""
    sections = _paper(tmp_path, True, _star_prose())
    disc = sections["DISCUSSION"]
    assert "expectations" not in disc.lower() and "family background" not in disc.lower()
    assert "The features most predictive of the outcome" in disc
