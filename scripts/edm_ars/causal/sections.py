"""The causal paper's prose, section by section (the slots of the fixed template, config/paper_template.tex):
Abstract; Introduction; Related Work (what is already known); Methods (Data, Design and identification, Estimation);
Results (estimates, balance, attrition, overlap, sensitivity, exploratory heterogeneity); Discussion (comparison with
published estimates, validation against known truth, the review's checklist); Limitations and a Conclusion.

Every number is a macro registered by causal/paper.py (ctx.n). Causal wording is used only in sentences about the
treatment's effect on the outcome, and each such sentence names the treatment by one of its phrases (the paper lint
lets a causal sentence pass in a causal paper only then)."""

from __future__ import annotations

import re
from typing import Any

from edm_ars.causal.labels import FIGURE_ROWS, FIGURE_ROWS_WORD
from edm_ars.causal.paper_context import CausalCtx
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import clean_label, join_list, lc_first, number_word, title_case
from edm_ars.writer.integrity import causal_wording, names_treatment, unverified_reasons
from edm_ars.writer.macros import macro_name

#: balance rows shown in the table (the largest |SMD| first)
BALANCE_ROWS = 10


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if not text or text.endswith((".", "?", "!")) else text + "."


def _covers(lo: float, hi: float, value: float) -> bool:
    return lo <= value <= hi


def _primary(ctx: CausalCtx) -> dict[str, Any]:
    return ctx.results["primary"]


def _excludes_zero(rec: dict[str, Any]) -> bool | None:
    lo, hi = rec.get("ci_low"), rec.get("ci_high")
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return None
    return not _covers(lo, hi, 0.0)


def _est(ctx: CausalCtx, key: str) -> str:
    """'X (95\\% CI [a, b])' of a registered estimate."""
    return f"{ctx.n[key + '|est']} ({ctx.interval(key)})"


def _tt(value: Any) -> str:
    return "\\texttt{" + escape_latex(str(value)) + "}"


def _library(ctx: CausalCtx, key: str) -> str:
    """results.json:<key>.library ('statsmodels 0.14.1'): the name, and the version as one quoted macro."""
    text = " ".join(str((ctx.results.get(key) or {}).get("library") or "").split())
    m = re.fullmatch(r"(.*?)\s+v?(\d[\w.+-]*)", text)
    if not m:
        return ctx.t(text, f"results.json:{key}.library")
    version = ctx.m.add(macro_name("Library", key, m.group(1)), escape_latex(m.group(2)), m.group(2),
                        f"results.json:{key}.library", quoted=True)
    return f"{escape_latex(m.group(1))} {version}"


def _the(text: str) -> str:
    """`text` with 'the' before it unless it has an article."""
    return text if re.match(r"(the|a|an)\s", text, re.I) else "the " + text


def _a(text: str) -> str:
    return ("an " if re.match(r"[aeiou]", text, re.I) else "a ") + text


def _units(ctx: CausalCtx) -> str:
    return ctx.ds["units"]


def _question(ctx: CausalCtx) -> str:
    return _sentence(ctx.t(ctx.spec.get("research_question"), "research_spec.json:research_question"))


# ---- front matter -----------------------------------------------------------------------------------------------
def title(ctx: CausalCtx) -> str:
    """'The Effect of a Small Class on the Total of ...: Evidence from the Project STAR Experiment' (an
    observational design: 'Evidence from an Observational Study of ...')."""
    source = (f"the {ctx.ds['short']} Experiment" if ctx.randomized else
              f"an Observational Study of {ctx.ds['short']}")
    if ctx.generated:
        source = f"Generated Data Standing in for {ctx.ds['short']}"
    text = title_case(f"The Effect of {ctx.phrase} on {ctx.the_outcome}: Evidence from {source}")
    return re.sub(r"(?<= )(From|With|Versus|Into|Per)(?= )", lambda m: m.group(1).lower(), text)


def keywords(ctx: CausalCtx) -> str:
    words = ["causal inference", "average treatment effect"]
    words += (["randomized experiment", "cluster-robust standard errors"] if ctx.randomized
              else ["observational study", "double machine learning", "sensitivity analysis"])
    words += ["educational data", ctx.ds["short"], "automated research"]
    return ", ".join(words)


def unverified_block(ctx: CausalCtx) -> str:
    reasons = escape_latex("; ".join(unverified_reasons(ctx.review)))
    return ("\\unverifiedbox{\\textbf{Unverified draft.} The automated review did not pass this paper ("
            f"{reasons}). Read its estimates with that in mind; Section~\\ref{{sec:review}} lists the review's "
            "checklist.}")


# ---- abstract ---------------------------------------------------------------------------------------------------
def _meaning(ctx: CausalCtx) -> str:
    """What the primary interval says about the estimand (one sentence, under the stated assumptions)."""
    p = _primary(ctx)
    excl = _excludes_zero(p)
    under = "random assignment" if ctx.randomized else "the stated identification assumptions"
    if excl is None:
        return ""
    if excl:
        sign = "positive" if p["estimate"] > 0 else "negative"
        return (f"The interval excludes zero: under {under}, the average effect of {ctx.phrase} on "
                f"{ctx.the_outcome} in this population is {sign}.")
    return (f"The interval includes zero: under {under}, these data do not rule out that the average effect of "
            f"{ctx.phrase} on {ctx.the_outcome} is zero.")


def _recovery_sentence(ctx: CausalCtx) -> str:
    rec, n = ctx.recovery, ctx.n
    if not rec or "rec|planted_ate" not in n:
        return ""
    covered = "covers" if rec.get("covered") else "does not cover"
    naive = ("also covers it" if rec.get("naive_covered") else "does not cover it")
    return (f"On these generated data, with a planted average effect of {ctx.phrase} of {n['rec|planted_ate']}, "
            f"the primary interval [{n['rec|ci_low']}, {n['rec|ci_high']}] {covered} the planted value, and the "
            f"interval of the naive difference in means [{n['rec|naive_ci_low']}, {n['rec|naive_ci_high']}] "
            f"{naive}.")


def abstract(ctx: CausalCtx) -> str:
    n = ctx.n
    if ctx.randomized:
        design = (f"The data come from {ctx.ds['short']}, a randomized experiment: "
                  f"{lc_first(_sentence(ctx.t(ctx.spec['design'].get('statement'), 'research_spec.json:design.statement')))}")
        method = ("We estimate the average treatment effect (ATE) by the difference in means with block fixed "
                  "effects and cluster-robust standard errors, with a covariate-adjusted estimate as a check")
    else:
        source = (f"The data are generated to stand in for {ctx.ds['short']}; the treatment was"
                  if ctx.generated else f"The data come from {ctx.ds['short']}, where the treatment was")
        design = (f"{source} not assigned at random; we "
                  "assume conditional exchangeability given measured pre-treatment covariates, positivity, "
                  "consistency and no interference.")
        est = ctx.estimator("primary")
        method = (f"We estimate the average treatment effect (ATE) by {est}"
                  + ("" if "cross-fitting" in est else " with cross-fitting") + ", and report overlap, covariate balance and omitted-variable bounds")
    sample = f"{n['n|analysed']} {_units(ctx)} with an observed outcome" if "n|analysed" in n else f"{_units(ctx)}"
    estimate = (f"The estimated effect of {ctx.phrase} rather than {ctx.control_phrase} on "
                f"{ctx.the_outcome} is {_est(ctx, 'primary')}.")
    generated = ""
    if ctx.generated and not _recovery_sentence(ctx):
        generated = "The rows are generated data, so the estimate describes the generator, not real students."
    parts = [_question(ctx), _sentence(design), f"{method}, on {sample}.", estimate, _meaning(ctx),
             _recovery_sentence(ctx), generated]
    return " ".join(p for p in parts if p)


