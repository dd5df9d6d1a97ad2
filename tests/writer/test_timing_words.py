"""Timing words in the paper follow the registry's one rule (registry.timing_class): a predictor is called early
only when it is in the first wave or two or more waves before the outcome, prior/earlier only when its wave
precedes the outcome's, and no timing word is used for one cross-section or a wave the paper does not know.
Table 1 prints each wave's label, never its key; the data set's name never doubles its article."""

from __future__ import annotations

from pathlib import Path

import pytest

from edm_ars.data.registry import load_registry
from edm_ars.writer import narrative
from edm_ars.writer.common import timing, timing_adjective
from edm_ars.writer.context import Citations, Ctx
from edm_ars.writer.macros import MacroTable
from edm_ars.writer.methods_data import predictor_table
from edm_ars.writer.phrases import Phrases

ROOT = Path(__file__).resolve().parents[2]
HSLS = load_registry(ROOT / "registry" / "hsls09")
PHRASES = Phrases.load(ROOT / "config" / "prompts" / "phrases.yaml")


def ctx_for(predictors: list[str], outcome: str, top: list[str], dataset: dict | None = None) -> Ctx:
    spec = {"outcome": {"name": outcome, "label": outcome, "wave": HSLS.variable(outcome)["wave"]},
            "predictors": [{"name": p, "label": HSLS.variable(p)["label"], "wave": HSLS.variable(p)["wave"],
                            "rationale": "r"} for p in predictors],
            "task": "binary_classification", "backend": "offline"}
    results = {"task": "binary_classification", "models": {}, "best_model": "x",
               "top_features": [{"feature": f, "mean_abs_shap": 0.1} for f in top]}
    return Ctx(spec=spec, lit={}, data={"feature_sources": {}}, results=results, review={}, m=MacroTable(),
               cites=Citations([]), registry_labels={}, ph=PHRASES,
               claims={"meets_quality_floor": "supported"},
               registry_groups={n: r["group"] for n, r in HSLS.tier1.items() if r.get("group")},
               dataset=HSLS.prose if dataset is None else dataset)


BASE = ["X1TXMTSCOR", "X1SES", "X1STUEDEXPCT"]


def test_well_before_only_when_every_indicator_is_early():
    """The defect of issue 18: 'observed well before the outcome' of a transcript (2013) predictor of a 2016
    outcome (the wave just before it). Planted: a late predictor among the top features."""
    early = narrative.meaning(ctx_for(BASE + ["X3TGPAACAD"], "X4EVRATNDCLG", BASE))
    assert "well before the outcome" in early
    late = narrative.meaning(ctx_for(BASE + ["X3TGPAACAD"], "X4EVRATNDCLG", ["X3TGPAACAD"] + BASE))
    assert "well before" not in late and "in the wave just before it" in late
    # two waves before the outcome is early; the first wave is early even just before the outcome
    assert "well before" in narrative.meaning(ctx_for(["X2TXMTSCOR", "X1SES"], "X4EVRATNDCLG", ["X2TXMTSCOR"]))
    assert "well before" in narrative.meaning(ctx_for(BASE, "X2TXMTSCOR", BASE))


def test_no_timing_word_without_a_known_wave_or_without_waves():
    unknown = narrative.meaning(ctx_for(BASE, "X4EVRATNDCLG", BASE + ["NOT_A_PREDICTOR"]))
    assert "before the outcome" not in unknown and "cannot say" in unknown
    flat = dict(HSLS.prose, wave_order=[], waves={}, wave_labels={})
    cross = ctx_for(BASE, "X4EVRATNDCLG", BASE, dataset=flat)
    assert timing(cross) is None and timing_adjective(cross) == ""
    assert "one cross-section" in narrative.meaning(cross)
    assert "earlier waves" not in narrative.limits(cross.__class__(**{**cross.__dict__,
                                                                     "outline": {"archetype":
                                                                                 "limits_of_prediction"}}))


@pytest.mark.parametrize("predictors, outcome, word", [
    (BASE, "X2TXMTSCOR", "early "),
    (BASE + ["X3TGPAACAD"], "X4EVRATNDCLG", "earlier "),
])
def test_the_adjective_for_the_study(predictors, outcome, word):
    c = ctx_for(predictors, outcome, BASE)
    assert timing_adjective(c) == word
    motivation = narrative.motivation(c.__class__(**{**c.__dict__, "outline": {"archetype":
                                                                              "limits_of_prediction"}}))
    assert ("what early information" in motivation) == (word == "early ")
    assert ("what earlier information" in motivation) == (word == "earlier ")


def test_table_one_prints_wave_labels_never_keys():
    table = predictor_table(ctx_for(BASE + ["X2TXMTSCOR", "X3TGPAACAD"], "X4EVRATNDCLG", BASE))
    assert "2013 Update and high school transcripts" in table and "9th grade (fall 2009)" in table
    assert "second follow up" not in table and "second_follow_up" not in table and "base year" not in table


def test_the_data_set_name_never_doubles_its_article():
    prose = {"short": "mathplacement data", "long": "the mathplacement data (mathplacement.csv)",
             "wave_order": [], "waves": {}}
    assert ctx_for(BASE, "X4EVRATNDCLG", BASE, dataset=prose).full_name == "mathplacement data (mathplacement.csv)"
    prose = {"short": "HSLS:09", "long": "High School Longitudinal Study of 2009", "wave_order": [], "waves": {}}
    assert ctx_for(BASE, "X4EVRATNDCLG", BASE, dataset=prose).full_name == \
        "High School Longitudinal Study of 2009 (HSLS:09)"
