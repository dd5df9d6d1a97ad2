"""Results: model comparison and selection, interpretation, subgroup fairness, stability."""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import LOWER_IS_BETTER, STACKING
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import (
    cap_first,
    clean_label,
    higher_better,
    isnum,
    join_list,
    lc_first,
    model_family,
    number_word,
)
from edm_ars.review.consistency import (
    comparison_evidence,
    evidence_for,
    record_comparison,
    record_promise,
    stacking_base,
)
from edm_ars.writer import narrative, provenance, splits, supplementary
from edm_ars.writer.common import (
    CI_LEVEL,
    PERTURBATION_KIND,
    at_risk_phrase,
    attr_label,
    feature_names,
    fig_of,
    fig_ref,
    figure_env,
    floor_macro,
    metric_name,
    model_np,
    model_the,
    n_perturbations,
    perturbation_kinds,
    primary_stmt,
    stability_rule,
    stability_threshold,
    strength,
    suspiciously_high,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import fmt_ci, fmt_metric, macro_name
from edm_ars.writer.phrases import plural


def results_table(ctx: Ctx) -> str:
    """The model table: every model sorted by the primary metric, the selected one in bold; the baselines below a
    rule of their own (evaluated on the same resamples, never selected)."""
    metric = ctx.primary
    if ctx.binary:
        extras = ["balanced_accuracy", "f1", "brier", "accuracy", "precision", "recall"]
    else:
        extras = ["rmse", "mae"]
    rated = {**ctx.results["models"], **ctx.baselines}
    present = {k for v in rated.values() for k in (v.get("metrics") or {})}
    extras = [e for e in extras if e in present and e != metric][:3]
    has_ci = any(ctx.ci(x, metric) for x in rated)
    head = (["Model", metric_name(ctx)] + ([f"{CI_LEVEL} CI"] if has_ci else [])
            + [metric_name(ctx, e) for e in extras] + splits.table_head(ctx))
    sign = -1 if metric in LOWER_IS_BETTER else 1

    def order(name: str) -> float:
        v = ctx.metric_value(name, metric)
        return float("inf") if v is None else -sign * v

    def row(name: str) -> str:
        cells = [ctx.model_label(name), ctx.mac(name, metric) or "--"]
        if has_ci:
            lo, hi = ctx.n.get(f"{name}|{metric}|lo"), ctx.n.get(f"{name}|{metric}|hi")
            cells.append(f"[{lo}, {hi}]" if lo and hi else "--")
        cells += [ctx.mac(name, e) or "--" for e in extras]
        cells += splits.table_cells(ctx, name)
        if name == ctx.best:
            cells = [f"\\textbf{{{x}}}" for x in cells]
        return " & ".join(cells) + " \\\\"

    rows = [row(name) for name in sorted(ctx.results["models"], key=order)]
    if ctx.baselines:
        rows.append("\\midrule\n\\multicolumn{" + str(len(head)) + "}{l}{\\emph{"
                    + ctx.ph("results.table_baselines_head") + "}} \\\\")
        rows += [row(name) for name in sorted(ctx.baselines, key=order)]
    lower = [metric_name(ctx, e) for e in [metric] + extras if e in LOWER_IS_BETTER]
    higher = [metric_name(ctx, e) for e in [metric] + extras if e not in LOWER_IS_BETTER]
    if lower and higher:
        direction = ctx.ph("results.table_direction", lower=join_list(lower), higher=join_list(higher))
    elif lower:
        direction = ctx.ph("results.table_lower_better")
    else:
        direction = ctx.ph("results.table_higher_better")
    caption = ctx.ph("results.table_caption", test_n=ctx.n["TestN"], metric=metric_name(ctx))
    if has_ci and "NBootstrap" in ctx.n:
        if ctx.results.get("interval_method") == "cluster_bootstrap" and "TestClusters" in ctx.n:
            caption += " " + ctx.ph("results.table_caption_cluster_bootstrap", n_bootstrap=ctx.n["NBootstrap"],
                                    n_clusters=ctx.n["TestClusters"], clusters=plural(ctx.cluster))
        else:
            caption += " " + ctx.ph("results.table_caption_bootstrap", n_bootstrap=ctx.n["NBootstrap"])
    if ctx.baselines:
        caption += " " + ctx.ph("results.table_caption_baselines")
    caption += " " + direction
    if splits.table_caption(ctx):
        caption += " " + splits.table_caption(ctx)
    cols = "l" + "c" * (len(head) - 1)
    return ("\\begin{table}[tbp]\n\\caption{" + caption + "}\n\\label{tab:results}\n\\small\n"
            "\\setlength{\\tabcolsep}{4pt}\n\\fitcolumn{%\n\\begin{tabular}{" + cols + "}\n\\toprule\n"
            + " & ".join(head) + " \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}}\n"
            "\\end{table}")


def paired_rows(ctx: Ctx) -> list[dict[str, Any]]:
    """The selected model's paired comparisons (the Holm family), strongest other model first."""
    recs = [c for c in ctx.results.get("paired_comparisons") or []
            if isinstance(c, dict) and c.get("family", "selected") == "selected" and f"pair|{c.get('b')}" in ctx.n]
    sign = -1 if ctx.primary in LOWER_IS_BETTER else 1
    return sorted(recs, key=lambda c: (c["b"] in ctx.baselines, -sign * (ctx.metric_value(c["b"], ctx.primary) or 0)))


def paired_table(ctx: Ctx) -> str | None:
    """Selected model minus each other model on the same bootstrap resamples: difference, interval, Holm p."""
    recs = paired_rows(ctx)
    if not recs:
        return None
    rows = []
    for i, c in enumerate(recs):
        key = f"pair|{c['b']}"
        if c["b"] in ctx.baselines and (i == 0 or recs[i - 1]["b"] not in ctx.baselines):
            rows.append("\\midrule")  # the baselines below a rule, as in the model table
        rows.append(" & ".join([ctx.model_label(c["b"]), ctx.n[key],
                                f"[{ctx.n[key + '|lo']}, {ctx.n[key + '|hi']}]", ctx.n.get(key + "|holm", "--")])
                    + " \\\\")
    head = [ctx.ph("results.paired_table_other"), ctx.ph("results.paired_table_difference", metric=metric_name(ctx)),
            f"{CI_LEVEL} CI", ctx.ph("results.paired_table_holm")]
    caption = ctx.ph("results.paired_table_caption", model=model_np(ctx, ctx.best), metric=metric_name(ctx),
                     n_bootstrap=ctx.n.get("NBootstrap", "--"), k=ctx.n["NPairs"])
    return ("\\begin{table}[tbp]\n\\caption{" + caption + "}\n\\label{tab:paired}\n\\small\n"
            "\\setlength{\\tabcolsep}{4pt}\n\\fitcolumn{%\n\\begin{tabular}{lccc}\n\\toprule\n" + " & ".join(head)
            + " \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}}\n\\end{table}")


def baseline_text(ctx: Ctx) -> str:
    """What the battery adds over the strongest baseline: the selected model against it, by its paired comparison
    (the verdict the Holm-adjusted comparison gives; the sentence names both models)."""
    recs = {c["b"]: c for c in paired_rows(ctx) if c["b"] in ctx.baselines}
    if not recs:
        return ""
    sign = -1 if ctx.primary in LOWER_IS_BETTER else 1
    strongest = max(recs, key=lambda b: sign * (ctx.metric_value(b, ctx.primary) or -float("inf")))
    c = recs[strongest]
    key = f"pair|{strongest}"
    holm = ctx.n.get(key + "|holm", "--")
    verdict = c.get("verdict", "indistinct")
    slots = dict(model=model_np(ctx, ctx.best), baseline=lc_first(ctx.model_label(strongest)), metric=metric_name(ctx),
                 diff=ctx.n[key], ci=ctx.n[key + "|ci"], holm=holm)
    assertion = {"better": "better", "worse": "worse"}.get(verdict, "indistinct")
    text = ctx.ph(f"results.baseline_{assertion}", **slots)
    record_comparison(ctx.outline, ctx.best, strongest, assertion, f"results.baseline_{assertion}", "paired")
    constant = next((b for b, v in ctx.baselines.items() if v.get("kind") == "constant"), None)
    if constant and ctx.binary and ctx.mac(constant, "auc"):
        text += " " + ctx.ph("results.baseline_constant_auc", auc=ctx.mac(constant, "auc"))
    return text


FAIR_LABEL = {"auc": "AUC", "r2": r"\Rsq{}", "tpr": "TPR", "fpr": "FPR", "flag_rate": "flag rate",
              "citl": "CITL", "calibration_slope": "slope",
              "rmse": "RMSE", "mae": "MAE", "mean_error": "mean error",
              "equalized_odds": "equalized-odds difference", "base_rate": "base rate"}


FIG_SECTION = {
    "roc": "comparison", "pr": "comparison", "precision_recall": "comparison", "calibration": "comparison",
    "observed_predicted": "comparison", "predicted_vs_actual": "comparison", "residuals": "comparison",
    "shap_summary": "interpretation", "shap_importance": "interpretation", "importance": "interpretation",
    "shap": "interpretation", "fairness": "fairness", "subgroup": "fairness", "subgroups": "fairness",
    "fairness_gap": "fairness", "fairness_calibration": "fairness", "stability": "stability",
}


def _flag_models(ctx: Ctx, prefix: str) -> list[tuple[int, str]]:
    """(index, model) of the flags `prefix: <model> ...` that name a known model."""
    out = []
    for i, f in enumerate(ctx.results.get("flags") or []):
        f = str(f)
        if f.startswith(prefix + ":"):
            parts = f[len(prefix) + 1:].split()
            if parts and parts[0] in ctx.results["models"]:
                out.append((i, parts[0]))
    return out


def _outcome_np(ctx: Ctx) -> str:
    pos = ctx.spec["outcome"].get("positive_label")
    if ctx.binary and pos:
        return f"\\emph{{{ctx.positive}}}"
    return f"\\emph{{{lc_first(ctx.outcome_label)}}}"


def _feature_label(ctx: Ctx, feature: str, source: str) -> str:
    """Escaped label of a source variable named in any SHAP ranking."""
    for i, f in enumerate(ctx.top_features):
        if f["feature"] == feature:
            return ctx.feature_label(i)
    for f in (x for info in ctx.shap_by_model.values() for x in info.get("top_features") or []):
        if f.get("feature") == feature and f.get("label"):
            return ctx.t(clean_label(f["label"]), source)
    return ctx.label_tex(feature, source)


def _metric_range(ctx: Ctx) -> tuple[list[str], str | None]:
    metric = ctx.primary
    vals = {m: ctx.metric_value(m, metric) for m in ctx.results["models"]}
    vals = {m: v for m, v in vals.items() if isnum(v)}
    sign = 1 if higher_better(metric) else -1
    order = sorted(vals, key=lambda m: -sign * vals[m])
    return order, (order[0] if order else None)


def comparison(ctx: Ctx) -> tuple[list[str], list[str]]:
    n, best, metric = ctx.n, ctx.best, ctx.primary
    sec = "comparison"
    paras: list[str] = []
    order, top = _metric_range(ctx)
    roc = fig_of(ctx, "roc")
    if roc:
        text = ctx.ph("results.comparison_overview_roc", n_models=n["NModels"], test_n=n["TestN"],
                      figure=fig_ref(ctx, roc, sec))
    else:
        text = ctx.ph("results.comparison_overview", n_models=n["NModels"], test_n=n["TestN"])
    if len(order) > 1:
        lo_m, hi_m = (order[-1], order[0]) if higher_better(metric) else (order[0], order[-1])
        text += " " + ctx.ph("results.comparison_range", metric=metric_name(ctx), low=ctx.mac(lo_m, metric),
                             low_model=model_np(ctx, lo_m), high=ctx.mac(hi_m, metric), high_model=model_np(ctx, hi_m))
    if top == best:
        text += " " + ctx.ph("results.comparison_selected_highest", model=model_np(ctx, best), metric=metric_name(ctx),
                             stmt=primary_stmt(ctx))
    elif top:
        text += " " + ctx.ph("results.comparison_highest_not_selected", metric=metric_name(ctx),
                             top=model_np(ctx, top), top_stmt=primary_stmt(ctx, top), model=model_np(ctx, best),
                             stmt=primary_stmt(ctx))
    paras.append(text)
    sel = selection_text(ctx)
    if sel:
        paras.append(sel)
    floats = []
    table = paired_table(ctx)
    if table:
        text = ctx.ph("results.paired_overview", model=model_np(ctx, ctx.best), k=ctx.n["NPairs"])
        base = baseline_text(ctx)
        paras.append(text + (" " + base if base else ""))
        floats.append(table)
    paras.append(quality_text(ctx, sec))
    paras += splits.results(ctx)
    return paras, floats


def selection_text(ctx: Ctx) -> str:
    res, best, metric, m = ctx.results, ctx.best, ctx.primary, ctx.m
    models = res["models"]
    ev = res.get("selection_evidence") or {}
    top = ev.get("top_single") if ev.get("top_single") in models else None
    tied = [x for x in ev.get("overlapping_top") or [] if x in models]
    parts = []
    if top:
        others = [x for x in tied if x != top]
        if others:
            k = m.count("NOverlappingTop", len(others), "len(results.json:selection_evidence.overlapping_top) - 1",
                        derived=True)
            paired = "_paired" if ev.get("tie_test") == "paired" else ""
            if len(others) != 1:
                text = ctx.ph(f"results.selection_overlap_many{paired}", top=model_np(ctx, top), level=CI_LEVEL, count=k,
                              others=join_list([model_np(ctx, x) for x in others]))
            else:
                text = ctx.ph(f"results.selection_overlap_one{paired}", top=model_np(ctx, top), level=CI_LEVEL, count=k,
                              others=join_list([model_np(ctx, x) for x in others]))
            for x in others:
                record_comparison(ctx.outline, top, x, "indistinct", "results.selection_overlap",
                                  "paired" if ev.get("tie_test") == "paired" else "intervals")
            if best in tied and best == tied[0]:
                text += " " + ctx.ph("results.selection_simplest", model=model_np(ctx, best))
            elif best in tied:
                text += " " + ctx.ph("results.selection_of_these", model=model_np(ctx, best))
            parts.append(text)
        else:
            paired = "_paired" if ev.get("tie_test") == "paired" else ""
            parts.append(ctx.ph(f"results.selection_no_overlap{paired}", level=CI_LEVEL, top=model_np(ctx, top)))
    elif res.get("selection_rule"):
        parts.append(ctx.ph("results.selection_by_rule"))
    diff = ev.get("stacking_minus_selected") or {}
    stack = next((x for x in models if model_family(x) == STACKING), None)
    ci = diff.get("ci") if isinstance(diff, dict) else None
    if stack and isnum(diff.get("mean")) and isinstance(ci, list) and len(ci) == 2 and all(map(isnum, ci)):
        src = "results.json:selection_evidence.stacking_minus_selected"
        d = m.add("StackingMinusSelected", fmt_metric(diff["mean"], 4), float(diff["mean"]), src + ".mean")
        d_ci = m.add("StackingMinusSelectedCI", fmt_ci(ci[0], ci[1], 4), [float(ci[0]), float(ci[1])], src + ".ci")
        base = stacking_base(res) or best
        better = ci[0] > 0 if higher_better(metric) else ci[1] < 0
        worse = ci[1] < 0 if higher_better(metric) else ci[0] > 0
        if ci[0] <= 0 <= ci[1]:
            where = ctx.ph("results.interval_includes_zero")
        elif ci[0] > 0:
            where = ctx.ph("results.interval_above_zero")
        else:
            where = ctx.ph("results.interval_below_zero")
        # the Holm-adjusted verdict of the selected stacked ensemble against that model (paired_comparisons)
        adjusted = evidence_for(comparison_evidence(res), stack, base, "paired") if best == stack else None
        if best == stack and adjusted is not None and adjusted.verdict != "better" and f"pair|{base}|holm" in ctx.n:
            parts.append(ctx.ph("results.stacking_selected_unadjusted", base=model_np(ctx, base), level=CI_LEVEL,
                                metric=metric_name(ctx), diff=d, ci=d_ci, base_again=model_np(ctx, base),
                                holm=ctx.n[f"pair|{base}|holm"]))
            record_comparison(ctx.outline, stack, base, "indistinct", "results.stacking_selected_unadjusted",
                              "paired")
        elif best == stack:
            parts.append(ctx.ph("results.stacking_selected", base=model_np(ctx, base), metric=metric_name(ctx),
                                diff=d, ci=d_ci, where=where))
            record_comparison(ctx.outline, stack, base, "better", "results.stacking_selected", "paired")
        elif better:
            parts.append(ctx.ph("results.stacking_difference", metric=metric_name(ctx), base=model_np(ctx, base),
                                diff=d, ci=d_ci))
            record_comparison(ctx.outline, stack, base, "difference", "results.stacking_difference", "paired")
        else:
            verdict = ctx.ph("results.stacking_not_better") if worse else ctx.ph("results.stacking_not_clearly_better")
            parts.append(ctx.ph("results.stacking_no_gain", verdict=verdict, metric=metric_name(ctx),
                                base=model_np(ctx, base), diff=d, ci=d_ci, where=where))
            record_comparison(ctx.outline, stack, base, "not_better", "results.stacking_no_gain", "paired")
    return " ".join(parts)


def quality_text(ctx: Ctx, sec: str) -> str:
    n, best, metric = ctx.n, ctx.best, ctx.primary
    s = strength(ctx)
    if ctx.binary:
        text = ctx.ph("results.quality_auc", strength=s) if metric in ("auc", "roc_auc") else ""
        extra = []
        for e, what in (("balanced_accuracy", "balanced accuracy"), ("f1", "F1"), ("brier", "the Brier score")):
            if ctx.mac(best, e):
                extra.append(ctx.ph("results.quality_metric_value", metric=what, value=ctx.mac(best, e)))
        if extra:
            text += " " + ctx.ph("results.quality_default_threshold", metrics=join_list(extra))
        share = float(n.get("positive_share", "0.5"))
        if share < 0.3 or share > 0.7:
            text += " " + ctx.ph("results.quality_imbalanced")
        cal = fig_of(ctx, "calibration")
        if cal:
            text += " " + ctx.ph("results.calibration_figure", figure=fig_ref(ctx, cal, sec))
        pr = fig_of(ctx, "pr", "precision_recall")
        if pr:
            text += " " + ctx.ph("results.precision_recall_figure", figure=fig_ref(ctx, pr, sec))
    else:
        text = ctx.ph("results.quality_r2", strength=s)
        if ctx.mac(best, "rmse"):
            in_sd = (", " + ctx.ph("results.quality_rmse_in_sd", sd=n["RMSEinSD"])) if "RMSEinSD" in n else ""
            mae = (", " + ctx.ph("results.quality_mae", mae=ctx.mac(best, "mae"))) if ctx.mac(best, "mae") else ""
            text += " " + ctx.ph("results.quality_rmse", rmse=ctx.mac(best, "rmse"), in_sd=in_sd, mae=mae)
        op = fig_of(ctx, "observed_predicted", "predicted_vs_actual")
        if op:
            text += " " + ctx.ph("results.observed_predicted_figure", figure=fig_ref(ctx, op, sec))
        rs = fig_of(ctx, "residuals")
        if rs:
            text += " " + ctx.ph("results.residuals_figure", figure=fig_ref(ctx, rs, sec))
    leaks = _flag_models(ctx, "possible_leakage")
    if leaks:
        # the metric whose ceiling flagged them: AUC for a binary outcome, R2 for a continuous one
        metric, key = ("auc", "leakage_auc") if ctx.binary else ("r2", "leakage_r2")
        names = join_list([f"{model_np(ctx, x)} ({ctx.mac(x, metric) or ''})".replace(" ()", "") for _, x in leaks])
        thr = ctx.results["thresholds"].get(key)
        if isnum(thr):
            auc = ctx.ph(f"results.{key}_above", models=names, threshold=ctx.m.add(
                "LeakageThreshold", f"{thr:.2f}", thr, f"results.json:thresholds.{key}"))
        else:
            auc = ctx.ph(f"results.{key}", models=names)
        text += " " + ctx.ph("results.leakage_flagged", auc=auc, kind=_kind_of_prediction(ctx))
        record_promise(ctx.outline, "sec:comparison", "sec:limitations", ["leakage"], "results.leakage_flagged")
    elif suspiciously_high(ctx):
        text += " " + ctx.ph("results.leakage_unusual", kind=_kind_of_prediction(ctx))
        record_promise(ctx.outline, "sec:comparison", "sec:limitations", ["leakage"], "results.leakage_unusual")
    return text.strip()


def interpretation(ctx: Ctx) -> tuple[list[str], list[str]]:
    sec = "interpretation"
    c, best = ctx.cites, ctx.best
    interp = ctx.interpreted
    by = ctx.shap_by_model
    paras: list[str] = []
    floor_text = _floor_text(ctx)
    if not ctx.top_features:
        text = ctx.ph("results.no_attributions")
        if interp is None and ctx.results.get("interpreted_model", "") is None:
            text += " " + ctx.ph("results.no_eligible_model")
        paras.append(text + (" " + floor_text if floor_text else ""))
        return paras, []
    name = interp or best
    info = by.get(name, {})
    text = ""
    if interp and interp != best:
        why = (ctx.ph("results.interpreted_because_stacking") if model_family(best) == STACKING
               else ctx.ph("results.interpreted_because_ineligible", model=model_np(ctx, best)))
        text += ctx.ph("results.interpreted_instead", why=why, model=model_np(ctx, interp)) + " "
    imp = fig_of(ctx, "shap_importance", "importance", "shap")
    k = min(5, len(ctx.top_features))
    feats = feature_names(ctx, k, with_values=True)
    expl = info.get("explainer")
    # the citation follows a word, so the sentence ends in code: a slot cannot follow a letter
    text += ctx.ph("results.shap_explained", model=model_np(ctx, name))
    text += c.cite_keys("lundberg2017unified", topics=("shap",), limit=1)
    if expl:
        text += ", " + ctx.ph("results.shap_computed_with", explainer=escape_latex(expl))
        if isnum(info.get("n_explained")):
            text += " " + ctx.ph("results.shap_on_students", count=ctx.m.count(
                macro_name("NExplained", name), info["n_explained"], f"results.json:shap.by_model.{name}.n_explained"))
    text += "."
    if imp:
        text += " " + ctx.ph("results.top_features_figure", figure=fig_ref(ctx, imp, sec), count=number_word(k),
                             features=join_list(feats))
    else:
        text += " " + ctx.ph("results.top_features", count=number_word(k), features=join_list(feats))
    if interp == best and any(model_family(m) == STACKING for m in ctx.results["models"]):
        text += " " + ctx.ph("results.stacking_not_explained")
    skipped = (ctx.results.get("shap") or {}).get("skipped") or {}
    for mname, reason in skipped.items():
        if model_family(mname) == STACKING or mname not in ctx.results["models"]:
            continue
        text += " " + ctx.ph("results.shap_skipped", model=model_np(ctx, mname),
                             reason=ctx.t(str(reason)[:160].rstrip("."), f"results.json:shap.skipped.{mname}"))
    if floor_text:
        text += " " + floor_text
    paras.append(text.strip())
    paras.append(_direction_text(ctx, sec))
    agree = _agreement_text(ctx, name)
    if agree:
        paras.append(agree)
    return [p for p in paras if p], []


def _floor_text(ctx: Ctx) -> str:
    below = _flag_models(ctx, "below_quality_floor")
    if not below:
        return ""
    floor = floor_macro(ctx)
    names = [f"{model_np(ctx, x)} ({metric_name(ctx)} = {ctx.mac(x, ctx.primary)})" if ctx.mac(x, ctx.primary)
             else model_np(ctx, x) for _, x in below]
    floor_t = ctx.ph("results.quality_floor_value", floor=floor) if floor else ctx.ph("results.quality_floor")
    if len(names) == 1:
        return ctx.ph("results.below_floor_one", models=cap_first(join_list(names)), floor=floor_t)
    return ctx.ph("results.below_floor_many", models=cap_first(join_list(names)), floor=floor_t)


def _direction_text(ctx: Ctx, sec: str) -> str:
    k = min(5, len(ctx.top_features))
    pos, neg, mixed, cat_mixed = [], [], [], []
    pos_lv, neg_lv = [], []  # two-level categorical predictors, named with the level their column encodes
    for i in range(k):
        f = ctx.top_features[i]
        d = f["direction"]  # the schema's positive, negative or mixed
        name = f"\\emph{{{ctx.feature_label(i)}}}"
        cols = f.get("columns") or []
        if d in ("positive", "negative") and len(cols) == 1 and cols[0].startswith(f"{f['feature']}__"):
            # one indicator column of a two-level categorical: its direction is that of the encoded level
            level = escape_latex(ctx.level_label(f["feature"], cols[0].split("__", 1)[1]))
            (pos_lv if d == "positive" else neg_lv).append(ctx.ph("results.direction_level", feature=name,
                                                                   level=level))
        elif d == "positive":
            pos.append(name)
        elif d == "negative":
            neg.append(name)
        else:
            (cat_mixed if len(f.get("columns") or []) > 1 else mixed).append(name)
    summ = fig_of(ctx, "shap_summary")
    text = ""
    if summ:
        text += ctx.ph("results.shap_summary_figure", figure=fig_ref(ctx, summ, sec), unit=ctx.ds["unit"],
                       outcome=ctx.outcome_phrase) + " "
    if ctx.binary:
        up, down = ctx.ph("results.higher_probability", outcome=_outcome_np(ctx)), ctx.ph("results.lower_probability")
    else:
        up, down = ctx.ph("results.higher_values", outcome=_outcome_np(ctx)), ctx.ph("results.lower_values")
    sents = []
    if pos:
        sents.append(ctx.ph("results.direction", features=join_list(pos), prediction=up))
    if neg:
        sents.append(ctx.ph("results.direction", features=join_list(neg), prediction=down))
    if sents:
        text += cap_first(" and ".join(sents) if len(sents) == 2 else sents[0]) + "."
    for levels, prediction in ((pos_lv, up), (neg_lv, down)):
        if levels:
            text += " " + cap_first(ctx.ph("results.direction_levels", features=join_list(levels),
                                           prediction=prediction)) + "."
    if len(cat_mixed) > 1:
        text += " " + ctx.ph("results.categorical_mixed_many", features=join_list(cat_mixed))
    elif cat_mixed:
        text += " " + ctx.ph("results.categorical_mixed_one", features=join_list(cat_mixed))
    if mixed:
        text += " " + ctx.ph("results.not_monotone", features=join_list(mixed))
    text += " " + ctx.ph("results.attributions_are_predictive", unit=ctx.ds["unit"], outcome=ctx.outcome_phrase)
    return text.strip()


def _top5(info: dict[str, Any]) -> list[str]:
    return [str(f.get("feature")) for f in (info.get("top_features") or [])[:5] if f.get("feature")]


def _agreement_text(ctx: Ctx, name: str) -> str:
    by = ctx.shap_by_model
    ref = _top5(by[name]) if name in by else [f["feature"] for f in ctx.top_features[:5]]
    others = [x for x in by if x != name and _top5(by[x])]
    if not ref or not others:
        return ""
    m = ctx.m
    shared = {x: len(set(ref) & set(_top5(by[x]))) for x in others}
    parts = []
    for i, x in enumerate(others):
        mac = m.count(macro_name("ShapSharedTopFive", x), shared[x],
                      f"|top5(results.json:shap.by_model.{name}.top_features) & "
                      f"top5(results.json:shap.by_model.{x}.top_features)|", derived=True)
        if i == 0:
            parts.append(ctx.ph("results.shared_top_five_first", count=mac, model=model_the(ctx, x)))
        else:
            parts.append(ctx.ph("results.shared_top_five_next", count=mac, model=model_the(ctx, x)))
    mean_share = sum(shared.values()) / (len(others) * len(ref))
    if mean_share >= 0.8:
        level = ctx.ph("results.ranking_largely_shared")
    elif mean_share >= 0.5:
        level = ctx.ph("results.ranking_partly_shared")
    else:
        level = ctx.ph("results.ranking_not_shared")
    text = ctx.ph("results.ranking_agreement", level=level, count=number_word(len(ref)), model=model_np(ctx, name),
                  shared=join_list(parts))
    common = [f for f in ref if all(f in _top5(by[x]) for x in others)]
    nall = m.count("NShapModels", len(others) + 1, "len(results.json:shap.by_model)", derived=True)
    kc = m.count("ShapCommonTopFive", len(common),
                 "count(features in top5 of every results.json:shap.by_model entry)", derived=True)
    if common:
        labels = [f"\\emph{{{_feature_label(ctx, f, f'results.json:shap.by_model.{name}.top_features')}}}"
                  for f in common]
        if len(common) > 1:
            text += " " + ctx.ph("results.common_top_five_many", count=kc, features=join_list(labels), n_models=nall)
        else:
            text += " " + ctx.ph("results.common_top_five_one", count=kc, features=join_list(labels), n_models=nall)
    else:
        text += " " + ctx.ph("results.no_common_top_five", n_models=nall)
    return text


def _group_cols(ctx: Ctx) -> list[str]:
    return ["citl", "calibration_slope", "flag_rate", "tpr", "fpr"] if ctx.binary else ["mean_error"]


#: the columns of the fairness table that carry their own interval
_CI_COLS = {"mean_error"}


def _fair_macro(ctx: Ctx, attr: str, gi: int, key: str, value: Any, kind: str = "metric") -> str:
    src = f"results.json:fairness.attributes.{attr}.groups.{gi}.{key}"
    name = macro_name("Fair", attr, f"g{gi + 1}", key)
    if kind == "count":
        return ctx.m.count(name, value, src)
    return ctx.m.metric(name, value, src)


def _fair_ci(ctx: Ctx, attr: str, gi: int, key: str, ci: Any, src: str) -> str:
    if isinstance(ci, list) and len(ci) == 2 and all(map(isnum, ci)):
        lo = ctx.m.metric(macro_name("Fair", attr, f"g{gi + 1}", key, "Low"), ci[0], src + ".0")
        hi = ctx.m.metric(macro_name("Fair", attr, f"g{gi + 1}", key, "High"), ci[1], src + ".1")
        return f"[{lo}, {hi}]"
    return "--"


def flag_share(ctx: Ctx) -> str | None:
    """The decision rule's k (a percentage macro), binary audits only."""
    rule = ctx.fairness.get("decision_rule") or {}
    if not isnum(rule.get("share")):
        return None
    return ctx.m.pct("FairFlagShare", 100 * rule["share"], "100 * results.json:fairness.decision_rule.share",
                     derived=True)


def fairness_table(ctx: Ctx) -> str:
    fa = ctx.fairness
    primary = fa.get("primary_metric") or ctx.primary
    cols = _group_cols(ctx)
    rows = []
    any_unreliable = False
    attrs = [(a, r) for a, r in fa["attributes"].items() if r.get("kind") != "intersection"]
    width = 2 + 2 + len(cols) + len([c for c in cols if c in _CI_COLS])
    for ai, (attr, rec) in enumerate(attrs):
        if ai:
            rows.append("\\addlinespace")
        rows.append(f"\\multicolumn{{{width}}}{{@{{}}l}}{{\\textit{{{attr_label(ctx, attr)}}}}} \\\\")
        for gi, g in enumerate(rec.get("groups") or []):
            group = ctx.t(str(g.get("group")), f"results.json:fairness.attributes.{attr}.groups.{gi}.group")
            if not g.get("reliable", True):
                group += "\\textsuperscript{\\dag}"
                any_unreliable = True
            cells = [group]
            cells.append(_fair_macro(ctx, attr, gi, "n", g["n"], "count") if isnum(g.get("n")) else "--")
            val = g.get("metric", g.get(primary))
            cells.append(_fair_macro(ctx, attr, gi, primary, val) if isnum(val) else "--")
            cells.append(_fair_ci(ctx, attr, gi, primary, g.get("ci"),
                                  f"results.json:fairness.attributes.{attr}.groups.{gi}.ci"))
            for col in cols:
                cells.append(_fair_macro(ctx, attr, gi, col, g[col]) if isnum(g.get(col)) else "--")
                if col in _CI_COLS:
                    cells.append(_fair_ci(ctx, attr, gi, col, (g.get("cis") or {}).get(col),
                                          f"results.json:fairness.attributes.{attr}.groups.{gi}.cis.{col}"))
            rows.append(" & ".join(cells) + " \\\\")
    head = ["Group", "$n$", FAIR_LABEL.get(primary, escape_latex(primary)), f"{CI_LEVEL} CI"]
    for c in cols:
        head.append({"mean_error": "ME", "calibration_slope": "Slope", "flag_rate": "Flagged"}.get(
            c, cap_first(FAIR_LABEL[c])))
        if c in _CI_COLS:
            head.append(f"{CI_LEVEL} CI")
    model = model_np(ctx, fa.get("model") or ctx.best)
    metric = FAIR_LABEL.get(primary, escape_latex(primary))
    if ctx.binary:
        share = flag_share(ctx)
        rates = (ctx.ph("results.fairness_rates_rule", share=share) if share else ctx.ph("results.fairness_rates"))
        caption = ctx.ph("results.fairness_caption_binary", model=model, metric=metric, level=CI_LEVEL, rates=rates)
    else:
        caption = ctx.ph("results.fairness_caption_regression", model=model, metric=metric, level=CI_LEVEL)
    note = ""
    if any_unreliable:
        mg = fa.get("min_group")
        if isnum(mg):
            why = ctx.ph("results.unreliable_why", min_group=ctx.m.count("FairMinGroup", mg,
                                                                        "results.json:fairness.min_group"))
            note = ctx.ph("results.fairness_note_why", why=why)
        else:
            note = ctx.ph("results.fairness_note")
        note = "\\par\\smallskip\\noindent{\\footnotesize \\textsuperscript{\\dag}\\," + note + "}"
    spec = "@{}G r" + " c" * (width - 2) + "@{}"
    return ("\\begin{table*}[tbp]\n\\caption{" + caption + "}\n\\label{tab:fairness}\n\\small\n"
            "\\setlength{\\tabcolsep}{3pt}\n"
            f"\\begin{{tabularx}}{{\\textwidth}}{{{spec}}}\n\\toprule\n" + " & ".join(head) + " \\\\\n\\midrule\n"
            + "\n".join(rows) + "\n\\bottomrule\n\\end{tabularx}" + note + "\n\\end{table*}")


def _group_name(ctx: Ctx, attr: str, group: Any, source: str) -> str:
    """An escaped group label; the cells of an intersection are joined by a times sign."""
    text = str(group)
    rec = ctx.fairness.get("attributes", {}).get(attr, {})
    if rec.get("kind") == "intersection" and " x " in text:
        return " \\texttimes{} ".join(ctx.t(part, source) for part in text.split(" x "))
    return ctx.t(text, source)


def _gap_macros(ctx: Ctx, attr: str, metric: str, g: dict[str, Any]) -> dict[str, str]:
    src = f"results.json:fairness.attributes.{attr}.gaps.{metric}"
    out = {"gap": ctx.m.metric(macro_name("FairGap", attr, metric), g["gap"], src + ".gap"),
           "min": ctx.m.metric(macro_name("FairGap", attr, metric, "Min"), g["min_value"], src + ".min_value"),
           "max": ctx.m.metric(macro_name("FairGap", attr, metric, "Max"), g["max_value"], src + ".max_value"),
           "min_group": _group_name(ctx, attr, g["min_group"], src + ".min_group"),
           "max_group": _group_name(ctx, attr, g["max_group"], src + ".max_group")}
    ci = g.get("ci")
    if isinstance(ci, list) and len(ci) == 2 and all(map(isnum, ci)):
        out["ci"] = ctx.m.ci(macro_name("FairGap", attr, metric, "CI"), ci[0], ci[1], src + ".ci")
    return out


def _gap_ok(g: Any) -> bool:
    return isinstance(g, dict) and all(isnum(g.get(k)) for k in ("gap", "min_value", "max_value")) \
        and g.get("min_group") is not None and g.get("max_group") is not None


def _range_macros(ctx: Ctx, attr: str, rec: dict[str, Any], key: str) -> dict[str, str] | None:
    """The lowest and highest value of a group metric over the reliable groups (macros and group names)."""
    groups = [(i, g) for i, g in enumerate(rec.get("groups") or []) if g.get("reliable", True) and isnum(g.get(key))]
    if len(groups) < 2:
        return None
    lo = min(groups, key=lambda t: t[1][key])
    hi = max(groups, key=lambda t: t[1][key])
    src = f"results.json:fairness.attributes.{attr}.groups"
    return {"min": _fair_macro(ctx, attr, lo[0], key, lo[1][key]), "max": _fair_macro(ctx, attr, hi[0], key, hi[1][key]),
            "min_group": _group_name(ctx, attr, lo[1]["group"], f"{src}.{lo[0]}.group"),
            "max_group": _group_name(ctx, attr, hi[1]["group"], f"{src}.{hi[0]}.group")}


def _calibration_text(ctx: Ctx, attr: str, rec: dict[str, Any]) -> str:
    """Calibration in the large (its gap, with its interval) and the range of the calibration slopes."""
    g = (rec.get("gaps") or {}).get("citl")
    slopes = _range_macros(ctx, attr, rec, "calibration_slope")
    if not _gap_ok(g) or slopes is None:
        return ""
    mg = _gap_macros(ctx, attr, "citl", g)
    return ctx.ph("results.calibration_groups", min_group=mg["min_group"], min=mg["min"], max_group=mg["max_group"],
                  max=mg["max"], gap=mg["gap"], ci=_ci_note(mg), verdict=_gap_verdict(ctx, g),
                  slope_min=slopes["min"], slope_min_group=slopes["min_group"], slope_max=slopes["max"],
                  slope_max_group=slopes["max_group"])


def _attribute_summary(ctx: Ctx, attr: str, rec: dict[str, Any]) -> str:
    fa = ctx.fairness
    primary = fa.get("primary_metric") or ctx.primary
    gaps = rec.get("gaps") or {}
    label = attr_label(ctx, attr)
    g = gaps.get(primary)
    mname = FAIR_LABEL.get(primary, escape_latex(primary))
    if not ctx.binary:
        mname = ctx.ph("results.metric_in_sd", metric=mname)
    if not _gap_ok(g):
        return ctx.ph("results.attribute_too_few", attribute=lc_first(label))
    mg = _gap_macros(ctx, attr, primary, g)
    text = ctx.ph("results.attribute_gap", attribute=lc_first(label), metric=mname, min_group=mg["min_group"],
                  min=mg["min"], max_group=mg["max_group"], max=mg["max"], gap=mg["gap"], ci=_ci_note(mg),
                  verdict=_gap_verdict(ctx, g))
    if ctx.binary:
        cal = _calibration_text(ctx, attr, rec)
        if cal:
            text += " " + cal
        eo = gaps.get("equalized_odds")
        share = flag_share(ctx)
        if _gap_ok(eo) and share:
            src = str(eo.get("source") or "")
            me = _gap_macros(ctx, attr, "equalized_odds", eo)
            set_by = (", " + ctx.ph("results.equalized_odds_set_by", rate=FAIR_LABEL.get(src, escape_latex(src)))
                      if src in ("tpr", "fpr") else "")
            flagged = ", " + ctx.ph("results.equalized_odds_flagged") if eo.get("flagged") else ""
            text += " " + ctx.ph("results.equalized_odds", share=share, gap=me["gap"], set_by=set_by,
                                 min_group=me["min_group"], min=me["min"], max_group=me["max_group"], max=me["max"],
                                 flagged=flagged)
        rate_flags = [k for k in ("tpr", "fpr", "flag_rate") if _gap_ok(gaps.get(k)) and gaps[k].get("flagged")]
        base = _range_macros(ctx, attr, rec, "at_risk_rate")
        if rate_flags and base:
            who = at_risk_phrase(ctx)
            if "fair:base_rate_explained" not in ctx.n:
                ctx.n["fair:base_rate_explained"] = "1"
                text += " " + ctx.ph("results.base_rate_explained", students=who, low=base["min"], high=base["max"])
            else:
                text += " " + ctx.ph("results.base_rate_again", students=who, low=base["min"], high=base["max"])
    else:
        me = gaps.get("mean_error")
        if _gap_ok(me):
            mm = _gap_macros(ctx, attr, "mean_error", me)
            lo, lo_g, hi, hi_g = mm["min"], mm["min_group"], mm["max"], mm["max_group"]
            if not me["min_value"] < 0 < me["max_value"]:
                text += " " + ctx.ph("results.mean_error_range", min=lo, min_group=lo_g, max=hi, max_group=hi_g)
            elif "fair:mean_error_explained" not in ctx.n:  # the signs are explained once, at their first use
                ctx.n["fair:mean_error_explained"] = "1"
                text += " " + ctx.ph("results.mean_error_range_signs", min=lo, min_group=lo_g, max=hi, max_group=hi_g)
            else:
                text += " " + ctx.ph("results.mean_error_range_signs_again", min=lo, min_group=lo_g, max=hi,
                                     max_group=hi_g)
    d = rec.get("derived_from") or {}
    if d.get("predictor") and (d.get("source") != "registry"
                               or d["predictor"] in {p.get("name") for p in ctx.spec.get("predictors") or []}):
        text += " " + ctx.ph("results.derived_reminder", attribute=lc_first(label),
                             predictor=f"\\texttt{{{escape_latex(d['predictor'])}}}")
    return text


def _ci_note(mg: dict[str, str]) -> str:
    """' (<CI macro>)' after a gap, when the gap has an interval."""
    return f" ({mg['ci']})" if "ci" in mg else ""


def _gap_verdict(ctx: Ctx, g: dict[str, Any]) -> str:
    return ctx.ph("results.gap_above_threshold") if g.get("flagged") else ctx.ph("results.gap_below_threshold")


def fairness_section(ctx: Ctx) -> tuple[list[str], list[str]]:
    fa = ctx.fairness
    sec = "fairness"
    if not fa:
        return [], []
    m = ctx.m
    attrs = fa["attributes"]
    singles = [(a, r) for a, r in attrs.items() if r.get("kind") != "intersection"]
    inters = [(a, r) for a, r in attrs.items() if r.get("kind") == "intersection"]
    primary = fa.get("primary_metric") or ctx.primary
    fig = fig_of(ctx, "fairness", "subgroup", "subgroups", "fairness_gap")
    cal_fig = fig_of(ctx, "fairness_calibration")
    model = fa.get("model") or ctx.best
    paras = []
    floats = []
    refs = ((["Table~\\ref{tab:fairness}"] if singles else []) + ([fig_ref(ctx, fig, sec)] if fig else [])
            + ([fig_ref(ctx, cal_fig, sec)] if cal_fig else []))
    model_t = model_np(ctx, model)
    if len(singles) != 1:
        attributes = ctx.ph("results.audit_attributes_many", count=number_word(len(singles)))
    else:
        attributes = ctx.ph("results.audit_attributes_one", count=number_word(len(singles)))
    text = ctx.ph("results.audit", model=model_t, attributes=attributes,
                  refs=f" ({join_list(refs)})" if refs else "")
    text += " " + ctx.ph("results.audit_not_causal", outcome=ctx.outcome_phrase, units=ctx.units)
    overall = (fa.get("overall") or {}).get(primary)
    if isnum(overall):
        mname = FAIR_LABEL.get(primary, escape_latex(primary))
        text += " " + ctx.ph("results.audit_overall", metric=mname if ctx.binary else ctx.ph(
                             "results.metric_in_sd", metric=mname),
                             value=m.metric(macro_name("FairOverall", primary), overall,
                                            f"results.json:fairness.overall.{primary}"))
    unreliable = [(a, g) for a, r in singles for g in r.get("groups") or [] if not g.get("reliable", True)]
    if unreliable:
        k = m.count("FairNUnreliable", len(unreliable),
                    "count(results.json:fairness.attributes[kind=attribute].groups[reliable=false])", derived=True)
        if len(unreliable) != 1:
            marked = ctx.ph("results.unreliable_marked_many", count=k)
        else:
            marked = ctx.ph("results.unreliable_marked_one", count=k)
        mg = fa.get("min_group")
        why = (" (" + ctx.ph("results.unreliable_why", min_group=m.count(
            "FairMinGroup", mg, "results.json:fairness.min_group")) + ")") if isnum(mg) else ""
        text += " " + ctx.ph("results.unreliable_groups", marked=marked, why=why)
    paras.append(text)
    if singles:
        floats.append(fairness_table(ctx))
    for f in (fig, cal_fig):
        if f:
            floats.append(figure_env(f))
            ctx.fig_refs[f.label] = sec
    for attr, rec in singles:
        paras.append(_attribute_summary(ctx, attr, rec))
    # flagged gaps over all single attributes
    examined = [(a, k, g) for a, r in singles for k, g in (r.get("gaps") or {}).items() if _gap_ok(g)]
    if examined:
        flagged = [t for t in examined if t[2].get("flagged")]
        nf = m.count("FairNFlaggedGaps", len(flagged),
                     "count(results.json:fairness.attributes[kind=attribute].gaps[flagged])", derived=True)
        ne = m.count("FairNGaps", len(examined),
                     "count(results.json:fairness.attributes[kind=attribute].gaps[not null])", derived=True)
        gt = fa.get("gap_threshold")
        if isnum(gt):
            threshold = ctx.ph("results.gap_threshold_value", threshold=m.add(
                "FairGapThreshold", f"{float(gt):.2f}", gt, "results.json:fairness.gap_threshold"))
        else:
            threshold = ctx.ph("results.gap_threshold")
        metrics = [FAIR_LABEL.get(k, escape_latex(k)) for k in dict.fromkeys(k for _, k, _ in examined)]
        which = sorted({a for a, _, g in flagged})
        names = join_list([f"\\emph{{{lc_first(attr_label(ctx, a))}}}" for a in which])
        if len(which) == 1:
            where = ", " + ctx.ph("results.gaps_flagged_all_for", attributes=names)
        elif which:
            where = ", " + ctx.ph("results.gaps_flagged_for", attributes=names)
        else:
            where = ""
        paras.append(ctx.ph("results.gaps_flagged", flagged=nf, examined=ne, metrics=join_list(metrics),
                            threshold=threshold, where=where))
    for attr, rec in inters:
        g = (rec.get("gaps") or {}).get(primary)
        label = attr_label(ctx, attr)
        if not _gap_ok(g):
            paras.append(ctx.ph("results.intersection_too_few", attribute=label))
            continue
        mg = _gap_macros(ctx, attr, primary, g)
        nrel = sum(1 for x in rec.get("groups") or [] if x.get("reliable", True))
        kr = m.count(macro_name("Fair", attr, "NReliable"), nrel,
                     f"count(results.json:fairness.attributes.{attr}.groups[reliable])", derived=True)
        kg = m.count(macro_name("Fair", attr, "NGroups"), len(rec.get("groups") or []),
                     f"len(results.json:fairness.attributes.{attr}.groups)", derived=True)
        iname = FAIR_LABEL.get(primary, escape_latex(primary))
        paras.append(ctx.ph("results.intersection_gap", attribute=label, reliable=kr, groups=kg,
                            metric=iname if ctx.binary else ctx.ph("results.metric_in_sd", metric=iname), min=mg["min"],
                            min_group=mg["min_group"], max=mg["max"], max_group=mg["max_group"], gap=mg["gap"],
                            ci=_ci_note(mg), verdict=_gap_verdict(ctx, g)))
    skipped = fa.get("skipped") or {}
    if skipped:
        items = [f"\\texttt{{{escape_latex(a)}}} ({ctx.t(str(r), f'results.json:fairness.skipped.{a}')})"
                 for a, r in skipped.items()]
        paras.append(ctx.ph("results.audit_skipped", attributes=join_list(items)))
    return paras, floats


def _spread(ctx: Ctx, key: str, name: str, pct: bool = False) -> dict[str, str]:
    """Macros of a {mean, sd, min, max} summary; shares (0-1) as percentages when `pct`."""
    sp = ctx.stability.get(key)
    if not isinstance(sp, dict):
        return {}
    out = {}
    for stat in ("mean", "sd", "min", "max"):
        if isnum(sp.get(stat)):
            src = f"results.json:stability.{key}.{stat}"
            if pct:
                out[stat] = ctx.m.pct(macro_name("Stab", name, stat), 100 * float(sp[stat]), "100 * " + src,
                                      derived=True)
            else:
                out[stat] = ctx.m.metric(macro_name("Stab", name, stat), sp[stat], src)
    return out


def stability_section(ctx: Ctx) -> tuple[list[str], list[str]]:
    st = ctx.stability
    if not st:
        return [], []
    runs = st.get("runs") or []
    if not runs:
        note = st.get("note")
        if note:
            return [ctx.ph("results.stability_not_assessed_note",
                           note=ctx.t(str(note), "results.json:stability.note"))], []
        return [ctx.ph("results.stability_not_assessed")], []
    metric = st.get("metric") or ctx.primary
    model = st.get("model") or ctx.interpreted or ctx.best
    ms = _spread(ctx, "metric_spread", metric)
    t5 = _spread(ctx, "top5_overlap", "TopFive", pct=True)
    t10 = _spread(ctx, "top10_overlap", "TopTen", pct=True)
    rho = _spread(ctx, "rank_correlation", "RankCorr")
    kinds = perturbation_kinds(ctx)  # before the count: the order of the macros
    text = ctx.ph("results.stability_refits", model=model_np(ctx, model), count=n_perturbations(ctx), kinds=kinds)
    if ms.get("mean"):
        ref = st.get("reference_metric")
        rng = (ctx.ph("results.stability_range", min=ms["min"], max=ms["max"]) if "min" in ms and "max" in ms
               else "")
        if "sd" in ms:
            sd = ctx.ph("results.stability_sd", sd=ms["sd"])
            spread = f" ({sd}; {rng})" if rng else f" ({sd})"
        else:
            spread = f"; {rng}" if rng else ""
        compared = (", " + ctx.ph("results.stability_reference", value=ctx.m.metric(
            macro_name("Stab", "Reference", metric), ref, "results.json:stability.reference_metric"))
                    if isnum(ref) else "")
        text += " " + ctx.ph("results.stability_metric", metric=metric_name(ctx, metric), mean=ms["mean"],
                             spread=spread, compared=compared)
    if t5.get("mean"):
        top_five = ctx.ph("results.stability_top_five", mean=t5["mean"])
        if "min" in t5:
            top_five += " (" + ctx.ph("results.stability_minimum", min=t5["min"]) + ")"
        top_ten = (" " + ctx.ph("results.stability_top_ten", mean=t10["mean"])) if t10.get("mean") else ""
        rank = ""
        if rho.get("mean"):
            rng = (" (" + ctx.ph("results.stability_range", min=rho["min"], max=rho["max"]) + ")"
                   if "min" in rho and "max" in rho else "")
            rank = ", " + ctx.ph("results.stability_rank_correlation", mean=rho["mean"], range=rng)
        text += " " + ctx.ph("results.stability_overlap", top_five=top_five, top_ten=top_ten, rank=rank)
    worst = [r for r in runs if isnum(r.get("top5_overlap"))]
    if worst and t5.get("min"):
        w = min(worst, key=lambda r: r["top5_overlap"])
        one = PERTURBATION_KIND.get(str(w.get("kind")), (None,))[0]
        if one and w["top5_overlap"] < 1:
            text += " " + ctx.ph("results.stability_lowest_overlap", kind=one)
    paras = [text]
    thr = stability_threshold(ctx)
    unstable = st.get("unstable")
    rule = (ctx.ph("results.stability_rule_threshold", threshold=thr) if thr
            else ctx.ph("results.stability_rule"))
    if unstable is True:
        verdict = ctx.ph("results.stability_unstable", rule=rule)
        if not thr:
            verdict += " " + stability_rule(ctx)
    elif unstable is False:
        top = feature_names(ctx, 1)[0] if ctx.top_features else ctx.ph("results.stability_top_unknown")
        verdict = ctx.ph("results.stability_stable", rule=rule, top=top)
    else:
        verdict = ctx.ph("results.stability_no_verdict")
    paras.append(verdict)
    return paras, []


def write(ctx: Ctx) -> str:
    """The Results: its subsections with their floats, then the summary of the evidence (the debate's claims)."""
    comp, comp_floats = comparison(ctx)
    comp_floats = [results_table(ctx)] + comp_floats
    sections = [(ctx.ph("results.title_comparison"), "sec:comparison", "comparison", comp, comp_floats)]
    interp, f_int = interpretation(ctx)
    sections.append((ctx.ph("results.title_interpretation"), "sec:interpretation", "interpretation", interp, f_int))
    fair, f_fair = fairness_section(ctx)
    if fair:
        sections.append((ctx.ph("results.title_fairness"), "sec:fairness", "fairness", fair, f_fair))
    stab, f_stab = stability_section(ctx)
    if stab:
        sections.append((ctx.ph("results.title_stability"), "sec:stability", "stability", stab, f_stab))
    supp = supplementary.results(ctx)
    if supp:
        sections.append((ctx.ph("supplementary.title"), "sec:supplementary", "supplementary", supp, []))
    # figures not discussed yet: a sentence in the subsection their kind belongs to, else the comparison
    present = {s[2] for s in sections}
    for fig in ctx.figures:
        if fig.label in ctx.fig_refs:
            continue
        where = FIG_SECTION.get(fig.kind, "comparison")
        where = where if where in present else "comparison"
        target = next(s for s in sections if s[2] == where)
        target[3].append(ctx.ph("results.figure_shows", figure=fig_ref(ctx, fig, where),
                                caption=lc_first(fig.caption.rstrip("."))))
    out = []
    for title, label, key, paras, floats in sections:
        floats = list(floats)
        for fig in ctx.figures:
            if ctx.fig_refs.get(fig.label) == key:
                env = figure_env(fig)
                if env not in floats:
                    floats.append(env)
        body = paras[:1] + floats + paras[1:]
        out.append(f"\\subsection{{{title}}}\\label{{{label}}}\n" + "\n\n".join(body))
    recovery = provenance.results_recovery(ctx)  # generated rows: the analysis against the planted truth
    summary = narrative.evidence_summary(ctx, ctx.claims_doc)
    return "\n\n".join(out + ([recovery] if recovery else []) + ([summary] if summary else []))


def _kind_of_prediction(ctx: Ctx) -> str:
    return "survey-based" if ctx.survey else "educational"