# ---- introduction -----------------------------------------------------------------------------------------------
def introduction(ctx: CausalCtx) -> str:
    spec = ctx.spec
    paras = []
    paras.append(" ".join([
        _question(ctx),
        f"It is a causal question: it asks how {ctx.the_outcome} would differ, on average, if the same "
        f"{_units(ctx)} had " + (f"been assigned to {ctx.phrase} rather than to {ctx.control_phrase}."
                                 if ctx.randomized else f"received {ctx.phrase} rather than {ctx.control_phrase}."),
        "A decision about the treatment rests on what it changes, not on what it predicts, so the answer needs a "
        "design that separates the two.",
    ]))
    about = ctx.ds.get("about")
    name = _the(ctx.ds["long"] or ctx.ds["short"])
    data = (f"We use generated data that stand in for {name}" if ctx.generated else f"We use {name}") + (
        f", {lc_first(_sentence(about))}" if about else ".")
    design = ("Its treatment was assigned at random, so a comparison of the arms identifies the average effect "
              "of the assignment without modelling who received it." if ctx.randomized else
              "Its treatment was not assigned at random, so the comparison rests on measured covariates and on "
              "assumptions that we state, probe with diagnostics and bound with a sensitivity analysis.")
    paras.append(" ".join([data, design]))
    prior = (ctx.cites.present(*[str(k) for k in spec.get("literature_keys") or []])
             or ctx.cites.keys(*[t for t in (str(ctx.dataset.get("topic") or ""), "causal") if t]))
    pubs = [pe for pe in spec.get("published_estimates") or [] if pe.get("cite")]
    known = ""
    if pubs:
        keys = ctx.cites.present(*dict.fromkeys(str(pe["cite"]) for pe in pubs))
        cite = ctx.cites.citep(keys=keys) if keys else ""
        known = (f"Published analyses of these data report estimates of this effect{cite}; "
                 "Section~\\ref{sec:comparison} compares them with ours.")
    elif prior:
        known = f"Earlier work on these data and on related questions is reviewed in Section~\\ref{{sec:related}}{ctx.cites.citep(keys=prior[:4])}."
    contrib = ["the estimate of the average treatment effect with its interval",
               "the checks the design calls for (covariate balance and attrition by arm"
               + ("" if ctx.randomized else ", overlap of the propensity scores and a sensitivity analysis for "
                  "unmeasured confounding") + ")",
               "subgroup estimates, labelled exploratory"]
    if pubs:
        contrib.append("a comparison with the published estimates")
    if ctx.recovery:
        contrib.append("a check against a known, planted effect on generated data")
    paras.append(" ".join(p for p in (known, f"This paper reports {join_list(contrib)}.") if p))
    return "\n\n".join(paras)


# ---- related work -----------------------------------------------------------------------------------------------
def _method_keys(ctx: CausalCtx) -> dict[str, list[str]]:
    """The citable method papers by the role they play here (from the literature context's topics)."""
    return {"dml": ctx.cites.keys("dml"), "doubleml": ctx.cites.keys("doubleml"),
            "sensitivity": ctx.cites.keys("sensitivity"), "clustering": ctx.cites.keys("clustering")}


def _claim(ctx: CausalCtx, finding: dict[str, Any]) -> str:
    """A finding's confirmed claim as a clause ('' when it cannot be restated: a number no artifact backs, or
    causal wording that does not name the treatment)."""
    claim = " ".join(str(finding.get("claim") or "").split()).rstrip(".")
    if not claim or re.search(r"\d", claim):
        return ""
    if causal_wording(claim) and not names_treatment(claim, ctx.treatment.get("phrases") or []):
        return ""
    return escape_latex(lc_first(claim))


def related_work(ctx: CausalCtx) -> str:
    """What is known: the data set's own studies and their confirmed findings (registry dataset.findings), the
    source of the published estimates, and the methods this study uses. Each cited work is said to do what the
    artifacts record of it; nothing is listed by title alone."""
    paras, said = [], set()
    # the data set's own studies and their findings
    by_key: dict[str, list[str]] = {}
    for f in ctx.findings:
        key = str(f["cite"])
        clause = _claim(ctx, f) if ctx.cites.present(key) else ""
        if clause:
            by_key.setdefault(key, []).append(clause)
    lines = []
    for key, claims in by_key.items():
        lines.append(f"{ctx.cites.citet(key)} analysed {ctx.ds['short']} and reported that {claims[0]}."
                     + "".join(f" The same study reports that {c}." for c in claims[1:]))
        said.add(key)
    topic = str(ctx.dataset.get("topic") or "")
    published = {str(pe.get("cite")) for pe in ctx.spec.get("published_estimates") or []}
    others = [k for k in (ctx.cites.keys(topic) if topic else []) if k not in said and k not in published]
    if others:
        lines.append(f"Other work on {ctx.ds['short']} includes{ctx.cites.citep(keys=others)}.")
    pubs = [pe for pe in ctx.spec.get("published_estimates") or [] if ctx.cites.present(str(pe.get("cite")))]
    for key in dict.fromkeys(str(pe["cite"]) for pe in pubs):
        k = sum(1 for pe in pubs if str(pe["cite"]) == key)
        models = "an estimate" if k == 1 else "estimates from several models"
        lines.append(f"{ctx.cites.citet(key)} reported {models} of the effect of {ctx.phrase} on {ctx.the_outcome} "
                     "from these data; Section~\\ref{sec:comparison} compares them with ours.")
    if lines:
        paras.append(" ".join(lines))
    keys = _method_keys(ctx)
    methods = []
    if ctx.randomized:
        if ctx.spec["design"].get("cluster") and keys["clustering"]:
            methods.append(f"With assignment by design, the arms are compared directly; because {_units(ctx)} share "
                           "the clusters of the design, the standard errors are cluster-robust"
                           f"{ctx.cites.citep(keys=keys['clustering'])}.")
        observational = keys["dml"] + keys["doubleml"]
        if observational or keys["sensitivity"]:
            methods.append("Without random assignment, an effect would have to be estimated under conditional "
                           "exchangeability, for instance by double/debiased machine learning"
                           f"{ctx.cites.citep(keys=observational) if observational else ''}, and bounded for "
                           "unmeasured confounding"
                           f"{ctx.cites.citep(keys=keys['sensitivity']) if keys['sensitivity'] else ''}; random "
                           "assignment makes both unnecessary here, which is why this study compares the arms "
                           "directly.")
    else:
        if keys["dml"] or keys["doubleml"]:
            methods.append("Double/debiased machine learning estimates the effect with flexible models of the "
                           "outcome and of the treatment, fitted with cross-fitting, and keeps a valid interval for "
                           f"the effect{ctx.cites.citep(keys=keys['dml'])}"
                           + (f"; we use its implementation in DoubleML{ctx.cites.citep(keys=keys['doubleml'])}"
                              if keys["doubleml"] else "") + ".")
        if keys["sensitivity"]:
            methods.append("Omitted-variable bounds for such estimates say how strong an unmeasured confounder "
                           f"would have to be to change the conclusion{ctx.cites.citep(keys=keys['sensitivity'])}.")
    if methods:
        paras.append(" ".join(methods))
    if not paras:
        note = ctx.t(ctx.lit.get("retrieval_note"), "literature_context.json:retrieval_note")
        paras.append("The literature search returned no verified study to cite" + (f" ({note})." if note else "."))
    return "\n\n".join(paras)


