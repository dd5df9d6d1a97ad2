"""Candidate studies (edm_ars.formulate.branches): drafting distinct studies, de-duplication against one another and the
findings store, the store itself, and the selection rule."""

import itertools
import json
from pathlib import Path

import pytest
from workflow import snakemake

from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import load_registry
from edm_ars.formulate.branches import (
    SAME_STUDY,
    apply_draft,
    distance,
    diversity,
    draft_offline,
    findings_store_path,
    load_findings,
    offline_candidates,
    pick_drafts,
    record_findings,
    select,
)
from edm_ars.formulate.branches_model import check_draft, draft_with_model
from edm_ars.formulate.spec import offline_spec, validate_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hsls():
    return load_registry(ROOT / "registry" / "hsls09")


def study(outcome, *predictors, **extra):
    return {"outcome": outcome, "predictors": list(predictors), **extra}


def test_distance_is_half_outcome_half_predictor_overlap():
    a = study("y", "a", "b", "c", "d")
    assert distance(a, a) == 0
    assert distance(a, study("y", "a", "b")) == 0.25  # Jaccard 2/4
    assert distance(a, study("z", "a", "b", "c", "d")) == 0.5
    assert distance(a, study("z", "e", "f")) == 1.0
    assert diversity([a]) is None
    assert diversity([a, study("z", "e"), study("y", "a", "b")]) == round((1.0 + 0.25 + 0.5 * 1 + 0.5 * 1) / 3, 4)


def test_four_offline_drafts_are_distinct_and_start_with_the_default_question(hsls):
    drafted = draft_offline(hsls, n=4, prompt=None, question_id=None, earlier=[])
    drafts = drafted["drafts"]
    assert [d["branch"] for d in drafts] == [1, 2, 3, 4]
    assert drafts[0]["question_id"] == "college_attendance" and drafts[0]["variant"] == "as_registered"
    for a, b in itertools.combinations(drafts, 2):
        assert distance(a, b) >= SAME_STUDY
    assert len({d["outcome"] for d in drafts}) == 4  # the registry's own questions come first
    assert all(d["novelty"]["statement"] == "no earlier study of this data set in the findings store"
               for d in drafts)


def test_every_draft_passes_the_spec_gate(hsls):
    for draft in offline_candidates(hsls, None, None):
        spec = offline_spec(hsls, prompt=None, question_id=draft["question_id"], round_=0)
        spec = apply_draft(spec, dict(draft, branch=1, novelty={"statement": "-"}))
        assert validate_spec(spec, hsls) == [], (draft["question_id"], draft["variant"])
        assert sorted(p["name"] for p in spec["predictors"]) == sorted(draft["predictors"])
        assert spec["branch"]["variant"] == draft["variant"]


def test_variant_questions_name_what_they_keep(hsls):
    variants = {(d["question_id"], d["variant"]): d for d in offline_candidates(hsls, None, None)}
    early = variants[("college_attendance", "earliest_wave")]
    assert "9th grade" in early["research_question"] and early["early_warning_waves"] == ["base_year"]
    assert all(p.startswith("X1") for p in early["predictors"])
    without = next(d for (q, v), d in variants.items() if q == "college_attendance" and v.startswith("without_"))
    assert "without the predictors that describe" in without["research_question"]


def test_a_prompt_chooses_the_first_branch(hsls):
    drafts = draft_offline(hsls, n=2, prompt="high school dropout", question_id=None, earlier=[])["drafts"]
    assert drafts[0]["question_id"] == "hs_completion"


def test_a_duplicate_draft_is_dropped_with_its_reason():
    a, twin = study("y", "a", "b", "c", "d", "e", "f", "g"), study("y", "a", "b", "c", "d", "e", "f", "h")
    other = study("z", "a", "b", "c")
    drafts, skipped = pick_drafts([a, twin, other], 2, [])
    assert [d["outcome"] for d in drafts] == ["y", "z"]
    assert skipped[0]["reason"].startswith("duplicate of branch 1 (distance 0.12")


