"""Methods: data, outcome and predictors, preprocessing and split, models and tuning, evaluation, fairness audit, stability."""

from __future__ import annotations

import re
from typing import Any

from edm_ars.core.conventions import STACKING
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import cap_first, clean_label, isnum, join_list, lc_first, model_family, sentence
from edm_ars.review.consistency import record_promise
from edm_ars.writer import branches, large_data, narrative, provenance, splits, table_one
from edm_ars.writer.common import (
    CI_LEVEL,
    at_risk_phrase,
    attr_label,
    automation_note,
    data_name,
    floor_macro,
    has_reserve_codes,
    metric_name,
    model_np,
    model_the,
    n_perturbations,
    outcome_sentence_np,
    perturbation_kinds,
    stability_rule,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name
from edm_ars.writer.phrases import plural


def wave_label(ctx: Ctx, key: object) -> str:
    """A wave as Table 1 prints it: the registry's label (`waves[].label`, else its prose), never its key."""
    if not key:
        return "--"
    labels = (ctx.dataset or {}).get("wave_labels") or {}
    text = labels.get(str(key)) or (ctx.dataset or {}).get("waves", {}).get(str(key))
    return escape_latex(" ".join(str(text).split())) if text else ctx.wave(key)


def predictor_table(ctx: Ctx) -> str:
    # with Table 1 (sample.json) the missing shares are there, in its missing-share column
    with_missing = not (ctx.sample and ctx.sample.get("predictors"))
    rows = []
    for i, p in enumerate(ctx.spec.get("predictors", [])):
        name = p["name"]
        label = ctx.t(clean_label(p.get("label") or ctx.var_label(name)),
                      f"research_spec.json:predictors.{i}.label")
        wave = wave_label(ctx, p.get("wave"))
        miss = f" & {ctx.n.get(f'miss:{name}', '--')}" if with_missing else ""
        rows.append(f"\\texttt{{{escape_latex(name)}}} & {label} & {wave}{miss} \\\\")
    caption = ctx.ph("methods.predictor_table_caption") if with_missing else ctx.ph("common.sample_predictor_table_caption")
    return (f"\\begin{{table}}[tbp]\n\\caption{{{caption}}}\n"
            "\\label{tab:predictors}\n"
            "\\small\n\\begin{tabularx}{\\columnwidth}{@{}lYZ" + ("r" if with_missing else "") + "@{}}\n\\toprule\n"
            "Variable & Label & Wave" + (" & Missing" if with_missing else "") + " \\\\\n\\midrule\n" + "\n".join(rows)
            + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")


_KFOLD = re.compile(r"^\s*Stratified(Group)?KFold\(n_splits=(\d+)\)\s*fold\s*\d+", re.I)


def split_method(ctx: Ctx) -> str:
    """How the test set was drawn, in words ('one fold of a stratified, school-grouped 5-fold partition')."""
    method = str(ctx.data["split"].get("method", "") or "")
    m = _KFOLD.match(method)
    if m:
        k = ctx.m.count("SplitFolds", int(m.group(2)), "data_report.json:split.method (n_splits)")
        if m.group(1) and ctx.school_split_ok:
            kind = ctx.ph("methods.kfold_cluster_grouped", cluster=ctx.cluster)
        else:
            kind = ctx.ph("methods.kfold_grouped") if m.group(1) else ctx.ph("methods.kfold_stratified")
        return ctx.ph("methods.split_kfold", kind=kind, k=k)
    return ctx.t(method.replace("_", " "), "data_report.json:split.method")


def split_sentences(ctx: Ctx, method: str) -> str:
    """How clusters (schools) were kept on one side of the split: reconstructed from a fingerprint, given by an
    identifier column, absent from the data, or not formed."""
    n, g, unit, units = ctx.n, ctx.grouping, ctx.cluster, ctx.units
    share = ctx.ph("methods.split_share", pct=n["TestFractionPct"], seed=n["SplitSeed"])
    row = units[:-1] if units.endswith("s") else units
    if ctx.school_split_ok:
        leak = cap_first(ctx.ph("methods.cluster_leak", units=units, unit=unit, row=row, short=data_name(ctx)))
        if g["reconstructed"]:
            count = (" " + ctx.ph("methods.n_clusters", n=n["NClusters"])) if "NClusters" in n else ""
            how = (ctx.ph("methods.split_reconstructed", unit=unit) + count + " "
                   + ctx.ph("methods.split_reconstructed_assigned", method=method, share=share,
                            overlap=n["GroupOverlap"]))
        else:
            cols = ", ".join(f"\\texttt{{{escape_latex(c)}}}" for c in g["columns"])
            count = (" " + ctx.ph("methods.n_units", n=n["NClusters"], unit=unit)) if "NClusters" in n else ""
            how = ctx.ph("methods.split_by_identifier", unit=unit, columns=cols, count=count, method=method,
                         share=share, overlap=n["GroupOverlap"])
        return f"{leak} {how}"
    if not g["columns"]:
        return ctx.ph("methods.split_no_clusters", unit=unit, units=units, row=row, method=method, share=share)
    status = escape_latex(str(ctx.data["split"]["school_reconstruction"].get("status", "unavailable")))
    how = (ctx.ph("methods.clusters_not_reconstructed") if g["reconstructed"]
           else ctx.ph("methods.clusters_not_formed"))
    return cap_first(ctx.ph("methods.split_clusters_failed", unit=unit, how=how, status=status, row=row,
                            method=method, share=share, units=units))


def data_text(ctx: Ctx) -> str:
    n, spec = ctx.n, ctx.spec
    sents = provenance.data_sentences(ctx)  # what the rows are, who collected them, how they reached us
    if sents is None:  # no provenance record: the registry's source alone
        agency = (", " + ctx.ph("methods.collected_by", agency=ctx.ds["agency"])) if ctx.ds.get("agency") else ""
        source = ctx.ds.get("source") or ctx.full_name
        if not re.match(r"(the|a|an|these|this|our)\s", source, re.I):  # "We used {source}": the sentence's article
            source = "the " + source
        sents = [ctx.ph("methods.data_source", source=source, agency=agency)]
    pop = (spec.get("population") or "").strip().rstrip(".")
    if pop:
        pop = lc_first(ctx.t(pop, "research_spec.json:population"))
        sents.append(provenance.population(ctx, pop) or ctx.ph("methods.population", population=pop))
    sents.append(ctx.ph("methods.analytic_sample", original=n["OriginalN"], units=ctx.units, analytic=n["AnalyticN"],
                        pct=n["RetentionPct"]))
    if ctx.binary and "NPositive" in n:
        sents.append(ctx.ph("methods.positive_class", units=ctx.units,
                            n=n["NPositive"] + (f" ({n['PositivePct']})" if "PositivePct" in n else ""))
                     + (f" (\\emph{{{ctx.positive}}})." if spec["outcome"].get("positive_label") else "."))
    elif not ctx.binary and "OutcomeMean" in n:
        if "OutcomeSD" not in n:
            sents.append(ctx.ph("methods.outcome_mean", mean=n["OutcomeMean"]))
        elif "OutcomeMin" in n and "OutcomeMax" in n:
            sents.append(ctx.ph("methods.outcome_mean_sd_range", mean=n["OutcomeMean"], sd=n["OutcomeSD"],
                                low=n["OutcomeMin"], high=n["OutcomeMax"]))
        else:
            sents.append(ctx.ph("methods.outcome_mean_sd", mean=n["OutcomeMean"], sd=n["OutcomeSD"]))
    pointer = table_one.data_sentence(ctx)  # the sample flow and Table 1
    if pointer:
        sents.append(pointer)
    floats = "".join("\n\n" + t for t in (table_one.flow_table(ctx), table_one.sample_table(ctx)) if t)
    return (f"\\subsection{{{ctx.ph('methods.data_title', units=cap_first(ctx.units))}}}\n" + " ".join(sents) + floats)


def outcome_text(ctx: Ctx) -> str:
    n, d, spec = ctx.n, ctx.data, ctx.spec
    o = spec["outcome"]
    outcome, wave = outcome_sentence_np(ctx), ctx.wave(o.get("wave"))
    timing = ctx.ph("methods.timing_waves") if ctx.has_waves else ctx.ph("methods.timing_cross_section")
    sents = [ctx.ph("methods.outcome_binary", outcome=outcome, wave=wave) if ctx.binary
             else ctx.ph("methods.outcome_regression", outcome=outcome, wave=wave),
             ctx.ph("methods.predictors_used", n=n["NPredictors"], timing=timing, features=n["NFeatures"])]
    note = (spec.get("temporal_order_note") or "").strip()
    if note:
        sents.append(sentence(ctx.t(note, "research_spec.json:temporal_order_note")))
    preds = spec.get("predictors", [])
    if preds:
        first = preds[0]
        sents.append(ctx.ph("methods.predictor_rationale", name=escape_latex(first["name"]),
                            rationale=lc_first(ctx.t(first["rationale"].strip().rstrip("."),
                                                     "research_spec.json:predictors.0.rationale"))))
    protected = d.get("protected") or []
    if protected:
        used = [p for p in protected if p in d["predictors_before"]]
        labels = join_list([f"\\emph{{{lc_first(ctx.label_tex(p, 'registry label'))}}}" for p in protected])
        if used and len(used) == len(protected):
            sents.append(ctx.ph("methods.protected_all_used", attributes=labels))
        elif used:
            sents.append(ctx.ph("methods.protected_some_used", attributes=labels,
                                used=join_list([lc_first(ctx.label_tex(p, "registry label")) for p in used])))
        elif len(protected) > 1:
            sents.append(ctx.ph("methods.protected_unused", attributes=labels, units=ctx.units))
        else:
            sents.append(ctx.ph("methods.protected_unused_one", attributes=labels, units=ctx.units))
    return (f"\\subsection{{{ctx.ph('methods.outcome_title')}}}\n" + " ".join(sents) + "\n\n"
            + predictor_table(ctx))


def preprocessing_text(ctx: Ctx) -> str:
    c, n, d = ctx.cites, ctx.n, ctx.data
    sr_n = n.get("sentinel:n_values_recoded")
    sr_v = n.get("sentinel:n_variables") or n.get("sentinel:n_variables_recoded")
    if has_reserve_codes(ctx):
        recoded = ""
        if sr_n:
            recoded = " " + (ctx.ph("methods.recoded_values_variables", values=sr_n, variables=sr_v) if sr_v
                             else ctx.ph("methods.recoded_values", values=sr_n))
        sents = [ctx.ph("methods.reserve_codes", short=ctx.short) + recoded + "."]
    else:
        sents = [ctx.ph("methods.no_reserve_codes")]
    sents.append(split_sentences(ctx, split_method(ctx)))
    sents.append(ctx.ph("methods.split_before_preprocessing", train=n["TrainN"], test=n["TestN"], units=ctx.units))
    imp = (d.get("imputation_protocol") or "").strip()
    if imp:
        sents.append(ctx.t(imp, "data_report.json:imputation_protocol") + ("" if imp.endswith(".") else "."))
    sents += [x for x in (table_one.structural_sentence(ctx), table_one.duplicated_sentence(ctx)) if x]
    if "MaxMissingPct" in n:
        sents.append(ctx.ph("methods.missing_values", k=n["NVarsMissing"], n=n["NPredictors"],
                            pct=n["MaxMissingPct"], variable=escape_latex(n["MaxMissingVar"]),
                            cite=c.citep("missing_data", limit=1)))
    elif any(v in (d.get("missingness") or {}) for v in d.get("predictors_before") or []):
        sents.append(ctx.ph("methods.no_missing_values"))
    sents.append(ctx.ph("methods.validation_checks", n=n["NChecks"], passed=n["NChecksPassed"]))
    failed = [ch["name"] for ch in d.get("checks", []) if not ch.get("passed")]
    if failed:
        checks = join_list([f"\\texttt{{{escape_latex(x)}}}" for x in failed])
        sents.append(ctx.ph("methods.checks_failed_many", checks=checks) if len(failed) > 1
                     else ctx.ph("methods.checks_failed_one", checks=checks))
        # the Limitations name each failed check (limitations.failed_checks): a promise the consistency check holds
        record_promise(ctx.outline, "sec:methods", "sec:limitations", [str(x) for x in failed],
                       "methods.checks_failed_many" if len(failed) > 1 else "methods.checks_failed_one")
    return f"\\subsection{{{ctx.ph('methods.preprocessing_title')}}}\n" + " ".join(sents)


def evaluation_text(ctx: Ctx) -> str:
    c, n = ctx.cites, ctx.n
    if ctx.binary:
        sents = [ctx.ph("methods.metrics_binary",
                        cite=c.cite_keys("fawcett2006introduction", topics=("roc",), limit=1))]
    else:
        sents = [ctx.ph("methods.metrics_regression")]
    if "NBootstrap" in n and ctx.results.get("interval_method") == "cluster_bootstrap" and "TestClusters" in n:
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
    out += [extra for extra in (methods_fairness(ctx), methods_stability(ctx), branches.methods(ctx)) if extra]
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
        sizes = {by[m].get("n_explained") for m in ms if isnum(by[m].get("n_explained"))}
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
    derived = [a for a in singles if (attrs[a].get("derived_from") or {}).get("predictor")]
    for a in derived:
        sents.append(derived_sentence(ctx, a, attrs[a]["derived_from"]))
    nres = fa.get("n_resamples")
    boot = ""
    if isnum(nres):
        k = m.count("FairNResamples", nres, "results.json:fairness.n_resamples")
        if fa.get("bootstrap") == "cluster" and isnum(fa.get("n_clusters")):
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
            "FairOutcomeSD", scale["sd"], "results.json:fairness.error_scale.sd")) + ")") if isnum(scale.get("sd")) \
            else ""
        sents.append(ctx.ph("methods.fairness_rmse_interval", level=CI_LEVEL) + boot + ", "
                     + ctx.ph("methods.fairness_errors", sd=sd))
        sents.append(ctx.ph("methods.fairness_no_r2"))
    mg, gt = fa.get("min_group"), fa.get("gap_threshold")
    if isnum(mg):
        sents.append(ctx.ph("methods.fairness_min_group",
                            k=m.count("FairMinGroup", mg, "results.json:fairness.min_group")))
    if isnum(gt):
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
    if not isnum(rule.get("share")):
        return []
    m = ctx.m
    src = "results.json:fairness.decision_rule"
    share = m.pct("FairFlagShare", 100 * rule["share"], f"100 * {src}.share", derived=True)
    who = at_risk_phrase(ctx)
    why = {"at_risk_share": ctx.ph("methods.fairness_share_from_training"),
           "config": ctx.ph("methods.fairness_share_configured"),
           "default": ctx.ph("methods.fairness_share_default")}.get(rule.get("share_source"), "")
    flagged = m.count("FairNFlagged", rule["n_flagged"], f"{src}.n_flagged") if isnum(rule.get("n_flagged")) else None
    cut = rule.get("cutoff_probability")
    if flagged and isnum(cut):
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


def methods_stability(ctx: Ctx) -> str:
    st = ctx.stability
    if not st or not st.get("runs"):
        return ""
    c = ctx.cites
    kinds = perturbation_kinds(ctx)
    model = st.get("model") or ctx.interpreted or ctx.best
    sents = [ctx.ph("methods.stability_rationale")
             + c.cite_keys("yu2020veridical", topics=("stability",), limit=1) + ".",
             ctx.ph("methods.stability_refits", model=model_np(ctx, model), n=n_perturbations(ctx))
             + (f" ({kinds})" if kinds else "") + ", "
             + ctx.ph("methods.stability_design", metric=metric_name(ctx, st.get("metric") or ctx.primary))]
    rule = stability_rule(ctx)
    if rule:
        sents.append(rule)
    return (f"\\subsection{{{ctx.ph('methods.stability_title')}}}\\label{{sec:stability-method}}\n"
            + " ".join(sents))