# ---- methods ----------------------------------------------------------------------------------------------------
def _treatment_label(ctx: CausalCtx) -> str:
    """The treatment variable's label in running text ('STAR class type in kindergarten'), else its name."""
    tr = ctx.treatment
    if tr.get("label"):
        return lc_first(ctx.t(tr["label"], "research_spec.json:treatment.label"))
    return _tt(tr["variable"])


def _sample_flow(ctx: CausalCtx) -> str:
    """The rows of the data and where they go: the arms (the analytic frame), the left-out levels, the rows
    without a treatment value, the rows without an outcome, and the analysed rows."""
    n, d = ctx.n, ctx.data
    out = [f"The data hold {n['n_rows']} rows. The analytic frame keeps {n['n_treated']} "
           f"{ctx.arm_units('treated')} (the treated arm) and {n['n_control']} {ctx.arm_units('control')} (the "
           "comparison arm)."]
    label = _treatment_label(ctx)
    levels = list(d.get("excluded_levels") or {})
    if len(levels) == 1:
        out.append(f"Left out are the {n['excluded|' + str(levels[0])]} {_units(ctx)} in the level "
                   f"{escape_latex(str(levels[0]))} of {label}, which is neither arm.")
    elif levels:
        left = [f"{n['excluded|' + str(v)]} in {escape_latex(str(v))}" for v in levels]
        out.append(f"Left out are the {_units(ctx)} of the other levels of {label}, which are neither arm: "
                   f"{join_list(left)}.")
    if d.get("n_missing_treatment"):
        out.append(f"Another {n['n_missing_treatment']} rows had no recorded value of {label} and are not in the "
                   "frame.")
    missing = d.get("outcome_missing") or {}
    if "outmiss|treated" in n and "outmiss|control" in n and (missing.get("treated") or missing.get("control")):
        out.append(f"The outcome is missing for {n['outmiss|treated']} of the {ctx.arm_units('treated')} and "
                   f"{n['outmiss|control']} of {ctx.arm_units('control', those=True)}.")
    elif "outmiss|treated" in n:
        out.append("No outcome is missing.")
    if "n|analysed" in n:
        arms = (f" ({n['n|treated']} treated, {n['n|control']} in the comparison arm)"
                if "n|treated" in n and "n|control" in n else "")
        out.append(f"The estimates use the {n['n|analysed']} {_units(ctx)} with an observed outcome{arms}.")
    return " ".join(out)


def _data(ctx: CausalCtx) -> str:
    ds, spec = ctx.ds, ctx.spec
    name = _the(ds["long"] or ds["short"])
    if ctx.generated:
        src = [f"The data stand in for {name}" + (f", collected by {ds['agency']}" if ds["agency"] else "") + "."]
    else:
        src = [f"The data are {name}" + (f", collected by {ds['agency']}" if ds["agency"] else "") + "."]
        if ds["source"]:
            src.append(f"The rows come from {ds['source']}.")
    if ds["design"]:
        src.append(f"Its design is {_a(ds['design'])}.")
    if ctx.generated:
        src.append(f"The rows are generated data: a stand-in built to resemble {ds['short']}, with a planted effect of "
                   f"{ctx.phrase} on the outcome" + (" (Section~\\ref{sec:recovery})." if ctx.recovery else "."))
    cite = ""
    key = (ctx.provenance.get("data") or {}).get("citation")
    if key and ctx.cites.present(key):
        cite = ctx.cites.citep(keys=[key])
    if cite:
        src[0] = src[0][:-1] + cite + "."
    pop = ctx.t(spec.get("population"), "research_spec.json:population")
    if pop:
        src.append(f"The population is {lc_first(_sentence(pop))}")
    outcome = spec["outcome"]
    sum_of = outcome.get("sum_of")
    what = (" It is the sum of " + join_list([_tt(v) for v in sum_of]) + ".") if sum_of else ""
    src.append(f"The outcome is {ctx.the_outcome} (\\texttt{{{escape_latex(outcome['name'])}}}).{what}")
    tr = ctx.treatment
    src.append(f"The treatment is \\texttt{{{escape_latex(tr['variable'])}}} (``{_treatment_label(ctx)}''): "
               f"{ctx.phrase} (value \\texttt{{{escape_latex(str(tr['treated']))}}}) against {ctx.control_phrase} "
               f"(value \\texttt{{{escape_latex(str(tr['control']))}}}).")
    miss = [c for c in ctx.data.get("covariates") or [] if f"covmiss|{c['name']}" in ctx.n
            and float(c.get("pct_missing") or 0) > 0]
    fill = ""
    if miss:
        fill = (" A missing covariate value is filled with the mean of the observed rows and flagged by an "
                "indicator column; the covariates with missing values are "
                + join_list([f"{escape_latex(ctx.covariate_label(c['name']))} ({ctx.n['covmiss|' + c['name']]})"
                             for c in miss]) + ".")
    frame = f"The covariates enter the analysis as {ctx.n['n_features']} feature columns.{fill}"
    return "\\subsection{Data}\\label{sec:data}\n" + " ".join(src) + "\n\n" + _sample_flow(ctx) + " " + frame


def _covariates(ctx: CausalCtx) -> str:
    covs = ctx.spec.get("covariates") or []
    if not covs:
        return "No covariates are used."
    items = []
    for c in covs:
        wave = f", {escape_latex(str(c['wave']))} wave" if c.get("wave") else ""
        items.append(f"{escape_latex(ctx.covariate_label(c['name']))} (\\texttt{{{escape_latex(c['name'])}}}{wave})")
    checks = ctx.spec.get("time_order") or []
    failed = [c for c in checks if not c.get("ok")]
    if checks and not failed:
        order = "The time-order checks of the specification find every covariate measured before the treatment."
    elif failed:
        order = ("The time-order checks of the specification flag: " + "; ".join(
            ctx.t(c.get("detail") or c.get("check"), f"research_spec.json:time_order.{i}.detail")
            for i, c in enumerate(checks) if not c.get("ok")) + ".")
    else:
        order = "The specification records no time-order check of the covariates."
    return f"The covariates are {join_list(items)}. {order}"


def _without_statement(text: Any, statement: Any) -> str:
    """The identification argument without the assignment statement it may begin with (the Design section prints
    the statement once, before it)."""
    body, head = " ".join(str(text or "").split()), " ".join(str(statement or "").split())
    if head and body.lower().startswith(head.lower()):
        body = body[len(head):].lstrip(" .;:")
    return body


def _with_article(ctx: CausalCtx, text: Any) -> str:
    """`text` with 'the' before the outcome's label where the label follows a preposition bare ('on total of the
    ...' -> 'on the total of the ...')."""
    text = " ".join(str(text or "").split())
    for c in [ctx.spec["outcome"], *(ctx.spec.get("covariates") or [])]:
        raw = " ".join(str(c.get("label") or "").split())
        if raw and clean_label(raw) != raw:  # 'x1 Student's sex' -> 'student's sex'
            text = text.replace(lc_first(raw), lc_first(clean_label(raw))).replace(raw, clean_label(raw))
    label = clean_label(str(ctx.spec["outcome"].get("label") or ""))
    if not label:
        return text
    low = lc_first(label)
    return re.sub(r"\b(on|of|in|for|to)\s+(" + re.escape(low) + "|" + re.escape(label) + r")\b",
                  lambda m: f"{m.group(1)} the {lc_first(m.group(2))}", text)