def test_studies_in_the_store_are_not_drafted_again(hsls):
    first = draft_offline(hsls, n=4, prompt=None, question_id=None, earlier=[])["drafts"]
    stored = [dict(d, dataset=hsls.name, workdir="/elsewhere") for d in first]
    second = draft_offline(hsls, n=4, prompt=None, question_id=None, earlier=stored)
    assert all(distance(a, b) >= SAME_STUDY for a in second["drafts"] for b in first)
    assert len(second["skipped"]) >= 4 and all("already done" in s["reason"] for s in second["skipped"][:4])
    assert all(d["novelty"]["nearest"] for d in second["drafts"])


def test_too_many_branches_for_the_registry_is_a_clear_error(hsls):
    with pytest.raises(EdmArsError, match=r"branches=40: the registry of hsls09 supports only 11 candidate studies .*14 drafted, 3 dropped: duplicate of branch"):
        draft_offline(hsls, n=40, prompt=None, question_id=None, earlier=[])


def test_one_branch_runs_the_configured_study_even_when_stored(hsls):
    first = draft_offline(hsls, n=1, prompt=None, question_id=None, earlier=[])["drafts"][0]
    again = draft_offline(hsls, n=1, prompt=None, question_id=None,
                          earlier=[dict(first, dataset="hsls09", workdir="/x")])["drafts"][0]
    assert again["question_id"] == first["question_id"] and again["source"] == "configured"
    assert again["novelty"]["statement"].startswith("repeats 'college_attendance/as_registered'")


def test_the_store_keeps_other_runs_and_replaces_this_folders(tmp_path):
    store = findings_store_path("", tmp_path / "lessons" / "lessons.jsonl")
    assert store == tmp_path / "lessons" / "findings.jsonl"
    assert findings_store_path(str(tmp_path / "f.jsonl"), "x") == tmp_path / "f.jsonl"
    run = lambda wd, b, v: {"workdir": wd, "dataset": "d", "branch": b, "outcome": "y", "predictors": [v]}  # noqa: E731
    record_findings(store, [run("/a", 1, "p"), run("/a", 2, "q")])
    record_findings(store, [run("/b", 1, "r")])
    record_findings(store, [run("/a", 1, "s")])  # the same folder's branch 1, redone
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    assert sorted((e["workdir"], e["branch"], e["predictors"][0]) for e in lines) == [
        ("/a", 1, "s"), ("/a", 2, "q"), ("/b", 1, "r")]
    assert [e["workdir"] for e in load_findings(store, "d", workdir="/a")] == ["/b"]
    assert load_findings(store, "d", data_sha256="other rows") == []
    assert load_findings(store, "other") == [] and load_findings(tmp_path / "none.jsonl", "d") == []
    store.write_text(store.read_text() + "{broken\n")
    with pytest.raises(EdmArsError, match=r"findings store .*findings.jsonl, line 4: not JSON"):
        load_findings(store, "d")


def reviewed(branch, verdict="PASS", score=9.0, evidence=0.5, novelty=None):
    return {"branch": branch, "verdict": verdict, "score": score, "evidence": evidence, "novelty": novelty}


def test_selection_follows_the_stated_rule():
    chosen = select([reviewed(1, "ABORT", 10), reviewed(2, "PASS", 8), reviewed(3, "PASS", 9)])
    assert chosen["chosen"] == 3
    why = {s["branch"]: s["why_not_chosen"] for s in chosen["branches"]}
    assert why == {1: "verdict ABORT (chosen: PASS)", 2: "lower review score (8 against 9)", 3: None}
    by_evidence = select([reviewed(1, evidence=0.4), reviewed(2, evidence=0.6)])
    assert by_evidence["chosen"] == 2 and "weaker evidence (40% of claims supported against 60%)" in \
        by_evidence["branches"][0]["why_not_chosen"]
    by_novelty = select([reviewed(1, novelty=0.3), reviewed(2, novelty=0.9)])
    assert by_novelty["chosen"] == 2
    tie = select([reviewed(1), reviewed(2)])
    assert tie["chosen"] == 1 and "tied" in tie["branches"][1]["why_not_chosen"]


