"""The Discussion."""

from __future__ import annotations

from edm_ars.core.conventions import STACKING
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import cap_first, clean_label, higher_better, join_list, lc_first, model_family
from edm_ars.review.consistency import record_comparison, record_promise
from edm_ars.review.evidence import BETTER, INDISTINCT, WORSE, comparison_evidence, evidence_for, stacking_base
from edm_ars.writer import argument, multilevel, narrative, provenance, replication, splits
from edm_ars.writer.common import (
    CI_LEVEL,
    attribute_noun,
    feature_names,
    group_phrases,
    information,
    nothing_missing,
    outcome_sentence_np,
    primary_stmt,
    strength,
    use_prose,
)
from edm_ars.writer.context import Ctx

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
               statement=primary_stmt(ctx), units=ctx.people, unseen=unseen)
        + " " + (ctx.ph("provenance.discussion_performance", units=units) if ctx.generated
                 else ctx.ph("discussion.performance_leakage_caveat", outcome=ctx.outcome_phrase, units=units)
                 if leakage_suspected(ctx)
                 else ctx.ph("discussion.performance_fair_guide", outcome=ctx.outcome_phrase, units=units,
                             scope=scope)))
    add("performance", splits.discussion(ctx))  # how far the estimate depends on the split
    fam = model_family(best)
    # the selected model against the best model of the other family: the sentence follows the comparison evidence
    # of the two (evidence.comparison_evidence), and a gain is stated only when the debate supports it
    evidence = comparison_evidence(ctx.results)
    contrast = evidence_for(evidence, best, n["contrast"]) if "contrast" in n else None
    # a linear model "matched or exceeded" a tree model only when its point estimate is not lower
    matched = (fam == "linear" and contrast is not None and contrast.verdict != WORSE
               and ctx.metric_value(best, ctx.primary) is not None
               and (ctx.metric_value(best, ctx.primary) >= ctx.metric_value(n["contrast"], ctx.primary))
               == higher_better(ctx.primary))
    if contrast is not None and fam in ("tree", "linear") and contrast.verdict == INDISTINCT and not matched:
        other = n["contrast"]
        if contrast.kind == "paired":
            add("models", ctx.ph("discussion.models_overlap", best=cap_first(ctx.model_phrase(best)),
                                 other=ctx.model_phrase(other), margin=n["MarginContrast"]))
        else:
            add("models", ctx.ph("discussion.models_overlap_intervals", best=cap_first(ctx.model_phrase(best)),
                                 other=ctx.model_phrase(other), margin=n["MarginContrast"], level=CI_LEVEL))
        record_comparison(ctx.outline, best, other, "indistinct", "discussion.models_overlap", contrast.kind)
    elif contrast is not None:
        raw = float(n["MarginContrast:raw"])
        other = n["contrast"]
        gain = contrast.verdict == BETTER and ctx.claim(f"outperforms_{other}") == "supported"
        if fam == "tree" and gain and raw < 0.02:
            add("models", ctx.ph("discussion.models_tree_small_gain", best=ctx.model_phrase(best),
                                 other=ctx.model_phrase(other), margin=n["MarginContrast"]))
            record_comparison(ctx.outline, best, other, "better", "discussion.models_tree_small_gain", contrast.kind)
        elif fam == "tree" and gain:
            add("models", ctx.ph("discussion.models_tree_gain", best=ctx.model_phrase(best),
                                 other=ctx.model_phrase(other), margin=n["MarginContrast"]))
            record_comparison(ctx.outline, best, other, "better", "discussion.models_tree_gain", contrast.kind)
        elif fam == "tree" and contrast.verdict == BETTER and ctx.claim(f"outperforms_{other}") == "inconclusive":
            # the intervals decide it, but the results debate left it open (a design objection): say so
            slots = dict(best=cap_first(ctx.model_phrase(best)), other=ctx.model_phrase(other),
                         margin=n["MarginContrast"], best_again=ctx.model_phrase(best))
            add("models", ctx.ph("discussion.models_unsettled", **slots) if contrast.kind == "paired"
                else ctx.ph("discussion.models_unsettled_intervals", **slots))
            record_comparison(ctx.outline, best, other, "open", "discussion.models_unsettled", contrast.kind)
        elif matched:
            add("models", ctx.ph("discussion.models_linear_matches", best=ctx.model_phrase(best),
                                 other=ctx.model_phrase(other), margin=n["MarginContrast"]))
            record_comparison(ctx.outline, best, other, "at_least", "discussion.models_linear_matches",
                              contrast.kind)
    base = stacking_base(ctx.results)
    stacked = evidence_for(evidence, STACKING, base, "paired") if base else None
    if model_family(best) != STACKING and stacked is not None and stacked.verdict != BETTER:
        add("models", ctx.ph("discussion.stacking_no_gain", base=ctx.model_phrase(base)))
        record_comparison(ctx.outline, STACKING, base, "not_better", "discussion.stacking_no_gain", "paired")
    if ctx.top_features:
        add("features", _features(ctx) + " " + ctx.ph("discussion.features_associations",
                                                       feature=feature_names(ctx, 1)[0]))
    if ctx.binary:
        text = ctx.ph("discussion.practice_threshold")
        if ctx.mac(best, "brier"):
            text += ", " + ctx.ph("discussion.practice_calibration", brier=ctx.mac(best, "brier"))
        add("practice", text + ".")
    subgroups = ctx.spec.get("subgroups") or []
    if subgroups and not ctx.fairness_reported:
        labels = [attribute_noun(ctx, g, lc_first(ctx.label_tex(g, "research_spec.json:subgroups"))) for g in subgroups]
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
        if not st.get("unstable") and ctx.all_in_top(5):  # the top-five rule cannot fail with five features
            add("stability", ctx.ph("discussion.stability_by_construction"))
        elif not st.get("unstable") and ctx.claim("ranking_robust") != "supported":
            add("stability", ctx.ph("discussion.stability_unsettled"))
        elif st.get("unstable"):
            add("stability", ctx.ph("discussion.stability_unstable"))
        else:
            top = feature_names(ctx, 1)[0] if ctx.top_features else ctx.ph("discussion.stability_top_unknown")
            add("stability", ctx.ph(f"discussion.stability_stable{'_complete' if nothing_missing(ctx) else ''}",
                                    top=top))
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    if ctx.unverified:  # the review's score is never quoted: its verdict and (in the appendix) its issues
        add("review", ctx.ph("discussion.review_unverified", verdict=verdict.lower(),
                             marked=" " + ctx.ph("discussion.review_marked")
                             if rv.get("unverified") and rv.get("verdict") != "UNVERIFIED" else ""))
    else:
        add("review", ctx.ph("discussion.review_passed"))
    add("meaning", narrative.meaning(ctx))
    add("school", multilevel.discussion(ctx))  # what the school-level structure says
    add("replication", replication.discussion(ctx))  # the study set against the published findings on its data
    add("practice", narrative.practice(ctx))
    add("limits", narrative.limits(ctx))
    add("future", narrative.future(ctx))
    order = (ctx.outline or {}).get("discussion") or list(blocks)
    opening = argument.opening(ctx)  # the Discussion opens with the results that lead (outline.json leads)
    if opening:
        blocks["leads"] = [opening]
        order = ["leads", *[k for k in order if k != "leads"]]
    # a lead's block that the archetype's order does not place (school context) follows the performance
    lifted = [b for b in argument.lead_blocks(ctx) if b in blocks and b not in order]
    if lifted and "performance" in order:
        at = order.index("performance") + 1
        order = [*order[:at], *lifted, *order[at:]]
    if ctx.generated:  # a study on data with a known generating process: the recovery check, no substantive reading
        for key in GENERATED_OMITS:
            blocks.pop(key, None)
        recovery = provenance.discussion_blocks(ctx)
        blocks.update({k: [v] for k, v in recovery.items()})
        order = [*(["leads"] if "leads" in blocks else []), "performance", *recovery,
                 *[k for k in order if k not in ("leads", "performance", *recovery)]]
    return "\n\n".join(t for key in [*order, *[k for k in blocks if k not in order]] for t in blocks.get(key, []))