def _design(ctx: CausalCtx) -> str:
    spec, n, d = ctx.spec, ctx.n, ctx.spec["design"]
    statement = _sentence(ctx.t(d.get("statement"), "research_spec.json:design.statement"))
    est = spec.get("estimand") or {}
    estimand = (f"The estimand is the {escape_latex(str(est.get('name') or 'ATE'))}: "
                + lc_first(_sentence(ctx.t(_with_article(ctx, est.get("statement")),
                                           "research_spec.json:estimand.statement"))))
    ident = _sentence(ctx.t(_with_article(ctx, _without_statement(spec.get("identification"), d.get("statement"))),
                            "research_spec.json:identification"))
    if ctx.randomized:
        parts = [statement]
        unit = escape_latex(str(d.get("unit") or ctx.ds["unit"]))
        blocks = (f"; assignment was made within blocks defined by \\texttt{{{escape_latex(d['blocks'])}}}"
                  + (f" ({n['blocks|n']} blocks)" if "blocks|n" in n else "")) if d.get("blocks") else ""
        parts.append(f"The randomisation unit is the {unit}{blocks}.")
        if d.get("cluster"):
            parts.append(f"Standard errors are cluster-robust at \\texttt{{{escape_latex(d['cluster'])}}}"
                         + (f" ({n['cluster|n']} clusters)" if "cluster|n" in n else "") + ".")
        if ident:
            parts.append(ident)
            parts.append(f"We also assume no interference between {_units(ctx)}: the arm of one does not change the "
                         "outcome of another.")
        else:
            parts.append(f"Because assignment was random, the arms are exchangeable in expectation, and the "
                         f"difference in their mean outcomes estimates the average effect of {ctx.phrase} on the "
                         "outcome; we also assume consistency (the outcome observed is the one under the arm "
                         f"received) and no interference between {_units(ctx)}.")
        parts.append(_covariates(ctx) + " They are used only for the balance table and the adjusted check.")
    elif all(w in ident.lower() for w in ("exchangeability", "positivity", "consistency", "interference")):
        # the specification's argument states the four assumptions itself: print it once, not a second list
        parts = [statement, ident, _covariates(ctx)]
    else:
        parts = [statement,
                 "The treatment was not assigned at random. Identification therefore rests on four assumptions, "
                 "stated here as assumptions: (i) conditional exchangeability: given the covariates listed below, "
                 f"the potential outcomes of {_units(ctx)} in the two arms are the same on average; "
                 f"(ii) positivity: given the covariates, every {escape_latex(ctx.ds['unit'])} has a probability of "
                 "either arm strictly between zero and one; (iii) consistency: the outcome observed is the potential "
                 "outcome under the arm received; and (iv) no interference: the arm of one "
                 f"{escape_latex(ctx.ds['unit'])} does not change the outcome of another.",
                 ident, _covariates(ctx)]
    parts.append(estimand)
    return "\\subsection{Design and identification}\\label{sec:design}\n" + " ".join(p for p in parts if p)


def software(ctx: CausalCtx) -> str:
    """The causal stage's software with versions (results.json:versions: Python, NumPy, pandas, scikit-learn,
    statsmodels, DoubleML) and the workflow engine's (provenance.json:software.snakemake), each version a quoted
    macro; '' when none is recorded. The prediction study's packages of the provenance record are not listed."""
    names = {"python": "Python", "numpy": "NumPy", "pandas": "pandas", "scikit-learn": "scikit-learn",
             "statsmodels": "statsmodels", "doubleml": "DoubleML", "snakemake": "Snakemake"}
    found = [(key, v, f"results.json:versions.{key}") for key, v in (ctx.results.get("versions") or {}).items() if v]
    snake = (ctx.provenance.get("software") or {}).get("snakemake")
    if snake:
        found.append(("snakemake", snake, "provenance.json:software.snakemake"))
    out = []
    for key, v, source in found:
        shown = ctx.m.add(f"Version{''.join(ch for ch in key.title() if ch.isalpha())}", escape_latex(str(v)), str(v),
                          source, quoted=True)
        out.append(f"{names.get(key, escape_latex(key))} {shown}")
    return join_list(out)


def _versions(ctx: CausalCtx) -> str:
    """The software sentence of the Estimation section when the paper has no availability statement (no
    provenance record) to hold it."""
    if ctx.provenance and (ctx.provenance.get("data") or {}).get("kind"):
        return ""
    listed = software(ctx)
    return f"The software versions are {listed}." if listed else ""


def _estimation(ctx: CausalCtx) -> str:
    r, n = ctx.results, ctx.n
    p = r["primary"]
    parts = [f"The naive estimate is the {escape_latex(str(r['naive'].get('estimator') or 'difference in means'))} "
             "of the outcome, with no adjustment."] if r.get("naive") else []
    lib = f" ({_library(ctx, 'primary')})" if p.get("library") else ""
    keys = _method_keys(ctx)
    cite = "" if ctx.randomized else ctx.cites.citep(keys=keys["dml"] + keys["doubleml"]) if (
        keys["dml"] or keys["doubleml"]) else ""
    parts.append(f"The primary estimator is {ctx.estimator('primary')}"
                 + (f", fitted with {lib[2:-1]}" if lib else "") + f"{cite}.")
    if p.get("standard_errors"):
        cl = (ctx.cites.citep(keys=keys["clustering"]) if ctx.spec["design"].get("cluster") and keys["clustering"]
              else "")
        parts.append(f"Its standard errors are {_sentence(ctx.t(p['standard_errors'], 'results.json:primary.standard_errors')).rstrip('.')}{cl}.")
    if isinstance(r.get("adjusted"), dict):
        a = r["adjusted"]
        alib = f" ({_library(ctx, 'adjusted')})" if a.get("library") else ""
        parts.append(f"As a check, {ctx.estimator('adjusted')}" + (f", fitted with {alib[2:-1]}," if alib else "")
                     + " adds the covariates; with random assignment it "
                     "is expected to give a close estimate, usually with a narrower interval.")
    if not ctx.randomized:
        folds = (f" with {n['n_folds']} folds" + (f", repeated {n['n_rep']} times" if "n_rep" in n else "")
                 if "n_folds" in n else "")
        parts.append(f"The nuisance functions are fitted with cross-fitting{folds}, so that no {escape_latex(ctx.ds['unit'])}'s "
                     "prediction uses its own outcome.")
        lr = r.get("learners") or {}
        if lr.get("outcome") or lr.get("propensity"):
            parts.append(f"The outcome model is {ctx.t(lr.get('outcome'), 'results.json:learners.outcome')}; "
                         f"the propensity model is {ctx.t(lr.get('propensity'), 'results.json:learners.propensity')}.")
        if "ov|trimming_threshold" in n:
            parts.append(f"Propensity scores below {n['ov|trimming_threshold']} or above one minus it are trimmed "
                         "to that threshold.")
    if "bal|threshold" in n:
        w = "" if ctx.randomized else ", before and after weighting by the inverse of the estimated propensity"
        parts.append(f"Balance is measured by the standardised mean difference (SMD) of each feature column{w}; "
                     f"an absolute SMD above {n['bal|threshold']} counts as imbalance.")
    parts.append("Attrition is compared by arm: the share of each arm whose outcome is missing, the treated-minus-"
                 "control difference of these shares with its interval, and the balance of the covariates among those "
                 "with an outcome.")
    het = r.get("heterogeneity") or {}
    if het.get("method"):
        method = _sentence(ctx.t(het["method"], "results.json:heterogeneity.method"))
        parts.append(f"Subgroup estimates use {lc_first(method)}"
                     + ("" if "exploratory" in method.lower() else " They are exploratory."))
    seed = r.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        parts.append(f"The random seed is {ctx.m.add('Seed', str(seed), seed, 'results.json:seed')}.")
    parts.append(_versions(ctx))
    return "\\subsection{Estimation}\\label{sec:estimation}\n" + " ".join(x for x in parts if x)


