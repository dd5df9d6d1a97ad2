"""Research-agent metrics of a finished (or partial) run: the five measures a research-agent benchmark uses.

`collect(run_dir)` only reads files of the run directory (no Snakemake import); `aggregate([metrics, ...])` gives
the mean and SD across runs; edm_ars.run.metrics_text prints them (`render`, `render_many`). Definitions (README,
"Research-agent metrics"):

Stages. Every rule belongs to one stage: data (synthesize, export_dataset, dataset, registry_tier2); formulate
(draft_studies, formulate); engineer; analyze (fit_*, evaluate, explain, fairness, stability_run, stability,
split_run, splits, analyze, plan_supplementary, supplementary); debate; critique; select; write (write,
provenance, recovery, compile_pdf, abort_report); run (costs, lessons, findings, revisions); gates (gate).

1. Step success rate per stage: of the job attempts recorded in the run's Snakemake logs
   (.snakemake/log/*.snakemake.log, every invocation), the share that finished: finished / (finished + failed),
   where a job "finished" when the log has `Finished jobid: N (Rule: X)` and "failed" when it has
   `Error in rule X`. Jobs started but neither (an interrupted invocation) are counted apart as `interrupted`
   and are not in the rate. Inner attempts are reported beside it, where the stage has them: model calls
   (ledger lines with status ok / all ledger lines of the stage's agents, cache hits included; ledgers of
   failed jobs kept as logs/**/*.llm_calls.jsonl included), supplementary analyses that succeeded on their
   first attempt (outcome.json of attempt_1 with status ok / analyses tried), and spec gate revisions (ledger
   calls of the formulate agent tagged `revise`: the model's specification failed the gate once).
2. Step completion rate per stage: the share of the stage's expected outputs for this run that exist. Expected,
   per branch b and round r up to its final round (the first round whose review is not REVISE; a round without
   a review yet counts as final): formulate research_spec.json and engineer data/data_report.json in the rounds
   that re-run them (round 0, and round r when review r-1 says rerun_from that stage or an earlier one);
   analyze results.json, analysis/{evaluation,explain,fairness,stability,splits,supplementary_plan}.json and one
   supplementary/slot_<k>.json per planned analysis; debate claims.json; critique review_report.json; and once
   per run: data output/data/dataset.json and output/registry/tier2.json; formulate output/branches.json; select
   output/selection.json; write output/paper.pdf (or the chosen branch's abort_report.json when it aborted),
   output/paper/provenance.json and, on generated data, output/paper/recovery.json; run output/costs.json and
   each branch's revisions.md (inputs of the paper), and output/lessons.json and output/findings.json (the default
   target's alone: not expected of a run whose paper exists, not aborted, with neither of them, i.e. a run that
   targeted output/paper.pdf).
3. Cost per stage: model calls (answers received), input and output tokens and dollars from the ledgers (null
   dollars when a model has no price); wall seconds: the sum of endtime - starttime of the jobs whose outputs
   stand now (.snakemake/metadata, each job counted once: rule, job hash and start time); CPU seconds: the sum
   of the benchmark files' cpu_time (mean over a file's repeats) of the stage's benchmarked jobs, with how many
   jobs that covers; None ("n/a") when no rule of the stage has a benchmark.
4. Diversity: output/branches.json `diversity`, the mean pairwise distance of the candidate studies' specs,
   distance = 0.5 x [different outcome] + 0.5 x (1 - Jaccard overlap of the predictor sets) (edm_ars.formulate.branches);
   None with one branch.
5. Utility: the selected branch's primary held-out metric with its interval (output/selection.json).
6. Validity (generated data only; else not applicable): from output/paper/recovery.json, the planted strong
   predictors among the top features (n_recovered / n_planted_strong) and whether the planted group disparity
   was recovered (true, false, or null when the audit could not tell, e.g. too few rows in the group).
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

STAGES = ["data", "formulate", "engineer", "analyze", "debate", "critique", "select", "write", "run", "gates"]
RULE_STAGE = {
    **dict.fromkeys(["synthesize", "export_dataset", "dataset", "registry_tier2"], "data"),
    **dict.fromkeys(["draft_studies", "formulate"], "formulate"),
    "engineer": "engineer",
    **dict.fromkeys(["fit_model", "fit_stacking", "fit_baselines", "evaluate", "explain", "fairness", "stability_run",
                     "stability", "split_run", "splits", "analyze", "plan_supplementary", "supplementary"], "analyze"),
    "debate": "debate",
    "critique": "critique",
    "select": "select",
    **dict.fromkeys(["write", "provenance", "recovery", "compile_pdf", "abort_report"], "write"),
    **dict.fromkeys(["costs", "lessons", "findings", "revisions"], "run"),
    "gate": "gates",
}
#: the agents of the ledgers (rules/common.smk agent_settings) and their stages; draft_studies runs as formulate
AGENT_STAGE = {"formulate": "formulate", "draft": "formulate", "supplementary": "analyze", "debate": "debate",
               "critique": "critique", "write": "write"}
ROUND_STAGES = ["formulate", "engineer", "analyze"]  # the stages a revision round may re-run from
ANALYSIS_FILES = ["evaluation", "explain", "fairness", "stability", "splits", "supplementary_plan"]
SCREENING_FILES = ["evaluation", "explain", "fairness"]
NOT_GENERATED = "not applicable: the rows are not generated"


class NotARun(Exception):
    """The directory is not a workflow run."""


def stage_of(rule: str) -> str:
    if rule in RULE_STAGE:
        return RULE_STAGE[rule]
    if rule.startswith("fit_") or rule.startswith("stability") or rule.startswith("split"):
        return "analyze"
    return "other"


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# ---- success: the Snakemake logs -------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(?:local)?(?:rule|checkpoint) (\w+):\s*$")
_JOBID = re.compile(r"^\s*jobid: (\d+)\s*$")
_FINISHED = re.compile(r"Finished jobid: (\d+) \(Rule: (\w+)\)")
_ERROR = re.compile(r"Error in rule (\w+):")


def job_attempts(run: Path) -> dict[str, dict[str, int]]:
    """Per rule: started, finished, failed, interrupted job attempts over every invocation's log."""
    counts: dict[str, dict[str, int]] = {}

    def bump(rule: str, key: str) -> None:
        counts.setdefault(rule, {"started": 0, "finished": 0, "failed": 0, "interrupted": 0})[key] += 1

    for log in sorted((run / ".snakemake" / "log").glob("*.log")):
        started: dict[str, str] = {}  # jobid -> rule (job ids restart with every invocation)
        ended: set[str] = set()
        pending: str | None = None  # the rule whose job block is open, or "!" after an error line
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if m := _HEADER.match(line):
                pending = m.group(1)
            elif m := _ERROR.search(line):
                bump(m.group(1), "failed")  # its jobid follows on the next lines
                pending = "!"
            elif m := _FINISHED.search(line):
                ended.add(m.group(1))
                bump(m.group(2), "finished")
            elif pending and (m := _JOBID.match(line)):
                if pending == "!":
                    ended.add(m.group(1))
                elif m.group(1) not in started:
                    started[m.group(1)] = pending
                    bump(pending, "started")
                pending = None
        for jobid, rule in started.items():
            if jobid not in ended:
                bump(rule, "interrupted")
    return counts


