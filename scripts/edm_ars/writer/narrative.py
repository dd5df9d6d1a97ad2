"""Prose that follows the outline's archetype: the introduction's motivation, the related work on early
warning and evaluation, the summary of the evidence (the results debate's claims), the automated review in
the methods, and the discussion's meaning, practice, limits and future-work paragraphs.

Every sentence is conditioned on artifacts: a finding is stated only when the results debate supports it
(``ctx.claim``), and an inconclusive one is stated as such. Numbers only ever appear as macros."""

from __future__ import annotations

from ..texescape import escape_latex
from .common import metric_name
from .context import Ctx
from .text import clean_label, join_list, lc_first


def group_meaning(ctx: Ctx, group: str | None) -> str | None:
    """What a registry variable group means for the units, in running text (the registry's group_phrases)."""
    if not group:
        return None
    phrase = (ctx.dataset.get("group_phrases") or {}).get(group)
    return escape_latex(" ".join(str(phrase).split())) if phrase else None


def archetype(ctx: Ctx) -> str:
    return (ctx.outline or {}).get("archetype", "policy_brief")


def title(ctx: Ctx, label: str) -> str:
    frames = {
        "limits_of_prediction": f"How Far Can {_earlier(ctx)} Predict ``{label}''? Limits of Prediction in "
                                f"{ctx.short}",
        "fairness_audit": f"Predicting ``{label}'' in {ctx.short}: Accuracy and Its Uneven Distribution Across "
                          "Groups of Students",
        "surprising_predictor": f"Beyond Prior Achievement: What Predicts ``{label}'' in {ctx.short}",
        "complexity_pays": f"Does Model Flexibility Pay Off? Predicting ``{label}'' in {ctx.short}",
        "policy_brief": f"Predicting ``{label}'' in {ctx.short}: An Automated, Leakage-Aware Machine Learning "
                        "Analysis",
    }
    return frames[archetype(ctx)]


def _earlier(ctx: Ctx) -> str:
    """What the predictors are, for a title: earlier survey waves, earlier records, or background and context."""
    if ctx.survey and ctx.has_waves:
        return "Earlier Survey Waves"
    return "Earlier Records" if ctx.has_waves else "Background and Context"


def motivation(ctx: Ctx) -> str:
    c = ctx.cites
    a = archetype(ctx)
    if a == "fairness_audit":
        return ("Accuracy on average is not the only property such a model needs. When a prediction is used to "
                "decide who is offered advising, outreach or additional support, errors that fall more often on "
                "some groups of students than on others translate into unequal access to that support"
                f"{c.citep('fairness', limit=3)}. Audits of educational prediction models have found that "
                "performance can differ across groups defined by race and ethnicity, sex or socioeconomic "
                "status, and that such differences can remain invisible when only an overall metric is "
                "reported. An honest evaluation therefore reports performance for each group, with its "
                "uncertainty, and states which differences are large enough to matter and which cannot be "
                "distinguished from sampling variation.")
    if a == "surprising_predictor":
        return ("Which early information carries the predictive signal matters as much as how accurate a "
                "prediction is. Prior achievement and family background are the usual leading predictors of "
                "later educational outcomes, and a model that merely rediscovers them offers schools little "
                "they did not already know. When other information, such as students' attitudes, their "
                "engagement or their school context, turns out to be among the strongest predictors, it "
                "points to indicators that schools can observe early and to questions that deserve study with "
                f"designs able to support causal conclusions{c.citep('shap', limit=2)}.")
    if a == "complexity_pays":
        return ("A recurring question in educational prediction is whether flexible learners such as tree "
                "ensembles and neural networks improve on transparent linear models enough to justify their "
                f"loss of transparency{c.citep('xgboost', 'random_forest', 'linear', limit=3)}. On "
                f"{'survey' if ctx.survey else 'educational'} data "
                "with a few dozen well-chosen predictors the answer is often no, because most of the signal is "
                "additive; when nonlinear relationships or interactions carry information, however, a flexible "
                "model can identify students that a linear model misses. Answering the question requires a "
                "comparison on the same held-out students, with intervals for each model, rather than a single "
                "model reported in isolation.")
    if a == "limits_of_prediction":
        return ("Studies that find weak predictive signal are rarely published, yet knowing what earlier "
                "information cannot predict is as useful to a school as knowing what it can: it prevents "
                "investment in early-warning tools that would misclassify many students, and it shows where "
                "better measurement is needed. Reporting such a result honestly requires the same rigour as "
                "reporting a strong one: a leakage-safe design, intervals for every metric and a clear statement "
                f"of which conclusions the evidence supports{c.citep('leakage', 'bootstrap', limit=2)}.")
    return ("For a prediction to inform practice, it must be available early enough to act on, accurate enough "
            "that the students it flags are mostly those who need support, and transparent enough that "
            "counsellors and teachers can see why a student was flagged"
            f"{c.citep('early_warning', 'dropout', limit=3)}. Early-warning indicators built from information "
            "that schools already hold, such as grades, course-taking and students' stated plans, meet the "
            "first requirement by construction; whether they meet the other two is an empirical question that "
            "each application has to answer with held-out data.")


