"""Breadth in the paper (edm_ars.formulate.branches): when the run studied several candidate studies, a Methods subsection on
how they were drafted and chosen with a "studies considered" table; when the findings store held earlier studies
of the data set, a Related Work paragraph that reports them as this workflow's own earlier results."""

from __future__ import annotations

from typing import Any

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import clean_label, join_list, lc_first
from edm_ars.writer.common import CI_LEVEL, data_name, metric_name
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import fmt_ci, fmt_metric, macro_name

SEL, DRAFTS = "selection.json", "branches.json"


def several(ctx: Ctx) -> bool:
    return len((ctx.selection or {}).get("branches") or []) > 1


def register(ctx: Ctx) -> None:
    """Macros for the branches' primary metrics, intervals and scores, and for the earlier studies' metrics."""
    m, n = ctx.m, ctx.n
    if several(ctx):
        n["branches|n"] = m.count("NBranches", len(ctx.selection["branches"]), f"len({SEL}:branches)",
                                  derived=True)
        n["branches|chosen"] = m.count("ChosenBranch", ctx.selection["chosen"], f"{SEL}:chosen")
        n["branches|threshold"] = m.add("SameStudyThreshold", fmt_metric(ctx.drafts["same_study"], 2),
                                        ctx.drafts["same_study"], f"{DRAFTS}:same_study")
        if ctx.drafts.get("diversity") is not None:
            n["branches|diversity"] = m.add("BranchDiversity", fmt_metric(ctx.drafts["diversity"], 2),
                                            ctx.drafts["diversity"], f"{DRAFTS}:diversity")
        for i, s in enumerate(ctx.selection["branches"]):
            src, b = f"{SEL}:branches.{i}", s["branch"]
            p = s["primary"]
            n[f"branch|{b}|value"] = m.metric(macro_name("Branch", b, p["metric"]), p["value"],
                                              f"{src}.primary.value")
            if None not in p["ci"]:
                n[f"branch|{b}|ci"] = m.add(macro_name("Branch", b, p["metric"], "CI"), fmt_ci(*p["ci"]),
                                            list(p["ci"]), f"{src}.primary.ci")
            n[f"branch|{b}|score"] = m.add(macro_name("Branch", b, "Score"), f"{s['score']:g}", s["score"],
                                           f"{src}.score")
            n[f"branch|{b}|number"] = m.count(macro_name("BranchNo", b), b, f"{src}.branch")
    for i, e in enumerate(earlier(ctx)):
        p = e.get("primary") or {}
        if isinstance(p.get("value"), (int, float)):
            n[f"earlier|{i}|value"] = m.metric(macro_name("Earlier", i + 1, p.get("metric", "")), p["value"],
                                               f"{DRAFTS}:earlier_studies.{i}.primary.value")


def earlier(ctx: Ctx) -> list[dict[str, Any]]:
    return list((ctx.drafts or {}).get("earlier_studies") or [])


def methods(ctx: Ctx) -> str:
    """The subsection on the candidate studies and the selection, with the studies-considered table."""
    if not several(ctx):
        return ""
    drafts = ctx.drafts
    if any(d.get("source") == "model" for d in drafts["drafts"]):
        how = "model"
    elif all(d.get("variant") == "as_registered" for d in drafts["drafts"]):
        how = "registry_questions"
    else:
        how = "registry"
    text = [ctx.ph(f"branches.drafted_{how}", n=ctx.n["branches|n"], short=data_name(ctx)),
            ctx.ph("branches.dedup", threshold=ctx.n["branches|threshold"]),
            *screening_text(ctx),
            ctx.ph("branches.rule", chosen=ctx.n["branches|chosen"])]
    if ctx.selection.get("screening"):
        text.append(ctx.ph(f"branches.full_{ctx.selection['screening']['full']}"))
    if "branches|diversity" in ctx.n:
        text.append(ctx.ph("branches.diversity", value=ctx.n["branches|diversity"]))
    if drafts.get("skipped"):
        text.append(ctx.ph("branches.skipped_some"))
    return (f"\\subsection{{{ctx.ph('branches.title')}}}\n" + " ".join(text) + "\n\n" + table(ctx))


