"""Breadth: several candidate studies of one data set (branches), drafted distinct from one another and from the
studies a findings store already holds, ranked by a stated rule once reviewed.

A study's identity, for de-duplication, novelty and diversity, is its outcome and its predictor set:

    distance(a, b) = 0.5 * [outcome(a) != outcome(b)] + 0.5 * (1 - |P(a) & P(b)| / |P(a) | P(b)|)

(0 for the same study, 1 for a different outcome from disjoint predictors). Two studies closer than SAME_STUDY
are the same study: a later draft is dropped as a duplicate, and a draft that close to a stored study counts as
already done.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import (
    Registry,
    find_question,
    wave_of,
)
from edm_ars.data.registry_causal import question_task
from edm_ars.data.registry_rules import predictor_shortfall, usable_predictors
from edm_ars.formulate.spec import MIN_PREDICTORS, choose_question, task_of

SAME_STUDY = 0.15
DEDUP_RULE = (f"two candidate studies are the same study when their distance is under {SAME_STUDY:g} "
              "(distance = 0.5 x [different outcome] + 0.5 x (1 - Jaccard overlap of the predictor sets)); "
              "a later draft is dropped as a duplicate of an earlier one, and a draft that close to a study in the "
              "findings store from another run is dropped as already done")
SELECTION_RULE = ("verdict (PASS before UNVERIFIED before REVISE before ABORT), then the Critic's overall score, then the evidence "
                  "strength of the claims (the share the results debate supported), then novelty against earlier "
                  "studies (distance to the nearest study in the findings store), then the branch number")
VERDICT_ORDER = {"PASS": 0, "UNVERIFIED": 1, "REVISE": 2, "ABORT": 3}


# ---- identity and distance ----------------------------------------------------------------------


def distance(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Distance of two studies given as {outcome, predictors} (names)."""
    pa, pb = set(a["predictors"]), set(b["predictors"])
    union = pa | pb
    jaccard = len(pa & pb) / len(union) if union else 1.0
    return round(0.5 * float(a["outcome"] != b["outcome"]) + 0.5 * (1.0 - jaccard), 4)


def diversity(studies: list[dict[str, Any]]) -> float | None:
    """Mean pairwise distance of the candidate studies (None for fewer than two)."""
    pairs = list(itertools.combinations(studies, 2))
    if not pairs:
        return None
    return round(sum(distance(a, b) for a, b in pairs) / len(pairs), 4)


def identity(spec: dict[str, Any]) -> dict[str, Any]:
    """{outcome, predictors} of a research specification."""
    return {"outcome": spec["outcome"]["name"], "predictors": sorted(p["name"] for p in spec["predictors"])}


# ---- offline drafts: the registry's questions and stated variations of them -------------------


def _usable(reg: Registry, q: dict[str, Any]) -> list[str]:
    """The question's predictors that the rules allow (exclusions, time order, early-warning waves): one rule with
    `validate-registry` (data/registry_rules.py)."""
    return usable_predictors(reg, q)[0]


def _no_candidate_reasons(reg: Registry) -> list[str]:
    """Why each question of the registry yields no candidate study: too few usable predictors (naming those counted
    and why the others are not usable), an outcome type the formulator cannot model, or not a prediction."""
    reasons = []
    for q in reg.questions:
        shortfall = predictor_shortfall(reg, q)
        if question_task(q) != "prediction":
            reasons.append(f"question {q.get('id', '?')}: task {question_task(q)!r}, not a prediction question")
        elif shortfall:
            reasons.append(shortfall)
        else:
            try:
                task_of(reg, q["outcome"])
            except EdmArsError as exc:
                reasons.append(f"question {q.get('id', '?')}: {exc}")
    return reasons or ["the registry has no question (questions: [])"]


def _label(reg: Registry, name: str) -> str:
    """A variable's label inside a sentence (codebook prefixes such as 'X1 ' removed, lower-case first letter)."""
    from edm_ars.core.text import clean_label, lc_first

    return lc_first(clean_label((reg.variable(name) or {}).get("label", name)))


def _subgroup_clause(reg: Registry, q: dict[str, Any]) -> str:
    groups = [s for s in q.get("subgroups", reg.protected_default) if reg.knows(s)]
    if not groups:
        return ""
    return (", and is the prediction equally accurate across the groups of "
            + ", ".join(_label(reg, s) for s in groups))


