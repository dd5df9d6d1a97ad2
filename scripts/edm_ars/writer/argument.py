"""The paper's argument, written from the outline (outline.json ``leads`` and ``contribution``): the
Introduction's contribution paragraph (what this study adds, stated against the named prior work) and the
Discussion's opening (which results lead, in the outline's order).

A lead is a supported claim or an analysis in the results (writer/outline.py); every sentence here names the
study's own facts (its data, unit, outcome, model, predictor, groups, the cited work) and holds no number: the
numbers behind the leads are reported by the sections that report those results, as macros.
"""

from __future__ import annotations

from typing import Any

from edm_ars.core.text import join_list, lc_first
from edm_ars.writer.common import attribute_noun, data_name, group_phrases
from edm_ars.writer.context import Ctx
from edm_ars.writer.phrases import plural

#: the leads a paragraph argues at most (the outline's first ones)
MAX_LEADS = 4
#: on generated rows the paper reads no finding about the features or the groups as a fact about students (the
#: Discussion leaves those blocks out): such leads are not argued
GENERATED_SKIPS = ("features", "fairness")


def leads(ctx: Ctx) -> list[dict[str, Any]]:
    """The outline's leads that this paper argues (on generated rows, none about features or groups)."""
    found = list((ctx.outline or {}).get("leads") or [])
    return [x for x in found if x.get("topic") not in GENERATED_SKIPS] if ctx.generated else found


def _groups(ctx: Ctx, attrs: list[str]) -> str:
    labels = [attribute_noun(ctx, a, lc_first(ctx.label_tex(a, "research_spec.json:subgroups"))) for a in attrs]
    return join_list(labels) if labels else ctx.ph("argument.groups_default")


def _feature(ctx: Ctx) -> str:
    return ctx.feature_label(0) if ctx.top_features else ctx.ph("argument.feature_default")


def _cluster_words(ctx: Ctx, lead: dict[str, Any]) -> dict[str, str]:
    unit = str(lead.get("unit") or ctx.cluster)
    return {"unit": unit, "clusters": plural(unit)}


def _cite(ctx: Ctx, keys: list[str]) -> str:
    """A citation of the named keys that this run can cite ('' when none)."""
    return ctx.cites.citep(keys=ctx.cites.present(*keys)) if keys else ""


def lead_clause(ctx: Ctx, lead: dict[str, Any], where: str, first: bool = True) -> str:
    """The lead as a clause of the introduction (`where` = "adds") or the discussion (`where` = "opening"); after
    the first lead the outcome is "the outcome" (its label was just said)."""
    lid = lead["id"]

    def say(**values: str) -> str:
        return ctx.ph(f"argument.{where}_{lid}", **values)

    short = data_name(ctx)
    outcome = f"\\emph{{{ctx.outcome_phrase}}}" if first else ctx.ph("argument.the_outcome")
    if lid == "prediction_limited":
        return say(outcome=outcome, short=short)
    if lid == "group_served_worse":
        return say(outcome=outcome, units=ctx.people, groups=_groups(ctx, lead.get("attributes") or []))
    if lid == "surprising_predictor":
        meaning = group_phrases(ctx, [lead["group"]]) if lead.get("group") else []
        return say(feature=_feature(ctx), meaning=meaning[0] if meaning else ctx.ph("argument.group_other"))
    if lid == "flexible_model_gains":
        beaten = [ctx.model_phrase(m) for m in lead.get("beaten") or [] if m in ctx.results["models"]]
        return say(model=ctx.model_phrase(ctx.best), outcome=outcome,
                       beaten=join_list(beaten) if beaten else ctx.ph("argument.simpler_default"))
    if lid == "simple_model_suffices":
        return say(model=ctx.model_phrase(ctx.best), outcome=outcome)
    if lid == "one_predictor_dominates":
        return say(feature=_feature(ctx), outcome=outcome)
    if lid in ("school_context_matters", "school_context_does_not_matter"):
        words = _cluster_words(ctx, lead)
        text = say(outcome=outcome, units=ctx.people, **words)
        if lead.get("few_clusters"):
            text += ctx.ph("argument.few_clusters", clusters=words["clusters"])
        return text
    if lid in ("finding_replicates", "finding_differs"):
        return say(short=data_name(ctx, studied=False), cite=_cite(ctx, list(lead.get("cites") or [])))
    raise KeyError(f"outline.json: unknown lead {lid!r}")



def _place(i: int, n: int) -> str:
    """The connective of the i-th of n further leads: 'more' (the second lead), 'also', and 'last' for the final one
    of three or more, so no connective repeats."""
    return "more" if i == 0 else "last" if i == n - 1 else "also"

def contribution(ctx: Ctx) -> str:
    """The Introduction's contribution paragraph: the prior work named (the published findings tested, or the
    retrieved literature on the data set), then what this study adds, the leading result first."""
    plan = (ctx.outline or {}).get("contribution") or {}
    found = leads(ctx)
    if not found:
        return ""
    against = ctx.cites.present(*(plan.get("against") or []))
    basis = plan.get("basis") if against else "none"
    short = data_name(ctx, studied=False)
    prior = (ctx.ph(f"argument.prior_{basis}", short=short, outcome=f"\\emph{{{ctx.outcome_phrase}}}",
                    cite=ctx.cites.citep(keys=against)) if basis in ("replication", "literature") else "")
    parts = [prior, ctx.ph(f"argument.adds_first{'_prior' if prior else ''}",
                           finding=lead_clause(ctx, found[0], "adds"))]
    parts += [ctx.ph(f"argument.adds_{_place(i, len(found[1:MAX_LEADS]))}", finding=lead_clause(ctx, x, "adds", False))
              for i, x in enumerate(found[1:MAX_LEADS])]
    return " ".join(t for t in parts if t)


def opening(ctx: Ctx) -> str:
    """The Discussion's opening: the result that leads and the ones that follow it, in the outline's order."""
    found = leads(ctx)
    if not found:
        return ""
    parts = [ctx.ph("argument.opening_first", finding=lead_clause(ctx, found[0], "opening"))]
    rest = found[1:MAX_LEADS]
    parts += [ctx.ph(f"argument.opening_{_place(i, len(rest))}", finding=lead_clause(ctx, x, "opening", False))
              for i, x in enumerate(rest)]
    return " ".join(parts)


#: the Discussion's block of each topic of the outline (outline.json ``sections``)
TOPIC_BLOCKS = {"performance": "performance", "school_context": "school", "replication": "replication",
                "models": "models", "features": "features", "fairness": "fairness", "stability": "stability"}


def lead_blocks(ctx: Ctx) -> list[str]:
    """The Discussion's blocks of the leads' topics, in the outline's order of emphasis."""
    topics = {x.get("topic") for x in leads(ctx)}
    emphasis = (ctx.outline or {}).get("sections") or []
    return [TOPIC_BLOCKS[t] for t in emphasis if t in topics and t in TOPIC_BLOCKS]
