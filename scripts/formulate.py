"""Rule formulate (ProblemFormulator): research specification, spec gate, literature context."""

from edm_ars.artifacts import read_json, write_json
from edm_ars.errors import SpecError
from edm_ars.formulate import curated_literature, offline_spec, validate_spec
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    manifest = read_json(smk.input.manifest)
    r = int(smk.wildcards.round)
    notes = []
    if "previous_review" in smk.input.keys():
        review = read_json(smk.input.previous_review, "review_report")
        notes = review["revision_instructions"].get("formulate", [])
        log.info("round %d revises the specification: %s", r, notes)
    spec = offline_spec(reg, prompt=smk.params.prompt or None, question_id=smk.params.question or None,
                        round_=r, revision_notes=notes)
    columns = set(manifest.get("columns", [])) or None
    violations = validate_spec(spec, reg, columns)
    if violations:
        raise SpecError(violations)
    log.info("spec: %s -> %s with %d predictors", spec["question_id"], spec["outcome"]["name"],
             len(spec["predictors"]))
    bib, topics = smk.input.bibliography
    literature = curated_literature(bib, topics, spec["question_id"])
    write_json(smk.output.spec, spec, "research_spec")
    write_json(smk.output.literature, literature, "literature_context")


run(snakemake, main)  # noqa: F821
