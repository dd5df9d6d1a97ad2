"""The Introduction."""

from __future__ import annotations

from edm_ars.core.conventions import STACKING
from edm_ars.core.text import cap_first, join_list, lc_first, model_family
from edm_ars.writer import argument, narrative
from edm_ars.writer.common import (
    attribute_noun,
    collected_for,
    data_name,
    group_phrases,
    has_reserve_codes,
    measures,
    nothing_missing,
    outcome_sentence_np,
    predictor_groups,
    timing_adjective,
    use_prose,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.phrases import plural


def write(ctx: Ctx) -> str:
    c, n, spec = ctx.cites, ctx.n, ctx.spec
    o = spec["outcome"]
    paras = []
    opening = ctx.ph("introduction.opening_outcome", outcome=ctx.outcome_phrase, cite=c.citep("edm", limit=3))
    use = use_prose(ctx)
    if use["purpose"]:  # the registry says what the prediction serves, who acts on it and when
        actors = use["actors"] or ctx.ph("introduction.actors_default")
        why = (ctx.ph("introduction.purpose_timed", decision_time=cap_first(use["decision_time"]), actors=actors,
                      purpose=use["purpose"]) if use["decision_time"] else
               cap_first(ctx.ph("introduction.purpose", actors=actors, purpose=use["purpose"])))
        useful = (ctx.ph("introduction.useful_for", actors=actors) if use["decision_time"]
                  else ctx.ph("introduction.useful_for_cross_section", units=ctx.units))
        paras.append(" ".join([opening, why, useful]))
    elif ctx.binary:
        paras.append(" ".join([opening, ctx.ph("introduction.early_warning"), ctx.ph("introduction.useful_binary")]))
    else:
        models = (ctx.ph("introduction.later_achievement", early=timing_adjective(ctx)) if ctx.has_waves
                  else ctx.ph("introduction.background"))
        paras.append(" ".join([opening, models, ctx.ph("introduction.useful_regression")]))
    paras.append(data_pitfalls(ctx))
    paras += [narrative.motivation(ctx), narrative.gap(ctx)]
    rq = ctx.t(spec["research_question"].strip(), "research_spec.json:research_question")
    pop = ctx.t(spec.get("population", "").strip().rstrip("."), "research_spec.json:population")
    outcome, wave = outcome_sentence_np(ctx), ctx.wave(o.get("wave"))
    positive = (", " + ctx.ph("introduction.positive_class", label=ctx.positive)
                if ctx.binary and o.get("positive_label") else "")
    text = ctx.ph("introduction.question", question=rq, outcome=outcome, wave=wave, positive_class=positive)
    if pop:
        text += " " + ctx.ph("introduction.population", population=pop)
    models = ctx.results["models"]
    stated = all((p.get("rationale") or "").strip(" .") for p in spec.get("predictors", []))
    text += " " + ctx.ph(
        f"introduction.predictors{'' if stated else '_unstated'}", n_predictors=n["NPredictors"], waves=ctx.waves_text,
        linear=ctx.ph("introduction.family_linear") + c.citep("elastic_net", limit=2),
        ensembles=ctx.ph("introduction.family_trees") + c.citep("random_forest", "xgboost", limit=3),
        others=(", " + ctx.ph("introduction.family_neural") if "mlp" in models else "")
        + (" and " + ctx.ph("introduction.family_stacked") if any(model_family(x) == STACKING for x in models)
           else ""))
    paras.append(text)
    recode = ctx.ph("introduction.recode_reserve_codes") + " " if has_reserve_codes(ctx) else ""
    items = [
        ctx.ph("introduction.item_pipeline", dataset=ctx.short, recode=recode, split_by=ctx.split_by),
        ctx.ph("introduction.item_comparison", n_models=n["NModels"], outcome=ctx.outcome_phrase, test_n=n["TestN"],
               units=ctx.units),
    ]
    if ctx.top_features:
        if ctx.importance_key == "mean_abs_shap":
            how = ctx.ph("introduction.how_shap") + c.citep("shap", limit=2)
        else:
            how = ctx.ph("introduction.how_importance")
        groups = group_phrases(ctx, predictor_groups(ctx))
        if len(groups) > 1:
            items.append(ctx.ph("introduction.item_interpretation_groups", how=how, groups=join_list(groups[:4])))
        else:
            items.append(ctx.ph("introduction.item_interpretation_families", how=how) if len(ctx.shap_by_model) > 1
                         else ctx.ph("introduction.item_interpretation", how=how))
    else:
        items.append(ctx.ph("introduction.item_transparency"))
    if ctx.fairness or ctx.stability.get("runs"):
        what = []
        if ctx.fairness:
            labels = [attribute_noun(ctx, g, lc_first(ctx.label_tex(g, "research_spec.json:subgroups"))) for g in ctx.spec.get("subgroups") or []]
            what.append(ctx.ph("introduction.audit_subgroups_named", units=ctx.people, groups=join_list(labels))
                        if labels else ctx.ph("introduction.audit_subgroups"))
        if ctx.stability.get("runs"):
            what.append(ctx.ph(f"introduction.audit_stability{'_complete' if nothing_missing(ctx) else ''}"))
        items.append(cap_first(join_list(what)) + ".")
    argued = argument.contribution(ctx)  # what the study adds, against the named prior work (outline.json)
    if argued:
        paras.append(argued)
    paras.append(ctx.ph("introduction.contributions") + "\n\\begin{itemize}\n"
                 + "\n".join(f"  \\item {i}" for i in items) + "\n\\end{itemize}")
    ec = (spec.get("expected_contribution") or "").strip()
    tail = ""
    if ec:
        tail = (ctx.ph("introduction.expected_contribution",
                       contribution=ctx.t(ec, "research_spec.json:expected_contribution"))
                + ("" if ec.endswith(".") else ".") + " ")
    tail += ctx.ph("introduction.roadmap")  # the automation is disclosed once, in the Methods
    paras.append(tail)
    return "\n\n".join(paras)


#: a survey's item nonresponse is called substantial when some variable misses at least this share (percent)
SUBSTANTIAL_MISSING_PCT = 10.0


def data_pitfalls(ctx: Ctx) -> str:
    """The introduction's paragraph on the data set and the pitfalls of modelling it."""
    c, ds, units, unit = ctx.cites, ctx.ds, ctx.units, ctx.cluster
    about = f", {ds['about']}," if ds.get("about") else ""
    cite = c.citep(ctx.dataset_topic, limit=3) if ctx.dataset_topic else ""
    # The citation follows a word, so it cannot be a slot: the phrase ends there and the code goes on.
    what = measures(ctx) or (ctx.ph("introduction.measures_default", units=units, unit=unit)
                             if ctx.grouping["columns"] else ctx.ph("introduction.measures_default_rows", units=units))
    if ctx.survey and ctx.has_waves:
        text = (ctx.ph("introduction.data_survey", dataset=ctx.full_name, about=about) + cite + ". "
                + ctx.ph("introduction.data_survey_waves", units=units, measures=what))
    else:
        text = (ctx.ph("introduction.data_records", dataset=ctx.full_name, about=about) + cite + ": "
                + ctx.ph("introduction.data_records_what", measures=what))
    design, why = ds.get("design", ""), collected_for(ctx)
    if design and not ctx.survey:  # a survey's design is named above; other designs are stated here
        text += " " + ctx.ph("introduction.design", article="an" if design[:1].lower() in "aeiou" else "a",
                             design=design, collected_for=", " + ctx.ph("introduction.collected_for", why=why)
                             if why else "")
    pitfalls = []
    if has_reserve_codes(ctx):
        pitfalls.append(ctx.ph("introduction.pitfall_reserve_codes"))
    pitfalls.append(ctx.ph("introduction.pitfall_measured_after") if ctx.has_waves
                    else ctx.ph("introduction.pitfall_no_order"))
    g = ctx.grouping
    if g["columns"] and g["reconstructed"]:
        pitfalls.append(ctx.ph("introduction.pitfall_suppressed_clusters", units=ctx.people, unit=unit))
    elif g["columns"]:
        pitfalls.append(ctx.ph("introduction.pitfall_nested", units=ctx.people, unit=unit))
    miss = ctx.data.get("missingness")
    worst = max([(r or {}).get("pct_missing") or 0 for r in (miss or {}).values()], default=0)
    if ctx.survey and worst >= SUBSTANTIAL_MISSING_PCT:  # "substantial" only when some predictor lacks that many
        pitfalls.append(ctx.ph("introduction.pitfall_nonresponse"))
    elif miss is None or worst > 0:  # only when values are missing
        pitfalls.append(ctx.ph("introduction.pitfall_missing", units=units))
    listed = "; ".join(pitfalls[:-1]) + "; and " + pitfalls[-1] if len(pitfalls) > 1 else pitfalls[0]
    if len(pitfalls) == 1:
        return text + " " + ctx.ph("introduction.pitfalls_one", pitfall=listed,
                                   cite=c.citep("missing_data", "leakage", limit=3), short=data_name(ctx),
                                   population=f"{ctx.people} or {plural(unit)}" if g["columns"] else ctx.people)
    return text + " " + ctx.ph("introduction.pitfalls", pitfalls=listed, cite=c.citep("missing_data", "leakage", limit=3),
                               short=data_name(ctx), population=f"{ctx.people} or {plural(unit)}" if g["columns"] else ctx.people)
