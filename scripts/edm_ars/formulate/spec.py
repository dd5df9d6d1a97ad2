"""ProblemFormulator: the spec gate, the offline formulator and the curated literature context."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import (
    Registry,
    early_warning_waves,
    find_question,
    is_excluded,
    is_temporally_valid,
    temporal_order_note,
    wave_of,
)
from edm_ars.data.registry_causal import question_task
from edm_ars.data.registry_rules import MIN_PREDICTORS
from edm_ars.formulate.bibliography import parse_bibtex

MAX_PREDICTORS, MIN_NOVELTY = 30, 3.0


def allowed_waves(spec: dict[str, Any], reg: Registry) -> list[str] | None:
    """The waves an early-warning study may draw predictors from: the specification's own record
    (`early_warning.waves`) and the registry question it answers (`question_id`), whichever restricts; None
    when neither marks the study as early warning."""
    marks = [early_warning_waves(spec)]
    qid = spec.get("question_id")
    marks += [early_warning_waves(q) for q in reg.questions if qid and q.get("id") == qid]
    marks = [m for m in marks if m is not None]
    if not marks:
        return None
    return [w for w in marks[0] if all(w in m for m in marks[1:])]


def validate_spec(spec: dict[str, Any], reg: Registry, data_columns: set[str] | None = None) -> list[str]:
    """Every violation of the registry's rules, each naming the variable (empty when the spec passes)."""
    violations = []
    allowed = allowed_waves(spec, reg)
    outcome = spec.get("outcome", {}).get("name")
    rec = reg.variable(outcome) if outcome else None
    if not outcome:
        violations.append("the specification names no outcome")
    elif rec is None:
        violations.append(f"outcome {outcome} is not a variable of the {reg.dataset.get('name')} registry")
    elif data_columns is not None:
        source = rec["derive"]["from"] if rec.get("derive") else outcome
        if source not in data_columns:
            violations.append(f"outcome {outcome}: column {source} is not in the data")
    predictors = [p.get("name") for p in spec.get("predictors", [])]
    n = len(predictors)
    if n < MIN_PREDICTORS or n > MAX_PREDICTORS:
        violations.append(f"{n} predictors; a specification needs {MIN_PREDICTORS} to {MAX_PREDICTORS}")
    dupes = sorted({p for p in predictors if predictors.count(p) > 1})
    if dupes:
        violations.append(f"predictors listed more than once: {dupes}")
    for name in predictors:
        if name == outcome:
            violations.append(f"predictor {name} is the outcome itself")
            continue
        if name in reg.id_columns:
            violations.append(f"predictor {name} is the identifier column (dataset.id_column): never a predictor")
            continue
        if is_excluded(reg, name):
            violations.append(f"predictor {name} is a Tier 3 variable (weights, IDs, flags): never a predictor")
            continue
        if not reg.knows(name) and (data_columns is None or name not in data_columns):
            violations.append(f"predictor {name} is neither in the registry nor in the data")
            continue
        if outcome and rec is not None and not is_temporally_valid(reg, name, outcome):
            pw, ow = wave_of(reg, name), wave_of(reg, outcome)
            kind = "same wave (leakage)" if pw == ow else "a later wave" if pw and ow else "an unknown wave"
            violations.append(f"predictor {name} ({pw}) does not strictly precede outcome {outcome} ({ow}): {kind}")
            continue
        if allowed is not None and wave_of(reg, name) not in allowed:
            violations.append(f"predictor {name} is from the {wave_of(reg, name) or 'unknown'} wave, but question "
                              f"{spec.get('question_id')} is an early-warning question restricted to the waves "
                              f"{allowed}")
    novelty = spec.get("novelty_score")
    if not isinstance(novelty, (int, float)) or novelty < MIN_NOVELTY:
        violations.append(f"novelty score {novelty} is under the minimum {MIN_NOVELTY:g}")
    return violations


