"""Small samples (issue 33): a paper whose test set is under the Critic's floor (critic.min_test_n; the review's
code check `test_n` failed) says so in its abstract, the test-set size coming from results.json as a macro."""

from __future__ import annotations

import copy

import test_writer as tw

from edm_ars.writer import slot_content
from edm_ars.writer.verify import verify_paper

SMALL_CHECK = {"id": "an_test_n_min", "function": "test_n", "passed": False, "severity": "major",
               "detail": {"test_n": 11, "minimum": 200}}


def _abstract(tmp_path, review, test_n):
    rep, res = tw.data_report(False), tw.results(False)
    rep["test_n"] = res["test_n"] = test_n
    arts = {"data_report": rep, "results": res, "review": review}
    _, out = tw._build(tmp_path, binary=False, passed=True, **arts)
    tex = (out / "paper.tex").read_text()
    return tex, " ".join(slot_content(tex, "ABSTRACT").split()), arts, out


def test_a_test_set_under_the_floor_is_said_in_the_abstract_with_its_size_from_results(tmp_path):
    review = tw.review(True) | {"checks": [SMALL_CHECK], "unverified": True, "rubric_verdict": "REVISE"}
    _, abstract, arts, out = _abstract(tmp_path, review, 11)
    assert "The sample is small: the held-out estimates rest on a test set of only \\TestN{} students" in abstract
    assert "\\newcommand{\\TestN}{11} % results.json:test_n" in (out / "numbers.tex").read_text()
    named = tw._artifacts_by_name({"spec": tw.spec(False), "literature": tw.literature(), **arts})
    assert verify_paper(out / "paper.tex", artifacts=named).ok


def test_a_passed_test_set_check_leaves_the_abstract_as_it_was(tmp_path):
    passed = copy.deepcopy(SMALL_CHECK) | {"passed": True, "detail": {"test_n": 3720, "minimum": 200}}
    _, with_check, _, _ = _abstract(tmp_path / "a", tw.review(True) | {"checks": [passed]}, 3720)
    _, without, _, _ = _abstract(tmp_path / "b", tw.review(True), 3720)
    assert with_check == without and "The sample is small" not in without


def test_an_unverified_verdict_gives_the_warning_box_the_old_pass_marked_unverified_gave(tmp_path):
    """The Critic's REVISE with no round left is now the verdict UNVERIFIED (never PASS beside unverified: true);
    the paper's warning box says the same as before, once."""
    blocks = []
    for name, verdict in (("now", "UNVERIFIED"), ("before", "PASS")):
        rv = tw.review(True) | {"verdict": verdict, "rubric_verdict": "REVISE", "unverified": True}
        _, out = tw._build(tmp_path, binary=True, passed=True, name=name, review=rv)
        blocks.append(slot_content((out / "paper.tex").read_text(), "UNVERIFIED"))
    assert blocks[0] == blocks[1] and blocks[0].count("marked as unverified") == 1 and "UNVERIFIED}" not in blocks[0]
