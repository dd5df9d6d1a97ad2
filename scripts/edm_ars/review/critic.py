"""Critic: the rubric as data, the running of its code checks, dimension scores and the verdict computed by rule.

The rubric (config/rubric.yaml) lists about thirty items in four weighted dimensions. Items checked in
code run first, as small pure functions registered by name in edm_ars.review.checks.CHECKS, before any
model reads anything. The offline Critic (:func:`review`) scores the code issues; the model Critic
(edm_ars.review.model_critic.review_with_model) adds a model's reading of the artifacts (the rubric's `model`
items) and merges its issues with the code's. Either way the verdict is computed in code by
:func:`compute_verdict`: a model's verdict is advisory, and every disagreement is written to the notes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_yaml
from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import Registry
from edm_ars.review import actions as act
from edm_ars.review.checks import CHECKS, Artifacts

STAGES = ["formulate", "engineer", "analyze"]  # the stages a review can re-run, in order
TARGETS = [*STAGES, "write"]  # write-targeted issues go to the Writer and re-run nothing
SEVERITIES = ("critical", "major", "minor")
VERDICTS = ("PASS", "REVISE", "ABORT")  # a model Critic's verdicts, and the rubric's
#: the verdict of a REVISE that no revision can act on (no round left, or no stage to re-run): the paper is written
#: flagged UNVERIFIED. The review's `unverified` flag is true exactly when its verdict is UNVERIFIED.
UNVERIFIED = "UNVERIFIED"
DIMENSIONS = {"problem_formulation": 0.25, "data_preparation": 0.25, "analysis": 0.30,
              "substantive_validity": 0.20}
STAGE_DIMENSION = {"formulate": "problem_formulation", "engineer": "data_preparation", "analyze": "analysis",
                   "write": "substantive_validity"}
PENALTY = {"critical": 4.0, "major": 2.0, "minor": 0.5}
START_SCORE = 10.0
PASS_SCORE = 7.0
MAX_MAJOR = 2
DEFAULT_RUBRIC = Path(__file__).resolve().parents[3] / "config" / "rubric.yaml"


# ==================================================================================== the rubric
def load_rubric(path: str | Path | None = None) -> dict[str, Any]:
    """Read and check a rubric file; returns {version, path, dimensions {name: weight}, penalties, start, items}."""
    path = Path(path) if path is not None else DEFAULT_RUBRIC
    data = read_yaml(path, "rubric", EdmArsError)
    if not isinstance(data, dict) or not isinstance(data.get("items"), list) or not isinstance(
            data.get("dimensions"), dict):
        raise EdmArsError(f"{path}: a rubric needs a mapping `dimensions` and a list `items`")
    dims = {name: float(d["weight"] if isinstance(d, dict) else d) for name, d in data["dimensions"].items()}
    scoring = data.get("scoring") or {}
    rubric = {"version": data.get("version", 1), "path": str(path), "dimensions": dims,
              "descriptions": {n: (d.get("description", "") if isinstance(d, dict) else "")
                               for n, d in data["dimensions"].items()},
              "penalties": {**PENALTY, **{k: float(v) for k, v in (scoring.get("penalties") or {}).items()}},
              "start": float(scoring.get("start", START_SCORE)), "items": data["items"]}
    problems = rubric_problems(rubric)
    if problems:
        raise EdmArsError(f"{path}: the rubric is not valid:\n" + "\n".join(f"  - {p}" for p in problems))
    return rubric


def rubric_problems(rubric: dict[str, Any]) -> list[str]:
    """Everything wrong with a parsed rubric (empty when it is usable)."""
    problems = []
    weights = rubric["dimensions"]
    if not math.isclose(sum(weights.values()), 1.0, abs_tol=1e-6):
        problems.append(f"dimension weights sum to {sum(weights.values()):g}, not 1")
    seen: set[str] = set()
    for n, item in enumerate(rubric["items"]):
        where = f"item {n + 1} ({item.get('id', '?') if isinstance(item, dict) else item!r})"
        if not isinstance(item, dict):
            problems.append(f"{where}: not a mapping")
            continue
        missing = [k for k in ("id", "dimension", "description", "severity", "check", "target_stage",
                               "recommendation") if not item.get(k)]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
        if item.get("id") in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(item.get("id"))
        if item.get("dimension") not in weights:
            problems.append(f"{where}: unknown dimension {item.get('dimension')!r}")
        if item.get("severity") not in SEVERITIES:
            problems.append(f"{where}: severity must be one of {', '.join(SEVERITIES)}")
        if item.get("target_stage") not in TARGETS:
            problems.append(f"{where}: target_stage must be one of {', '.join(TARGETS)}")
        if item.get("check") == "code":
            if item.get("function") not in CHECKS:
                problems.append(f"{where}: unknown check function {item.get('function')!r}")
        elif item.get("check") != "model":
            problems.append(f"{where}: check must be code or model")
        if item.get("unfixable") and item.get("severity") != "critical":
            problems.append(f"{where}: only a critical item can be unfixable")
    return problems


def _rubric(rubric: dict[str, Any] | str | Path | None) -> dict[str, Any]:
    return rubric if isinstance(rubric, dict) else load_rubric(rubric)


def items_of(rubric: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [i for i in rubric["items"] if i["check"] == check]


# ==================================================================================== running the code checks
def _issue(id_: str, severity: str, dimension: str, stage: str, description: str, recommendation: str,
           unfixable: bool = False, source: str = "code", actions: tuple | list = (),
           caps: bool = False) -> dict[str, Any]:
    issue = {"id": id_, "severity": severity, "category": dimension, "target_stage": stage,
             "description": description, "recommendation": recommendation, "unfixable": unfixable,
             "source": source, "actions": [dict(a, issue=a.get("issue") or id_) for a in actions]}
    if caps:
        issue["caps_verdict"] = True
    return issue


def run_checks(rubric: dict[str, Any], artifacts: Artifacts, overrides: dict[str, Any] | None = None
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every code item of the rubric; returns (checks, issues). `overrides` replace item parameters of the
    same name (e.g. min_models from the workflow's configuration)."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    checks, issues = [], []
    for item in items_of(rubric, "code"):
        params = dict(item.get("params") or {})
        params.update({k: v for k, v in overrides.items() if k in params})
        f = CHECKS[item["function"]](artifacts, params)
        severity = f.severity or item["severity"]
        record = {"id": item["id"], "function": item["function"], "passed": f.passed, "detail": f.detail,
                  "severity": severity}
        if f.passed is None:
            record.update(skipped=True, message=f.message)
        checks.append(record)
        if f.passed is False:
            record["message"] = f.message
            issues.append(_issue(item["id"], severity, item["dimension"], item["target_stage"],
                                 f.message or item["description"], item["recommendation"],
                                 unfixable=bool(item.get("unfixable")) and severity == "critical",
                                 actions=f.actions, caps=bool(item.get("caps_verdict"))))
    return checks, issues


def unrevisable(issues: list[dict[str, Any]], spec: dict[str, Any], reg: Registry | None) -> list[dict[str, Any]]:
    """The issues, with those whose formulate actions would leave a specification the gate refuses (e.g. dropping a
    leaking predictor from a study of 3 predictors, where 3 are needed) made unfixable and critical, without
    those actions and naming why: the study ends through the abort report (ABORT) instead of a revision round
    whose formulate job fails (edm_ars.review.actions.spec_problems_after)."""
    if reg is None:
        return issues
    asked = [a for i in issues for a in i.get("actions") or [] if a.get("stage") == "formulate"]
    left = act.spec_problems_after(spec, asked, reg) if asked else []
    if not left:
        return issues
    out = []
    for i in issues:
        mine = [a for a in i.get("actions") or [] if a.get("stage") == "formulate"]
        if not mine:
            out.append(i)
            continue
        what = ", ".join(act.describe(a) for a in mine)
        out.append(dict(i, severity="critical", unfixable=True,
                        actions=[a for a in i.get("actions") or [] if a.get("stage") != "formulate"],
                        description=f"{i['description'].rstrip()} No revision can remove it: {what} would leave "
                                    f"a specification the gate refuses ({'; '.join(left)}), so the study ends "
                                    "here."))
    return out


def rubric_checks(spec: dict[str, Any], report: dict[str, Any], results: dict[str, Any], reg: Registry | None,
                  *, min_models: int | None = None, min_analytic_n: int | None = None,
                  min_test_n: int | None = None, rubric: dict[str, Any] | str | Path | None = None,
                  claims: dict[str, Any] | None = None, manifest: dict[str, Any] | None = None,
                  dgp: dict[str, Any] | None = None) -> tuple[list[dict], list[dict]]:
    """Run the code-checked rubric items; return (checks, issues)."""
    return run_checks(_rubric(rubric), Artifacts(spec, report, results, reg, claims=claims, manifest=manifest, dgp=dgp),
                      {"min_models": min_models, "min_analytic_n": min_analytic_n, "min_test_n": min_test_n})


# ==================================================================================== scores and verdict
def dimension_scores(issues: list[dict[str, Any]], weights: dict[str, float] | None = None,
                     penalties: dict[str, float] | None = None, start: float = START_SCORE
                     ) -> tuple[dict[str, float], float]:
    """Each dimension starts at `start` and loses its issues' penalties (never below 0); overall = weighted sum."""
    weights, penalties = weights or DIMENSIONS, penalties or PENALTY
    scores = {d: float(start) for d in weights}
    for i in issues:
        d = i.get("category")
        if d not in scores:
            d = STAGE_DIMENSION.get(i.get("target_stage"), "analysis")
            d = d if d in scores else next(iter(scores))
        scores[d] = max(0.0, scores[d] - penalties[i["severity"]])
    overall = round(sum(scores[d] * w for d, w in weights.items()), 2)
    return scores, overall


