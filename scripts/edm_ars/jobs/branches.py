"""The jobs around candidate studies (envs/agents.yaml): draft_studies (output/branches.json), select
(output/selection.json) and findings (output/findings.json, and the findings store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_json
from edm_ars.jobs.rule_io import RESULT, log, registry_of


def draft_studies(smk: Any) -> None:
    """The candidate studies of the run: `branches` of them, distinct from one another and (for more than one)
    from the studies the findings store holds for this data set. Offline: the registry's questions and stated
    variations of them; with a model: the model's drafts, checked against the registry and de-duplicated, the
    rest filled from the registry's candidates (each draft says where it came from)."""
    from edm_ars.formulate.branches import (
        DEDUP_RULE,
        SAME_STUDY,
        diversity,
        draft_offline,
        findings_store_path,
        load_findings,
    )

    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    n = int(smk.params.branches)
    store = findings_store_path(smk.params.findings_store, smk.params.lessons_store)
    manifest = read_json(smk.input.manifest)
    dataset, sha = manifest["dataset"], manifest["sha256"]
    earlier = load_findings(store, dataset, sha, workdir=str(Path.cwd().resolve()))
    prompt, question = smk.params.prompt or None, smk.params.question or None
    backend = smk.params.llm["backend"]
    if backend == "offline" or n == 1:
        drafted = draft_offline(reg, n=n, prompt=prompt, question_id=question, earlier=earlier)
        how = "offline: the registry's questions, then stated variations of them" if n > 1 else \
            "one study, as configured (prompt, question or the registry's default question)"
    else:
        from edm_ars.formulate.branches_model import draft_with_model
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job

        client = client_for_job(smk)
        drafted = draft_with_model(client, load_prompt(smk.input.prompts), reg, n=n, prompt=prompt,
                                   question_id=question, earlier=earlier)
        how = "a language model drafted the studies with a diversity instruction; code checked and de-duplicated"
    drafts = drafted["drafts"]
    for d in drafts:
        log.info("branch %d: %s/%s -> %s with %d predictors (%s)", d["branch"], d["question_id"], d["variant"],
                 d["outcome"], len(d["predictors"]), d["novelty"]["statement"])
    for s in drafted["skipped"]:
        log.info("not drafted: %s: %s", s["draft"], s["reason"])
    # the result line on the console: the question studied and why (issue 39)
    from edm_ars.formulate.spec import choose_question, how_chosen

    how_q = how_chosen(reg, question, prompt)
    if n == 1:
        log.info("question: %s (%s)", drafts[0]["question_id"], how_q, extra=RESULT)
    else:
        asked = question or choose_question(reg, prompt)["id"]
        log.info("question: %s (%s); %d candidate studies: %s", asked, how_q, len(drafts),
                 ", ".join(f"branch {d['branch']} {d['question_id']}/{d['variant']}" for d in drafts), extra=RESULT)
    write_json(smk.output.drafts, {
        "dataset": dataset, "data_sha256": sha, "n": n, "how": how, "dedup_rule": DEDUP_RULE,
        "same_study": SAME_STUDY, "drafts": drafts,
        "skipped": drafted["skipped"], "diversity": diversity(drafts),
        "store": str(store), "earlier_studies": [_earlier(e) for e in earlier]})


def _earlier(entry: dict[str, Any]) -> dict[str, Any]:
    """What the paper may say about an earlier study: its question, outcome, metric and verdict (no paths)."""
    keys = ("question_id", "variant", "outcome", "outcome_label", "predictors", "research_question", "verdict",
            "primary", "recorded")
    return {k: entry.get(k) for k in keys}


def select(smk: Any) -> None:
    """Rank the reviewed branches by the stated rule; the paper is written for the first."""
    from edm_ars.formulate.branches import evidence_strength, identity, primary
    from edm_ars.formulate.branches import select as choose

    drafts = read_json(smk.input.drafts)["drafts"]
    studies = []
    for b, (review_path, spec_path, results_path, claims_path) in enumerate(
            zip(smk.input.reviews, smk.input.specs, smk.input.results, smk.input.claims, strict=True), 1):
        review, spec = read_json(review_path, "review_report"), read_json(spec_path, "research_spec")
        results, claims = read_json(results_path, "results"), read_json(claims_path, "claims")
        draft = drafts[b - 1]
        studies.append({
            "branch": b, "round": review["round"], "question_id": spec["question_id"],
            "variant": draft["variant"], "research_question": spec["research_question"],
            "outcome": spec["outcome"]["name"], "outcome_label": spec["outcome"].get("label"),
            **{"predictors": identity(spec)["predictors"]},
            "primary": primary(results), "verdict": review["verdict"], "score": float(review["overall_score"]),
            "evidence": evidence_strength(claims), "novelty": draft["novelty"]["nearest_distance"],
            "files": {"review": review_path, "results": results_path}})
    selection = choose(studies)
    if smk.params.get("screening"):
        # the ranking is of the screening rounds; the chosen study (every one with papers=all) is analysed in full
        selection["screening"] = dict(smk.params.screening)
    for s in selection["branches"]:
        log.info("branch %d: rank %d, %s score %g, evidence %.2f%s", s["branch"], s["rank"], s["verdict"],
                 s["score"], s["evidence"], f"; not chosen: {s['why_not_chosen']}" if s["why_not_chosen"] else "")
    write_json(smk.output.selection, selection)


def findings(smk: Any) -> None:
    """The run's finished studies (each branch: specification identity, main findings with their evidence,
    verdict) into output/findings.json and the findings store (replacing this folder's earlier record)."""
    from edm_ars.formulate.branches import findings_store_path, primary, record_findings

    selection = read_json(smk.input.selection)
    drafted = read_json(smk.input.drafts)
    drafts = {d["branch"]: d for d in drafted["drafts"]}
    # a run drafted before the rows' hash was recorded stores its studies without it (never matched as the same rows)
    dataset, sha = drafted["dataset"], drafted.get("data_sha256")
    studies = []
    # each branch as it finished: its final round (after screening, the chosen one's full analysis)
    for s, claims_path, results_path, review_path in zip(selection["branches"], smk.input.claims,
                                                         smk.input.results, smk.input.reviews, strict=True):
        claims, review = read_json(claims_path, "claims"), read_json(review_path, "review_report")
        results = read_json(results_path, "results")
        s = s | {"primary": primary(results), "verdict": review["verdict"], "score": float(review["overall_score"]),
                 "analysis": "screening" if results.get("screening") else "full"}
        supported = [{"statement": c["statement"], "evidence": c.get("evidence", [])}
                     for c in claims["claims"] if c.get("status") == "supported"]
        studies.append({
            "dataset": dataset, "data_sha256": sha, "branch": s["branch"],
            "chosen": s["branch"] == selection["chosen"],
            "question_id": s["question_id"], "variant": s["variant"], "research_question": s["research_question"],
            "outcome": s["outcome"], "outcome_label": s["outcome_label"], "predictors": s["predictors"],
            "primary": s["primary"], "verdict": s["verdict"], "score": s["score"], "analysis": s["analysis"],
            "findings": supported,
            "draft_source": drafts[s["branch"]]["source"]})
    write_json(smk.output.findings, {"dataset": dataset, "studies": studies})
    from datetime import UTC, datetime

    store = findings_store_path(smk.params.findings_store, smk.params.lessons_store)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    workdir = str(Path.cwd().resolve())
    n = record_findings(store, [dict(s, workdir=workdir, recorded=now) for s in studies])
    log.info("%d studies recorded in the findings store %s", n, store)
