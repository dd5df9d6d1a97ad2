"""Lessons carried from earlier runs never fail a formulate job: a carried action (e.g. drop a predictor, learned on
another specification) that would leave this run's specification invalid is skipped, logged and recorded in the
specification's revision_actions_applied beside the carried actions that apply (issue 33, point 7)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from edm_ars.data.registry import Registry
from edm_ars.formulate.branches import draft_offline
from edm_ars.formulate.lessons import Lesson, append, carried_actions, load, relevant
from edm_ars.formulate.spec import offline_spec, validate_spec
from edm_ars.review import actions

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def small_registry(n_predictors=3):
    """A registry whose one question has `n_predictors` predictors (3 is the fewest a specification takes)."""
    names = [f"x{k}" for k in range(1, n_predictors + 1)]
    dataset = {"name": "small", "title": "Students in schools", "id_column": "student", "questions": [],
               "prose": {"short": "student data", "long": "student data", "about": "students", "unit": "student",
                         "units": "students"}}
    variables = [{"name": "score", "label": "Score", "role": "outcome", "type": "continuous", "pct_missing": 0.0},
                 {"name": "sex", "label": "Sex", "role": "protected", "type": "binary", "pct_missing": 0.0},
                 *({"name": n, "label": f"Measure {n}", "role": "predictor", "type": "continuous",
                    "pct_missing": 0.0} for n in names)]
    questions = [{"id": "score_prediction", "default": True, "outcome": "score", "subgroups": ["sex"],
                  "question": "How accurately can the score be predicted from the measures?",
                  "population": "Students with a score", "keywords": ["score"],
                  "predictors": {n: "a measure taken before the score" for n in names}}]
    return Registry(dataset=dataset, tier1={v["name"]: v for v in variables}, tier3={}, pitfalls=[],
                    questions=questions, tier2={}, root=ROOT)


def drop(name, run="run-a"):
    return dict(actions.action("drop_predictor", name, reason=f"lesson from run {run}: suspected proxy"),
                outcome="score")


def test_a_carried_drop_that_would_leave_too_few_predictors_is_skipped_and_recorded():
    reg = small_registry(3)
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    assert validate_spec(spec, reg) == [] and len(spec["predictors"]) == 3
    # applied as before, the lesson's drop leaves a specification the gate refuses (the job failed on it)
    assert validate_spec(actions.apply_to_spec(spec, [drop("x1")], reg), reg) != []
    out, skipped = actions.apply_with_lessons(spec, [drop("x1")], [], reg)
    assert validate_spec(out, reg) == []
    assert [p["name"] for p in out["predictors"]] == ["x1", "x2", "x3"] and "dropped_on_revision" not in out
    assert len(skipped) == 1 and skipped[0].startswith("drop_predictor x1 (lesson from run run-a: suspected proxy): "
                                                       "not applied, it would leave an invalid specification (")
    assert "predictors" in skipped[0]  # the gate's own reason: too few predictors
    assert out["revision_actions_applied"] == skipped


def test_carried_actions_are_tried_in_order_on_what_the_kept_ones_leave():
    """Four predictors: the first carried drop applies (3 left), the second would leave 2 and is skipped; a drop of
    a variable the specification does not hold is harmless and kept; this run's requested actions follow."""
    reg = small_registry(4)
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    requested = [actions.action("tighten_question")]
    out, skipped = actions.apply_with_lessons(spec, [drop("x1"), drop("x2", "run-b"), drop("x9")], requested, reg)
    assert [p["name"] for p in out["predictors"]] == ["x2", "x3", "x4"]
    assert validate_spec(out, reg) == []
    assert [d["name"] for d in out["dropped_on_revision"]] == ["x1"]
    assert len(skipped) == 1 and skipped[0].startswith("drop_predictor x2 (lesson from run run-b")
    applied = out["revision_actions_applied"]
    assert applied[0].startswith("dropped predictor x1 (lesson from run run-a")
    assert "drop_predictor x9: not a predictor of this specification; nothing to do" in applied
    assert any(line.startswith("research question restated") for line in applied)
    assert applied[-1] == skipped[0]
    # nothing carried: exactly what apply_to_spec gives
    assert actions.apply_with_lessons(spec, [], requested, reg) == (actions.apply_to_spec(spec, requested, reg), [])


class IO(dict):
    """Snakemake's named input/output/params lists, as the job reads them."""

    __getattr__ = dict.__getitem__


def test_the_formulate_job_skips_the_lesson_and_writes_a_valid_specification(tmp_path, monkeypatch, caplog):
    """The offline formulate job, with a stored lesson from an earlier run that drops one of this question's three
    predictors: before, the job failed with a SpecError; now it writes the three-predictor specification and
    logs and records the skipped lesson."""
    import yaml

    from edm_ars.jobs import agents

    reg = small_registry(3)
    reg_file = tmp_path / "registry.yaml"
    reg_file.write_text(yaml.safe_dump({"dataset": reg.dataset, "variables": list(reg.tier1.values()),
                                        "questions": reg.questions, "tier3": {}, "pitfalls": []}, sort_keys=False))
    store = tmp_path / "lessons.jsonl"
    append(store, [Lesson(category="revision", severity="critical", text="x1 is a proxy of the score",
                          time="2026-11-20T12:00:00Z", run_id="run-a", source="revision", stage="formulate",
                          action=dict(actions.action("drop_predictor", "x1", reason="suspected proxy"),
                                      outcome="score"))])
    assert carried_actions(relevant(load(store), NOW, stage="formulate", k=10), "formulate", "score")
    drafts = tmp_path / "branches.json"
    drafts.write_text(json.dumps(draft_offline(reg, n=1, prompt=None, question_id=None, earlier=[])))
    (tmp_path / "tier2.json").write_text(json.dumps({"dataset": "small", "n_variables": 0, "variables": {}}))
    (tmp_path / "dataset.json").write_text(json.dumps({"columns": ["student", "score", "sex", "x1", "x2", "x3"]}))
    out = tmp_path / "out"
    smk = SimpleNamespace(
        input=IO(drafts=str(drafts), tier2=str(tmp_path / "tier2.json"), manifest=str(tmp_path / "dataset.json"),
                 registry=str(reg_file), prompts=str(ROOT / "config" / "prompts" / "formulate.yaml"),
                 bibliography=[str(ROOT / "registry" / "bibliography" / n) for n in ("references.bib", "topics.yaml")]),
        output=IO(spec=str(out / "research_spec.json"), literature=str(out / "literature_context.json"),
                  ledger=str(out / "ledger.jsonl"), transcripts=str(out / "prompts")),
        params=IO(prompt=None, question=None, llm={"backend": "offline"}, candidates=1, lessons_store=str(store),
                  lessons_k=5),
        wildcards=IO(round="0", branch="1"))
    out.mkdir()
    with caplog.at_level(logging.WARNING):
        agents.formulate(smk)
    spec = json.loads((out / "research_spec.json").read_text())
    assert [p["name"] for p in spec["predictors"]] == ["x1", "x2", "x3"]
    assert any("drop_predictor x1 (lesson from run run-a" in line and "not applied" in line
               for line in spec["revision_actions_applied"])
    assert "lesson from an earlier run skipped: drop_predictor x1" in caplog.text