def prompt_match(reg: Registry, prompt: str | None) -> dict[str, Any] | None:
    """The canonical question whose keywords best match the prompt (the first of equals), None when none does."""
    if not prompt or not reg.questions:
        return None
    words = set(re.findall(r"[a-z]+", prompt.lower()))
    text = prompt.lower()
    scored = []
    for q in reg.questions:
        score = sum(1 for k in q.get("keywords", []) if (k in words if " " not in k else k in text))
        scored.append((score, q))
    best = max(scored, key=lambda t: t[0])
    return best[1] if best[0] > 0 else None


def how_chosen(reg: Registry, question_id: str | None, prompt: str | None) -> str:
    """Why a run studies the question it does, for the console's result line: named by question=, the one the
    prompt matched, or the registry's default."""
    short = " ".join((prompt or "").split())
    short = short if len(short) <= 80 else short[:77] + "..."
    if question_id:
        return "named by question="
    if prompt and prompt_match(reg, prompt) is not None:
        return f"matched the prompt {short!r}"
    if prompt:
        return f"the registry's default question: the prompt {short!r} matched no question's keywords"
    return "the registry's default question: no prompt= or question= given"


def choose_question(reg: Registry, prompt: str | None) -> dict[str, Any]:
    """The canonical question whose keywords best match the prompt, else the default one."""
    matched = prompt_match(reg, prompt)
    if matched is not None:
        return matched
    for q in reg.questions:
        if q.get("default"):
            return q
    if not reg.questions:
        raise EdmArsError("the registry has no canonical questions for the offline formulator")
    return reg.questions[0]


def task_of(reg: Registry, outcome: str) -> str:
    typ = (reg.variable(outcome) or {}).get("type")
    if typ == "continuous":
        return "regression"
    if typ == "binary":
        return "binary_classification"
    raise EdmArsError(f"outcome {outcome} has type {typ}; the offline formulator handles binary and continuous")


def offline_spec(reg: Registry, *, prompt: str | None, question_id: str | None, round_: int,
                 revision_notes: list[str] | None = None) -> dict[str, Any]:
    """A research specification built by rule from a canonical question the registry supports."""
    q = find_question(reg, question_id) if question_id else choose_question(reg, prompt)
    if question_task(q) != "prediction":
        raise EdmArsError(f"question {q['id']} is a causal question: the causal study (rules/causal.smk, "
                          "edm_ars.causal.spec) writes its specification, not the prediction formulator")
    outcome = q["outcome"]
    orec = reg.variable(outcome)
    if orec is None:
        raise EdmArsError(f"canonical question {q['id']}: outcome {outcome} is not in the registry")
    predictors = []
    allowed = early_warning_waves(q)
    for name, rationale in q["predictors"].items():
        # The canonical lists are curated, but the rules are enforced here as well: time order, and the waves
        # an early-warning question allows.
        if is_excluded(reg, name) or not is_temporally_valid(reg, name, outcome):
            continue
        if allowed is not None and wave_of(reg, name) not in allowed:
            continue
        rec = reg.variable(name) or {}
        predictors.append({"name": name, "label": rec.get("label", name), "wave": wave_of(reg, name),
                           "rationale": rationale or ""})  # '' (or left empty): the paper states none
    subgroups = [s for s in q.get("subgroups", reg.protected_default) if reg.knows(s)]
    limitations = ["Predictive associations only: the design supports no causal interpretation of any predictor."]
    limitations += reg.limitations
    if (orec.get("pct_missing") or 0) > 20:
        why = reg.dataset.get("outcome_missing_reason")
        units = reg.prose["units"]
        limitations.append(f"The outcome is missing for {orec['pct_missing']}% of {units} in the full file"
                           + (f" ({why})" if why else "")
                           + f"; the analytic sample is restricted to {units} with a recorded outcome.")
    spec = {
        "dataset": reg.name,
        "question_id": q["id"],
        "research_question": " ".join(q["question"].split()),
        "outcome": {"name": outcome, "label": orec.get("label", outcome), "wave": orec.get("wave"),
                    "type": orec.get("type"), "positive_label": None},
        "task": task_of(reg, outcome),
        "predictors": predictors,
        "population": " ".join(q.get("population", "").split()),
        "subgroups": subgroups,
        "expected_contribution": (
            f"A reproducible, leakage-safe benchmark of models predicting {orec.get('label', outcome)} from "
            + ("strictly earlier waves" if reg.has_waves else
               f"background and context variables recorded with the outcome in each {reg.repeated['unit']}'s records"
               if reg.repeated else "background and context variables of one cross-section")
            + ", with interval estimates, interpretation of the strongest predictors"
            + (" and a subgroup audit across " + ", ".join(subgroups) if subgroups else "") + "."),
        "limitations": limitations,
        # Stated rule: a canonical question scores 3; a subgroup audit on two or more protected
        # attributes adds 0.5; predictors from three or more earlier waves add 0.5.
        "novelty_score": 3.0 + (0.5 if len(subgroups) >= 2 else 0.0)
        + (0.5 if len({p["wave"] for p in predictors}) >= 3 else 0.0),
        "prompt": prompt or None,
        "backend": "offline",
        "round": round_,
        "revision_notes": list(revision_notes or []),
        "topics": list(q.get("topics", [])),
    }
    if allowed is not None:
        spec["early_warning"] = {"waves": list(allowed)}
    note = temporal_order_note(reg)
    if note:
        spec["temporal_order_note"] = note
    return spec


