import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import load_registry
from edm_ars.formulate.spec import choose_question, how_chosen, offline_spec, validate_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def spec(reg):
    return offline_spec(reg, prompt=None, question_id=None, round_=0)


def test_offline_spec_passes_the_gate(reg, spec):
    assert validate_spec(spec, reg) == []
    assert 3 <= len(spec["predictors"]) <= 30
    assert spec["novelty_score"] >= 3


@pytest.mark.parametrize("prompt,question", [
    ("Predict college attendance from 9th-grade indicators", "college_attendance"),
    ("Which early signals predict 11th grade math achievement?", "math_achievement"),
    ("high school dropout risk", "hs_completion"),
    (None, "college_attendance"),
])
def test_prompt_selects_a_supported_question(reg, prompt, question):
    assert choose_question(reg, prompt)["id"] == question


def test_how_the_question_was_chosen_is_said(reg):
    """The console's result line says why a run studies its question (issue 39)."""
    assert how_chosen(reg, "math_achievement", "dropout") == "named by question="
    assert how_chosen(reg, None, "high school dropout risk") == "matched the prompt 'high school dropout risk'"
    assert how_chosen(reg, None, "zebra migration") == ("the registry's default question: the prompt 'zebra "
                                                        "migration' matched no question's keywords")
    assert how_chosen(reg, None, None) == "the registry's default question: no prompt= or question= given"


def test_every_canonical_question_passes_the_gate(reg):
    for q in reg.questions:
        if q.get("task") == "causal":  # the causal study's gate: tests/causal/test_spec.py
            with pytest.raises(EdmArsError, match="causal question"):
                offline_spec(reg, prompt=None, question_id=q["id"], round_=0)
            continue
        spec = offline_spec(reg, prompt=None, question_id=q["id"], round_=0)
        assert validate_spec(spec, reg) == [], q["id"]


def _with_predictors(spec, names):
    s = copy.deepcopy(spec)
    s["predictors"] = [{"name": n, "rationale": "test rationale"} for n in names]
    return s


def test_gate_names_each_violation(reg, spec):
    bad = _with_predictors(spec, ["X1SES", "X4EVRAPPCLG", "X5PS1SEC", "W1STUDENT", "X1SEX_IM", "NOPE123"])
    bad["novelty_score"] = 2
    violations = validate_spec(bad, reg)
    text = "\n".join(violations)
    assert "X4EVRAPPCLG" in text and "same wave" in text
    assert "X5PS1SEC" in text and "later wave" in text
    assert "W1STUDENT" in text and "Tier 3" in text
    assert "X1SEX_IM" in text
    assert "NOPE123" in text
    assert "novelty" in text
    assert "X1SES" not in text.replace("X1SES_", "")


def test_gate_counts_and_outcome(reg, spec):
    assert any("predictors" in v for v in validate_spec(_with_predictors(spec, ["X1SES", "X1TXMTSCOR"]), reg))
    many = [v for v in reg.tier1 if v.startswith("X1") and reg.tier1[v]["role"] == "predictor"][:31]
    assert any("31 predictors" in v for v in validate_spec(_with_predictors(spec, many), reg))
    s = copy.deepcopy(spec)
    s["outcome"]["name"] = "NOT_A_VARIABLE"
    assert any("NOT_A_VARIABLE" in v for v in validate_spec(s, reg))
    assert any("not in the data" in v for v in validate_spec(spec, reg, data_columns={"X1SES"}))


def test_curated_flag_name_is_usable(reg, spec):
    s = _with_predictors(spec, ["X1SES", "X1TXMTSCOR", "X1IEPFLAG"])
    assert validate_spec(s, reg) == []


def test_validate_spec_cli(tmp_path, spec):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(spec))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_with_predictors(spec, ["X1SES", "X1TXMTSCOR", "X4EVRAPPCLG"])))
    cmd = [sys.executable, "-m", "edm_ars.cli", "validate-spec"]
    env_path = {"PYTHONPATH": str(ROOT / "scripts")}
    ok = subprocess.run(cmd + [str(good), "--dataset", "hsls09"], capture_output=True, text=True, cwd=ROOT,
                        env={**_env(), **env_path})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    ko = subprocess.run(cmd + [str(bad), "--dataset", "hsls09"], capture_output=True, text=True, cwd=ROOT,
                        env={**_env(), **env_path})
    assert ko.returncode == 1
    assert "X4EVRAPPCLG" in ko.stdout and "same wave" in ko.stdout


