"""The Results' subgroup fairness: the fairness table, each attribute's gaps (with calibration, equalized odds and
base rates), the flagged gaps, the intersections and the skipped attributes."""

from __future__ import annotations

from typing import Any

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import cap_first, is_number, join_list, lc_first, number_word
from edm_ars.writer.common import (
    CI_LEVEL,
    at_risk_phrase,
    attr_label,
    fig_of,
    fig_ref,
    figure_env,
    flagged_phrase,
    model_np,
)
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name

FAIR_LABEL = {"auc": "AUC", "r2": r"\Rsq{}", "tpr": "TPR", "fpr": "FPR", "flag_rate": "flag rate",
              "citl": "CITL", "calibration_slope": "slope",
              "rmse": "RMSE", "mae": "MAE", "mean_error": "mean error",
              "equalized_odds": "equalized-odds difference", "base_rate": "base rate"}


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
    if isinstance(ci, list) and len(ci) == 2 and all(map(is_number, ci)):
        lo = ctx.m.metric(macro_name("Fair", attr, f"g{gi + 1}", key, "Low"), ci[0], src + ".0")
        hi = ctx.m.metric(macro_name("Fair", attr, f"g{gi + 1}", key, "High"), ci[1], src + ".1")
        return f"[{lo}, {hi}]"
    return "--"


def flag_share(ctx: Ctx) -> str | None:
    """The decision rule's k (a percentage macro), binary audits only."""
    rule = ctx.fairness.get("decision_rule") or {}
    if not is_number(rule.get("share")):
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
            cells.append(_fair_macro(ctx, attr, gi, "n", g["n"], "count") if is_number(g.get("n")) else "--")
            val = g.get("metric", g.get(primary))
            cells.append(_fair_macro(ctx, attr, gi, primary, val) if is_number(val) else "--")
            cells.append(_fair_ci(ctx, attr, gi, primary, g.get("ci"),
                                  f"results.json:fairness.attributes.{attr}.groups.{gi}.ci"))
            for col in cols:
                cells.append(_fair_macro(ctx, attr, gi, col, g[col]) if is_number(g.get(col)) else "--")
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
        rates = (ctx.ph("results.fairness_rates_rule", share=share, who=flagged_phrase(ctx)) if share else ctx.ph("results.fairness_rates"))
        caption = ctx.ph("results.fairness_caption_binary", model=model, metric=metric, level=CI_LEVEL, rates=rates)
    else:
        caption = ctx.ph("results.fairness_caption_regression", model=model, metric=metric, level=CI_LEVEL)
    note = ""
    if any_unreliable:
        mg = fa.get("min_group")
        if is_number(mg):
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
    if isinstance(ci, list) and len(ci) == 2 and all(map(is_number, ci)):
        out["ci"] = ctx.m.ci(macro_name("FairGap", attr, metric, "CI"), ci[0], ci[1], src + ".ci")
    return out


def _mean_error_ci(rec: dict[str, Any], group: Any) -> list[float] | None:
    """The bootstrap interval of a group's mean error (`groups[].cis.mean_error`; None when not recorded)."""
    for g in rec.get("groups") or []:
        if g.get("group") == group:
            ci = (g.get("cis") or {}).get("mean_error")
            return ci if isinstance(ci, list) and len(ci) == 2 and all(map(is_number, ci)) else None
    return None


def _gap_ok(g: Any) -> bool:
    return isinstance(g, dict) and all(is_number(g.get(k)) for k in ("gap", "min_value", "max_value")) \
        and g.get("min_group") is not None and g.get("max_group") is not None


#: groups whose shares of the acted-on class differ by less than this (2 percentage points) have the same base rate
SAME_BASE_RATE = 0.02


def _spread(rec: dict[str, Any], key: str) -> float:
    """The highest minus the lowest value of a group metric over the reliable groups (0 with fewer than two)."""
    values = [g[key] for g in rec.get("groups") or [] if g.get("reliable", True) and is_number(g.get(key))]
    return max(values) - min(values) if len(values) > 1 else 0.0


def _range_macros(ctx: Ctx, attr: str, rec: dict[str, Any], key: str) -> dict[str, str] | None:
    """The lowest and highest value of a group metric over the reliable groups (macros and group names)."""
    groups = [(i, g) for i, g in enumerate(rec.get("groups") or []) if g.get("reliable", True) and is_number(g.get(key))]
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
                                 who=flagged_phrase(ctx),
                                 min_group=me["min_group"], min=me["min"], max_group=me["max_group"], max=me["max"],
                                 flagged=flagged)
        rate_flags = [k for k in ("tpr", "fpr", "flag_rate") if _gap_ok(gaps.get(k)) and gaps[k].get("flagged")]
        base = _range_macros(ctx, attr, rec, "at_risk_rate")
        if rate_flags and base:
            who = at_risk_phrase(ctx)
            if _spread(rec, "at_risk_rate") < SAME_BASE_RATE:  # the groups' shares agree: no part of the gaps
                text += " " + ctx.ph("results.base_rate_same", students=who, low=base["min"], high=base["max"])
            elif "fair:base_rate_explained" not in ctx.n:
                ctx.n["fair:base_rate_explained"] = "1"
                text += " " + ctx.ph("results.base_rate_explained", students=who, low=base["min"], high=base["max"])
            else:
                text += " " + ctx.ph("results.base_rate_again", students=who, low=base["min"], high=base["max"])
    else:
        me = gaps.get("mean_error")
        if _gap_ok(me):
            mm = _gap_macros(ctx, attr, "mean_error", me)
            lo, lo_g, hi, hi_g = mm["min"], mm["min_group"], mm["max"], mm["max_group"]
            # which of the two groups' intervals of the mean error contain zero (a sign there is no finding)
            zero = [end for end, group in (("first", me["min_group"]), ("second", me["max_group"]))
                    if (ci := _mean_error_ci(rec, group)) is not None and ci[0] <= 0 <= ci[1]]
            if not me["min_value"] < 0 < me["max_value"]:
                text += " " + ctx.ph("results.mean_error_range", min=lo, min_group=lo_g, max=hi, max_group=hi_g)
            elif zero:
                key = "both" if len(zero) == 2 else zero[0]
                text += " " + ctx.ph(f"results.mean_error_range_zero_{key}", min=lo, min_group=lo_g, max=hi,
                                     max_group=hi_g, level=CI_LEVEL)
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
    text += " " + ctx.ph("results.audit_not_causal", outcome=ctx.outcome_phrase, units=ctx.people)
    overall = (fa.get("overall") or {}).get(primary)
    if is_number(overall):
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
            "FairMinGroup", mg, "results.json:fairness.min_group")) + ")") if is_number(mg) else ""
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
        if is_number(gt):
            threshold = ctx.ph("results.gap_threshold_value", threshold=m.add(
                "FairGapThreshold", f"{float(gt):.2f}", gt, "results.json:fairness.gap_threshold"))
        else:
            threshold = ctx.ph("results.gap_threshold")
        metrics = [FAIR_LABEL.get(k, escape_latex(k)) for k in dict.fromkeys(k for _, k, _ in examined)]
        which = sorted({a for a, _, g in flagged})
        names = join_list([f"\\emph{{{lc_first(attr_label(ctx, a))}}}" for a in which])
        if len(which) == 1 and len(flagged) > 1:  # "all of them" of several gaps, never of one
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
