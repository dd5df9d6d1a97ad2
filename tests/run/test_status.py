"""What `edm-ars status` says of each round's review: the verdict as the paper states it (the rubric's verdict and
where the loop stopped for a paper written UNVERIFIED), from reviews the Critic's own rule makes."""

from __future__ import annotations

import json
import subprocess
import sys

from edm_ars.review.critic import _assemble, _issue, compute_verdict
from edm_ars.run.status import last_review, paper_flag, round_line, verdict_words
from edm_ars.writer.integrity import unverified_reasons


def critic_review(round_: int, max_revisions: int, issues: list[dict], overall: float, forced: bool = False) -> dict:
    """A review as the offline Critic assembles it (its verdict by rule)."""
    decision = compute_verdict(issues, overall, round_=round_, max_revisions=max_revisions, forced=forced)
    return _assemble(round_, issues, [], {}, overall, decision, forced=forced, backend="offline",
                     max_revisions=max_revisions)


def analyze_issue() -> dict:
    return _issue("few_models", "major", "analysis", "analyze", "Only one model family was compared.",
                  "Add a model family.")


def writer_note() -> dict:
    return _issue("fairness_note", "minor", "reporting", "write", "Report the subgroup gaps.", "Say them.")


def test_a_pass_is_a_pass():
    rv = critic_review(0, 2, [writer_note()], 9.9)
    assert rv["verdict"] == "PASS" and not unverified_reasons(rv)
    assert verdict_words(rv) == "review PASS (score 9.9, 1 issue)"
    assert paper_flag(rv) == ""


def test_a_revise_names_the_stage_the_next_round_reruns_from():
    rv = critic_review(0, 2, [analyze_issue(), writer_note()], 6.5)
    assert rv["verdict"] == "REVISE"
    assert verdict_words(rv) == "review REVISE (score 6.5, 2 issues); the next round re-runs from analyze"


def test_a_revise_at_the_cap_reads_as_the_rubric_at_the_cap_and_the_paper_unverified():
    rv = critic_review(2, 2, [analyze_issue(), writer_note()], 6.5)
    assert (rv["verdict"], rv["rubric_verdict"], rv["unverified"]) == ("UNVERIFIED", "REVISE", True)
    words = verdict_words(rv)
    assert words == ("rubric REVISE at the revision cap (2 of 2 revision rounds): the paper is written UNVERIFIED; "
                     "score 6.5, 2 issues")
    assert "PASS" not in words
    assert paper_flag(rv) == ", flagged UNVERIFIED: rubric REVISE at the revision cap (2 of 2 revision rounds)"


def test_a_pass_the_loop_made_at_the_cap_reads_as_the_rubric_s_revise():
    """Reviews written before the verdict UNVERIFIED existed: verdict PASS, rubric REVISE, marked unverified (the
    issue's `review PASS (score 9.4, 2 issues); UNVERIFIED`)."""
    rv = {"round": 2, "verdict": "PASS", "rubric_verdict": "REVISE", "unverified": True, "max_revisions": 2,
          "overall_score": 9.4, "issues": [analyze_issue(), writer_note()], "rerun_from": None}
    assert verdict_words(rv) == ("rubric REVISE at the revision cap (2 of 2 revision rounds): the paper is written "
                                 "UNVERIFIED; score 9.4, 2 issues")


def test_no_revision_rounds_allowed():
    rv = critic_review(0, 0, [analyze_issue()], 6.5)
    assert verdict_words(rv).startswith("rubric REVISE at the revision cap (no revision rounds allowed): the paper "
                                        "is written UNVERIFIED")


def test_a_cap_no_revision_can_lift_names_its_issue():
    small = _issue("small_test_set", "major", "data", "write", "Only 40 test rows.", "Say so.", caps=True)
    rv = critic_review(0, 2, [small], 9.0)
    assert rv["verdict"] == "UNVERIFIED" and rv["round"] < rv["max_revisions"]
    assert verdict_words(rv) == ("rubric REVISE that no revision can answer (small_test_set): the paper is written "
                                 "UNVERIFIED; score 9.0, 1 issue")


def test_an_abort_says_why_and_that_no_paper_is_written():
    fatal = _issue("too_few", "critical", "data", "engineer", "Only 848 analytic cases.", "Get more.",
                   unfixable=True)
    rv = critic_review(0, 2, [fatal], 3.0)
    assert rv["verdict"] == "ABORT"
    assert verdict_words(rv) == "review ABORT (score 3.0, 1 issue): Only 848 analytic cases; no paper is written"


def test_round_lines_and_the_paper_of_a_run_capped_at_its_second_revision(tmp_path):
    """The status command over a run folder: each round's verdict, and the paper flagged as the paper is."""
    branch = tmp_path / "output" / "branch_1"
    reviews = [critic_review(r, 2, [analyze_issue()], 6.5) for r in range(3)]
    for r, rv in enumerate(reviews):
        folder = branch / f"round_{r}"
        folder.mkdir(parents=True)
        (folder / "results.json").write_text("{}")
        (folder / "review_report.json").write_text(json.dumps(rv))
    (branch / "round_0" / "research_spec.json").write_text("{}")
    (branch / "round_3").mkdir()  # a round folder with nothing in it yet
    assert round_line(0, branch / "round_0") == ("round 0: ran formulate, analyze; review REVISE (score 6.5, 1 issue); "
                                                 "the next round re-runs from analyze")
    assert round_line(2, branch / "round_2").startswith("round 2: ran analyze; rubric REVISE at the revision cap "
                                                        "(2 of 2 revision rounds): the paper is written UNVERIFIED")
    assert round_line(3, branch / "round_3") == "round 3: ran nothing yet; review pending"
    assert last_review(branch) == reviews[2]
    (tmp_path / "output" / "paper.pdf").write_bytes(b"%PDF-1.5\n")
    printed = subprocess.run([sys.executable, "-m", "edm_ars.cli", "status"], capture_output=True, text=True,
                             cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[-1] == ("paper: output/paper.pdf, flagged UNVERIFIED: rubric REVISE at the revision cap "
                         "(2 of 2 revision rounds)"), printed.stdout
    assert "review PASS" not in printed.stdout and "; UNVERIFIED" not in printed.stdout
