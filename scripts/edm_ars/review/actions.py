"""Structured revision actions: what a review asks a stage to change, and how the stage applies it.

A review (output/branch_<b>/round_<r>/review_report.json) carries `revision_actions`, each
``{"action", "stage", "value", "reason", "issue"}``. The vocabulary is closed:

- ``drop_predictor`` / ``add_predictor`` (formulate): a survey variable leaves / joins the predictor set;
  an added predictor must pass the same registry gate as any other (earlier wave, not excluded);
- ``tighten_question`` (formulate): the research question is restated from the specification's own
  population, outcome and predictor waves as a predictive question (``value`` may give the wording,
  which the spec gate then checks like any other);
- ``change_imputation`` (engineer): the imputation strategy becomes ``value`` (see :data:`IMPUTATIONS`);
- ``add_model`` (analyze): the model family ``value`` joins the comparison;
- ``add_analysis`` (analyze): a supplementary analysis (edm_ars.codegen.supplementary) joins the next round's, first in
  line: ``value`` names one of the vetted library's analyses, or (with a model backend) describes the analysis
  the model is to write, e.g. a sensitivity analysis.

Actions accumulate over rounds: the stage re-run in round r applies every action of its kind from the
reviews of rounds 0..r-1, so a later revision of an earlier stage does not undo an earlier request.
Offline, the Critic derives actions from failed code checks; a model Critic may propose them too, and
only actions that pass :func:`validate` are kept (the rest are noted in the review)."""

from __future__ import annotations

from typing import Any

from edm_ars.codegen.supplementary import LIBRARY
from edm_ars.core.conventions import MODEL_ORDER, STACKING
from edm_ars.data.registry import Registry, is_excluded, is_temporally_valid, wave_of
from edm_ars.formulate.spec import allowed_waves, validate_spec

ACTIONS = {"drop_predictor": "formulate", "add_predictor": "formulate", "tighten_question": "formulate",
           "change_imputation": "engineer", "add_model": "analyze", "add_analysis": "analyze"}
#: by_missingness: the stated protocol (median/mode under the threshold, IterativeImputer or a missing
#: category above it); simple: median/mode for every variable; iterative: IterativeImputer for every
#: incomplete continuous variable (and a missing category for incomplete categorical ones).
IMPUTATIONS = ("by_missingness", "simple", "iterative")


def action(kind: str, value: Any = None, *, reason: str = "", issue: str = "") -> dict[str, Any]:
    if kind not in ACTIONS:
        raise ValueError(f"unknown revision action {kind!r}; known: {', '.join(ACTIONS)}")
    return {"action": kind, "stage": ACTIONS[kind], "value": value, "reason": reason, "issue": issue}


def validate(raw: Any, *, reg: Registry | None = None, spec: dict[str, Any] | None = None,
             families: tuple[str, ...] = MODEL_ORDER) -> tuple[dict[str, Any] | None, str | None]:
    """(the action in canonical form, None) or (None, why it is rejected)."""
    if not isinstance(raw, dict) or raw.get("action") not in ACTIONS:
        return None, f"revision action {raw!r}: `action` must be one of {', '.join(ACTIONS)}"
    kind, value = raw["action"], raw.get("value")
    out = action(kind, value, reason=str(raw.get("reason") or ""), issue=str(raw.get("issue") or ""))
    if kind in ("drop_predictor", "add_predictor"):
        if not isinstance(value, str) or not value:
            return None, f"{kind}: `value` must name a survey variable"
        if reg is not None and not reg.knows(value):
            return None, f"{kind} {value}: not a variable of the registry"
        if kind == "drop_predictor" and spec is not None and value not in {p["name"] for p in spec["predictors"]}:
            return None, f"drop_predictor {value}: not a predictor of the specification"
        if spec is not None and reg is not None and (left := spec_problems_after(spec, [out], reg)):
            return None, f"{kind} {value}: would leave an invalid specification ({'; '.join(left)})"
    elif kind == "change_imputation" and value not in IMPUTATIONS:
        return None, f"change_imputation {value!r}: `value` must be one of {', '.join(IMPUTATIONS)}"
    elif kind == "add_model" and value not in families:
        return None, f"add_model {value!r}: `value` must be one of {', '.join(families)}"
    elif kind == "add_analysis" and not (isinstance(value, str) and (value in LIBRARY or len(value.strip()) >= 10)):
        return None, (f"add_analysis {value!r}: `value` must name a vetted analysis ({', '.join(LIBRARY)}) or "
                      "describe the analysis to write (10+ characters)")
    elif kind == "tighten_question" and value is not None and (not isinstance(value, str) or len(value) < 20):
        return None, "tighten_question: `value`, when given, must be the reworded question (20+ characters)"
    return out, None


