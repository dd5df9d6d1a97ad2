"""The Discussion."""

from __future__ import annotations

from ...conventions import STACKING
from ...texescape import escape_latex
from .. import narrative, provenance
from ..common import CI_LEVEL, feature_names, information, outcome_sentence_np, primary_stmt, strength
from ..context import Ctx
from ..text import cap_first, clean_label, join_list, lc_first, model_family

#: the Discussion's blocks that read findings as facts about students (what the features mean, practical use, the
#: groups, further studies of the population): left out when the rows were generated
GENERATED_OMITS = ("features", "practice", "fairness", "meaning", "limits", "future")


def write(ctx: Ctx) -> str:
    n, c, best = ctx.n, ctx.cites, ctx.best
    blocks: dict[str, list[str]] = {}

    def add(key: str, text: str) -> None:
        if text:
            blocks.setdefault(key, []).append(text)

    latest = ctx.wave(ctx.predictor_waves[-1]) if ctx.predictor_waves else ctx.ph("discussion.latest_wave_unknown")
    s = strength(ctx)
    info = ctx.ph("discussion.information_by_wave", wave=latest) if ctx.has_waves else information(ctx)
    if ctx.claim("predicts_above_chance") == "supported" and ctx.binary:
        finding = ctx.ph("discussion.performance_predictive_binary", information=cap_first(info),
                         outcome=outcome_sentence_np(ctx), strength=s)
    elif ctx.claim("predicts_above_chance") == "supported":
        finding = ctx.ph("discussion.performance_predictive_regression", information=cap_first(info),
                         outcome=outcome_sentence_np(ctx), strength=s)
    else:
        finding = ctx.ph("discussion.performance_unsettled", information=info, outcome=outcome_sentence_np(ctx))
    unit, units = ctx.cluster, ctx.units
    if ctx.school_split_ok:  # the held-out units, and how far the estimate reaches
        unseen = (ctx.ph("discussion.unseen_clusters", unit=unit) if ctx.grouping["reconstructed"]
                  else ctx.ph("discussion.unseen_units", unit=unit))
        scope = ctx.ph("discussion.scope_new_clusters", unit=unit)
    else:
        unseen = ctx.ph("discussion.unseen_records")
        scope = (ctx.ph("discussion.scope_same_clusters", unit=unit) if ctx.grouping["columns"]
                 else ctx.ph("discussion.scope_same_population"))
    add("performance",
        ctx.ph("discussion.performance_estimate", finding=finding, model=ctx.model_phrase(best),
               statement=primary_stmt(ctx), units=units, unseen=unseen)
        + " " + (ctx.ph("provenance.discussion_performance", units=units) if ctx.generated
                 else ctx.ph("discussion.performance_fair_guide", units=units, scope=scope)))
    fam = model_family(best)
    if "contrast" in n and fam == "tree" and ctx.claim(f"outperforms_{n['contrast']}") != "supported":
        other = n["contrast"]
        add("models", ctx.ph("discussion.models_overlap", best=cap_first(ctx.model_phrase(best)),
                             other=ctx.model_phrase(other), margin=n["MarginContrast"], level=CI_LEVEL))
    elif "contrast" in n:
        raw = float(n["MarginContrast:raw"])
        other = n["contrast"]
        if fam == "tree" and raw < 0.02:
            add("models", ctx.ph("discussion.models_tree_small_gain", other=ctx.model_phrase(other),
                                 margin=n["MarginContrast"]))
        elif fam == "tree":
            add("models", ctx.ph("discussion.models_tree_gain", other=ctx.model_phrase(other),
                                 margin=n["MarginContrast"]))
        elif fam == "linear":
            add("models", ctx.ph("discussion.models_linear_matches", best=ctx.model_phrase(best),
                                 other=ctx.model_phrase(other), margin=n["MarginContrast"]))
    ev = (ctx.results.get("selection_evidence") or {}).get("stacking_minus_selected") or {}
    ci = ev.get("ci") if isinstance(ev, dict) else None
    if (model_family(best) != STACKING and isinstance(ci, list) and len(ci) == 2
            and all(isinstance(x, (int, float)) for x in ci) and ci[0] <= 0 <= ci[1]):
        add("models", ctx.ph("discussion.stacking_no_gain"))
    if ctx.top_features:
        feats = feature_names(ctx, 3)
        add("features",
            ctx.ph("discussion.features_consistent", features=join_list(feats))
            + f"{c.citep(ctx.dataset_topic, 'edm', limit=2)}. " + ctx.ph("discussion.features_associations"))
    if ctx.binary:
        text = ctx.ph("discussion.practice_threshold")
        if ctx.mac(best, "brier"):
            text += ", " + ctx.ph("discussion.practice_calibration", brier=ctx.mac(best, "brier"))
        add("practice", text + ".")
    subgroups = ctx.spec.get("subgroups") or []
    if subgroups and not ctx.fairness_reported:
        labels = [lc_first(ctx.label_tex(g, "research_spec.json:subgroups")) for g in subgroups]
        add("fairness",
            ctx.ph("discussion.fairness_not_reported", groups=join_list(labels))
            + f"{c.citep('fairness', limit=2)}, " + ctx.ph("discussion.fairness_not_reported_why"))
    elif ctx.fairness:
        add("fairness", _discussion_fairness(ctx))
    elif ctx.fairness_reported:
        fig = next((f for f in ctx.figures if f.kind in ("fairness", "subgroup", "subgroups")), None)
        text = (ctx.ph("discussion.fairness_reported_figure", figure=ctx.ph("common.figure_ref", label=fig.label))
                if fig else ctx.ph("discussion.fairness_reported"))
        add("fairness", f"{text}{c.citep('fairness', limit=2)}.")
    st = ctx.stability
    if st.get("runs") and st.get("unstable") is not None:
        if not st.get("unstable") and ctx.claim("ranking_robust") != "supported":
            add("stability", ctx.ph("discussion.stability_unsettled"))
        elif st.get("unstable"):
            add("stability", ctx.ph("discussion.stability_unstable"))
        else:
            add("stability", ctx.ph("discussion.stability_stable"))
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    score = n.get("ReviewScore")
    if ctx.unverified:
        add("review", ctx.ph("discussion.review_unverified", verdict=verdict.lower(),
                             with_score=" " + ctx.ph("discussion.review_score", score=score) if score else "",
                             marked=" " + ctx.ph("discussion.review_marked") if rv.get("unverified") else ""))
    elif score:
        add("review", ctx.ph("discussion.review_passed", score=score))
    add("meaning", narrative.meaning(ctx))
    add("practice", narrative.practice(ctx))
    add("limits", narrative.limits(ctx))
    add("future", narrative.future(ctx))
    order = (ctx.outline or {}).get("discussion") or list(blocks)
    if ctx.generated:  # a study on data with a known generating process: the recovery check, no substantive reading
        for key in GENERATED_OMITS:
            blocks.pop(key, None)
        recovery = provenance.discussion_blocks(ctx)
        blocks.update({k: [v] for k, v in recovery.items()})
        order = ["performance", *recovery, *[k for k in order if k not in ("performance", *recovery)]]
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
    extra = (" " + ctx.ph("discussion.fairness_inconclusive", groups=join_list(names(unsettled)))
             if unsettled else "")
    if flagged:
        text = ctx.ph("discussion.fairness_gaps", groups=join_list(labels)) + f"{c.citep('fairness', limit=2)}."
    else:
        text = ctx.ph("discussion.fairness_no_gap") + f"{c.citep('fairness', limit=2)}."
    return text + extra
