"""Results: the subsections in order (model comparison and selection from writer.results_comparison, subgroup
fairness from writer.results_fairness), the interpretation and the stability, the figures not yet discussed."""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import STACKING
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import cap_first, clean_label, is_number, join_list, lc_first, model_family, number_word
from edm_ars.writer import multilevel, narrative, provenance, replication, supplementary
from edm_ars.writer.common import (
    PERTURBATION_KIND,
    feature_names,
    fig_of,
    fig_ref,
    figure_env,
    floor_macro,
    metric_name,
    model_np,
    model_the,
    n_perturbations,
    nothing_missing,
    perturbation_kinds,
    perturbation_words,
    stability_rule,
    stability_threshold,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name
from edm_ars.writer.results_comparison import _flag_models, comparison, results_table
from edm_ars.writer.results_fairness import fairness_section

FIG_SECTION = {
    "roc": "comparison", "pr": "comparison", "precision_recall": "comparison", "calibration": "comparison",
    "observed_predicted": "comparison", "predicted_vs_actual": "comparison", "residuals": "comparison",
    "shap_summary": "interpretation", "shap_importance": "interpretation", "importance": "interpretation",
    "shap": "interpretation", "fairness": "fairness", "subgroup": "fairness", "subgroups": "fairness",
    "fairness_gap": "fairness", "fairness_calibration": "fairness", "stability": "stability",
}


def _outcome_np(ctx: Ctx) -> str:
    pos = ctx.spec["outcome"].get("positive_label")
    if ctx.binary and pos:
        return f"\\emph{{{ctx.positive}}}"
    return f"\\emph{{{lc_first(ctx.outcome_label)}}}"


def _feature_label(ctx: Ctx, feature: str, source: str) -> str:
    """Escaped label of a source variable named in any SHAP ranking."""
    for i, f in enumerate(ctx.top_features):
        if f["feature"] == feature:
            return ctx.feature_label(i)
    for f in (x for info in ctx.shap_by_model.values() for x in info.get("top_features") or []):
        if f.get("feature") == feature and f.get("label"):
            return ctx.t(clean_label(f["label"]), source)
    return ctx.label_tex(feature, source)


def interpretation(ctx: Ctx) -> tuple[list[str], list[str]]:
    sec = "interpretation"
    c, best = ctx.cites, ctx.best
    interp = ctx.interpreted
    by = ctx.shap_by_model
    paras: list[str] = []
    floor_text = _floor_text(ctx)
    if not ctx.top_features:
        text = ctx.ph("results.no_attributions")
        if interp is None and ctx.results.get("interpreted_model", "") is None:
            text += " " + ctx.ph("results.no_eligible_model")
        paras.append(text + (" " + floor_text if floor_text else ""))
        return paras, []
    name = interp or best
    info = by.get(name, {})
    text = ""
    if interp and interp != best:
        why = (ctx.ph("results.interpreted_because_stacking") if model_family(best) == STACKING
               else ctx.ph("results.interpreted_because_ineligible", model=model_np(ctx, best)))
        text += ctx.ph("results.interpreted_instead", why=why, model=model_np(ctx, interp)) + " "
    imp = fig_of(ctx, "shap_importance", "importance", "shap")
    k = min(5, len(ctx.top_features))
    feats = feature_names(ctx, k, with_values=True)
    expl = info.get("explainer")
    # the citation follows a word, so the sentence ends in code: a slot cannot follow a letter
    text += ctx.ph("results.shap_explained", model=model_np(ctx, name))
    text += c.cite_keys("lundberg2017unified", topics=("shap",), limit=1)
    if expl:
        text += ", " + ctx.ph("results.shap_computed_with", explainer=escape_latex(expl))
        if is_number(info.get("n_explained")):
            text += " " + ctx.ph("results.shap_on_students", count=ctx.m.count(
                macro_name("NExplained", name), info["n_explained"], f"results.json:shap.by_model.{name}.n_explained"))
    text += "."
    if imp:
        text += " " + ctx.ph("results.top_features_figure", figure=fig_ref(ctx, imp, sec), count=number_word(k),
                             features=join_list(feats))
    else:
        text += " " + ctx.ph("results.top_features", count=number_word(k), features=join_list(feats))
    if interp == best and any(model_family(m) == STACKING for m in ctx.results["models"]):
        text += " " + ctx.ph("results.stacking_not_explained")
    skipped = (ctx.results.get("shap") or {}).get("skipped") or {}
    for mname, reason in skipped.items():
        if model_family(mname) == STACKING or mname not in ctx.results["models"]:
            continue
        text += " " + ctx.ph("results.shap_skipped", model=model_np(ctx, mname),
                             reason=ctx.t(str(reason)[:160].rstrip("."), f"results.json:shap.skipped.{mname}"))
    if floor_text:
        text += " " + floor_text
    paras.append(text.strip())
    paras.append(_direction_text(ctx, sec))
    agree = _agreement_text(ctx, name)
    if agree:
        paras.append(agree)
    return [p for p in paras if p], []


def _floor_text(ctx: Ctx) -> str:
    below = _flag_models(ctx, "below_quality_floor")
    if not below:
        return ""
    floor = floor_macro(ctx)
    names = [f"{model_np(ctx, x)} ({metric_name(ctx)} = {ctx.mac(x, ctx.primary)})" if ctx.mac(x, ctx.primary)
             else model_np(ctx, x) for _, x in below]
    floor_t = ctx.ph("results.quality_floor_value", floor=floor) if floor else ctx.ph("results.quality_floor")
    if len(names) == 1:
        return ctx.ph("results.below_floor_one", models=cap_first(join_list(names)), floor=floor_t)
    return ctx.ph("results.below_floor_many", models=cap_first(join_list(names)), floor=floor_t)


def _direction_text(ctx: Ctx, sec: str) -> str:
    k = min(5, len(ctx.top_features))
    pos, neg, mixed, cat_mixed = [], [], [], []
    pos_lv, neg_lv = [], []  # two-level categorical predictors, named with the level their column encodes
    for i in range(k):
        f = ctx.top_features[i]
        d = f["direction"]  # the schema's positive, negative or mixed
        name = f"\\emph{{{ctx.feature_label(i)}}}"
        cols = f.get("columns") or []
        if d in ("positive", "negative") and len(cols) == 1 and cols[0].startswith(f"{f['feature']}__"):
            # one indicator column of a two-level categorical: its direction is that of the encoded level
            level = escape_latex(ctx.level_label(f["feature"], cols[0].split("__", 1)[1]))
            (pos_lv if d == "positive" else neg_lv).append(ctx.ph("results.direction_level", feature=name,
                                                                   level=level))
        elif d == "positive":
            pos.append(name)
        elif d == "negative":
            neg.append(name)
        else:
            (cat_mixed if len(f.get("columns") or []) > 1 else mixed).append(name)
    summ = fig_of(ctx, "shap_summary")
    text = ""
    if summ:
        text += ctx.ph("results.shap_summary_figure", figure=fig_ref(ctx, summ, sec), unit=ctx.ds["unit"],
                       outcome=ctx.outcome_phrase) + " "
    if ctx.binary:
        up, down = ctx.ph("results.higher_probability", outcome=_outcome_np(ctx)), ctx.ph("results.lower_probability")
    else:
        up, down = ctx.ph("results.higher_values", outcome=_outcome_np(ctx)), ctx.ph("results.lower_values")
    sents = []
    if pos:
        sents.append(ctx.ph("results.direction", features=join_list(pos), prediction=up))
    if neg:
        sents.append(ctx.ph("results.direction", features=join_list(neg), prediction=down))
    if sents:
        text += cap_first(" and ".join(sents) if len(sents) == 2 else sents[0]) + "."
    for levels, prediction in ((pos_lv, up), (neg_lv, down)):
        if levels:
            text += " " + cap_first(ctx.ph("results.direction_levels", features=join_list(levels),
                                           prediction=prediction)) + "."
    if len(cat_mixed) > 1:
        text += " " + ctx.ph("results.categorical_mixed_many", features=join_list(cat_mixed))
    elif cat_mixed:
        text += " " + ctx.ph("results.categorical_mixed_one", features=join_list(cat_mixed))
    if mixed:
        text += " " + ctx.ph("results.not_monotone", features=join_list(mixed))
    text += " " + ctx.ph("results.attributions_are_predictive", unit=ctx.person, outcome=ctx.outcome_phrase)
    return text.strip()


def _top5(info: dict[str, Any]) -> list[str]:
    return [str(f.get("feature")) for f in (info.get("top_features") or [])[:5] if f.get("feature")]


def _agreement_text(ctx: Ctx, name: str) -> str:
    by = ctx.shap_by_model
    ref = _top5(by[name]) if name in by else [f["feature"] for f in ctx.top_features[:5]]
    others = [x for x in by if x != name and _top5(by[x])]
    if not ref or not others:
        return ""
    if ctx.all_in_top(5):  # every model's top five holds every feature: agreement by construction, no finding
        return ctx.ph("results.ranking_agreement_by_construction", n=ctx.n["NPredictors"])
    m = ctx.m
    shared = {x: len(set(ref) & set(_top5(by[x]))) for x in others}
    parts = []
    for i, x in enumerate(others):
        mac = m.count(macro_name("ShapSharedTopFive", x), shared[x],
                      f"|top5(results.json:shap.by_model.{name}.top_features) & "
                      f"top5(results.json:shap.by_model.{x}.top_features)|", derived=True)
        if i == 0:
            parts.append(ctx.ph("results.shared_top_five_first", count=mac, model=model_the(ctx, x)))
        else:
            parts.append(ctx.ph("results.shared_top_five_next", count=mac, model=model_the(ctx, x)))
    mean_share = sum(shared.values()) / (len(others) * len(ref))
    if mean_share >= 0.8:
        level = ctx.ph("results.ranking_largely_shared")
    elif mean_share >= 0.5:
        level = ctx.ph("results.ranking_partly_shared")
    else:
        level = ctx.ph("results.ranking_not_shared")
    text = ctx.ph("results.ranking_agreement", level=level, count=number_word(len(ref)), model=model_np(ctx, name),
                  shared=join_list(parts))
    common = [f for f in ref if all(f in _top5(by[x]) for x in others)]
    nall = m.count("NShapModels", len(others) + 1, "len(results.json:shap.by_model)", derived=True)
    kc = m.count("ShapCommonTopFive", len(common),
                 "count(features in top5 of every results.json:shap.by_model entry)", derived=True)
    if common:
        labels = [f"\\emph{{{_feature_label(ctx, f, f'results.json:shap.by_model.{name}.top_features')}}}"
                  for f in common]
        if len(common) > 1:
            text += " " + ctx.ph("results.common_top_five_many", count=kc, features=join_list(labels), n_models=nall)
        else:
            text += " " + ctx.ph("results.common_top_five_one", count=kc, features=join_list(labels), n_models=nall)
    else:
        text += " " + ctx.ph("results.no_common_top_five", n_models=nall)
    return text


def _spread(ctx: Ctx, key: str, name: str, pct: bool = False) -> dict[str, str]:
    """Macros of a {mean, sd, min, max} summary; shares (0-1) as percentages when `pct`."""
    sp = ctx.stability.get(key)
    if not isinstance(sp, dict):
        return {}
    out = {}
    for stat in ("mean", "sd", "min", "max"):
        if is_number(sp.get(stat)):
            src = f"results.json:stability.{key}.{stat}"
            if pct:
                out[stat] = ctx.m.pct(macro_name("Stab", name, stat), 100 * float(sp[stat]), "100 * " + src,
                                      derived=True)
            else:
                out[stat] = ctx.m.metric(macro_name("Stab", name, stat), sp[stat], src)
    return out


def stability_section(ctx: Ctx) -> tuple[list[str], list[str]]:
    st = ctx.stability
    if not st:
        return [], []
    runs = st.get("runs") or []
    if not runs:
        note = st.get("note")
        if note:
            return [ctx.ph("results.stability_not_assessed_note",
                           note=ctx.t(str(note), "results.json:stability.note"))], []
        return [ctx.ph("results.stability_not_assessed")], []
    metric = st.get("metric") or ctx.primary
    model = st.get("model") or ctx.interpreted or ctx.best
    ms = _spread(ctx, "metric_spread", metric)
    t5 = _spread(ctx, "top5_overlap", "TopFive", pct=True)
    t10 = _spread(ctx, "top10_overlap", "TopTen", pct=True)
    rho = _spread(ctx, "rank_correlation", "RankCorr")
    kinds = perturbation_kinds(ctx)  # before the count: the order of the macros
    text = ctx.ph("results.stability_refits", model=model_np(ctx, model), count=n_perturbations(ctx), kinds=kinds)
    if ms.get("mean"):
        ref = st.get("reference_metric")
        rng = (ctx.ph("results.stability_range", min=ms["min"], max=ms["max"]) if "min" in ms and "max" in ms
               else "")
        if "sd" in ms:
            sd = ctx.ph("results.stability_sd", sd=ms["sd"])
            spread = f" ({sd}; {rng})" if rng else f" ({sd})"
        else:
            spread = f"; {rng}" if rng else ""
        compared = (", " + ctx.ph("results.stability_reference", value=ctx.m.metric(
            macro_name("Stab", "Reference", metric), ref, "results.json:stability.reference_metric"))
                    if is_number(ref) else "")
        text += " " + ctx.ph("results.stability_metric", metric=metric_name(ctx, metric), mean=ms["mean"],
                             spread=spread, compared=compared)
    if t5.get("mean") and ctx.all_in_top(5):  # every refit's top five holds every feature: 100% by construction
        rank = ""
        if rho.get("mean"):
            rng = (" (" + ctx.ph("results.stability_range", min=rho["min"], max=rho["max"]) + ")"
                   if "min" in rho and "max" in rho else "")
            rank = " " + ctx.ph("results.stability_rank_only", mean=rho["mean"], range=rng)
        text += " " + ctx.ph("results.stability_top_five_by_construction", n=ctx.n["NPredictors"]) + rank
    elif t5.get("mean"):
        top_five = ctx.ph("results.stability_top_five", mean=t5["mean"])
        if "min" in t5:
            top_five += " (" + ctx.ph("results.stability_minimum", min=t5["min"]) + ")"
        top_ten = (" " + ctx.ph("results.stability_top_ten", mean=t10["mean"])) if t10.get("mean") and \
            not ctx.all_in_top(10) else ""
        rank = ""
        if rho.get("mean"):
            rng = (" (" + ctx.ph("results.stability_range", min=rho["min"], max=rho["max"]) + ")"
                   if "min" in rho and "max" in rho else "")
            rank = ", " + ctx.ph("results.stability_rank_correlation", mean=rho["mean"], range=rng)
        text += " " + ctx.ph("results.stability_overlap", top_five=top_five, top_ten=top_ten, rank=rank)
    worst = [r for r in runs if is_number(r.get("top5_overlap"))]
    if worst and t5.get("min") and not ctx.all_in_top(5):
        w = min(worst, key=lambda r: r["top5_overlap"])
        one = perturbation_words(ctx, str(w.get("kind")))[0] if str(w.get("kind")) in PERTURBATION_KIND else None
        if one and w["top5_overlap"] < 1:
            text += " " + ctx.ph("results.stability_lowest_overlap", kind=one)
    paras = [text]
    thr = stability_threshold(ctx)
    unstable = st.get("unstable")
    rule = (ctx.ph("results.stability_rule_threshold", threshold=thr) if thr
            else ctx.ph("results.stability_rule"))
    if unstable is True:
        verdict = ctx.ph("results.stability_unstable", rule=rule)
        if not thr:
            verdict += " " + stability_rule(ctx)
    elif unstable is False and ctx.all_in_top(5):
        verdict = ctx.ph("results.stability_rule_by_construction", rule=rule)
    elif unstable is False:
        top = feature_names(ctx, 1)[0] if ctx.top_features else ctx.ph("results.stability_top_unknown")
        verdict = ctx.ph(f"results.stability_stable{'_complete' if nothing_missing(ctx) else ''}", rule=rule, top=top)
    else:
        verdict = ctx.ph("results.stability_no_verdict")
    paras.append(verdict)
    return paras, []


def write(ctx: Ctx) -> str:
    """The Results: its subsections with their floats, then the summary of the evidence (the debate's claims)."""
    comp, comp_floats = comparison(ctx)
    comp_floats = [results_table(ctx)] + comp_floats
    sections = [(ctx.ph("results.title_comparison"), "sec:comparison", "comparison", comp, comp_floats)]
    interp, f_int = interpretation(ctx)
    sections.append((ctx.ph("results.title_interpretation"), "sec:interpretation", "interpretation", interp, f_int))
    fair, f_fair = fairness_section(ctx)
    if fair:
        sections.append((ctx.ph("results.title_fairness"), "sec:fairness", "fairness", fair, f_fair))
    stab, f_stab = stability_section(ctx)
    if stab:
        sections.append((ctx.ph("results.title_stability"), "sec:stability", "stability", stab, f_stab))
    school, f_school = multilevel.results(ctx)
    if school:
        sections.append((multilevel.title(ctx), "sec:multilevel", "multilevel", school, f_school))
    known, f_known = replication.results(ctx)
    if known:
        sections.append((ctx.ph("replication.title"), "sec:replication", "replication", known, f_known))
    supp = supplementary.results(ctx)
    if supp:
        sections.append((ctx.ph("supplementary.title"), "sec:supplementary", "supplementary", supp, []))
    # figures not discussed yet: a sentence in the subsection their kind belongs to, else the comparison
    present = {s[2] for s in sections}
    for fig in ctx.figures:
        if fig.label in ctx.fig_refs:
            continue
        where = FIG_SECTION.get(fig.kind, "comparison")
        where = where if where in present else "comparison"
        target = next(s for s in sections if s[2] == where)
        target[3].append(ctx.ph("results.figure_shows", figure=fig_ref(ctx, fig, where),
                                caption=lc_first(fig.caption.rstrip("."))))
    out = []
    for title, label, key, paras, floats in sections:
        floats = list(floats)
        for fig in ctx.figures:
            if ctx.fig_refs.get(fig.label) == key:
                env = figure_env(fig)
                if env not in floats:
                    floats.append(env)
        body = paras[:1] + floats + paras[1:]
        out.append(f"\\subsection{{{title}}}\\label{{{label}}}\n" + "\n\n".join(body))
    recovery = provenance.results_recovery(ctx)  # generated rows: the analysis against the planted truth
    summary = narrative.evidence_summary(ctx, ctx.claims_doc)
    return "\n\n".join(out + ([recovery] if recovery else []) + ([summary] if summary else []))


