"""Research-agent metrics (edm_ars.run.agent_metrics, `edm-ars metrics`) on a small run directory built by hand, and
on the session's small run."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from edm_ars.cli import main
from edm_ars.run import agent_metrics as am
from edm_ars.run import metrics_text

ROUND_FILES = ["research_spec.json", "data/data_report.json", "results.json", "claims.json",
               *[f"analysis/{n}.json" for n in am.ANALYSIS_FILES]]


def write(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_json(path: Path, data) -> Path:
    return write(path, json.dumps(data))


def job(rule: str, jobid: int, end: str = "Finished") -> str:
    tail = f"Finished jobid: {jobid} (Rule: {rule})" if end == "Finished" else \
        f"Error in rule {rule}:\n    message: None\n    jobid: {jobid}" if end == "Error" else ""
    return f"[Thu Nov 26 12:00:00 2026]\nlocalrule {rule}:\n    output: x\n    jobid: {jobid}\n    reason: y\n{tail}\n"


def metadata(run: Path, output: str, rule: str, start: float, end: float, job_hash: int) -> None:
    name = base64.urlsafe_b64encode(output.encode()).decode()
    write_json(run / ".snakemake" / "metadata" / name,
               {"rule": rule, "starttime": start, "endtime": end, "job_hash": job_hash, "incomplete": False})


def ledger_line(agent: str, status: str = "ok", tag: str = "t", tin: int = 100, tout: int = 10,
                cost: float | None = 0.01) -> str:
    return json.dumps({"agent": agent, "status": status, "tag": tag, "input_tokens": tin, "output_tokens": tout,
                       "cost_usd": cost, "cache_hit": False, "attempt": 1, "retry": False, "repair": False})


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A finished run with two branches: branch 1 revised once (round 1 re-runs analyze), branch 2 one round."""
    run = tmp_path / "run"
    out = run / "output"
    # logs: the first invocation's engineer job fails; the second one finishes it
    write(run / ".snakemake" / "log" / "2026-01-01T000000.1.snakemake.log",
          job("synthesize", 3) + job("dataset", 4) + job("draft_studies", 5) + job("engineer", 6, "Error"))
    write(run / ".snakemake" / "log" / "2026-01-01T000100.1.snakemake.log",
          job("engineer", 1) + job("engineer", 2) + job("formulate", 7) + job("select", 8) + job("write", 9)
          + job("all", 10))
    # metadata: engineer of branch 1 has two outputs (one job); fit_model two jobs
    metadata(run, "output/branch_1/round_0/data/data_report.json", "engineer", 100.0, 110.0, 11)
    metadata(run, "output/branch_1/round_0/data/train_X.parquet", "engineer", 100.2, 110.0, 11)
    metadata(run, "output/branch_1/round_0/models/a.json", "fit_model", 200.0, 203.0, 12)
    metadata(run, "output/branch_1/round_0/models/b.json", "fit_model", 200.0, 204.0, 13)
    metadata(run, "output/selection.json", "select", 300.0, 301.5, 14)
    write(run / "benchmarks" / "branch_1" / "engineer" / "round_0.tsv",
          "s\th:m:s\tmax_rss\tcpu_time\n10.0\t0:00:10\t100\t4.0\n10.0\t0:00:10\t100\t6.0\n")
    write(run / "benchmarks" / "synthesize.tsv", "s\tcpu_time\n2.0\t1.5\n")
    # ledgers: formulate 3 lines (one a timeout, one the gate's revision), critique 1 without a price
    write(out / "ledger" / "draft.jsonl", ledger_line("formulate") + "\n")
    write(out / "branch_1" / "ledger" / "formulate" / "round_0.jsonl",
          ledger_line("formulate", status="timeout", tin=0, tout=0, cost=0.0) + "\n"
          + ledger_line("formulate", tag="revise") + "\n")
    write(out / "branch_1" / "ledger" / "critique" / "round_0.jsonl", ledger_line("critique", cost=None) + "\n")
    write(out / "llm_calls.jsonl", ledger_line("formulate") + "\n")  # the concatenation: not counted again
    # outputs
    for f in ["data/dataset.json", "registry/tier2.json", "selection.json", "paper.pdf", "paper/provenance.json",
              "costs.json", "lessons.json", "findings.json", "branch_1/revisions.md", "branch_2/revisions.md",
              "data/dgp.json"]:
        write(out / f)
    for b, rounds in ((1, 2), (2, 1)):
        for r in range(rounds):
            d = out / f"branch_{b}" / f"round_{r}"
            for f in ROUND_FILES:
                if r == 0 or f not in ("research_spec.json", "data/data_report.json"):
                    write(d / f)
            write_json(d / "analysis" / "supplementary_plan.json", {"analyses": [{"name": "x"}]})
            write(d / "supplementary" / "slot_1.json")
            write_json(d / "supplementary" / "slot_1" / "x" / "attempt_1" / "outcome.json",
                       {"status": "ok" if b == 1 else "failed"})
            verdict = "REVISE" if (b, r) == (1, 0) else "PASS"
            write_json(d / "review_report.json", {"verdict": verdict, "rerun_from": "analyze" if verdict == "REVISE"
                                                  else None})
    write_json(out / "branches.json", {"drafts": [{"branch": 1}, {"branch": 2}], "diversity": 0.6})
    write_json(out / "selection.json", {"chosen": 2, "branches": [
        {"branch": 1, "primary": {"metric": "auc", "model": "xgboost", "value": 0.7, "ci": [0.6, 0.8]},
         "verdict": "PASS"},
        {"branch": 2, "primary": {"metric": "r2", "model": "logistic", "value": 0.45, "ci": [0.4, 0.5]},
         "verdict": "PASS"}]})
    write_json(out / "paper" / "recovery.json", {
        "predictors": {"n_planted_strong": 5, "n_recovered": 4, "top_k": 5, "share_recovered": 0.8},
        "group": {"attribute": "X1RACE", "group": "Black", "planted": True, "recovered": True}})
    return run


