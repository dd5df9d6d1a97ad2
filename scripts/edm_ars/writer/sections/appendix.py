"""Appendices (tuned hyperparameters, the automated review's issues) and the UNVERIFIED block."""

from __future__ import annotations

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import join_list, sentence
from edm_ars.writer.common import metric_name
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import fmt_plain, macro_name


def hyperparameter_table(ctx: Ctx) -> str:
    rows = []
    for name, info in ctx.results["models"].items():
        params = info.get("best_params") or {}
        if not params:
            continue
        for k, (p, v) in enumerate(sorted(params.items())):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                val = ctx.m.add(macro_name(name, "Param", p), fmt_plain(v), v,
                                f"results.json:models.{name}.best_params.{p}")
            elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
                val = ", ".join(ctx.model_label(x) if x in ctx.results["models"] else escape_latex(x) for x in v)
            elif isinstance(v, (list, tuple)):
                val = "(" + ", ".join(ctx.t(str(x), f"results.json:models.{name}.best_params.{p}") for x in v) + ")"
            else:
                val = ctx.t(str(v), f"results.json:models.{name}.best_params.{p}")
            pname = escape_latex(p.split("__")[-1])
            rows.append(f"{ctx.model_label(name) if k == 0 else ''} & \\texttt{{{pname}}} & {val} \\\\")
        rows.append("\\addlinespace")
    if not rows:
        return ""
    if rows[-1] == "\\addlinespace":
        rows.pop()
    cv = []
    for name in ctx.results["models"]:
        if f"{name}|cv" in ctx.n:
            cv.append(f"{ctx.model_phrase(name)} {ctx.n[f'{name}|cv']}")
    text = (f"\\section{{{ctx.ph('appendix.hyperparameters_title')}}}\\label{{app:hyperparameters}}\n"
            + ctx.ph("appendix.hyperparameters_table"))
    if cv:
        text += " " + ctx.ph("appendix.hyperparameters_cv", metric=metric_name(ctx), scores=join_list(cv))
    # [htbp]: the table stays below the appendix heading on the appendix's own page (Section A comes first)
    return (text + "\n\n\\begin{table}[htbp]\n"
            f"\\caption{{{ctx.ph('appendix.hyperparameters_caption')}}}\n"
            "\\label{tab:hyperparameters}\n\\small\n"
            "\\begin{tabularx}{\\columnwidth}{@{}ll"
            ">{\\raggedleft\\arraybackslash}X@{}}\n\\toprule\n"
            "Model & Parameter & Value \\\\\n\\midrule\n" + "\n".join(rows)
            + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")


def review_appendix(ctx: Ctx) -> str:
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    rnd = ctx.m.count("ReviewRound", rv.get("round", 0), "review_report.json:round")
    # the verdict and the issues; the review's overall and dimension scores are not quoted
    text = (f"\\section{{{ctx.ph('appendix.review_title')}}}\\label{{app:review}}\n"
            + ctx.ph("appendix.review_verdict", round=rnd, backend=escape_latex(rv.get("backend", "")),
                     verdict=verdict))
    issues = rv.get("issues") or []
    if not issues:
        return text + " " + ctx.ph("appendix.review_no_issues")
    lines = []
    for i, iss in enumerate(issues):
        src = f"review_report.json:issues.{i}"
        line = ctx.ph("appendix.review_issue", id=escape_latex(iss.get("id", "")),
                      severity=escape_latex(iss.get("severity", "")), stage=escape_latex(iss.get("target_stage", "")),
                      description=sentence(ctx.t(iss.get("description", ""), src + ".description")))
        if iss.get("recommendation"):
            line += " " + ctx.ph("appendix.review_recommendation",
                                 recommendation=sentence(ctx.t(iss["recommendation"], src + ".recommendation")))
        lines.append("  \\item " + line)
    return text + "\n\\begin{itemize}\n" + "\n".join(lines) + "\n\\end{itemize}"


def unverified_block(ctx: Ctx) -> str:
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    why = []
    if rv.get("verdict") != "PASS" and not (rv.get("verdict") == "UNVERIFIED" and rv.get("unverified")):
        # a verdict UNVERIFIED is said once, by the marked flag below
        why.append(ctx.ph("appendix.unverified_verdict", verdict=verdict))
    if rv.get("unverified"):
        why.append(ctx.ph("appendix.unverified_marked"))
    rubric = rv.get("rubric_verdict")
    if rubric not in (None, "PASS", rv.get("verdict")):
        why.append(ctx.ph("appendix.unverified_rubric", verdict=escape_latex(rubric)))
    return ctx.ph("appendix.unverified_box", reasons=join_list(why))
