"""writer/trace.py: the operands of a number's source as JSON pointers, and which macros become links."""

from __future__ import annotations

from edm_ars.writer.trace import checked, derived, group_pointer, link_macros, operands, pointer


def test_a_source_becomes_json_pointers_as_verify_paper_reads_it():
    artifact = {"class_balance": {"1.0": 0.3}, "models": {"xgboost": {"metrics": {"auc": 0.8}}},
                "fairness": {"attributes": {"X1RACE x X1SEX": {"gaps": [{"gap": 0.1}]}}}, "a/b": {"c~d": 1}}
    assert pointer(artifact, "models.xgboost.metrics.auc") == "/models/xgboost/metrics/auc"
    assert pointer(artifact, "class_balance.1.0") == "/class_balance/1.0"  # a key that holds a dot
    assert pointer(artifact, "fairness.attributes.X1RACE x X1SEX.gaps.0.gap") == \
        "/fairness/attributes/X1RACE x X1SEX/gaps/0/gap"
    assert group_pointer("/fairness/attributes/X1RACE x X1SEX/gaps/0/gap") == \
        "/fairness/attributes/X1RACE x X1SEX/gaps/*/gap"
    assert pointer(artifact, "fairness.attributes[kind=attribute].gaps") == "/fairness/attributes/*/gaps"
    assert pointer(artifact, "a/b.c~d") == "/a~1b/c~0d"  # RFC 6901 escapes


def test_derived_sources_name_their_operands():
    src = "|results.json:models.a.metrics.auc - results.json:models.b.metrics.auc|"
    assert operands(src) == [("results.json", "models.a.metrics.auc"), ("results.json", "models.b.metrics.auc")]
    assert derived(src) and derived("100 * results.json:x.y") and derived("len(data_report.json:predictors)")
    assert not derived("results.json:models.a.metrics.auc")
    assert operands("quoted from provenance.json") == [("provenance.json", "")]
    assert operands("data_report.json:split.repeated.train_units + data_report.json:split.repeated.test_units - "
                    "data_report.json:split.repeated.units_on_both_sides") == [
        ("data_report.json", "split.repeated.train_units"), ("data_report.json", "split.repeated.test_units"),
        ("data_report.json", "split.repeated.units_on_both_sides")]


def test_only_numbers_verify_paper_checks_become_links():
    assert checked("0.812") and checked("23{,}503") and checked("84.4\\%") and checked("12\\%")
    assert not checked("2016") and not checked("42") and not checked("Project STAR")
    tex = ("% numbers.tex\n\\newcommand{\\Auc}{0.812} % results.json:a\n\\newcommand{\\Seed}{42} % config\n"
           "\\newcommand{\\N}{23{,}503} % data_report.json:n\n")
    records = {"numbers": [{"macro": "\\Auc", "checked": True, "target": "src:1"},
                           {"macro": "\\Seed", "checked": False, "target": "src:2"},
                           {"macro": "\\N", "checked": True, "target": "src:3"}]}
    out = link_macros(tex, records)
    assert "\\newcommand{\\Auc}{\\srclink{src:1}{0.812}} % results.json:a" in out
    assert "\\newcommand{\\N}{\\srclink{src:3}{23{,}503}} % data_report.json:n" in out
    assert "\\newcommand{\\Seed}{42} % config" in out and "\\DeclareRobustCommand{\\srclink}" in out