def _not_pass_reasons(critical: list[dict], major: list[dict], overall: float, forced: bool,
                      capping: list[dict] | None = None) -> list[str]:
    reasons = []
    if capping:
        reasons.append(f"issue(s) that cap the verdict {', '.join(i['id'] for i in capping)}")
    if critical:
        reasons.append(f"critical issue(s) {', '.join(i['id'] for i in critical)}")
    if len(major) > MAX_MAJOR:
        reasons.append(f"{len(major)} major issues (at most {MAX_MAJOR})")
    if overall < PASS_SCORE:
        reasons.append(f"overall score {overall:g} under {PASS_SCORE:g}")
    if forced:
        reasons.append("a revision forced by configuration")
    return reasons


def compute_verdict(issues: list[dict[str, Any]], overall: float, *, round_: int, max_revisions: int,
                    model_verdict: str | None = None, forced: bool = False) -> dict[str, Any]:
    """PASS iff no critical issue, no issue that caps the verdict (`caps_verdict`: a failed data check, a
    leakage flag, an undisclosed generated data set, an inconsistent claim, whatever its severity), at most two
    major and overall >= 7; ABORT only for an unfixable critical issue; REVISE otherwise. REVISE with no rounds
    left (round >= max_revisions), or capped by an issue only the Writer can answer (too few test rows or clusters:
    no revision lifts it), becomes UNVERIFIED (`unverified` true): the paper is written and flagged. A
    model's verdict is advisory: a disagreement is recorded in the notes, never followed."""
    critical = [i for i in issues if i["severity"] == "critical"]
    major = [i for i in issues if i["severity"] == "major"]
    unfixable = [i for i in critical if i.get("unfixable")]
    capping = [i for i in issues if i.get("caps_verdict")]
    reasons = _not_pass_reasons(critical, major, overall, forced, capping)
    if unfixable:
        verdict = "ABORT"
    elif not reasons:
        verdict = "PASS"
    else:
        verdict = "REVISE"
    notes = []
    if model_verdict and model_verdict != verdict:
        if model_verdict == "ABORT":
            notes.append(f"model verdict ABORT not honoured: no unfixable critical issue; the rubric verdict is "
                         f"{verdict}")
        elif model_verdict == "PASS":
            why = ("unfixable critical issue(s) " + ", ".join(i["id"] for i in unfixable)) if unfixable else \
                "; ".join(reasons)
            notes.append(f"model verdict PASS overruled by the rubric verdict {verdict}: {why}")
        else:
            why = ("unfixable critical issue(s) " + ", ".join(i["id"] for i in unfixable)) if unfixable else \
                f"no critical issue, {len(major)} major, overall {overall:g} >= {PASS_SCORE:g}"
            notes.append(f"model verdict {model_verdict} overruled by the rubric verdict {verdict}: {why}")
    rubric_verdict, unverified = verdict, False
    lasting = [i["id"] for i in capping if i.get("target_stage") == "write"]
    if verdict == "REVISE" and lasting:
        # a cap no analysis stage can lift (too few test rows or clusters): a revision round would redo the study
        # and meet the same cap, so the paper is written now, flagged
        notes.append(f"REVISE capped by {', '.join(lasting)}, which no revision can lift: the paper is written "
                     "and flagged UNVERIFIED without a revision round")
        verdict, unverified = UNVERIFIED, True
    elif verdict == "REVISE" and round_ >= max_revisions:
        notes.append(f"REVISE in round {round_} with no revision rounds left (max {max_revisions}): "
                     "the paper is written and flagged UNVERIFIED")
        verdict, unverified = UNVERIFIED, True
    return {"verdict": verdict, "rubric_verdict": rubric_verdict, "unverified": unverified, "notes": notes}


