"""The school-level structure (results.json `multilevel`, edm_ars.analysis.multilevel) in the paper: its macros, a
Methods subsection (estimator, what each number means), a Results subsection with a table per cluster level, a
Discussion paragraph and, with few clusters, a Limitations item. Absent when the analysis was not run; one sentence
when it was skipped (no cluster level declared)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.text import cap_first, join_list
from edm_ars.writer.common import metric_name
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name, text_with_macros
from edm_ars.writer.phrases import plural

SRC = "results.json:multilevel"
#: the share of the between-cluster variance the predictors must account for before the clusters' differences are
#: said to be largely differences in the students they serve
MOSTLY = 0.5


def record(ctx: Ctx) -> dict[str, Any]:
    ml = ctx.results.get("multilevel")
    return ml if isinstance(ml, dict) else {}


def levels(ctx: Ctx) -> list[dict[str, Any]]:
    return [lv for lv in record(ctx).get("levels") or [] if isinstance(lv, dict)]


def _unit(ctx: Ctx, lv: dict[str, Any], i: int) -> str:
    return ctx.t(lv.get("unit") or ctx.ph("common.cluster"), f"{SRC}.levels.{i}.unit")


def _units(unit: str) -> str:
    return plural(unit)


def register(ctx: Ctx) -> None:
    """A macro per number the sections print, named ml|<level>|<what> in ctx.n."""
    m, n = ctx.m, ctx.n
    for i, lv in enumerate(levels(ctx)):
        src, tag = f"{SRC}.levels.{i}", macro_name("ML", lv.get("unit") or f"level {i}")
        n[f"ml|{i}|clusters"] = m.count(tag + "Clusters", lv["n_clusters"], f"{src}.n_clusters")
        n[f"ml|{i}|rows"] = m.count(tag + "Rows", lv["n_rows"], f"{src}.n_rows")
        size = lv.get("cluster_size") or {}
        if size.get("mean") is not None:
            n[f"ml|{i}|size"] = m.add(tag + "SizeMean", f"{float(size['mean']):.1f}", float(size["mean"]),
                                      f"{src}.cluster_size.mean")
        null = lv.get("null_model") or {}
        if null.get("icc") is not None:
            n[f"ml|{i}|icc"] = m.metric(tag + "ICC", null["icc"], f"{src}.null_model.icc")
            if null.get("icc_ci"):
                n[f"ml|{i}|icc_ci"] = m.ci(tag + "ICCCI", *null["icc_ci"], f"{src}.null_model.icc_ci")
        expl = lv.get("explained") or {}
        for key in ("within", "between", "level1_r2", "level2_r2"):
            if expl.get(key) is not None:
                n[f"ml|{i}|{key}"] = m.metric(tag + macro_name("Explained", key), expl[key], f"{src}.explained.{key}")
        ctxt = lv.get("context") or {}
        for key in ("without", "with", "difference"):
            if ctxt.get(key) is not None:
                n[f"ml|{i}|ctx_{key}"] = m.metric(tag + macro_name("Context", key), ctxt[key],
                                                  f"{src}.context.{key}")
        if ctxt.get("ci"):
            n[f"ml|{i}|ctx_ci"] = m.ci(tag + "ContextCI", *ctxt["ci"], f"{src}.context.ci")
        if ctxt.get("n_context_features") is not None:
            n[f"ml|{i}|ctx_k"] = m.count(tag + "ContextK", ctxt["n_context_features"],
                                         f"{src}.context.n_context_features")


def title(ctx: Ctx) -> str:
    """'School-level structure', 'Class-level structure': the subsections' title, by the leading cluster unit."""
    lvs = levels(ctx)
    return ctx.ph("multilevel.methods_title", level=cap_first(_unit(ctx, lvs[0], 0) if lvs else ctx.cluster))


def _scale(ctx: Ctx) -> str:
    return ctx.ph(f"multilevel.scale_{_scale_kind(ctx)}")


def _scale_kind(ctx: Ctx) -> str:
    return "latent" if record(ctx).get("outcome_scale") == "latent" else "observed"


def _estimator_kind(ml: dict[str, Any]) -> str:
    """'aghq' (a logistic random-intercept model by adaptive Gauss-Hermite quadrature), 'reml' (a linear one by
    restricted maximum likelihood) or '' (another: the artifact's own words are printed), from the estimator's record."""
    text = str(ml.get("estimator") or "")
    if "Gauss-Hermite" in text:
        return "aghq"
    if "REML" in text or "MixedLM" in text:
        return "reml"
    return ""