def gap(ctx: Ctx) -> str:
    c = ctx.cites
    data = "longitudinal surveys" if ctx.survey else "educational data"
    return (f"Existing analyses of {data} often leave three gaps that limit their use as evidence. "
            "First, preprocessing decisions such as how reserve codes, missing responses and categorical "
            "variables are handled are seldom reported in enough detail to reproduce the analysis. Second, "
            "performance is frequently reported as a point estimate without uncertainty, so that differences "
            "between models or groups of students cannot be judged. Third, the strongest predictors are often "
            "read as levers for intervention although the design supports only predictive statements"
            f"{c.citep('stability', 'leakage', limit=2)}. This study addresses each gap: every step of the "
            "analysis is generated by a declared workflow, every metric is reported with a bootstrap interval, "
            "and each claim made in this paper was checked against the evidence before the paper was written.")


def related_extra(ctx: Ctx) -> list[str]:
    c = ctx.cites
    paras = []
    ew = c.keys("early_warning", "dropout", "performance_prediction", "college", "stem",
                *(ctx.dataset.get("study_topics") or []))
    if ew:
        paras.append("\\paragraph{Early warning and outcome prediction} Early-warning systems flag students at "
                     "risk of failing, of not completing school or of not continuing their education, so that "
                     f"support can reach them in time{c.citep(keys=ew[:4])}. This literature has shown that a "
                     "small number of indicators available in school records carries much of the predictive "
                     "signal, and that the value of a prediction depends on how its errors are distributed "
                     "among the students it is meant to serve.")
    ev = c.keys("roc", "stability", "software", "metrics")
    if ev:
        paras.append("\\paragraph{Evaluation and reproducibility} The area under the ROC curve summarises how "
                     "well a model ranks students irrespective of a threshold, and it is the usual primary "
                     f"metric for binary outcomes{c.citep(keys=ev[:4])}. Veridical data science asks, beyond "
                     "predictive accuracy, that conclusions be stable under reasonable perturbations of the data "
                     "and the analysis, and that every analytic choice be documented so that others can rerun "
                     "it; this study adopts both requirements.")
    return paras


