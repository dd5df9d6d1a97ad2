"""Related Work: the verified literature by topic."""

from __future__ import annotations

from .. import narrative
from ..context import Ctx
from ..text import join_list, lc_first


def write(ctx: Ctx) -> str:
    c = ctx.cites
    if not c.papers:
        return ctx.ph("related_work.no_references")
    paras = []
    edm, hsls = c.keys("edm"), c.keys(ctx.dataset_topic)
    if edm or hsls:
        text = "\\paragraph{Outcome prediction in EDM}"
        if edm:
            text += (" Predicting academic outcomes from administrative, survey and log data has a "
                     f"long history in educational data mining{c.citep(keys=edm)}, with applications "
                     "ranging from course performance to persistence and postsecondary enrolment.")
            if len(edm) >= 2:
                text += (f" For example, {c.citet(edm[0])} and {c.citet(edm[1])} illustrate how such "
                         "models are built and evaluated.")
        if hsls:
            used_for = ctx.ds.get("used_for") or "in earlier studies"
            text += f" The {ctx.short} data have been used {used_for}{c.citep(keys=hsls)}."
        text += (" Much of this work relies on a single model and on preprocessing choices that are "
                 "rarely reported in enough detail to reproduce; our pipeline makes each choice "
                 "explicit and records it with the results.")
        paras.append(text)
    algo = []
    en, rf, xg, st = (c.keys("elastic_net"), c.keys("random_forest"), c.keys("xgboost"),
                      c.keys("stacking"))
    if en:
        algo.append("Penalised linear models such as the elastic net, which combines lasso and ridge "
                    "penalties, remain strong and interpretable baselines for tabular data"
                    f"{c.citep(keys=en)}.")
    if rf or xg:
        s = "Tree ensembles capture nonlinearities and interactions without manual feature engineering"
        if rf and xg:
            s += (f": random forests average many decorrelated trees{c.citep(keys=rf)}, while "
                  f"gradient boosting, as implemented in XGBoost{c.citep(keys=xg)}, fits trees "
                  "sequentially to the errors of the current ensemble.")
        elif rf:
            s += f", as in random forests{c.citep(keys=rf)}."
        else:
            s += f", as in gradient boosting with XGBoost{c.citep(keys=xg)}."
        algo.append(s)
    if st:
        algo.append("Stacked generalisation combines the predictions of several learners"
                    f"{c.citep(keys=st)}.")
    if algo:
        algo.append("Comparing these families on the same split shows whether the added flexibility "
                    "of ensembles is worth their loss of transparency.")
        paras.append("\\paragraph{Learning algorithms for tabular data} " + " ".join(algo))
    shap = c.keys("shap")
    if shap:
        paras.append(
            "\\paragraph{Model interpretation} SHAP values attribute each prediction to the input "
            f"features using Shapley values from cooperative game theory{c.citep(keys=shap)}. "
            "Averaged over students, their magnitudes rank features by how strongly they are "
            "associated with the predictions. Because attributions describe the fitted model rather "
            "than the process that generated the data, they support statements about which "
            "variables are predictive, not about what causes the outcome.")
    fair = c.keys("fairness")
    if fair:
        groups = [ctx.label_tex(g, "research_spec.json:subgroups") for g in ctx.spec.get("subgroups", [])]
        text = ("\\paragraph{Fairness} Predictive models in education can be less accurate or "
                "differently calibrated for some groups of students than for others"
                f"{c.citep(keys=fair)}, which motivates reporting performance separately for groups")
        text += f" such as {join_list([lc_first(g) for g in groups])}." if groups else "."
        paras.append(text)
    md, lk, bs = c.keys("missing_data"), c.keys("leakage"), c.keys("bootstrap")
    safe = []
    if md:
        safe.append(f"Missing data are pervasive in {'large surveys' if ctx.survey else 'educational data'}, "
                    "and how they are handled can bias "
                    f"both estimates and predictions{c.citep(keys=md)}.")
    if lk:
        safe.append("Leakage, where information unavailable at prediction time enters training, is a "
                    "common source of over-optimistic results in applied machine learning"
                    f"{c.citep(keys=lk)}.")
    if bs:
        safe.append("The bootstrap provides confidence intervals for performance metrics without "
                    f"distributional assumptions{c.citep(keys=bs)}.")
    if safe:
        paras.append("\\paragraph{Methodological safeguards} " + " ".join(safe))
    paras += narrative.related_extra(ctx)
    rest = c.unused()
    if rest:
        cited = [c.citet(k) for k in rest]
        verb = "includes" if len(cited) == 1 else "include"
        paras.append(f"Further work relevant to this study {verb} {join_list(cited)}.")
    if ctx.lit.get("source") == "curated" or ctx.lit.get("retrieval_failed"):
        paras.append("The references in this section were drawn from a curated bibliography that "
                     "ships with EDM-ARS rather than from a systematic literature search, so recent "
                     "or closely related studies may be missing.")
    return "\n\n".join(paras)