def methods(ctx: CausalCtx) -> str:
    return "\n\n".join([_data(ctx), _design(ctx), _estimation(ctx)])


# ---- results ----------------------------------------------------------------------------------------------------
def _estimates_table(ctx: CausalCtx) -> str:
    rows = []
    names = {"naive": "Naive difference in means", "primary": "Primary", "adjusted": "Covariate-adjusted check"}
    for key in ("naive", "primary", "adjusted"):
        if f"{key}|est" not in ctx.n:
            continue
        n = ctx.n
        rows.append(f"{names[key]} & {n[key + '|est']} & {n.get(key + '|se', '')} & "
                    f"[{n[key + '|lo']}, {n[key + '|hi']}] \\\\")
    return ("\\begin{table}[t]\n\\caption{Estimates of the average effect of " + ctx.phrase + " on "
            + ctx.the_outcome + " (" + ctx.level + " confidence intervals).}\\label{tab:estimates}\n"
            "\\fitcolumn{\\begin{tabular}{lrrr}\n\\toprule\nEstimator & Estimate & SE & Interval \\\\\n\\midrule\n"
            + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}}\n\\end{table}")


def _estimates(ctx: CausalCtx) -> str:
    r, n = ctx.results, ctx.n
    p = r["primary"]
    parts = [_estimates_table(ctx),
             f"Table~\\ref{{tab:estimates}} lists the estimates. The primary estimate of the effect of {ctx.phrase} on "
             f"{ctx.the_outcome} is {_est(ctx, 'primary')}"
             + (f", {n['primary|pp']}" if "primary|pp" in n else "") + ".", _meaning(ctx)]
    if "naive|est" in n:
        parts.append(f"The naive difference in means is {_est(ctx, 'naive')}.")
    if "adjusted|est" in n:
        moved = ctx.m.add("AdjustedShift", ctx.fmt(abs(r["adjusted"]["estimate"] - p["estimate"])),
                          abs(r["adjusted"]["estimate"] - p["estimate"]),
                          "|results.json:adjusted.estimate - results.json:primary.estimate|")
        parts.append(f"The covariate-adjusted check gives {_est(ctx, 'adjusted')}; adjusting for the covariates "
                     f"moves the point estimate by {moved}.")
    return "\\subsection{Estimates}\\label{sec:estimates}\n" + " ".join(x for x in parts if x)


def _balance(ctx: CausalCtx) -> str:
    bal, n = ctx.results.get("balance") or {}, ctx.n
    rows = bal.get("rows") or []
    if not rows:
        return ""
    weighted = any(isinstance(r.get("smd_weighted"), (int, float)) for r in rows)
    order = sorted(range(len(rows)), key=lambda i: -abs(float(rows[i].get("smd") or 0)))[:BALANCE_ROWS]
    lines = []
    for i in order:
        row = rows[i]
        cells = [ctx.feature_label(row["feature"], row.get("covariate")), n.get(f"bal|{i}|mean_treated", ""),
                 n.get(f"bal|{i}|mean_control", ""), n.get(f"bal|{i}|smd", "")]
        if weighted:
            cells.append(n.get(f"bal|{i}|smd_weighted", "--"))
        lines.append(" & ".join(cells) + " \\\\")
    shown = ("" if len(rows) <= BALANCE_ROWS else
             f" The {number_word(len(order))} columns with the largest absolute SMD of {n['bal|rows']} are shown.")
    head = "Feature & Treated & Control & SMD" + (" & Weighted" if weighted else "")
    table = ("\\begin{table}[t]\n\\caption{Covariate balance: means by arm and standardised mean differences (SMD)"
             + (" before and after weighting" if weighted else "") + "." + shown + "}\\label{tab:balance}\n"
             "\\fitcolumn{\\begin{tabular}{l" + "r" * (4 if weighted else 3) + "}\n\\toprule\n" + head
             + " \\\\\n\\midrule\n" + "\n".join(lines) + "\n\\bottomrule\n\\end{tabular}}\n\\end{table}")
    text = ["Table~\\ref{tab:balance} shows the balance of the covariates."]
    if "bal|max_abs_smd" in n:
        above = (f"; {n['bal|n_above']} of {n['bal|rows']} feature columns are above {n['bal|threshold']}"
                 if "bal|n_above" in n and "bal|threshold" in n else "")
        text.append(f"The largest absolute SMD before any weighting is {n['bal|max_abs_smd']}{above}.")
    if "bal|max_abs_smd_weighted" in n:
        above = (f" ({n['bal|n_above_weighted']} above the threshold)" if "bal|n_above_weighted" in n else "")
        text.append(f"After weighting it is {n['bal|max_abs_smd_weighted']}{above}.")
    if ctx.randomized:
        text.append("In a randomized design this table checks the randomisation: an imbalance would point to a "
                    "problem with the assignment or with the sample, not to a confounder.")
    fig = ""
    if "balance" in ctx.figures:
        fig = ("\\begin{figure}[t]\n\\centering\n\\includegraphics[width=\\columnwidth]{" + ctx.figures["balance"]
               + "}\n\\caption{Absolute standardised mean differences of the feature columns"
               + (" before and after weighting" if weighted else "") + "."
               + (f" The {FIGURE_ROWS_WORD} columns with the largest absolute SMD of {n['bal|rows']} are shown."
                  if len(rows) > FIGURE_ROWS else "") + "}\\label{fig:balance}\n\\end{figure}")
        text.append("Figure~\\ref{fig:balance} plots them.")
    return "\\subsection{Balance}\\label{sec:balance}\n" + "\n".join(x for x in (table, fig) if x) + "\n" + " ".join(text)


def _attrition(ctx: CausalCtx) -> str:
    att, n = ctx.results.get("attrition") or {}, ctx.n
    if "att|missing_treated" not in n:
        return ""
    if not att.get("missing_treated") and not att.get("missing_control"):
        return ("\\subsection{Attrition}\\label{sec:attrition}\n"
                f"Every {ctx.ds['unit']} of the frame has an observed outcome, so neither arm lost members.")
    parts = [f"The outcome is missing for {n['att|missing_treated']} of the {ctx.arm_units('treated')} "
             f"({n.get('att|rate_treated', '')}) and {n['att|missing_control']} of "
             f"{ctx.arm_units('control', those=True)} ({n.get('att|rate_control', '')})."]
    if "att|difference" in n:
        ci = (f" ({ctx.level} CI [{n['att|ci_low']}, {n['att|ci_high']}]"
              + (f", {n['att|pp']}" if "att|pp" in n else "") + ")") if "att|ci_low" in n else ""
        parts.append(f"The treated-minus-control difference of the missing shares is {n['att|difference']} percentage "
                     f"points{ci}.")
        lo, hi = att.get("ci_low"), att.get("ci_high")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
            parts.append("Its interval excludes zero: the arms lost different shares of their members, so the "
                         "analysed arms may no longer be comparable." if not _covers(lo, hi, 0) else
                         "Its interval includes zero: the data do not show an unequal loss by arm.")
    if "att|smd" in n and ctx.randomized:  # in an observational design the arms differ by design, not by loss
        parts.append(f"Among those with an outcome, the largest absolute SMD of the covariates is {n['att|smd']}.")
    return "\\subsection{Attrition}\\label{sec:attrition}\n" + " ".join(parts)


