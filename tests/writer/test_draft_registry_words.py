"""What the paper says from a registry finished with the fewest edits from `edm-ars init-registry` (issue 33): the
texts the draft leaves '' (measures, purpose, actors, decision_time, predictor rationales) give neutral sentences that
are true of the data, never a claim the registry does not make. Fixture: MASS nlschools (tests/fixtures/csv)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edm_ars.data.engineer import prepare
from edm_ars.data.protocol import Protocol
from edm_ars.data.raw import read_raw
from edm_ars.data.registry import load_registry
from edm_ars.formulate.spec import offline_spec
from edm_ars.writer import narrative
from edm_ars.writer.context import Citations, Ctx
from edm_ars.writer.macros import MacroTable
from edm_ars.writer.methods_data import outcome_text
from edm_ars.writer.phrases import Phrases
from edm_ars.writer.sections.introduction import data_pitfalls
from edm_ars.writer.sections.introduction import write as introduction

ROOT = Path(__file__).resolve().parents[2]
PHRASES = Phrases.load(ROOT / "config" / "prompts" / "phrases.yaml")
FIXTURES = ROOT / "tests" / "fixtures" / "csv"


@pytest.fixture(scope="module")
def minimal():
    """The nlschools registry (only its [DRAFT] texts and the kind edited), its spec and its data report."""
    reg = load_registry(FIXTURES / "nlschools.yaml")
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    report = prepare(read_raw(FIXTURES / "nlschools.csv"), spec, reg, None, Protocol(min_analytic_n=100),
                     describe=False).report
    return reg, spec, report


def ctx_for(spec, report, dataset):
    ctx = Ctx(spec=spec, lit={}, data=report, review={}, m=MacroTable(), cites=Citations([]),
              results={"task": "regression", "models": {}, "thresholds": {}}, registry_labels={}, ph=PHRASES,
              dataset=dataset)
    ctx.n.update({"NPredictors": "3", "NFeatures": "3", "NModels": "6", "TestN": "\\TestN{}"})
    return ctx


def test_no_rationale_no_rationale_sentence(minimal):
    reg, spec, report = minimal
    assert [p["rationale"] for p in spec["predictors"]] == ["", "", ""]
    text = outcome_text(ctx_for(spec, report, reg.prose))
    assert "We used the 3 predictors" in text and "rationale" not in text and "was included because" not in text


def test_the_first_stated_rationale_without_a_claim_about_every_predictor(minimal):
    reg, spec, report = minimal
    preds = [dict(p) for p in spec["predictors"]]
    preds[1]["rationale"] = "Larger classes may leave less time for each pupil."
    some = outcome_text(ctx_for(dict(spec, predictors=preds), report, reg.prose))
    assert "\\texttt{GS} was included because larger classes may leave less time for each pupil." in some
    assert "Each predictor entered the study with a stated rationale" not in some
    every = [dict(p, rationale="It is measured before the test.") for p in spec["predictors"]]
    text = outcome_text(ctx_for(dict(spec, predictors=every), report, reg.prose))
    assert ("Each predictor entered the study with a stated rationale; for example, \\texttt{IQ} was included "
            "because it is measured before the test.") in text


def test_empty_optional_prose_gives_neutral_sentences(minimal):
    """measures '' : the data record many variables on each unit (and their clusters only when there are any);
    purpose '' : the task's sentence; actors and decision_time '' : the cross-section's practice sentence."""
    reg, spec, report = minimal
    prose = reg.prose
    assert [prose[k] for k in ("measures", "purpose", "actors", "decision_time")] == ["", "", "", ""]
    ctx = ctx_for(spec, report, prose)
    assert "they record many variables on each of the students and their classes." in data_pitfalls(ctx)
    unclustered = ctx_for(spec, report, dict(prose, grouping={"unit": "school", "columns": [],
                                                                   "reconstructed": False}))
    assert "they record many variables on each of the students." in data_pitfalls(unclustered)
    assert "could use such a prediction" not in introduction(ctx).split("\n\n")[0]
    assert "Models that relate achievement to students' background and context" in introduction(ctx)
    assert narrative.practice(ctx).startswith("For practice, a model of these cross-sectional data could help schools "
                                              "decide whom to offer support; it cannot flag students in advance")


def test_the_introduction_claims_a_rationale_for_each_predictor_only_when_each_has_one(minimal):
    reg, spec, report = minimal
    claim = "each chosen with a substantive rationale"
    assert claim not in introduction(ctx_for(spec, report, reg.prose))
    assert "We use 3 predictors drawn from the same cross-section as the outcome, and compare models" in introduction(
        ctx_for(spec, report, reg.prose))
    every = [dict(p, rationale="It is measured before the test.") for p in spec["predictors"]]
    assert claim in introduction(ctx_for(dict(spec, predictors=every), report, reg.prose))