def methods_review(ctx: Ctx) -> str:
    counts = {s: sum(1 for v in ctx.claims.values() if v == s) for s in ("supported", "inconclusive",
                                                                         "unsupported")}
    k = sum(counts.values())
    text = ("Before the paper was written, an automated review scored the study against a rubric of checks "
            "grouped into problem formulation, data preparation, analysis and substantive validity; "
            "critical problems or too many major ones send the study back to the stage that must fix them. A "
            "results debate then weighed every claim the results could support from three perspectives: an "
            "optimist who reads the point estimates, a sceptic who asks whether the intervals, the stability "
            "analysis and the group sizes allow the claim, and a methodologist who asks whether the design can "
            "support it. Each claim received the most conservative of the three judgements")
    if k:
        n = {s: ctx.m.count(f"NClaims{s.capitalize()}", v, f"count(claims.json:claims[status={s}])", derived=True)
             for s, v in counts.items()}
        total = ctx.m.count("NClaims", k, "len(claims.json:claims)", derived=True)
        text += (f"; of the {total} claims examined, {n['supported']} were supported, "
                 f"{n['inconclusive']} inconclusive and {n['unsupported']} unsupported")
    text += (". This paper states supported claims only, and states inconclusive ones as open questions "
             "(Section~\\ref{sec:evidence}).")
    return text


def _claim_text(ctx: Ctx, cid: str, open_: bool) -> str | None:
    best = ctx.model_phrase(ctx.best)
    metric = metric_name(ctx)
    if cid == "predicts_above_chance":
        return "the selected model predicts the outcome better than chance on held-out students" if not open_ \
            else "the selected model predicts the outcome better than chance"
    if cid == "meets_quality_floor":
        return "the selected model is accurate enough for its feature attributions to be interpreted"
    if cid.startswith("outperforms_"):
        other = cid.removeprefix("outperforms_")
        if other not in ctx.results["models"]:
            return None
        return f"{best} predicts better than {ctx.model_phrase(other)}"
    if cid == "stacking_improves":
        return "stacking the models improves on the best single model"
    if cid == "strongest_predictor" and ctx.top_features:
        return f"\\emph{{{ctx.feature_label(0)}}} is the strongest predictor in the interpreted model"
    if cid == "ranking_robust":
        return "the ranking of the most predictive features is robust to perturbations of the analysis"
    if cid.startswith("subgroup_gap_"):
        attr = cid.removeprefix("subgroup_gap_")
        rec = ctx.fairness.get("attributes", {}).get(attr)
        if not rec:
            return None
        label = lc_first(ctx.t(clean_label(rec.get("label") or attr), f"results.json:fairness.attributes.{attr}.label"))
        return f"the selected model's {metric} differs between groups of {label}"
    return None


def evidence_summary(ctx: Ctx, claims_doc: dict | None) -> str:
    """The results debate's verdicts in words: what the evidence supports and what it leaves open."""
    supported, open_ = [], []
    for i, claim in enumerate((claims_doc or {}).get("claims", [])):
        status = ctx.claim(claim["id"])
        if status not in ("supported", "inconclusive"):
            continue
        text = _claim_text(ctx, claim["id"], status == "inconclusive")
        if text is None and claim.get("source") == "model":
            text = lc_first(ctx.t(claim["statement"].rstrip("."), f"claims.json:claims.{i}.statement"))
        if text:
            (supported if status == "supported" else open_).append(text)
    if not supported and not open_:
        return ""
    paras = []
    if supported:
        paras.append("Taken together, the evidence supports the following statements: "
                     + "; ".join(f"({chr(ord('a') + i)}) {s}" for i, s in enumerate(supported)) + ".")
    else:
        paras.append("The evidence supports none of the claims the results debate examined as a firm finding.")
    if open_:
        paras.append("The evidence does not settle whether " + join_list(open_[:6], "or whether")
                     + (", among other questions" if len(open_) > 6 else "")
                     + ": the point estimates point that way, but their intervals, the stability analysis or "
                     "the group sizes do not allow a firm conclusion, so these are reported as open questions "
                     "rather than findings.")
    return "\\subsection{Summary of the Evidence}\\label{sec:evidence}\n" + "\n\n".join(paras)


