"""Front matter: title, authors and keywords (the abstract is sections/abstract.py)."""

from __future__ import annotations

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import model_family, title_case
from edm_ars.writer import narrative
from edm_ars.writer.context import Ctx


def title(ctx: Ctx) -> str:
    return narrative.title(ctx, title_case(ctx.outcome_label))


def authors(ctx: Ctx, name: str | None = None) -> str:
    """The author line: the configured name, else the system's own."""
    who = escape_latex(name) if name else "EDM-ARS"
    return (f"\\author{{{who}}}\n"
            f"\\affiliation{{%\n  \\institution{{{ctx.ph('front.affiliation')}}}\n"
            "  \\country{}}\n"
            f"\\renewcommand{{\\shortauthors}}{{{who}}}")


def keywords(ctx: Ctx) -> str:
    words = ["educational data mining", ctx.short, "student outcome prediction"]
    fams = {model_family(x) for x in ctx.results["models"]}
    if "tree" in fams:
        words.append("tree ensembles")
    if "linear" in fams:
        words.append("penalised regression")
    if ctx.top_features and ctx.importance_key == "mean_abs_shap":
        words.append("SHAP")
    if ctx.fairness:
        words.append("algorithmic fairness")
    if ctx.stability.get("runs"):
        words.append("stability")
    words += ["data leakage", "automated research"]
    return ", ".join(words)
