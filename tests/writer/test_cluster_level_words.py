"""What the Methods and the Limitations say about data with more than one cluster level (issue 33: pupils in
primary AND secondary schools, registry dataset.grouping.also): the levels and their counts (macros from the data
report), which level the split kept together, and, when one level was not kept together, how many of its clusters
were on both sides and a limitation sentence saying so."""

from __future__ import annotations

import sys
from pathlib import Path

from edm_ars.data.engineer import prepare
from edm_ars.data.protocol import Protocol
from edm_ars.writer.methods_data import split_method, split_sentences
from edm_ars.writer.sections.limitations import level_not_kept_sentence
from edm_ars.writer.sections.methods import evaluation_text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "data"))
sys.path.insert(0, str(ROOT / "tests" / "writer"))
from test_cluster_levels import cross_frame, registry, spec  # noqa: E402
from test_repeated_split_words import ctx_for  # noqa: E402

PROTO = Protocol(min_analytic_n=100)


def test_both_levels_kept_together():
    reg = registry()
    report = prepare(cross_frame(n_secondary=60, cross=0.002, n_primary=300), spec("regression"), reg, None, PROTO,
                     describe=False).report
    ctx = ctx_for(report, reg)
    text = split_sentences(ctx, split_method(ctx))
    assert "clustered at more than one level: \\LevelAClusters{} secondary schools (\\texttt{second}) and " \
           "\\LevelBClusters{} primary schools (\\texttt{primary})" in text, text
    assert "\\SplitGroups{} groups, so that no secondary school or primary school had students in both sets" in text
    boot = evaluation_text(ctx)  # the bootstrap draws the joined groups, not "secondary schools"
    assert "draws the \\TestClusters{} test groups (secondary schools and primary schools joined by the students " \
           "they share)" in boot, boot
    assert ctx.m.get("LevelBClusters").raw == 300
    assert ctx.m.get("LevelBClusters").source == "data_report.json:split.cluster_levels.1.n_clusters"
    assert level_not_kept_sentence(ctx) == ""


def test_one_level_kept_together_and_the_other_named_as_a_limitation():
    reg = registry(split_by="secondary school")
    report = prepare(cross_frame(cross=0.2), spec("regression"), reg, None, PROTO, describe=False).report
    ctx = ctx_for(report, reg)
    text = split_sentences(ctx, split_method(ctx))
    assert "We assigned whole secondary schools to the training or the test set" in text, text
    assert "the other level was not kept together: \\LevelBBothSides{} primary schools had" in text
    both = report["split"]["cluster_levels"][1]["on_both_sides"]
    assert both > 0 and ctx.m.get("LevelBBothSides").raw == both
    assert "kept secondary schools together but not primary schools" in level_not_kept_sentence(ctx)
    assert "draws the \\TestClusters{} test secondary schools" in evaluation_text(ctx)