def _overlap(ctx: CausalCtx) -> str:
    n = ctx.n
    if ctx.randomized or "ov|propensity_min" not in n:
        return ""
    parts = [f"The estimated propensity scores lie between {n['ov|propensity_min']} and {n['ov|propensity_max']}."]
    if "ov|share_below" in n and "ov|bound|0" in n:
        parts.append(f"Of the {_units(ctx)}, {n['ov|share_below']} have a score below {n['ov|bound|0']} and "
                     f"{n.get('ov|share_above', '')} a score above {n.get('ov|bound|1', '')}.")
    if "ov|n_trimmed" in n:
        parts.append(f"Trimming at {n.get('ov|trimming_threshold', '')} touches {n['ov|n_trimmed']} {_units(ctx)}.")
    fig = ""
    if "overlap" in ctx.figures:
        fig = ("\\begin{figure}[t]\n\\centering\n\\includegraphics[width=\\columnwidth]{" + ctx.figures["overlap"]
               + "}\n\\caption{Estimated propensity scores by arm.}\\label{fig:overlap}\n\\end{figure}")
        parts.append("Figure~\\ref{fig:overlap} shows the scores by arm.")
    parts.append("Scores close to zero or one would mean that some covariate profiles are seen in one arm only, where "
                 "the estimate extrapolates.")
    return "\\subsection{Overlap}\\label{sec:overlap}\n" + (fig + "\n" if fig else "") + " ".join(parts)


def _sensitivity(ctx: CausalCtx) -> str:
    n, se = ctx.n, ctx.results.get("sensitivity") or {}
    if ctx.randomized or not se:
        return ""
    kind = ctx.t(se.get("kind") or "omitted-variable bounds", "results.json:sensitivity.kind")
    kind += ctx.cites.citep(keys=_method_keys(ctx)["sensitivity"]) if _method_keys(ctx)["sensitivity"] else ""
    parts = [f"The sensitivity analysis, {kind}, posits an unobserved confounder that explains "
             f"{n.get('sens|cf_y', '')} of the residual variation of the outcome and {n.get('sens|cf_d', '')} of that of "
             f"the treatment (correlation parameter {n.get('sens|rho', '')})."]
    if "sens|theta_lower" in n:
        parts.append(f"With such a confounder, the estimate of the effect of {ctx.phrase} could lie anywhere from "
                     f"{n['sens|theta_lower']} to {n['sens|theta_upper']}, and its interval from "
                     f"{n.get('sens|ci_lower', '')} to {n.get('sens|ci_upper', '')}.")
        lo, hi = se.get("ci_lower"), se.get("ci_upper")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
            parts.append("That interval excludes zero." if not _covers(lo, hi, 0) else "That interval includes zero.")
    if "sens|rv" in n:
        parts.append(f"The robustness value RV = {n['sens|rv']} is the share of the residual variation of both the "
                     "treatment and the outcome that a confounder would have to explain to bring the point estimate "
                     "to zero.")
    if "sens|rva" in n:
        parts.append(f"The value RVa = {n['sens|rva']} is the share it would have to explain to bring the interval to "
                     "include zero.")
    return "\\subsection{Sensitivity to unmeasured confounding}\\label{sec:sensitivity}\n" + " ".join(parts)


def _subgroup_label(ctx: CausalCtx, name: str) -> str:
    for s in ctx.spec.get("subgroups") or []:
        if s.get("name") == name and s.get("label"):
            return escape_latex(clean_label(str(s["label"])))
    return escape_latex(ctx.covariate_label(name))


def _heterogeneity(ctx: CausalCtx) -> str:
    het, n = ctx.results.get("heterogeneity") or {}, ctx.n
    groups = het.get("groups") or []
    skipped = het.get("skipped") or []
    if not groups and not skipped:
        return ""
    parts = []
    if groups:
        lines = [f"{_subgroup_label(ctx, g['attribute'])} & "
                 f"{ctx.t(g['group'], f'results.json:heterogeneity.groups.{i}.group')} & {n.get(f'het|{i}|n', '')} & "
                 f"{n.get(f'het{i}|est', '')} & [{n.get(f'het{i}|lo', '')}, {n.get(f'het{i}|hi', '')}] \\\\"
                 for i, g in enumerate(groups)]
        parts.append("\\begin{table}[t]\n\\caption{Exploratory subgroup estimates of the average effect of "
                     + ctx.phrase + " (" + ctx.level + " confidence intervals, not adjusted for multiple comparisons)."
                     "}\\label{tab:heterogeneity}\n\\fitcolumn{\\begin{tabular}{llrrr}\n\\toprule\nAttribute & Group & "
                     "N & Estimate & Interval \\\\\n\\midrule\n" + "\n".join(lines)
                     + "\n\\bottomrule\n\\end{tabular}}\n\\end{table}")
        parts.append(f"Table~\\ref{{tab:heterogeneity}} lists estimates of the effect of {ctx.phrase} within "
                     "subgroups. They are exploratory: the subgroups were not chosen to test a hypothesis, the intervals "
                     "are not adjusted for the number of groups, and a subgroup's interval is wide when it is small.")
    if skipped:
        by_attr: dict[str, list[str]] = {}
        for s in skipped:
            by_attr.setdefault(str(s.get("attribute") or ""), []).append(escape_latex(str(s.get("group"))))
        named = "; ".join(_short_label(_subgroup_label(ctx, a))
                          + (": " + "; ".join(g) if any("," in x for x in g) else " " + join_list(g))
                          for a, g in by_attr.items())
        few = _skip_rule(ctx, skipped)
        if few:
            parts.append(f"Groups with {few} have no estimate: {named}.")
        else:
            why = list(dict.fromkeys(ctx.t(s.get("reason"), f"results.json:heterogeneity.skipped.{i}.reason")
                                     for i, s in enumerate(skipped) if s.get("reason")))
            parts.append(f"No estimate is reported for {named}" + (f" ({'; '.join(why)})." if why else "."))
    return "\\subsection{Heterogeneity (exploratory)}\\label{sec:heterogeneity}\n" + " ".join(parts)


def _short_label(label: str) -> str:
    """A subgroup attribute's label without its trailing 'of the student' ('Ethnicity of the student' ->
    'Ethnicity')."""
    return re.sub(r"\s+of\s+(the|a|an)\s+\w+$", "", label) or label


