"""The Introduction."""

from __future__ import annotations

from .. import narrative
from ..common import automation_note, has_reserve_codes, outcome_sentence_np
from ..context import Ctx
from ..text import cap_first, join_list, model_family


def write(ctx: Ctx) -> str:
    c, n, spec = ctx.cites, ctx.n, ctx.spec
    o = spec["outcome"]
    paras = []
    if ctx.binary:
        paras.append(
            "Predicting student outcomes is one of the central tasks of educational data mining "
            f"(EDM){c.citep('edm', limit=3)}. Early-warning models that estimate whether a student "
            "will reach a milestone, such as enrolling in postsecondary education or completing a "
            "credential, can help schools direct advising and support to the students who need it "
            "before the relevant decisions are made. Such models are only useful, however, if their "
            "accuracy is estimated honestly, if their uncertainty is reported, and if the variables "
            "they rely on would actually be available at the time a prediction is needed.")
    else:
        paras.append(
            "Predicting student outcomes is one of the central tasks of educational data mining "
            f"(EDM){c.citep('edm', limit=3)}. "
            + ("Models that anticipate later achievement from earlier records can help educators identify "
               "students who may need additional support, and they show which early indicators carry "
               "information about later performance." if ctx.has_waves else
               "Models that relate achievement to students' background and context show how much of the "
               "variation in achievement that information accounts for, and which indicators carry it.")
            + " Such models are only useful, however, if their accuracy is estimated honestly, if their "
            "uncertainty is reported, and if the variables they rely on precede the outcome in time.")
    paras.append(data_pitfalls(ctx))
    paras += [narrative.motivation(ctx), narrative.gap(ctx)]
    rq = ctx.t(spec["research_question"].strip(), "research_spec.json:research_question")
    pop = ctx.t(spec.get("population", "").strip().rstrip("."), "research_spec.json:population")
    text = (f"This paper addresses the following research question: \\emph{{{rq}}} The outcome is "
            f"{outcome_sentence_np(ctx)}, recorded in the {ctx.wave(o.get('wave'))}")
    if ctx.binary and o.get("positive_label"):
        text += f", with the positive class defined as \\emph{{{ctx.positive}}}"
    text += "."
    if pop:
        text += f" The population is defined as follows: {pop}."
    text += (f" We use {n['NPredictors']} predictors drawn from {ctx.waves_text}, "
             "each chosen with a substantive rationale, and compare models that range from "
             f"penalised linear models{c.citep('elastic_net', limit=2)} to tree ensembles"
             f"{c.citep('random_forest', 'xgboost', limit=3)}"
             + (", a neural network" if "mlp" in ctx.results["models"] else "")
             + (" and a stacked ensemble" if any(model_family(x) == "stacking" for x in ctx.results["models"])
                else "") + ".")
    paras.append(text)
    items = [
        f"A leakage-aware prediction pipeline for {ctx.short} that "
        + ("recodes reserve codes, " if has_reserve_codes(ctx) else "")
        + f"splits the data {ctx.split_by}before any encoding, and fits every preprocessing step on the "
        "training set only.",
        f"A comparison of {n['NModels']} models on a held-out test set of {n['TestN']} students, "
        "with bootstrap confidence intervals for every metric.",
    ]
    if ctx.top_features:
        if ctx.importance_key == "mean_abs_shap":
            how = "SHAP values" + c.citep("shap", limit=2)
        else:
            how = "feature importance scores"
        items.append(f"An interpretation of the selected model with {how}, "
                     "reported as predictive associations rather than causal effects"
                     + (", with a check of whether the most predictive features agree across model families"
                        if len(ctx.shap_by_model) > 1 else "") + ".")
    else:
        items.append("A transparent account of the analytic choices and limitations of the study, "
                     "so that the result can be reproduced and scrutinised.")
    if ctx.fairness or ctx.stability.get("runs"):
        what = []
        if ctx.fairness:
            what.append("a subgroup audit of the selected model's predictive performance across protected "
                        "groups of students")
        if ctx.stability.get("runs"):
            what.append("a stability analysis that asks whether the performance and the most predictive features "
                        "survive perturbations of the imputation, the training sample and the random seed")
        items.append(cap_first(join_list(what)) + ".")
    paras.append(ctx.ph("introduction.contributions") + "\n\\begin{itemize}\n"
                 + "\n".join(f"  \\item {i}" for i in items) + "\n\\end{itemize}")
    ec = (spec.get("expected_contribution") or "").strip()
    tail = ""
    if ec:
        tail = (f"In the words of the study specification, the expected contribution is as follows: "
                f"{ctx.t(ec, 'research_spec.json:expected_contribution')}"
                + ("" if ec.endswith(".") else ".") + " ")
    tail += (f"{automation_note(ctx)} Section~\\ref{{sec:related}} reviews related work, "
             "Section~\\ref{sec:methods} describes the data and methods, Section~\\ref{sec:results} "
             "reports the results, and Sections~\\ref{sec:discussion} and~\\ref{sec:limitations} "
             "discuss their implications and limitations.")
    paras.append(tail)
    return "\n\n".join(paras)


def data_pitfalls(ctx: Ctx) -> str:
    """The introduction's paragraph on the data set and the pitfalls of modelling it."""
    c, ds, units, unit = ctx.cites, ctx.ds, ctx.units, ctx.cluster
    about = f", {ds['about']}," if ds.get("about") else ""
    cite = c.citep(ctx.dataset_topic, limit=3) if ctx.dataset_topic else ""
    if ctx.survey and ctx.has_waves:
        text = (f"Large longitudinal surveys such as the {ctx.full_name}{about} are an attractive basis for such "
                f"models{cite}. They follow the same {units} across several waves and record achievement, "
                f"attitudes, family background and {unit} context.")
    else:
        text = (f"Data sets such as the {ctx.full_name}{about} are an attractive basis for such models{cite}: they "
                f"record {units}' achievement together with their background and {unit} context.")
    pitfalls = []
    if has_reserve_codes(ctx):
        pitfalls.append("missing responses are stored as negative reserve codes that look like valid numbers")
    pitfalls.append("some variables are measured after the outcome they would be used to predict" if ctx.has_waves
                    else "without a recorded order of measurement, some variables may not precede the outcome "
                         "they would be used to predict")
    g = ctx.grouping
    if g["columns"] and g["reconstructed"]:
        pitfalls.append(f"{units} are nested within {unit}s whose identifiers are suppressed in public-use files")
    elif g["columns"]:
        pitfalls.append(f"{units} are nested within {unit}s, so a random split lets a model recognise {unit}s it "
                        "has already seen")
    pitfalls.append("item nonresponse is substantial" if ctx.survey else f"values are missing for some {units}")
    listed = "; ".join(pitfalls[:-1]) + "; and " + pitfalls[-1] if len(pitfalls) > 1 else pitfalls[0]
    return (text + " They also pose well-known pitfalls for predictive modelling: " + listed
            + f"{c.citep('missing_data', 'leakage', limit=3)}. Analyses that ignore these issues can report "
            f"optimistic accuracy that would not carry over to new {units}"
            + (f" or {unit}s." if g["columns"] else "."))
