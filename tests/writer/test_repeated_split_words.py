"""What the Methods say about a split that keeps repeated records of a unit together (issue 33): each unit's
records are said to be on one side, the counts are macros from the data report, and the cluster bootstrap is
described by what it draws (the units, or the clusters the units joined), never as a draw of schools it did not
make."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edm_ars.data.engineer import prepare
from edm_ars.writer.context import Citations, Ctx
from edm_ars.writer.macros import MacroTable
from edm_ars.writer.methods_data import split_method, split_sentences
from edm_ars.writer.phrases import Phrases
from edm_ars.writer.sections.methods import evaluation_text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "data"))
from test_repeated import PROTO, long_frame, registry, school_frame, spec  # noqa: E402

PHRASES = Phrases.load(ROOT / "config" / "prompts" / "phrases.yaml")


def ctx_for(report, reg):
    ctx = Ctx(spec=spec("regression"), lit={}, data=report, review={}, m=MacroTable(), cites=Citations([]),
              results={"task": "regression", "interval_method": "cluster_bootstrap", "thresholds": {}, "models": {}},
              registry_labels={}, ph=PHRASES, dataset=reg.prose)
    ctx.n.update({"TestFractionPct": "20\\%", "SplitSeed": "42", "GroupOverlap": "0", "TestN": "\\TestN{}",
                  "NClusters": "\\NClusters{}", "NBootstrap": "1000", "TestClusters": "\\TestClusters{}"})
    return ctx


@pytest.mark.parametrize("movers", [0.0, 0.03])
def test_children_in_schools(movers):
    reg = registry(cluster=True)
    report = prepare(long_frame(seed=3, movers=movers), spec("regression"), reg, None, PROTO, describe=False).report
    ctx = ctx_for(report, reg)
    text = split_sentences(ctx, split_method(ctx))
    assert "assigned whole schools" in text and "(\\NClusters{} schools)" in text
    assert "each child's records were kept on the same side as their school" in text
    assert "\\TestRecords{} records of \\TestUnits{} children" in text and "no child had records on both sides" in text
    macro = ctx.m.get("TestUnits")
    assert macro.raw == report["split"]["repeated"]["test_units"]
    assert macro.source == "data_report.json:split.repeated.test_units"
    boot = evaluation_text(ctx)
    if movers:  # children who moved joined schools: the groups are drawn, and the paper says so
        assert "\\SplitGroups{} groups of schools" in text
        assert "test groups (schools joined by the children who moved between them)" in boot
    else:  # every child in one school: the groups are the schools
        assert "groups" not in text and "draws the \\TestClusters{} test schools" in boot


def test_children_without_schools():
    reg = registry(cluster=False)
    report = prepare(long_frame(seed=3), spec("regression"), reg, None, PROTO, describe=False).report
    ctx = ctx_for(report, reg)
    text = split_sentences(ctx, split_method(ctx))
    assert "each child's records were assigned together to the training or the test set" in text
    assert "row level" not in text and "student level" not in text
    boot = evaluation_text(ctx)
    assert "draws the \\TestClusters{} test children with replacement and keeps all records of a drawn child" in boot
    assert "schools" not in boot


def test_nineteen_schools_state_their_number():
    reg = registry(repeated=False)
    report = prepare(school_frame(19), spec("regression"), reg, None, PROTO, describe=False).report
    ctx = ctx_for(report, reg)
    text = split_sentences(ctx, split_method(ctx))
    assert "assigned whole schools" in text and "(\\NClusters{} schools)" in text
    assert report["split"]["school_reconstruction"]["n_clusters"] == 19
    assert "child" not in text and "degenerate" not in text
