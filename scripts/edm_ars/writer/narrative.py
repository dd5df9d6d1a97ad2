"""Prose that follows the outline's archetype: the introduction's motivation, the related work on early
warning and evaluation, the summary of the evidence (the results debate's claims), the automated review in
the methods, and the discussion's meaning, practice, limits and future-work paragraphs.

Every sentence is conditioned on artifacts: a finding is stated only when the results debate supports it
(``ctx.claim``), and an inconclusive one is stated as such. Numbers only ever appear as macros. The sentences
themselves are phrases (config/prompts/phrases.yaml, section ``narrative``)."""

from __future__ import annotations

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import clean_label, join_list, lc_first
from edm_ars.data.registry import EARLY, PRIOR
from edm_ars.writer import provenance
from edm_ars.writer.common import (
    attribute_noun,
    data_name,
    feature_names,
    feature_timing,
    group_phrases,
    has_reserve_codes,
    metric_name,
    predictor_groups,
    timing_adjective,
    use_prose,
)
from edm_ars.writer.context import Ctx

#: units a school can offer support to: without a declared use (`prose.actors`, `prose.purpose`), the practice
#: sentence speaks of schools supporting them; for other units (states, classes) it is left out
STUDENT_NOUNS = frozenset({"student", "pupil", "child", "learner", "applicant", "senior", "undergraduate", "youth",
                           "adolescent", "participant", "respondent", "person", "candidate"})


def group_meaning(ctx: Ctx, group: str | None) -> str | None:
    """What a registry variable group means for the units, in running text (the registry's group_phrases)."""
    if not group:
        return None
    phrase = (ctx.dataset.get("group_phrases") or {}).get(group)
    return escape_latex(" ".join(str(phrase).split())) if phrase else None


def archetype(ctx: Ctx) -> str:
    return (ctx.outline or {}).get("archetype", "policy_brief")


def title(ctx: Ctx, label: str) -> str:
    a = archetype(ctx)
    short = (ctx.ph("narrative.title_generated_data", short=ctx.short) if provenance.kind(ctx) == "generated"
             else data_name(ctx))
    if a == "limits_of_prediction":
        return ctx.ph("narrative.title_limits_of_prediction", earlier=_earlier(ctx), label=label, short=short)
    if a == "fairness_audit":
        return ctx.ph("narrative.title_fairness_audit", label=label, short=short)
    if a == "surprising_predictor":
        return ctx.ph("narrative.title_surprising_predictor", label=label, short=short)
    if a == "complexity_pays":
        return ctx.ph("narrative.title_complexity_pays", label=label, short=short)
    if a == "policy_brief":
        return ctx.ph("narrative.title_policy_brief", label=label, short=short)
    raise KeyError(a)


def _earlier(ctx: Ctx) -> str:
    """What the predictors are, for a title: earlier survey waves, earlier records, or background and context."""
    if ctx.survey and ctx.has_waves:
        return ctx.ph("narrative.title_earlier_survey_waves")
    return ctx.ph("narrative.title_earlier_records") if ctx.has_waves else ctx.ph("narrative.title_background")