def _wave_label(reg: Registry, key: str) -> str:
    try:
        w = reg.wave(key)
    except KeyError:
        return key
    return w.get("label") or w.get("prose") or key


def _draft(reg: Registry, q: dict[str, Any], variant: str, predictors: list[str], question: str,
           description: str, waves: list[str] | None = None) -> dict[str, Any]:
    out = {"question_id": q["id"], "variant": variant, "outcome": q["outcome"],
           "outcome_label": _label(reg, q["outcome"]), "predictors": predictors,
           "research_question": question, "description": description, "source": "registry"}
    if waves is not None:
        out["early_warning_waves"] = waves
    return out


def question_variants(reg: Registry, q: dict[str, Any]) -> list[dict[str, Any]]:
    """A registry question as written, then (where they differ and keep at least MIN_PREDICTORS predictors) the
    same outcome from the earliest wave's predictors only, and without the largest group of predictors."""
    usable = _usable(reg, q)
    if question_task(q) != "prediction" or len(usable) < MIN_PREDICTORS:
        return []
    try:
        task_of(reg, q["outcome"])
    except EdmArsError:
        return []
    outcome = _label(reg, q["outcome"])
    subgroups = _subgroup_clause(reg, q)
    out = [_draft(reg, q, "as_registered", usable, " ".join(q["question"].split()),
                  f"the registry's question {q['id']} as written")]
    waves = sorted({wave_of(reg, p) for p in usable if wave_of(reg, p)}, key=lambda w: reg.wave_order.get(w, 0))
    if len(waves) >= 2:
        first = waves[0]
        early = [p for p in usable if wave_of(reg, p) == first]
        if len(early) >= MIN_PREDICTORS:
            out.append(_draft(
                reg, q, "earliest_wave", early,
                f"How accurately can {outcome} be predicted from the {len(early)} predictors measured in the "
                f"{_wave_label(reg, first)} wave alone{subgroups}?",
                f"question {q['id']} with the predictors of its earliest wave ({first}) only", waves=[first]))
    groups = Counter((reg.variable(p) or {}).get("group") for p in usable)
    groups.pop(None, None)
    if len(groups) >= 2:
        largest, _ = max(groups.items(), key=lambda kv: (kv[1], kv[0]))
        rest = [p for p in usable if (reg.variable(p) or {}).get("group") != largest]
        phrase = (reg.prose.get("group_phrases") or {}).get(largest) or f"the {largest.replace('_', ' ')} variables"
        if len(rest) >= MIN_PREDICTORS:
            out.append(_draft(
                reg, q, f"without_{largest}", rest,
                f"How accurately can {outcome} be predicted without the predictors that describe {phrase}, from "
                f"the {len(rest)} remaining predictors{subgroups}?",
                f"question {q['id']} without its largest predictor group ({largest})"))
    return out


def offline_candidates(reg: Registry, prompt: str | None, question_id: str | None) -> list[dict[str, Any]]:
    """Every candidate study the registry supports, in a fixed order: the configured (or default) question as
    written first, the other questions as written, then each question's variations in the same order."""
    first = find_question(reg, question_id) if question_id else choose_question(reg, prompt)
    ordered = [first] + [q for q in reg.questions if q is not first]
    variants = [question_variants(reg, q) for q in ordered]
    return [v[0] for v in variants if v] + [d for v in variants for d in v[1:]]


# ---- drafting: distinct from one another and from the store --------------------------------------


def nearest(study: dict[str, Any], others: list[dict[str, Any]]) -> tuple[float, dict[str, Any] | None]:
    best: tuple[float, dict[str, Any] | None] = (1.0, None)
    for other in others:
        d = distance(study, other)
        if d < best[0]:
            best = (d, other)
    return best


