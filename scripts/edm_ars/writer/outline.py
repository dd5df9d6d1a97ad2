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
"""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import FLEXIBLE_FAMILIES as FLEXIBLE

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
           expected: set[str] | list[str] | None = None) -> dict[str, Any]:
    """The archetype and why, from the claims' statuses (claim id -> status) and the results. `expected` are
    the registry groups whose leading the ranking is the expected finding (prose.expected_groups); without
    them no predictor is called surprising."""
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
    return {"archetype": archetype, "rule": why, "discussion": DISCUSSION_ORDER[archetype],
            "order_tried": list(ARCHETYPES), "supported_claims": sorted(c for c, s in claims.items()
                                                                       if s == "supported")}