def motivation(ctx: Ctx) -> str:
    """The introduction's motivation paragraph, by archetype. A citation follows a word directly, where a phrase
    cannot hold a slot, so a cited phrase stops before its citation and the code adds it and the punctuation."""
    c = ctx.cites
    a = archetype(ctx)
    if a == "fairness_audit":
        actors = use_prose(ctx)["actors"] or ctx.ph("narrative.practice_default_actors")
        labels = [attribute_noun(ctx, g, lc_first(ctx.label_tex(g, "research_spec.json:subgroups"))) for g in ctx.spec.get("subgroups") or []]
        groups = join_list(labels) if labels else ctx.ph("narrative.groups_default")
        return (ctx.ph("narrative.motivation_fairness_audit", actors=actors, units=ctx.people)
                + f"{c.citep('fairness', limit=3)}. "
                + ctx.ph("narrative.motivation_fairness_audit_evidence", short=data_name(ctx), groups=groups))
    if a == "surprising_predictor":
        return _motivation_surprising(ctx) + f"{c.citep('shap', limit=2)}."
    if a == "complexity_pays":
        return (ctx.ph("narrative.motivation_complexity_pays")
                + f"{c.citep('xgboost', 'random_forest', 'linear', limit=3)}. "
                + ctx.ph("narrative.motivation_complexity_pays_answer", data=_data(ctx)))
    if a == "limits_of_prediction":
        return (ctx.ph("narrative.motivation_limits_of_prediction", early=timing_adjective(ctx))
                + f"{c.citep('leakage', 'bootstrap', limit=2)}.")
    groups = group_phrases(ctx, predictor_groups(ctx))
    indicators = join_list(groups[:4]) if groups else ctx.ph("narrative.indicators_default")
    actors = use_prose(ctx)["actors"] or ctx.ph("narrative.practice_default_actors")
    if not ctx.has_waves:
        kind = "repeated" if ctx.records_without_waves else "cross_section"
        # "pupils and their classes" only where the data identify the clusters
        clustered = (" " + ctx.ph("narrative.and_their_clusters", unit=ctx.cluster)) if ctx.grouping["columns"] else ""
        return (ctx.ph(f"narrative.motivation_{kind}", units=ctx.people, actors=actors)
                + f"{c.citep('methods', 'leakage', limit=2)}. "
                + ctx.ph(f"narrative.motivation_{kind}_indicators", indicators=indicators, units=ctx.people,
                         clustered=clustered))
    return (ctx.ph("narrative.motivation_policy_brief", units=ctx.people, actors=actors, unit=ctx.person)
            + f"{c.citep('early_warning', 'dropout', limit=3)}. "
            + ctx.ph("narrative.motivation_policy_brief_indicators", indicators=indicators, actors=actors))


def _motivation_surprising(ctx: Ctx) -> str:
    """Which predictors would be expected to lead (the registry's expected groups) and which would surprise
    (the other groups among the study's predictors); the general wording when the registry does not say."""
    expected = [g for g in (ctx.dataset or {}).get("expected_groups") or []]
    used = predictor_groups(ctx)
    lead = group_phrases(ctx, [g for g in expected if g in used])
    other = group_phrases(ctx, [g for g in used if g not in expected])
    if not lead or not other:
        return ctx.ph("narrative.motivation_surprising_predictor")
    actors = use_prose(ctx)["actors"] or ctx.ph("narrative.practice_default_actors")
    return ctx.ph("narrative.motivation_surprising_predictor_registry", short=data_name(ctx), expected=join_list(lead[:3]),
                  actors=actors, other=join_list(other[:3], "or"))


def _data(ctx: Ctx) -> str:
    return ctx.ph("narrative.survey_data") if ctx.survey else ctx.ph("narrative.educational_data")


def gap(ctx: Ctx) -> str:
    c = ctx.cites
    data = ctx.ph("narrative.longitudinal_surveys") if ctx.survey else _data(ctx)
    handled = ([ctx.ph("narrative.gap_reserve_codes")] if has_reserve_codes(ctx) else []) + (
        [ctx.ph("narrative.gap_clusters", units=ctx.people, unit=ctx.cluster)] if ctx.grouping["columns"] else []) + [
        ctx.ph("narrative.gap_missing"), ctx.ph("narrative.gap_categorical")]
    between = (ctx.ph("narrative.gap_between_groups", groups=_subgroups(ctx)) if ctx.spec.get("subgroups")
               else ctx.ph("narrative.gap_between_models"))
    return (ctx.ph("narrative.gap", data=data, handled=join_list(handled), between=between)
            + f"{c.citep('stability', 'leakage', limit=2)}. "
            + ctx.ph("narrative.gap_addressed", short=data_name(ctx)))


def _subgroups(ctx: Ctx) -> str:
    """The study's subgroups by their labels ('students' when it names none)."""
    labels = [attribute_noun(ctx, g, lc_first(ctx.label_tex(g, "research_spec.json:subgroups")))
              for g in ctx.spec.get("subgroups") or []]
    return join_list(labels) if labels else ctx.ph("narrative.groups_default")


