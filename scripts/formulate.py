"""Rule formulate (ProblemFormulator): research specification, spec gate, literature context.

Offline: a deterministic expert system picks a supported canonical question and the curated
bibliography. With a model: a structured debate and a synthesized specification (same gate, one
revision), then Semantic Scholar retrieval verified against CrossRef (curated fallback)."""

from datetime import UTC, datetime
from pathlib import Path

from edm_ars import actions
from edm_ars.artifacts import atomic_write_text, read_json, write_json
from edm_ars.errors import SpecError
from edm_ars.formulate import curated_literature, literature_topics, offline_spec, validate_spec
from edm_ars.gates import read_notes
from edm_ars.lessons import carried_actions, load, relevant, render
from edm_ars.rule_io import earlier_reviews, log, registry_of, run


def model_literature(smk, spec, fallback, dataset_literature):
    from edm_ars.literature import CrossRef, SemanticScholar, retrieve

    cfg = smk.params.literature
    cache = Path(smk.params.cache_dir) / "literature"
    return retrieve(spec, scholar=SemanticScholar(base_url=cfg["semantic_scholar_url"], cache_dir=cache),
                    crossref=CrossRef(base_url=cfg["crossref_url"], cache_dir=cache), n_min=cfg["n_min"],
                    n_max=cfg["n_max"], fallback=fallback, dataset_literature=dataset_literature)


def main(smk):
    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    manifest = read_json(smk.input.manifest)
    columns = set(manifest.get("columns", [])) or None
    r = int(smk.wildcards.round)
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    notes = []
    reviews = earlier_reviews(smk)
    requested = actions.of_stage(reviews, "formulate")
    if reviews:  # this round re-runs because of the last one
        notes = reviews[-1]["revision_instructions"].get("formulate", [])
        log.info("round %d revises the specification: %s", r, notes)
    if "human_notes" in smk.input.keys():
        human = read_notes(smk.input.human_notes)
        log.info("the researcher sent the specification back: %s", human)
        notes = notes + [f"Researcher: {n}" for n in human]
    stored, now = load(Path(smk.params.lessons_store)), datetime.now(UTC)
    ranked = relevant(stored, now, stage="formulate", k=smk.params.lessons_k)
    lessons = render(ranked)

    def revised(spec):
        """This run's requested changes, after those earlier runs' lessons carry for the same outcome
        (lessons.k = 0 turns lessons off)."""
        carried = (carried_actions(relevant(stored, now, stage="formulate", k=len(stored)), "formulate",
                                   spec["outcome"]["name"]) if smk.params.lessons_k else [])
        return actions.apply_to_spec(spec, carried + requested, reg)

    if lessons:
        log.info("%s", lessons)
    bib, topics = smk.input.bibliography
    backend = smk.params.llm["backend"]
    if backend == "offline":
        spec = offline_spec(reg, prompt=smk.params.prompt or None, question_id=smk.params.question or None,
                            round_=r, revision_notes=notes)
        spec = revised(spec)
        violations = validate_spec(spec, reg, columns)
        if violations:
            raise SpecError(violations)
        literature = curated_literature(bib, topics, literature_topics(reg, spec["question_id"]))
    else:
        from edm_ars.formulate_model import formulate_with_model
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job

        client = client_for_job(smk)
        curated = curated_literature(bib, topics, literature_topics(reg, None))
        spec, record = formulate_with_model(client, load_prompt(smk.input.prompts), reg,
                                            prompt=smk.params.prompt or None, round_=r, backend=backend,
                                            revision_notes=notes, literature=curated, data_columns=columns,
                                            n_candidates=smk.params.candidates, lessons=lessons)
        log.info("debate and synthesis: %s", {k: v for k, v in record.items() if k != "debate"})
        # the requested changes are applied in code whatever the model wrote, then gated again
        spec = revised(spec)
        violations = validate_spec(spec, reg, columns)
        if violations:
            raise SpecError(violations)
        literature = model_literature(smk, spec, lambda note: curated_literature(
            bib, topics, literature_topics(reg, spec["question_id"]), note=note), reg.dataset.get("literature"))
    for change in spec.get("revision_actions_applied", []):
        log.info("revision: %s", change)
    log.info("spec: %s -> %s with %d predictors; literature: %s, %d papers", spec["question_id"],
             spec["outcome"]["name"], len(spec["predictors"]), literature["source"], len(literature["papers"]))
    write_json(smk.output.spec, spec, "research_spec")
    write_json(smk.output.literature, literature, "literature_context")


run(snakemake, main)  # noqa: F821
