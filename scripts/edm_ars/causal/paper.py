"""The causal study's paper: paper.tex, numbers.tex, numbers.json, references.bib and figures/ from the causal round's
artifacts (research_spec.json, literature_context.json, data_report.json, results.json, review_report.json and, when
the run has them, provenance.json and recovery.json).

The prediction paper's machinery is reused: the fixed template and its slots (writer.paper.fill_slot), the number
macros with their recorded sources (writer.macros.MacroTable: every number printed is a macro that `verify-paper`
reconciles with the artifacts listed in sources.json), citations from retrieval only (writer.integrity), the author
line and the availability statement (writer.sections.front, writer.sections.provenance). The prose is written by
causal/sections.py; the numbers are registered here (:func:`register_numbers`) before any section is written.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from edm_ars.causal.paper_context import CausalCtx
from edm_ars.core.errors import EdmArsError
from edm_ars.core.text import word_count
from edm_ars.formulate.bibliography import parse_bibtex
from edm_ars.writer.context import Citations, Ctx
from edm_ars.writer.macros import MacroTable, fmt_metric, fmt_p, macro_name
from edm_ars.writer.paper import assemble, raw_numbers
from edm_ars.writer.phrases import Phrases

#: the sections whose words are counted in the summary (as the prediction paper's)
TEXT_SECTIONS = ("ABSTRACT", "INTRODUCTION", "RELATED_WORK", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS")
#: the causal figures (edm_ars.causal.figures.causal_figures), copied when present: PDF preferred, else PNG
FIGURES = ("balance", "overlap")
ESTIMATES = ("naive", "primary", "adjusted")


# ---- numbers ---------------------------------------------------------------------------------------------------
def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _signed(value: float, digits: int) -> str:
    return fmt_metric(value, digits)


def _p_value(ctx: CausalCtx, key: str, value: float, name: str, source: str) -> None:
    """The macro of a p-value under n[key|p], and under n[key|pp] the phrase that prints it: 'p = 0.804', or
    'p < 0.001' (the macro then holds the bound, '$<0.001$', which verify-paper reads as a bound)."""
    small = value < 0.0005
    macro = ctx.m.add(name, "$<0.001$" if small else fmt_p(value), float(value), source)
    ctx.n[f"{key}|p"] = macro
    ctx.n[f"{key}|pp"] = f"$p$ {macro}" if small else f"$p$ = {macro}"


def _estimate(ctx: CausalCtx, key: str, rec: dict[str, Any], src: str, *, digits: int | None = None) -> None:
    """Macros of one estimate (estimate, se, ci_low, ci_high, p_value) under n[key|est], n[key|se], ... (and the
    p-value's phrase under n[key|pp])."""
    m, n, d = ctx.m, ctx.n, digits or ctx.digits
    for field_, short in (("estimate", "est"), ("se", "se"), ("ci_low", "lo"), ("ci_high", "hi"), ("p_value", "p")):
        v = rec.get(field_)
        if not _num(v):
            continue
        if short == "p":
            _p_value(ctx, key, float(v), macro_name(key, short), f"{src}.{field_}")
            continue
        n[f"{key}|{short}"] = m.add(macro_name(key, short), _signed(v, d), float(v), f"{src}.{field_}")


def register_numbers(ctx: CausalCtx) -> None:
    """Define every macro the sections print, from the artifacts, in a stable order (data, then results)."""
    m, n, d, r, spec = ctx.m, ctx.n, ctx.data, ctx.results, ctx.spec
    alpha = r.get("alpha", 0.05)
    if not _num(alpha) or not 0 < alpha < 1:
        raise EdmArsError(f"results.json: alpha must be a number between 0 and 1, not {alpha!r}")
    n["level"] = ("95\\%" if abs(alpha - 0.05) < 1e-12 else
                  m.add("ConfidenceLevel", f"{100 * (1 - alpha):g}\\%", 100 * (1 - alpha),
                        "100 - 100 * results.json:alpha"))
    primary = r.get("primary") or {}
    if not _num(primary.get("estimate")):
        raise EdmArsError("results.json: primary.estimate is missing: the causal paper reports the primary estimate")
    ctx.digits = 3 if _num(primary.get("se")) and abs(primary["se"]) < 0.05 else 2
    # the data
    for key in ("n_rows", "n_treated", "n_control", "n_missing_treatment"):
        if not _num(d.get(key)):
            raise EdmArsError(f"data_report.json: {key} is missing or not a number ({d.get(key)!r})")
        n[key] = m.count(macro_name("Data", key), d[key], f"data_report.json:{key}")
    for value, count in (d.get("excluded_levels") or {}).items():
        if re.search(r"[\[\]()|]", str(value)):
            raise EdmArsError(f"data_report.json: excluded level {value!r} holds a bracket or a bar, which a "
                              "number's source path cannot name")
        n[f"excluded|{value}"] = m.count(macro_name("Excluded", value), count,
                                         f"data_report.json:excluded_levels.{value}")
    for arm in ("treated", "control"):
        v = (d.get("outcome_missing") or {}).get(arm)
        if _num(v):
            n[f"outmiss|{arm}"] = m.count(macro_name("Outcome missing", arm), v,
                                          f"data_report.json:outcome_missing.{arm}")
    for part in ("blocks", "cluster"):
        rec = d.get(part)
        if isinstance(rec, dict) and _num(rec.get("n")):
            n[f"{part}|n"] = m.count(macro_name("Data", part, "N"), rec["n"], f"data_report.json:{part}.n")
    n["n_features"] = m.count("NFeatures", len(d.get("features") or []), "len(data_report.json:features)")
    for i, c in enumerate(d.get("covariates") or []):
        if _num(c.get("pct_missing")):
            n[f"covmiss|{c['name']}"] = m.pct(macro_name("Miss", c["name"]), c["pct_missing"],
                                              f"data_report.json:covariates.{i}.pct_missing")
    # the analysed sample
    for key in ("analysed", "treated", "control", "clusters", "blocks"):
        v = (r.get("n") or {}).get(key)
        if _num(v):
            n[f"n|{key}"] = m.count(macro_name("Analysed", key), v, f"results.json:n.{key}")
    for key in ("n_folds", "n_rep"):
        if _num(r.get(key)):
            n[key] = m.add(macro_name(key), str(int(r[key])), int(r[key]), f"results.json:{key}")
    # the estimates
    for key in ESTIMATES:
        if isinstance(r.get(key), dict):
            _estimate(ctx, key, r[key], f"results.json:{key}")
    # balance
    bal = r.get("balance") or {}
    if _num(bal.get("threshold")):
        n["bal|threshold"] = m.add("BalanceThreshold", fmt_metric(bal["threshold"], 2), float(bal["threshold"]),
                                   "results.json:balance.threshold")
    for key, fmt in (("max_abs_smd", "metric"), ("max_abs_smd_weighted", "metric"), ("n_above", "count"),
                     ("n_above_weighted", "count")):
        v = bal.get(key)
        if _num(v):
            n[f"bal|{key}"] = (m.metric(macro_name("Balance", key), v, f"results.json:balance.{key}")
                               if fmt == "metric" else m.count(macro_name("Balance", key), v,
                                                               f"results.json:balance.{key}"))
    n["bal|rows"] = m.count("BalanceRows", len(bal.get("rows") or []), "len(results.json:balance.rows)")
    for i, row in enumerate(bal.get("rows") or []):
        for key in ("mean_treated", "mean_control", "smd", "smd_weighted"):
            if _num(row.get(key)):
                n[f"bal|{i}|{key}"] = m.metric(macro_name("Balance row", str(i), key), row[key],
                                               f"results.json:balance.rows.{i}.{key}")
    # attrition
    att = r.get("attrition") or {}
    for key in ("missing_treated", "missing_control"):
        if _num(att.get(key)):
            n[f"att|{key}"] = m.count(macro_name("Attrition", key), att[key], f"results.json:attrition.{key}")
    for key in ("rate_treated", "rate_control"):
        if _num(att.get(key)):
            n[f"att|{key}"] = m.pct(macro_name("Attrition", key), 100 * att[key], f"100 * results.json:attrition.{key}")
    for key in ("difference", "ci_low", "ci_high"):
        if _num(att.get(key)):
            n[f"att|{key}"] = m.add(macro_name("Attrition", key, "points"), _signed(100 * att[key], 1),
                                    100 * float(att[key]), f"100 * results.json:attrition.{key}")
    if _num(att.get("p_value")):
        _p_value(ctx, "att", float(att["p_value"]), "AttritionP", "results.json:attrition.p_value")
    if _num(att.get("stayers_max_abs_smd")):
        n["att|smd"] = m.metric("AttritionStayersSMD", att["stayers_max_abs_smd"],
                                "results.json:attrition.stayers_max_abs_smd")
    # overlap (observational)
    ov = r.get("overlap") or {}
    for key in ("propensity_min", "propensity_max", "trimming_threshold"):
        if _num(ov.get(key)):
            n[f"ov|{key}"] = m.metric(macro_name("Overlap", key), ov[key], f"results.json:overlap.{key}")
    for key in ("share_below", "share_above"):
        if _num(ov.get(key)):
            n[f"ov|{key}"] = m.pct(macro_name("Overlap", key), 100 * ov[key], f"100 * results.json:overlap.{key}")
    for i, b in enumerate(ov.get("bounds") or []):
        if _num(b):
            n[f"ov|bound|{i}"] = m.add(macro_name("Overlap bound", str(i)), fmt_metric(b, 2), float(b),
                                       f"results.json:overlap.bounds.{i}")
    if _num(ov.get("n_trimmed")):
        n["ov|n_trimmed"] = m.count("OverlapNTrimmed", ov["n_trimmed"], "results.json:overlap.n_trimmed")
    # sensitivity (observational)
    se = r.get("sensitivity") or {}
    for key in ("cf_y", "cf_d"):
        if _num(se.get(key)):
            n[f"sens|{key}"] = m.pct(macro_name("Sensitivity", key), 100 * se[key], f"100 * results.json:sensitivity.{key}")
    if _num(se.get("rho")):
        n["sens|rho"] = m.add("SensitivityRho", fmt_metric(se["rho"], 2), float(se["rho"]), "results.json:sensitivity.rho")
    for key in ("theta_lower", "theta_upper", "ci_lower", "ci_upper"):
        if _num(se.get(key)):
            n[f"sens|{key}"] = m.add(macro_name("Sensitivity", key), _signed(se[key], ctx.digits), float(se[key]),
                                     f"results.json:sensitivity.{key}")
    for key in ("rv", "rva"):
        if _num(se.get(key)):
            n[f"sens|{key}"] = m.pct(macro_name("Sensitivity", key), 100 * se[key], f"100 * results.json:sensitivity.{key}")
    # heterogeneity (exploratory)
    het = r.get("heterogeneity") or {}
    for i, g in enumerate(het.get("groups") or []):
        if _num(g.get("n")):
            n[f"het|{i}|n"] = m.count(macro_name("Group", str(i), "N"), g["n"], f"results.json:heterogeneity.groups.{i}.n")
        _estimate(ctx, f"het{i}", g, f"results.json:heterogeneity.groups.{i}")
    for i, g in enumerate(het.get("skipped") or []):
        if _num(g.get("n")):
            n[f"skip|{i}|n"] = m.count(macro_name("Skipped", str(i), "N"), g["n"],
                                       f"results.json:heterogeneity.skipped.{i}.n")
    # published estimates
    for i, pe in enumerate(spec.get("published_estimates") or []):
        for key in ("estimate", "se"):
            if _num(pe.get(key)):
                n[f"pub|{i}|{key}"] = m.add(macro_name("Published", str(i), key), _signed(pe[key], 2), float(pe[key]),
                                            f"research_spec.json:published_estimates.{i}.{key}")
    # the recovery of the planted effect (generated data)
    rec = ctx.recovery
    if rec:
        for key in ("planted_ate", "estimate", "ci_low", "ci_high", "naive", "naive_ci_low", "naive_ci_high"):
            if _num(rec.get(key)):
                n[f"rec|{key}"] = m.add(macro_name("Recovery", key), _signed(rec[key], ctx.digits), float(rec[key]),
                                        f"recovery.json:{key}")
        g = rec.get("group") or {}
        for key in ("planted", "estimate", "ci_low", "ci_high"):
            if _num(g.get(key)):
                n[f"recg|{key}"] = m.add(macro_name("Recovery group", key), _signed(g[key], ctx.digits), float(g[key]),
                                         f"recovery.json:group.{key}")
    # counts the review's sentences print
    n["n_covariates"] = m.count("NCovariates", len(spec.get("covariates") or []), "len(research_spec.json:covariates)")
    n["het|n_groups"] = m.count("HeterogeneityGroups", len(het.get("groups") or []),
                                "len(results.json:heterogeneity.groups)")
    # the review
    checklist = ctx.review.get("checklist") or []
    n["rev|items"] = m.count("ReviewItems", len(checklist), "len(review_report.json:checklist)")
    n["rev|passed"] = m.count("ReviewPassed", sum(1 for c in checklist if c.get("passed") is True),
                              "count(review_report.json:checklist[passed])")
    if _num(ctx.review.get("round")):
        n["rev|round"] = m.count("ReviewRound", ctx.review["round"], "review_report.json:round")
    # the checklist's balance limit (config/rubric.yaml causal.smd_threshold), when it is not the one the balance table
    # counts at: the review's sentence then names both
    limit, table = (ctx.review.get("thresholds") or {}).get("smd_threshold"), bal.get("threshold")
    if _num(limit) and _num(table) and float(limit) != float(table):
        n["rev|smd_threshold"] = m.add("ReviewBalanceThreshold", fmt_metric(limit, 2), float(limit),
                                       "review_report.json:thresholds.smd_threshold")


# ---- citations -------------------------------------------------------------------------------------------------
def _citations(spec: dict[str, Any], literature: dict[str, Any], provenance_record: dict[str, Any] | None,
               bib_source: str | Path | None) -> Citations:
    """The citable papers: the literature context's verified ones, the data set's own citation (provenance.json),
    and - from the curated bibliography `bib_source` - the entries of the published estimates' and the
    specification's literature keys that retrieval did not return."""
    cites = Citations.from_literature(literature)
    paper = (provenance_record or {}).get("citation")
    if isinstance(paper, dict) and paper.get("key") and paper.get("bibtex") and paper["key"] not in cites.keys_all:
        cites.papers.append(paper)
    wanted = [str(pe.get("cite")) for pe in spec.get("published_estimates") or [] if pe.get("cite")]
    wanted += [str(k) for k in spec.get("literature_keys") or []]
    missing = [k for k in dict.fromkeys(wanted) if k not in cites.keys_all]
    if missing and bib_source is not None:
        path = Path(bib_source)
        if not path.is_file():
            raise EdmArsError(f"bibliography not found: {path}")
        entries = {e.key: e for e in parse_bibtex(path.read_text(encoding="utf-8"))}
        for key in missing:
            if key in entries:
                e = entries[key]
                cites.papers.append({"key": key, "title": e.fields.get("title", ""), "year": e.year,
                                     "status": "VERIFIED", "topics": ["curated"], "bibtex": e.text.strip()})
    if bib_source is not None:
        _curated_topics(cites, Path(bib_source).parent / "topics.yaml")
    return cites


def _curated_topics(cites: Citations, topics_path: Path) -> None:
    """Add the curated bibliography's topics (topics.yaml beside references.bib: causal, dml, doubleml,
    sensitivity, clustering, the data set's) to the citable papers it lists, so that a paper found by retrieval or
    taken from the bibliography is cited for the role the curated record gives it."""
    if not topics_path.is_file():
        return
    import yaml

    works = (yaml.safe_load(topics_path.read_text(encoding="utf-8")) or {}).get("works") or {}
    if not isinstance(works, dict):
        raise EdmArsError(f"{topics_path}: 'works' must map citation keys to their topics")
    for i, paper in enumerate(cites.papers):
        info = works.get(paper.get("key"))
        if isinstance(info, dict):
            extra = [str(t) for t in info.get("topics") or [] if str(t) not in (paper.get("topics") or [])]
            cites.papers[i] = {**paper, "topics": [t for t in (paper.get("topics") or []) if t != "curated"] + extra}


def _findings(findings: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The registry's findings (dataset.findings), checked: each a mapping with a claim and a cite key."""
    out = []
    for i, f in enumerate(findings or []):
        if not isinstance(f, dict) or not str(f.get("claim") or "").strip() or not str(f.get("cite") or "").strip():
            raise EdmArsError(f"registry dataset.findings[{i}]: a finding needs a claim and a cite key, not {f!r}")
        out.append(f)
    return out


# ---- figures ---------------------------------------------------------------------------------------------------
def _collect_figures(figures_dir: Path, out_dir: Path) -> dict[str, str]:
    """Copy balance.pdf and overlap.pdf (else their PNGs) from `figures_dir` into out_dir/figures/."""
    found: dict[str, str] = {}
    for name in FIGURES:
        src = next((figures_dir / f"{name}{ext}" for ext in (".pdf", ".png") if (figures_dir / f"{name}{ext}").is_file()),
                   None)
        if src is None:
            continue
        dest = out_dir / "figures" / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.resolve() != dest.resolve():
            shutil.copyfile(src, dest)
        found[name] = f"figures/{src.name}"
    return found


# ---- the paper -------------------------------------------------------------------------------------------------
def build_causal_paper(spec: dict[str, Any], literature: dict[str, Any], data_report: dict[str, Any],
                       results: dict[str, Any], review: dict[str, Any], *, figures_dir: str | Path,
                       template: str | Path, out_dir: str | Path, authors: str | None = None,
                       dataset: dict[str, Any] | None = None, provenance_record: dict[str, Any] | None = None,
                       recovery: dict[str, Any] | None = None, bib_source: str | Path | None = None,
                       phrases: str | Path | Phrases | None = None,
                       findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write paper.tex, numbers.tex, numbers.json, references.bib and figures/ into `out_dir` (the caller writes
    sources.json beside them and runs writer.verify.verify_paper).

    `figures_dir` holds the causal figures (balance.pdf, overlap.pdf; PNGs when there is no PDF), `template` the
    fixed paper template (config/paper_template.tex), `dataset` the registry's prose (Registry.prose: short, long,
    agency, about, source, design, unit, units), `provenance_record` output provenance.json (the data's kind and
    citation, the availability statement), `recovery` the causal recovery check (generated data), `bib_source` the
    curated bibliography (registry/bibliography/references.bib: the published estimates' entries retrieval did not
    return), `phrases` the phrase file (config/prompts/phrases.yaml; default: prompts/phrases.yaml beside the
    template) for the author line and the availability statement, `findings` the registry's published findings on
    the data set (registry dataset.findings: claim, cite, where; confirmed claims that Related Work may restate with
    their citation). Returns a summary (word counts, figures, tables,
    cited keys, macros, unverified, raw numbers that escaped the macros: none expected)."""
    from edm_ars.causal import sections
    from edm_ars.writer.sections import front
    from edm_ars.writer.sections import provenance as availability

    if spec.get("task") != "causal":
        raise EdmArsError(f"research_spec.json: task is {spec.get('task')!r}; the causal paper needs task 'causal'")
    if results.get("task") != "causal":
        raise EdmArsError(f"results.json: task is {results.get('task')!r}; the causal paper needs causal results")
    template, out_dir, figures_dir = Path(template), Path(out_dir), Path(figures_dir)
    if not template.is_file():
        raise EdmArsError(f"paper template not found: {template}")
    if phrases is None:
        phrases = template.parent / "prompts" / "phrases.yaml"
    ph = phrases if isinstance(phrases, Phrases) else Phrases.load(phrases)
    out_dir.mkdir(parents=True, exist_ok=True)

    ctx = CausalCtx(spec=spec, lit=literature, data=data_report, results=results, review=review, m=MacroTable(),
                    cites=_citations(spec, literature, provenance_record, bib_source), dataset=dict(dataset or {}),
                    provenance=dict(provenance_record or {}), recovery=dict(recovery or {}),
                    findings=_findings(findings))
    ctx.figures = _collect_figures(figures_dir, out_dir)
    register_numbers(ctx)
    # the prediction paper's context, for the shared author line and availability statement only; the software
    # versions of the availability statement are the causal stage's (results.json:versions), not those of the
    # provenance record, which lists the prediction study's packages
    shared = {k: v for k, v in (provenance_record or {}).items() if k != "software"}
    pctx = Ctx(spec=spec, lit=literature, data=data_report, results=results, review=review, m=ctx.m, cites=ctx.cites,
               registry_labels={}, ph=ph, dataset=dict(dataset or {}), provenance=shared)
    pctx.ph = pctx.ph.for_unit(ctx.ds["unit"], ctx.ds["units"])

    content = {"TITLE": sections.title(ctx), "AUTHORS": front.authors(pctx, authors),
               "KEYWORDS": sections.keywords(ctx)}
    for slot, write in sections.WRITTEN:
        content[slot] = write(ctx)
    content["AVAILABILITY"] = availability.write(pctx)
    if content["AVAILABILITY"]:
        software = sections.software(ctx)
        if software:
            content["AVAILABILITY"] += " " + pctx.ph("provenance.availability_software", packages=software)
    content["UNVERIFIED"] = sections.unverified_block(ctx) if ctx.unverified else ""
    content["APPENDIX"] = ""
    content["MACROS"] = "\\input{numbers.tex}"

    tex, cited, removed = assemble(content, template, ctx.cites, ctx.m, out_dir, unverified=ctx.unverified)
    leaks = {s: raw_numbers(content[s]) for s in (*TEXT_SECTIONS, "TITLE", "AVAILABILITY") if raw_numbers(content[s])}
    return {
        "paper": str(out_dir / "paper.tex"),
        "sections": {s.lower(): word_count(content[s]) for s in TEXT_SECTIONS},
        "figures": len(ctx.figures),
        "figure_files": sorted(ctx.figures.values()),
        "tables": len(re.findall(r"\\begin\{table\*?\}", tex)),
        "cited_keys": cited,
        "macros": len(ctx.m),
        "unverified": ctx.unverified,
        "raw_numbers": leaks,
        "citations_removed": removed,
    }
