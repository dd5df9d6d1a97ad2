"""The abstract: at most 250 words, the least important sentences dropped first."""

from __future__ import annotations

from ...texescape import escape_latex
from ..common import (
    feature_names,
    has_reserve_codes,
    information,
    metric_name,
    n_perturbations,
    primary_stmt,
    strength,
    suspiciously_high,
)
from ..context import Ctx
from ..macros import macro_name
from ..text import cap_first, clean_label, join_list, lc_first, model_family, word_count


def model_list(ctx: Ctx) -> str:
    return join_list([ctx.model_phrase(x) for x in ctx.results["models"]])


def write(ctx: Ctx) -> str:
    n = ctx.n
    best = ctx.model_phrase(ctx.best)
    parts: list[tuple[int, str]] = []  # (priority: lower is kept first, sentence)
    if ctx.binary:
        parts.append((1, "Predicting which students will reach key educational milestones is a central "
                         "task of educational data mining, yet many published models are difficult "
                         "to reproduce, report no uncertainty, and are vulnerable to data leakage."))
    else:
        parts.append((1, ("Anticipating students' later achievement from earlier records" if ctx.has_waves
                          else "Predicting students' achievement from their background and context")
                         + " is a central task of educational data mining, yet many published models are difficult "
                         "to reproduce, report no uncertainty, and are vulnerable to data leakage."))
    parts.append((3, "We ask: " + ctx.t(ctx.spec["research_question"].rstrip(),
                                         "research_spec.json:research_question")
                  + ("" if ctx.spec["research_question"].rstrip().endswith("?") else ".")))
    parts.append((0, f"Using the {ctx.full_name}, we analysed {n['AnalyticN']} {ctx.units} "
                     f"and {n['NPredictors']} predictors from {ctx.waves_text}, "
                     + ("recoded missing-data reserve codes, " if has_reserve_codes(ctx) else "")
                     + "split the data into training and test sets "
                     + ctx.split_by
                     + f"before any encoding or imputation, and compared {n['NModels']} models "
                     f"({model_list(ctx) if len(ctx.results['models']) <= 4 else _families_phrase(ctx)})."))
    res = (f"On a held-out test set of {n['TestN']} students, the selected model, {best}, reached "
           f"{primary_stmt(ctx)}")
    others = [x for x in ctx.results["models"] if x != ctx.best and ctx.mac(x, ctx.primary)]
    if others:
        vals = sorted(others, key=lambda x: ctx.metric_value(x, ctx.primary))
        lo, hi = ctx.mac(vals[0], ctx.primary), ctx.mac(vals[-1], ctx.primary)
        res += (f"; the other models reached {metric_name(ctx)} = {lo}" if lo == hi else
                f"; the other models reached {metric_name(ctx)} between {lo} and {hi}")
    parts.append((0, res + "."))
    if ctx.top_features:
        feats = feature_names(ctx, 3)
        lead = ("The features with the largest mean absolute SHAP values were "
                if ctx.importance_key == "mean_abs_shap" else "The most important features were ")
        parts.append((1, lead + join_list(feats) + "."))
    fair = _abstract_fairness(ctx)
    if fair:
        parts.append((2, fair))
    st = ctx.stability
    if st.get("runs") and st.get("unstable") is not None:

        k = n_perturbations(ctx)
        robust = ctx.claim("ranking_robust")
        lead = f"Across {k} perturbations of the training data, the ranking of the top features "
        if st.get("unstable"):
            parts.append((3, lead + "changed substantially, so it should not be read as a robust finding."))
        elif robust == "supported":
            parts.append((3, lead + "was stable."))
        elif robust == "inconclusive":
            parts.append((3, f"Whether the ranking of the top features is robust across {k} perturbations of the "
                             "training data is not settled by these "))
    s = strength(ctx)
    if suspiciously_high(ctx):
        parts.append((0, ctx.ph("abstract.too_high", kind="survey-based" if ctx.survey else "educational")))
    elif ctx.claim("predicts_above_chance") == "supported":
        what = "discrimination" if ctx.binary else "explanatory accuracy"
        parts.append((2, f"{cap_first(information(ctx))} is thus predictive of "
                         f"{lc_first(ctx.outcome_label) if ctx.binary or not ctx.has_waves else 'later achievement'} "
                         "with "
                         f"{s} {what}, although predictive associations do not identify causes."))
    elif ctx.claim("predicts_above_chance") == "inconclusive":
        parts.append((2, f"Whether {information(ctx)} predicts "
                         f"{lc_first(ctx.outcome_label) if ctx.binary or not ctx.has_waves else 'later achievement'} "
                         "better than "
                         "chance is not settled by these data: the interval of the selected model's "
                         f"{metric_name(ctx)} includes the chance level."))
    disclosure = ("This study was generated automatically by the EDM-ARS pipeline with its "
                  f"{'offline (template-based)' if ctx.offline else escape_latex(ctx.spec['backend'])} "
                  "backend")
    if ctx.unverified:
        disclosure += "; it did not pass automated review and should be read as an unverified draft."
    else:
        disclosure += "."
    parts.append((0, disclosure))

    def words(ps: list[tuple[int, str]]) -> int:
        return word_count(" ".join(p for _, p in ps))

    # Drop sentences one at a time, least important (then latest) first, until the abstract fits.
    kept = list(parts)
    for item in sorted(parts, key=lambda p: (-p[0], -parts.index(p))):
        if words(kept) <= 250 or item[0] == 0:
            break
        kept.remove(item)
    return " ".join(p for _, p in kept)


def _families_phrase(ctx: Ctx) -> str:
    """'from penalised regression to tree ensembles, a neural network and a stacked ensemble'."""
    fams = {model_family(x) for x in ctx.results["models"]}
    extra = (["a neural network"] if "mlp" in ctx.results["models"] else []) + (
        ["a stacked ensemble"] if "stacking" in fams else [])
    head = ("from penalised regression to tree ensembles" if {"linear", "tree"} <= fams
            else "of several families")
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
    label = ctx.t(lc_first(clean_label(label)), f"results.json:fairness.attributes.{attr}.label")
    status = ctx.claim(f"subgroup_gap_{attr}")
    if status == "unsupported":
        return (f"A subgroup audit found no gap in the selected model's {metric_name(ctx, primary)} between "
                "groups of students above the flagging threshold.")
    text = (f"A subgroup audit found that the selected model's {metric_name(ctx, primary)} differed by up to "
            f"{mac} between groups of {label}")
    if status == "inconclusive":
        return text + ("; the audit could not distinguish this gap from sampling variation or small groups, so "
                       "it is inconclusive, and it describes predictive performance, not the groups.")
    return text + "; this is a difference in predictive performance, not a causal finding about the groups."