def _skip_rule(ctx: CausalCtx, skipped: list[dict[str, Any]]) -> str:
    """'fewer than 50 analysed students in an arm' when every skip gives that rule in its reason (the number a
    quoted macro of the first reason), else ''."""
    reasons = [str(s.get("reason") or "") for s in skipped]
    found = [re.match(r"fewer than (\d+) analysed rows in an arm", r) for r in reasons]
    if not all(found) or len({f.group(1) for f in found if f}) != 1:
        return ""
    first = found[0]
    assert first is not None
    k = ctx.m.quoted(first.group(1), "results.json:heterogeneity.skipped.0.reason")
    return f"fewer than {k} analysed {_units(ctx)} in an arm"


def results(ctx: CausalCtx) -> str:
    return "\n\n".join(x for x in (_estimates(ctx), _balance(ctx), _attrition(ctx), _overlap(ctx), _sensitivity(ctx),
                                   _heterogeneity(ctx)) if x)


# ---- discussion: comparison, validation, review -----------------------------------------------------------------
def _comparison(ctx: CausalCtx) -> str:
    """One paragraph and a table (source, where, estimator, published estimate (SE), agrees?): our estimate once,
    the agreement with each published one, and what differs between their analyses and ours."""
    pubs = ctx.spec.get("published_estimates") or []
    if not pubs:
        return ""
    p, n = _primary(ctx), ctx.n
    rows, agree = [], 0
    for i, pe in enumerate(pubs):
        key = str(pe.get("cite") or "")
        who = ctx.cites.citet(key) if ctx.cites.present(key) else "published analysis"
        where = ctx.t(pe.get("where"), f"research_spec.json:published_estimates.{i}.where") or "--"
        estimator = ctx.t(pe.get("estimator"), f"research_spec.json:published_estimates.{i}.estimator") or "--"
        est = n.get(f"pub|{i}|estimate", "--") + (f" ({n[f'pub|{i}|se']})" if f"pub|{i}|se" in n else "")
        inside = _covers(p["ci_low"], p["ci_high"], float(pe["estimate"]))
        agree += inside
        rows.append(f"{who} & {where} & {estimator} & {est} & {'yes' if inside else 'no'} \\\\")
    table = ("\\begin{table}[t]\n\\caption{Published estimates of the effect of " + ctx.phrase + " on "
             + ctx.the_outcome + " from these data (standard errors in parentheses). Agrees: the published estimate "
             "lies inside the " + ctx.level + " confidence interval of our primary estimate.}\\label{tab:published}\n"
             "\\footnotesize\n\\begin{tabularx}{\\columnwidth}{@{}l>{\\raggedright\\arraybackslash}"
             "X>{\\raggedright\\arraybackslash}Xrc@{}}\n\\toprule\n"
             "Source & Where & Estimator & Estimate & Agrees \\\\\n\\midrule\n" + "\n".join(rows)
             + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")
    k = len(pubs)
    how = ("all of them" if agree == k and k > 1 else "it" if agree == k else "none of them" if agree == 0 else
           f"{number_word(agree)} of the {number_word(k)}")
    one = "estimate" if k == 1 else "estimates"
    inside = "it lies" if k == 1 else "each lies"
    verdict = (f"agrees with {how}: {inside} inside our interval" if agree == k else
               f"agrees with {how}" if agree else
               ("does not agree with it: it lies outside our interval" if k == 1 else
                "agrees with none of them: each lies outside our interval"))
    text = [f"Table~\\ref{{tab:published}} lists the published {one} of the effect of {ctx.phrase} from these data. "
            f"Our primary estimate, {_est(ctx, 'primary')}, {verdict}."]
    differs = []
    others = [escape_latex(str(v)) for v in ctx.treatment.get("other_levels") or []]
    if others:
        differs.append(f"the published model{'' if k == 1 else 's'} kept the {join_list([_tt(v) for v in ctx.treatment['other_levels']])} "
                       f"level{'s' if len(others) > 1 else ''} of {_treatment_label(ctx)}, which our comparison "
                       "leaves out")
    outcomes = {str(pe["outcome"]) for pe in pubs if pe.get("outcome")} - {str(ctx.spec["outcome"]["name"])}
    if outcomes:
        differs.append(f"the published {one} {'is' if k == 1 else 'are'} on "
                       f"{join_list([_tt(o) for o in sorted(outcomes)])}, not on {_tt(ctx.spec['outcome']['name'])}")
    if any(pe.get("estimator") for pe in pubs):
        differs.append("their covariates are as the Estimator column states")
    for i, pe in enumerate(pubs):
        if pe.get("note"):
            differs.append(lc_first(ctx.t(pe["note"], f"research_spec.json:published_estimates.{i}.note")).rstrip("."))
    if differs:
        text.append(f"What differs: {'; '.join(differs)}.")
    text.append(f"Our sample is the {n.get('n|analysed', '')} {_units(ctx)} of the frame with an observed outcome, "
                "so agreement is a check, not a replication.")
    return ("\\subsection{Comparison with published estimates}\\label{sec:comparison}\n" + table + "\n"
            + " ".join(text))


def _validation(ctx: CausalCtx) -> str:
    rec, n = ctx.recovery, ctx.n
    if not rec or "rec|planted_ate" not in n:
        return ""
    parts = [f"The generated data plant an average effect of {ctx.phrase} of {n['rec|planted_ate']}. The primary "
             f"estimate is {n['rec|estimate']} ({ctx.level} CI [{n['rec|ci_low']}, {n['rec|ci_high']}]); the interval "
             + ("covers the planted value." if rec.get("covered") else "does not cover the planted value.")]
    parts.append(f"The naive difference in means is {n['rec|naive']} ({ctx.level} CI [{n['rec|naive_ci_low']}, "
                 f"{n['rec|naive_ci_high']}]); its interval "
                 + ("also covers the planted value." if rec.get("naive_covered") else
                    "does not cover the planted value, as expected when uptake depends on the covariates."
                    if not ctx.randomized else "does not cover the planted value."))
    g = rec.get("group") or {}
    if "recg|planted" in n:
        covered = "covers" if g.get("covered") else "does not cover"
        parts.append(f"For the group {escape_latex(str(g.get('group')))} of {_subgroup_label(ctx, str(g.get('attribute')))}, "
                     f"the planted effect of {ctx.phrase} is {n['recg|planted']}; its exploratory estimate is "
                     f"{n['recg|estimate']} ({ctx.level} CI [{n['recg|ci_low']}, {n['recg|ci_high']}]), which "
                     f"{covered} it.")
    return "\\subsection{Validation against known truth}\\label{sec:recovery}\n" + " ".join(parts)


def _review_fact(ctx: CausalCtx, item: str) -> str:
    """The one result that decided a checklist item, as a clause through the macros ('' when the results do not
    hold it)."""
    n, units = ctx.n, _units(ctx)
    if item == "comparison_group" and "n|treated" in n and "n|control" in n:
        return f"{n['n|treated']} treated and {n['n|control']} comparison {units} have an observed outcome"
    if item == "identification":
        return "Section~\\ref{sec:design} states the design and the identification argument"
    if item == "pre_treatment":
        return f"the {n['n_covariates']} covariates are measured before the treatment"
    if item == "overlap":
        if ctx.randomized:
            return "the treatment was assigned at random, so no propensity is estimated"
        if "ov|propensity_min" in n:
            return f"the estimated propensities lie between {n['ov|propensity_min']} and {n['ov|propensity_max']}"
    if item == "balance":
        limit = (f", against the checklist's limit of {n['rev|smd_threshold']} (the balance table counts an absolute "
                 f"SMD above {n['bal|threshold']} as imbalance)" if "rev|smd_threshold" in n else "")
        if "bal|max_abs_smd_weighted" in n:
            return f"the largest absolute SMD after weighting is {n['bal|max_abs_smd_weighted']}{limit}"
        if "bal|max_abs_smd" in n:
            return f"the largest absolute SMD is {n['bal|max_abs_smd']}{limit}"
    if item == "attrition" and "att|difference" in n:
        att = ctx.results.get("attrition") or {}
        if not (att.get("missing_treated") or att.get("missing_control")):
            return "no outcome is missing in either arm"
        return f"the arms' shares with a missing outcome differ by {n['att|difference']} percentage points"
    if item == "sensitivity":
        if ctx.randomized:
            return "a randomized comparison does not need it"
        if "sens|rv" in n:
            return f"the robustness value is {n['sens|rv']}"
    if item == "heterogeneity_exploratory":
        return f"the {n['het|n_groups']} subgroup estimates are labelled exploratory"
    return ""


def _review(ctx: CausalCtx) -> str:
    """The Critic's verdict and its checklist: one sentence per item (label, passed or failed, the number that
    decided it), from the results rather than the Critic's log."""
    rv, n = ctx.review, ctx.n
    checklist = rv.get("checklist") or []
    verdict = escape_latex(str(rv.get("verdict") or "none"))
    head = (f"The automated Critic checked the design against a causal checklist of {n['rev|items']} items, of which "
            f"{n['rev|passed']} passed; its verdict is {verdict}.")
    if not checklist:
        return "\\subsection{Review}\\label{sec:review}\n" + head
    items = []
    for c in checklist:
        label = escape_latex(str(c.get("label") or c.get("id")))
        status = "passed" if c.get("passed") else f"failed ({escape_latex(str(c.get('severity') or 'unrated'))})"
        fact = _review_fact(ctx, str(c.get("id")))
        items.append(f"\\item {label}: {status}" + (f"; {fact}." if fact else "."))
    return ("\\subsection{Review}\\label{sec:review}\n" + head + "\n\\begin{itemize}\n" + "\n".join(items)
            + "\n\\end{itemize}")


def discussion(ctx: CausalCtx) -> str:
    return "\n\n".join(x for x in (_comparison(ctx), _validation(ctx), _review(ctx)) if x)


# ---- limitations and conclusion ---------------------------------------------------------------------------------
def _checks_found(ctx: CausalCtx) -> str:
    """What the balance and attrition checks (and, observational, the sensitivity analysis) found, in a sentence
    each."""
    n, r = ctx.n, ctx.results
    bal, att = r.get("balance") or {}, r.get("attrition") or {}
    out = []
    weighted = "bal|max_abs_smd_weighted" in n
    key, above = ("bal|max_abs_smd_weighted", bal.get("n_above_weighted")) if weighted else \
        ("bal|max_abs_smd", bal.get("n_above"))
    if key in n and "bal|threshold" in n and isinstance(above, int):
        count = n["bal|n_above_weighted" if weighted else "bal|n_above"]
        out.append(f"The largest absolute SMD of the covariates{' after weighting' if weighted else ''} is {n[key]}, "
                   + (f"and no feature column exceeds {n['bal|threshold']}." if above == 0 else
                      f"and {count} feature columns exceed {n['bal|threshold']}."))
    lo, hi = att.get("ci_low"), att.get("ci_high")
    lost = bool(att.get("missing_treated") or att.get("missing_control"))
    if "att|difference" in n and lost and isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        out.append(f"The arms' shares with a missing outcome differ by {n['att|difference']} percentage points "
                   f"({ctx.level} CI [{n['att|ci_low']}, {n['att|ci_high']}]), an interval that "
                   + ("includes zero." if _covers(lo, hi, 0) else "excludes zero, so the analysed arms may differ."))
    if not ctx.randomized and "sens|rv" in n:
        out.append(f"The robustness value is {n['sens|rv']}: an unmeasured confounder would have to explain that share "
                   "of the residual variation of both the treatment and the outcome to bring the estimate to zero.")
    return " ".join(out)


def limitations(ctx: CausalCtx) -> str:
    n, r = ctx.n, ctx.results
    items = []
    att = r.get("attrition") or {}
    if "att|rate_treated" in n and (att.get("missing_treated") or att.get("missing_control")):
        items.append(f"\\textbf{{Attrition.}} The estimates use only the {_units(ctx)} with an observed outcome (the "
                     f"outcome is missing for {n['att|rate_treated']} of one arm and {n['att|rate_control']} of the "
                     f"other). If those who left would have responded to {ctx.phrase} differently from those who "
                     "stayed, the estimate describes the stayers, not everyone in the arms.")
    if not ctx.generated:
        items.append(f"\\textbf{{One sample.}} The data come from one study, {ctx.ds['short']}; the estimate refers to "
                     "its population and period, and nothing here shows that it carries over to other settings, places "
                     "or times.")
    if any(str(f).endswith("__missing") for f in ctx.data.get("features") or []):
        items.append("\\textbf{Missing covariates.} Missing covariate values were filled with the mean and flagged "
                     "by indicators; this keeps every row but adjusts only for the fact of missingness, not for the "
                     "values that are missing.")
    if (r.get("heterogeneity") or {}).get("groups"):
        items.append("\\textbf{Exploratory subgroups.} The subgroup estimates are exploratory: with several groups "
                     "and unadjusted intervals, one of them can look distinct by chance.")
    if not ctx.randomized:
        sens = ""
        if "sens|rv" in n:
            sens = (f" The sensitivity analysis says how strong that confounder would have to be: one that explains "
                    f"{n['sens|rv']} of the residual variation of both the treatment and the outcome would bring the "
                    "point estimate to zero.")
        items.append("\\textbf{Untestable exchangeability.} Conditional exchangeability cannot be tested with these "
                     "data: a confounder that is not among the covariates would bias the estimate." + sens)
    if ctx.generated:
        items.append("\\textbf{Generated data.} The rows are generated: the analysis shows whether the method "
                     "recovers a planted effect, and says nothing about real students.")
    body = "\n".join(f"\\item {x}" for x in items)
    p = _primary(ctx)
    excl = _excludes_zero(p)
    verdict = ("" if excl is None else
               f" Under {'random assignment' if ctx.randomized else 'the stated assumptions'}, the data "
               + ("support a nonzero average effect of " + ctx.phrase + "." if excl else
                  "are compatible with no average effect of " + ctx.phrase + "."))
    where = f"generated data standing in for {ctx.ds['short']}" if ctx.generated else ctx.ds["short"]
    conclusion = " ".join(x for x in (
        f"We estimated the average effect of {ctx.phrase} rather than {ctx.control_phrase} on "
        f"{ctx.the_outcome} in {where} at {_est(ctx, 'primary')}.{verdict}", _checks_found(ctx),
        "On generated data, the method was also checked against a planted effect (Section~\\ref{sec:recovery})."
        if ctx.recovery and "rec|planted_ate" in n else "") if x)
    return ("\\begin{itemize}\n" + body + "\n\\end{itemize}\n\n\\section{Conclusion}\\label{sec:conclusion}\n"
            + conclusion)


#: the sections with running text, in the order they are written (numbers are defined before, in paper.py)
WRITTEN = (("ABSTRACT", abstract), ("INTRODUCTION", introduction), ("RELATED_WORK", related_work),
           ("METHODS", methods), ("RESULTS", results), ("DISCUSSION", discussion), ("LIMITATIONS", limitations))