def methods(ctx: Ctx) -> str:
    """The Methods subsection: what was estimated, how, on which rows (from the record's facts, not its free text)."""
    ml = record(ctx)
    if not ml or ml.get("skipped") or not levels(ctx):
        return ""
    units = join_list([_units(_unit(ctx, lv, i)) for i, lv in enumerate(levels(ctx))])
    lv0 = levels(ctx)[0]
    unit0 = _unit(ctx, lv0, 0)
    ctxt = lv0.get("context") or {}
    kind = _estimator_kind(ml)
    estimator = (ctx.ph(f"multilevel.estimator_{kind}") if kind
                 else text_with_macros(ml.get("estimator", ""), ctx.m, f"{SRC}.estimator"))
    sents = [ctx.ph("multilevel.methods_models", units=units, estimator=estimator)]
    if len(levels(ctx)) > 1:  # one two-level model per level, not one model with every level
        sents.append(ctx.ph("multilevel.methods_each_level", people=ctx.people))
    sents += [
             ctx.ph(f"multilevel.methods_{_scale_kind(ctx)}"),
             ctx.ph("multilevel.methods_explained")]
    if ctxt and not ctxt.get("skipped"):
        seen = ctx.ph("multilevel.means_grouped", units=_units(unit0), people=ctx.people) if ctx.school_split_ok \
            else ctx.ph("multilevel.means_shared", unit=unit0)
        family = "logistic" if "logistic" in str(ctxt.get("model", "")).lower() else "ridge"
        model = ctx.ph(f"multilevel.context_model_{family}", units=_units(unit0))
        sents.append(ctx.ph("multilevel.methods_context", unit=unit0, units=_units(unit0), model=model,
                            means_from=seen, metric=metric_name(ctx, ctxt.get("metric", ctx.primary)),
                            people=ctx.people, k=ctx.n.get("ml|0|ctx_k", "--")))
    if (lv0.get("null_model") or {}).get("icc_ci"):
        sents.append(ctx.ph("multilevel.methods_icc_ci", units=_units(unit0)))
    return (f"\\subsection{{{title(ctx)}}}\\label{{sec:multilevel-method}}\n"
            + " ".join(sents))


def table(ctx: Ctx) -> str:
    rows = []
    n = ctx.n
    for i, lv in enumerate(levels(ctx)):
        cells = [n.get(f"ml|{i}|{key}", "--") for key in ("icc", "within", "between", "ctx_difference")]
        rows.append(" & ".join([_unit(ctx, lv, i), n[f"ml|{i}|clusters"], *cells]) + " \\\\")
    head = " & ".join(ctx.ph(f"multilevel.col_{c}") for c in ("level", "clusters", "icc", "within", "between",
                                                                "context"))
    metric = metric_name(ctx, (levels(ctx)[0].get("context") or {}).get("metric", ctx.primary))
    return ("\\begin{table}[tbp]\n\\caption{" + ctx.ph("multilevel.caption", scale=_scale(ctx), metric=metric,
                                                                level=cap_first(_unit(ctx, levels(ctx)[0], 0)))
            + "}\n\\label{tab:multilevel}\n\\small\n\\begin{tabularx}{\\columnwidth}"
            "{@{}>{\\raggedright\\arraybackslash}Xrrrrr@{}}\n\\toprule\n" + head + " \\\\\n"
            "\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")


def _context_sentence(ctx: Ctx, lv: dict[str, Any], i: int) -> str:
    c = lv.get("context") or {}
    if c.get("difference") is None:
        return ""
    unit, n = _unit(ctx, lv, i), ctx.n
    kind = "improves" if c.get("improves") else "worse" if _worse(c) else "none"
    return ctx.ph(f"multilevel.context_{kind}", unit=unit, k=n.get(f"ml|{i}|ctx_k", ""), metric=metric_name(ctx, c.get("metric", ctx.primary)),
                  without=n[f"ml|{i}|ctx_without"], added=n[f"ml|{i}|ctx_with"], diff=n[f"ml|{i}|ctx_difference"],
                  ci=n.get(f"ml|{i}|ctx_ci", ""), people=ctx.people)


def _worse(c: dict[str, Any]) -> bool:
    lo, hi = (c.get("ci") or [None, None])[:2]
    if lo is None or hi is None:
        return False
    return hi < 0 if c.get("better", "higher") == "higher" else lo > 0


def results(ctx: Ctx) -> tuple[list[str], list[str]]:
    """(paragraphs, floats) of the Results subsection."""
    ml = record(ctx)
    if not ml or ml.get("skipped") or not levels(ctx):
        return [], []
    paras = []
    for i, lv in enumerate(levels(ctx)):
        unit, n = _unit(ctx, lv, i), ctx.n
        if f"ml|{i}|icc" not in n:
            continue
        text = ctx.ph("multilevel.results_icc", outcome=ctx.outcome_phrase, scale=_scale(ctx), icc=n[f"ml|{i}|icc"],
                      ci=(", " + n[f"ml|{i}|icc_ci"]) if f"ml|{i}|icc_ci" in n else "", units=_units(unit),
                      clusters=n[f"ml|{i}|clusters"], size=n.get(f"ml|{i}|size", ""),
                      people=ctx.units if ctx.repeated else ctx.people)  # the size counts rows: records, not children
        if i == 0 and ctx.repeated:  # each person's records are not a level of their own in these models
            text += " " + ctx.ph("multilevel.results_repeated", person=ctx.person, unit=unit)
        if f"ml|{i}|within" in n and f"ml|{i}|between" in n:
            text += " " + ctx.ph("multilevel.results_explained", within=n[f"ml|{i}|within"],
                                 between=n[f"ml|{i}|between"], unit=unit)
        text += " " + _context_sentence(ctx, lv, i)
        if i == 0:
            text += " " + _planted(ctx, unit)
        if lv.get("few_clusters") and lv.get("support"):
            text += " " + text_with_macros(lv["support"], ctx.m, f"{SRC}.levels.{i}.support")
        paras.append(text.strip())
    missing = not_estimated(ctx)
    if paras and missing:
        paras[-1] += " " + missing
    return paras, [table(ctx)] if paras else []


