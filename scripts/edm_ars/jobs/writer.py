"""The Writer's jobs (envs/writer.yaml): provenance, recovery, write, abort_report, compile_pdf."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_json
from edm_ars.core.errors import EdmArsError
from edm_ars.jobs.rule_io import log, registry_of

# the artifacts a paper is written from (verify-paper finds them through sources.json) -> the rule's input names
ARTIFACTS = {"research_spec.json": "spec", "literature_context.json": "literature", "data_report.json": "report",
             "results.json": "results", "review_report.json": "review", "claims.json": "claims"}
# ... and those it is written from when the run has them (the availability statement, the recovery check)
OPTIONAL_ARTIFACTS = {"provenance.json": "provenance", "recovery.json": "recovery", "sample.json": "sample",
                      "selection.json": "selection", "branches.json": "drafts"}


def provenance(smk: Any) -> None:
    """output/paper/provenance.json: the rows' provenance (from the data manifest), the data set's citation (its
    curated bibliography entry), the workflow's commit, the configuration's hash and the package versions."""
    from edm_ars.run.runinfo import provenance_record

    bib = Path(smk.input.bibliography)
    record = provenance_record(read_json(smk.input.manifest), config=dict(smk.params.config),
                               workflow_dir=Path(smk.scriptdir).parent, bib_text=bib.read_text(encoding="utf-8"),
                               bib_path=str(bib))
    wf = record["workflow"]
    log.info("data: %s; workflow: %s; configuration %s", record["data"]["kind"],
             wf["short"] or wf["state"], record["config_hash"])
    write_json(smk.output.provenance, record)


def recovery(smk: Any) -> None:
    """output/paper/recovery.json: the planted strong predictors among the interpreted model's top features and the
    planted group effect in the subgroup audit (edm_ars.analysis.recovery)."""
    from edm_ars.analysis.recovery import recovery_check

    rec = recovery_check(read_json(smk.input.dgp, "dgp"), read_json(smk.input.spec, "research_spec"),
                         read_json(smk.input.results, "results"))
    p, g = rec["predictors"], rec["group"]
    log.info("%s: %d of %d strongly planted predictors among the top %d; planted group effect recovered: %s",
             rec["outcome"], p["n_recovered"], p["n_in_predictors"], p["top_k"], g.get("recovered"))
    write_json(smk.output.recovery, rec)


def write(smk: Any) -> None:
    """The paper's LaTeX from the fixed template, numbers from artifacts; then the integrity check
    (`edm-ars verify-paper`): numbers reconciled with the artifacts, citations, lint."""
    from edm_ars.writer import build_paper

    if "abort" in smk.input.keys():
        review = read_json(smk.input.review, "review_report")
        raise EdmArsError(f"the Critic aborted the study in round {review['round']}: {review['abort_reason']} "
                          f"(see {smk.input.abort}); no paper is written")
    reg = registry_of(smk)
    labels = {name: rec.get("label", name) for name, rec in reg.tier1.items()}
    groups = {name: rec["group"] for name, rec in reg.tier1.items() if rec.get("group")}
    values = {name: {str(k): str(v) for k, v in rec["values"].items()} for name, rec in reg.tier1.items()
              if isinstance(rec.get("values"), dict)}
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
        phrases=smk.input.phrases, provenance_record=_optional(smk, "provenance"), recovery=_optional(smk, "recovery"),
        sample=_optional(smk, "sample"), registry_values=values, selection=_optional(smk, "selection"),
        drafts=_optional(smk, "drafts"))
    for note in summary["model_prose"]:
        log.info("model prose: %s", note)
    log.info("paper written: %s", summary)
    report = sources_and_verification(smk, out, ARTIFACTS, OPTIONAL_ARTIFACTS)
    if not report.ok:
        consistency = [f for f in report.failures if ": consistency: " in f]
        what = ("its claims are not consistent with each other or with the evidence (edm_ars.review.consistency)"
                if consistency and len(consistency) == len(report.failures)
                else "the paper does not reconcile with the artifacts")
        raise EdmArsError(what + ":\n" + report.summary())


def sources_and_verification(smk: Any, out: Path, artifacts: dict[str, str], optional: dict[str, str]) -> Any:
    """sources.json (the artifacts the paper was written from, relative to it: verify-paper finds them there), the
    records of where every number comes from with the links and the appendix (writer/trace.py), and
    verification.json (`edm-ars verify-paper`, with the researcher's notes on the write gate, recorded but not acted
    on: key researcher_notes); returns the verification report."""
    from edm_ars.jobs.rule_io import unacted_notes
    from edm_ars.writer.trace import write_links
    from edm_ars.writer.verify import verify_paper

    given = {**artifacts, **{n: k for n, k in optional.items() if k in smk.input.keys()}}
    write_json(smk.output.sources, {name: os.path.relpath(smk.input[key], out) for name, key in given.items()})
    report = verify_paper(smk.output.tex)
    # every number it checked a link to where it comes from (trace.json, sources.tex, the links in numbers.tex)
    records = write_links(out, Path.cwd(), report)
    log.info("%d of %d number macros linked to their sources in %d artifacts",
             sum(n["checked"] for n in records["numbers"]), len(records["numbers"]), len(records["artifacts"]))
    unacted = unacted_notes(smk, "write")
    write_json(smk.output.verification, {**report.to_json(), **({"researcher_notes": unacted} if unacted else {})})
    log.info("%s", report.summary())
    return report


def _optional(smk: Any, key: str) -> dict[str, Any] | None:
    return read_json(smk.input[key]) if key in smk.input.keys() else None


def abort_report(smk: Any) -> None:
    """The Critic aborted the study: say why, in a file and on the terminal."""
    review = read_json(smk.input.review, "review_report")
    report = {"round": review["round"], "reason": review["abort_reason"],
              "critical_issues": [i for i in review["issues"] if i["severity"] == "critical"],
              "review": smk.input.review}
    log.error("the Critic aborted the study in round %s: %s", review["round"], review["abort_reason"])
    write_json(smk.output.report, report)


def compile_pdf(smk: Any) -> None:
    """latexmk with BibTeX; the log is read for errors and undefined references."""
    from edm_ars.writer import latex

    workflow = read_json(smk.input.provenance).get("workflow") or {}
    latex.compile_pdf(Path(smk.input.tex), Path(smk.log[0]).with_suffix(".latexmk.log"),
                      max_overfull_pt=smk.params.max_overfull_pt, pdf_path=Path(smk.output.pdf),
                      commit_time=workflow.get("commit_time"))
    log.info("built %s", smk.output.pdf)
