"""What is already known about the data (results.json `replication`, edm_ars.analysis.replication) in the paper: the
published findings the registry lists, each tested with this study's data and design, as a Results subsection with
a table (the finding and its source, this study's estimate with its interval, agrees / differs / cannot be tested
here) and a Discussion paragraph that sets the study against them. Absent when the registry lists no findings."""

from __future__ import annotations

from typing import Any

from edm_ars.core.text import clean_label, join_list, lc_first
from edm_ars.writer.common import CI_LEVEL, data_name
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name, text_with_macros
from edm_ars.writer.phrases import plural

SRC = "results.json:replication"
STATUSES = ("agrees", "differs", "cannot_test")


def _one(count: Any) -> str:
    """The suffix of a phrase's singular form ('_one' for one finding)."""
    return "_one" if count == 1 else ""


def record(ctx: Ctx) -> dict[str, Any]:
    rep = ctx.results.get("replication")
    if not isinstance(rep, dict) or rep.get("source") != "registry" or not rep.get("findings"):
        return {}
    return rep


def register(ctx: Ctx) -> None:
    rep = record(ctx)
    if not rep:
        return
    m, n = ctx.m, ctx.n
    n["rep|total"] = m.count("NFindings", len(rep["findings"]), f"len({SRC}.findings)", derived=True)
    for status in STATUSES:
        n[f"rep|{status}"] = m.count(macro_name("NFindings", status), (rep.get("counts") or {}).get(status, 0),
                                     f"{SRC}.counts.{status}")
    for i, f in enumerate(rep["findings"]):
        tag = macro_name("Rep", f["id"])
        if f.get("estimate") is not None:
            n[f"rep|{i}|estimate"] = m.metric(tag + "Estimate", f["estimate"], f"{SRC}.findings.{i}.estimate")
        if f.get("ci"):
            lo, hi = f["ci"]
            n[f"rep|{i}|lo"] = m.metric(tag + "Low", lo, f"{SRC}.findings.{i}.ci.0")
            n[f"rep|{i}|hi"] = m.metric(tag + "High", hi, f"{SRC}.findings.{i}.ci.1")
            n[f"rep|{i}|ci"] = m.ci(tag + "CI", lo, hi, f"{SRC}.findings.{i}.ci")
        value = (f.get("published") or {}).get("value")
        if isinstance(value, (int, float)):
            n[f"rep|{i}|published"] = m.metric(tag + "Published", value, f"{SRC}.findings.{i}.published.value")


def _cite(ctx: Ctx, key: str) -> str:
    return ctx.cites.cite_keys(key) if key else ""


def _claim(ctx: Ctx, f: dict[str, Any], i: int) -> str:
    return text_with_macros(f.get("claim", ""), ctx.m, f"{SRC}.findings.{i}.claim").rstrip(".")


def _status(ctx: Ctx, f: dict[str, Any]) -> str:
    """The table's status: an estimate whose interval does not settle the direction is 'not settled here', not
    'cannot be tested here'."""
    if f["status"] == "cannot_test" and f.get("estimate") is not None:
        return ctx.ph("replication.status_inconclusive")
    return ctx.ph(f"replication.status_{f['status']}")


def table(ctx: Ctx) -> str:
    rows = []
    for i, f in enumerate(record(ctx)["findings"]):
        n = ctx.n
        estimate = n.get(f"rep|{i}|estimate", "--")
        if f"rep|{i}|lo" in n:
            estimate += f" [{n[f'rep|{i}|lo']}, {n[f'rep|{i}|hi']}]"
        rows.append(" & ".join([_claim(ctx, f, i) + _cite(ctx, f.get("cite", "")), estimate,
                                _status(ctx, f)]) + " \\\\")
    head = " & ".join(ctx.ph(f"replication.col_{c}") for c in ("finding", "estimate", "status"))
    return ("\\begin{table*}[tbp]\n\\caption{" + ctx.ph("replication.caption", data=data_name(ctx, studied=False), level=CI_LEVEL) + "}\n"
            "\\label{tab:replication}\n\\small\n\\begin{tabularx}{\\textwidth}{@{}>{\\raggedright\\arraybackslash}X"
            ">{\\raggedright\\arraybackslash}p{0.2\\textwidth}>{\\raggedright\\arraybackslash}p{0.13\\textwidth}@{}}\n"
            f"\\toprule\n{head} \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabularx}\n\\end{table*}")