# ---- cost: ledgers, metadata, benchmarks ------------------------------------------------------------------

def ledger_lines(run: Path) -> list[dict[str, Any]]:
    """Every ledger line of the run: output/**/ledger/**.jsonl, and the ledgers of failed jobs kept beside their
    logs (logs/**/*.llm_calls.jsonl). output/llm_calls.jsonl is their concatenation and is not read again."""
    out = run / "output"
    paths = sorted(set(out.glob("ledger/**/*.jsonl")) | set(out.glob("branch_*/ledger/**/*.jsonl")))
    paths += sorted((run / "logs").glob("**/*.llm_calls.jsonl"))
    lines = []
    for path in paths:
        for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if text.strip():
                try:
                    lines.append(json.loads(text))
                except ValueError:
                    continue
    return lines


def wall_jobs(run: Path) -> list[dict[str, Any]]:
    """The jobs whose outputs stand now, from .snakemake/metadata (one record per output file): rule and seconds
    from the earliest starttime of a job's outputs to the latest endtime. The outputs of one job share its rule and
    job hash, and their times overlap (a folder output ends a few milliseconds later than the files); records with
    the same rule and hash whose times do not overlap are different jobs (of different invocations)."""
    records: dict[tuple, list[tuple[float, float]]] = {}
    meta = run / ".snakemake" / "metadata"
    for path in meta.rglob("*") if meta.is_dir() else []:
        if not path.is_file():
            continue
        rec = _json(path)
        if not isinstance(rec, dict) or not rec.get("rule") or rec.get("starttime") is None \
                or rec.get("endtime") is None:
            continue
        records.setdefault((rec["rule"], rec.get("job_hash")), []).append(
            (float(rec["starttime"]), float(rec["endtime"])))
    jobs = []
    for (rule, _), spans in records.items():
        spans.sort()
        start, end = spans[0]
        for s, e in spans[1:]:
            if s > end + 1.0:  # a later job of the same rule and hash
                jobs.append({"rule": rule, "seconds": max(0.0, end - start)})
                start, end = s, e
            else:
                end = max(end, e)
        jobs.append({"rule": rule, "seconds": max(0.0, end - start)})
    return jobs


