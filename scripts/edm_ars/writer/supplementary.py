"""The supplementary analyses (results.json `supplementary`, edm_ars.codegen.supplementary) in the paper: their macros, a
Results subsection that names each as code run in a sandbox and points to its script, and a Limitations item when
they ran unsandboxed or one was dropped. Absent when none were planned (codegen.n 0)."""

from __future__ import annotations

import re
from typing import Any

from edm_ars.core.texescape import escape_latex
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import fmt_plain, macro_name

SRC = "results.json:supplementary"


def record(ctx: Ctx) -> dict[str, Any]:
    """results.json `supplementary` when analyses were planned, else {}."""
    sup = ctx.results.get("supplementary")
    return sup if isinstance(sup, dict) and sup.get("analyses") else {}


def register(ctx: Ctx) -> None:
    """A macro per reported number of each analysis that ran, and the counts."""
    sup = record(ctx)
    if not sup:
        return
    m, n = ctx.m, ctx.n
    n["supp|planned"] = m.count("NSuppPlanned", sup["n_planned"], f"{SRC}.n_planned")
    n["supp|ok"] = m.count("NSuppOk", sup["n_ok"], f"{SRC}.n_ok")
    n["supp|max_attempts"] = m.count("NSuppMaxAttempts", sup["max_attempts"], f"{SRC}.max_attempts")
    for name, rec in sup["analyses"].items():
        n[f"supp|{name}|attempt"] = m.count(macro_name("Supp", name, "Attempt"), len(rec["attempts"]),
                                            f"len({SRC}.analyses.{name}.attempts)", derived=True)
        for key, item in (rec.get("numbers") or {}).items():
            value = float(item["value"])
            n[f"supp|{name}|{key}"] = m.add(macro_name("Supp", name, key), fmt_plain(value), value,
                                            f"{SRC}.analyses.{name}.numbers.{key}.value")


def _tt(text: str) -> str:
    return f"\\texttt{{{escape_latex(text)}}}"


def _path(text: str) -> str:
    """A file's path, breakable at its slashes (hyperref's \\nolinkurl; the paths are [A-Za-z0-9_./-])."""
    return f"\\nolinkurl{{{text}}}" if re.fullmatch(r"[A-Za-z0-9_./-]+", text) else _tt(text)


def results(ctx: Ctx) -> list[str]:
    """The subsection's paragraphs: what was run and how, then one paragraph per analysis."""
    sup = record(ctx)
    if not sup:
        return []
    sources = {rec["source"] for rec in sup["analyses"].values()}
    origin = ctx.ph(f"supplementary.origin_{'mixed' if len(sources) > 1 else sources.pop()}")
    sandbox = ctx.ph(f"supplementary.sandbox_{sup['sandbox']}")
    generated = any(rec["source"] == "generated" for rec in sup["analyses"].values())
    repair = (ctx.ph("supplementary.repair_model", attempts=ctx.n["supp|max_attempts"]) if generated
              else ctx.ph("supplementary.repair_library"))
    paras = [ctx.ph("supplementary.overview", planned=ctx.n["supp|planned"], ok=ctx.n["supp|ok"], origin=origin,
                    sandbox=sandbox) + " " + repair]
    for name, rec in sup["analyses"].items():
        base = f"{SRC}.analyses.{name}"
        head = ctx.ph("supplementary.analysis_head", name=_tt(name),
                      purpose=ctx.t(rec["purpose"].rstrip("."), f"{base}.purpose"),
                      by=ctx.ph(f"supplementary.by_{rec['requested_by']}"))
        if rec["status"] == "ok":
            parts = [ctx.ph("supplementary.number", meaning=ctx.t(item["meaning"], f"{base}.numbers.{key}.meaning"),
                            value=ctx.n[f"supp|{name}|{key}"])
                     for key, item in rec["numbers"].items()]
            text = head + " " + ctx.ph("supplementary.analysis_ok", script=_path(rec["script"]),
                                       attempt=ctx.n[f"supp|{name}|attempt"], numbers="; ".join(parts))
            if rec.get("figures"):
                text += " " + ctx.ph("supplementary.figure_kept", files=", ".join(_path(f["file"])
                                                                                 for f in rec["figures"]))
        else:
            word = ctx.ph("supplementary.attempt_one") if len(rec["attempts"]) == 1 else \
                ctx.ph("supplementary.attempt_many")
            text = head + " " + ctx.ph("supplementary.analysis_dropped", attempts=ctx.n[f"supp|{name}|attempt"],
                                       attempt_word=word,
                                       reason=ctx.t(rec["reason"].rstrip("."), f"{base}.reason"),
                                       script=_path(rec["script"]))
        paras.append(text)
    paras.append(ctx.ph("supplementary.caveat"))
    return paras


def limitations(ctx: Ctx) -> list[str]:
    """A Limitations item when the scripts ran without the sandbox, or an analysis was dropped."""
    sup = record(ctx)
    if not sup:
        return []
    items = []
    if sup["sandbox"] == "none":
        items.append(ctx.ph("supplementary.limitation_unsandboxed"))
    dropped = [n for n, r in sup["analyses"].items() if r["status"] != "ok"]
    if dropped:
        names = ", ".join(_tt(n) for n in dropped)
        items.append(ctx.ph("supplementary.limitation_dropped_one", names=names) if len(dropped) == 1 else
                     ctx.ph("supplementary.limitation_dropped", names=names))
    return items