def results(ctx: Ctx) -> tuple[list[str], list[str]]:
    """(paragraphs, floats) of the Results subsection."""
    rep = record(ctx)
    if not rep:
        return [], []
    n = ctx.n
    got = rep.get("counts") or {}
    counts = join_list([ctx.ph(f"replication.count_{status}{_one(got.get(status))}", n=n[f"rep|{status}"])
                        for status in STATUSES if got.get(status)])
    if got.get("agrees") or got.get("differs"):
        paras = [ctx.ph("replication.overview", total=n["rep|total"], data=data_name(ctx, studied=False),
                        counts=counts)]
    else:  # nothing could be tested: no "tested with the training rows, 2 cannot be tested"
        paras = [ctx.ph("replication.overview_untested", total=n["rep|total"], data=data_name(ctx, studied=False))]
    for i, f in enumerate(rep["findings"]):
        if f["status"] in ("agrees", "differs") and f"rep|{i}|estimate" in n:
            paras.append(_tested(ctx, f, i))
    return [" ".join(paras)], [table(ctx)]


def _level(ctx: Ctx, variable: str, code: Any) -> str:
    """A level of a categorical variable as the registry labels it (its code when it has no label)."""
    label = (ctx.registry_values.get(variable) or {}).get(str(code))
    return ctx.t(label if label else str(code), f"{SRC}.findings.published")


def _tested(ctx: Ctx, f: dict[str, Any], i: int) -> str:
    """One tested finding, said from its structured test: what was estimated here, with its interval, and whether it
    agrees with the published value or direction."""
    n, pub = ctx.n, f.get("published") or {}
    values = {"estimate": n[f"rep|{i}|estimate"], "ci": n.get(f"rep|{i}|ci", ""),
              "cite": _cite(ctx, f.get("cite", "")), "status": ctx.ph(f"replication.verdict_{f['status']}")}
    variable = str(pub.get("variable") or "")
    label = ctx.t(lc_first(clean_label(ctx.var_label(variable))), f"{SRC}.findings.{i}.published.variable") \
        if variable else ""
    if f["kind"] == "between_cluster_share" and f"rep|{i}|published" in n:
        return ctx.ph("replication.tested_share", published=n[f"rep|{i}|published"], units=plural(ctx.cluster),
                      **values)
    if f["kind"] == "association" and variable:
        sign = "positive" if float(f["estimate"]) >= 0 else "negative"  # the direction found here, said as found
        return ctx.ph(f"replication.tested_association_{sign}", variable=label, outcome=ctx.outcome_phrase, **values)
    if f["kind"] == "group_difference" and variable:
        return ctx.ph("replication.tested_group", variable=label, higher=_level(ctx, variable, pub.get("higher")),
                      lower=_level(ctx, variable, pub.get("lower")), outcome=ctx.outcome_phrase, **values)
    return ctx.ph(f"replication.finding_{f['status']}", claim=lc_first(_claim(ctx, f, i)), cite=values["cite"],
                  reason=text_with_macros(f.get("reason", ""), ctx.m, f"{SRC}.findings.{i}.reason"))


def abstract(ctx: Ctx) -> str:
    """One sentence: how many published findings on the data the study could test, and how many agreed."""
    rep = record(ctx)
    counts = rep.get("counts") or {}
    tested = counts.get("agrees", 0) + counts.get("differs", 0)
    if not rep or not tested:
        return ""
    n = ctx.m.count("NFindingsTested", tested, f"{SRC}.counts.agrees + {SRC}.counts.differs", derived=True)
    return ctx.ph("replication.abstract", n=n, agrees=ctx.n["rep|agrees"], data=data_name(ctx, studied=False))


def discussion(ctx: Ctx) -> str:
    """The study set against the published findings on its data ('' without them)."""
    rep = record(ctx)
    if not rep:
        return ""
    agree = [f for f in rep["findings"] if f["status"] == "agrees"]
    differ = [f for f in rep["findings"] if f["status"] == "differs"]
    untested = [f for f in rep["findings"] if f["status"] == "cannot_test"]

    def sources(found: list[dict[str, Any]]) -> str:
        return ctx.cites.cite_keys(*dict.fromkeys(f["cite"] for f in found if f.get("cite")))

    parts = []
    if agree:
        parts.append(ctx.ph(f"replication.discussion_agree{_one(len(agree))}", data=data_name(ctx, studied=False),
                            n=ctx.n["rep|agrees"])
                     + sources(agree) + ".")
    if differ:
        parts.append(ctx.ph(f"replication.discussion_differ{_one(len(differ))}", n=ctx.n["rep|differs"])
                     + sources(differ) + ".")
    if untested:
        parts.append(ctx.ph(f"replication.discussion_untested{_one(len(untested))}", n=ctx.n["rep|cannot_test"])
                     + sources(untested) + ".")
    if not agree and not differ:
        parts.append(ctx.ph("replication.discussion_nothing_tested"))
    return " ".join(parts)

