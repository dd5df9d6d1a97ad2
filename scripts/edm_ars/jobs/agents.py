"""The agents' jobs that may call a language model (envs/agents.yaml): formulate, debate, critique."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_json
from edm_ars.jobs.rule_io import log, registry_of


def _model_literature(smk: Any, spec: dict[str, Any], fallback: Any, dataset_literature: Any) -> dict[str, Any]:
    from edm_ars.formulate.literature import retrieve
    from edm_ars.formulate.scholarly import CrossRef, SemanticScholar

    cfg = smk.params.literature
    cache = Path(smk.params.cache_dir) / "literature"
    return retrieve(spec, scholar=SemanticScholar(base_url=cfg["semantic_scholar_url"], cache_dir=cache),
                    crossref=CrossRef(base_url=cfg["crossref_url"], cache_dir=cache), n_min=cfg["n_min"],
                    n_max=cfg["n_max"], fallback=fallback, dataset_literature=dataset_literature)


def with_works(literature: dict[str, Any], curated: dict[str, Any]) -> dict[str, Any]:
    """The retrieved literature with the curated works it lacks (the sources of the registry's published findings,
    which the paper's replication table cites by the registry's keys): a work already retrieved (the same DOI or
    title) is not added twice but takes the registry's key, so the table can cite it."""
    import re

    def norm(title: Any) -> str:
        return re.sub(r"[^a-z0-9]+", " ", str(title or "").lower()).strip()

    def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        doi = (a.get("doi") or "").lower()
        return bool(doi and doi == (b.get("doi") or "").lower()) or (bool(norm(a.get("title")))
                                                                     and norm(a.get("title")) == norm(b.get("title")))

    papers = [dict(p) for p in literature.get("papers") or []]
    extra = []
    for work in curated.get("papers") or []:
        match = next((p for p in papers if p.get("key") == work["key"] or same(p, work)), None)
        if match is None:
            extra.append(work)
        elif match.get("key") != work["key"]:
            old = match.get("key")
            match["key"] = work["key"]
            if isinstance(match.get("bibtex"), str) and old:
                match["bibtex"] = match["bibtex"].replace("{" + old + ",", "{" + work["key"] + ",", 1)
    return {**literature, "papers": [*papers, *extra]}