def rerun_from(issues: list[dict[str, Any]], actions: list[dict[str, Any]] | None = None) -> str | None:
    """The earliest stage any issue or revision action targets (formulate < engineer < analyze): it and
    everything downstream re-run. Write-targeted issues re-run nothing."""
    targets = [i["target_stage"] for i in issues if i.get("target_stage") in STAGES]
    targets += [a["stage"] for a in actions or [] if a.get("stage") in STAGES]
    return min(targets, key=STAGES.index) if targets else None


def revision_actions(issues: list[dict[str, Any]], extra: list[dict[str, Any]] | None = None
                     ) -> list[dict[str, Any]]:
    """The structured actions of the issues, then any extra (a model Critic's validated ones), no repeats."""
    return act.unique([a for i in issues for a in i.get("actions") or []] + list(extra or []))


def _instructions(issues: list[dict[str, Any]], extra: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for stage, text in [(i["target_stage"], i.get("recommendation")) for i in issues] + [
            (s, t) for s, texts in (extra or {}).items() for t in texts]:
        if text and text not in out.setdefault(stage, []):
            out[stage].append(text)
    return {s: v for s, v in out.items() if v}


def _assemble(round_: int, issues: list[dict[str, Any]], checks: list[dict[str, Any]], scores: dict[str, float],
              overall: float, decision: dict[str, Any], *, forced: bool, backend: str, max_revisions: int,
              model_verdict: str | None = None, notes: list[str] | None = None,
              extra_instructions: dict[str, list[str]] | None = None,
              extra_actions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The review: the verdict's consequences (re-run stage, abort reason, write notes) and every field."""
    notes = list(notes or []) + decision["notes"]
    verdict, unverified = decision["verdict"], decision["unverified"]
    instructions = _instructions(issues, extra_instructions)
    actions = revision_actions(issues, extra_actions)
    for a in [a for a in actions if a.get("issue") != "forced_revision"]:  # forced: its own recommendation
        text = f"Apply {act.describe(a)}: {a.get('reason') or a.get('issue')}"
        if text not in instructions.setdefault(a["stage"], []):
            instructions[a["stage"]].append(text)
    start = rerun_from(issues, actions)
    if start is None:
        stages = [s for s in STAGES if instructions.get(s)]
        start = stages[0] if stages else None
    if verdict == "REVISE" and start is None:
        notes.append("REVISE without an issue targeting formulate, engineer or analyze: no stage can be re-run, "
                     "so the paper is written and flagged UNVERIFIED")
        verdict, unverified = UNVERIFIED, True
    write = [i["id"] for i in issues if i["target_stage"] == "write"]
    if write:
        notes.append(f"{len(write)} issue(s) target the write stage ({', '.join(write)}): they go to the Writer "
                     "as instructions and re-run no analysis stage")
    abort = next((i["description"] for i in issues if i.get("unfixable") and i["severity"] == "critical"), None)
    return {
        "round": round_,
        "verdict": verdict,
        "rubric_verdict": decision.get("rubric_verdict", verdict),
        "model_verdict": model_verdict,
        "overall_score": overall,
        "dimension_scores": scores,
        "issues": issues,
        "checks": checks,
        "revision_instructions": instructions,
        "revision_actions": actions if verdict == "REVISE" else [],
        "rerun_from": start if verdict == "REVISE" else None,
        "abort_reason": abort if verdict == "ABORT" else None,
        "unverified": unverified,
        "forced": forced,
        "max_revisions": max_revisions,
        "backend": backend,
        "notes": notes,
    }


def forced_actions(stage: str, report: dict[str, Any], results: dict[str, Any]) -> list[dict[str, Any]]:
    """What a configured (forced) revision of a stage changes, so that the round differs in a stated way:
    formulate restates the question; engineer switches the imputation strategy (by missingness <-> simple);
    analyze adds the first model family not yet compared (nothing when all are)."""
    why = "revision requested by configuration (force_revise)"
    if stage == "formulate":
        return [act.action("tighten_question", reason=why)]
    if stage == "engineer":
        current = report.get("imputation_strategy") or "by_missingness"
        return [act.action("change_imputation", "simple" if current != "simple" else "by_missingness",
                           reason=why)]
    if stage == "analyze":
        missing = [m for m in act.MODEL_ORDER if m not in (results.get("models") or {})]
        return [act.action("add_model", missing[0], reason=why)] if missing else []
    return []


def review(spec: dict[str, Any], report: dict[str, Any], results: dict[str, Any], reg: Registry | None, *,
           round_: int, max_revisions: int, force_revise: str | None = None, min_models: int | None = None,
           min_analytic_n: int | None = None, min_test_n: int | None = None,
           rubric: dict[str, Any] | str | Path | None = None, force_rounds: int = 1,
           claims: dict[str, Any] | None = None, manifest: dict[str, Any] | None = None,
           dgp: dict[str, Any] | None = None) -> dict[str, Any]:
    """The offline Critic: the rubric's code checks, scores and the verdict by rule (model_verdict None).

    `min_models`, `min_analytic_n` and `min_test_n` override the rubric's parameters when given; `force_revise`
    (in the first `force_rounds` rounds, with revision rounds allowed) forces REVISE targeting that stage. `claims` is the
    round's claims.json (the results debate), which the check of consistent claims reads. `manifest` (the data
    manifest) and `dgp` (the data-generating process of generated rows) feed the provenance check."""
    rub = _rubric(rubric)
    checks, issues = run_checks(rub, Artifacts(spec, report, results, reg, claims=claims, manifest=manifest, dgp=dgp),
                                {"min_models": min_models, "min_analytic_n": min_analytic_n,
                                 "min_test_n": min_test_n})
    issues = unrevisable(issues, spec, reg)
    forced = bool(force_revise) and round_ < force_rounds and max_revisions > 0
    if forced:
        issues.append(_issue("forced_revision", "major", STAGE_DIMENSION.get(force_revise, "analysis"),
                             force_revise, f"Revision of the {force_revise} stage requested by configuration "
                             "(force_revise).", f"Re-run {force_revise} and everything downstream of it.",
                             source="config", actions=forced_actions(force_revise, report, results)))
    scores, overall = dimension_scores(issues, rub["dimensions"], rub["penalties"], rub["start"])
    decision = compute_verdict(issues, overall, round_=round_, max_revisions=max_revisions, forced=forced)
    return _with_outcome(_assemble(round_, issues, checks, scores, overall, decision, forced=forced,
                                   backend="offline", max_revisions=max_revisions), spec)


def _with_outcome(review_: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Actions name the outcome they were asked for (a lesson carries a predictor action only to studies
    of the same outcome)."""
    outcome = (spec.get("outcome") or {}).get("name")
    review_["revision_actions"] = [dict(a, outcome=outcome) for a in review_["revision_actions"]]
    return review_


