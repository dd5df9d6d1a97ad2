"""The paper's outline: a narrative archetype chosen by rule from what the results show (the claims the
results debate supports), before any prose is written.

Archetypes, in the order the rule tries them:

- ``limits_of_prediction``: the selected model is not shown to beat chance or to reach the quality floor;
  the paper reports what the data cannot do;
- ``fairness_audit``: a subgroup gap in the primary metric is a supported claim; the paper leads with who
  the model serves less well;
- ``surprising_predictor``: the strongest predictor (supported, stable) comes from a variable group that
  prior work rarely puts first (attitudes, behaviour, school or teacher context, demographics);
- ``complexity_pays``: a tree ensemble or neural network is shown to beat a simpler model;
- ``policy_brief``: otherwise; a well-performing, interpretable model and what a school could do with it.

The outline fixes the title's framing, the motivation paragraph of the introduction and the order of the
discussion's paragraphs; every sentence is still written from artifacts and supported claims.

Beside the archetype the outline is the plan of the argument:

- ``leads``: the results that lead, each with the rule that made it one and the artifact it rests on, the
  archetype's own lead first (see ``LEADS``). School context (``results["multilevel"]``) and published findings
  (``results["replication"]``) lead only when those analyses are in the results;
- ``contribution``: what the study adds (the leads it rests on) stated against named prior work: the citation
  keys of the published findings it tests, else the retrieved literature on the data set or question;
- ``sections``: the order of emphasis of the topics across the paper (the leads' topics first).
"""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import FLEXIBLE_FAMILIES as FLEXIBLE
from edm_ars.core.conventions import LINEAR_FAMILIES as LINEAR

ARCHETYPES = ("limits_of_prediction", "fairness_audit", "surprising_predictor", "complexity_pays", "policy_brief")

DISCUSSION_ORDER = {
    "limits_of_prediction": ["performance", "limits", "features", "stability", "fairness", "practice", "future",
                             "review"],
    "fairness_audit": ["performance", "fairness", "practice", "features", "models", "stability", "future", "review"],
    "surprising_predictor": ["performance", "features", "meaning", "stability", "models", "fairness", "practice",
                             "future", "review"],
    "complexity_pays": ["performance", "models", "features", "meaning", "stability", "fairness", "practice", "future",
                        "review"],
    "policy_brief": ["performance", "practice", "features", "meaning", "models", "fairness", "stability", "future",
                     "review"],
}


def choose(claims: dict[str, str], results: dict[str, Any], groups: dict[str, str] | None = None,
           expected: set[str] | list[str] | None = None, prior: list[str] | None = None) -> dict[str, Any]:
    """The archetype and why, from the claims' statuses (claim id -> status) and the results, with the leads, the
    contribution and the order of emphasis. `expected` are the registry groups whose leading the ranking is the
    expected finding (prose.expected_groups); without them no predictor is called surprising. `prior` are the
    citation keys of the retrieved literature on the data set or question (the contribution is stated against
    them when no published finding was tested)."""
    groups, expected = groups or {}, set(expected or ())
    best = results.get("best_model")
    top = (results.get("top_features") or [{}])[0].get("feature")
    gaps = sorted(c for c, s in claims.items() if c.startswith("subgroup_gap_") and s == "supported")
    beaten = sorted(c.removeprefix("outperforms_") for c, s in claims.items()
                    if c.startswith("outperforms_") and s == "supported")
    if claims.get("predicts_above_chance") != "supported" or claims.get("meets_quality_floor") != "supported":
        archetype, why = "limits_of_prediction", ("the selected model is not shown to predict better than chance "
                                                  "or to reach the quality floor for interpretation")
    elif gaps:
        archetype, why = "fairness_audit", ("supported subgroup gap(s): "
                                            + ", ".join(g.removeprefix("subgroup_gap_") for g in gaps))
    elif (top and claims.get("strongest_predictor") == "supported" and claims.get("ranking_robust") == "supported"
          and expected and groups.get(top) and groups[top] not in expected):
        archetype, why = "surprising_predictor", (f"the strongest, stable predictor {top} belongs to the "
                                                  f"'{groups[top]}' group, which is rarely the leading one")
    elif best in FLEXIBLE and any(m not in FLEXIBLE for m in beaten):
        archetype, why = "complexity_pays", (f"the flexible model {best} is shown to beat "
                                             + ", ".join(m for m in beaten if m not in FLEXIBLE))
    else:
        archetype, why = "policy_brief", ("a model that predicts better than chance with no supported subgroup "
                                          "gap, surprising predictor or gain from flexibility")
    leads = find_leads(claims, results, archetype, groups, expected)
    return {"archetype": archetype, "rule": why, "discussion": DISCUSSION_ORDER[archetype],
            "order_tried": list(ARCHETYPES), "supported_claims": sorted(c for c, s in claims.items()
                                                                       if s == "supported"),
            "leads": leads, "contribution": contribution(leads, results, prior),
            "sections": emphasis(leads, archetype)}


