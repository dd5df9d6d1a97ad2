"""The model Critic: its answer's schema, the summaries and figures it reads, and the merge of its answer.

:func:`review_with_model` runs on top of the offline code review (edm_ars.review.critic.review): it fills the
critique prompt with summaries of the specification, data report and results and the code checks' findings
(and, with the anthropic backend, the key figures as PNG images), then merges the model's issues with the
code's (:func:`merge_issues`). The verdict is recomputed by rule (edm_ars.review.critic.compute_verdict) with
overall = min(model overall, rubric overall); a model's verdict is advisory.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from edm_ars.data.registry import Registry, rules_text
from edm_ars.review import actions as act
from edm_ars.review.checks import fairness_flags
from edm_ars.review.critic import (
    DIMENSIONS,
    SEVERITIES,
    STAGE_DIMENSION,
    TARGETS,
    VERDICTS,
    _assemble,
    _issue,
    _rubric,
    _with_outcome,
    compute_verdict,
    dimension_scores,
    items_of,
)

#: Figures a model Critic may see as images (when a PNG rendering exists), in this order.
KEY_FIGURES = ("roc", "observed_predicted", "shap_summary", "fairness")
MAX_IMAGE_BYTES = 5_000_000
SCORE_RULE = "overall score = min(model overall score, rubric overall score of the merged issues)"


_ISSUE_SCHEMA = {
    "type": "object", "required": ["id", "severity", "description", "recommendation", "target_stage"],
    "properties": {"id": {"type": "string", "minLength": 1}, "severity": {"enum": list(SEVERITIES)},
                   "category": {"type": "string"}, "description": {"type": "string", "minLength": 1},
                   "recommendation": {"type": "string"}, "target_stage": {"enum": TARGETS}}}
_SCORE = {"type": "number", "minimum": 0, "maximum": 10}
#: Closed wherever the answer's keys are known (the rubric's dimensions, the stages, the action fields), so that
#: structured outputs (edm_ars.llm.backends.expressible) can hold the review; validation stays as open as before
#: (an unknown dimension is named by _answer_problems, an unknown action is noted by actions.validate).
MODEL_REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["overall_score", "dimension_scores", "issues", "revision_instructions", "verdict"],
    "properties": {
        "overall_score": _SCORE,
        "dimension_scores": {"type": "object", "properties": {d: _SCORE for d in DIMENSIONS}},
        "issues": {"type": "array", "items": _ISSUE_SCHEMA},
        "revision_instructions": {"type": "object", "properties": {
            t: {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]} for t in TARGETS}},
        "verdict": {"enum": list(VERDICTS)},
        "revision_actions": {"type": "array", "items": {
            "type": "object", "required": ["action"],
            "properties": {"action": {"type": "string", "description": f"one of {', '.join(act.ACTIONS)}"},
                           "stage": {"type": "string"}, "value": {"type": ["string", "null"]},
                           "reason": {"type": "string"}, "issue": {"type": "string"}}}},
    },
}


def _r(v: Any, digits: int = 4) -> Any:
    if isinstance(v, float):
        return round(v, digits)
    if isinstance(v, list):
        return [_r(x, digits) for x in v]
    if isinstance(v, dict):
        return {k: _r(x, digits) for k, x in v.items()}
    return v


def _dump(obj: Any) -> str:
    return json.dumps(_r(obj), indent=1, ensure_ascii=False, default=str)


def spec_summary(spec: dict[str, Any]) -> dict[str, Any]:
    keys = ("research_question", "outcome", "task", "population", "subgroups", "expected_contribution",
            "limitations", "novelty_score", "revision_notes")
    out = {k: spec.get(k) for k in keys if k in spec}
    out["predictors"] = [{k: p.get(k) for k in ("name", "label", "wave", "rationale")}
                         for p in spec.get("predictors") or []]
    return out


def report_summary(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("original_n", "analytic_n", "retention", "complete_case_n", "train_n", "test_n", "outcome", "task",
            "class_balance", "outcome_summary", "predictors_before", "predictors_dropped", "split",
            "imputation_protocol", "warnings", "revision_notes")
    out = {k: report.get(k) for k in keys if k in report}
    out["encoded_columns"] = len(report.get("predictors_after") or [])
    out["missingness"] = {v: {"pct_missing": m.get("pct_missing"), "method": m.get("method")}
                          for v, m in (report.get("missingness") or {}).items()}
    out["failed_checks"] = [c for c in report.get("checks") or [] if not c.get("passed")]
    return out


def results_summary(results: dict[str, Any], *, max_flags: int = 30) -> dict[str, Any]:
    """Models with metrics and intervals, top features, subgroup results and flags, stability, errors."""
    primary = results.get("primary_metric")
    models = {name: {"label": m.get("label"), "metrics": m.get("metrics"),
                     f"{primary}_95ci": (m.get("ci") or {}).get(primary)}
              for name, m in (results.get("models") or {}).items()}
    audit = results.get("fairness") or {}
    attributes = {}
    for name, rec in (audit.get("attributes") or {}).items():
        attributes[name] = {
            "groups": [{k: g.get(k) for k in ("group", "n", "reliable", "metric", "ci")}
                       for g in rec.get("groups") or []],
            "flagged_gaps": {m: {k: g.get(k) for k in ("gap", "ci", "min_group", "max_group")}
                             for m, g in (rec.get("gaps") or {}).items() if g and g.get("flagged")},
            "derived_from": rec.get("derived_from")}
    st = results.get("stability") or {}
    flags = fairness_flags(results)
    return {
        "task": results.get("task"), "primary_metric": primary, "best_model": results.get("best_model"),
        "selection_rule": results.get("selection_rule"), "selection_evidence": results.get("selection_evidence"),
        "interpreted_model": results.get("interpreted_model"), "test_n": results.get("test_n"),
        "n_bootstrap": results.get("n_bootstrap"), "thresholds": results.get("thresholds"), "models": models,
        "top_features": [{k: f.get(k) for k in ("feature", "label", "mean_abs_shap", "direction")}
                         for f in (results.get("top_features") or [])[:10]],
        "shap_skipped": (results.get("shap") or {}).get("skipped"),
        "fairness": {"model": audit.get("model"), "primary_metric": audit.get("primary_metric"),
                     "gap_threshold": audit.get("gap_threshold"), "min_group": audit.get("min_group"),
                     "decision_rule": audit.get("decision_rule"), "error_scale": audit.get("error_scale"),
                     "bootstrap": audit.get("bootstrap"), "n_clusters": audit.get("n_clusters"),
                     "overall": audit.get("overall"), "attributes": attributes,
                     "flags": flags[:max_flags], "n_flags": len(flags)},
        "stability": {k: st.get(k) for k in ("model", "metric", "unstable", "rule", "thresholds", "n_perturbations",
                                               "metric_spread", "top5_overlap", "rank_correlation")},
        "supplementary": {name: {k: rec.get(k) for k in ("purpose", "source", "status", "reason", "reports", "numbers")}
                          for name, rec in ((results.get("supplementary") or {}).get("analyses") or {}).items()},
        "other_flags": [f for f in results.get("flags") or [] if not f.startswith("fairness:")],
        "errors": [{k: (str(e.get(k))[:200] if k == "message" else e.get(k)) for k in ("phase", "what", "type",
                                                                                       "message")}
                   for e in results.get("errors") or [] if isinstance(e, dict)],
    }


def code_findings(checks: list[dict[str, Any]], issues: list[dict[str, Any]]) -> str:
    lines = []
    for c in checks:
        state = "skipped" if c["passed"] is None else "passed" if c["passed"] else f"FAILED ({c['severity']})"
        lines.append(f"- {c['id']}: {state}" + (f": {c['message']}" if c.get("message") else ""))
    extra = [i for i in issues if i["id"] not in {c["id"] for c in checks}]
    lines += [f"- {i['id']} ({i['severity']}, {i['target_stage']}): {i['description']}" for i in extra]
    return "\n".join(lines) or "- (no code checks)"


def _item_lines(items: list[dict[str, Any]]) -> str:
    return "\n".join(f"- {i['id']} [{i['dimension']}; {i['severity']}{'; unfixable' if i.get('unfixable') else ''};"
                     f" target {i['target_stage']}]: {' '.join(str(i['description']).split())}" for i in items)


def figure_blocks(figure_paths: dict[str, str | Path] | None, *, kinds: tuple[str, ...] = KEY_FIGURES
                  ) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Anthropic content blocks for the key figures that have a PNG rendering (the file itself when it is a
    PNG, else a .png next to it); a PDF without a PNG is skipped. Returns (blocks, attached, skipped)."""
    blocks, attached, skipped = [], [], []
    for kind in kinds:
        if not figure_paths or kind not in figure_paths:
            continue
        path = Path(figure_paths[kind])
        png = path if path.suffix.lower() == ".png" else path.with_suffix(".png")
        if not png.is_file():
            skipped.append(f"{kind}: no PNG rendering of {path.name}")
            continue
        data = png.read_bytes()
        if not data.startswith(b"\x89PNG\r\n\x1a\n") or len(data) > MAX_IMAGE_BYTES:
            skipped.append(f"{kind}: {png.name} is not a PNG or is over {MAX_IMAGE_BYTES} bytes")
            continue
        blocks.append({"type": "text", "text": f"Figure ({kind}): {png.name}"})
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                   "data": base64.b64encode(data).decode("ascii")}})
        attached.append(kind)
    return blocks, attached, skipped


