"""Lessons across runs: collection from a run's reviews and approvals, the store, weights and ranking."""

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from edm_ars.formulate.lessons import (
    Lesson,
    append,
    carried_actions,
    cli_lessons,
    default_store_path,
    lessons_from_run,
    load,
    relevant,
    render,
    weight,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def lesson(severity="critical", days=0.0, *, text="Leakage through a later-wave predictor -> drop it",
           category="substantive_validity", stage="formulate", run_id="run-a", source="failed_check"):
    time = (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Lesson(category=category, severity=severity, text=text, time=time, run_id=run_id, source=source,
                  stage=stage)


# ---- weights -------------------------------------------------------------------------------------------

def test_weight_halves_every_30_days_and_ends_after_90():
    assert weight(lesson("critical", 0), NOW) == pytest.approx(3.0)
    assert weight(lesson("critical", 30), NOW) == pytest.approx(1.5)
    assert weight(lesson("critical", 60), NOW) == pytest.approx(0.75)
    assert weight(lesson("critical", 90), NOW) == pytest.approx(0.375)  # the horizon itself still counts
    assert weight(lesson("critical", 91), NOW) == 0.0
    assert weight(lesson("critical", 10), NOW, half_life_days=10, horizon_days=5) == 0.0
    assert weight(lesson("critical", 10), NOW, half_life_days=10, horizon_days=20) == pytest.approx(1.5)


def test_weight_of_a_future_or_naive_timestamp():
    assert weight(lesson("major", -2), NOW) == pytest.approx(2.0)  # clock skew: no bonus beyond age 0
    naive = Lesson("c", "minor", "t", "2025-06-01T12:00:00", "r", "revision", None)
    assert weight(naive, NOW) == pytest.approx(1.0)


def test_severity_order():
    for days in (0, 15, 45):
        c, M, m = (weight(lesson(s, days), NOW) for s in ("critical", "major", "minor"))
        assert c > M > m > 0
    assert weight(lesson("major", 0), NOW) == pytest.approx(2.0)
    assert weight(lesson("minor", 0), NOW) == pytest.approx(1.0)


def test_unknown_severity_or_time_is_refused():
    with pytest.raises(ValueError, match="severity"):
        lesson("blocker")
    with pytest.raises(ValueError):
        Lesson("c", "minor", "t", "yesterday", "r", "revision", None)


# ---- ranking -------------------------------------------------------------------------------------------

def test_relevant_ranks_by_weight_drops_expired_and_keeps_top_k():
    old_critical = lesson("critical", 50, text="old critical")   # 3 * 0.5**(5/3) = 0.94
    new_minor = lesson("minor", 0, text="new minor")              # 1.0
    major = lesson("major", 10, text="major")                     # 1.59
    expired = lesson("critical", 120, text="expired")
    ranked = relevant([old_critical, new_minor, major, expired], NOW)
    assert [le.text for _, le in ranked] == ["major", "new minor", "old critical"]
    assert [w for w, _ in ranked] == sorted((w for w, _ in ranked), reverse=True)
    assert ranked[0][0] == pytest.approx(weight(major, NOW))
    assert [le.text for _, le in relevant([old_critical, new_minor, major], NOW, k=2)] == ["major", "new minor"]
    assert relevant([expired], NOW) == []


def test_relevant_puts_the_stage_first_but_keeps_the_others():
    analyze = lesson("minor", 20, text="analyze minor", stage="analyze")
    formulate = lesson("critical", 0, text="formulate critical", stage="formulate")
    general = lesson("major", 0, text="general", stage=None)
    analyze_major = lesson("major", 0, text="analyze major", stage="analyze")
    ranked = relevant([formulate, analyze, general, analyze_major], NOW, stage="analyze")
    assert [le.text for _, le in ranked] == ["analyze major", "analyze minor", "general", "formulate critical"]
    without = relevant([formulate, analyze, general, analyze_major], NOW)
    assert [le.text for _, le in without][0] == "formulate critical"
    assert [le.text for _, le in relevant([formulate, analyze], NOW, stage="analyze", k=1)] == ["analyze minor"]


def test_relevant_shows_a_lesson_learnt_in_several_runs_once():
    ranked = relevant([lesson(days=40, run_id="a"), lesson(days=3, run_id="b"), lesson(days=20, run_id="c")], NOW)
    assert len(ranked) == 1 and ranked[0][1].run_id == "b"


# ---- collecting from a run -----------------------------------------------------------------------------

def issue(id_, severity, category, stage, description, recommendation):
    return {"id": id_, "severity": severity, "category": category, "target_stage": stage,
            "description": description, "recommendation": recommendation}


@pytest.fixture
def run_folders(tmp_path):
    out, approvals = tmp_path / "output", tmp_path / "approvals"
    leak = issue("sv_no_leakage_flag", "critical", "substantive_validity", "formulate",
                 "Held-out AUC above 0.95 suggests leakage", "Find and remove proxies of the outcome")
    figs = issue("an_figures", "minor", "analysis", "analyze", "No result figures were produced.",
                 "Produce the ROC or residual figures.")
    round0 = {"round": 0, "verdict": "REVISE", "overall_score": 5.9, "issues": [leak, figs],
              "revision_instructions": {"analyze": [figs["recommendation"]], "formulate": [leak["recommendation"]]},
              "rerun_from": "formulate",
              "checks": [{"id": "sv_no_leakage_flag", "passed": False, "detail": ["possible_leakage: auc 0.97"]},
                         {"id": "an_figures", "passed": False, "detail": 0},
                         {"id": "dp_school_overlap", "passed": False, "detail": 3},
                         {"id": "an_intervals", "passed": True, "detail": []}],
              "notes": []}
    round1 = {"round": 1, "verdict": "PASS", "overall_score": 9.5, "issues": [figs], "revision_instructions": {},
              "rerun_from": None, "checks": [{"id": "an_figures", "passed": False, "detail": 0}], "notes": []}
    for r, review in enumerate([round0, round1]):
        (out / "branch_1" / f"round_{r}").mkdir(parents=True)
        (out / "branch_1" / f"round_{r}" / "review_report.json").write_text(json.dumps(review))
    (out / "branch_1" / "round_2").mkdir()  # a round still running: no review yet
    (approvals / "branch_1" / "round_0").mkdir(parents=True)
    (approvals / "branch_1" / "round_0" / "formulate.notes.json").write_text(json.dumps(
        [{"note": "The outcome is measured before two of the predictors.", "time": "2025-05-30T09:00:00Z"}]))
    (approvals / "branch_1" / "round_1").mkdir()
    (approvals / "branch_1" / "round_1" / "write.json").write_text(json.dumps(
        {"decision": "approved", "note": "fine", "time": "2025-06-01T10:00:00Z"}))
    return out, approvals


def test_lessons_from_run(run_folders):
    out, approvals = run_folders
    found = lessons_from_run(out, approvals, "run-42", NOW)
    by_source = {s: [le for le in found if le.source == s] for s in ("failed_check", "revision", "rejection")}
    assert all(le.run_id == "run-42" for le in found)

    checks = by_source["failed_check"]
    leak = next(le for le in checks if "leakage" in le.text)
    assert (leak.category, leak.severity, leak.stage) == ("substantive_validity", "critical", "formulate")
    assert leak.text == "Held-out AUC above 0.95 suggests leakage -> Find and remove proxies of the outcome"
    assert leak.time == "2025-06-01T12:00:00Z"
    figs = [le for le in checks if "figures" in le.text]
    assert len(figs) == 1 and figs[0].severity == "minor"  # raised in both rounds, learnt once
    # a failed check without an issue of its own becomes a lesson too, its dimension from the check id
    overlap = next(le for le in checks if "dp_school_overlap" in le.text)
    assert (overlap.category, overlap.stage, overlap.severity) == ("data_preparation", "engineer", "major")
    assert not any("an_intervals" in le.text for le in found)  # passed checks teach nothing
    assert len(checks) == 3

    [revision] = by_source["revision"]
    assert (revision.category, revision.severity, revision.stage) == ("revision", "major", "formulate")
    assert revision.text.startswith("The Critic sent the run back to re-run from formulate: Find and remove")
    assert revision.text.index("Find and remove") < revision.text.index("Produce the ROC")  # stage order

    [rejection] = by_source["rejection"]
    assert (rejection.category, rejection.severity, rejection.stage) == ("human_rejection", "major", "formulate")
    assert "The outcome is measured before two of the predictors." in rejection.text and "formulate gate" in rejection.text
    assert rejection.time == "2025-05-30T09:00:00Z"


def test_lessons_from_run_without_approvals_and_a_forced_revision(tmp_path):
    forced = issue("forced_revision", "major", "analysis", "analyze",
                   "Revision of the analyze stage requested by configuration (force_revise).",
                   "Re-run analyze and everything downstream of it.")
    (tmp_path / "branch_1" / "round_0").mkdir(parents=True)
    (tmp_path / "branch_1" / "round_0" / "review_report.json").write_text(json.dumps(
        {"round": 0, "verdict": "REVISE", "issues": [forced], "checks": [], "forced": True,
         "revision_instructions": {"analyze": [forced["recommendation"]]}, "rerun_from": "analyze"}))
    assert lessons_from_run(tmp_path, None, "r", NOW) == []
    assert lessons_from_run(tmp_path, tmp_path / "no-approvals", "r", NOW) == []
    assert lessons_from_run(tmp_path / "nothing-here", None, "r", NOW) == []


def test_a_revision_action_becomes_a_lesson_that_later_runs_apply(tmp_path):
    drop = {"action": "drop_predictor", "stage": "formulate", "value": "X3TGPAACAD", "issue": "sv_leakage_auc",
            "reason": "suspected proxy of the outcome", "outcome": "X4EVRATNDCLG"}
    leak = issue("sv_leakage_auc", "critical", "substantive_validity", "formulate", "Held-out AUC above 0.95.",
                 "Find and remove proxies of the outcome among the predictors.")
    (tmp_path / "branch_1" / "round_0").mkdir(parents=True)
    (tmp_path / "branch_1" / "round_0" / "review_report.json").write_text(json.dumps(
        {"round": 0, "verdict": "REVISE", "issues": [leak], "checks": [], "revision_actions": [drop],
         "revision_instructions": {"formulate": [leak["recommendation"]]}, "rerun_from": "formulate"}))
    found = lessons_from_run(tmp_path, None, "run-b", NOW)
    carrying = [le for le in found if le.action]
    assert len(carrying) == 1 and carrying[0].severity == "critical" and carrying[0].stage == "formulate"
    store = tmp_path / "lessons.jsonl"
    append(store, found)
    ranked = relevant(load(store), NOW + timedelta(days=10), stage="formulate", k=10)
    carried = carried_actions(ranked, "formulate", "X4EVRATNDCLG")
    assert [(a["action"], a["value"]) for a in carried] == [("drop_predictor", "X3TGPAACAD")]
    assert "lesson from run run-b" in carried[0]["reason"]
    assert carried_actions(ranked, "formulate", "X2TXMTSCOR") == []  # another outcome: not carried
    expired = relevant(load(store), NOW + timedelta(days=91), stage="formulate", k=10)
    assert carried_actions(expired, "formulate", "X4EVRATNDCLG") == []


# ---- the store -----------------------------------------------------------------------------------------

def test_append_dedupes_within_a_run_and_load_round_trips(tmp_path, run_folders):
    store = tmp_path / "data" / "edm-ars" / "lessons.jsonl"
    found = lessons_from_run(*run_folders, "run-42", NOW)
    assert load(store) == []
    assert append(store, found) == len(found) == 5
    assert append(store, found) == 0  # the same run again: nothing new
    assert append(store, [found[0], found[0]]) == 0
    again = lessons_from_run(*run_folders, "run-43", NOW)
    assert append(store, again + again) == len(again)  # another run learns the same things: kept
    loaded = load(store)
    assert loaded == found + again
    assert len(store.read_text().splitlines()) == 10
    assert not list(store.parent.glob("*.tmp"))


def test_append_keeps_existing_lines(tmp_path):
    store = tmp_path / "lessons.jsonl"
    store.write_text('{"hand written": true}')  # no final newline, and not a lesson
    assert append(store, [lesson()]) == 1
    lines = store.read_text().splitlines()
    assert lines[0] == '{"hand written": true}' and json.loads(lines[1])["severity"] == "critical"


def test_a_malformed_line_is_skipped_with_a_warning(tmp_path, caplog):
    store = tmp_path / "lessons.jsonl"
    append(store, [lesson(text="first")])
    with store.open("a") as fh:
        fh.write('{"category": "x", "severi\n')      # truncated
        fh.write('{"category": "x", "severity": "blocker", "text": "t", "time": "2025-01-01T00:00:00Z", '
                 '"run_id": "r", "source": "revision"}\n')
        fh.write("[1, 2]\n\n")
    append(store, [lesson(text="second")])
    with caplog.at_level(logging.WARNING, logger="edm_ars"):
        loaded = load(store)
    assert [le.text for le in loaded] == ["first", "second"]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 3 and "line 2" in warnings[0] and "blocker" in warnings[1]


def test_default_store_path(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("EDM_ARS_LESSONS", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_store_path() == tmp_path / "home" / ".local" / "share" / "edm-ars" / "lessons.jsonl"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    assert default_store_path() == tmp_path / "home" / ".local" / "share" / "edm-ars" / "lessons.jsonl"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_path() == tmp_path / "xdg" / "edm-ars" / "lessons.jsonl"
    monkeypatch.setenv("EDM_ARS_LESSONS", str(tmp_path / "mine.jsonl"))
    assert default_store_path() == tmp_path / "mine.jsonl"


# ---- showing -------------------------------------------------------------------------------------------

def test_render_is_a_short_bullet_list():
    assert render([]) == ""
    long = lesson("major", 5, text="word " * 200, stage=None, category="analysis")
    text = render(relevant([lesson(), long], NOW))
    lines = text.splitlines()
    assert lines[0].startswith("Lessons from earlier runs")
    assert lines[1] == "- [critical, formulate; substantive_validity] Leakage through a later-wave predictor -> drop it"
    assert lines[2].startswith("- [major; analysis] word word") and lines[2].endswith("...")
    assert len(lines[2]) < 350


def test_cli_lessons(tmp_path):
    store = tmp_path / "lessons.jsonl"
    assert cli_lessons(store, NOW, stage=None, k=5, all_=False) == f"no lessons in {store}"
    append(store, [lesson("critical", 0, text="leak"), lesson("minor", 12.5, text="figures", stage="analyze"),
                   lesson("major", 100, text="ancient", stage=None)])
    text = cli_lessons(store, NOW, stage=None, k=5, all_=False)
    lines = text.splitlines()
    assert lines[0] == f"3 lesson(s) in {store}; showing top 5"
    assert lines[1].split() == ["weight", "age", "severity", "stage", "lesson"]
    assert lines[2].split()[:4] == ["3.00", "0.0d", "critical", "formulate"] and lines[2].endswith("leak")
    assert lines[3].split()[:4] == ["0.75", "12.5d", "minor", "analyze"] and lines[3].endswith("figures")
    assert len(lines) == 4  # the 100-day-old lesson is past the horizon
    # --stage filters: only that stage's lessons, ranked by weight within it (issue 39)
    append(store, [lesson("major", 1, text="late", stage="analyze"), lesson("minor", 0, text="any", stage=None)])
    lines = cli_lessons(store, NOW, stage="analyze", k=5, all_=False).splitlines()
    assert lines[0] == f"5 lesson(s) in {store}, 2 for stage analyze; showing top 5"
    assert [line.split()[-1] for line in lines[2:]] == ["late", "figures"]
    assert {line.split()[3] for line in lines[2:]} == {"analyze"}
    assert [line.split()[-1] for line in cli_lessons(store, NOW, stage="formulate", k=5, all_=True).splitlines()[2:]] \
        == ["leak"]
    assert cli_lessons(store, NOW, stage="write", k=5, all_=False).splitlines() == [
        f"5 lesson(s) in {store}, 0 for stage write",
        "(no lesson for stage write; `edm-ars lessons` without --stage lists them all)"]
    everything = cli_lessons(store, NOW, stage=None, k=1, all_=True).splitlines()
    assert len(everything) == 7 and everything[-1].split()[:4] == ["0.00", "100.0d", "major", "-"]
    only_old = tmp_path / "old.jsonl"
    append(only_old, [lesson(days=200)])
    assert "older than 90 days" in cli_lessons(only_old, NOW, stage=None, k=5, all_=False)


def test_line_separators_inside_a_lesson_survive(tmp_path):
    store = tmp_path / "lessons.jsonl"
    odd = lesson(text="first\u2028second\x85third")
    append(store, [odd])
    assert load(store) == [odd]