def screening_text(ctx: Ctx) -> list[str]:
    """How the candidates were analysed before the selection: all in full, or screened (selection.json:screening,
    the families fitted and the analyses left to the full round)."""
    screening = ctx.selection.get("screening")
    if not screening:
        return [ctx.ph("branches.same_pipeline")]
    src = f"{SEL}:screening"
    families = join_list([ctx.t(lc_first(ctx.model_label(m)), f"{src}.models") for m in screening["models"]])
    skipped = join_list([ctx.t(s, f"{src}.skipped") for s in screening["skipped"]])
    return [ctx.ph("branches.screened", families=families, skipped=skipped)]


def table(ctx: Ctx) -> str:
    sel = ctx.selection
    rows = []
    for i, s in enumerate(sel["branches"]):
        b, src = s["branch"], f"{SEL}:branches.{i}"
        metric = (f"{metric_name(ctx, s['primary']['metric'])} = {ctx.n[f'branch|{b}|value']}"
                  + (f", {ctx.n[f'branch|{b}|ci']}" if f"branch|{b}|ci" in ctx.n else ""))
        why = (ctx.ph("branches.chosen_cell") if s["why_not_chosen"] is None
               else ctx.t(s["why_not_chosen"], f"{src}.why_not_chosen"))
        rows.append(" & ".join([ctx.n[f"branch|{b}|number"], ctx.t(s["research_question"], f"{src}.research_question"),
                                ctx.t(clean_label(s.get("outcome_label") or s["outcome"]), f"{src}.outcome_label"),
                                metric,
                                escape_latex(s["verdict"]) + f" ({ctx.n[f'branch|{b}|score']})", why]) + " \\\\")
    head = " & ".join(ctx.ph(f"branches.col_{c}") for c in ("branch", "question", "outcome", "metric", "verdict", "why"))
    caption = (ctx.ph("branches.caption_screening", level=CI_LEVEL) if sel.get("screening")
               else ctx.ph("branches.caption", level=CI_LEVEL))
    return ("\\begin{table*}[tbp]\n\\caption{" + caption + "}\n\\label{tab:studies}\n\\small\n"
            "\\begin{tabularx}{\\textwidth}{@{}r>{\\raggedright\\arraybackslash}X"
            ">{\\raggedright\\arraybackslash}p{0.14\\textwidth}>{\\raggedright\\arraybackslash}p{0.17\\textwidth}"
            ">{\\raggedright\\arraybackslash}p{0.09\\textwidth}>{\\raggedright\\arraybackslash}p{0.17\\textwidth}@{}}\n"
            f"\\toprule\n{head} \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabularx}\n\\end{table*}")


def related(ctx: Ctx) -> list[str]:
    """A paragraph on the earlier studies of this data set in the findings store (this workflow's own runs)."""
    found = earlier(ctx)
    if not found:
        return []
    items = []
    for i, e in enumerate(found):
        src = f"{DRAFTS}:earlier_studies.{i}"
        label = ctx.t(lc_first(clean_label(e.get("outcome_label") or e.get("outcome") or "")), f"{src}.outcome_label")
        p = e.get("primary") or {}
        value = ctx.n.get(f"earlier|{i}|value")
        details = ([ctx.ph("branches.earlier_metric", metric=metric_name(ctx, p.get("metric")), value=value)]
                   if value else [])
        details.append(ctx.ph("branches.earlier_verdict", verdict=escape_latex(str(e.get("verdict") or "?"))))
        items.append(ctx.ph("branches.earlier_item", outcome=label, details=", ".join(details)))
    text = (f"\\paragraph{{{ctx.ph('branches.earlier_title')}}} "
            + ctx.ph("branches.earlier", short=data_name(ctx), items=join_list(items)))
    chosen = next((d for d in ctx.drafts.get("drafts", []) if d["branch"] == ctx.selection.get("chosen")), None)
    nearest = ((chosen or {}).get("novelty") or {}).get("nearest_distance")
    if nearest is not None and nearest < ctx.drafts.get("same_study", 0):
        text += " " + ctx.ph("branches.earlier_repeat")
    return [text]
