"""The repeated grouped splits (results.json `splits`, edm_ars.analysis.splits) in the paper: their macros, the model table's
column, a Methods paragraph, a Results paragraph, a Discussion sentence and a Limitations item (a shared module the
sections call, like narrative). Absent when the run was not repeated over splits (analysis.repeated_splits 1), so
every function then returns nothing."""

from __future__ import annotations

from typing import Any

from edm_ars.core.text import cap_first, is_number
from edm_ars.writer.common import CI_LEVEL, metric_name, model_np
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name

SRC = "results.json:splits"


def record(ctx: Ctx) -> dict[str, Any]:
    """results.json `splits` when the study was repeated over more than one split, else {}."""
    sp = ctx.results.get("splits")
    if not isinstance(sp, dict) or not is_number(sp.get("n_splits")) or sp["n_splits"] < 2:
        return {}
    return sp


def register(ctx: Ctx) -> None:
    """The macros of the splits: their number, the test clusters per split, each refitted model's mean and SD (and
    the reference model's range and its single-split interval's half-width)."""
    sp = record(ctx)
    if not sp:
        return
    m, n, metric = ctx.m, ctx.n, ctx.primary
    n["splits|n"] = m.count("NSplits", sp["n_splits"], f"{SRC}.n_splits")
    n["splits|extra"] = m.count("NRepeatedSplits", sp["n_repeated"], f"{SRC}.n_repeated")
    for end in ("min", "max"):  # the test clusters per split (the test students when the splits are not grouped)
        if sp.get("clustered"):
            n[f"splits|clusters_{end}"] = m.count(macro_name("Split", "Test", "Clusters", end),
                                                  sp["test_clusters"][end], f"{SRC}.test_clusters.{end}")
        else:
            n[f"splits|test_n_{end}"] = m.count(macro_name("Split", "TestN", end), sp["test_n"][end],
                                                f"{SRC}.test_n.{end}")
    for name, rec in (sp.get("models") or {}).items():
        if not rec.get("n"):
            continue
        for stat in ("mean", "sd", "min", "max"):
            n[f"{name}|split_{stat}"] = m.metric(macro_name(name, metric, "Split", stat), rec[stat],
                                                 f"{SRC}.models.{name}.{stat}")
        n[f"{name}|split_best_on"] = m.count(macro_name(name, "Split", "Best", "On"), rec.get("best_on", 0),
                                             f"{SRC}.models.{name}.best_on")
    ref = sp.get("reference") or {}
    if ref.get("model") in (sp.get("models") or {}) and is_number(ref.get("ci_half_width")):
        n["splits|half_width"] = m.metric(macro_name("Split", "Reference", "Half", "Width"), ref["ci_half_width"],
                                          f"{SRC}.reference.ci_half_width")


def reference(ctx: Ctx) -> dict[str, Any]:
    """The model whose spread is set beside its single-split interval, when its macros exist."""
    ref = record(ctx).get("reference") or {}
    return ref if ref.get("model") and f"{ref['model']}|split_sd" in ctx.n and "splits|half_width" in ctx.n else {}


# ---- the model table -------------------------------------------------------------------------------------------


def table_head(ctx: Ctx) -> list[str]:
    """The model table's column of the splits ([] without splits)."""
    return [ctx.ph("splits.table_head", n_splits=ctx.n["splits|n"])] if record(ctx) else []


def table_cells(ctx: Ctx, name: str) -> list[str]:
    """A model's cell in that column: mean (SD) over the splits, '--' for a model scored on the main split only."""
    if not record(ctx):
        return []
    mean, sd = ctx.n.get(f"{name}|split_mean"), ctx.n.get(f"{name}|split_sd")
    return [f"{mean} ({sd})" if mean and sd else "--"]


def table_caption(ctx: Ctx) -> str:
    sp = record(ctx)
    if not sp:
        return ""
    text = ctx.ph("splits.table_caption", metric=metric_name(ctx), n_splits=ctx.n["splits|n"])
    if [x for x in sp.get("not_refitted") or [] if x in ctx.results["models"]]:
        text += " " + ctx.ph("splits.table_caption_main_only")
    return text