def test_success_rate_counts_finished_over_attempts(run):
    s = am.collect(run)["stages"]
    assert s["engineer"]["jobs"] == {"finished": 2, "failed": 1, "interrupted": 0}
    assert s["engineer"]["success_rate"] == pytest.approx(2 / 3)  # the failed attempt lowers it
    assert s["data"]["success_rate"] == 1.0 and s["data"]["jobs"]["finished"] == 2
    assert s["formulate"]["jobs"]["finished"] == 2  # draft_studies and formulate
    assert s["debate"]["success_rate"] is None  # no job recorded: no rate, not 100%
    assert "other" not in s  # the target rule `all` does no work


def test_interrupted_job_is_not_in_the_rate(run):
    write(run / ".snakemake" / "log" / "2026-01-01T000200.1.snakemake.log", job("select", 1, end=""))
    s = am.collect(run)["stages"]["select"]
    assert s["jobs"] == {"finished": 1, "failed": 0, "interrupted": 1}
    assert s["success_rate"] == 1.0


def test_inner_attempts(run):
    s = am.collect(run)["stages"]
    assert s["formulate"]["model_calls"] == {"ok": 2, "total": 3}
    assert s["formulate"]["spec_gate_revisions"] == 1
    assert s["critique"]["model_calls"] == {"ok": 1, "total": 1}
    assert s["analyze"]["supplementary_first_attempt"] == {"ok": 2, "total": 3}


def test_completion_follows_the_rounds_and_a_missing_output_lowers_it(run):
    m = am.collect(run)
    s = m["stages"]
    # branch 1: round 0 and round 1 (which re-ran analyze only); branch 2: round 0
    assert s["formulate"]["expected"] == 1 + 2  # branches.json, one spec per branch
    assert s["engineer"]["expected"] == 2
    assert s["analyze"]["expected"] == 3 * (1 + len(am.ANALYSIS_FILES) + 1)
    assert s["critique"]["expected"] == 3 and s["debate"]["expected"] == 3
    assert s["write"]["expected"] == 3  # paper, provenance, recovery (generated data)
    assert all(st["completion_rate"] == 1.0 for name, st in s.items() if name != "gates"), \
        {n: st["missing"] for n, st in s.items()}
    (run / "output" / "branch_1" / "round_1" / "claims.json").unlink()
    s = am.collect(run)["stages"]["debate"]
    assert s["completion_rate"] == pytest.approx(2 / 3)
    assert s["missing"] == ["output/branch_1/round_1/claims.json"]


