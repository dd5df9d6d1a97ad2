"""The whole workflow, offline, in temporary directories: paper, revision loop, reruns, bad input."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from workflow import LEAN, ROOT, jobs_run, snakemake

from edm_ars.core.conventions import LEAKAGE_AUC, QUALITY_FLOOR, UNSTABLE_TOP5

pytestmark = pytest.mark.workflow


def read(path: Path):
    return json.loads(path.read_text())


def test_full_offline_run_builds_the_paper(base_run):
    workdir, result = base_run
    out = workdir / "output"
    assert (out / "paper.pdf").stat().st_size > 20_000
    assert sorted(set(jobs_run(result))) == sorted({"synthesize", "dataset", "registry_tier2", "formulate",
                                                    "engineer", "fit_model", "fit_stacking", "fit_baselines", "evaluate",
                                                    "explain", "fairness", "multilevel", "replication", "stability_run", "stability",
                                                    "split_run",
                                                    "splits", "plan_supplementary", "supplementary", "analyze",
                                                    "debate", "critique", "provenance", "recovery", "write",
                                                    "compile_pdf", "draft_studies", "select", "costs",
                                                    "revisions"})  # the run's records the report shows (issue 39)
    spec = read(out / "branch_1" / "round_0" / "research_spec.json")
    report = read(out / "branch_1" / "round_0" / "data" / "data_report.json")
    results = read(out / "branch_1" / "round_0" / "results.json")
    review = read(out / "branch_1" / "round_0" / "review_report.json")
    assert spec["outcome"]["name"] == "X4EVRATNDCLG"
    assert report["validation_passed"] and report["split"]["group_overlap"] == 0
    assert set(results["models"]) == {"logistic", "xgboost", "stacking"}
    # baselines on the same resamples (never selected), the cluster bootstrap, the selected model's paired comparisons
    assert set(results["baselines"]) == {"baseline_constant", "baseline_prior", "baseline_core"}
    assert results["baselines"]["baseline_constant"]["metrics"]["auc"] == 0.5
    assert results["baselines"]["baseline_prior"]["predictors"] == ["X1TXMTSCOR"]
    assert results["interval_method"] == "cluster_bootstrap" and results["test_clusters"] > 1
    # the school-level structure (rule multilevel): the reconstructed schools, the latent-scale ICC with its interval
    level = results["multilevel"]["levels"][0]
    assert results["multilevel"]["outcome_scale"] == "latent" and level["unit"] == "school"
    assert level["null_model"]["icc_ci"][0] <= level["null_model"]["icc"] <= level["null_model"]["icc_ci"][1]
    # the generated default has no published findings: an empty replication table (rule replication)
    assert results["replication"]["source"] == "none" and results["replication"]["findings"] == []
    pairs = [c for c in results["paired_comparisons"] if c["family"] == "selected"]
    assert {c["b"] for c in pairs} == set(results["models"]) - {results["best_model"]} | set(results["baselines"])
    assert all(c["a"] == results["best_model"] and c["p"] <= c["p_holm"] <= 1 for c in pairs)
    for m in results["models"].values():
        low, high = m["ci"]["auc"]
        assert low <= m["metrics"]["auc"] <= high
    assert results["interpreted_model"] in {"logistic", "xgboost"} and results["top_features"]
    assert "stacking" in results["shap"]["skipped"]
    assert {"X1SEX", "X1RACE", "X1SESQ5", "X1RACE x X1SEX"} <= set(results["fairness"]["attributes"])
    assert results["stability"]["n_perturbations"] == 2 and results["stability"]["unstable"] is not None
    # the thresholds the Analyst applied travel with its artifacts (edm_ars.core.conventions decides them once)
    evaluation = read(out / "branch_1" / "round_0" / "analysis" / "evaluation.json")
    assert evaluation["thresholds"] == results["thresholds"] == {"quality_floor": QUALITY_FLOOR["auc"],
                                                                 "leakage_auc": LEAKAGE_AUC, "leakage_r2": None}
    assert results["stability"]["thresholds"] == {"unstable_top5": UNSTABLE_TOP5}
    # the study repeated over the test configuration's 3 grouped splits, each with no cluster on both sides
    splits = results["splits"]
    assert splits["n_splits"] == 3 and len(set(splits["seeds"])) == 3 and splits["seeds"][0] == report["split"]["seed"]
    assert all(s["group_overlap"] == 0 for s in splits["splits"]) and splits["not_refitted"] == ["stacking"]
    assert {m: r["n"] for m, r in splits["models"].items()} == {"logistic": 3, "xgboost": 3}
    kinds = {f["kind"] for f in results["figures"]}
    assert {"roc", "calibration", "shap_summary", "shap_importance", "fairness"} <= kinds
    for f in results["figures"]:
        assert (out / "branch_1" / "round_0" / f["path"]).stat().st_size > 1000
    assert review["verdict"] == "PASS"
    assert not (out / "branch_1" / "round_1").exists()
    text = subprocess.run(["pdftotext", str(out / "paper.pdf"), "-"], capture_output=True, text=True).stdout
    for section in ("INTRODUCTION", "RELATED WORK", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS",
                    "REFERENCES"):
        assert section in text.upper()
    assert "??" not in text
    # generated rows say so, and the study reports the recovery of the planted structure (tests/run/test_provenance.py)
    assert "DATA AND CODE AVAILABILITY" in text.upper()
    assert "Using the generated stand-in for the" in (out / "paper" / "paper.tex").read_text()
    assert read(out / "paper" / "recovery.json")["outcome"] == "X4EVRATNDCLG"
    assert (workdir / "logs" / "branch_1" / "engineer" / "round_0.log").exists()
    claims = read(out / "branch_1" / "round_0" / "claims.json")
    assert claims["counts"]["supported"] >= 1 and all(c["evidence"] for c in claims["claims"])
    verification = read(out / "paper" / "verification.json")
    assert verification["ok"] and verification["counts"]["matched"] > 50
    # the vetted supplementary analyses ran in the sandbox, and their numbers are in the paper as verified macros
    supp = results["supplementary"]
    assert supp["sandbox"] == "bwrap" and supp["n_planned"] == 2 and supp["n_ok"] == 2
    assert list(supp["analyses"]) == ["drop_top_predictor", "interaction_top_two"]
    drop = supp["analyses"]["drop_top_predictor"]
    assert drop["status"] == "ok" and (workdir / drop["script"]).is_file()
    numbers = read(out / "paper" / "numbers.json")
    sources = {m["source"] for m in numbers["macros"]}
    assert "results.json:supplementary.analyses.drop_top_predictor.numbers.score_drop.value" in sources
    tex = (out / "paper" / "paper.tex").read_text()
    assert "Supplementary analyses (code run in a sandbox)" in tex and "drop\\_top\\_predictor" in tex


def test_a_runs_console_is_short_and_the_logs_keep_the_details(base_run):
    """Issue 39: a line per job start and end, the question studied, no INFO line of a job and no rule block on
    the console; the Snakemake log keeps every job's block (edm-ars metrics reads it), the job logs their INFO."""
    workdir, result = base_run
    lines = result.stderr.splitlines()
    assert len(lines) < 200, len(lines)  # a few screens (3,206 lines before)
    assert "draft_studies: question: college_attendance (the registry's default question: no prompt= or "\
        "question= given)" in lines
    assert any(re.fullmatch(r"\[[\d:]{8}\] done compile_pdf \(\d+ of \d+ steps, 100%\)", line) for line in lines)
    assert not [line for line in lines if " INFO [" in line or line.startswith(("    input:", "Shell command"))]
    [log] = (workdir / ".snakemake" / "log").glob("*.snakemake.log")
    text = log.read_text()
    assert re.search(r"localrule compile_pdf:\n    input: .*output/paper/paper\.tex.*\n    output: output/paper\.pdf\n", text)
    assert "Finished jobid: 0 (Rule: compile_pdf)" in text
    assert " INFO [edm_ars] spec: college_attendance" in (workdir / "logs" / "branch_1" / "formulate" / "round_0.log").read_text()