# Method topics every study cites from the curated bibliography; the registry adds the data set's topic
# (dataset.literature.topic) and the question's (questions[].topics).
CORE_TOPICS = ["edm", "fairness", "shap", "xgboost", "random_forest", "missing_data", "leakage",
               "bootstrap", "roc", "software", "stability", "linear"]


def literature_topics(reg: Registry, question_id: str | None) -> list[str]:
    """The curated-bibliography topics of a study: the question's, the data set's and the core methods'."""
    topics = []
    for q in reg.questions:
        if q.get("id") == question_id:
            topics += list(q.get("topics", []))
    dataset_topic = (reg.dataset.get("literature") or {}).get("topic")
    return topics + ([dataset_topic] if dataset_topic else []) + CORE_TOPICS


def registry_finding_keys(reg: Registry) -> list[str]:
    """The citation keys of the published findings the registry lists (dataset.findings), in order, once each."""
    return list(dict.fromkeys(f["cite"] for f in reg.dataset.get("findings") or [] if isinstance(f, dict)
                              and f.get("cite")))


def curated_literature(bib_path: str | Path, topics_path: str | Path, topics: list[str],
                       note: str | None = None, keys: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The literature context from the shipped, verified bibliography, chosen by topic, with the works `keys` names
    whatever their topics (the sources of the registry's published findings, registry_finding_keys)."""
    entries = {e.key: e for e in parse_bibtex(Path(bib_path).read_text(encoding="utf-8"))}
    works = yaml.safe_load(Path(topics_path).read_text())["works"]
    wanted = list(topics)
    papers = []
    for key, info in works.items():
        if key not in entries:
            raise EdmArsError(f"{topics_path}: {key} is not an entry of {bib_path}")
        if not set(info["topics"]) & set(wanted) and key not in keys:
            continue
        e = entries[key]
        papers.append({
            "key": key, "title": e.fields.get("title", "").replace("{", "").replace("}", ""),
            "authors": e.authors, "year": e.year, "venue": e.venue, "doi": e.fields.get("doi"),
            "url": e.fields.get("url"), "topics": info["topics"], "caveat": info.get("caveat"),
            "status": "VERIFIED", "bibtex": e.text,
        })
    return {
        "source": "curated",
        "retrieval_failed": note is not None,
        "retrieval_note": note or ("Offline backend: references come from the curated bibliography shipped with "
                                   "EDM-ARS, each field confirmed in a public source; no literature search was run."),
        "papers": papers,
    }
