"""Several candidate studies in one run (branches=N): each runs the same rules as a {branch} wildcard, is screened
and reviewed, `select` chooses one by the stated rule, the chosen one is analysed in full, the paper lists the
others, and the findings store makes a second run draft studies it does not hold."""

import json
import subprocess

import pytest
from workflow import jobs_run, snakemake

from edm_ars.formulate.branches import SAME_STUDY, distance

pytestmark = pytest.mark.workflow

# fewer resamples and splits than the small configuration: the test is about the branches, not the analyses
LEAN = """
analysis:
  n_bootstrap: 100
  repeated_splits: 1
codegen:
  n: 1
screening:
  models: [logistic]
"""


def read(path):
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    store = tmp_path_factory.mktemp("store") / "findings.jsonl"
    runs = []
    for name in ("first", "second"):
        workdir = tmp_path_factory.mktemp(name)
        result = snakemake(workdir, overrides=LEAN + f"findings:\n  store: {store}\n",
                           config={"branches": "2"}, timeout=1500)
        assert result.returncode == 0, result.stderr[-5000:]
        runs.append((workdir, result))
    return runs, store


def test_two_branches_are_reviewed_and_the_paper_lists_both(two_runs):
    (workdir, result), _ = two_runs[0]
    out = workdir / "output"
    drafts = read(out / "branches.json")
    assert [d["branch"] for d in drafts["drafts"]] == [1, 2] and drafts["diversity"] > 0
    for b in (1, 2):
        review = read(out / f"branch_{b}" / "round_0" / "review_report.json")
        assert review["verdict"] in ("PASS", "REVISE", "ABORT")
        spec = read(out / f"branch_{b}" / "round_0" / "research_spec.json")
        assert spec["branch"]["branch"] == b and spec["outcome"]["name"] == drafts["drafts"][b - 1]["outcome"]
        # every candidate is screened: the screening family only, no stability or supplementary analysis
        screened = read(out / f"branch_{b}" / "round_0" / "results.json")
        assert set(screened["models"]) == {"logistic"} and screened["screening"]["models"] == ["logistic"]
        assert "stability" not in screened and "supplementary" not in screened
    # the shared data and registry jobs ran once for both branches
    jobs = jobs_run(result)
    assert jobs.count("synthesize") == 1 and jobs.count("registry_tier2") == 1
    assert jobs.count("engineer") == 2 and jobs.count("select") == 1
    selection = read(out / "selection.json")
    chosen = selection["chosen"]
    other = 3 - chosen
    assert {s["branch"] for s in selection["branches"]} == {1, 2}
    assert [s["why_not_chosen"] is None for s in selection["branches"]].count(True) == 1
    assert selection["screening"]["models"] == ["logistic"]
    # the chosen one, and only it, is then analysed in full (round 1 keeps round 0's data and logistic fit)
    assert (out / f"branch_{chosen}" / "round_1" / "review_report.json").exists()
    assert not (out / f"branch_{other}" / "round_1").exists()
    assert jobs.count("critique") == 3 and jobs.count("engineer") == 2
    full = read(out / f"branch_{chosen}" / "round_1" / "results.json")
    assert set(full["models"]) == {"logistic", "xgboost", "stacking"} and "screening" not in full
    assert "stability" in full and "supplementary" in full
    assert not (out / f"branch_{chosen}" / "round_1" / "models" / "logistic.joblib").exists()
    assert "Screened only" in (out / f"branch_{other}" / "revisions.md").read_text()
    tex = (out / "paper" / "paper.tex").read_text()
    assert "\\label{tab:studies}" in tex and "Candidate studies and selection" in tex
    assert "screening analysis" in tex and "analysed in full" in tex
    sources = read(out / "paper" / "sources.json")
    assert f"branch_{chosen}/round_1/results.json" in sources["results.json"]
    assert (out / "paper.pdf").stat().st_size > 10000
    verify = subprocess.run(["edm-ars", "verify-paper", str(out / "paper" / "paper.tex")], capture_output=True,
                            text=True)
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    findings = read(out / "findings.json")
    assert [s["branch"] for s in findings["studies"]] == [1, 2]
    assert sum(s["chosen"] for s in findings["studies"]) == 1
    # the store keeps each study as it finished: the chosen one from its full analysis
    assert {s["branch"]: s["analysis"] for s in findings["studies"]} == {chosen: "full", other: "screening"}


def test_a_second_run_drafts_studies_the_store_does_not_hold(two_runs):
    runs, store = two_runs
    first = read(runs[0][0] / "output" / "branches.json")["drafts"]
    second = read(runs[1][0] / "output" / "branches.json")
    assert all(distance(a, b) >= SAME_STUDY for a in second["drafts"] for b in first)
    assert len(second["earlier_studies"]) == 2
    assert all(d["novelty"]["nearest"] for d in second["drafts"])
    # the second paper reports the first run's studies as this workflow's earlier results
    tex = (runs[1][0] / "output" / "paper" / "paper.tex").read_text()
    assert "Earlier runs of this workflow" in tex
    stored = [json.loads(line) for line in store.read_text().splitlines()]
    assert len(stored) == 4 and len({e["workdir"] for e in stored}) == 2
