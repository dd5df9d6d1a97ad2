"""Related Work: the verified literature by topic."""

from __future__ import annotations

from edm_ars.core.text import join_list, lc_first
from edm_ars.writer import branches, narrative
from edm_ars.writer.common import attribute_noun, data_name
from edm_ars.writer.context import Citations, Ctx


def write(ctx: Ctx) -> str:
    c = ctx.cites
    if not c.papers:
        return ctx.ph("related_work.no_references")
    paras = []
    edm, hsls = c.keys("edm"), c.keys(ctx.dataset_topic)
    if edm or hsls:
        text = _paragraph(ctx.ph("related_work.heading_prediction"))
        if len(edm) >= 2:
            text += " " + ctx.ph("related_work.edm_history_examples", cite=_cite(c, edm), first=c.citet(edm[0]),
                                 second=c.citet(edm[1]), outcome=ctx.outcome_phrase)
        elif edm:
            text += " " + ctx.ph("related_work.edm_history", cite=_cite(c, edm))
        if hsls:
            used_for = ctx.ds.get("used_for") or ctx.ph("related_work.dataset_used_default")
            text += " " + ctx.ph("related_work.dataset_used", dataset=ctx.short, used_for=used_for, cite=_cite(c, hsls))
        text += " " + ctx.ph("related_work.edm_reproducibility", short=data_name(ctx))
        paras.append(text)
    en, rf, xg, st = (c.keys("elastic_net"), c.keys("random_forest"), c.keys("xgboost"),
                      c.keys("stacking"))
    algo = [ctx.ph("related_work.elastic_net", cite=_cite(c, en))] if en else []
    if rf and xg:
        algo.append(ctx.ph("related_work.trees_forests_and_boosting", forests_cite=_cite(c, rf),
                           boosting_cite=_cite(c, xg)))
    elif rf:
        algo.append(ctx.ph("related_work.trees_forests", cite=_cite(c, rf)))
    elif xg:
        algo.append(ctx.ph("related_work.trees_boosting", cite=_cite(c, xg)))
    if st:
        algo.append(ctx.ph("related_work.stacking", cite=_cite(c, st)))
    if algo:
        algo.append(ctx.ph("related_work.families_compared", short=data_name(ctx)))
        paras.append(" ".join([_paragraph(ctx.ph("related_work.heading_algorithms")), *algo]))
    shap = c.keys("shap")
    if shap:
        paras.append(" ".join([_paragraph(ctx.ph("related_work.heading_interpretation")),
                               ctx.ph("related_work.shap_attribution", cite=_cite(c, shap), units=ctx.units,
                                      outcome=ctx.outcome_phrase),
                               ctx.ph("related_work.shap_not_causal", outcome=ctx.outcome_phrase)]))
    fair = c.keys("fairness") if ctx.spec.get("subgroups") else []  # no audit, no fairness literature
    if fair:
        groups = [attribute_noun(ctx, g, lc_first(ctx.label_tex(g, "research_spec.json:subgroups")))
                  for g in ctx.spec.get("subgroups", [])]
        cite = _cite(c, fair)
        text = (ctx.ph("related_work.fairness_groups", cite=cite, groups=join_list(groups))
                if groups else ctx.ph("related_work.fairness", cite=cite))
        paras.append(_paragraph(ctx.ph("related_work.heading_fairness")) + " " + text)
    md, lk, bs = c.keys("missing_data"), c.keys("leakage"), c.keys("bootstrap")
    safe = []
    if md:
        safe.append(ctx.ph("related_work.missing_data_surveys", cite=_cite(c, md)) if ctx.survey
                    else ctx.ph("related_work.missing_data", cite=_cite(c, md)))
    if lk:
        safe.append(ctx.ph("related_work.leakage", cite=_cite(c, lk)))
    if bs:
        safe.append(ctx.ph("related_work.bootstrap", cite=_cite(c, bs), short=data_name(ctx)))
    if safe:
        paras.append(" ".join([_paragraph(ctx.ph("related_work.heading_safeguards")), *safe]))
    paras += narrative.related_extra(ctx)
    paras += branches.related(ctx)
    rest = [k for k in c.unused() if ctx.binary or not _classification_only(c, k)]
    if rest:
        cited = [c.citet(k) for k in rest]
        works = join_list(cited)
        paras.append(ctx.ph("related_work.further_one", works=works) if len(cited) == 1
                     else ctx.ph("related_work.further_many", works=works))
    if ctx.lit.get("source") == "curated" or ctx.lit.get("retrieval_failed"):
        paras.append(ctx.ph("related_work.curated", short=data_name(ctx, studied=False)))
    return "\n\n".join(paras)


#: bibliography topics that concern classifiers only (a ROC analysis): not further work for a regression study
CLASSIFICATION_TOPICS = frozenset({"roc", "classification", "calibration_classification"})


def _classification_only(c: Citations, key: str) -> bool:
    topics = set(next((p.get("topics") or [] for p in c.papers if p["key"] == key), []))
    return bool(topics & CLASSIFICATION_TOPICS)


def _paragraph(title: str) -> str:
    return "\\paragraph{" + title + "}"


def _cite(c: Citations, keys: list[str]) -> str:
    """The bare `\\citep{...}` for keys that exist: the phrases write the tie themselves (`word~{cite}`)."""
    return c.citep(keys=keys).removeprefix("~")

