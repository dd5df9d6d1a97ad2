"""The causal study's paper jobs (envs/writer.yaml): the recovery of a planted effect and the paper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_json
from edm_ars.jobs.rule_io import log, registry_of

#: the artifacts a causal paper is written from (verify-paper finds them through sources.json) -> input names
ARTIFACTS = {"research_spec.json": "spec", "literature_context.json": "literature", "data_report.json": "report",
             "results.json": "results", "review_report.json": "review"}
OPTIONAL_ARTIFACTS = {"provenance.json": "provenance", "recovery.json": "recovery"}


def recovery(smk: Any) -> None:
    """The planted effect of the generated data against the estimate (edm_ars.causal.recovery)."""
    from edm_ars.causal.recovery import causal_recovery

    rec = causal_recovery(read_json(smk.input.dgp, "dgp"), read_json(smk.input.spec), read_json(smk.input.results))
    log.info("planted %s, estimated %s [%s, %s]: covered %s; naive %s covered %s", rec["planted_ate"],
             rec["estimate"], rec["ci_low"], rec["ci_high"], rec["covered"], rec["naive"], rec["naive_covered"])
    write_json(smk.output.recovery, rec)


def write(smk: Any) -> None:
    """The causal paper (edm_ars.causal.paper), then `edm-ars verify-paper`."""
    from edm_ars.causal.paper import build_causal_paper
    from edm_ars.core.errors import EdmArsError
    from edm_ars.jobs.writer import sources_and_verification

    review = read_json(smk.input.review, "review_report")
    if review["verdict"] == "ABORT":
        raise EdmArsError(f"the Critic aborted the study in round {review['round']}: {review.get('abort_reason')}; "
                          "no paper is written")
    reg = registry_of(smk)
    out = Path(smk.output.tex).parent
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    summary = build_causal_paper(
        read_json(smk.input.spec), read_json(smk.input.literature, "literature_context"),
        read_json(smk.input.report), read_json(smk.input.results), review,
        figures_dir=Path(smk.input.figures), template=Path(smk.input.template), out_dir=out,
        authors=smk.params.authors, dataset=reg.prose,
        provenance_record=_optional(smk, "provenance"), recovery=_optional(smk, "recovery"),
        bib_source=Path(smk.input.bibliography), phrases=Path(smk.input.phrases),
        findings=reg.dataset.get("findings"))
    log.info("causal paper written: %s", summary)
    report = sources_and_verification(smk, out, ARTIFACTS, OPTIONAL_ARTIFACTS)
    if not report.ok:
        raise EdmArsError("the paper does not reconcile with the artifacts:\n" + report.summary())


def _optional(smk: Any, key: str) -> dict[str, Any] | None:
    return read_json(smk.input[key]) if key in smk.input.keys() else None
