"""The causal study's agent jobs (envs/agents.yaml): the specification with its framing, and the Critic's
causal checklist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_json
from edm_ars.core.errors import SpecError
from edm_ars.jobs.rule_io import RESULT, earlier_reviews, log, registry_of, unacted_notes


def _start_agent_outputs(smk: Any) -> None:
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")


def formulate(smk: Any) -> None:
    """The causal research specification (edm_ars.causal.spec), its gate, the framing (offline by rule, with a
    model written by the model and checked), and the literature context."""
    from edm_ars.causal.spec import (
        FRAMING_SCHEMA,
        causal_spec,
        framing_problems,
        offline_framing,
        spec_gate,
        study_question,
    )
    from edm_ars.formulate.spec import CORE_TOPICS, curated_literature, literature_topics

    reg = registry_of(smk)
    _start_agent_outputs(smk)
    q = study_question(reg, smk.params.question or None, smk.params.prompt or None)
    spec = causal_spec(reg, q, round_=int(smk.wildcards.round))
    columns = set(read_json(smk.input.manifest).get("columns", [])) or None
    problems = spec_gate(spec, columns)
    if problems:
        raise SpecError(problems)
    notes = [n for rev in earlier_reviews(smk)[-1:] for n in rev["revision_instructions"].get("formulate", [])]
    if notes:
        spec["revision_notes"] = notes
    unacted = unacted_notes(smk, "causal-formulate")
    if unacted:
        spec["researcher_notes"] = unacted
    bib, topics = smk.input.bibliography
    keys = list(dict.fromkeys(p["cite"] for p in spec["published_estimates"]))
    # the question's and the data set's topics and the sources of the methods this design uses (not the prediction
    # study's core methods): double machine learning and its sensitivity analysis for an observational design,
    # cluster-robust inference when the design names a cluster column
    design = spec["design"]
    wanted = [t for t in literature_topics(reg, spec["question_id"]) if t not in CORE_TOPICS]
    wanted += ["doubleml", "dml", "sensitivity"] if design["kind"] == "observational" else []
    wanted += ["clustering"] if design.get("cluster") else []
    backend = smk.params.llm["backend"]
    if backend == "offline":
        spec |= offline_framing(spec, reg.prose)
        spec["framing_source"] = "rule"
        literature = curated_literature(bib, topics, wanted, keys=keys)
    else:
        from edm_ars.jobs.agents import _model_literature, with_works
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job

        prompts = load_prompt(smk.input.prompts)
        client = client_for_job(smk)
        context = _framing_context(spec, reg)
        framing, _ = client.complete_json(prompts["system"].format(**context),
                                          [{"role": "user", "content": prompts["user"].format(**context)}],
                                          tag="framing", schema=FRAMING_SCHEMA,
                                          check=lambda value: framing_problems(value, spec))
        spec |= {k: " ".join(str(framing[k]).split()) for k in ("motivation", "identification")}
        spec["framing_source"] = "model"
        literature = _model_literature(smk, spec, lambda note: curated_literature(bib, topics, wanted, note=note,
                                                                                  keys=keys),
                                       reg.dataset.get("literature"))
        literature = with_works(literature, curated_literature(bib, topics, wanted, keys=keys))
    spec["literature_keys"] = [p["key"] for p in literature["papers"]]
    t = spec["treatment"]
    log.info("causal question %s: %s (%s) vs %s on %s, %s design, %d covariates; literature: %s, %d works",
             spec["question_id"], t["variable"], t["treated"], t["control"], spec["outcome"]["name"],
             spec["design"]["kind"], len(spec["covariates"]), literature["source"], len(literature["papers"]))
    from edm_ars.formulate.spec import how_chosen

    log.info("question: %s (%s; causal, %s design)", spec["question_id"],
             how_chosen(reg, smk.params.question or None, smk.params.prompt or None), design["kind"], extra=RESULT)
    write_json(smk.output.spec, spec)
    write_json(smk.output.literature, literature, "literature_context")


def _framing_context(spec: dict[str, Any], reg: Any) -> dict[str, str]:
    t, d = spec["treatment"], spec["design"]
    return {
        "dataset_title": str(reg.dataset.get("title", reg.name)),
        "question": spec["research_question"], "treatment": t["phrase"], "control": t["control_phrase"],
        "outcome": spec["outcome"]["label"], "design": d["kind"], "statement": d["statement"],
        "estimand": spec["estimand"]["statement"],
        "covariates": "\n".join(f"- {c['label']} ({c['wave']}): {c['rationale']}" for c in spec["covariates"])
        or "- (none)",
        "time_order": "\n".join(f"- {c['detail']}" for c in spec["time_order"]),
    }


def critique(smk: Any) -> None:
    """The Critic's causal checklist (edm_ars.causal.review); the verdict is computed in code."""
    from edm_ars.causal.review import review_causal

    _start_agent_outputs(smk)
    result = review_causal(read_json(smk.input.spec), read_json(smk.input.report), read_json(smk.input.results),
                           round=int(smk.wildcards.round), max_revisions=int(smk.params.max_revisions),
                           rubric=smk.input.rubric, force_revise=smk.params.force_revise or None,
                           force_rounds=int(smk.params.force_revise_rounds))
    log.info("round %s verdict %s; rerun from %s", result["round"], result["verdict"], result.get("rerun_from"))
    for item in result.get("checklist", []):
        log.info("  [%s] %s: %s", "ok" if item["passed"] else item["severity"], item["id"], item["detail"])
    write_json(smk.output.review, result, "review_report")
