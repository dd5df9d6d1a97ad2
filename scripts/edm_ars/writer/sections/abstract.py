"""The abstract: at most 250 words, the least important sentences dropped first."""

from __future__ import annotations

from edm_ars.core.conventions import STACKING
from edm_ars.core.text import cap_first, clean_label, join_list, lc_first, model_family, word_count
from edm_ars.writer import multilevel, provenance, replication
from edm_ars.writer.common import (
    attribute_noun,
    feature_names,
    has_reserve_codes,
    information,
    metric_name,
    n_perturbations,
    primary_stmt,
    strength,
    suspiciously_high,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name
from edm_ars.writer.phrases import plural


def model_list(ctx: Ctx) -> str:
    return join_list([ctx.model_phrase(x) for x in ctx.results["models"]])


def write(ctx: Ctx) -> str:
    n = ctx.n
    best = ctx.model_phrase(ctx.best)
    parts: list[tuple[int, str]] = []  # (priority: lower is kept first, sentence)
    task = (ctx.ph("abstract.task_milestones") if ctx.binary else
            ctx.ph("abstract.task_later_achievement") if ctx.has_waves else ctx.ph("abstract.task_background"))
    parts.append((1, ctx.ph("abstract.opening", task=task)))
    question = ctx.t(ctx.spec["research_question"].rstrip(), "research_spec.json:research_question")
    parts.append((3, ctx.ph("abstract.question", question=question)
                  + ("" if ctx.spec["research_question"].rstrip().endswith("?") else ".")))
    parts.append((0, ctx.ph(
        "abstract.data", dataset=provenance.abstract_dataset(ctx), analytic_n=n["AnalyticN"], units=ctx.units_of("Analytic"),
        n_predictors=n["NPredictors"], waves=ctx.waves_text,
        recode=ctx.ph("abstract.recode_reserve_codes") + " " if has_reserve_codes(ctx) else "",
        split_by=ctx.split_by, n_models=n["NModels"],
        models=model_list(ctx) if len(ctx.results["models"]) <= 4 else _families_phrase(ctx))))
    rows = provenance.abstract_sentence(ctx)  # what the rows are: never dropped
    if rows:
        parts.append((0, rows))
    others = [x for x in ctx.results["models"] if x != ctx.best and ctx.mac(x, ctx.primary)]
    rest = ""
    if others:
        vals = sorted(others, key=lambda x: ctx.metric_value(x, ctx.primary))
        lo, hi = ctx.mac(vals[0], ctx.primary), ctx.mac(vals[-1], ctx.primary)
        rest = "; " + (ctx.ph("abstract.others_equal", metric=metric_name(ctx), value=lo) if lo == hi else
                       ctx.ph("abstract.others_range", metric=metric_name(ctx), low=lo, high=hi))
    parts.append((0, ctx.ph("abstract.result", test_n=n["TestN"], units=ctx.units_of("Test"), model=best, performance=primary_stmt(ctx),
                            others=rest)))
    if ctx.top_features:
        feats = join_list(feature_names(ctx, 3))
        parts.append((1, ctx.ph("abstract.features_shap", features=feats) if ctx.importance_key == "mean_abs_shap"
                      else ctx.ph("abstract.features_importance", features=feats)))
    recovered = provenance.abstract_recovery(ctx)  # generated rows: the planted structure found
    if recovered:
        parts.append((1, recovered))
    fair = _abstract_fairness(ctx)
    if fair:
        parts.append((2, fair))
    for found in (multilevel.abstract(ctx), replication.abstract(ctx)):  # what the study adds about the data
        if found:
            parts.append((1, found))
    st = ctx.stability
    if st.get("runs") and st.get("unstable") is not None:
        k = n_perturbations(ctx)
        robust = ctx.claim("ranking_robust")
        if st.get("unstable"):
            parts.append((3, ctx.ph("abstract.ranking_unstable", k=k)))
        elif robust == "supported":
            parts.append((3, ctx.ph("abstract.ranking_stable", k=k)))
        elif robust == "inconclusive":
            # The sentence is cut short in the paper as it stands ("... by these "); kept byte-identical.
            parts.append((3, ctx.ph("abstract.ranking_inconclusive", k=k)))
    s = strength(ctx)
    if suspiciously_high(ctx):
        kind = ctx.ph("abstract.kind_survey") if ctx.survey else ctx.ph("abstract.kind_educational")
        parts.append((0, ctx.ph("abstract.too_high", kind=kind)))
    elif ctx.claim("predicts_above_chance") == "supported":
        info, outcome = cap_first(information(ctx)), _predicted(ctx)
        parts.append((2, ctx.ph("abstract.predictive_binary", information=info, outcome=outcome, strength=s)
                      if ctx.binary else
                      ctx.ph("abstract.predictive_regression", information=info, outcome=outcome, strength=s)))
    elif ctx.claim("predicts_above_chance") == "inconclusive":
        parts.append((2, ctx.ph("abstract.inconclusive", information=information(ctx), outcome=_predicted(ctx),
                                metric=metric_name(ctx))))
    if small_test_set(ctx):
        parts.append((0, ctx.ph("abstract.small_sample", test_n=n["TestN"], units=ctx.units)))
    if few_test_clusters(ctx):
        split = ctx.data["split"]
        clusters = ctx.people if split.get("grouped_by") == "unit" else plural(ctx.cluster)  # children; schools
        parts.append((0, ctx.ph("abstract.few_clusters", clusters=clusters,
                                k=ctx.m.count("TestClusters", split["test_clusters"],
                                              "data_report.json:split.test_clusters"))))
    if ctx.unverified:  # the automation itself is disclosed once, in the Methods
        parts.append((0, ctx.ph("abstract.unverified_draft")))

    def words(ps: list[tuple[int, str]]) -> int:
        return word_count(" ".join(p for _, p in ps))

    # Drop sentences one at a time, least important (then latest) first, until the abstract fits.
    kept = list(parts)
    for item in sorted(parts, key=lambda p: (-p[0], -parts.index(p))):
        if words(kept) <= 250 or item[0] == 0:
            break
        kept.remove(item)
    return " ".join(p for _, p in kept)


def small_test_set(ctx: Ctx) -> bool:
    """The review found the test set under the Critic's floor (critic.min_test_n: the code check `test_n`
    failed): the abstract says the sample is small."""
    return any(c.get("function") == "test_n" and c.get("passed") is False for c in ctx.review.get("checks") or [])


def few_test_clusters(ctx: Ctx) -> bool:
    """The review found too few clusters in the test set for a cluster bootstrap (the code check `test_clusters`
    failed): the abstract says the intervals understate the uncertainty."""
    return any(c.get("function") == "test_clusters" and c.get("passed") is False
               for c in ctx.review.get("checks") or [])


def _predicted(ctx: Ctx) -> str:
    """What the predictors predict: the outcome, or later achievement when it is a later wave's score."""
    return lc_first(ctx.outcome_label) if ctx.binary or not ctx.has_waves else ctx.ph("abstract.later_achievement")


def _families_phrase(ctx: Ctx) -> str:
    """'from penalised regression to tree ensembles, a neural network and a stacked ensemble'."""
    fams = {model_family(x) for x in ctx.results["models"]}
    extra = ([ctx.ph("abstract.family_neural")] if "mlp" in ctx.results["models"] else []) + (
        [ctx.ph("abstract.family_stacked")] if STACKING in fams else [])
    head = ctx.ph("abstract.families_range") if {"linear", "tree"} <= fams else ctx.ph("abstract.families_several")
    return head + (", " + join_list(extra) if extra else "")


def _abstract_fairness(ctx: Ctx) -> str:
    """One sentence on the largest primary-metric gap among the audited single attributes."""
    fa = ctx.fairness
    primary = fa.get("primary_metric") or ctx.primary
    best = None
    for attr, rec in fa.get("attributes", {}).items():
        g = (rec.get("gaps") or {}).get(primary)
        if rec.get("kind") == "intersection" or not isinstance(g, dict) or not isinstance(g.get("gap"), (int, float)):
            continue
        if best is None or g["gap"] > best[1]["gap"]:
            best = (attr, g)
    if best is None:
        return ""
    attr, g = best
    mac = ctx.m.metric(macro_name("FairGap", attr, primary), g["gap"],
                       f"results.json:fairness.attributes.{attr}.gaps.{primary}.gap")
    label = fa["attributes"][attr].get("label") or attr
    label = attribute_noun(ctx, attr, ctx.t(lc_first(clean_label(label)), f"results.json:fairness.attributes.{attr}.label"))
    status = ctx.claim(f"subgroup_gap_{attr}")
    if status == "unsupported":
        return ctx.ph("abstract.fairness_no_gap", metric=metric_name(ctx, primary))
    reading = (ctx.ph("abstract.gap_reading_inconclusive") if status == "inconclusive"
               else ctx.ph("abstract.gap_reading_predictive"))
    if not ctx.binary:  # the audit's errors are in outcome standard deviations
        mac = ctx.ph("abstract.gap_in_sd", gap=mac)
    return ctx.ph("abstract.fairness_gap", metric=metric_name(ctx, primary), gap=mac, groups=label, reading=reading)