def _features(ctx: Ctx) -> str:
    """The leading features, read against the registry as the outline reads them: whether the strongest one
    belongs to a group the registry expects to lead (prose.expected_groups); without expected groups or a
    group phrase for the strongest feature, the features alone."""
    feats, c = join_list(feature_names(ctx, 3)), ctx.cites
    sources = ctx.data.get("feature_sources") or {}
    top = ctx.top_features[0]["feature"]
    group = ctx.registry_groups.get(sources.get(top, top))
    expected = set((ctx.dataset or {}).get("expected_groups") or [])
    meaning = group_phrases(ctx, [group]) if group else []
    if not expected or not meaning:
        return ctx.ph("discussion.features_plain", features=feats)
    if group in expected:
        # studies that used the data set or predicted such outcomes, not the data set's own documentation
        studies = list((ctx.dataset or {}).get("study_topics") or [])
        cite = c.citep(*studies, "performance_prediction", "edm", limit=2)
        return ctx.ph("discussion.features_expected", features=feats) + f"{cite}."
    return ctx.ph("discussion.features_unexpected", features=feats, feature=feature_names(ctx, 1)[0],
                  meaning=meaning[0])


def _discussion_fairness(ctx: Ctx) -> str:
    fa, c = ctx.fairness, ctx.cites
    flagged = [a for a, r in fa["attributes"].items() if r.get("kind") != "intersection"
               and any(isinstance(g, dict) and g.get("flagged") for g in (r.get("gaps") or {}).values())]
    def settled(a: str) -> bool:
        """A flagged gap of the attribute whose interval excludes zero."""
        return any(isinstance(g, dict) and g.get("flagged") and isinstance(g.get("ci"), list) and len(g["ci"]) == 2
                   and all(isinstance(x, (int, float)) for x in g["ci"]) and (g["ci"][0] > 0 or g["ci"][1] < 0)
                   for g in (fa["attributes"][a].get("gaps") or {}).values())

    # the results debate judges the primary metric's gap; a gap of another metric flagged on its point estimate alone
    # (its interval covers zero) is not a gap the paper may assert either
    unsettled = [a for a in flagged if ctx.claim(f"subgroup_gap_{a}") == "inconclusive"
                 or (ctx.claim(f"subgroup_gap_{a}") != "supported" and not settled(a))]
    flagged = [a for a in flagged if a not in unsettled]
    def names(attrs: list[str]) -> list[str]:
        return [f"\\emph{{{lc_first(ctx.t(clean_label(fa['attributes'][a].get('label') or a), f'results.json:fairness.attributes.{a}.label'))}}}"
                for a in attrs]

    labels = names(flagged)
    extra = (" " + ctx.ph("discussion.fairness_inconclusive", groups=join_list(names(unsettled)))
             if unsettled else "")
    if flagged:
        actors = use_prose(ctx)["actors"] or ctx.ph("discussion.fairness_default_actors")
        text = (ctx.ph("discussion.fairness_gaps", groups=join_list(labels), units=ctx.units,
                       outcome=ctx.outcome_phrase, actors=actors,
                       remedies=ctx.ph(f"discussion.fairness_remedies_{'binary' if ctx.binary else 'regression'}"))
                + f"{c.citep('fairness', limit=2)}.")
    elif unsettled:  # gaps above the threshold that the evidence does not settle: never "no gap above it"
        text = ctx.ph("discussion.fairness_no_settled_gap") + f"{c.citep('fairness', limit=2)}."
    elif any(not g.get("reliable", True) for r in fa.get("attributes", {}).values() for g in r.get("groups") or []):
        text = ctx.ph("discussion.fairness_no_gap") + f"{c.citep('fairness', limit=2)}."
    else:  # every group large enough: no "small groups could not be assessed"
        text = ctx.ph("discussion.fairness_no_gap_all_reliable") + f"{c.citep('fairness', limit=2)}."
    return text + extra


def leakage_suspected(ctx: Ctx) -> bool:
    """The analysis flagged possible leakage (a held-out AUC or R2 above its ceiling) or the DataEngineer's data
    check no_outcome_proxy failed: the estimate is then no guide to what a model could achieve."""
    flagged = any(str(f).startswith("possible_leakage") for f in ctx.results.get("flags") or [])
    suspected = flagged or any(c.get("name") == "no_outcome_proxy" and not c.get("passed")
                               for c in ctx.data.get("checks") or [])
    if suspected:  # the caveat sends the reader to the Limitations, which discuss the leakage
        record_promise(ctx.outline, "sec:discussion", "sec:limitations", ["leakage"],
                       "discussion.performance_leakage_caveat")
    return suspected