def _env():
    import os

    return dict(os.environ)


# ---- early-warning questions: predictors from the waves the question names only ----------------------------


def test_early_warning_question_gets_only_its_waves_and_the_gate_names_a_late_predictor(reg):
    """math_achievement is marked `early_warning: {waves: [base_year]}`: the offline formulator picks base-year
    predictors only and records the restriction; a planted 2013-wave predictor (valid by time order for a 2016
    outcome, or an 11th-grade one here) is rejected with its name and wave."""
    from edm_ars.data.registry import early_warning_waves, find_question, wave_of

    q = find_question(reg, "math_achievement")
    assert early_warning_waves(q) == ["base_year"]
    spec = offline_spec(reg, prompt=None, question_id="math_achievement", round_=0)
    assert spec["early_warning"] == {"waves": ["base_year"]}
    assert {wave_of(reg, p["name"]) for p in spec["predictors"]} == {"base_year"}
    assert validate_spec(spec, reg) == []
    late = copy.deepcopy(spec)  # the outcome is X2TXMTSCOR (first follow-up): plant a base-year-valid late one
    late["outcome"] = {**late["outcome"], "name": "X3TGPAACAD", "wave": "second_follow_up"}
    late["predictors"].append({"name": "X2MTHEFF", "label": "x", "wave": "first_follow_up", "rationale": "planted"})
    violations = validate_spec(late, reg)
    assert any("X2MTHEFF" in v and "first_follow_up" in v and "early-warning" in v for v in violations), violations
    # the spec's own record restricts as well, without a registry question
    alone = copy.deepcopy(late)
    alone["question_id"] = "model"
    assert any("X2MTHEFF" in v for v in validate_spec(alone, reg))
    del alone["early_warning"]
    assert not any("X2MTHEFF" in v for v in validate_spec(alone, reg))


def test_early_warning_offline_pick_drops_a_planted_late_predictor(tmp_path):
    """A registry question that lists a late predictor under an early-warning mark: validate_registry names it,
    and the offline formulator leaves it out."""
    import yaml

    doc = yaml.safe_load((ROOT / "registry" / "star.yaml").read_text())
    q = doc["questions"][0]
    q["early_warning"] = {"waves": ["kindergarten"]}
    path = tmp_path / "star_ew.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    from edm_ars.data.registry_validation import validate_registry

    star = load_registry(path)
    problems = validate_registry(star)
    assert any("math2" in p and "grade2" in p and "early-warning" in p for p in problems), problems
    spec = offline_spec(star, prompt=None, question_id=q["id"], round_=0)
    assert spec["predictors"] and all(p["wave"] == "kindergarten" for p in spec["predictors"])
    assert "math2" not in {p["name"] for p in spec["predictors"]} and validate_spec(spec, star) == []
    q["early_warning"] = {"waves": ["grade9"]}  # a wave the registry does not have
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert any("early_warning.waves ['grade9']" in p for p in validate_registry(load_registry(path)))


def test_timing_rule():
    """'early': the first wave or two or more waves before the outcome; 'prior': any earlier wave; none for the
    same wave, a later one, an unknown wave; 'early' for a set only when every one is early."""
    from edm_ars.data.registry import common_timing, timing_class

    order = ["base_year", "first_follow_up", "second_follow_up", "update_panel"]
    assert timing_class(order, "base_year", "first_follow_up") == "early"
    assert timing_class(order, "first_follow_up", "update_panel") == "early"
    assert timing_class(order, "second_follow_up", "update_panel") == "prior"
    assert timing_class(order, "update_panel", "update_panel") is None
    assert timing_class(order, "nowhere", "update_panel") is None and timing_class([], "a", "b") is None
    assert common_timing(["early", "early"]) == "early" and common_timing(["early", "prior"]) == "prior"
    assert common_timing(["early", None]) is None and common_timing([]) is None