def benchmarks(run: Path) -> list[dict[str, Any]]:
    """Benchmark files (benchmarks/<rule>.tsv, benchmarks/<rule>/..., benchmarks/branch_<b>/<rule>/...):
    rule and cpu_time (mean over the file's repeats)."""
    out = []
    root = run / "benchmarks"
    for path in sorted(root.rglob("*.tsv")) if root.is_dir() else []:
        parts = path.relative_to(root).parts
        if parts[0].startswith("branch_") and len(parts) > 1:
            parts = parts[1:]
        rule = parts[0][:-4] if len(parts) == 1 else parts[0]
        try:
            with open(path, encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh, delimiter="\t"))
            cpu = [float(r["cpu_time"]) for r in rows if r.get("cpu_time") not in (None, "", "NA", "-")]
        except (OSError, ValueError, KeyError):
            continue
        if cpu:
            out.append({"rule": rule, "cpu_s": sum(cpu) / len(cpu)})
    return out


# ---- completion: the expected outputs ----------------------------------------------------------------------

def branch_numbers(run: Path) -> list[int]:
    drafts = (_json(run / "output" / "branches.json") or {}).get("drafts") or []
    found = {int(d["branch"]) for d in drafts if isinstance(d, dict) and d.get("branch") is not None}
    found |= {int(m.group(1)) for p in (run / "output").glob("branch_*")
              if (m := re.fullmatch(r"branch_(\d+)", p.name))}
    return sorted(found)


def rounds_of(run: Path, b: int) -> list[tuple[int, str]]:
    """(round, the stage it re-ran from) for rounds 0..final of branch b."""
    folder = run / "output" / f"branch_{b}"
    rounds, r, start = [], 0, ROUND_STAGES[0]
    while True:
        rounds.append((r, start))
        review = _json(folder / f"round_{r}" / "review_report.json")
        results = _json(folder / f"round_{r}" / "results.json")
        if isinstance(results, dict) and results.get("screening") and isinstance(review, dict) \
                and (folder / f"round_{r + 1}").is_dir():
            # a screened candidate that went on to its full analysis: from the analysis, or earlier if asked
            asked = review.get("rerun_from") or "analyze"
            start = min(asked, "analyze", key=ROUND_STAGES.index) if asked in ROUND_STAGES else "analyze"
            r += 1
            continue
        if not isinstance(review, dict) or review.get("verdict") != "REVISE":
            return rounds
        start = review.get("rerun_from") or ROUND_STAGES[0]
        if start not in ROUND_STAGES:
            start = ROUND_STAGES[0]
        r += 1


