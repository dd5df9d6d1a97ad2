"""Methods: the subsections in order (data, outcome and predictors, preprocessing and split from
writer.methods_data), then models and tuning, evaluation, fairness audit, stability, automation."""

from __future__ import annotations

import re
from typing import Any

from edm_ars.core.conventions import STACKING
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import cap_first, clean_label, is_number, join_list, lc_first, model_family
from edm_ars.writer import branches, large_data, multilevel, narrative, provenance, splits
from edm_ars.writer.common import (
    CI_LEVEL,
    at_risk_phrase,
    attr_label,
    automation_note,
    floor_macro,
    metric_name,
    model_np,
    model_the,
    n_perturbations,
    perturbation_kinds,
    stability_rule,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name
from edm_ars.writer.methods_data import data_text, outcome_text, preprocessing_text, wave_label
from edm_ars.writer.phrases import plural
from edm_ars.writer.table_one import fmt_fixed


def evaluation_text(ctx: Ctx) -> str:
    c, n = ctx.cites, ctx.n
    if ctx.binary:
        sents = [ctx.ph("methods.metrics_binary",
                        cite=c.cite_keys("fawcett2006introduction", topics=("roc",), limit=1))]
    else:
        sents = [ctx.ph("methods.metrics_regression")]
    kind = ctx.split_groups_kind  # what the cluster bootstrap draws: clusters, units, or clusters joined by units
    cluster_boot = "NBootstrap" in n and ctx.results.get("interval_method") == "cluster_bootstrap" and "TestClusters" in n
    if cluster_boot and kind == "levels":  # several cluster levels kept together (dataset.grouping.also)
        sents.append(ctx.ph("methods.levels_bootstrap_intervals", level=CI_LEVEL, n=n["NBootstrap"],
                            n_groups=n["TestClusters"], units=ctx.units,
                            clusters=join_list([plural(lv["unit"]) for lv in ctx.kept_levels]))
                     + c.citep("bootstrap", limit=1) + ".")
    elif cluster_boot and kind != "cluster" and ctx.repeated:
        rep = ctx.repeated
        text = (ctx.ph("methods.unit_bootstrap_intervals", level=CI_LEVEL, n=n["NBootstrap"],
                       n_units=n["TestClusters"], units=rep["units"], unit=rep["unit"]) if kind == "unit" else
                ctx.ph("methods.joined_bootstrap_intervals", level=CI_LEVEL, n=n["NBootstrap"],
                       n_groups=n["TestClusters"], units=rep["units"], clusters=plural(ctx.cluster)))
        sents.append(text + c.citep("bootstrap", limit=1) + ".")
    elif cluster_boot:
        sents.append(ctx.ph("methods.cluster_bootstrap_intervals", level=CI_LEVEL, n=n["NBootstrap"],
                            n_clusters=n["TestClusters"], clusters=plural(ctx.cluster), cluster=ctx.cluster)
                     + c.citep("bootstrap", limit=1) + ".")
    elif "NBootstrap" in n:
        sents.append(ctx.ph("methods.bootstrap_intervals", level=CI_LEVEL, n=n["NBootstrap"])
                     + c.citep("bootstrap", limit=1) + ".")
    if n.get("NPairs") and "ComparisonAlpha" in n:
        sents.append(ctx.ph("methods.paired_method", metric=metric_name(ctx), level=CI_LEVEL, k=n["NPairs"],
                            alpha=n["ComparisonAlpha"]))
    sents += methods_interpretation(ctx)
    repeated = splits.methods(ctx)  # the repeated grouped splits, a paragraph of their own
    return (f"\\subsection{{{ctx.ph('methods.evaluation_title')}}}\n" + " ".join(sents)
            + (f"\n\n{repeated}" if repeated else ""))


def write(ctx: Ctx) -> str:
    out = [data_text(ctx), outcome_text(ctx), preprocessing_text(ctx), methods_models(ctx), evaluation_text(ctx)]
    out += [extra for extra in (methods_fairness(ctx), methods_stability(ctx), multilevel.methods(ctx),
                                branches.methods(ctx)) if extra]
    out.append(f"\\subsection{{{ctx.ph('methods.automation_title')}}}\n"
               + " ".join([automation_note(ctx), (ctx.ph("methods.automation_traceable_generated")
                                                    if provenance.kind(ctx) == "generated"
                                                    else ctx.ph("methods.automation_traceable", short=ctx.short)),
                           narrative.methods_review(ctx)]))
    return "\n\n".join(out)


FAMILY_CITES = {"logistic": ("hastie2009elements", "linear"),
                "elastic_net": ("zou2005regularization", "elastic_net"),
                "random_forest": ("breiman2001random", "random_forest"),
                "xgboost": ("chen2016xgboost", "xgboost"),
                STACKING: ("wolpert1992stacked", "stacking")}


_SEARCH = re.compile(r"random search of (\d+) candidates raced over folds: all on (\d+) folds?, "
                     r"the best (\d+) on all (\d+)")


def _range_macros(ctx: Ctx, name: str, values: dict[str, int], what: str) -> str:
    """'\\A{}' when all models share a value, else '\\A{} to \\B{}' (min and max with their sources)."""
    lo_m = min(values, key=lambda k: values[k])
    hi_m = max(values, key=lambda k: values[k])
    lo = ctx.m.count(macro_name("Search", name, "Min" if values[lo_m] != values[hi_m] else ""), values[lo_m],
                     f"results.json:models.{lo_m}.search ({what})")
    if values[lo_m] == values[hi_m]:
        return lo
    hi = ctx.m.count(macro_name("Search", name, "Max"), values[hi_m],
                     f"results.json:models.{hi_m}.search ({what})")
    return f"{lo} to {hi}"


def tuning_text(ctx: Ctx) -> str:
    models = ctx.results["models"]
    singles = [m for m in models if model_family(m) != STACKING]
    if not any((models[m].get("search") or models[m].get("cv_score") is not None) for m in singles):
        return ctx.ph("methods.test_set_unused")
    how = []
    if ctx.school_split_ok:
        how.append(ctx.ph("methods.folds_grouped_reconstructed", cluster=ctx.cluster) if ctx.grouping["reconstructed"]
                   else ctx.ph("methods.folds_grouped", cluster=ctx.cluster))
    if ctx.binary:
        how.append(ctx.ph("methods.folds_stratified"))
    folds = ctx.ph("methods.cv_folds") + (", " + join_list(how) if how else "")
    parsed = {m: _SEARCH.search(str(models[m].get("search") or "")) for m in singles}
    if singles and all(parsed.values()):
        cand = _range_macros(ctx, "Candidates", {m: int(p.group(1)) for m, p in parsed.items() if p},
                              "candidates")
        first = _range_macros(ctx, "RaceFolds", {m: int(p.group(2)) for m, p in parsed.items() if p},
                              "first folds")
        kept = _range_macros(ctx, "Survivors", {m: int(p.group(3)) for m, p in parsed.items() if p},
                              "candidates kept")
        allf = _range_macros(ctx, "Folds", {m: int(p.group(4)) for m, p in parsed.items() if p},
                              "all folds")
        grouped = (", " + ctx.ph("methods.folds_keep_clusters_apart", cluster=ctx.cluster)
                   if ctx.school_split_ok else "")
        text = ctx.ph("methods.tuning_raced", folds=folds, grouped=grouped, candidates=cand, first=first,
                      kept=kept, all_folds=allf)
    else:
        groups: dict[str, list[str]] = {}
        for m in singles:
            s = re.sub(r";\s*early stopping.*$", "", str(models[m].get("search") or "").strip()).rstrip(".")
            if s:
                groups.setdefault(s, []).append(m)
        searches = ""
        if groups:
            src = "results.json:models.{}.search"
            parts = [ctx.ph("methods.search_for_models", search=ctx.t(s, src.format(ms[0])),
                            models=join_list([model_np(ctx, x) for x in ms]))
                     for s, ms in list(groups.items())[:3]]
            searches = " (" + "; ".join(parts) + ")"
        text = ctx.ph("methods.tuning_searches", folds=folds, searches=searches)
    stops = [m for m in singles if "early stopping" in str(models[m].get("search") or "")]
    if "mlp" in models and "mlp" not in stops:
        stops.append("mlp")
    if stops:
        where = (" " + ctx.ph("methods.early_stopping_where")) if "xgboost" in stops and "mlp" in stops else ""
        text += " " + cap_first(ctx.ph("methods.early_stopping",
                                       models=join_list([model_the(ctx, m) for m in stops]))) + where + "."
    return text


def _variables(ctx: Ctx, names: list[str]) -> list[str]:
    """Labels of source variables in running text, each with its wave when the labels alone would repeat
    (the same test score in two waves). A label's numbers are the specification's ("family income above 25000 USD")."""
    labels = [lc_first(ctx.label_tex(v, ctx.label_source(v, "registry label"))) for v in names]
    waves = {p.get("name"): p.get("wave") for p in ctx.spec.get("predictors", [])}
    repeated = {x for x in labels if labels.count(x) > 1}
    return [f"{x} ({wave_label(ctx, waves.get(v))})" if x in repeated and waves.get(v) else x
            for x, v in zip(labels, names, strict=True)]


def baselines_text(ctx: Ctx) -> str:
    """The baselines (results.json baselines): what each is and how its predictors were chosen."""
    b = ctx.baselines
    if not b:
        return ""
    plain = ctx.ph("methods.plain_logistic") if ctx.binary else ctx.ph("methods.plain_linear")
    parts = []
    for name, rec in b.items():
        src = f"results.json:baselines.{name}"
        if rec.get("kind") == "constant":
            parts.append(ctx.ph("methods.baselines_constant",
                                mean_or_rate=ctx.ph("methods.base_rate") if ctx.binary else ctx.ph("methods.mean")))
        elif rec.get("kind") == "one_predictor" and rec.get("predictors"):
            predictor = _variables(ctx, rec["predictors"][:1])[0]
            if rec.get("chosen_by") == "registry":
                parts.append(ctx.ph("methods.baselines_prior_registry", plain=plain, predictor=predictor))
            else:
                parts.append(ctx.ph("methods.baselines_prior_best", plain=plain, predictor=predictor))
        elif rec.get("kind") == "core_linear" and rec.get("predictors"):
            k = ctx.m.count("NCoreBaseline", len(rec["predictors"]), f"len({src}.predictors)", derived=True)
            names = join_list(_variables(ctx, rec["predictors"]))
            parts.append(ctx.ph("methods.baselines_core", plain=plain, k=k, predictors=names))
    if not parts:
        return ""
    return (ctx.ph("methods.baselines_intro") + " " + "; ".join(parts) + ". "
            + ctx.ph("methods.baselines_never_selected"))


def methods_models(ctx: Ctx) -> str:
    c, n = ctx.cites, ctx.n
    models = ctx.results["models"]
    names = []
    for m in models:
        key, topic = FAMILY_CITES.get(m, ("", ""))
        cite = c.cite_keys(key, topics=(topic,), limit=1) if key else ""
        names.append(model_np(ctx, m).replace("the stacked ensemble", "a stacked ensemble") + cite)
    software = c.cite_keys("pedregosa2011scikit", topics=("software",), limit=1)
    if software:
        software = (", " + ctx.ph("methods.software") + software
                    + (" " + ctx.ph("methods.software_xgboost") if "xgboost" in models else ""))
    sents = [ctx.ph("methods.models_compared", n=n["NModels"], models=join_list(names), software=software),
             tuning_text(ctx)]
    stack = next((m for m in models if model_family(m) == STACKING), None)
    if stack:
        params = models[stack].get("best_params") or {}
        base = [b for b in params.get("base_models") or [] if isinstance(b, str)]
        meta = str(params.get("meta_learner") or "").strip()
        meta = f" ({ctx.t(meta, f'results.json:models.{stack}.best_params.meta_learner')})" if meta else ""
        of_base = ""
        if base:
            k = ctx.m.count("NStackBase", len(base), f"len(results.json:models.{stack}.best_params.base_models)",
                            derived=True)
            of_base = " " + ctx.ph("methods.stack_base_count", k=k)
        sents.append(ctx.ph("methods.stacking") + meta + " " + ctx.ph("methods.stacking_fit") + of_base + " "
                     + ctx.ph("methods.stacking_no_leak"))
    sampled = large_data.methods(ctx)  # tuned on a subsample of the schools (analysis.large_data), when it applied
    if sampled:
        sents.append(sampled)
    sents.append(ctx.ph("methods.test_set_unused_hyperparameters"))
    base = baselines_text(ctx)
    if base:
        sents.append(base)
    rule = str(ctx.results.get("selection_rule") or "").strip().rstrip(".")
    if rule:
        sents.append(ctx.ph("methods.selection_rule", rule=ctx.t(rule, "results.json:selection_rule")))
    return (f"\\subsection{{{ctx.ph('methods.models_title')}}}\\label{{sec:models}}\n" + " ".join(sents))


def methods_interpretation(ctx: Ctx) -> list[str]:
    """Sentences for the Evaluation subsection: quality floor and SHAP explainers per family."""
    c = ctx.cites
    by = ctx.shap_by_model
    floor = floor_macro(ctx)
    what = metric_name(ctx)
    sents = [ctx.ph("methods.quality_floor", metric=what, floor=floor)] if floor else []
    if not (by or ctx.top_features):
        return sents
    cite = c.cite_keys("lundberg2017unified", "lundberg2020local", topics=("shap",))
    if not by:
        if ctx.importance_key == "mean_abs_shap":
            return sents + [ctx.ph("methods.shap_selected") + cite + ", " + ctx.ph("methods.shap_selected_ranking")]
        return sents + [ctx.ph("methods.importance_selected")]
    groups: dict[str, list[str]] = {}
    for m, info in by.items():
        groups.setdefault(str(info.get("explainer") or ctx.ph("methods.unknown_explainer")), []).append(m)
    parts = []
    for expl, ms in groups.items():
        who = join_list([model_the(ctx, m) for m in ms])
        sizes = {by[m].get("n_explained") for m in ms if is_number(by[m].get("n_explained"))}
        part = ctx.ph("methods.explainer_for", explainer=escape_latex(expl), models=who)
        if expl == "KernelExplainer" and len(sizes) == 1:
            k = ctx.m.count(macro_name("NExplained", ms[0]), sizes.pop(),
                            f"results.json:shap.by_model.{ms[0]}.n_explained")
            part += " " + ctx.ph("methods.kernel_sample", k=k)
        parts.append(part)
    interp = ctx.interpreted
    sents.append(ctx.ph("methods.shap_all") + cite + " "
                 + ctx.ph("methods.shap_all_explainers", explainers=join_list(parts, "and")))
    if any(model_family(m) == STACKING for m in ctx.results["models"]):
        sents.append(ctx.ph("methods.stacking_not_explained"))
    if interp:
        sents.append(ctx.ph("methods.shap_reported", model=model_np(ctx, interp)))
    return sents


def methods_fairness(ctx: Ctx) -> str:
    fa = ctx.fairness
    if not fa:
        return ""
    c, m = ctx.cites, ctx.m
    attrs = fa["attributes"]
    singles = [a for a, r in attrs.items() if r.get("kind") != "intersection"]
    inters = [a for a, r in attrs.items() if r.get("kind") == "intersection"]
    labels = [f"\\emph{{{lc_first(attr_label(ctx, a))}}}" for a in singles]
    model = fa.get("model") or ctx.best
    model_text = model_np(ctx, model)
    groups = join_list(labels) or ctx.ph("methods.fairness_attributes_fallback")
    by_inters = ""
    if inters:
        names = join_list([f"\\emph{{{lc_first(attr_label(ctx, a))}}}" for a in inters])
        by_inters = " " + (ctx.ph("methods.fairness_intersections", attributes=names) if len(inters) > 1
                           else ctx.ph("methods.fairness_intersection", attributes=names))
    sents = [ctx.ph("methods.fairness_audit", model=model_text, groups=groups, intersections=by_inters),
             ctx.ph("methods.fairness_membership",
                    attributes=join_list([f"\\texttt{{{escape_latex(a)}}}" for a in singles]))]
    binned = [a for a in singles if (attrs[a].get("binned") or {}).get("bins")]
    binned = [a for a in binned if attrs[a]["binned"]["bins"] == attrs[binned[0]]["binned"]["bins"]]
    if binned:  # a numeric attribute with many values: its groups are quantile bins, not categories
        k = m.count("FairBins", attrs[binned[0]]["binned"]["bins"], f"results.json:fairness.attributes.{binned[0]}"
                    ".binned.bins")
        sents.append(ctx.ph("methods.fairness_binned", attributes=join_list(
            [f"\\texttt{{{escape_latex(a)}}}" for a in binned]), k=k))
        for a in binned:  # the cut points, so that a reader knows which values each group holds
            sents += [t for t in [cut_points_sentence(ctx, a, attrs[a]["binned"].get("edges") or [])] if t]
    derived = [a for a in singles if (attrs[a].get("derived_from") or {}).get("predictor")]
    for a in derived:
        sents.append(derived_sentence(ctx, a, attrs[a]["derived_from"]))
    nres = fa.get("n_resamples")
    boot = ""
    if is_number(nres):
        k = m.count("FairNResamples", nres, "results.json:fairness.n_resamples")
        if fa.get("bootstrap") == "cluster" and is_number(fa.get("n_clusters")):
            boot = " " + ctx.ph("methods.fairness_resamples_clusters", k=k, clusters=m.count(
                "FairNClusters", fa["n_clusters"], "results.json:fairness.n_clusters"))
        else:
            boot = " " + ctx.ph("methods.fairness_resamples", k=k)
    if ctx.binary:
        sents.append(ctx.ph("methods.fairness_auc_interval", level=CI_LEVEL) + boot + ".")
        sents.append(ctx.ph("methods.fairness_calibration", positive=ctx.positive))
        sents += rule_sentences(ctx)
    else:
        scale = fa.get("error_scale") or {}
        sd = (" (" + ctx.ph("methods.fairness_sd_value", sd=m.metric(
            "FairOutcomeSD", scale["sd"], "results.json:fairness.error_scale.sd")) + ")") if is_number(scale.get("sd")) \
            else ""
        sents.append(ctx.ph("methods.fairness_rmse_interval", level=CI_LEVEL) + boot + ", "
                     + ctx.ph("methods.fairness_errors", sd=sd))
        sents.append(ctx.ph("methods.fairness_no_r2"))
    mg, gt = fa.get("min_group"), fa.get("gap_threshold")
    if is_number(mg):
        sents.append(ctx.ph("methods.fairness_min_group",
                            k=m.count("FairMinGroup", mg, "results.json:fairness.min_group")))
    if is_number(gt):
        sents.append(ctx.ph("methods.fairness_gap_flagged",
                            threshold=m.add("FairGapThreshold", f"{float(gt):.2f}", gt,
                                            "results.json:fairness.gap_threshold")))
    else:
        sents.append(ctx.ph("methods.fairness_gap"))
    if ctx.binary:
        sents.append(ctx.ph("methods.fairness_equalized_odds")
                     + c.cite_keys("hardt2016equality", topics=("fairness",), limit=1) + ": "
                     + ctx.ph("methods.fairness_equalized_odds_zero"))
    return (f"\\subsection{{{ctx.ph('methods.fairness_title')}}}\\label{{sec:fairness-method}}\n"
            + " ".join(sents))


def rule_sentences(ctx: Ctx) -> list[str]:
    """The decision rule at which the audit's error rates are computed (binary outcomes), stated in full."""
    rule = ctx.fairness.get("decision_rule") or {}
    if not is_number(rule.get("share")):
        return []
    m = ctx.m
    src = "results.json:fairness.decision_rule"
    share = m.pct("FairFlagShare", 100 * rule["share"], f"100 * {src}.share", derived=True)
    who = at_risk_phrase(ctx)
    why = {"at_risk_share": ctx.ph("methods.fairness_share_from_training"),
           "config": ctx.ph("methods.fairness_share_configured"),
           "default": ctx.ph("methods.fairness_share_default")}.get(rule.get("share_source"), "")
    flagged = m.count("FairNFlagged", rule["n_flagged"], f"{src}.n_flagged") if is_number(rule.get("n_flagged")) else None
    cut = rule.get("cutoff_probability")
    if flagged and is_number(cut):
        side = (ctx.ph("methods.fairness_rule_at_most") if rule.get("at_risk_class") == 0
                else ctx.ph("methods.fairness_rule_at_least"))
        size = " (" + ctx.ph("methods.fairness_rule_size", n=flagged, cutoff=m.metric(
            "FairCutoff", cut, f"{src}.cutoff_probability"), side=side) + ")"
    else:
        size = ""
    return [ctx.ph("methods.fairness_rule", share=share, students=at_risk_phrase(ctx, full=True), why=why, size=size),
            ctx.ph("methods.fairness_rates_rule", students=who)]


def derived_sentence(ctx: Ctx, attr: str, d: dict[str, Any]) -> str:
    """That an audited attribute is derived from a predictor (declared or detected), and what that implies."""
    src = f"results.json:fairness.attributes.{attr}.derived_from"
    pred = d["predictor"]
    label = d.get("label")
    name = (f"\\emph{{{lc_first(ctx.t(clean_label(label), src + '.label'))}}} (\\texttt{{{escape_latex(pred)}}})"
            if label else f"\\texttt{{{escape_latex(pred)}}}")
    if pred not in {p.get("name") for p in ctx.spec.get("predictors") or []} and d.get("source") == "registry":
        return ctx.ph("methods.fairness_derived_not_predictor", attribute=f"\\emph{{{lc_first(attr_label(ctx, attr))}}}",
                      predictor=name)
    attribute = f"\\emph{{{lc_first(attr_label(ctx, attr))}}}"
    if d.get("source") == "registry":
        return ctx.ph("methods.fairness_derived_declared", attribute=attribute, predictor=name)
    return ctx.ph("methods.fairness_derived_detected", attribute=attribute, predictor=name)


def cut_points_sentence(ctx: Ctx, attr: str, edges: list[float]) -> str:
    """Where the quantile groups of a numeric audited attribute were cut (results.json binned.edges: the inner ones),
    or '' without inner edges."""
    src = f"results.json:fairness.attributes.{attr}.binned.edges"
    points = [ctx.m.add(macro_name("FairCut", attr, str(i)), fmt_fixed(e, 0 if float(e).is_integer() else 2),
                        float(e), f"{src}.{i}") for i, e in enumerate(edges) if 0 < i < len(edges) - 1]
    if not points:
        return ""
    return ctx.ph("methods.fairness_cut_points", attribute=f"\\texttt{{{escape_latex(attr)}}}",
                  points=join_list(points))


def methods_stability(ctx: Ctx) -> str:
    st = ctx.stability
    if not st or not st.get("runs"):
        return ""
    c = ctx.cites
    kinds = perturbation_kinds(ctx)
    model = st.get("model") or ctx.interpreted or ctx.best
    metric = metric_name(ctx, st.get("metric") or ctx.primary)
    # what is compared follows the number of predictors (as in the Results): with at most five every top five holds
    # all of them, so their order and the metric are compared and no top-five criterion (it cannot fail) is stated;
    # with at most ten the top-ten share is left out
    if ctx.all_in_top(5):
        design = ctx.ph("methods.stability_design_order", metric=metric, n=ctx.n["NPredictors"])
    elif ctx.all_in_top(10):
        design = ctx.ph("methods.stability_design_top_five", metric=metric)
    else:
        design = ctx.ph("methods.stability_design", metric=metric)
    sents = [ctx.ph("methods.stability_rationale")
             + c.cite_keys("yu2020veridical", topics=("stability",), limit=1) + ".",
             ctx.ph("methods.stability_refits", model=model_np(ctx, model), n=n_perturbations(ctx))
             + (f" ({kinds})" if kinds else "") + ", " + design]
    rule = (ctx.ph("methods.stability_rule_by_construction", n=ctx.n["NPredictors"]) if ctx.all_in_top(5)
            else stability_rule(ctx))
    if rule:
        sents.append(rule)
    return (f"\\subsection{{{ctx.ph('methods.stability_title')}}}\\label{{sec:stability-method}}\n"
            + " ".join(sents))
