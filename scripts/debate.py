"""Rule debate: the results debate (optimist, skeptic, methodologist, synthesizer) -> claims.json, the
claims the paper may make with their evidence. Offline the lenses are rules in code; with a model the
model may only make a claim more conservative (edm_ars.claims)."""

from datetime import UTC, datetime
from pathlib import Path

from edm_ars.artifacts import atomic_write_text, read_json, write_json
from edm_ars.claims import code_claims, debate_with_model, document
from edm_ars.rule_io import log, run


def main(smk):
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    results = read_json(smk.input.results, "results")
    report = read_json(smk.input.report, "data_report")
    claims = code_claims(results, report)
    notes, debate = [], []
    backend = smk.params.llm["backend"]
    if backend != "offline":
        from edm_ars.critic import results_summary
        from edm_ars.lessons import load, relevant, render
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job

        lessons = render(relevant(load(Path(smk.params.lessons_store)), datetime.now(UTC), stage="analyze",
                                  k=smk.params.lessons_k))
        claims, notes, debate = debate_with_model(
            client_for_job(smk), load_prompt(smk.input.prompts), claims, results_summary(results),
            {"results.json": results, "data_report.json": report}, lessons=lessons)
    doc = document(claims, round_=int(smk.wildcards.round), backend=backend, notes=notes, debate=debate)
    log.info("claims: %s", doc["counts"])
    for c in claims:
        log.info("  [%s] %s: %s", c["status"], c["id"], c["reason"])
    for note in notes:
        log.info("  note: %s", note)
    write_json(smk.output.claims, doc, "claims")


run(snakemake, main)  # noqa: F821