def pick_drafts(candidates: list[dict[str, Any]], n: int, earlier: list[dict[str, Any]],
                avoid_earlier: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The first n candidates that are neither duplicates of an earlier pick nor (when avoid_earlier) studies the
    store already holds; returns (drafts, skipped with reasons). Each draft states its novelty against the store."""
    drafts: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for cand in candidates:
        if len(drafts) == n:
            break
        d_pick, twin = nearest(cand, drafts)
        if twin is not None and d_pick < SAME_STUDY:
            skipped.append({"draft": _short(cand), "reason": f"duplicate of branch {twin['branch']} "
                                                              f"(distance {d_pick:.2f} < {SAME_STUDY:g})"})
            continue
        d_old, old = nearest(cand, earlier)
        if old is not None and d_old < SAME_STUDY and avoid_earlier:
            skipped.append({"draft": _short(cand), "reason": f"already done: {_stored_name(old)} in the findings "
                                                              f"store (distance {d_old:.2f} < {SAME_STUDY:g})"})
            continue
        novelty = {"nearest_distance": d_old if old is not None else None,
                   "nearest": _stored_name(old) if old is not None else None}
        if old is None:
            novelty["statement"] = "no earlier study of this data set in the findings store"
        elif d_old < SAME_STUDY:
            novelty["statement"] = (f"repeats {_stored_name(old)} from the findings store (distance {d_old:.2f}); "
                                    "run as configured")
        else:
            novelty["statement"] = f"nearest earlier study: {_stored_name(old)} (distance {d_old:.2f})"
        drafts.append(dict(cand, branch=len(drafts) + 1, novelty=novelty))
    return drafts, skipped


def _short(cand: dict[str, Any]) -> dict[str, Any]:
    return {k: cand[k] for k in ("question_id", "variant", "outcome", "source") if k in cand}


def _stored_name(entry: dict[str, Any]) -> str:
    return f"'{entry.get('question_id')}/{entry.get('variant')}' (outcome {entry.get('outcome')})"


def draft_offline(reg: Registry, *, n: int, prompt: str | None, question_id: str | None,
                  earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """The offline drafts: one configured study (n = 1, stated against the store but never replaced), or the
    first n distinct candidates the store does not hold."""
    candidates = offline_candidates(reg, prompt, question_id)
    if not candidates:
        raise EdmArsError(f"the registry of {reg.name} supports no candidate study (no prediction question with "
                          f"at least {MIN_PREDICTORS} usable predictors and a binary or continuous outcome): "
                          + "; ".join(_no_candidate_reasons(reg))
                          + ". `edm-ars validate-registry REG.yaml --data DATA.csv` checks this before a run")
    if n == 1:
        drafts, skipped = pick_drafts(candidates[:1], 1, earlier, avoid_earlier=False)
        drafts[0]["source"] = "configured"
    else:
        drafts, skipped = pick_drafts(candidates, n, earlier)
    if len(drafts) < n:
        raise EdmArsError(
            f"branches={n}: the registry of {reg.name} supports only {len(drafts)} candidate studies that are "
            f"distinct from one another and not already in the findings store ({len(candidates)} drafted, "
            f"{len(skipped)} dropped: " + "; ".join(s["reason"] for s in skipped[:4])
            + ("; ..." if len(skipped) > 4 else "") + "); ask for fewer branches, add questions to the "
            "registry, or use another findings store (findings.store)")
    return {"drafts": drafts, "skipped": skipped, "candidates": len(candidates)}


# ---- the findings store ---------------------------------------------------------------------------


def findings_store_path(configured: str, lessons_store: str | Path) -> Path:
    """findings.store, else findings.jsonl beside the lessons store."""
    return Path(configured) if configured else Path(lessons_store).with_name("findings.jsonl")


def load_findings(path: str | Path, dataset: str, data_sha256: str | None = None,
                  workdir: str | None = None) -> list[dict[str, Any]]:
    """The stored studies of one data set (its name and, when given, the same rows: the raw file's SHA-256), except
    those recorded from `workdir` (this run's own branches)."""
    import json

    path = Path(path)
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise EdmArsError(f"findings store {path}, line {n}: not JSON ({exc}); fix or remove the line") from exc
        if entry.get("dataset") != dataset or (data_sha256 and entry.get("data_sha256") != data_sha256):
            continue
        if workdir is None or entry.get("workdir") != workdir:
            out.append(entry)
    return out


def record_findings(path: str | Path, entries: list[dict[str, Any]]) -> int:
    """Add a run's studies to the store, replacing those recorded before from the same folder and branch;
    returns how many entries the store holds for the run."""
    import json

    from edm_ars.core.artifacts import atomic_write_text

    path = Path(path)
    keep = []
    if path.exists():
        mine = {(e["workdir"], e["dataset"], e["branch"]) for e in entries}
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    entry = json.loads(line)
                except ValueError:
                    keep.append(line)
                    continue
                if (entry.get("workdir"), entry.get("dataset"), entry.get("branch")) not in mine:
                    keep.append(line)
    lines = keep + [json.dumps(e, sort_keys=True) for e in entries]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "\n".join(lines) + "\n")
    return len(entries)


# ---- selection ----------------------------------------------------------------------------------


def evidence_strength(claims: dict[str, Any]) -> float:
    """The share of the results debate's claims that were supported."""
    counts = claims.get("counts") or {}
    total = sum(counts.values())
    return round(counts.get("supported", 0) / total, 4) if total else 0.0


def primary(results: dict[str, Any]) -> dict[str, Any]:
    """The selected model's primary held-out metric with its interval."""
    metric, best = results["primary_metric"], results["best_model"]
    model = results["models"][best]
    ci = (model.get("ci") or {}).get(metric) or [None, None]
    return {"metric": metric, "model": best, "value": model["metrics"][metric], "ci": list(ci)}


def rank(studies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reviewed branches in the order of SELECTION_RULE (best first)."""
    def key(s: dict[str, Any]) -> tuple:
        novelty = s["novelty"] if s["novelty"] is not None else 1.0
        return (VERDICT_ORDER.get(s["verdict"], 3), -s["score"], -s["evidence"], -novelty, s["branch"])

    return sorted(studies, key=key)


def why_not(study: dict[str, Any], chosen: dict[str, Any]) -> str:
    """The first criterion of the rule on which a branch lost to the chosen one."""
    if study["verdict"] != chosen["verdict"]:
        return f"verdict {study['verdict']} (chosen: {chosen['verdict']})"
    if study["score"] != chosen["score"]:
        return f"lower review score ({study['score']:g} against {chosen['score']:g})"
    if study["evidence"] != chosen["evidence"]:
        return (f"weaker evidence ({study['evidence']:.0%} of claims supported against "
                f"{chosen['evidence']:.0%})")
    if study["novelty"] != chosen["novelty"]:
        return "less novel against earlier studies"
    return "tied on every criterion; the lower branch number is chosen"


def select(studies: list[dict[str, Any]]) -> dict[str, Any]:
    ranked = rank(studies)
    chosen = ranked[0]
    for s in ranked:
        s["rank"] = ranked.index(s) + 1
        s["why_not_chosen"] = None if s is chosen else why_not(s, chosen)
    return {"rule": SELECTION_RULE, "chosen": chosen["branch"],
            "branches": sorted(ranked, key=lambda s: s["branch"])}


# ---- a branch's specification ---------------------------------------------------------------------


def apply_draft(spec: dict[str, Any], draft: dict[str, Any]) -> dict[str, Any]:
    """The offline specification of a draft's question, narrowed to the draft: its predictors (in the question's
    order, with their rationales), its research question, its waves; with the branch and its novelty stated."""
    keep = set(draft["predictors"])
    out = dict(spec, predictors=[p for p in spec["predictors"] if p["name"] in keep],
               research_question=draft["research_question"])
    if draft.get("early_warning_waves"):
        out["early_warning"] = {"waves": list(draft["early_warning_waves"])}
    return with_branch(out, draft)


def with_branch(spec: dict[str, Any], draft: dict[str, Any]) -> dict[str, Any]:
    return dict(spec, branch={"branch": draft["branch"], "variant": draft["variant"], "source": draft["source"],
                              "description": draft["description"], "novelty": draft["novelty"]["statement"]})


def draft_prompt(draft: dict[str, Any], prompt: str | None) -> str:
    """The research prompt a model formulator gets for a drafted branch."""
    return ((f"{prompt}\n\n" if prompt else "")
            + f"Formulate this candidate study: {draft['research_question']} Outcome: {draft['outcome']}. "
            f"Predictors: {', '.join(draft['predictors'])}. ({draft['description']})")
