"""What is already known about the data, in the paper (issue 36): the registry's published findings tested by the
study, as a Results subsection with a table and a Discussion paragraph set against the cited sources; every number
reconciles; nothing of it for a data set without published findings."""

from __future__ import annotations

import copy

import test_writer as tw

from edm_ars.writer.verify import verify_paper

KRUEGER = {"key": "krueger1999experimental", "title": "Experimental Estimates of Education Production Functions",
           "authors": ["Alan B. Krueger"], "year": 1999, "venue": "The Quarterly Journal of Economics",
           "topics": ["star"], "status": "VERIFIED",
           "bibtex": "@article{krueger1999experimental,\n  author = {Krueger, Alan B.},\n  title = {Experimental "
                     "Estimates of Education Production Functions},\n  journal = {The Quarterly Journal of "
                     "Economics},\n  year = {1999}\n}"}


def replication(status: str = "agrees") -> dict:
    low, high = (1.049, 10.022) if status == "agrees" else (-6.2, -0.4)
    return {"source": "registry", "counts": {"agrees": int(status == "agrees"), "differs": int(status == "differs"),
                                             "cannot_test": 1},
            "findings": [
                {"id": "small_class_advantage", "claim": "Students in small classes scored higher than students in "
                 "regular classes, by about four percentile points in the first year.",
                 "cite": "krueger1999experimental", "where": "abstract", "kind": "group_difference",
                 "published": {"variable": "X1SEX", "higher": "small", "lower": "regular"},
                 "estimate": (low + high) / 2,
                 "ci": [low, high], "status": status,
                 "reason": f"small minus regular is {(low + high) / 2:.3f} (95% CI {low} to {high})."},
                {"id": "aides_little_effect", "claim": "Teacher aides had little effect on achievement.",
                 "cite": "krueger1999experimental", "where": "abstract", "kind": "none", "published": {},
                 "estimate": None, "ci": None, "status": "cannot_test",
                 "reason": "A claim of no effect cannot be tested by a predictive design."}]}


def _paper(tmp_path, rep: dict | None) -> tuple[str, dict]:
    arts = copy.deepcopy(tw.real_artifacts())
    arts["literature"]["papers"].append(dict(KRUEGER))
    if rep is not None:
        arts["results"]["replication"] = rep
    _, out = tw.build_fixture_paper(tmp_path, arts)
    return " ".join((out / "paper.tex").read_text().split()), arts


def test_the_replication_table_reports_each_finding_with_its_source_and_reconciles(tmp_path):
    tex, arts = _paper(tmp_path, replication("agrees"))
    assert "\\label{tab:replication}" in tex and "What is already known about these data" in tex
    assert "\\citep{krueger1999experimental}" in tex
    assert "cannot be tested here" in tex and "agrees" in tex
    assert "minus that of regular" in tex and "the direction is as published~\\citep{krueger1999experimental}" in tex
    assert "this study reproduces \\NFindingsAgrees{} published finding on them~\\citep{krueger1999experimental}" in tex
    assert "krueger1999experimental" in (tmp_path / "paper" / "references.bib").read_text()
    abstract = tex.split("%%BEGIN:ABSTRACT%%")[1].split("%%END:ABSTRACT%%")[0]
    assert "\\NFindingsAgrees{} of \\NFindingsTested{} agreed with this study's estimates" in abstract
    report = verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts))
    assert report.ok, report.summary()


def test_a_finding_that_differs_is_said_to_differ(tmp_path):
    tex = _paper(tmp_path, replication("differs"))[0]
    assert "the direction is unlike the published finding" in tex
    assert "It differs from \\NFindingsDiffers{} published finding, which" in tex
    assert "1 agree" not in tex and "\\NFindingsAgrees{} agree with" not in tex
    assert "this study reproduces" not in tex


def test_no_published_findings_no_table(tmp_path):
    tex = _paper(tmp_path, {"source": "none", "findings": [], "counts": {"agrees": 0, "differs": 0,
                                                                         "cannot_test": 0}})[0]
    assert "tab:replication" not in tex and "What is already known" not in tex


def test_findings_none_of_which_can_be_tested_are_said_so_once(tmp_path):
    rep = replication("agrees")
    rep["findings"] = rep["findings"][1:]
    rep["counts"] = {"agrees": 0, "differs": 0, "cannot_test": 1}
    tex = _paper(tmp_path, rep)[0]
    assert "none of them can be tested with these data and this design" in tex
    assert "Tested with this study's training rows" not in tex and "could be tested with this design" in tex


def test_an_estimate_that_does_not_settle_the_direction_is_not_called_untestable(tmp_path):
    rep = replication("agrees")
    rep["findings"][0].update(status="cannot_test", ci=[-1.2, 4.5], estimate=1.65,
                              reason="the interval includes zero, so these data do not settle the direction")
    rep["counts"] = {"agrees": 0, "differs": 0, "cannot_test": 2}
    tex = _paper(tmp_path, rep)[0]
    row = tex.split("\\label{tab:replication}")[1].split("\\midrule")[1].split("\\\\")[0]
    assert "not settled here" in row and "\\RepSmallClassAdvantageEstimate{}" in row