def test_a_run_of_the_paper_target_is_complete(run):
    """Issue 39: output/paper.pdf as the target makes the paper, the costs and the revision histories, not the
    default target's lessons.json and findings.json: the run stage is complete, not 0."""
    out = run / "output"
    for f in ("lessons.json", "findings.json"):
        (out / f).unlink()
    s = am.collect(run)["stages"]["run"]
    assert (s["expected"], s["done"], s["completion_rate"], s["missing"]) == (3, 3, 1.0, [])
    (out / "findings.json").write_text("{}")  # the default target was run, and stopped before its lessons
    s = am.collect(run)["stages"]["run"]
    assert s["missing"] == ["output/lessons.json"] and s["completion_rate"] == pytest.approx(4 / 5)
    (out / "findings.json").unlink()
    (out / "costs.json").unlink()  # a paper without its costs (a run made before they were inputs of the paper)
    s = am.collect(run)["stages"]["run"]
    assert s["missing"] == ["output/costs.json"] and s["completion_rate"] == pytest.approx(2 / 3)
    (out / "paper.pdf").unlink()  # no paper: the run is unfinished, and the default target's records are expected
    s = am.collect(run)["stages"]["run"]
    assert s["missing"] == ["output/costs.json", "output/lessons.json", "output/findings.json"]
    assert am.collect(run)["stages"]["write"]["missing"] == ["output/paper.pdf"]


def test_a_pending_review_keeps_its_round_expected(run):
    (run / "output" / "branch_1" / "round_1" / "review_report.json").write_text(
        json.dumps({"verdict": "REVISE", "rerun_from": "engineer"}))
    s = am.collect(run)["stages"]
    assert "output/branch_1/round_2/data/data_report.json" in s["engineer"]["missing"]
    assert "output/branch_1/round_2/research_spec.json" not in s["formulate"]["missing"]
    assert s["critique"]["missing"] == ["output/branch_1/round_2/review_report.json"]


def test_cost_per_stage(run):
    s = am.collect(run)["stages"]
    f = s["formulate"]["cost"]
    assert (f["calls"], f["input_tokens"], f["output_tokens"]) == (2, 200, 20)
    assert f["cost_usd"] == pytest.approx(0.02)
    assert s["critique"]["cost"]["cost_usd"] is None  # a model without a price: no partial sum
    e = s["engineer"]["cost"]
    assert e["wall_jobs"] == 1 and e["wall_s"] == pytest.approx(10.0)  # two outputs, one job
    assert e["cpu_s"] == pytest.approx(5.0) and e["cpu_jobs"] == 1  # mean of the benchmark's repeats
    a = s["analyze"]["cost"]
    assert a["wall_jobs"] == 2 and a["wall_s"] == pytest.approx(7.0)
    assert a["cpu_s"] is None  # no benchmark: n/a
    assert s["data"]["cost"]["cpu_s"] == pytest.approx(1.5)


def test_diversity_utility_validity(run):
    m = am.collect(run)
    assert m["diversity"] == {"value": 0.6, "n_branches": 2, "source": "output/branches.json"}
    u = m["utility"]
    assert (u["branch"], u["metric"], u["value"], u["ci"]) == (2, "r2", 0.45, [0.4, 0.5])
    v = m["validity"]
    assert v["applicable"] and (v["predictors_recovered"], v["predictors_planted"]) == (4, 5)
    assert v["disparity_recovered"] is True
    text = metrics_text.render(m)
    assert "4. diversity: 0.6000" in text
    assert "5. utility: r2 0.4500 [0.4000, 0.5000]" in text
    assert "6. validity: planted strong predictors in the top 5: 4/5; planted disparity (Black): recovered" in text


def test_validity_disparity_not_planted_or_undetermined(run):
    path = run / "output" / "paper" / "recovery.json"
    rec = json.loads(path.read_text())
    rec["group"]["recovered"] = None
    path.write_text(json.dumps(rec))
    assert "planted disparity (Black): undetermined" in metrics_text.render(am.collect(run))
    rec["group"]["planted"] = False
    path.write_text(json.dumps(rec))
    assert "4/5; no disparity planted" in metrics_text.render(am.collect(run))
    assert am.flat(am.collect(run))["validity.disparity_recovered"] is None


def test_validity_not_applicable_on_real_rows(run):
    (run / "output" / "paper" / "recovery.json").unlink()
    (run / "output" / "data" / "dgp.json").unlink()
    m = am.collect(run)
    assert m["validity"] == {"applicable": False, "note": am.NOT_GENERATED}
    assert m["stages"]["write"]["expected"] == 2
    assert f"6. validity: {am.NOT_GENERATED}" in metrics_text.render(m)


