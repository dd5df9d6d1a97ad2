"""Candidate studies drafted by a language model (branches=N with a model backend): one call with a diversity
instruction, every draft checked against the registry in code and de-duplicated by edm_ars.formulate.branches' stated
rule; where fewer than N usable drafts remain, the registry's own candidates fill the rest (and say so)."""

from __future__ import annotations

from typing import Any

from edm_ars.data.registry import Registry, is_excluded, is_temporally_valid
from edm_ars.formulate.branches import SAME_STUDY, distance, offline_candidates, pick_drafts
from edm_ars.formulate.model import registry_context
from edm_ars.formulate.spec import MAX_PREDICTORS, MIN_PREDICTORS, task_of

DRAFTS_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["drafts"],
    "properties": {"drafts": {"type": "array", "minItems": 1, "items": {
        "type": "object", "required": ["research_question", "outcome", "predictors"],
        "properties": {"research_question": {"type": "string", "minLength": 20}, "outcome": {"type": "string"},
                       "predictors": {"type": "array", "items": {"type": "string"}},
                       "description": {"type": "string"}}}}},
}


def check_draft(reg: Registry, draft: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """A usable candidate from a model's draft, or (None, why not). Predictors that break a rule are left out
    (and named); a draft left with too few predictors, or with an unusable outcome, is dropped."""
    outcome = draft["outcome"]
    if not reg.knows(outcome):
        return None, f"outcome {outcome} is not in the registry"
    try:
        task_of(reg, outcome)
    except Exception as exc:  # noqa: BLE001 - the reason is reported
        return None, str(exc)
    kept, dropped = [], []
    for name in dict.fromkeys(draft["predictors"]):
        if name == outcome or not reg.knows(name) or is_excluded(reg, name) \
                or not is_temporally_valid(reg, name, outcome):
            dropped.append(name)
        else:
            kept.append(name)
    if not MIN_PREDICTORS <= len(kept) <= MAX_PREDICTORS:
        return None, (f"{len(kept)} usable predictors (needs {MIN_PREDICTORS} to {MAX_PREDICTORS})"
                      + (f"; left out: {', '.join(dropped)}" if dropped else ""))
    base = next((q for q in reg.questions if q.get("outcome") == outcome), None)
    return {"question_id": base["id"] if base else "model", "variant": "model", "outcome": outcome,
            "outcome_label": (reg.variable(outcome) or {}).get("label", outcome), "predictors": kept,
            "research_question": " ".join(draft["research_question"].split()),
            "description": draft.get("description") or "drafted by the model",
            "source": "model", "left_out": dropped}, None


def draft_with_model(client: Any, prompts: dict[str, Any], reg: Registry, *, n: int, prompt: str | None,
                     question_id: str | None, earlier: list[dict[str, Any]]) -> dict[str, Any]:
    ctx = registry_context(reg)
    earlier_text = "\n".join(f"- {e.get('research_question')} (outcome {e.get('outcome')}; predictors "
                             f"{', '.join(e.get('predictors') or [])})" for e in earlier) or "- (none)"
    user = prompts["user"].format(prompt=prompt or "(none: choose questions the data set supports well)",
                                  questions=ctx["questions"], earlier=earlier_text, n=n)
    answer, _ = client.complete_json(prompts["system"].format(**ctx), [{"role": "user", "content": user}],
                                     tag="draft", schema=DRAFTS_SCHEMA)
    candidates, skipped = [], []
    for i, raw in enumerate(answer["drafts"], 1):
        cand, why = check_draft(reg, raw)
        if cand is None:
            skipped.append({"draft": {"model_draft": i, "outcome": raw.get("outcome")}, "reason": why})
        else:
            candidates.append(cand)
    fill = [c for c in offline_candidates(reg, prompt, question_id)
            if all(distance(c, m) >= SAME_STUDY for m in candidates)]
    drafts, dropped = pick_drafts(candidates + [dict(c, source="registry (filled in: fewer distinct model drafts "
                                                       "than branches)") for c in fill], n, earlier)
    skipped += dropped
    if len(drafts) < n:
        from edm_ars.core.errors import EdmArsError

        raise EdmArsError(f"branches={n}: only {len(drafts)} distinct candidate studies that the findings store "
                          "does not hold (from the model's drafts and the registry's questions); ask for fewer "
                          "branches or use another findings store (findings.store)")
    return {"drafts": drafts, "skipped": skipped, "candidates": len(candidates) + len(fill)}