#: the leads a paper can have, in the order they are tried after the archetype's own lead (topic: the part of the
#: argument they belong to)
LEADS = {
    "prediction_limited": "performance",
    "group_served_worse": "fairness",
    "surprising_predictor": "features",
    "finding_differs": "replication",
    "school_context_matters": "school_context",
    "school_context_does_not_matter": "school_context",
    "finding_replicates": "replication",
    "flexible_model_gains": "models",
    "one_predictor_dominates": "features",
    "simple_model_suffices": "models",
}
#: the archetype's own lead (it leads when the rule found it)
ARCHETYPE_LEAD = {"limits_of_prediction": "prediction_limited", "fairness_audit": "group_served_worse",
                  "surprising_predictor": "surprising_predictor", "complexity_pays": "flexible_model_gains",
                  "policy_brief": "simple_model_suffices"}
#: one predictor dominates when its importance is at least this multiple of the next one's
DOMINANCE_RATIO = 2.0
#: the topics of the paper, in the order of emphasis when no lead moves them forward
TOPICS = ("performance", "school_context", "replication", "models", "features", "fairness", "stability")


def _importance(feature: dict[str, Any]) -> float | None:
    for key in ("mean_abs_shap", "importance"):
        v = feature.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def find_leads(claims: dict[str, str], results: dict[str, Any], archetype: str,
               groups: dict[str, str] | None = None, expected: set[str] | list[str] | None = None
               ) -> list[dict[str, Any]]:
    """The results that lead, each {id, topic, because, source, ...}: the archetype's own lead first, then the
    others in the order of ``LEADS``. A lead is only ever a supported claim or an analysis in the results."""
    groups, expected = groups or {}, set(expected or ())
    found: dict[str, dict[str, Any]] = {}
    best = str(results.get("best_model") or "")
    predicts = (claims.get("predicts_above_chance") == "supported"
                and claims.get("meets_quality_floor") == "supported")
    if not predicts:
        found["prediction_limited"] = {"because": "the selected model is not shown to predict better than chance "
                                                  "or to reach the quality floor",
                                       "source": "claims.json:predicts_above_chance,meets_quality_floor"}
    gaps = sorted(c.removeprefix("subgroup_gap_") for c, s in claims.items()
                  if c.startswith("subgroup_gap_") and s == "supported")
    if predicts and gaps:
        found["group_served_worse"] = {"because": "supported subgroup gap(s)", "attributes": gaps,
                                       "source": "claims.json:" + ",".join(f"subgroup_gap_{g}" for g in gaps)}
    top = results.get("top_features") or []
    lead = (top[0] or {}).get("feature") if top else None
    if (predicts and lead and claims.get("strongest_predictor") == "supported"
            and claims.get("ranking_robust") == "supported" and expected and groups.get(lead)
            and groups[lead] not in expected):
        found["surprising_predictor"] = {"because": f"the strongest, stable predictor belongs to the "
                                                    f"'{groups[lead]}' group", "feature": lead,
                                         "group": groups[lead], "source": "results.json:top_features.0.feature"}
    beaten = sorted(c.removeprefix("outperforms_") for c, s in claims.items()
                    if c.startswith("outperforms_") and s == "supported")
    if predicts and best in FLEXIBLE and any(m not in FLEXIBLE for m in beaten):
        found["flexible_model_gains"] = {"because": f"{best} is shown to beat a simpler model", "model": best,
                                         "beaten": [m for m in beaten if m not in FLEXIBLE],
                                         "source": "claims.json:" + ",".join(f"outperforms_{m}" for m in beaten)}
    if predicts and best in LINEAR:
        found["simple_model_suffices"] = {"because": f"the selected model, {best}, is a linear one: no more "
                                                     f"flexible model is shown to do better", "model": best,
                                          "source": "results.json:best_model"}
    if predicts and lead and len(top) > 1 and claims.get("strongest_predictor") == "supported":
        first, second = _importance(top[0]), _importance(top[1])
        if first is not None and second is not None and first >= DOMINANCE_RATIO * max(second, 0.0) and first > 0:
            found["one_predictor_dominates"] = {
                "because": f"the strongest predictor's importance is at least {DOMINANCE_RATIO:g} times the next",
                "feature": lead, "source": "results.json:top_features.0,top_features.1"}
    found.update(_school_context(results.get("multilevel")))
    found.update(_replication(results.get("replication")))
    own = ARCHETYPE_LEAD.get(archetype)
    order = ([own] if own in found else []) + [k for k in LEADS if k in found and k != own]
    return [{"id": k, "topic": LEADS[k], **found[k]} for k in order]