def related_extra(ctx: Ctx) -> list[str]:
    c = ctx.cites
    paras = []
    ew = c.keys("early_warning", "dropout", "performance_prediction", "college", "stem",
                *(ctx.dataset.get("study_topics") or []))
    if ew:
        paras.append(ctx.ph("narrative.related_early_warning") + f"{c.citep(keys=ew[:4])}. "
                     + ctx.ph("narrative.related_early_warning_findings"))
    # the metrics paragraph by task type: ROC/AUC for a binary outcome, RMSE and R2 for a continuous one
    ev = (c.keys("roc", "stability", "software", "metrics") if ctx.binary
          else c.keys("methods", "stability", "software"))
    if ev:
        head = (ctx.ph("narrative.related_evaluation") if ctx.binary
                else ctx.ph("narrative.related_evaluation_regression"))
        paras.append(head + f"{c.citep(keys=ev[:4])}. "
                     + ctx.ph("narrative.related_evaluation_veridical", short=data_name(ctx)))
    return paras


def methods_review(ctx: Ctx) -> str:
    counts = {s: sum(1 for v in ctx.claims.values() if v == s) for s in ("supported", "inconclusive",
                                                                         "unsupported")}
    k = sum(counts.values())
    text = ctx.ph("narrative.review_process", short=data_name(ctx))
    if k:
        n = {s: ctx.m.count(f"NClaims{s.capitalize()}", v, f"count(claims.json:claims[status={s}])", derived=True)
             for s, v in counts.items()}
        total = ctx.m.count("NClaims", k, "len(claims.json:claims)", derived=True)
        return text + "; " + ctx.ph("narrative.review_claims_policy", total=total, outcome=ctx.outcome_phrase,
                                    supported=n["supported"], inconclusive=n["inconclusive"],
                                    unsupported=n["unsupported"])
    return text + ". " + ctx.ph("narrative.review_policy")


def _claim_text(ctx: Ctx, cid: str, open_: bool) -> str | None:
    best = ctx.model_phrase(ctx.best)
    metric = metric_name(ctx)
    if cid == "predicts_above_chance":
        return ctx.ph("narrative.claim_above_chance_open") if open_ else ctx.ph("narrative.claim_above_chance")
    if cid == "meets_quality_floor":
        return ctx.ph("narrative.claim_quality_floor")
    if cid.startswith("outperforms_"):
        other = cid.removeprefix("outperforms_")
        if other not in ctx.results["models"]:
            return None
        from edm_ars.core.conventions import STACKING
        from edm_ars.review.evidence import stacking_base

        if (ctx.best == STACKING and other == stacking_base(ctx.results)
                and ctx.claim("stacking_improves") == ctx.claim(cid)):
            return None  # the same comparison as stacking_improves, stated there
        return ctx.ph("narrative.claim_outperforms", best=best, other=ctx.model_phrase(other))
    if cid == "stacking_improves":
        from edm_ars.review.evidence import stacking_base

        base = stacking_base(ctx.results)
        return ctx.ph("narrative.claim_stacking_improves", base=ctx.model_phrase(base)) if base else None
    if cid == "strongest_predictor" and ctx.top_features:
        return ctx.ph("narrative.claim_strongest_predictor", feature=ctx.feature_label(0))
    if cid == "ranking_robust":
        return ctx.ph("narrative.claim_ranking_robust")
    if cid.startswith("subgroup_gap_"):
        attr = cid.removeprefix("subgroup_gap_")
        rec = ctx.fairness.get("attributes", {}).get(attr)
        if not rec:
            return None
        label = attribute_noun(ctx, attr, lc_first(ctx.t(clean_label(rec.get("label") or attr),
                                                         f"results.json:fairness.attributes.{attr}.label")))
        audited = ctx.fairness.get("primary_metric")  # the audit's metric (RMSE for a continuous outcome)
        return ctx.ph("narrative.claim_subgroup_gap", metric=metric_name(ctx, audited) if audited else metric,
                      groups=label)
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
        paras.append(ctx.ph("narrative.evidence_supported", statements="; ".join(
            f"({chr(ord('a') + i)}) {s}" for i, s in enumerate(supported))))
    else:
        paras.append(ctx.ph("narrative.evidence_none"))
    if open_:
        more = ", " + ctx.ph("narrative.evidence_open_more") if len(open_) > 6 else ""
        paras.append(ctx.ph("narrative.evidence_open", questions=join_list(open_[:6], "or whether"), more=more))
    return ctx.ph("narrative.evidence_heading") + "\n" + "\n\n".join(paras)


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
            parts.append(ctx.ph("narrative.meaning_feature", feature=ctx.feature_label(i), meaning=meaning_))
    if not parts:
        return ""
    lead = ctx.ph("narrative.meaning_lead", short=data_name(ctx), meanings="; ".join(parts))
    if len(seen) > 1:
        lead += " " + ctx.ph("narrative.meaning_several_kinds")
    if not ctx.has_waves:
        if ctx.records_without_waves:  # repeated records: not a cross-section, but none declared to come first
            return lead + " " + ctx.ph("narrative.meaning_repeated")
        return lead + " " + ctx.ph("narrative.meaning_cross_section")
    when = feature_timing(ctx)  # the timing word true of every indicator described (registry.timing_class)
    key = {EARLY: "meaning_timing", PRIOR: "meaning_timing_prior"}.get(when or "", "meaning_timing_unknown")
    return lead + " " + ctx.ph(f"narrative.{key}")