def meaning(ctx: Ctx) -> str:
    """What the leading predictors mean for students, by the registry group of their survey variable."""
    if not ctx.top_features or ctx.claim("meets_quality_floor") != "supported":
        return ""
    groups = ctx.registry_groups
    sources = ctx.data.get("feature_sources") or {}
    seen, parts = [], []
    for i, f in enumerate(ctx.top_features[:5]):
        var = sources.get(f["feature"], f["feature"])
        g = groups.get(var)
        meaning_ = group_meaning(ctx, g)
        if meaning_ and g not in seen:
            seen.append(g)
            parts.append(f"\\emph{{{ctx.feature_label(i)}}} reflects {meaning_}")
    if not parts:
        return ""
    lead = ("The strongest predictors carry distinct educational meanings. " + "; ".join(parts) + ".")
    if len(seen) > 1:
        lead += (" That several kinds of information rank highly suggests that the outcome is anticipated by "
                 "a combination of academic, personal and contextual factors rather than by any single one, "
                 "which is consistent with accounts of educational trajectories as cumulative.")
    if ctx.has_waves:
        lead += (" For schools, the practical value of these indicators lies in their timing: they are observed "
                 "well before the outcome, when support can still change a student's options, although the "
                 "analysis cannot say which of them, if changed, would change the outcome.")
    else:
        lead += (" Because the data are one cross-section, these indicators describe who achieves what rather "
                 "than signals observed in advance, and the analysis cannot say which of them, if changed, would "
                 "change the outcome.")
    return lead


def practice(ctx: Ctx) -> str:
    a = archetype(ctx)
    if a == "limits_of_prediction":
        return ("For practice, the result counsels caution: a model whose performance is not clearly better than "
                "chance would flag many students who do not need support and miss many who do, and it should "
                "not be deployed as an early-warning tool. Schools would be better served by improving the "
                "measurement of the earlier indicators or by combining them with information collected closer "
                "to the outcome.")
    if a == "fairness_audit":
        return ("For practice, the subgroup results matter as much as the overall accuracy. A school using this "
                "model would need to check, for its own students, whether the groups with lower accuracy are "
                "flagged correctly, and to consider group-specific thresholds or additional information for "
                "them before relying on the flags. Reporting the model's accuracy for each group alongside its "
                "overall accuracy would let counsellors judge how much weight a flag deserves for each student.")
    text = ("For practice, a model of this kind could support counsellors in deciding where to look first, for "
            "example by flagging students for a conversation about their plans well before applications are "
            "due. The flags should open a conversation rather than decide one: the model describes patterns in "
            "a cohort of students, and an individual student's circumstances may differ from the pattern.")
    if ctx.claim("ranking_robust") == "supported":
        text += (" Because the leading predictors were stable across perturbations of the analysis, the "
                 "indicators a school would monitor do not depend on incidental analytic choices.")
    return text


def limits(ctx: Ctx) -> str:
    if archetype(ctx) != "limits_of_prediction":
        return ""
    return ("The weak or uncertain signal has several possible explanations: the earlier waves may measure the "
            "relevant circumstances only coarsely, much of what determines the outcome may happen after the "
            "last predictor wave, or the analytic sample may be too small for the effect of any single "
            "predictor to be detected. The study cannot distinguish these explanations, but each suggests a "
            "different next step, from richer measurement to predictors collected closer to the outcome.")


def future(ctx: Ctx) -> str:
    c = ctx.cites
    if ctx.survey:
        first = ("First, the analysis is unweighted; repeating it with the survey's weights and design information "
                 "would yield estimates for the population the survey represents rather than the analytic sample. ")
    else:
        first = (f"First, the {ctx.units} of this data set are not a probability sample of a wider population; "
                 "repeating the analysis on a representative sample would show how far the estimates generalise. ")
    text = ("Several extensions would strengthen these findings. " + first
            + f"Second, the model was evaluated on {ctx.units} from the same data set; validation on a later "
            "cohort or another data set would show whether its performance transfers. Third, the predictors that rank highly here are candidates for study with designs that "
            "support causal conclusions, such as natural experiments or randomised interventions, before any of "
            f"them is treated as a lever for change{c.citep('stability', limit=1)}.")
    if ctx.fairness:
        text += (" Finally, the subgroup audit could be extended to calibration within groups and to "
                 "intersections of attributes with enough students to be assessed reliably.")
    return text