def _school_context(multilevel: Any) -> dict[str, dict[str, Any]]:
    """School context matters (adding the clusters' means improves held-out prediction: its interval excludes
    zero in the better direction) or does not; nothing when the analysis was skipped or is absent."""
    if not isinstance(multilevel, dict) or multilevel.get("skipped") or not multilevel.get("levels"):
        return {}
    level = multilevel["levels"][0] or {}
    context = level.get("context") or {}
    if not isinstance(context.get("improves"), bool):
        return {}
    rec = {"unit": level.get("unit"), "column": level.get("column"), "few_clusters": bool(level.get("few_clusters")),
           "metric": context.get("metric"), "source": "results.json:multilevel.levels.0.context.improves",
           "share_between": "results.json:multilevel.levels.0.null_model.icc"}
    if context["improves"]:
        return {"school_context_matters": {"because": "adding the clusters' predictor means improves held-out "
                                                      "prediction (the interval excludes zero)", **rec}}
    return {"school_context_does_not_matter": {"because": "adding the clusters' predictor means is not shown to "
                                                          "improve held-out prediction", **rec}}


def _replication(replication: Any) -> dict[str, dict[str, Any]]:
    """A published finding replicates (agrees) or differs, from the replication table; findings that cannot be
    tested lead nowhere."""
    if not isinstance(replication, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for status, key in (("differs", "finding_differs"), ("agrees", "finding_replicates")):
        hits = [(i, f) for i, f in enumerate(replication.get("findings") or [])
                if isinstance(f, dict) and f.get("status") == status]
        if hits:
            out[key] = {"because": f"{len(hits)} published finding(s) {status} with this study's estimate",
                        "findings": [f.get("id") for _, f in hits],
                        "cites": list(dict.fromkeys(f["cite"] for _, f in hits if f.get("cite"))),
                        "source": "results.json:" + ",".join(f"replication.findings.{i}.status" for i, _ in hits)}
    return out


def contribution(leads: list[dict[str, Any]], results: dict[str, Any], prior: list[str] | None = None
                 ) -> dict[str, Any]:
    """What the study adds, against which named prior work: the keys of the published findings it tested (when
    the results hold a replication table with cited findings), else the retrieved literature on the data set or
    question (`prior`); `against` is empty when there is neither, and the paper then names no prior work."""
    tested = [f.get("cite") for f in ((results.get("replication") or {}).get("findings") or [])
              if isinstance(f, dict) and f.get("cite")]
    if tested:
        against, basis = list(dict.fromkeys(tested)), "replication"
    elif prior:
        against, basis = list(dict.fromkeys(prior)), "literature"
    else:
        against, basis = [], "none"
    plan = []
    for lead in leads:
        keys = lead.get("cites") if lead["topic"] == "replication" else against
        plan.append({"lead": lead["id"], "against": list(keys or [])})
    return {"adds": [lead["id"] for lead in leads], "against": against, "basis": basis, "plan": plan}


def emphasis(leads: list[dict[str, Any]], archetype: str) -> list[str]:
    """The order of emphasis of the paper's topics: the leads' topics in the leads' order, then the rest."""
    first = list(dict.fromkeys(lead["topic"] for lead in leads))
    if archetype == "limits_of_prediction" and "performance" not in first:
        first.insert(0, "performance")
    return first + [t for t in TOPICS if t not in first]
