"""The causal question of a registry, its specification, its gate and its analytic frame: inputs to outputs."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from edm_ars.causal.frame import analytic_frame
from edm_ars.causal.spec import causal_spec, find_question, offline_framing, spec_gate, study_task
from edm_ars.core.errors import DataError, SpecError
from edm_ars.data.registry import load_registry
from edm_ars.data.registry_validation import validate_registry

ROOT = Path(__file__).resolve().parents[2]

REGISTRY = {
    "dataset": {
        "name": "toy", "title": "A toy experiment", "id_column": "sid",
        "waves": [{"key": "w0", "order": 0, "label": "entry"}, {"key": "w1", "order": 1, "label": "year one"},
                  {"key": "w2", "order": 2, "label": "year two"}],
        "provenance": {"kind": "local_file", "statement": "Rows of a toy experiment made for a test."},
        "limitations": ["Every study says this.", {"task": "prediction", "text": "Only prediction says this."},
                        {"task": "causal", "text": "Only a causal study says this."}],
    },
    "variables": [
        {"name": "sex", "label": "Sex", "role": "protected", "type": "binary", "wave": "w0",
         "values": {"f": "Female", "m": "Male"}},
        {"name": "prior", "label": "Prior score", "role": "predictor", "type": "continuous", "wave": "w0"},
        {"name": "arm", "label": "Programme arm", "role": "predictor", "type": "categorical", "wave": "w1",
         "values": {"p": "Programme", "c": "Control", "x": "Other programme"}},
        {"name": "mid", "label": "Score in year one", "role": "predictor", "type": "continuous", "wave": "w1"},
        {"name": "late", "label": "Score in year two", "role": "outcome", "type": "continuous", "wave": "w2"},
        {"name": "late_b", "label": "Second score in year two", "role": "outcome", "type": "continuous",
         "wave": "w2"},
        {"name": "school", "label": "School", "role": "id", "type": "categorical", "wave": "w0"},
    ],
    "tier3": {"exact": ["sid", "school"]},
    "questions": [
        {"id": "predict_late", "task": "prediction", "default": True, "question": "How well can late be predicted?",
         "outcome": "late", "predictors": {"prior": "Prior scores predict later ones.",
                                           "mid": "Recent scores predict later ones.",
                                           "sex": "Sex is a background characteristic.",
                                           "arm": "The arm records the programme."}},
        {"id": "programme", "task": "causal", "question": "Does the programme raise year-two scores?",
         "outcome": "total", "derived_outcome": {"name": "total", "label": "Total of the year-two scores",
                                                 "sum_of": ["late", "late_b"]},
         "treatment": {"variable": "arm", "treated": "p", "control": "c", "phrase": "the programme"},
         "design": {"kind": "randomized", "unit": "student", "blocks": "school", "cluster": "school",
                    "statement": "Students were randomly assigned to the programme or the control arm in each school."},
         "covariates": {"sex": "Sex is fixed before assignment.", "prior": "Prior scores precede assignment."},
         "subgroups": ["sex"], "keywords": ["programme", "effect"]},
    ],
}


def _registry(tmp_path: Path, edit=None):
    doc = copy.deepcopy(REGISTRY)
    if edit:
        edit(doc["questions"][1])
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_registry(path)


def test_a_causal_question_is_valid_and_decides_the_task(tmp_path):
    reg = _registry(tmp_path)
    assert validate_registry(reg) == []
    assert study_task(reg, "programme", None) == "causal"
    assert study_task(reg, None, None) == "prediction"  # the default question
    assert study_task(reg, None, "what is the effect of the programme") == "causal"  # the prompt's match
    assert reg.limitations_for("causal") == ["Every study says this.", "Only a causal study says this."]
    assert reg.limitations == ["Every study says this.", "Only prediction says this."]


@pytest.mark.parametrize("edit, words", [
    (lambda q: q["covariates"].update(mid="A year-one score."), ["mid", "after the treatment"]),
    (lambda q: q.update(outcome="prior", derived_outcome=None), ["prior", "before the treatment"]),
    (lambda q: q["treatment"].pop("control"), ["comparison group"]),
    (lambda q: q["treatment"].update(control="p"), ["no comparison group"]),
    (lambda q: q["treatment"].update(control="z"), ["'z'", "not a value of arm"]),
    (lambda q: q["design"].update(kind="quasi"), ["design.kind"]),
    (lambda q: q.update(outcome="mid", derived_outcome=None), ["treatment's wave", "outcome_after_treatment"]),
])
def test_the_registry_refuses_a_question_that_breaks_the_time_order_or_has_no_comparison(tmp_path, edit, words):
    errors = " ".join(validate_registry(_registry(tmp_path, edit)))
    assert "question programme" in errors
    for word in words:
        assert word in errors


def test_a_same_wave_covariate_must_be_declared_measured_before_the_treatment(tmp_path):
    reg = _registry(tmp_path, lambda q: q["covariates"].update(mid="Measured early in year one."))
    assert any("measured after" in e for e in validate_registry(reg))
    reg = _registry(tmp_path, lambda q: (q["covariates"].update(mid="Measured early in year one."),
                                         q.update(measured_before_treatment=["mid"])))
    # a covariate of the treatment's own wave that the registry declares earlier: wave w1 = w1, not after
    assert validate_registry(reg) == [] or all("mid" not in e for e in validate_registry(reg))


def test_the_specification_states_treatment_design_estimand_and_time_order(tmp_path):
    reg = _registry(tmp_path)
    spec = causal_spec(reg, find_question(reg, "programme"), round_=0)
    assert spec["task"] == "causal"
    assert spec["treatment"]["treated_label"] == "Programme" and spec["treatment"]["other_levels"] == ["x"]
    assert "programme" in spec["treatment"]["phrases"]
    assert spec["outcome"]["sum_of"] == ["late", "late_b"] and spec["outcome"]["wave"] == "w2"
    assert all(c["ok"] for c in spec["time_order"]) and len(spec["time_order"]) == 3
    assert "intention-to-treat" in spec["estimand"]["statement"]
    assert spec["limitations"] == ["Every study says this.", "Only a causal study says this."]
    framing = offline_framing(spec, reg.prose)
    assert "the programme" in framing["identification"] and "attrition" in framing["identification"]
    assert spec_gate(spec, {"arm", "late", "late_b", "sex", "prior", "school"}) == []
    assert spec_gate(spec, {"arm", "late", "sex", "prior", "school"}) == ["column late_b is not in the data"]
    with pytest.raises(SpecError):
        causal_spec(reg, find_question(reg, "predict_late"), round_=0)


def _data(n=400, seed=3):
    rng = np.random.default_rng(seed)
    arm = rng.choice(["p", "c", "x"], size=n, p=[0.4, 0.4, 0.2]).astype(object)
    arm[:5] = None
    late = rng.normal(50, 10, n)
    late[10:30] = -9  # a reserve code: missing
    return pd.DataFrame({"sid": np.arange(n), "arm": arm, "sex": rng.choice(["f", "m"], n),
                         "prior": np.where(rng.random(n) < 0.1, np.nan, rng.normal(0, 1, n)),
                         "late": late, "late_b": rng.normal(40, 5, n), "school": rng.integers(1, 9, n).astype(float)})


def test_the_analytic_frame_keeps_the_two_arms_and_counts_what_it_leaves_out(tmp_path):
    doc = copy.deepcopy(REGISTRY)
    doc["dataset"]["sentinels"] = {"numeric": [-9]}
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    reg = load_registry(tmp_path / "toy.yaml")
    spec = causal_spec(reg, find_question(reg, "programme"), round_=0)
    raw = _data()
    frame, report = analytic_frame(raw, spec, reg, "sid")
    kept = raw["arm"].isin(["p", "c"])
    assert len(frame) == int(kept.sum()) == report["n_treated"] + report["n_control"]
    assert report["n_missing_treatment"] == 5
    assert report["excluded_levels"] == {"Other programme": int((raw["arm"] == "x").sum())}
    # the outcome is the sum of its parts, missing where a part is (the reserve code -9)
    expected = (raw.loc[kept, "late"].where(raw.loc[kept, "late"] != -9) + raw.loc[kept, "late_b"]).to_numpy()
    np.testing.assert_allclose(frame["outcome"].to_numpy(), expected)
    assert report["outcome_missing"]["treated"] + report["outcome_missing"]["control"] == int(np.isnan(expected).sum())
    assert set(frame["block"]) <= {str(i) for i in range(1, 9)}  # a school id 3.0 is "3"
    assert "x__prior__missing" in report["features"] and "x__sex__missing" not in report["features"] and not frame["x__prior"].isna().any()
    assert {"x__sex=Female", "x__sex=Male"} <= set(frame.columns)
    assert set(frame["g__sex"]) == {"Female", "Male"}


def test_no_comparison_rows_is_a_clear_error(tmp_path):
    reg = _registry(tmp_path)
    spec = causal_spec(reg, find_question(reg, "programme"), round_=0)
    raw = _data()
    raw["arm"] = raw["arm"].replace({"c": "x"})
    with pytest.raises(DataError, match="0 with the comparison value 'c'"):
        analytic_frame(raw, spec, reg, "sid")


def test_the_shipped_star_question_passes_its_gate():
    reg = load_registry(ROOT / "registry" / "star.yaml")
    spec = causal_spec(reg, find_question(reg, "class_size_k"), round_=0)
    assert spec["design"]["blocks"] == "schoolidk" and spec["treatment"]["other_levels"] == ["regular+aide"]
    assert {"small class", "small classes"} <= set(spec["treatment"]["phrases"])
    assert all(c["ok"] for c in spec["time_order"])


def test_an_edited_specification_is_checked_again_against_the_waves(tmp_path):
    from edm_ars.causal.spec import edited_spec_problems

    reg = _registry(tmp_path)
    spec = causal_spec(reg, find_question(reg, "programme"), round_=0)
    assert edited_spec_problems(spec, reg) == []
    spec["covariates"].append({"name": "mid", "label": "Score in year one", "wave": "w1", "rationale": "edited"})
    assert any("mid" in p and "measured before it" not in p for p in edited_spec_problems(spec, reg))
    spec["covariates"][-1]["name"] = "nonesuch"
    assert edited_spec_problems(spec, reg) == ["covariate nonesuch is not a variable of the registry"]
