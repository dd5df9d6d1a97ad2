"""The causal study end to end: the class-size experiment offline, and the generated data's planted, confounded
tutoring effect with a language model (the real Anthropic SDK against a fake server on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.llm_servers import FakeAnthropic
from fakes.scholar_servers import CROSSREF_WORKS, S2_PAPERS, FakeCrossRef, FakeSemanticScholar
from links import check_numbers_linked
from workflow import jobs_run, snakemake

pytestmark = pytest.mark.workflow
KEY = "sk-ant-test-not-a-real-key-0123456789"


def _read(path: Path):
    return json.loads(path.read_text())


def _checked(out: Path) -> dict:
    verification = _read(out / "paper" / "verification.json")
    counts = verification["counts"]
    assert counts["unmatched"] == 0 and counts["failures"] == 0, verification
    assert counts["checked"] > 40
    return verification


@pytest.fixture(scope="module")
def star_run(tmp_path_factory):
    """The STAR class-size study (real data, a causal paper), run once for this module."""
    workdir = tmp_path_factory.mktemp("star")
    result = snakemake(workdir, "output/paper.pdf", config={"dataset": "star", "question": "class_size_k"})
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir, result


def test_twenty_numbers_of_a_real_data_paper_trace_to_their_artifacts(star_run, capsys, monkeypatch):
    """Issue 38: `edm-ars trace` answers for 20 numbers drawn at random from the paper, each chain checked against
    the artifacts (tests/run/test_trace.py)."""
    import shutil

    from test_trace import _check_sample, _json

    workdir, _ = star_run
    assert _check_sample(workdir, capsys, monkeypatch) >= 10
    # the PDF's sentences lead to the same chains
    if shutil.which("pdftotext"):
        code, answer = _json(capsys, "--page", "1", "--phrase", "students with an observed outcome")
        assert any(r.get("macro") == "\\AnalysedAnalysed" and r["status"] == "traced" for r in answer["results"])


def test_the_class_size_experiment_gives_a_verified_causal_paper(star_run):
    tmp_path, result = star_run
    jobs = jobs_run(result)
    assert {"causal_formulate", "causal_frame", "causal_estimate", "critique", "causal_write"} <= set(jobs)
    assert not {"engineer", "fit_model", "debate"} & set(jobs)  # none of the prediction study's stages
    # the question studied is a result line of the console (issue 39)
    assert "causal_formulate: question: class_size_k (named by question=; causal, randomized design)" \
        in result.stderr.splitlines()
    out = tmp_path / "output"
    r0 = out / "branch_1" / "round_0"
    spec = _read(r0 / "research_spec.json")
    assert spec["task"] == "causal" and spec["design"]["kind"] == "randomized"
    results = _read(r0 / "causal" / "results.json")
    assert results["primary"]["estimator"].startswith("difference in means with block fixed effects")
    assert results["n"]["clusters"] == results["n"]["blocks"] > 70
    # the naive difference of the two arms is the published differences estimate (13.90, SE 2.45) on these data
    assert results["naive"]["estimate"] == pytest.approx(13.90, abs=0.005)
    assert results["versions"]["statsmodels"]
    review = _read(r0 / "review_report.json")
    assert {i["id"] for i in review["checklist"]} >= {"identification", "pre_treatment", "balance", "attrition"}
    _checked(out)
    tex = (out / "paper" / "paper.tex").read_text()
    assert "hanck2023introduction" in tex  # the published estimates, cited
    assert (out / "paper.pdf").stat().st_size > 10_000
    # every checked number is a link to where it comes from (issue 38)
    check_numbers_linked(out / "paper", out / "paper.pdf")

    # the revision loop drives the causal study as it does a prediction study: a review that asks for a new
    # estimation reruns that stage (not the specification or the frame), and the paper is written from round 1
    again = snakemake(tmp_path, "output/paper.pdf", config={"dataset": "star", "question": "class_size_k",
                                                             "force_revise": "analyze"})
    assert again.returncode == 0, again.stderr[-5000:]
    jobs = jobs_run(again)
    assert "causal_estimate" in jobs and "causal_write" in jobs
    assert not {"causal_formulate", "causal_frame"} & set(jobs)
    assert _read(r0 / "review_report.json")["verdict"] == "REVISE"
    assert _read(out / "branch_1" / "round_1" / "review_report.json")["verdict"] != "REVISE"
    sources = _read(out / "paper" / "sources.json")
    assert "round_1" in sources["results.json"] and "round_0" in sources["data_report.json"]


def _framing(request: dict) -> dict | str:
    system = request.get("system") or ""
    system = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    assert "ProblemFormulator" in system, system[:200]
    return {"json": {
        "motivation": ("Schools and families choose math tutoring and study groups in the hope that they raise "
                       "achievement, but the students who take part differ from those who do not, so the plain "
                       "comparison of their later scores mixes the effect with who chose it."),
        "identification": ("The comparison identifies the average effect of math tutoring under conditional "
                           "exchangeability given the family, school and background covariates, positivity for "
                           "every student, and consistency with no interference between students; the first "
                           "assumption cannot be tested, and the sensitivity analysis bounds what a confounder "
                           "left out could change.")}}


def test_the_planted_confounded_effect_is_recovered_with_the_model_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeAnthropic(_framing) as llm, FakeSemanticScholar(S2_PAPERS) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        overrides = (f"literature: {{semantic_scholar_url: '{s2.base_url}', crossref_url: '{cr.base_url}', "
                     "n_min: 5, n_max: 12}\n")
        # the default target: the paper and the run's costs
        result = snakemake(tmp_path, config={"question": "math_tutoring", "backend": "anthropic",
                                             "base_url": llm.url}, overrides=overrides)
        assert result.returncode == 0, result.stderr[-5000:]
        assert llm.count == 1  # the framing of the specification
    out = tmp_path / "output"
    costs = _read(out / "costs.json")
    assert costs["agents"]["formulate"]["calls"] == 1 and costs["total"]["calls"] == 1
    spec = _read(out / "branch_1" / "round_0" / "research_spec.json")
    assert spec["framing_source"] == "model" and "exchangeability" in spec["identification"]
    rec = _read(out / "paper" / "recovery.json")
    # the doubly robust interval covers the planted effect; the naive difference's does not (confounding by SES)
    assert rec["covered"] is True and rec["naive_covered"] is False
    assert rec["naive"] > rec["ci_high"]
    results = _read(out / "branch_1" / "round_0" / "causal" / "results.json")
    assert results["design"] == "observational" and results["versions"]["doubleml"]
    assert results["sensitivity"]["rv"] > 0 and results["overlap"]["n_trimmed"] >= 0
    _checked(out)
    assert (out / "paper.pdf").exists()
