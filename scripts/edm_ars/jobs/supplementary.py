"""The supplementary analyses' jobs (envs/supplementary.yaml): plan them, run each planned one in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_json
from edm_ars.jobs.rule_io import log


def _requested(smk: Any) -> list[str]:
    """What the earlier rounds' reviews asked of the supplementary analyses (add_analysis actions)."""
    from edm_ars.jobs.rule_io import earlier_reviews
    from edm_ars.review.actions import of_stage

    return [str(a["value"]) for a in of_stage(earlier_reviews(smk), "analyze") if a["action"] == "add_analysis"]


def _ask(smk: Any, prompt: dict[str, Any]):
    from edm_ars.llm.rule_client import client_for_job

    client = client_for_job(smk)

    def ask(tag: str, user: str) -> str:
        return client.complete(prompt["system"], [{"role": "user", "content": user}], tag=tag).text

    return ask


def plan_supplementary(smk: Any) -> None:
    """A round's supplementary analyses: the plan the codegen.n slot jobs read (offline by rule from the vetted
    library, with a model by the model's proposals)."""
    from edm_ars.codegen.supplementary import analysis_context, model_plan, offline_plan
    from edm_ars.core.frames import frame_columns
    from edm_ars.llm import load_prompt
    from edm_ars.review.model_critic import results_summary

    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    cfg = smk.params.codegen
    spec, report = read_json(smk.input.spec, "research_spec"), read_json(smk.input.report, "data_report")
    evaluation, explain = read_json(smk.input.evaluation), read_json(smk.input.explain)
    n_columns = len(frame_columns(smk.input.train_X))
    context = analysis_context(spec, report, evaluation, explain, smk.params.seed, n_columns)
    requested = _requested(smk)
    if cfg["n"] <= 0:
        doc = {"analyses": [], "skipped": [], "backend": smk.params.llm["backend"]}
    elif smk.params.llm["backend"] == "offline":
        doc = offline_plan(context, cfg["n"], requested)
    else:
        prompt = load_prompt(smk.input.prompts)
        so_far = {"task": evaluation["task"], "primary_metric": evaluation["primary_metric"],
                  "best_model": evaluation["best_model"], "models": evaluation["models"],
                  "top_features": explain.get("top_features", []), "flags": evaluation["flags"]}
        summary = json.dumps(results_summary(so_far), indent=1, default=str)
        doc = model_plan(_ask(smk, prompt), prompt, context, summary, cfg["n"], requested)
    doc |= {"context": context, "requested": requested, "sandbox": cfg["sandbox"], "attempts": cfg["attempts"]}
    for a in doc["analyses"]:
        log.info("supplementary analysis %s (%s, asked by the %s): %s", a["name"], a["source"], a["requested_by"],
                 a["purpose"])
    for s in doc["skipped"]:
        log.info("not planned: %s: %s", s["name"], s["reason"])
    write_json(smk.output.plan, doc, "supplementary_plan")


def supplementary(smk: Any) -> None:
    """One supplementary analysis: its attempts in the sandbox (repaired by the model, when there is one) and its
    record, "ok" with the numbers its script wrote, or "dropped" with why."""
    from edm_ars.codegen.limits import Limits, memory_for
    from edm_ars.codegen.supplementary import model_repair, run_analysis
    from edm_ars.core.frames import frame_columns, frame_rows
    from edm_ars.llm import load_prompt

    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    doc = read_json(smk.input.plan, "supplementary_plan")
    slot = int(smk.wildcards.slot)
    folder = Path(smk.output.attempts)
    folder.mkdir(parents=True, exist_ok=True)
    if slot > len(doc["analyses"]):
        log.info("slot %d: the plan holds %d analyses; nothing to run", slot, len(doc["analyses"]))
        write_json(smk.output.record, {"slot": slot, "status": "empty",
                                       "reason": f"the plan holds {len(doc['analyses'])} analyses"},
                   "supplementary_record")
        return
    entry = doc["analyses"][slot - 1]
    name = entry["name"]
    cfg = smk.params.codegen
    folder = folder / name  # output/branch_<b>/round_<r>/supplementary/slot_<k>/<name>/attempt_<j>/
    folder.mkdir(exist_ok=True)  # a rerun without Snakemake (which removes the slot folder first) reuses it
    context_file = folder / "context.json"
    write_json(context_file, doc["context"] | {"analysis": {"name": name, "purpose": entry["purpose"],
                                                             "reports": entry["reports"]}})
    inputs = {"context.json": context_file, "train_X.parquet": Path(smk.input.train_X),
              "train_y.parquet": Path(smk.input.train_y), "test_X.parquet": Path(smk.input.test_X),
              "test_y.parquet": Path(smk.input.test_y), "test_predictions.parquet": Path(smk.input.predictions)}
    repair = None
    if entry["source"] == "generated" and smk.params.llm["backend"] != "offline":
        prompt = load_prompt(smk.input.prompts)
        repair = model_repair(_ask(smk, prompt), prompt, entry)

    cells = sum(frame_rows(inputs[f]) * len(frame_columns(inputs[f])) for f in ("train_X.parquet", "test_X.parquet"))
    limits = memory_for(Limits(**cfg["limits"]), cells)
    if limits.memory_mb != cfg["limits"]["memory_mb"]:
        log.info("%s: memory limit %d MB (configured %d MB) for frames of %d cells", name, limits.memory_mb,
                 cfg["limits"]["memory_mb"], cells)
    # out/ is written beside the slot's folder, not in it, until tidied: see run_analysis
    scratch = Path(smk.output.attempts).with_name(f".slot_{slot}.running")
    record = run_analysis(entry, inputs, folder, limits=limits, mode=cfg["sandbox"],
                          attempts=cfg["attempts"], repair=repair, scratch=scratch)
    for a in record["attempts"]:
        log.info("%s attempt %d: %s %s", name, a["attempt"], a["status"], a["reason"])
    log.info("%s: %s%s", name, record["status"], f" ({record['reason']})" if record["reason"] else "")
    write_json(smk.output.record, {"slot": slot} | record, "supplementary_record")