def generated(run: Path) -> bool:
    out = run / "output"
    return (out / "paper" / "recovery.json").exists() or (out / "data" / "dgp.json").exists()


def expected_outputs(run: Path) -> dict[str, list[str]]:
    """Per stage: the paths (relative to the run) the run should have made."""
    exp: dict[str, list[str]] = {s: [] for s in STAGES if s != "gates"}
    exp["data"] += ["output/data/dataset.json", "output/registry/tier2.json"]
    exp["formulate"].append("output/branches.json")
    branches = branch_numbers(run)
    for b in branches:
        for r, start in rounds_of(run, b):
            d = f"output/branch_{b}/round_{r}"
            reran = ROUND_STAGES[ROUND_STAGES.index(start):]
            if "formulate" in reran:
                exp["formulate"].append(f"{d}/research_spec.json")
            if "engineer" in reran:
                exp["engineer"].append(f"{d}/data/data_report.json")
            # a screening round (branches > 1) has no stability, repeated-split or supplementary analyses
            screened = bool((_json(run / d / "results.json") or {}).get("screening"))
            names = SCREENING_FILES if screened else ANALYSIS_FILES
            exp["analyze"] += [f"{d}/results.json"] + [f"{d}/analysis/{name}.json" for name in names]
            plan = _json(run / d / "analysis" / "supplementary_plan.json") or {}
            exp["analyze"] += [f"{d}/supplementary/slot_{k}.json" for k in range(1, len(plan.get("analyses") or []) + 1)]
            exp["debate"].append(f"{d}/claims.json")
            exp["critique"].append(f"{d}/review_report.json")
        exp["run"].append(f"output/branch_{b}/revisions.md")
    exp["select"].append("output/selection.json")
    chosen = (_json(run / "output" / "selection.json") or {}).get("chosen")
    aborted = chosen is not None and (run / "output" / f"branch_{chosen}" / "abort_report.json").exists()
    if aborted:
        exp["write"].append(f"output/branch_{chosen}/abort_report.json")
    else:
        exp["write"] += ["output/paper.pdf", "output/paper/provenance.json"]
        if generated(run):
            exp["write"].append("output/paper/recovery.json")
    exp["run"].append("output/costs.json")
    # lessons.json and findings.json are the default target's alone: a run that targeted output/paper.pdf is
    # complete with its paper (and its costs and revision histories, inputs of the paper)
    default_only = ["output/lessons.json", "output/findings.json"]
    paper_target = (not aborted and (run / "output" / "paper.pdf").exists()
                    and not any((run / p).exists() for p in default_only))
    if not paper_target:
        exp["run"] += default_only
    return exp


def supplementary_first_attempts(run: Path) -> tuple[int, int]:
    """(analyses ok on their first attempt, analyses tried): supplementary/slot_<k>/<name>/attempt_1."""
    tried = ok = 0
    for first in sorted((run / "output").glob("branch_*/round_*/supplementary/slot_*/*/attempt_1/outcome.json")):
        tried += 1
        ok += int((_json(first) or {}).get("status") == "ok")
    return ok, tried


# ---- the five measures ------------------------------------------------------------------------------------

def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def is_run(run: Path) -> bool:
    return (run / "output").is_dir() or (run / ".snakemake").is_dir()


