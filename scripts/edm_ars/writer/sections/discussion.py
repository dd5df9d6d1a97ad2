"""The Discussion."""

from __future__ import annotations

from ...texescape import escape_latex
from .. import narrative
from ..common import feature_names, information, outcome_sentence_np, primary_stmt, strength
from ..context import Ctx
from ..text import cap_first, clean_label, join_list, lc_first, model_family


def write(ctx: Ctx) -> str:
    n, c, best = ctx.n, ctx.cites, ctx.best
    blocks: dict[str, list[str]] = {}

    def add(key: str, text: str) -> None:
        if text:
            blocks.setdefault(key, []).append(text)

    latest = ctx.wave(ctx.predictor_waves[-1]) if ctx.predictor_waves else "the predictor waves"
    s = strength(ctx)
    what = "discrimination" if ctx.binary else "accuracy"
    info = f"information available by the {latest}" if ctx.has_waves else information(ctx)
    lead = (f"{cap_first(info)} was predictive of {outcome_sentence_np(ctx)} with "
            f"{s} {what}: the selected model" if ctx.claim("predicts_above_chance") == "supported" else
            f"Whether {info} predicts {outcome_sentence_np(ctx)} better than "
            "chance is not settled by these data: the selected model")
    unit, units = ctx.cluster, ctx.units
    add("performance",
        f"{lead}, {ctx.model_phrase(best)}, reached {primary_stmt(ctx)} on "
        f"{units} whose "
        + ((f"{unit} clusters " if ctx.grouping["reconstructed"] else f"{unit}s ") if ctx.school_split_ok
           else "records ")
        + "were not seen during training. Because the split, encoding and imputation were arranged "
        f"to prevent leakage, this estimate should be a fair guide to performance on similar {units} "
        + (f"in new {unit}s." if ctx.school_split_ok
           else f"drawn from the same {unit}s." if ctx.grouping["columns"] else "from the same population."))
    fam = model_family(best)
    if "contrast" in n and fam == "tree" and ctx.claim(f"outperforms_{n['contrast']}") != "supported":
        other = n["contrast"]
        add("models",
            f"{cap_first(ctx.model_phrase(best))} and {ctx.model_phrase(other)} differed by "
            f"{n['MarginContrast']}, but their 95\\% intervals overlap, so these data do not establish that "
            "either predicts better than the other. Where transparency matters, as in advising or early-warning "
            "settings, the simpler model is then the natural default.")
    elif "contrast" in n:
        raw = float(n["MarginContrast:raw"])
        other = n["contrast"]
        if fam == "tree" and raw < 0.02:
            add("models",
                f"The tree ensemble improved on {ctx.model_phrase(other)} by only {n['MarginContrast']}. "
                "Most of the predictive signal is therefore captured by largely additive "
                "relationships, and where transparency matters, as in advising or early-warning "
                "settings, the simpler linear model may be preferable at little cost in accuracy.")
        elif fam == "tree":
            add("models",
                f"The tree ensemble improved on {ctx.model_phrase(other)} by {n['MarginContrast']}, "
                "which suggests that nonlinear relationships or interactions among the predictors "
                "carry information that a linear model misses. This gain comes at a cost in "
                "transparency, which SHAP attributions only partly offset.")
        elif fam == "linear":
            add("models",
                f"That {ctx.model_phrase(best)} matched or exceeded the tree-based "
                f"{ctx.model_phrase(other)} (difference {n['MarginContrast']}) indicates that the "
                "predictors relate to the outcome in largely additive ways. A transparent linear "
                "model is then a reasonable default, since its coefficients can be inspected directly.")
    ev = (ctx.results.get("selection_evidence") or {}).get("stacking_minus_selected") or {}
    ci = ev.get("ci") if isinstance(ev, dict) else None
    if (model_family(best) != "stacking" and isinstance(ci, list) and len(ci) == 2
            and all(isinstance(x, (int, float)) for x in ci) and ci[0] <= 0 <= ci[1]):
        add("models", ctx.ph("discussion.stacking_no_gain"))
    if ctx.top_features:
        feats = feature_names(ctx, 3)
        add("features",
            f"The features most predictive of the outcome, {join_list(feats)}, are consistent with "
            "the view that prior achievement, expectations and family background jointly shape "
            "students' educational trajectories"
            f"{c.citep(ctx.dataset_topic, 'edm', limit=2)}. These patterns "
            "should be read as predictive associations: a feature can rank highly because it is "
            "correlated with unmeasured factors, and the analysis does not show that changing it "
            "would change the outcome.")
    if ctx.binary:
        text = ("For practical use, a decision threshold would need to be chosen to reflect the "
                "relative costs of overlooking a student who needs support and of a false alarm")
        if ctx.mac(best, "brier"):
            text += (", and calibration would need checking (the Brier score of the selected model was "
                     f"{ctx.mac(best, 'brier')})")
        add("practice", text + ".")
    subgroups = ctx.spec.get("subgroups") or []
    if subgroups and not ctx.fairness_reported:
        labels = [lc_first(ctx.label_tex(g, "research_spec.json:subgroups")) for g in subgroups]
        add("fairness",
            f"The study specification names {join_list(labels)} as groups of interest, but this run "
            "did not report performance separately for these groups. Before any use in practice, "
            "accuracy and calibration should be compared across them"
            f"{c.citep('fairness', limit=2)}, since a model that is accurate on average can still "
            "serve some groups of students poorly.")
    elif ctx.fairness:
        add("fairness", _discussion_fairness(ctx))
    elif ctx.fairness_reported:
        fig = next((f for f in ctx.figures if f.kind in ("fairness", "subgroup", "subgroups")), None)
        ref = f" (Figure~\\ref{{{fig.label}}})" if fig else ""
        add("fairness", f"Performance was also reported for groups of students{ref}; differences between "
                     f"groups deserve attention before any use in practice{c.citep('fairness', limit=2)}.")
    st = ctx.stability
    if st.get("runs") and st.get("unstable") is not None:
        if not st.get("unstable") and ctx.claim("ranking_robust") != "supported":
            add("stability", "The stability analysis (Section~\\ref{sec:stability}) did not settle whether the ranking "
                         "of the most predictive features is robust, so the interpretation above is tentative.")
        elif st.get("unstable"):
            add("stability", "The stability analysis (Section~\\ref{sec:stability}) showed that the ranking of the "
                         "most predictive features changed under reasonable perturbations of the analysis, so "
                         "the interpretation above should be treated as tentative; the predictive performance "
                         "itself is a firmer result than the attribution of it to particular features.")
        else:
            add("stability", "The stability analysis (Section~\\ref{sec:stability}) supports these conclusions: "
                         "neither the predictive performance nor the set of most predictive features depended "
                         "on the imputation method, the particular training sample or the random seed.")
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    score = n.get("ReviewScore")
    if ctx.unverified:
        add("review",
            f"The automated review of this study returned the verdict \\textsc{{{verdict.lower()}}}"
            + (f" with an overall score of {score} out of ten" if score else "")
            + (" and is marked as unverified" if rv.get("unverified") else "")
            + "; its issues are listed in Appendix~\\ref{app:review}, and the findings should be "
            "treated as provisional until they are addressed.")
    elif score:
        add("review", f"An automated review of the study passed it with an overall score of {score} "
                     "out of ten.")
    add("meaning", narrative.meaning(ctx))
    add("practice", narrative.practice(ctx))
    add("limits", narrative.limits(ctx))
    add("future", narrative.future(ctx))
    order = (ctx.outline or {}).get("discussion") or list(blocks)
    return "\n\n".join(t for key in [*order, *[k for k in blocks if k not in order]] for t in blocks.get(key, []))


