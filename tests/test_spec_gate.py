import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from edm_ars.formulate import choose_question, offline_spec, validate_spec
from edm_ars.registry import load_registry

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def reg():
    return load_registry(ROOT / "registry" / "hsls09")


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


def test_every_canonical_question_passes_the_gate(reg):
    for q in reg.questions:
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