def test_the_question_a_prompt_matched_is_a_result_line(tmp_path):
    """Issue 39: the question a `prompt=` matched is printed on the console when the studies are drafted."""
    result = snakemake(tmp_path, "output/branches.json", config={"prompt": "high school dropout risk"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "draft_studies: question: hs_completion (matched the prompt 'high school dropout risk')" \
        in result.stderr.splitlines()


def test_verify_paper_passes_and_fails_on_a_planted_number(base_run, tmp_path):
    workdir, _ = base_run
    tex = workdir / "output" / "paper" / "paper.tex"
    ok = subprocess.run(["edm-ars", "verify-paper", str(tex)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert " 0 unmatched" in ok.stdout
    planted = tmp_path / "paper"
    shutil.copytree(tex.parent, planted)
    source = (planted / "paper.tex").read_text()
    begin = source.index("%%BEGIN:RESULTS%%\n") + len("%%BEGIN:RESULTS%%\n")
    line = source[:begin].count("\n") + 1
    # five decimals: at four, a planted AUC can coincide with a difference the pool allows (an interval's width)
    (planted / "paper.tex").write_text(source[:begin] + "On a subsample the AUC reached 0.43217.\n" + source[begin:])
    (planted / "sources.json").write_text(json.dumps(
        {k: str((tex.parent / v).resolve()) for k, v in read(tex.parent / "sources.json").items()}))
    bad = subprocess.run(["edm-ars", "verify-paper", str(planted / "paper.tex")], capture_output=True, text=True)
    assert bad.returncode == 1 and f"paper.tex:{line}: [RESULTS] 0.43217" in bad.stdout


def test_status_reports_the_run(base_run):
    workdir, _ = base_run
    result = subprocess.run(["edm-ars", "status", "--directory", str(workdir)], capture_output=True, text=True)
    assert result.returncode == 0
    assert "round 0: ran formulate, engineer, analyze; review PASS" in result.stdout
    assert "paper.pdf" in result.stdout


def report_data(html: str, name: str):
    """A JSON block of a Snakemake 9 HTML report: `<script id="NAME"> var x = JSON; </script>` (the results,
    with every file embedded as a base64 data URI, its categories, the workflow description)."""
    match = re.search(rf'<script id="{name}">\s*var \w+ = (.*?);\s*</script>', html, re.S)
    assert match, f"no {name} block in the report"
    return json.loads(match.group(1))


def build_report(src: Path, workdir: Path, config: dict | None = None):
    """Copy a finished run (of the target output/paper.pdf: the report needs nothing the default target adds,
    issue 39) and build `output/report.html`; returns the report's categories, results and description."""
    shutil.copytree(src, workdir, dirs_exist_ok=True, symlinks=True)
    built = snakemake(workdir, "--report", "output/report.html", config=config)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "marked for report but does not exist" not in built.stderr and "WorkflowError" not in built.stderr
    assert jobs_run(built) == []
    html = (workdir / "output" / "report.html").read_text()
    return (
        {cat: {sub: set(paths) for sub, paths in subs.items()} for cat, subs in report_data(html, "categories").items()},
        report_data(html, "results"),
        report_data(html, "workflow-desc"),
    )


def test_report_shows_the_artifacts_by_stage_and_round(base_run, tmp_path_factory):
    """`snakemake --report output/report.html`: spec, data report, results and each figure, claims, review
    (a checkpoint's output), paper, revisions and costs, by stage (category) and round (subcategory)."""
    src, _ = base_run
    workdir = tmp_path_factory.mktemp("report")
    categories, results, description = build_report(src, workdir)
    r0 = "output/branch_1/round_0"
    figures = {f"{r0}/{f['path']}" for f in read(src / r0 / "results.json")["figures"]}
    assert len(figures) == 6  # roc, calibration, SHAP summary and importance, fairness, per-group calibration
    b0 = "branch 1, round 0"
    assert categories == {
        "1. Formulate": {b0: {f"{r0}/research_spec.json"}, "all branches": {"output/branches.json"}},
        "2. Engineer": {b0: {f"{r0}/data/data_report.json"}},
        "3. Analyze": {b0: {f"{r0}/results.json", f"{r0}/tables/metrics.csv", f"{r0}/tables/fairness.csv"} | figures},
        "4. Debate": {b0: {f"{r0}/claims.json"}},
        "5. Critique": {b0: {f"{r0}/review_report.json"}, "branch 1, all rounds": {"output/branch_1/revisions.md"},
                        "all branches": {"output/selection.json"}},
        "6. Write": {b0: {"output/paper.pdf"}},
        "7. Run": {"all rounds": {"output/costs.json"}},
    }
    assert results[f"{r0}/review_report.json"]["job_properties"]["rule"] == "critique"
    assert results[f"{r0}/research_spec.json"]["labels"] == {"artifact": "research specification", "branch": "1",
                                                             "round": "0"}
    roc = results[f"{r0}/figures/evaluate/roc.pdf"]
    assert roc["mime_type"] == "application/pdf" and roc["labels"] == {"artifact": "evaluate figure: roc",
                                                                       "branch": "1", "round": "0"}
    assert "ROC curves of all models (logistic, xgboost, stacking)" in roc["caption"] and "Round 0" in roc["caption"]
    assert "review of round 0" in results[f"{r0}/review_report.json"]["caption"]
    # issue 38: each caption gives the record of the job that made the item (rule, script, parameters, inputs)
    # and where the commit is; the paper's points to its appendix and trace.json
    literal = '<tt class="docutils literal">{}</tt>'.format
    scripts = {}
    for path, item in results.items():
        rule, caption = item["job_properties"]["rule"], item["caption"]
        assert "Where it comes from" in caption and f"Rule {literal(rule)}" in caption, path
        script = re.search(r'script\s+<tt class="docutils literal">([^<]+)</tt>', caption)
        assert script and (ROOT / script.group(1)).is_file(), path
        scripts[path] = script.group(1)
        assert literal("output/paper/provenance.json") in caption, path
    assert scripts[f"{r0}/figures/evaluate/roc.pdf"] == "scripts/evaluate.py"
    assert scripts[f"{r0}/review_report.json"] == "scripts/critique.py"
    assert scripts["output/selection.json"] == "scripts/select_branch.py"
    assert scripts[f"{r0}/tables/metrics.csv"] == "scripts/evaluate.py"  # the tables too (issue 38)
    assert "A table of the analysis" in results[f"{r0}/tables/fairness.csv"]["caption"]
    assert literal(f"{r0}/data/test_X.parquet") in roc["caption"] and literal("n_bootstrap=200") in roc["caption"]
    paper_caption = results["output/paper.pdf"]["caption"]
    assert literal("compile_pdf") in paper_caption and literal("output/paper/numbers.tex") in paper_caption
    assert literal("output/paper/trace.json") in paper_caption and "Where the numbers come from" in paper_caption
    # every item is embedded in the single HTML file: the paper's bytes are in it
    paper = results["output/paper.pdf"]
    assert paper["mime_type"] == "application/pdf" and paper["labels"] == {"artifact": "paper", "branch": "1",
                                                                            "round": "0"}
    assert base64.b64decode(paper["data_uri"].split("base64,", 1)[1]) == (workdir / "output" / "paper.pdf").read_bytes()
    assert "hsls09_synthetic" in description and "<strong>Formulate</strong>" in description


def test_second_run_does_nothing(base_run):
    workdir, _ = base_run
    again = snakemake(workdir, "output/paper.pdf")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to be done" in again.stderr
    assert jobs_run(again) == []


def test_a_copied_project_reruns_nothing(tmp_path):
    """A project directory holding the workflow and its outputs, copied elsewhere (`cp -a`, times kept), redoes
    no job: inputs are recorded relative to the working directory, not as absolute paths."""
    import sys

    project = tmp_path / "project"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in tracked.split():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, project / name)
    cmd = [sys.executable, "-m", "snakemake", "output/branch_1/round_0/data/data_report.json", "--cores", "2",
           "--configfile", "tests/workflow_config.yaml"]
    first = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    moved = tmp_path / "moved"
    shutil.copytree(project, moved, symlinks=True)
    again = subprocess.run(cmd, cwd=moved, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert jobs_run(again) == [] and "Nothing to be done" in again.stderr


@pytest.fixture(scope="module")
def revised_run(base_run, tmp_path_factory):
    """The finished base run, copied, then re-run for output/paper.pdf with a forced revision of the engineer
    stage."""
    src, _ = base_run
    workdir = tmp_path_factory.mktemp("revised")
    shutil.copytree(src, workdir, dirs_exist_ok=True, symlinks=True)
    before = {p: p.stat().st_mtime_ns for p in (workdir / "output" / "branch_1" / "round_0").rglob("*") if p.is_file()}
    # the README's target: the redone review of round 0 must still lead to round 1 and a paper written from it
    result = snakemake(workdir, "output/paper.pdf", config={"force_revise": "engineer"})
    assert result.returncode == 0, result.stderr[-5000:]
    rest = snakemake(workdir, config={"force_revise": "engineer"})  # the default target adds lessons, findings
    assert rest.returncode == 0 and "write" not in jobs_run(rest), rest.stderr[-5000:]
    return workdir, result, before


def test_forced_revision_reruns_only_the_target_and_downstream(revised_run):
    workdir, result, before = revised_run
    out = workdir / "output"
    ran = jobs_run(result)
    assert "formulate" not in ran and "synthesize" not in ran and "dataset" not in ran
    assert ran.count("engineer") == 1 and ran.count("critique") == 2 and "write" in ran
    review0 = read(out / "branch_1" / "round_0" / "review_report.json")
    assert review0["verdict"] == "REVISE" and review0["rerun_from"] == "engineer" and review0["forced"]
    # round 1 re-ran engineer and analysis; the specification is reused by path, not copied
    assert (out / "branch_1" / "round_1" / "data" / "data_report.json").exists()
    assert (out / "branch_1" / "round_1" / "results.json").exists()
    assert not (out / "branch_1" / "round_1" / "research_spec.json").exists()
    assert read(out / "branch_1" / "round_1" / "data" / "data_report.json")["revision_notes"]
    review1 = read(out / "branch_1" / "round_1" / "review_report.json")
    assert review1["verdict"] == "PASS" and not review1["forced"]
    # the earlier round's artifacts are kept (only its review was re-made)
    for path, mtime in before.items():
        if path.name != "review_report.json":
            assert path.stat().st_mtime_ns == mtime, path
    assert (out / "paper.pdf").exists()
    assert "round_1/results.json" in (out / "paper" / "sources.json").read_text()  # written from round 1
    assert (out / "paper.pdf").stat().st_mtime >= (out / "paper" / "paper.tex").stat().st_mtime
    revisions = (out / "branch_1" / "revisions.md").read_text()
    assert "## Round 1" in revisions and "re-run from engineer" in revisions
    assert "Revision of the engineer stage requested by configuration" in revisions
    assert "**Re-ran**: engineer, analyze, critique" in revisions and "**Effect**: best model" in revisions


def test_report_of_a_revised_run_has_a_subcategory_per_round(revised_run, tmp_path_factory):
    """After a forced revision of the engineer stage, round 1 has its own data report, results, claims and review;
    the specification stays under round 0 (reused by path) and the paper is filed under round 1."""
    src, _, _ = revised_run
    categories, results, _ = build_report(src, tmp_path_factory.mktemp("report_revised"),
                                          config={"force_revise": "engineer"})
    assert categories["1. Formulate"] == {"branch 1, round 0": {"output/branch_1/round_0/research_spec.json"},
                                          "all branches": {"output/branches.json"}}
    for stage, name in (("2. Engineer", "data/data_report.json"), ("3. Analyze", "results.json"),
                        ("4. Debate", "claims.json"), ("5. Critique", "review_report.json")):
        for r in (0, 1):
            assert f"output/branch_1/round_{r}/{name}" in categories[stage][f"branch 1, round {r}"], (stage, r)
    assert "output/branch_1/round_1/figures/explain/shap_summary.pdf" in categories["3. Analyze"]["branch 1, round 1"]
    assert categories["6. Write"] == {"branch 1, round 1": {"output/paper.pdf"}}
    assert results["output/branch_1/round_1/review_report.json"]["labels"] == {"artifact": "review", "branch": "1",
                                                                              "round": "1"}
    assert "force_revise=engineer" in results["output/branch_1/round_1/review_report.json"]["caption"]


def test_max_rounds_are_honoured_and_the_paper_is_flagged(base_run, tmp_path_factory):
    """The Critic keeps asking for revisions; after max_revisions the paper is written, UNVERIFIED."""
    src, _ = base_run
    workdir = tmp_path_factory.mktemp("maxrounds")
    shutil.copytree(src, workdir, dirs_exist_ok=True, symlinks=True)
    result = snakemake(workdir, config={"force_revise": "analyze", "force_revise_rounds": 5, "max_revisions": 1})
    assert result.returncode == 0, result.stderr[-4000:]
    out = workdir / "output"
    assert read(out / "branch_1" / "round_0" / "review_report.json")["verdict"] == "REVISE"
    last = read(out / "branch_1" / "round_1" / "review_report.json")
    assert last["verdict"] == "UNVERIFIED" and last["unverified"] and last["forced"]
    assert not (out / "branch_1" / "round_2").exists()
    assert not (out / "branch_1" / "round_1" / "data").exists()  # analyze was targeted: the data are reused by path
    # the revision refits only the family it adds (and stacking over it); the others are reused by path, and
    # their explanations and stability refits are kept from round 0
    fitted = {p.name for p in (out / "branch_1" / "round_1" / "models").glob("*.joblib")}
    assert fitted == {"elastic_net.joblib", "stacking.joblib"}, fitted
    explain = read(out / "branch_1" / "round_1" / "analysis" / "explain.json")
    assert explain["by_model"]["logistic"]["inputs"]["model"] == "output/branch_1/round_0/models/logistic.joblib"
    assert explain["by_model"]["logistic"] == read(out / "branch_1" / "round_0" / "analysis" / "explain.json")["by_model"]["logistic"]
    # the jobs' INFO lines are in their logs (the console has warnings, errors and result lines: issue 39)
    assert any("kept from the previous round" in p.read_text() for p in (workdir / "logs").rglob("*.log"))
    results = [read(out / "branch_1" / f"round_{r}" / "results.json")["models"]["logistic"]["metrics"] for r in (0, 1)]
    assert results[0] == results[1]
    tex = (out / "paper" / "paper.tex").read_text()
    assert tex.count("\\unverifiedbox{") == 1 and "Unverified draft" in tex
    # `edm-ars status` states each round's verdict as the paper does: the rubric's REVISE at the cap, UNVERIFIED
    assert "the review's rubric returned \\textbf{REVISE}" in tex
    said = subprocess.run(["edm-ars", "status"], capture_output=True, text=True, cwd=workdir)
    assert said.returncode == 0, said.stderr
    lines = said.stdout.splitlines()
    assert any(line.startswith("round 0: ran formulate, engineer, analyze; review REVISE (") and
               line.endswith("; the next round re-runs from analyze") for line in lines), said.stdout
    assert any(line.startswith("round 1: ran analyze; rubric REVISE at the revision cap (1 of 1 revision rounds): "
                               "the paper is written UNVERIFIED; score ") for line in lines), said.stdout
    assert lines[-1] == ("paper: output/paper.pdf, flagged UNVERIFIED: rubric REVISE at the revision cap "
                         "(1 of 1 revision rounds)"), said.stdout
    assert "review PASS" not in said.stdout and "running" not in said.stdout


def test_rerun_one_stage_and_downstream(base_run, tmp_path_factory):
    src, _ = base_run
    workdir = tmp_path_factory.mktemp("forcerun")
    shutil.copytree(src, workdir, dirs_exist_ok=True, symlinks=True)
    result = snakemake(workdir, "output/paper.pdf", "-R", "evaluate")
    assert result.returncode == 0, result.stderr[-3000:]
    ran = set(jobs_run(result))
    # the forced stage and what depends on it; nothing upstream. (Downstream jobs whose inputs come
    # out byte-identical are skipped by Snakemake's checksum comparison, as they should be.)
    assert {"evaluate", "analyze", "critique"} <= ran and {"write", "compile_pdf"} <= ran  # new figure files
    assert not ran & {"synthesize", "formulate", "engineer", "fit_model", "fit_stacking", "fit_baselines"}
    again = snakemake(workdir, "output/paper.pdf")
    assert "Nothing to be done" in again.stderr


def test_failed_explanations_keep_what_worked(base_run, tmp_path_factory):
    """Every SHAP explainer times out: the errors are recorded by phase, models and the paper survive."""
    src, _ = base_run
    workdir = tmp_path_factory.mktemp("shapfail")
    shutil.copytree(src, workdir, dirs_exist_ok=True, symlinks=True)
    models_before = {p.name: p.stat().st_mtime_ns for p in (workdir / "output" / "branch_1" / "round_0" / "models").iterdir()}
    result = snakemake(workdir, "output/paper.pdf", overrides=(
        "analysis:\n  models: [logistic, xgboost, stacking]\n  cv_folds: 3\n  n_bootstrap: 200\n"
        "  shap: {max_samples: 300, other_samples: 100, background: 100, kernel_samples: 50, stability_samples: 200,"
        " timeout_s: 0}\n  fairness: {attributes: [], intersections: [[X1RACE, X1SEX]], min_group: 50,"
        " gap_threshold: 0.05}\n  stability: {imputation: [simple], bootstrap: 1, seeds: 0}\n"))
    assert result.returncode == 0, result.stderr[-4000:]
    ran = set(jobs_run(result))
    assert "explain" in ran and not ran & {"fit_model", "fit_stacking", "fit_baselines", "engineer"}
    out = workdir / "output"
    results = read(out / "branch_1" / "round_0" / "results.json")
    explain_errors = [e for e in results["errors"] if e["phase"] == "explain"]
    assert explain_errors and all(e["type"] == "SHAPTimeout" for e in explain_errors)
    assert results["top_features"] == [] and len(results["models"]) == 3
    assert models_before == {p.name: p.stat().st_mtime_ns for p in (out / "branch_1" / "round_0" / "models").iterdir()}
    assert (out / "paper.pdf").exists()


def test_missing_real_data_file_is_explained(tmp_path):
    result = snakemake(tmp_path, "output/paper.pdf", config={"dataset": "hsls09"})
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "hsls_17_student_pets_sr_v1_0.csv" in message and "does not exist" in message
    assert "nces.ed.gov" in message.lower()


def test_malformed_and_incomplete_data_files(tmp_path):
    raw = tmp_path / "data" / "raw"
    raw.mkdir(parents=True)
    csv = raw / "hsls_17_student_pets_sr_v1_0.csv"
    csv.write_text("this is not,a survey\n1,2\n")
    result = snakemake(tmp_path, "output/data/dataset.json", config={"dataset": "hsls09"})
    assert result.returncode != 0
    assert "STU_ID" in result.stdout + result.stderr


def test_too_few_cases_stop_the_run_and_keep_earlier_outputs(tmp_path):
    result = snakemake(tmp_path, "output/paper.pdf", overrides="synthetic: {n_students: 1100, n_schools: 60}\n")
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "fewer than the floor of 1000 analytic cases" in message
    assert "engineer.min_analytic_n" in message and "critic.abort_below_n" in message and "--configfile" in message
    assert (tmp_path / "output" / "data" / "raw.parquet").exists()
    assert (tmp_path / "output" / "branch_1" / "round_0" / "research_spec.json").exists()
    assert not (tmp_path / "output" / "branch_1" / "round_0" / "data" / "data_report.json").exists()


def test_outcome_absent_from_a_real_data_file_is_named(tmp_path):
    """The hsls09 adapter with a user's CSV that lacks the outcome column: the spec gate names it."""
    import sys

    from workflow import ROOT

    sys.path.insert(0, str(ROOT / "scripts"))
    from edm_ars.data.datasets.synthetic import generate
    from edm_ars.data.layout import load_layout
    from edm_ars.data.registry import load_registry

    reg = load_registry(ROOT / "registry" / "hsls09")
    frame, _ = generate(reg, load_layout(ROOT / "registry" / "hsls09" / "Layout_STUDENT.txt"), n_students=1500,
                        n_schools=60, seed=3)
    raw = tmp_path / "data" / "raw"
    raw.mkdir(parents=True)
    frame.drop(columns=["X4EVRATNDCLG"]).to_csv(raw / "hsls_17_student_pets_sr_v1_0.csv", index=False)
    result = snakemake(tmp_path, "output/paper.pdf", config={"dataset": "hsls09"})
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "research specification rejected" in message and "X4EVRATNDCLG" in message
    assert (tmp_path / "output" / "data" / "dataset.json").exists()
    assert not (tmp_path / "output" / "branch_1" / "round_0" / "research_spec.json").exists()


def _edm(tmp_path, *args):
    done = subprocess.run(["edm-ars", *args, "-d", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_step_by_step_gates_every_stage_and_a_rejection_reaches_the_stage(tmp_path):
    """step-by-step: a gate after every stage; each approval moves the run exactly one stage on, and a
    rejection note reruns the gated stage with the note."""
    first = snakemake(tmp_path, "output/paper.pdf", config={"hitl": "step-by-step"}, overrides=LEAN)
    assert first.returncode != 0 and "gate 'formulate' (round 0) is waiting" in first.stdout + first.stderr
    _edm(tmp_path, "reject", "formulate", "--note", "Justify the school-level predictors")
    second = snakemake(tmp_path, "output/paper.pdf", config={"hitl": "step-by-step"}, overrides=LEAN)
    assert second.returncode != 0 and "formulate" in jobs_run(second)
    spec = read(tmp_path / "output" / "branch_1" / "round_0" / "research_spec.json")
    assert "Researcher: Justify the school-level predictors" in spec["revision_notes"]
    assert not (tmp_path / "output" / "branch_1" / "round_0" / "data").exists()
    _edm(tmp_path, "approve", "formulate")
    steps = [  # (gate that waits, rules that must have run, rules that must not have run yet)
        ("engineer", {"engineer"}, {"fit_model", "fit_stacking"}),
        ("analyze", {"fit_model", "evaluate", "analyze"}, {"critique"}),
        ("critique", {"critique"}, {"write"}),
        ("write", set(), {"write", "compile_pdf"}),
    ]
    for gate, ran_now, not_yet in steps:
        result = snakemake(tmp_path, "output/paper.pdf", config={"hitl": "step-by-step"}, overrides=LEAN)
        assert result.returncode != 0, result.stderr[-3000:]
        assert f"gate '{gate}' (round 0) is waiting for your review" in result.stdout + result.stderr
        ran = set(jobs_run(result))
        assert ran_now <= ran and not (not_yet & ran), (gate, sorted(ran))
        assert f"waiting for the researcher: {gate} (round 0)" in _edm(tmp_path, "status")
        _edm(tmp_path, "approve", gate, *(["--note", "Results read fine"] if gate == "write" else []))
    last = snakemake(tmp_path, "output/paper.pdf", config={"hitl": "step-by-step"}, overrides=LEAN)
    assert last.returncode == 0, last.stderr[-3000:]
    assert {"write", "compile_pdf"} <= set(jobs_run(last)) and (tmp_path / "output" / "paper.pdf").exists()
    assert "waiting for the researcher" not in _edm(tmp_path, "status")


def test_a_small_sample_with_both_floors_lowered_is_written_unverified_and_says_so(tmp_path):
    """Both floors lowered as the refusal says (issue 33, small samples): the run ends in a paper, not an ABORT;
    the test set is under critic.min_test_n, which no revision can change, so round 0's review is UNVERIFIED
    (rubric verdict REVISE, no revision round) and the abstract says the sample is small."""
    overrides = ("synthetic: {n_students: 400, n_schools: 60}\n"
                 "engineer: {test_fraction: 0.2, simple_below: 5.0, warn_above: 20.0, min_analytic_n: 100,"
                 " min_retention: 0.6, max_categories: 100}\n"
                 "critic: {min_models: 2, abort_below_n: 100}\n" + LEAN)
    result = snakemake(tmp_path, "output/paper.pdf", overrides=overrides)
    assert result.returncode == 0, result.stderr[-4000:]
    out = tmp_path / "output"
    review = read(out / "branch_1" / "round_0" / "review_report.json")
    assert (review["verdict"], review["rubric_verdict"], review["unverified"]) == ("UNVERIFIED", "REVISE", True)
    assert "an_test_n_min" in {i["id"] for i in review["issues"]} and review["rerun_from"] is None
    assert not (out / "branch_1" / "round_1").exists()
    tex = " ".join((out / "paper" / "paper.tex").read_text().split())
    assert "The sample is small: the held-out estimates rest on a test set of only \\TestN{}" in tex
    test_n = read(out / "branch_1" / "round_0" / "results.json")["test_n"]
    assert test_n < 200 and f"\\newcommand{{\\TestN}}{{{test_n}}}" in (out / "paper" / "numbers.tex").read_text()


def test_abort_leaves_no_paper_and_exits_non_zero(tmp_path):
    """Too few analytic cases for a defensible study: the engineer's floor was lowered, the Critic's is not."""
    overrides = ("synthetic: {n_students: 1150, n_schools: 60}\n"
                 "engineer: {test_fraction: 0.2, simple_below: 5.0, warn_above: 20.0, min_analytic_n: 500,"
                 " min_retention: 0.6, max_categories: 100}\n" + LEAN)
    result = snakemake(tmp_path, "output/paper.pdf", overrides=overrides)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "the Critic aborted the study in round 0" in message and "analytic cases" in message
    # the abort names both floors and the --configfile lines that lower them (issue 33, small samples)
    assert "critic.abort_below_n = 1000" in message and "engineer.min_analytic_n" in message
    assert "--configfile" in message and "abort_below_n: " in message
    report = read(tmp_path / "output" / "branch_1" / "abort_report.json")
    assert report["round"] == 0 and report["critical_issues"]
    assert not (tmp_path / "output" / "paper.pdf").exists()
    assert not (tmp_path / "output" / "paper" / "paper.tex").exists()
    # the report of an aborted run names a target that exists (the default one includes the paper)
    built = snakemake(tmp_path, "--report", "output/report.html", "output/branch_1/abort_report.json", overrides=overrides)
    assert built.returncode == 0, built.stderr[-3000:]
    categories = report_data((tmp_path / "output" / "report.html").read_text(), "categories")
    assert categories["6. Write"] == {"branch 1, round 0": ["output/branch_1/abort_report.json"]}
    assert categories["5. Critique"] == {"branch 1, round 0": ["output/branch_1/round_0/review_report.json"]}


def test_every_checked_number_of_the_paper_links_to_where_it_comes_from(base_run):
    """Issue 38: each number verify-paper checks is a link (a PDF link annotation over the printed number) to its
    line in the appendix "Where the numbers come from", which names each source once with the job that wrote it."""
    from links import check_numbers_linked

    workdir, _ = base_run
    paper = workdir / "output" / "paper"
    counts = check_numbers_linked(paper, workdir / "output" / "paper.pdf")
    assert counts["checked"] > 300 and counts["links"] > 300
    trace = read(paper / "trace.json")
    jobs = {name: a["job"]["rule"] for name, a in trace["artifacts"].items() if a["job"]}
    assert jobs["results.json"] == "analyze" and jobs["data_report.json"] == "engineer"
    assert jobs["research_spec.json"] == "formulate" and trace["workflow"]["short"]
    appendix = (paper / "sources.tex").read_text()
    assert "Where the numbers come from" in appendix and "rule \\texttt{analyze}" in appendix