# ---- Methods, Results, Discussion, Limitations -----------------------------------------------------------------


def _clusters(ctx: Ctx) -> str:
    """'181 to 195 test schools' (or 'test students' when the splits are not grouped)."""
    sp, n = record(ctx), ctx.n
    if sp.get("clustered"):
        lo, hi, unit = n["splits|clusters_min"], n["splits|clusters_max"], ctx.cluster
    else:
        lo, hi, unit = n["splits|test_n_min"], n["splits|test_n_max"], ctx.ph("common.unit")
    counts = sp["test_clusters"] if sp.get("clustered") else sp["test_n"]
    if counts["min"] == counts["max"]:
        return ctx.ph("splits.test_units_one", count=lo, unit=unit)
    return ctx.ph("splits.test_units_range", low=lo, high=hi, unit=unit)


def methods(ctx: Ctx) -> str:
    """The design of the repeated splits (a paragraph of the evaluation subsection)."""
    sp = record(ctx)
    if not sp:
        return ""
    grouped = ctx.ph("splits.methods_grouped", unit=ctx.cluster) if sp.get("clustered") else ""
    sents = [ctx.ph("splits.methods_design", n_splits=ctx.n["splits|n"], extra=ctx.n["splits|extra"],
                    grouped=grouped),
             ctx.ph("splits.methods_refit", metric=metric_name(ctx), n_splits=ctx.n["splits|n"])]
    if [x for x in sp.get("not_refitted") or [] if x in ctx.results["models"]]:
        sents.append(ctx.ph("splits.methods_stacking"))
    return " ".join(sents)


def results(ctx: Ctx) -> list[str]:
    """The spread of the reference model across the splits beside its single-split interval."""
    ref = reference(ctx)
    if not ref:
        return []
    n, name = ctx.n, ref["model"]
    spread = ctx.ph("splits.results_spread", n_splits=n["splits|n"], clusters=_clusters(ctx),
                    metric=metric_name(ctx), model=model_np(ctx, name), mean=n[f"{name}|split_mean"],
                    sd=n[f"{name}|split_sd"], min=n[f"{name}|split_min"], max=n[f"{name}|split_max"],
                    value=ctx.mac(name, ctx.primary), ci=ctx.ci(name, ctx.primary))
    if not ref.get("selected"):
        spread = ctx.ph("splits.results_stacking_selected", model=model_np(ctx, name)) + " " + spread
    relation = "larger" if ref.get("spread_larger") else "smaller"
    text = spread + " " + ctx.ph(f"splits.results_{relation}", level=CI_LEVEL, half=n["splits|half_width"])
    best_on = record(ctx)["models"][name].get("best_on")
    if is_number(best_on) and len([m for m in record(ctx)["models"].values() if m.get("n")]) > 1:
        text += " " + ctx.ph("splits.results_best_on", model=cap_first(model_np(ctx, name)),
                             metric=metric_name(ctx), count=n[f"{name}|split_best_on"], n_splits=n["splits|n"])
    return [text]


def discussion(ctx: Ctx) -> str:
    """Whether the split moves the estimate by more than its interval says (a true statement either way)."""
    ref = reference(ctx)
    if not ref:
        return ""
    name = ref["model"]
    values = {"metric": metric_name(ctx), "model": model_np(ctx, name), "n_splits": ctx.n["splits|n"],
              "sd": ctx.n[f"{name}|split_sd"], "half": ctx.n["splits|half_width"]}
    if ref.get("spread_larger"):
        return ctx.ph("splits.discussion_larger", **values)
    return ctx.ph("splits.discussion_smaller", **values)


def limitation(ctx: Ctx) -> str:
    """What the spread across splits leaves out (replaces the single-split item of the Limitations)."""
    sp = record(ctx)
    if not sp:
        return ""
    main_only = [x for x in sp.get("not_refitted") or [] if x in ctx.results["models"]]
    return ctx.ph("splits.limitation", n_splits=ctx.n["splits|n"],
                  stacking=(" " + ctx.ph("splits.limitation_stacking")) if main_only else "")