def test_one_branch_has_no_diversity(run):
    write_json(run / "output" / "branches.json", {"drafts": [{"branch": 1}], "diversity": None})
    m = am.collect(run)
    assert m["diversity"]["value"] is None
    assert "4. diversity: n/a" in metrics_text.render(m)


def test_mean_and_sd_across_runs(run):
    one = am.collect(run)
    two = json.loads(json.dumps(one))
    two["utility"]["value"] = 0.55
    agg = am.aggregate([one, two])
    assert agg["utility.r2"]["mean"] == pytest.approx(0.5)
    assert agg["utility.r2"]["sd"] == pytest.approx(0.0707107, rel=1e-4)
    assert agg["engineer.success_rate"]["n"] == 2
    assert agg["debate.success_rate"]["n"] == 0
    assert "utility.r2" in metrics_text.render_many([one, two], ["a", "b"])
    two["utility"].update(metric="auc", value=0.8)  # another primary metric: not averaged with R2
    agg = am.aggregate([one, two])
    assert agg["utility.r2"]["n"] == 1 and agg["utility.auc"]["mean"] == 0.8


def test_cli_metrics(run, capsys):
    assert main(["metrics", str(run)]) == 0
    text = capsys.readouterr().out
    for head in ("1-3. success, completion and cost per stage", "4. diversity", "5. utility", "6. validity"):
        assert head in text
    assert main(["metrics", str(run), str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["runs"]) == 2 and data["across_runs"]["utility.r2"]["sd"] == 0.0


def test_cli_metrics_not_a_run(tmp_path, capsys):
    assert main(["metrics", str(tmp_path)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a workflow run" in err[0]


@pytest.mark.workflow
def test_metrics_of_the_small_run(base_run):
    import subprocess
    import sys

    workdir, _ = base_run
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "edm_ars.cli", "metrics", str(workdir)], capture_output=True,
                          text=True, env={"PYTHONPATH": str(root / "scripts"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for head in ("1-3. success, completion and cost per stage", "4. diversity", "5. utility", "6. validity"):
        assert head in text, text
    m = am.collect(workdir)
    assert m["stages"]["analyze"]["success_rate"] == 1.0
    assert m["stages"]["write"]["completion_rate"] == 1.0, m["stages"]["write"]["missing"]
    assert m["stages"]["critique"]["completion_rate"] == 1.0
    assert m["utility"]["value"] is not None
    assert m["validity"]["applicable"] and m["validity"]["predictors_planted"]  # hsls09_synthetic is generated


def test_a_screened_run_counts_the_screening_round_and_the_chosen_full_analysis(tmp_path):
    """branches > 1 with screening: round 0 of each branch has no stability or split analyses, the chosen branch
    goes on to round 1 (its full analysis), and the utility is that full analysis' metric."""
    run = tmp_path / "run"
    out = run / "output"
    screening = {"models": ["logistic"], "skipped": ["stability perturbations"], "full": "chosen"}

    def results(value, screened):
        return {"primary_metric": "auc", "best_model": "logistic",
                "models": {"logistic": {"metrics": {"auc": value}, "ci": {"auc": [value - 0.1, value + 0.1]}}},
                **({"screening": screening} if screened else {})}

    for b in (1, 2):
        d = out / f"branch_{b}" / "round_0"
        for f in ["research_spec.json", "data/data_report.json", "claims.json"] + [
                f"analysis/{n}.json" for n in am.SCREENING_FILES]:
            write(d / f)
        write_json(d / "results.json", results(0.7, True))
        write_json(d / "review_report.json", {"verdict": "PASS", "rerun_from": None})
    full = out / "branch_2" / "round_1"
    for f in ["claims.json"] + [f"analysis/{n}.json" for n in am.ANALYSIS_FILES]:
        write(full / f)
    write_json(full / "results.json", results(0.75, False))
    write_json(full / "review_report.json", {"verdict": "PASS", "rerun_from": None})
    write_json(out / "selection.json", {"chosen": 2, "branches": [
        {"branch": b, "primary": {"metric": "auc", "model": "logistic", "value": 0.7, "ci": [0.6, 0.8]},
         "verdict": "PASS"} for b in (1, 2)]})
    assert am.rounds_of(run, 1) == [(0, "formulate")]
    assert am.rounds_of(run, 2) == [(0, "formulate"), (1, "analyze")]
    m = am.collect(run)
    assert m["stages"]["analyze"]["missing"] == []
    assert (m["utility"]["branch"], m["utility"]["value"]) == (2, 0.75)