def key_figure_paths(results: dict[str, Any], round_dir: str | Path) -> dict[str, Path]:
    """{kind: path} of the results' key figures, resolved against the round's output folder."""
    return {f["kind"]: Path(round_dir) / f["path"] for f in results.get("figures") or []
            if f.get("kind") in KEY_FIGURES and f.get("path")}


def _figures_text(results: dict[str, Any], attached: list[str]) -> str:
    lines = [f"- {f.get('kind')}: {f.get('caption', '')}" + (" (attached as an image)" if f.get("kind") in attached
                                                              else "")
             for f in results.get("figures") or []]
    return "\n".join(lines) or "- (no figures)"


def _answer_problems(answer: Any) -> list[str]:
    """Problems the schema cannot express: unknown dimensions and repeated issue ids."""
    problems = []
    if not isinstance(answer, dict):
        return problems
    unknown = sorted(set(answer.get("dimension_scores") or {}) - set(DIMENSIONS))
    if unknown:
        problems.append(f"dimension_scores: unknown dimensions {unknown}; use {sorted(DIMENSIONS)}")
    ids = [i.get("id") for i in answer.get("issues") or [] if isinstance(i, dict)]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        problems.append(f"issues: ids used more than once: {dupes}; give each issue its own id")
    return problems


def merge_issues(code_issues: list[dict[str, Any]], model_issues: list[dict[str, Any]], rubric: dict[str, Any],
                 checks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Code issues are always kept; a model issue is dropped when its id duplicates a kept issue or names a code
    item whose check passed. A model issue is unfixable only through a `model` rubric item marked unfixable."""
    items = {i["id"]: i for i in rubric["items"]}
    passed_code = {c["id"] for c in checks if c.get("passed")}
    merged = [dict(i, source=i.get("source", "code")) for i in code_issues]
    seen, notes = {i["id"] for i in merged}, []
    for raw in model_issues:
        id_ = str(raw["id"]).strip()
        if id_ in seen:
            notes.append(f"model issue {id_} dropped: duplicate of an issue already listed")
            continue
        if id_ in passed_code:
            notes.append(f"model issue {id_} dropped: its rubric item is checked in code and the check passed")
            continue
        item = items.get(id_)
        stage = raw["target_stage"]
        category = item["dimension"] if item else raw.get("category")
        if category not in rubric["dimensions"]:
            category = STAGE_DIMENSION[stage]
        unfixable = bool(item and item["check"] == "model" and item.get("unfixable")) and raw["severity"] == "critical"
        merged.append(_issue(id_, raw["severity"], category, stage, raw["description"],
                             raw.get("recommendation") or (item or {}).get("recommendation", ""), unfixable,
                             source="model", caps=bool(item and item.get("caps_verdict"))))
        seen.add(id_)
    return merged, notes


def review_with_model(client: Any, prompts: dict[str, Any], spec: dict[str, Any], report: dict[str, Any],
                      results: dict[str, Any], figure_paths: dict[str, str | Path] | None,
                      code_review: dict[str, Any], *, max_revisions: int | None = None,
                      rubric: dict[str, Any] | str | Path | None = None, images: bool = False,
                      tag: str = "critique", reg: Registry | None = None, lessons: str = "") -> dict[str, Any]:
    """The model Critic on top of the code review (the output of :func:`review` for the same round).

    The model reads the specification, data report, results summary and the code checks' findings (and,
    with `images` and the anthropic backend, the key figures as PNG images) and answers with scores, issues,
    instructions and a verdict. Its issues are merged with the code's; the verdict is recomputed by rule from
    the merged list with overall = min(model overall, rubric overall); disagreements go to the notes."""
    from edm_ars.llm.prompts import fill  # here: the offline Critic never imports the LLM layer

    rub = _rubric(rubric)
    if max_revisions is None and "max_revisions" not in code_review:
        raise ValueError("review_with_model needs max_revisions (the code review does not record it)")
    max_revisions = int(code_review["max_revisions"] if max_revisions is None else max_revisions)
    round_, forced = int(code_review["round"]), bool(code_review.get("forced"))
    notes: list[str] = []
    blocks: list[dict[str, Any]] = []
    attached: list[str] = []
    settings = getattr(client, "settings", None)
    backend = getattr(settings, "backend", None) or "model"
    if images:
        if backend not in ("anthropic", "model"):
            notes.append(f"figures not attached: images are sent only with the anthropic backend (not {backend})")
        else:
            blocks, attached, skipped = figure_blocks(figure_paths)
            notes += [f"figure not attached: {s}" for s in skipped]
    system = fill(
        prompts["system"], dimensions=", ".join(f"{d} ({w:g})" for d, w in rub["dimensions"].items()),
        dataset_title=reg.dataset.get("title", reg.name) if reg else spec.get("dataset", "the data set"),
        dataset_rules=rules_text(reg),
        code_items=_item_lines(items_of(rub, "code")), model_items=_item_lines(items_of(rub, "model")))
    user = fill(
        prompts["user"], round=round_, max_revisions=max_revisions, spec=_dump(spec_summary(spec)),
        data_report=_dump(report_summary(report)), results=_dump(results_summary(results)),
        code_findings=code_findings(code_review["checks"], code_review["issues"]),
        figures=_figures_text(results, attached),
        lessons=lessons or "(no lessons from earlier runs)")
    content: str | list[dict[str, Any]] = [{"type": "text", "text": user}, *blocks] if blocks else user
    answer, _ = client.complete_json(system, [{"role": "user", "content": content}], tag=tag,
                                     schema=MODEL_REVIEW_SCHEMA, check=_answer_problems)
    issues, merge_notes = merge_issues(code_review["issues"], answer["issues"], rub, code_review["checks"])
    notes += merge_notes
    scores, rubric_overall = dimension_scores(issues, rub["dimensions"], rub["penalties"], rub["start"])
    model_overall = float(answer["overall_score"])
    overall = round(min(model_overall, rubric_overall), 2)
    notes.append(f"{SCORE_RULE}: min({model_overall:g}, {rubric_overall:g}) = {overall:g}")
    decision = compute_verdict(issues, overall, round_=round_, max_revisions=max_revisions,
                               model_verdict=answer["verdict"], forced=forced)
    extra = {s: [t] if isinstance(t, str) else list(t) for s, t in (answer.get("revision_instructions") or {}).items()
             if s in TARGETS}
    proposed = []
    # the formulate actions asked for so far: a model's action is kept only when, with them, the specification
    # still passes the gate (each alone may: two drops from a study of 4 predictors leave 2)
    asked = [a for i in issues for a in i.get("actions") or [] if a.get("stage") == "formulate"]
    for raw in answer.get("revision_actions") or []:
        valid, why = act.validate(raw, reg=reg, spec=spec)
        if valid and reg is not None and valid["stage"] == "formulate" and (
                left := act.spec_problems_after(spec, [*asked, valid], reg)):
            valid, why = None, (f"{act.describe(valid)}: with the other revision actions it would leave an invalid "
                                f"specification ({'; '.join(left)})")
        if valid:
            proposed.append(dict(valid, source="model"))
            asked += [valid] if valid["stage"] == "formulate" else []
        else:
            notes.append(f"model revision action not kept: {why}")
    out = _assemble(round_, issues, code_review["checks"], scores, overall, decision, forced=forced,
                    backend=backend, max_revisions=max_revisions, model_verdict=answer["verdict"], notes=notes,
                    extra_instructions=extra, extra_actions=proposed)
    out.update(rubric_overall_score=rubric_overall, model_overall_score=model_overall,
               model_dimension_scores=answer.get("dimension_scores") or {}, figures_attached=attached)
    return _with_outcome(out, spec)