def not_estimated(ctx: Ctx) -> str:
    """The declared cluster levels the analysis could not estimate, each with its reason (from the artifact)."""
    items = []
    for i, lv in enumerate(record(ctx).get("not_estimated") or []):
        src = f"{SRC}.not_estimated.{i}"
        items.append(ctx.ph("multilevel.not_estimated_item", unit=ctx.t(lv.get("unit", ""), f"{src}.unit"),
                            reason=text_with_macros(lv.get("reason", ""), ctx.m, f"{src}.reason")))
    return ctx.ph("multilevel.not_estimated", items="; ".join(items)) if items else ""


def _planted(ctx: Ctx, unit: str) -> str:
    """Generated rows: the between-cluster variance planted beyond the predictors beside the estimate."""
    school = (ctx.recovery or {}).get("school") or {}
    if not ctx.generated or school.get("planted_between_var") is None:
        return ""
    planted = ctx.m.metric("MLPlantedBetweenVar", school["planted_between_var"], "recovery.json:school.planted_between_var")
    estimated = ctx.m.metric("MLEstimatedBetweenVar", school["estimated_between_var"],
                             "results.json:multilevel.levels.0.predictor_model.between_var")
    return ctx.ph(f"multilevel.planted_{'logit' if school.get('scale') == 'logit' else 'outcome'}", unit=unit,
                  planted=planted, estimated=estimated)


def discussion(ctx: Ctx) -> str:
    """What the school-level structure says about the students and their schools ('' without the analysis)."""
    lvs = levels(ctx)
    if not lvs or "ml|0|icc" not in ctx.n:
        return ""
    lv, n = lvs[0], ctx.n
    unit = _unit(ctx, lv, 0)
    c = lv.get("context") or {}
    school = (ctx.recovery or {}).get("school") or {}
    if ctx.generated and school.get("planted_between_var") is not None:  # a check of the workflow, not of schools
        return ctx.ph("multilevel.discussion_generated", units=_units(unit), unit=unit, icc=n["ml|0|icc"],
                      planted=ctx.m.metric("MLPlantedBetweenVar", school["planted_between_var"],
                                           "recovery.json:school.planted_between_var"),
                      estimated=ctx.m.metric("MLEstimatedBetweenVar", school["estimated_between_var"],
                                             "results.json:multilevel.levels.0.predictor_model.between_var"))
    values = {"unit": unit, "units": _units(unit), "icc": n["ml|0|icc"], "people": ctx.people}
    kind = "context" if c.get("improves") else "untested" if c.get("improves") is None else "no_context"
    share = (lv.get("explained") or {}).get("between")
    if kind == "no_context" and not (isinstance(share, (int, float)) and share >= MOSTLY):
        kind = "no_context_unexplained"  # "largely differences in the students" needs most of it accounted for
    if kind != "context":
        values["between"] = n.get("ml|0|between", "--")
    text = ctx.ph(f"multilevel.discussion_{kind}", **values)
    if lv.get("few_clusters"):
        text += " " + ctx.ph("multilevel.discussion_few", units=_units(unit), clusters=n["ml|0|clusters"])
    return text


def abstract(ctx: Ctx) -> str:
    """One sentence: the share between clusters and whether their context added to the prediction."""
    lvs = levels(ctx)
    if not lvs or "ml|0|icc" not in ctx.n:
        return ""
    c = lvs[0].get("context") or {}
    kind = "context" if c.get("improves") else "untested" if c.get("improves") is None else "no_context"
    return ctx.ph(f"multilevel.abstract_{kind}", icc=ctx.n["ml|0|icc"], units=_units(_unit(ctx, lvs[0], 0)),
                  unit=_unit(ctx, lvs[0], 0))


def limitations(ctx: Ctx) -> list[str]:
    few = [(i, lv) for i, lv in enumerate(levels(ctx)) if lv.get("few_clusters")]
    return [ctx.ph("multilevel.limitation_few", units=_units(_unit(ctx, lv, i)), clusters=ctx.n[f"ml|{i}|clusters"])
            for i, lv in few if f"ml|{i}|clusters" in ctx.n]