def practice(ctx: Ctx) -> str:
    a = archetype(ctx)
    if a == "limits_of_prediction":
        return ctx.ph("narrative.practice_limits_of_prediction", early=timing_adjective(ctx))
    if a == "fairness_audit":
        use = use_prose(ctx)
        return ctx.ph("narrative.practice_fairness_audit", groups=_subgroups(ctx),
                      actors=use["actors"] or ctx.ph("narrative.practice_default_actors"),
                      purpose=use["purpose"] or ctx.ph("narrative.practice_default_purpose"),
                      units=ctx.people, unit=ctx.person,
                      check=ctx.ph(f"narrative.practice_fairness_check_{'binary' if ctx.binary else 'regression'}"),
                      output=ctx.ph(f"narrative.practice_fairness_output_{'binary' if ctx.binary else 'regression'}"))
    use = use_prose(ctx)
    if not use["actors"] and not use["purpose"] and ctx.person not in STUDENT_NOUNS:
        return ""  # no declared use, and rows that are not students (states): no one to say it would serve
    actors = use["actors"] or ctx.ph("narrative.practice_default_actors")
    purpose = use["purpose"] or ctx.ph("narrative.practice_default_purpose")
    if not ctx.has_waves:  # one cross-section: nothing is known in advance of the outcome
        if ctx.records_without_waves:  # repeated records: none declared to precede the outcome
            return ctx.ph("narrative.practice_repeated", actors=actors, purpose=purpose, units=ctx.people)
        return ctx.ph("narrative.practice_cross_section", actors=actors, purpose=purpose, units=ctx.people)
    if use["decision_time"]:
        text = ctx.ph("narrative.practice_flags_timed", actors=actors, decision_time=use["decision_time"],
                      purpose=purpose, units=ctx.people, unit=ctx.person)
    else:
        text = ctx.ph("narrative.practice_flags", actors=actors, purpose=purpose, units=ctx.people,
                      unit=ctx.person)
    if ctx.claim("ranking_robust") == "supported":
        text += " " + ctx.ph("narrative.practice_stable_indicators")
    return text


def limits(ctx: Ctx) -> str:
    if archetype(ctx) != "limits_of_prediction":
        return ""
    if not ctx.has_waves:  # no waves: no "earlier waves" or "last predictor wave" to speak of
        return ctx.ph("narrative.limits_explanations_cross_section")
    return ctx.ph("narrative.limits_explanations")


def future(ctx: Ctx) -> str:
    c = ctx.cites
    text = ctx.ph("narrative.future_lead", short=data_name(ctx)) + " "
    if ctx.survey:
        text += ctx.ph("narrative.future_weights")
    else:
        text += ctx.ph("narrative.future_representative", units=ctx.people)
    top = ctx.ph("narrative.future_top", feature=feature_names(ctx, 1)[0]) if ctx.top_features else ""
    text += (" " + ctx.ph("narrative.future_transfer", units=ctx.people, short=data_name(ctx), top=top)
             + f"{c.citep('stability', limit=1)}.")
    if ctx.fairness:
        groups = _subgroups(ctx)
        if ctx.binary and any("calibration_slope" in g for r in ctx.fairness["attributes"].values()
                              for g in r.get("groups") or []):  # the audit reports calibration per group already
            text += " " + ctx.ph("narrative.future_subgroups_decisions", units=ctx.people, groups=groups)
        else:
            text += " " + ctx.ph("narrative.future_subgroups", units=ctx.people, groups=groups)
    return text