def _final_round(out: Path, branch: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(results, review) of the last reviewed round of a branch, or None when none is reviewed."""
    rounds = sorted((int(p.name.split("_")[1]), p) for p in (out / f"branch_{branch}").glob("round_*")
                    if p.name.split("_")[1].isdigit())
    for _, d in reversed(rounds):
        results, review = _json(d / "results.json"), _json(d / "review_report.json")
        if isinstance(results, dict) and isinstance(review, dict) and "models" in results:
            return results, review
    return None


def collect(run_dir: str | Path) -> dict[str, Any]:
    """The five measures of the run in run_dir (see the module docstring). Raises NotARun."""
    run = Path(run_dir)
    if not run.is_dir() or not is_run(run):
        raise NotARun(f"{run}: not a workflow run (no output/ or .snakemake/ folder)")
    stages: dict[str, dict[str, Any]] = {}

    def st(name: str) -> dict[str, Any]:
        return stages.setdefault(name, {
            "jobs": {"finished": 0, "failed": 0, "interrupted": 0}, "success_rate": None,
            "model_calls": {"ok": 0, "total": 0}, "expected": 0, "done": 0, "missing": [], "completion_rate": None,
            "cost": {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "wall_s": 0.0,
                     "wall_jobs": 0, "cpu_s": None, "cpu_jobs": 0}})

    for s in STAGES:
        if s != "gates":
            st(s)
    for rule, c in job_attempts(run).items():
        if rule == "all":  # the default target: no work of its own
            continue
        jobs = st(stage_of(rule))["jobs"]
        for key in jobs:
            jobs[key] += c[key]
    unpriced: set[str] = set()
    revisions = 0
    for line in ledger_lines(run):
        stage = AGENT_STAGE.get(line.get("agent", ""), stage_of(line.get("agent", "")))
        s = st(stage)
        status = line.get("status", "ok")
        s["model_calls"]["total"] += 1
        s["model_calls"]["ok"] += int(status == "ok")
        s["cost"]["calls"] += int(status in ("ok", "unusable"))
        s["cost"]["input_tokens"] += int(line.get("input_tokens") or 0)
        s["cost"]["output_tokens"] += int(line.get("output_tokens") or 0)
        if line.get("cost_usd") is None:
            unpriced.add(stage)
        else:
            s["cost"]["cost_usd"] += float(line["cost_usd"])
        revisions += int(stage == "formulate" and line.get("tag") == "revise" and status == "ok")
    for job in wall_jobs(run):
        c = st(stage_of(job["rule"]))["cost"]
        c["wall_s"] += job["seconds"]
        c["wall_jobs"] += 1
    for bench in benchmarks(run):
        c = st(stage_of(bench["rule"]))["cost"]
        c["cpu_s"] = (c["cpu_s"] or 0.0) + bench["cpu_s"]
        c["cpu_jobs"] += 1
    for stage, paths in expected_outputs(run).items():
        s = st(stage)
        s["expected"] = len(paths)
        s["missing"] = [p for p in paths if not (run / p).exists()]
        s["done"] = len(paths) - len(s["missing"])
        s["completion_rate"] = _rate(s["done"], s["expected"])
    for name, s in stages.items():
        j = s["jobs"]
        s["success_rate"] = _rate(j["finished"], j["finished"] + j["failed"])
        c = s["cost"]
        c["cost_usd"] = None if name in unpriced else round(c["cost_usd"], 6)
        c["wall_s"] = round(c["wall_s"], 2)
        if c["cpu_s"] is not None:
            c["cpu_s"] = round(c["cpu_s"], 2)
    sup_ok, sup_tried = supplementary_first_attempts(run)
    stages["analyze"]["supplementary_first_attempt"] = {"ok": sup_ok, "total": sup_tried}
    stages["formulate"]["spec_gate_revisions"] = revisions
    order = [s for s in STAGES if s in stages] + sorted(s for s in stages if s not in STAGES)
    stages = {s: stages[s] for s in order}

    out = run / "output"
    drafts = _json(out / "branches.json")
    diversity = {"value": drafts.get("diversity") if isinstance(drafts, dict) else None,
                 "n_branches": len(drafts.get("drafts") or []) if isinstance(drafts, dict) else len(branch_numbers(run)),
                 "source": "output/branches.json" if isinstance(drafts, dict) else None}
    selection = _json(out / "selection.json")
    utility: dict[str, Any] = {"value": None, "metric": None, "model": None, "ci": None, "branch": None}
    if isinstance(selection, dict):
        chosen = selection.get("chosen")
        for br in selection.get("branches") or []:
            if br.get("branch") == chosen:
                p, verdict = br.get("primary") or {}, br.get("verdict")
                # after screening, the chosen study's full analysis (its last reviewed round) is what it achieved
                final = _final_round(out, chosen)
                if final is not None and final[0].get("screening") is None:
                    from edm_ars.formulate.branches import primary

                    p, verdict = primary(final[0]), final[1].get("verdict")
                utility = {"value": p.get("value"), "metric": p.get("metric"), "model": p.get("model"),
                           "ci": p.get("ci"), "branch": chosen, "verdict": verdict}
    validity: dict[str, Any]
    recovery = _json(out / "paper" / "recovery.json")
    if isinstance(recovery, dict):
        pred = recovery.get("predictors") or {}
        group = recovery.get("group") or {}
        validity = {"applicable": True, "predictors_recovered": pred.get("n_recovered"),
                    "predictors_planted": pred.get("n_planted_strong"), "share_recovered": pred.get("share_recovered"),
                    "top_k": pred.get("top_k"), "disparity_planted": group.get("planted"),
                    "disparity_recovered": group.get("recovered"), "group": group.get("group"),
                    "attribute": group.get("attribute")}
    elif generated(run):
        validity = {"applicable": True, "predictors_recovered": None, "predictors_planted": None,
                    "share_recovered": None, "disparity_recovered": None,
                    "note": "generated data, but output/paper/recovery.json is missing"}
    else:
        validity = {"applicable": False, "note": NOT_GENERATED}
    return {"run": str(run), "stages": stages, "diversity": diversity, "utility": utility, "validity": validity}


# ---- several runs ------------------------------------------------------------------------------------------

def flat(m: dict[str, Any]) -> dict[str, float | None]:
    """The numbers of one run's metrics by name (for means across runs)."""
    row: dict[str, float | None] = {}
    for name, s in m["stages"].items():
        row[f"{name}.success_rate"] = s["success_rate"]
        row[f"{name}.completion_rate"] = s["completion_rate"]
        for key in ("calls", "input_tokens", "output_tokens", "cost_usd", "wall_s", "cpu_s"):
            row[f"{name}.{key}"] = s["cost"][key]
    for key in ("calls", "input_tokens", "output_tokens", "cost_usd", "wall_s", "cpu_s"):
        values = [s["cost"][key] for s in m["stages"].values()]
        known = [v for v in values if v is not None]
        unknown = key == "cost_usd" and len(known) < len(values)  # a model without a price: no partial sum
        row[f"total.{key}"] = None if unknown or not known else round(sum(known), 6)
    row["diversity"] = m["diversity"]["value"]
    # the primary metrics of different runs may differ (AUC of one study, R2 of another): one row per metric
    row[f"utility.{m['utility']['metric'] or 'primary'}"] = m["utility"]["value"]
    v = m["validity"]
    row["validity.share_recovered"] = v.get("share_recovered") if v.get("applicable") else None
    rec = v.get("disparity_recovered")
    row["validity.disparity_recovered"] = None if rec is None else float(bool(rec))
    return row


def mean_sd(values: list[float | None]) -> tuple[float | None, float | None, int]:
    xs = [float(x) for x in values if x is not None]
    if not xs:
        return None, None, 0
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return mean, sd, len(xs)


def aggregate(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per number: mean, SD (n - 1; None with one value) and n over the runs where it is defined."""
    rows = [flat(m) for m in runs]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    out = {}
    for k in keys:
        mean, sd, n = mean_sd([r.get(k) for r in rows])
        out[k] = {"mean": mean, "sd": sd, "n": n}
    return out