def test_a_model_draft_is_checked_against_the_registry(hsls):
    ok, why = check_draft(hsls, {"research_question": "How well can GPA be predicted from ninth grade?",
                                 "outcome": "X3TGPAACAD",
                                 "predictors": ["X1SES", "X1TXMTSCOR", "X1MTHEFF", "X4EVRATNDCLG", "NOPE"]})
    assert ok["predictors"] == ["X1SES", "X1TXMTSCOR", "X1MTHEFF"] and ok["left_out"] == ["X4EVRATNDCLG", "NOPE"]
    bad, why = check_draft(hsls, {"research_question": "x" * 30, "outcome": "NOT_A_VARIABLE", "predictors": []})
    assert bad is None and "not in the registry" in why


class FakeClient:
    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def complete_json(self, system, messages, *, tag, schema=None):
        self.calls.append((tag, messages[0]["content"]))
        return self.answer, None


def test_model_drafts_are_deduplicated_and_filled_from_the_registry(hsls):
    preds = ["X1SES", "X1TXMTSCOR", "X1MTHEFF", "X1PAREDU"]
    answer = {"drafts": [
        {"research_question": "How accurately can 11th-grade math be predicted?", "outcome": "X2TXMTSCOR",
         "predictors": preds},
        {"research_question": "The same study again, reworded slightly.", "outcome": "X2TXMTSCOR",
         "predictors": preds},
        {"research_question": "A study of a variable that does not exist.", "outcome": "NOPE", "predictors": preds}]}
    client = FakeClient(answer)
    prompts = {"system": "{dataset_title} {dataset_rules} {variables}",
               "user": "{prompt} {questions} {earlier} {n}"}
    out = draft_with_model(client, prompts, hsls, n=3, prompt=None, question_id=None, earlier=[])
    assert len(client.calls) == 1 and client.calls[0][0] == "draft"
    sources = [d["source"] for d in out["drafts"]]
    assert sources[0] == "model" and all(s.startswith("registry (filled in") for s in sources[1:])
    reasons = " ".join(s["reason"] for s in out["skipped"])
    assert "duplicate of branch 1" in reasons and "NOPE is not in the registry" in reasons
    for a, b in itertools.combinations(out["drafts"], 2):
        assert distance(a, b) >= SAME_STUDY


def _planned(result) -> dict[str, int]:
    """Job counts of a dry run's job table (`rule  count`)."""
    counts, table = {}, False
    for line in result.stdout.splitlines() + result.stderr.splitlines():
        parts = line.split()
        if parts[:2] == ["job", "count"]:
            table = True
        elif table and len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


@pytest.mark.slow
def test_candidates_are_screened_unless_screening_is_off(tmp_path):
    """With several branches, the plan before the selection is the screening of each candidate (the screening
    families, no stacking, stability or repeated-split jobs); with screening off, every candidate's full analysis."""
    (tmp_path / "on").mkdir(), (tmp_path / "off").mkdir()
    screened = _planned(snakemake(tmp_path / "on", "-n", "output/paper.pdf", config={"branches": "2"}))
    assert screened["fit_model"] == 4 and screened["critique"] == 2  # logistic and xgboost, two branches
    assert not {"fit_stacking", "stability_run", "split_run", "plan_supplementary"} & set(screened)
    full = _planned(snakemake(tmp_path / "off", "-n", "output/paper.pdf", config={"branches": "2"},
                              overrides="screening:\n  enabled: false\n"))
    assert full["fit_model"] == 4 and full["fit_stacking"] == 2 and full["stability_run"] == 4
    assert full["split_run"] == 4 and full["critique"] == 2
