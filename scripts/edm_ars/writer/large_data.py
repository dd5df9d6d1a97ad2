"""The large-data policy in the paper (results.json `models.<m>.large_data`, written by edm_ars.analysis.large_data when the
data set had more rows than `analysis.large_data.rows`): a few sentences in the Methods' models subsection saying
what was sampled for tuning, how and why, what the stacked ensemble learned from, and what each tree of the random
forest drew. Nothing when the policy did not apply (a model record without `large_data`)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import RANDOM_FOREST, STACKING
from edm_ars.core.text import model_family
from edm_ars.writer.context import Ctx
from edm_ars.writer.phrases import plural

SRC = "results.json:models.{}.large_data"


def record(ctx: Ctx) -> tuple[str, dict[str, Any]]:
    """(the first single model whose fit records the policy, its record); ("", {}) when none does. The subsample is
    the same for every family (one seed, one data set), so one model's record speaks for all."""
    for name, rec in (ctx.results.get("models") or {}).items():
        if model_family(name) != STACKING and isinstance(rec.get("large_data"), dict):
            return name, rec["large_data"]
    return "", {}


def methods(ctx: Ctx) -> str:
    """The sentences, or "" when the policy did not apply."""
    name, rec = record(ctx)
    if not rec:
        return ""
    m, src = ctx.m, SRC.format(name)
    units, clusters = ctx.units, plural(ctx.cluster)
    n = m.count("LargeDataRows", rec["data_rows"], f"{src}.data_rows")
    threshold = m.count("LargeDataThreshold", rec["threshold_rows"], f"{src}.threshold_rows")
    train_rows = m.count("LargeDataTrainRows", rec["train_rows"], f"{src}.train_rows")
    if not rec.get("subsampled"):
        trees = forest(ctx)
        return ctx.ph("large_data.all_rows", n=n, units=units, threshold=threshold, train_rows=train_rows) + (
            " " + trees if trees else "")
    if rec.get("target_from") == "config":
        why = ctx.ph("large_data.why_config", units=units, target=m.count(
            "LargeDataTargetRows", rec["target_tune_rows"], f"{src}.target_tune_rows"))
    else:  # the size a data set at the threshold would give for training (records before target_from: the same)
        why = ctx.ph("large_data.why_threshold")
    common = dict(n=n, units=units, threshold=threshold, train_rows=train_rows, why=why,
                  tune_rows=m.count("LargeDataTuneRows", rec["tune_rows"], f"{src}.tune_rows"),
                  seed=m.count("LargeDataSeed", rec["seed"], f"{src}.seed"),
                  strata=m.count("LargeDataStrata", rec["strata"], f"{src}.strata"))
    outside = m.count("LargeDataOutsideRows", rec["oof_from_subsample_fit"], f"{src}.oof_from_subsample_fit")
    if ctx.school_split_ok:
        by = ctx.ph("large_data.by_rate") if rec.get("outcome_by") == "rate" else ctx.ph("large_data.by_mean")
        sents = [ctx.ph("large_data.subsample_clusters", clusters=clusters, outcome_by=by,
                        tune_clusters=m.count("LargeDataTuneClusters", rec["tune_clusters"], f"{src}.tune_clusters"),
                        train_clusters=m.count("LargeDataTrainClusters", rec["train_clusters"],
                                               f"{src}.train_clusters"), **common)]
        stacking = ctx.ph("large_data.stacking_clusters", units=units, outside=outside, clusters=clusters)
    else:
        sents = [ctx.ph("large_data.subsample_rows", **common)]
        stacking = ctx.ph("large_data.stacking_rows", units=units, outside=outside)
    if any(model_family(x) == STACKING for x in ctx.results["models"]):
        sents.append(stacking)
    trees = forest(ctx)
    return " ".join([*sents, trees] if trees else sents)


def forest(ctx: Ctx) -> str:
    """What each tree of the refitted random forest drew, when the policy set it."""
    for name, rec in (ctx.results.get("models") or {}).items():
        facts = rec.get("large_data") if name == RANDOM_FOREST else None
        if isinstance(facts, dict) and facts.get("forest_max_samples"):
            k = ctx.m.count("LargeDataForestRows", facts["forest_max_samples"],
                            f"{SRC.format(name)}.forest_max_samples")
            if facts.get("forest_max_samples_from") == "config":
                return ctx.ph("large_data.forest_config", k=k, units=ctx.units)
            return ctx.ph("large_data.forest_tuning", k=k, units=ctx.units)
    return ""