def _discussion_fairness(ctx: Ctx) -> str:
    fa, c = ctx.fairness, ctx.cites
    flagged = [a for a, r in fa["attributes"].items() if r.get("kind") != "intersection"
               and any(isinstance(g, dict) and g.get("flagged") for g in (r.get("gaps") or {}).values())]
    unsettled = [a for a in flagged if ctx.claim(f"subgroup_gap_{a}") == "inconclusive"]
    flagged = [a for a in flagged if a not in unsettled]
    def names(attrs: list[str]) -> list[str]:
        return [f"\\emph{{{lc_first(ctx.t(clean_label(fa['attributes'][a].get('label') or a), f'results.json:fairness.attributes.{a}.label'))}}}"
                for a in attrs]

    labels = names(flagged)
    extra = (f" For {join_list(names(unsettled))}, the gaps exceeded the threshold but could not be distinguished "
             "from sampling variation or rest on small groups, so the evidence on them is inconclusive."
             if unsettled else "")
    if flagged:
        text = ("The subgroup audit (Section~\\ref{sec:fairness}) showed that the model does not predict "
                f"equally well for all students: gaps above the flagging threshold appeared for {join_list(labels)}. "
                "Such gaps describe where the model's predictions are less accurate or its errors more frequent; "
                "they do not show that group membership influences the outcome. If the model were used to "
                "allocate support, its errors would fall unevenly across these groups, so "
                "group-specific thresholds, recalibration or additional predictors would need to be considered"
                f"{c.citep('fairness', limit=2)}.")
    else:
        text = ("The subgroup audit (Section~\\ref{sec:fairness}) found no gap above the flagging threshold, "
                "although small groups could not be assessed reliably and the audit should be repeated before "
                f"any use in practice{c.citep('fairness', limit=2)}.")
    return text + extra
