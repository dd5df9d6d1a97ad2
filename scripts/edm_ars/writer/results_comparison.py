"""The Results' model comparison: the model table, the paired comparisons (table and text), the comparison
to the baselines, the selection and the stacked ensemble, and the quality of the selected model (leakage flags)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import LOWER_IS_BETTER, STACKING
from edm_ars.core.text import higher_better, is_number, join_list, lc_first, model_family
from edm_ars.review.consistency import record_comparison, record_promise
from edm_ars.review.evidence import comparison_evidence, evidence_for, stacking_base
from edm_ars.writer import splits
from edm_ars.writer.common import (
    CI_LEVEL,
    fig_of,
    fig_ref,
    metric_name,
    model_np,
    primary_stmt,
    strength,
    suspiciously_high,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import fmt_ci, fmt_metric
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
        kind = ctx.split_groups_kind
        if ctx.results.get("interval_method") == "cluster_bootstrap" and "TestClusters" in ctx.n \
                and kind == "levels":
            caption += " " + ctx.ph("results.table_caption_joined_bootstrap", n_bootstrap=ctx.n["NBootstrap"],
                                    n_groups=ctx.n["TestClusters"],
                                    clusters=join_list([plural(lv["unit"]) for lv in ctx.kept_levels]))
        elif ctx.results.get("interval_method") == "cluster_bootstrap" and "TestClusters" in ctx.n and ctx.repeated \
                and kind != "cluster":
            caption += " " + (ctx.ph("results.table_caption_unit_bootstrap", n_bootstrap=ctx.n["NBootstrap"],
                                     n_units=ctx.n["TestClusters"], units=ctx.repeated["units"],
                                     unit=ctx.repeated["unit"]) if kind == "unit" else
                              ctx.ph("results.table_caption_joined_bootstrap", n_bootstrap=ctx.n["NBootstrap"],
                                     n_groups=ctx.n["TestClusters"], clusters=plural(ctx.cluster)))
        elif ctx.results.get("interval_method") == "cluster_bootstrap" and "TestClusters" in ctx.n:
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


def _metric_range(ctx: Ctx) -> tuple[list[str], str | None]:
    metric = ctx.primary
    vals = {m: ctx.metric_value(m, metric) for m in ctx.results["models"]}
    vals = {m: v for m, v in vals.items() if is_number(v)}
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
    if stack and is_number(diff.get("mean")) and isinstance(ci, list) and len(ci) == 2 and all(map(is_number, ci)):
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
        if is_number(thr):
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


def _kind_of_prediction(ctx: Ctx) -> str:
    return "survey-based" if ctx.survey else "educational"