def formulate(smk: Any) -> None:
    """The ProblemFormulator: research specification, spec gate, literature context.

    Offline: a deterministic expert system picks a supported canonical question and the curated bibliography.
    With a model: a structured debate and a synthesized specification (same gate, one revision), then Semantic
    Scholar retrieval verified against CrossRef (curated fallback)."""
    from edm_ars.core.errors import SpecError
    from edm_ars.formulate.branches import apply_draft, draft_prompt, with_branch
    from edm_ars.formulate.lessons import carried_actions, load, relevant, render
    from edm_ars.formulate.spec import (
        curated_literature,
        literature_topics,
        offline_spec,
        registry_finding_keys,
        validate_spec,
    )
    from edm_ars.jobs.rule_io import earlier_reviews, unacted_notes
    from edm_ars.review import actions
    from edm_ars.run.gates import read_notes

    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    manifest = read_json(smk.input.manifest)
    columns = set(manifest.get("columns", [])) or None
    r = int(smk.wildcards.round)
    draft = read_json(smk.input.drafts)["drafts"][int(smk.wildcards.branch) - 1]
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
        (lessons.k = 0 turns lessons off); a lesson whose action would leave this specification invalid is
        skipped, logged and recorded in its revision_actions_applied, never a failed job."""
        carried = (carried_actions(relevant(stored, now, stage="formulate", k=len(stored)), "formulate",
                                   spec["outcome"]["name"]) if smk.params.lessons_k else [])
        out, skipped = actions.apply_with_lessons(spec, carried, requested, reg, columns)
        for line in skipped:
            log.warning("lesson from an earlier run skipped: %s", line)
        return out

    if lessons:
        log.info("%s", lessons)
    bib, topics = smk.input.bibliography
    backend = smk.params.llm["backend"]
    if backend == "offline":
        spec = offline_spec(reg, prompt=smk.params.prompt or None, question_id=draft["question_id"],
                            round_=r, revision_notes=notes)
        spec = revised(apply_draft(spec, draft))
        violations = validate_spec(spec, reg, columns)
        if violations:
            raise SpecError(violations)
        literature = curated_literature(bib, topics, literature_topics(reg, spec["question_id"]),
                                        keys=registry_finding_keys(reg))
        unacted = unacted_notes(smk, "formulate")
        if unacted:  # recorded in the specification's revision notes, but nothing offline reads their words
            spec["researcher_notes"] = unacted
    else:
        from edm_ars.formulate.model import formulate_with_model
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job

        client = client_for_job(smk)
        curated = curated_literature(bib, topics, literature_topics(reg, None))
        prompt = smk.params.prompt or None
        if draft["source"] != "configured":
            prompt = draft_prompt(draft, prompt)
        spec, record = formulate_with_model(client, load_prompt(smk.input.prompts), reg,
                                            prompt=prompt, round_=r, backend=backend,
                                            revision_notes=notes, literature=curated, data_columns=columns,
                                            n_candidates=smk.params.candidates, lessons=lessons)
        log.info("debate and synthesis: %s", {k: v for k, v in record.items() if k != "debate"})
        # the requested changes are applied in code whatever the model wrote, then gated again
        spec = revised(with_branch(spec, draft))
        violations = validate_spec(spec, reg, columns)
        if violations:
            raise SpecError(violations)
        literature = _model_literature(smk, spec, lambda note: curated_literature(
            bib, topics, literature_topics(reg, spec["question_id"]), note=note, keys=registry_finding_keys(reg)),
            reg.dataset.get("literature"))
        literature = with_works(literature, curated_literature(bib, topics, [], keys=registry_finding_keys(reg)))
    for change in spec.get("revision_actions_applied", []):
        log.info("revision: %s", change)
    log.info("spec: %s -> %s with %d predictors; literature: %s, %d papers", spec["question_id"],
             spec["outcome"]["name"], len(spec["predictors"]), literature["source"], len(literature["papers"]))
    write_json(smk.output.spec, spec, "research_spec")
    write_json(smk.output.literature, literature, "literature_context")


def debate(smk: Any) -> None:
    """The results debate (optimist, skeptic, methodologist, synthesizer) -> claims.json, the claims the paper
    may make with their evidence. Offline the lenses are rules in code; with a model the model may only make a
    claim more conservative (edm_ars.review.claims)."""
    from edm_ars.review.claims import code_claims, debate_with_model, document

    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    results = read_json(smk.input.results, "results")
    report = read_json(smk.input.report, "data_report")
    claims = code_claims(results, report)
    notes, exchanges = [], []
    backend = smk.params.llm["backend"]
    if backend != "offline":
        from edm_ars.formulate.lessons import load, relevant, render
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job
        from edm_ars.review.model_critic import results_summary

        lessons = render(relevant(load(Path(smk.params.lessons_store)), datetime.now(UTC), stage="analyze",
                                  k=smk.params.lessons_k))
        claims, notes, exchanges = debate_with_model(
            client_for_job(smk), load_prompt(smk.input.prompts), claims, results_summary(results),
            {"results.json": results, "data_report.json": report}, lessons=lessons)
    doc = document(claims, round_=int(smk.wildcards.round), backend=backend, notes=notes, debate=exchanges)
    log.info("claims: %s", doc["counts"])
    for c in claims:
        log.info("  [%s] %s: %s", c["status"], c["id"], c["reason"])
    for note in notes:
        log.info("  note: %s", note)
    write_json(smk.output.claims, doc, "claims")


def _model_review(smk: Any, code_review: dict[str, Any], spec: dict[str, Any], report: dict[str, Any],
                  results: dict[str, Any], rubric: Any, reg: Any) -> dict[str, Any]:
    from edm_ars.formulate.lessons import load, relevant, render
    from edm_ars.llm import load_prompt
    from edm_ars.llm.rule_client import client_for_job
    from edm_ars.review.model_critic import key_figure_paths, review_with_model

    client = client_for_job(smk)
    figures = key_figure_paths(results, Path(smk.input.results).parent)
    return review_with_model(client, load_prompt(smk.input.prompts), spec, report, results, figures, code_review,
                             max_revisions=smk.params.max_revisions, rubric=rubric,
                             images=smk.params.llm["backend"] == "anthropic", reg=reg,
                             lessons=render(relevant(load(Path(smk.params.lessons_store)), datetime.now(UTC),
                                                     stage=None, k=smk.params.lessons_k)))


def critique(smk: Any) -> None:
    """The Critic at its checkpoint: rubric checks in code, then (with a model) the three-lens review; the verdict
    is always computed by rule from the merged issues."""
    from edm_ars.review.critic import load_rubric, review

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
                    min_test_n=smk.params.min_test_n,
                    rubric=rubric, claims=read_json(smk.input.claims, "claims"), manifest=read_json(smk.input.manifest),
                    dgp=read_json(smk.input.dgp, "dgp") if "dgp" in smk.input.keys() else None)
    if smk.params.llm["backend"] != "offline":
        result = _model_review(smk, result, spec, report, results, rubric, reg)
    log.info("round %s verdict %s (score %.2f, %d issues); rerun from %s", result["round"], result["verdict"],
             result["overall_score"], len(result["issues"]), result["rerun_from"])
    for issue in result["issues"]:
        log.info("  [%s] %s -> %s", issue["severity"], issue["description"], issue["target_stage"])
    for a in result.get("revision_actions", []):
        log.info("  action: %s (%s)", a["action"], a.get("value"))
    for note in result.get("notes", []):
        log.info("  note: %s", note)
    write_json(smk.output.review, result, "review_report")