def unique(acts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The actions in order, each (action, value) once."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for a in acts:
        key = (a["action"], repr(a.get("value")))
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def of_stage(reviews: list[dict[str, Any]], stage: str) -> list[dict[str, Any]]:
    """Every action for `stage` in these reviews (in round order), without repeats."""
    return unique([a for review in reviews for a in review.get("revision_actions") or [] if a["stage"] == stage])


def added_models(reviews: list[dict[str, Any]], configured: list[str]) -> list[str]:
    """The configured model list with the families the reviews added (before stacking, which uses them)."""
    listed = list(configured)
    for a in of_stage(reviews, "analyze"):
        if a["action"] == "add_model" and a["value"] not in listed:
            at = listed.index(STACKING) if STACKING in listed else len(listed)
            listed.insert(at, a["value"])
    return listed


def imputation(reviews: list[dict[str, Any]], default: str) -> str:
    """The imputation strategy after the reviews' change_imputation actions (the latest wins)."""
    chosen = default
    for a in of_stage(reviews, "engineer"):
        if a["action"] == "change_imputation":
            chosen = a["value"]
    return chosen


def tightened_question(spec: dict[str, Any], reg: Registry) -> str:
    """The research question restated from the specification: population, outcome, predictor waves,
    and the predictive (not causal) framing."""
    waves = {w["key"]: w for w in reg.dataset.get("waves", [])}
    used = sorted({p.get("wave") for p in spec["predictors"] if p.get("wave")},
                  key=lambda k: waves.get(k, {}).get("order", 0))
    when = ", ".join(str(waves.get(k, {}).get("label", k)) for k in used)
    population = spec.get("population") or "students in the analytic sample"
    population = population[0].lower() + population[1:] if population[:2] != population[:2].upper() else population
    o = spec["outcome"]
    task = "predict" if spec.get("task") != "regression" else "predict the level of"
    return (f"Among {population.rstrip('.')}, how accurately do measures collected in {when} {task} "
            f"{o.get('label', o['name'])} ({o['name']}), and which of these earlier measures carry the "
            "predictive signal?")


def apply_to_spec(spec: dict[str, Any], actions: list[dict[str, Any]], reg: Registry) -> dict[str, Any]:
    """The specification with the formulate actions applied; `revision_actions_applied` says what changed
    (and which actions could not be applied, and why)."""
    out = dict(spec, predictors=list(spec["predictors"]))
    applied: list[str] = []
    dropped: list[dict[str, Any]] = []  # structured: the Writer states a predictor a review removed, and why
    outcome = spec["outcome"]["name"]
    for a in actions:
        kind, value = a["action"], a.get("value")
        names = [p["name"] for p in out["predictors"]]
        if kind == "drop_predictor":
            if value in names:
                label = next((str(p.get("label") or "") for p in out["predictors"] if p["name"] == value), "")
                out["predictors"] = [p for p in out["predictors"] if p["name"] != value]
                applied.append(f"dropped predictor {value} ({a.get('reason') or a.get('issue')})")
                dropped.append({"name": value, "label": label, "issue": a.get("issue") or "",
                                "reason": a.get("reason") or ""})
            else:
                applied.append(f"drop_predictor {value}: not a predictor of this specification; nothing to do")
        elif kind == "add_predictor":
            if value in names:
                applied.append(f"add_predictor {value}: already a predictor")
            elif not reg.knows(value) or is_excluded(reg, value) or not is_temporally_valid(reg, value, outcome):
                applied.append(f"add_predictor {value}: refused (unknown, excluded, or not from a wave strictly "
                               f"earlier than {outcome})")
            elif (allowed := allowed_waves(out, reg)) is not None and wave_of(reg, value) not in allowed:
                applied.append(f"add_predictor {value}: refused ({wave_of(reg, value)} is not one of the "
                               f"early-warning waves {allowed} of this question)")
            else:
                rec = reg.variable(value) or {}
                out["predictors"].append({"name": value, "label": rec.get("label", value),
                                          "wave": wave_of(reg, value),
                                          "rationale": f"Added on revision: {a.get('reason') or a.get('issue')}"})
                applied.append(f"added predictor {value}")
        elif kind == "tighten_question":
            before = out["research_question"]
            out["research_question"] = value or tightened_question(out, reg)
            if out["research_question"] != before:
                applied.append("research question restated: " + out["research_question"])
    if applied:
        out["revision_actions_applied"] = list(spec.get("revision_actions_applied") or []) + applied
    if dropped:
        out["dropped_on_revision"] = list(spec.get("dropped_on_revision") or []) + dropped
    return out


def spec_problems_after(spec: dict[str, Any], actions: list[dict[str, Any]], reg: Registry) -> list[str]:
    """What the specification gate (edm_ars.formulate.spec.validate_spec) would refuse in the specification the
    formulate `actions` leave (e.g. a drop_predictor leaving 2 predictors where 3 are needed), beyond what it
    already refuses in `spec`: the revision's formulate job would fail on it, so the Critic never asks for it."""
    acts = [a for a in actions if a.get("stage") == "formulate"]
    if not acts:
        return []
    before = set(validate_spec(spec, reg))
    return [v for v in validate_spec(apply_to_spec(spec, acts, reg), reg) if v not in before]


def apply_with_lessons(spec: dict[str, Any], carried: list[dict[str, Any]], requested: list[dict[str, Any]],
                       reg: Registry, data_columns: set[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The specification with the actions earlier runs' lessons carry (edm_ars.formulate.lessons.carried_actions)
    and then this run's requested ones applied, and one line for each carried action skipped: a lesson learned on
    another specification whose action would leave this one invalid (a drop leaving fewer predictors than a study
    needs, ...) is never applied, so it cannot fail the formulate job. The carried actions are tried in order,
    each on the specification the kept ones leave; a skipped one is recorded in `revision_actions_applied`, where
    the carried actions applied are recorded too."""
    before = set(validate_spec(spec, reg, data_columns))
    kept: list[dict[str, Any]] = []
    skipped: list[str] = []
    current = spec
    for a in carried:
        after = apply_to_spec(current, [a], reg)
        left = [v for v in validate_spec(after, reg, data_columns) if v not in before]
        if left:
            skipped.append(f"{a['action']} {a.get('value')} ({a.get('reason') or a.get('issue')}): not applied, it "
                           f"would leave an invalid specification ({'; '.join(left)})")
        else:
            kept.append(a)
            current = after
    out = apply_to_spec(spec, kept + requested, reg)
    if skipped:
        out["revision_actions_applied"] = list(out.get("revision_actions_applied") or []) + skipped
    return out, skipped


def describe(a: dict[str, Any]) -> str:
    value = f" {a['value']}" if a.get("value") is not None else ""
    return f"{a['action']}{value} ({a['stage']})"
