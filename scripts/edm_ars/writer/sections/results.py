"""Results: model comparison and selection, interpretation, subgroup fairness, stability."""

from __future__ import annotations

import re
from typing import Any

from ...conventions import STACKING
from ...texescape import escape_latex
from .. import narrative
from ..common import (
    PERTURBATION_KIND,
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
from ..context import Ctx
from ..macros import LOWER_IS_BETTER, fmt_ci, fmt_metric, macro_name
from ..text import (
    cap_first,
    clean_label,
    higher_better,
    isnum,
    join_list,
    lc_first,
    model_family,
    number_word,
    was_were,
)


def results_table(ctx: Ctx) -> str:
    metric = ctx.primary
    if ctx.binary:
        extras = ["balanced_accuracy", "f1", "brier", "accuracy", "precision", "recall"]
    else:
        extras = ["rmse", "mae"]
    present = {k for v in ctx.results["models"].values() for k in (v.get("metrics") or {})}
    extras = [e for e in extras if e in present and e != metric][:3]
    has_ci = any(ctx.ci(x, metric) for x in ctx.results["models"])
    head = (["Model", metric_name(ctx)] + (["95\\% CI"] if has_ci else [])
            + [metric_name(ctx, e) for e in extras])
    rows = []
    sign = -1 if metric in LOWER_IS_BETTER else 1

    def order(name: str) -> float:
        v = ctx.metric_value(name, metric)
        return float("inf") if v is None else -sign * v

    for name in sorted(ctx.results["models"], key=order):
        cells = [ctx.model_label(name), ctx.mac(name, metric) or "--"]
        if has_ci:
            lo, hi = ctx.n.get(f"{name}|{metric}|lo"), ctx.n.get(f"{name}|{metric}|hi")
            cells.append(f"[{lo}, {hi}]" if lo and hi else "--")
        cells += [ctx.mac(name, e) or "--" for e in extras]
        if name == ctx.best:
            cells = [f"\\textbf{{{x}}}" for x in cells]
        rows.append(" & ".join(cells) + " \\\\")
    lower = [metric_name(ctx, e) for e in [metric] + extras if e in LOWER_IS_BETTER]
    higher = [metric_name(ctx, e) for e in [metric] + extras if e not in LOWER_IS_BETTER]
    if lower and higher:
        direction = f"Lower is better for {join_list(lower)}; higher is better for {join_list(higher)}."
    else:
        direction = "Lower is better for every metric." if lower else "Higher is better for every metric."
    caption = (f"Test-set performance of all models ({ctx.n['TestN']} students), sorted by "
               f"{metric_name(ctx)}; the selected model is in bold.")
    if has_ci and "NBootstrap" in ctx.n:
        caption += f" Intervals come from {ctx.n['NBootstrap']} bootstrap resamples of the test set."
    caption += " " + direction
    cols = "l" + "c" * (len(head) - 1)
    return ("\\begin{table}[tbp]\n\\caption{" + caption + "}\n\\label{tab:results}\n\\small\n"
            "\\setlength{\\tabcolsep}{4pt}\n\\fitcolumn{%\n\\begin{tabular}{" + cols + "}\n\\toprule\n" + " & ".join(head)
            + " \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}}\n\\end{table}")


FAIR_LABEL = {"auc": "AUC", "r2": r"\Rsq{}", "tpr": "TPR", "fpr": "FPR", "selection_rate": "selection rate",
              "rmse": "RMSE", "mae": "MAE", "mean_error": "mean error",
              "equalized_odds": "equalized-odds difference", "base_rate": "base rate"}


FIG_SECTION = {
    "roc": "comparison", "pr": "comparison", "precision_recall": "comparison", "calibration": "comparison",
    "observed_predicted": "comparison", "predicted_vs_actual": "comparison", "residuals": "comparison",
    "shap_summary": "interpretation", "shap_importance": "interpretation", "importance": "interpretation",
    "shap": "interpretation", "fairness": "fairness", "subgroup": "fairness", "subgroups": "fairness",
    "fairness_gap": "fairness", "stability": "stability",
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


def _flag_threshold(ctx: Ctx, index: int) -> float | None:
    m = re.search(r"(?:>|<)\s*([0-9]*\.?[0-9]+)", str(ctx.results["flags"][index]))
    return float(m.group(1)) if m else None


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
    text = (f"Table~\\ref{{tab:results}} reports the test-set performance of all {n['NModels']} models on "
            f"{n['TestN']} held-out students" + (f", and {fig_ref(ctx, roc, sec)} shows their ROC curves." if roc
                                                  else "."))
    if len(order) > 1:
        lo_m, hi_m = (order[-1], order[0]) if higher_better(metric) else (order[0], order[-1])
        text += (f" The {metric_name(ctx)} of the models ranged from {ctx.mac(lo_m, metric)} "
                 f"({model_np(ctx, lo_m)}) to {ctx.mac(hi_m, metric)} ({model_np(ctx, hi_m)}).")
    if top == best:
        text += f" The selected model, {model_np(ctx, best)}, had the highest {metric_name(ctx)} ({primary_stmt(ctx)})."
    elif top:
        text += (f" The highest {metric_name(ctx)} was reached by {model_np(ctx, top)} ({primary_stmt(ctx, top)}), "
                 f"but the selected model is {model_np(ctx, best)} ({primary_stmt(ctx)}).")
    paras.append(text)
    sel = selection_text(ctx)
    if sel:
        paras.append(sel)
    paras.append(quality_text(ctx, sec))
    return paras, []


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
            text = (f"Under the selection rule (Section~\\ref{{sec:models}}), the best single model was "
                    f"{model_np(ctx, top)}, and the 95\\% intervals of {k} other single "
                    f"model{'s' if len(others) != 1 else ''} ({join_list([model_np(ctx, x) for x in others])}) "
                    "overlapped its interval, so these models could not be distinguished on the test set.")
            if best in tied and best == tied[0]:
                text += (f" The simplest of them, {model_np(ctx, best)}, was selected; a more flexible model "
                         "would have added complexity without a demonstrable gain in accuracy.")
            elif best in tied:
                text += f" Of these, {model_np(ctx, best)} was selected."
            parts.append(text)
        else:
            parts.append(f"Under the selection rule (Section~\\ref{{sec:models}}), no other single model's 95\\% "
                         f"interval overlapped that of {model_np(ctx, top)}, the best single model.")
    elif res.get("selection_rule"):
        parts.append("The selected model was chosen by the rule described in Section~\\ref{sec:models}.")
    diff = ev.get("stacking_minus_selected") or {}
    stack = next((x for x in models if model_family(x) == STACKING), None)
    ci = diff.get("ci") if isinstance(diff, dict) else None
    if stack and isnum(diff.get("mean")) and isinstance(ci, list) and len(ci) == 2 and all(map(isnum, ci)):
        src = "results.json:selection_evidence.stacking_minus_selected"
        d = m.add("StackingMinusSelected", fmt_metric(diff["mean"], 4), float(diff["mean"]), src + ".mean")
        d_ci = m.add("StackingMinusSelectedCI", fmt_ci(ci[0], ci[1], 4), [float(ci[0]), float(ci[1])], src + ".ci")
        base = tied[0] if tied else (top or best)
        better = ci[0] > 0 if higher_better(metric) else ci[1] < 0
        worse = ci[1] < 0 if higher_better(metric) else ci[0] > 0
        where = ("includes zero" if ci[0] <= 0 <= ci[1]
                 else "lies entirely above zero" if ci[0] > 0 else "lies entirely below zero")
        what = f"paired bootstrap difference in {metric_name(ctx)}"
        if best == stack:
            parts.append(f"The stacked ensemble was selected because it was clearly better than "
                         f"{model_np(ctx, base)}: the {what} was {d} ({d_ci}), an interval that {where}.")
        elif better:
            parts.append(f"The {what} between the stacked ensemble and {model_np(ctx, base)} was {d} ({d_ci}).")
        else:
            verdict = "not better" if worse else "not clearly better"
            parts.append(f"Stacking was {verdict}: the {what} between the stacked ensemble and "
                         f"{model_np(ctx, base)} was {d} ({d_ci}), an interval that {where}, so combining the "
                         "models did not improve on the single model.")
    return " ".join(parts)


def quality_text(ctx: Ctx, sec: str) -> str:
    n, best, metric = ctx.n, ctx.best, ctx.primary
    s = strength(ctx)
    if ctx.binary:
        text = (f"An AUC of this size indicates {s} discrimination between students who did and did not reach "
                "the outcome.") if metric in ("auc", "roc_auc") else ""
        extra = []
        for e, what in (("balanced_accuracy", "balanced accuracy"), ("f1", "F1"), ("brier", "the Brier score")):
            if ctx.mac(best, e):
                extra.append(f"{what} was {ctx.mac(best, e)}")
        if extra:
            text += f" At the default threshold, {join_list(extra)} for the selected model."
        share = float(n.get("positive_share", "0.5"))
        if share < 0.3 or share > 0.7:
            text += (" Because the classes are imbalanced, accuracy alone would be misleading, which is why we "
                     "emphasise AUC and balanced accuracy.")
        cal = fig_of(ctx, "calibration")
        if cal:
            text += (f" {fig_ref(ctx, cal, sec)} compares the selected model's predicted probabilities with the "
                     "observed proportions by decile of predicted probability; points on the diagonal would "
                     "indicate perfectly calibrated probabilities.")
        pr = fig_of(ctx, "pr", "precision_recall")
        if pr:
            text += f" {fig_ref(ctx, pr, sec)} shows the precision--recall curves on the test set."
    else:
        text = f"An \\Rsq{{}} of this size indicates {s} predictive accuracy."
        if ctx.mac(best, "rmse"):
            text += f" The selected model's RMSE was {ctx.mac(best, 'rmse')}"
            if "RMSEinSD" in n:
                text += f", or {n['RMSEinSD']} standard deviations of the outcome"
            if ctx.mac(best, "mae"):
                text += f", and its MAE was {ctx.mac(best, 'mae')}"
            text += "."
        op = fig_of(ctx, "observed_predicted", "predicted_vs_actual")
        if op:
            text += (f" {fig_ref(ctx, op, sec)} plots the observed against the predicted values of the selected "
                     "model; points on the diagonal are predicted exactly.")
        rs = fig_of(ctx, "residuals")
        if rs:
            text += (f" {fig_ref(ctx, rs, sec)} shows its residuals; residuals that change systematically with "
                     "the predicted value would indicate over- or under-prediction in parts of the range.")
    leaks = _flag_models(ctx, "possible_leakage")
    if leaks:
        names = [f"{model_np(ctx, x)} ({ctx.mac(x, 'auc') or ''})".replace(" ()", "") for _, x in leaks]
        thr = _flag_threshold(ctx, leaks[0][0])
        thr_t = (f" above {ctx.m.add('LeakageThreshold', f'{thr:.2f}', thr, f'results.json:flags.{leaks[0][0]}')}"
                 if thr is not None else "")
        text += (f" The analysis stage flagged possible leakage because the AUC of {join_list(names)} was"
                 f"{thr_t}; performance this high is unusual for {_kind_of_prediction(ctx)} prediction, and the "
                 "predictors should be checked for information recorded after the outcome (Section~\\ref{sec:limitations}).")
    elif suspiciously_high(ctx):
        text += (f" Performance at this level is unusual for {_kind_of_prediction(ctx)} prediction and warrants a "
                 "check for leakage (Section~\\ref{sec:limitations}).")
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
            text += " No single model was eligible for interpretation."
        paras.append(text + (" " + floor_text if floor_text else ""))
        return paras, []
    shap_based = ctx.importance_key == "mean_abs_shap"
    name = interp or best
    info = by.get(name, {})
    text = ""
    if interp and interp != best:
        why = ("the selected model is the stacked ensemble, whose inputs are the other models' predictions"
               if model_family(best) == STACKING
               else f"the selected model, {model_np(ctx, best)}, was not eligible for interpretation")
        text += (f"Because {why}, we report the attributions of {model_np(ctx, interp)}, the most accurate "
                 "single model above the quality floor. ")
    imp = fig_of(ctx, "shap_importance", "importance", "shap")
    k = min(5, len(ctx.top_features))
    feats = feature_names(ctx, k, with_values=True)
    what = "mean absolute SHAP value" if shap_based else "importance"
    expl = info.get("explainer")
    if shap_based:
        text += f"We explained {model_np(ctx, name)} with SHAP values{c.cite_keys('lundberg2017unified', topics=('shap',), limit=1)}"
        if expl:
            text += f", computed with \\textsc{{{escape_latex(expl)}}}"
            if isnum(info.get("n_explained")):
                text += (" on " + ctx.m.count(macro_name("NExplained", name), info["n_explained"],
                                              f"results.json:shap.by_model.{name}.n_explained") + " test students")
        text += "."
    text += (f" Ranked by {what}" + (f" ({fig_ref(ctx, imp, sec)})" if imp else "")
             + f", the {number_word(k)} features most predictive of the outcome were {join_list(feats)}.")
    if interp == best and any(model_family(m) == STACKING for m in ctx.results["models"]):
        text += " The stacked ensemble is not explained, because its inputs are the other models' predictions."
    skipped = (ctx.results.get("shap") or {}).get("skipped") or {}
    for mname, reason in skipped.items():
        if model_family(mname) == STACKING or mname not in ctx.results["models"]:
            continue
        text += (f" SHAP values could not be computed for {model_np(ctx, mname)} ("
                 f"{ctx.t(str(reason)[:160].rstrip('.'), f'results.json:shap.skipped.{mname}')}).")
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
    return (f"{cap_first(join_list(names))} fell below the quality floor" + (f" of {floor}" if floor else "")
            + f" and {was_were(len(names))} therefore not interpreted.")


def _direction_text(ctx: Ctx, sec: str) -> str:
    k = min(5, len(ctx.top_features))
    pos, neg, mixed, cat_mixed = [], [], [], []
    for i in range(k):
        f = ctx.top_features[i]
        d = str(f.get("direction") or "").lower()
        name = f"\\emph{{{ctx.feature_label(i)}}}"
        if d in ("positive", "+", "increasing", "pos"):
            pos.append(name)
        elif d in ("negative", "-", "decreasing", "neg"):
            neg.append(name)
        elif d == "mixed":
            (cat_mixed if len(f.get("columns") or []) > 1 else mixed).append(name)
    summ = fig_of(ctx, "shap_summary")
    text = ""
    if summ:
        text += (f"{fig_ref(ctx, summ, sec)} shows, for each test student, how the value of a feature relates to "
                 "its SHAP value. ")
    if ctx.binary:
        up, down = f"a higher predicted probability of {_outcome_np(ctx)}", "a lower predicted probability"
    else:
        up, down = f"higher predicted values of {_outcome_np(ctx)}", "lower predicted values"
    sents = []
    if pos:
        sents.append(f"higher values of {join_list(pos)} were associated with {up}")
    if neg:
        sents.append(f"higher values of {join_list(neg)} were associated with {down}")
    if sents:
        text += cap_first(" and ".join(sents) if len(sents) == 2 else sents[0]) + "."
    if cat_mixed:
        text += (f" For the categorical {'variables' if len(cat_mixed) > 1 else 'variable'} {join_list(cat_mixed)}, "
                 "the direction of the association differed between categories.")
    if mixed:
        text += f" For {join_list(mixed)}, the association was not monotone."
    text += (" These attributions describe how the fitted model uses each feature: they are predictive "
             "associations, not estimates of what would happen to a student's outcome if a feature were changed.")
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
        parts.append(f"{mac} {'were also among the top five' if i == 0 else ''} of {model_the(ctx, x)}"
                     .replace("  ", " "))
    mean_share = sum(shared.values()) / (len(others) * len(ref))
    level = ("largely shared" if mean_share >= 0.8 else "partly shared" if mean_share >= 0.5
             else "not shared")
    text = (f"The ranking was {level} across model families: of the {number_word(len(ref))} features ranked "
            f"highest for {model_np(ctx, name)}, {join_list(parts)}.")
    common = [f for f in ref if all(f in _top5(by[x]) for x in others)]
    nall = m.count("NShapModels", len(others) + 1, "len(results.json:shap.by_model)", derived=True)
    kc = m.count("ShapCommonTopFive", len(common),
                 "count(features in top5 of every results.json:shap.by_model entry)", derived=True)
    if common:
        labels = [f"\\emph{{{_feature_label(ctx, f, f'results.json:shap.by_model.{name}.top_features')}}}"
                  for f in common]
        text += (f" In all, {kc} feature{'s' if len(common) != 1 else ''} ({join_list(labels)}) "
                 f"{'were' if len(common) > 1 else 'was'} among the top five of every one of the {nall} explained "
                 "models, so the most predictive information does not depend on the choice of model family.")
    else:
        text += (f" No feature was among the top five of all {nall} explained models, so the ranking depends on "
                 "the model family and should be read with caution.")
    return text


def _group_cols(ctx: Ctx) -> list[str]:
    return ["tpr", "fpr"] if ctx.binary else ["rmse", "mean_error"]


def _fair_macro(ctx: Ctx, attr: str, gi: int, key: str, value: Any, kind: str = "metric") -> str:
    src = f"results.json:fairness.attributes.{attr}.groups.{gi}.{key}"
    name = macro_name("Fair", attr, f"g{gi + 1}", key)
    if kind == "count":
        return ctx.m.count(name, value, src)
    return ctx.m.metric(name, value, src)


def fairness_table(ctx: Ctx) -> str:
    fa = ctx.fairness
    primary = fa.get("primary_metric") or ctx.primary
    cols = _group_cols(ctx)
    rows = []
    any_unreliable = False
    attrs = [(a, r) for a, r in fa["attributes"].items() if r.get("kind") != "intersection"]
    for ai, (attr, rec) in enumerate(attrs):
        if ai:
            rows.append("\\addlinespace")
        rows.append(f"\\multicolumn{{{2 + 2 + len(cols)}}}{{@{{}}l}}{{\\textit{{{attr_label(ctx, attr)}}}}} \\\\")
        for gi, g in enumerate(rec.get("groups") or []):
            group = ctx.t(str(g.get("group")), f"results.json:fairness.attributes.{attr}.groups.{gi}.group")
            if not g.get("reliable", True):
                group += "\\textsuperscript{\\dag}"
                any_unreliable = True
            cells = [group]
            cells.append(_fair_macro(ctx, attr, gi, "n", g["n"], "count") if isnum(g.get("n")) else "--")
            val = g.get("metric", g.get(primary))
            cells.append(_fair_macro(ctx, attr, gi, primary, val) if isnum(val) else "--")
            ci = g.get("ci")
            if isinstance(ci, list) and len(ci) == 2 and all(map(isnum, ci)):
                src = f"results.json:fairness.attributes.{attr}.groups.{gi}.ci"
                lo = ctx.m.metric(macro_name("Fair", attr, f"g{gi + 1}", primary, "Low"), ci[0], src + ".0")
                hi = ctx.m.metric(macro_name("Fair", attr, f"g{gi + 1}", primary, "High"), ci[1], src + ".1")
                cells.append(f"[{lo}, {hi}]")
            else:
                cells.append("--")
            for col in cols:
                cells.append(_fair_macro(ctx, attr, gi, col, g[col]) if isnum(g.get(col)) else "--")
            rows.append(" & ".join(cells) + " \\\\")
    head = ["Group", "$n$", FAIR_LABEL.get(primary, escape_latex(primary)), "95\\% CI"]
    head += [cap_first(FAIR_LABEL[c]) if c != "mean_error" else "ME" for c in cols]
    model = fa.get("model") or ctx.best
    caption = (f"Test-set performance of the selected model ({model_np(ctx, model)}) by student subgroup: "
               f"{FAIR_LABEL.get(primary, escape_latex(primary))} with its 95\\% bootstrap interval")
    if ctx.binary:
        thr = fa.get("threshold")
        caption += ", and the true- and false-positive rates"
        if isnum(thr):
            caption += (" at a threshold of "
                        + ctx.m.add("FairThreshold", f"{float(thr):.2f}", thr, "results.json:fairness.threshold"))
        caption += "."
    else:
        caption += (", RMSE and mean error (ME, predicted minus observed), both in standard deviations of the "
                    "outcome.")
    note = ""
    if any_unreliable:
        mg = fa.get("min_group")
        note = ("\\par\\smallskip\\noindent{\\footnotesize \\textsuperscript{\\dag}\\,Unreliable group"
                + (f": fewer than {ctx.m.count('FairMinGroup', mg, 'results.json:fairness.min_group')} test "
                   "students or an undefined metric" if isnum(mg) else "")
                + "; shown for completeness and excluded from the gaps.}")
    spec = "@{}G r" + " c" * (2 + len(cols)) + "@{}"
    return ("\\begin{table}[tbp]\n\\caption{" + caption + "}\n\\label{tab:fairness}\n\\small\n"
            "\\setlength{\\tabcolsep}{3pt}\n"
            f"\\begin{{tabularx}}{{\\columnwidth}}{{{spec}}}\n\\toprule\n" + " & ".join(head) + " \\\\\n\\midrule\n"
            + "\n".join(rows) + "\n\\bottomrule\n\\end{tabularx}" + note + "\n\\end{table}")


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


def _attribute_summary(ctx: Ctx, attr: str, rec: dict[str, Any]) -> str:
    fa = ctx.fairness
    primary = fa.get("primary_metric") or ctx.primary
    gaps = rec.get("gaps") or {}
    label = attr_label(ctx, attr)
    g = gaps.get(primary)
    mname = FAIR_LABEL.get(primary, escape_latex(primary))
    if not _gap_ok(g):
        return (f"For \\emph{{{lc_first(label)}}}, fewer than two groups were large enough for a reliable "
                "comparison, so no gap was computed.")
    mg = _gap_macros(ctx, attr, primary, g)
    text = (f"For \\emph{{{lc_first(label)}}}, the model's {mname} was lowest for the group "
            f"\\emph{{{mg['min_group']}}} ({mg['min']}) and highest for \\emph{{{mg['max_group']}}} ({mg['max']}), "
            f"a gap of {mg['gap']}" + (f" ({mg['ci']})" if "ci" in mg else ""))
    text += (", above the flagging threshold." if g.get("flagged") else ", below the flagging threshold.")
    if ctx.binary:
        eo = gaps.get("equalized_odds")
        if _gap_ok(eo):
            src = str(eo.get("source") or "")
            me = _gap_macros(ctx, attr, "equalized_odds", eo)
            text += (f" The equalized-odds difference was {me['gap']}"
                     + (f", set by the {FAIR_LABEL.get(src, escape_latex(src))} gap" if src in ("tpr", "fpr") else "")
                     + f" (\\emph{{{me['min_group']}}}: {me['min']}; \\emph{{{me['max_group']}}}: {me['max']})"
                     + (", above the threshold." if eo.get("flagged") else "."))
        rate_flags = [k for k in ("tpr", "fpr", "selection_rate") if _gap_ok(gaps.get(k)) and gaps[k].get("flagged")]
        base = _base_rate_range(ctx, attr, rec)
        if rate_flags and base:
            if "fair:base_rate_explained" not in ctx.n:
                ctx.n["fair:base_rate_explained"] = "1"
                text += (f" These error-rate differences at a fixed threshold partly mirror differences in the base "
                         f"rate of the outcome, which ranged from {base} across the groups; they describe how the "
                         "model's errors are distributed, not a causal influence of group membership.")
            else:
                text += f" Here, too, the base rate of the outcome differed across the groups (from {base})."
    else:
        me = gaps.get("mean_error")
        if _gap_ok(me):
            mm = _gap_macros(ctx, attr, "mean_error", me)
            text += (f" The mean error ranged from {mm['min']} (\\emph{{{mm['min_group']}}}) to {mm['max']} "
                     f"(\\emph{{{mm['max_group']}}}) standard deviations")
            if me["min_value"] < 0 < me["max_value"]:
                if "fair:mean_error_explained" not in ctx.n:
                    ctx.n["fair:mean_error_explained"] = "1"
                    text += (", that is, the model under-predicted the outcome for the first group and "
                             "over-predicted it for the second")
                else:
                    text += " (under- and over-prediction, respectively)"
            text += "."
        rm = gaps.get("rmse")
        if _gap_ok(rm) and rm.get("flagged"):
            mr = _gap_macros(ctx, attr, "rmse", rm)
            text += (f" The RMSE gap was {mr['gap']} standard deviations (\\emph{{{mr['min_group']}}}: {mr['min']}; "
                     f"\\emph{{{mr['max_group']}}}: {mr['max']}).")
    return text


def _base_rate_range(ctx: Ctx, attr: str, rec: dict[str, Any]) -> str:
    groups = [(i, g) for i, g in enumerate(rec.get("groups") or [])
              if g.get("reliable", True) and isnum(g.get("base_rate"))]
    if len(groups) < 2:
        return ""
    lo = min(groups, key=lambda t: t[1]["base_rate"])
    hi = max(groups, key=lambda t: t[1]["base_rate"])
    a = _fair_macro(ctx, attr, lo[0], "base_rate", lo[1]["base_rate"])
    b = _fair_macro(ctx, attr, hi[0], "base_rate", hi[1]["base_rate"])
    return f"{a} to {b}"


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
    model = fa.get("model") or ctx.best
    paras = []
    floats = []
    refs = (["Table~\\ref{tab:fairness}"] if singles else []) + ([fig_ref(ctx, fig, sec)] if fig else [])
    text = (f"We audited the test-set predictions of the selected model, {model_np(ctx, model)}, across "
            f"{number_word(len(singles))} protected attribute{'s' if len(singles) != 1 else ''}"
            + (f" ({join_list(refs)})" if refs else "") + ". The differences reported here are differences in "
            "how accurately the model predicts for each group of students; they are not estimates of a causal "
            "influence of group membership on the outcome.")
    overall = (fa.get("overall") or {}).get(primary)
    if isnum(overall):
        text += (f" On the whole test set the {FAIR_LABEL.get(primary, escape_latex(primary))} was "
                 f"{m.metric(macro_name('FairOverall', primary), overall, f'results.json:fairness.overall.{primary}')}.")
    unreliable = [(a, g) for a, r in singles for g in r.get("groups") or [] if not g.get("reliable", True)]
    if unreliable:
        k = m.count("FairNUnreliable", len(unreliable),
                    "count(results.json:fairness.attributes[kind=attribute].groups[reliable=false])", derived=True)
        mg = fa.get("min_group")
        text += (f" The audit marked {k} group{'s' if len(unreliable) != 1 else ''} as unreliable"
                 + (f" (fewer than {m.count('FairMinGroup', mg, 'results.json:fairness.min_group')} test "
                    "students or an undefined metric)" if isnum(mg) else "")
                 + "; unreliable groups are shown in the table but excluded from the gaps.")
    paras.append(text)
    if singles:
        floats.append(fairness_table(ctx))
    if fig:
        floats.append(figure_env(fig))
        ctx.fig_refs[fig.label] = sec
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
        thr = (m.add("FairGapThreshold", f"{float(gt):.2f}", gt, "results.json:fairness.gap_threshold")
               if isnum(gt) else "")
        metrics = [FAIR_LABEL.get(k, escape_latex(k)) for k in dict.fromkeys(k for _, k, _ in examined)]
        which = sorted({a for a, _, g in flagged})
        text = (f"In total, {nf} of the {ne} gaps examined ({join_list(metrics)} for each attribute) exceeded the "
                f"threshold{f' of {thr}' if thr else ''}")
        if which:
            text += (", all of them for " if len(which) == 1 else ", for ") + join_list(
                [f"\\emph{{{lc_first(attr_label(ctx, a))}}}" for a in which]) + "."
        else:
            text += "."
        paras.append(text)
    for attr, rec in inters:
        g = (rec.get("gaps") or {}).get(primary)
        label = attr_label(ctx, attr)
        if not _gap_ok(g):
            paras.append(f"For the intersection \\emph{{{label}}}, too few groups were reliable for a comparison.")
            continue
        mg = _gap_macros(ctx, attr, primary, g)
        nrel = sum(1 for x in rec.get("groups") or [] if x.get("reliable", True))
        kr = m.count(macro_name("Fair", attr, "NReliable"), nrel,
                     f"count(results.json:fairness.attributes.{attr}.groups[reliable])", derived=True)
        kg = m.count(macro_name("Fair", attr, "NGroups"), len(rec.get("groups") or []),
                     f"len(results.json:fairness.attributes.{attr}.groups)", derived=True)
        paras.append(f"Across the intersection \\emph{{{label}}} ({kr} of {kg} groups reliable), the "
                     f"{FAIR_LABEL.get(primary, escape_latex(primary))} ranged from {mg['min']} "
                     f"(\\emph{{{mg['min_group']}}}) to {mg['max']} (\\emph{{{mg['max_group']}}}), a gap of "
                     f"{mg['gap']}" + (f" ({mg['ci']})" if "ci" in mg else "")
                     + (", above the flagging threshold." if g.get("flagged") else ", below the flagging threshold."))
    skipped = fa.get("skipped") or {}
    if skipped:
        items = [f"\\texttt{{{escape_latex(a)}}} ({ctx.t(str(r), f'results.json:fairness.skipped.{a}')})"
                 for a, r in skipped.items()]
        paras.append(f"The audit could not be run for {join_list(items)}.")
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
        text = "The stability of the conclusions was not assessed in this run"
        if note:
            text += f" ({ctx.t(str(note), 'results.json:stability.note')})"
        return [text + "."], []
    metric = st.get("metric") or ctx.primary
    model = st.get("model") or ctx.interpreted or ctx.best
    ms = _spread(ctx, "metric_spread", metric)
    t5 = _spread(ctx, "top5_overlap", "TopFive", pct=True)
    t10 = _spread(ctx, "top10_overlap", "TopTen", pct=True)
    rho = _spread(ctx, "rank_correlation", "RankCorr")
    kinds = perturbation_kinds(ctx)
    text = (f"We refitted {model_np(ctx, model)} under {n_perturbations(ctx)} perturbations"
            + (f" ({kinds})" if kinds else "") + ".")
    if ms.get("mean"):
        ref = st.get("reference_metric")
        text += (f" Across the refits, the test-set {metric_name(ctx, metric)} had a mean of {ms['mean']}"
                 + (f" (SD {ms['sd']}" if "sd" in ms else "")
                 + (f"; range {ms['min']} to {ms['max']}" if "min" in ms and "max" in ms else "")
                 + (")" if "sd" in ms else ""))
        if isnum(ref):
            text += (f", compared with {ctx.m.metric(macro_name('Stab', 'Reference', metric), ref, 'results.json:stability.reference_metric')}"
                     " for the original fit")
        text += "."
    if t5.get("mean"):
        text += (f" On average, the refits recovered {t5['mean']} of the original top-five features"
                 + (f" (minimum {t5['min']})" if "min" in t5 else ""))
        if t10.get("mean"):
            text += f" and {t10['mean']} of the top ten"
        text += ","
        if rho.get("mean"):
            text += (f" and the rank correlation with the original ranking averaged {rho['mean']}"
                     + (f" (range {rho['min']} to {rho['max']})" if "min" in rho and "max" in rho else "") + ".")
        else:
            text = text.rstrip(",") + "."
    worst = [r for r in runs if isnum(r.get("top5_overlap"))]
    if worst and t5.get("min"):
        w = min(worst, key=lambda r: r["top5_overlap"])
        one = PERTURBATION_KIND.get(str(w.get("kind")), (None,))[0]
        if one and w["top5_overlap"] < 1:
            text += f" The lowest top-five overlap came from the {one}."
    paras = [text]
    thr = stability_threshold(ctx)
    unstable = st.get("unstable")
    if unstable is True:
        verdict = ("By the stability rule"
                   + (f" (a mean top-five overlap of at least {thr})" if thr else "")
                   + ", the ranking of the most predictive features is \\textbf{unstable}: it depends on "
                   "incidental choices in the analysis, so the features named in Section~\\ref{sec:interpretation} "
                   "should not be read as a robust finding.")
        if not thr:
            verdict += " " + stability_rule(ctx)
    elif unstable is False:
        verdict = ("By the stability rule"
                   + (f" (a mean top-five overlap of at least {thr})" if thr else "")
                   + ", the conclusions are stable: the predictive performance and the most predictive features "
                   "changed little when the imputation, the training sample or the random seed changed.")
    else:
        verdict = "No stability verdict was recorded."
    paras.append(verdict)
    return paras, []


def write(ctx: Ctx) -> str:
    """The Results: its subsections with their floats, then the summary of the evidence (the debate's claims)."""
    comp, comp_floats = comparison(ctx)
    comp_floats = [results_table(ctx)] + comp_floats
    sections = [("Model Comparison", "sec:comparison", "comparison", comp, comp_floats)]
    interp, f_int = interpretation(ctx)
    sections.append(("Interpretation", "sec:interpretation", "interpretation", interp, f_int))
    fair, f_fair = fairness_section(ctx)
    if fair:
        sections.append(("Subgroup Fairness", "sec:fairness", "fairness", fair, f_fair))
    stab, f_stab = stability_section(ctx)
    if stab:
        sections.append(("Stability", "sec:stability", "stability", stab, f_stab))
    # figures not discussed yet: a sentence in the subsection their kind belongs to, else the comparison
    present = {s[2] for s in sections}
    for fig in ctx.figures:
        if fig.label in ctx.fig_refs:
            continue
        where = FIG_SECTION.get(fig.kind, "comparison")
        where = where if where in present else "comparison"
        target = next(s for s in sections if s[2] == where)
        target[3].append(f"{fig_ref(ctx, fig, where)} shows {lc_first(fig.caption.rstrip('.'))}.")
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
    summary = narrative.evidence_summary(ctx, ctx.claims_doc)
    return "\n\n".join(out + ([summary] if summary else []))


def _kind_of_prediction(ctx: Ctx) -> str:
    return "survey-based" if ctx.survey else "educational"
