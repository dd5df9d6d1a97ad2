"""Rule write (Writer): the paper's LaTeX from the fixed template, numbers from artifacts; then the
integrity check (`edm-ars verify-paper`): numbers reconciled with the artifacts, citations, lint."""

import os
from pathlib import Path

from edm_ars.artifacts import atomic_write_text, read_json, write_json
from edm_ars.errors import EdmArsError
from edm_ars.rule_io import log, registry_of, run
from edm_ars.writer import build_paper
from edm_ars.writer.verify import verify_paper

ARTIFACTS = {"research_spec.json": "spec", "literature_context.json": "literature", "data_report.json": "report",
             "results.json": "results", "review_report.json": "review", "claims.json": "claims"}


def main(smk):
    if "abort" in smk.input.keys():
        review = read_json(smk.input.review, "review_report")
        raise EdmArsError(f"the Critic aborted the study in round {review['round']}: {review['abort_reason']} "
                          f"(see {smk.input.abort}); no paper is written")
    reg = registry_of(smk)
    labels = {name: rec.get("label", name) for name, rec in reg.tier1.items()}
    groups = {name: rec["group"] for name, rec in reg.tier1.items() if rec.get("group")}
    claims = read_json(smk.input.claims, "claims")
    out = Path(smk.output.tex).parent
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    rewriter = None
    if smk.params.llm["backend"] != "offline":
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job
        from edm_ars.writer.model_prose import rewrite

        client, prompts = client_for_job(smk), load_prompt(smk.input.prompts)

        def rewriter(ctx, drafts):
            return rewrite(client, prompts, ctx, drafts)

    summary = build_paper(
        read_json(smk.input.spec, "research_spec"), read_json(smk.input.literature, "literature_context"),
        read_json(smk.input.report, "data_report"), read_json(smk.input.results, "results"),
        read_json(smk.input.review, "review_report"), figures_dir=Path(smk.input.figures[0]).parent,
        template=Path(smk.input.template), out_dir=out, registry_labels=labels,
        authors=smk.params.authors, claims=claims, registry_groups=groups, rewriter=rewriter, dataset=reg.prose,
        phrases=smk.input.phrases)
    for note in summary["model_prose"]:
        log.info("model prose: %s", note)
    log.info("paper written: %s", summary)
    # the artifacts the paper was written from, relative to it: verify-paper finds them there
    write_json(smk.output.sources, {name: os.path.relpath(smk.input[key], out) for name, key in ARTIFACTS.items()})
    report = verify_paper(smk.output.tex)
    write_json(smk.output.verification, report.to_json())
    log.info("%s", report.summary())
    if not report.ok:
        raise EdmArsError("the paper does not reconcile with the artifacts:\n" + report.summary())


run(snakemake, main)  # noqa: F821
