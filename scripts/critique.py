"""Checkpoint critique (Critic): rubric checks in code, then (with a model) the three-lens review;
the verdict is always computed by rule from the merged issues."""

from datetime import UTC, datetime
from pathlib import Path

from edm_ars.artifacts import atomic_write_text, read_json, write_json
from edm_ars.critic import key_figure_paths, load_rubric, review, review_with_model
from edm_ars.rule_io import log, registry_of, run


def model_review(smk, code_review, spec, report, results, rubric, reg):
    from edm_ars.lessons import load, relevant, render
    from edm_ars.llm import load_prompt
    from edm_ars.llm.rule_client import client_for_job

    client = client_for_job(smk)
    figures = key_figure_paths(results, Path(smk.input.results).parent)
    return review_with_model(client, load_prompt(smk.input.prompts), spec, report, results, figures, code_review,
                             max_revisions=smk.params.max_revisions, rubric=rubric,
                             images=smk.params.llm["backend"] == "anthropic", reg=reg,
                             lessons=render(relevant(load(Path(smk.params.lessons_store)), datetime.now(UTC),
                                                     stage=None, k=smk.params.lessons_k)))


def main(smk):
    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    spec = read_json(smk.input.spec, "research_spec")
    report = read_json(smk.input.report, "data_report")
    results = read_json(smk.input.results, "results")
    rubric = load_rubric(smk.input.rubric)
    result = review(spec, report, results, reg, round_=int(smk.wildcards.round),
                    max_revisions=smk.params.max_revisions, force_revise=smk.params.force_revise or None,
                    force_rounds=smk.params.force_revise_rounds,
                    min_models=smk.params.critic["min_models"], min_analytic_n=smk.params.min_analytic_n,
                    rubric=rubric)
    if smk.params.llm["backend"] != "offline":
        result = model_review(smk, result, spec, report, results, rubric, reg)
    log.info("round %s verdict %s (score %.2f, %d issues); rerun from %s", result["round"], result["verdict"],
             result["overall_score"], len(result["issues"]), result["rerun_from"])
    for issue in result["issues"]:
        log.info("  [%s] %s -> %s", issue["severity"], issue["description"], issue["target_stage"])
    for a in result.get("revision_actions", []):
        log.info("  action: %s (%s)", a["action"], a.get("value"))
    for note in result.get("notes", []):
        log.info("  note: %s", note)
    write_json(smk.output.review, result, "review_report")


run(snakemake, main)  # noqa: F821
