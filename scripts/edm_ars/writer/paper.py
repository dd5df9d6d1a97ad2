"""Assemble paper.tex, numbers.tex/.json, references.bib and figures/ from a round's artifacts."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, validate
from edm_ars.core.errors import EdmArsError
from edm_ars.core.text import number_word, word_count
from edm_ars.review.claims import code_claims, document
from edm_ars.writer import branches, multilevel, outline, provenance, replication, splits, supplementary
from edm_ars.writer.context import Citations, Ctx, Figure
from edm_ars.writer.integrity import CITE_NAME, UNVERIFIED_BLOCK, cited_keys, repair_citations
from edm_ars.writer.macros import MacroTable, template_macros
from edm_ars.writer.numbers import register_numbers
from edm_ars.writer.phrases import Phrases, unit_words
from edm_ars.writer.sections import (
    abstract,
    appendix,
    discussion,
    front,
    introduction,
    limitations,
    methods,
    related_work,
)
from edm_ars.writer.sections import provenance as availability
from edm_ars.writer.sections import results as results_section

SLOTS = ("TITLE", "AUTHORS", "ABSTRACT", "KEYWORDS", "MACROS", "UNVERIFIED", "INTRODUCTION",
         "RELATED_WORK", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS", "AVAILABILITY", "BIBLIOGRAPHY",
         "APPENDIX")
# Sections whose word counts are reported in the summary.
TEXT_SECTIONS = ("ABSTRACT", "INTRODUCTION", "RELATED_WORK", "METHODS", "RESULTS", "DISCUSSION",
                 "LIMITATIONS", "APPENDIX")
# The sections with running text, in the order they are written (not the paper's order): numbers are
# defined in this order, and Related Work comes last so that its list of further references leaves out the
# papers the other sections cite.
WRITTEN = (("ABSTRACT", abstract), ("INTRODUCTION", introduction), ("METHODS", methods),
           ("RESULTS", results_section), ("DISCUSSION", discussion), ("LIMITATIONS", limitations),
           ("AVAILABILITY", availability), ("RELATED_WORK", related_work))
FIGURE_EXTENSIONS = {".pdf", ".png", ".jpg", ".jpeg"}


# ---- slots -------------------------------------------------------------------------------------
def _markers(name: str) -> tuple[str, str]:
    return f"%%BEGIN:{name}%%", f"%%END:{name}%%"


def fill_slot(tex: str, name: str, content: str) -> str:
    """Put `content` into slot `name`: replaces the `%%PLACEHOLDER:NAME%%` line, or the region
    between `%%BEGIN:NAME%%` and `%%END:NAME%%` left by an earlier fill (so filling is idempotent).
    """
    begin, end = _markers(name)
    content = content.strip("\n")
    block = f"{begin}\n{content}\n{end}" if content.strip() else f"{begin}\n{end}"
    region = re.compile(rf"^[ \t]*{re.escape(begin)}[ \t]*$.*?^[ \t]*{re.escape(end)}[ \t]*$", re.S | re.M)
    if region.search(tex):
        return region.sub(lambda _: block, tex, count=1)
    placeholder = re.compile(rf"^[ \t]*%%PLACEHOLDER:{re.escape(name)}%%[ \t]*$", re.M)
    if placeholder.search(tex):
        return placeholder.sub(lambda _: block, tex, count=1)
    raise EdmArsError(f"paper template has no slot %%PLACEHOLDER:{name}%% (nor a filled {name} region)")


def slot_content(tex: str, name: str) -> str:
    """The text currently in a filled slot ('' when it is empty or absent)."""
    begin, end = _markers(name)
    m = re.search(rf"^[ \t]*{re.escape(begin)}[ \t]*\n(.*?)^[ \t]*{re.escape(end)}", tex, re.S | re.M)
    return m.group(1) if m else ""


_STRIP = re.compile(
    r"(?<!\\)%.*$"  # comments
    rf"|\\(?:label|ref|eqref|{CITE_NAME}\*?|begin|end|includegraphics|texttt|bibliography\w*|multicolumn)"
    r"(?:\[[^\]]*\])*\{[^}]*\}"  # commands whose argument is not prose
    r"|\\[A-Za-z]+"  # any other control sequence (number macros included)
    r"|95\\%",  # the fixed confidence level
    re.M,
)
_NUMBER = re.compile(r"(?<![A-Za-z0-9_:.\\])\d+(?:[.,]\d+)*(?![A-Za-z0-9_])")


def raw_numbers(tex: str) -> list[str]:
    """Number literals written directly in LaTeX text (not through a macro); years are allowed."""
    text = _STRIP.sub(" ", tex)
    return [t for t in _NUMBER.findall(text) if not re.fullmatch(r"(19|20)\d\d", t)]


# ---- figures -----------------------------------------------------------------------------------
def _find_figure(path: str, figures_dir: Path) -> Path | None:
    rel = Path(path)
    for cand in (figures_dir.parent / rel, figures_dir / rel, figures_dir / rel.name):
        if cand.is_file():
            return cand
    return None


def _collect_figures(ctx: Ctx, figures_dir: Path, out_dir: Path) -> list[str]:
    """Copy the figures listed in results.json into out_dir/figures/; return the missing ones."""
    missing: list[str] = []
    names: set[str] = set()
    labels: set[str] = set()
    dest_dir = out_dir / "figures"
    for i, fig in enumerate(ctx.results.get("figures") or []):
        src = _find_figure(str(fig["path"]), figures_dir)
        if src is None or src.suffix.lower() not in FIGURE_EXTENSIONS:
            missing.append(str(fig["path"]))
            continue
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", src.stem).strip("_") or "figure"
        name, k = stem + src.suffix.lower(), 1
        while name in names:
            k += 1
            name = f"{stem}_{k}{src.suffix.lower()}"
        names.add(name)
        dest_dir.mkdir(parents=True, exist_ok=True)
        if src.resolve() != (dest_dir / name).resolve():
            shutil.copyfile(src, dest_dir / name)
        kind = str(fig.get("kind") or "figure").lower()
        base = "fig:" + (re.sub(r"[^a-z]+", "-", kind).strip("-") or "figure")
        label, k = base, 0
        while label in labels:
            k += 1
            label = f"{base}-{chr(ord('a') + k)}"
        labels.add(label)
        caption = str(fig.get("caption") or "").strip()
        if ctx.n_ranked is not None and ctx.n_ranked < 10:  # an earlier analysis's caption: "the ten" of fewer
            caption = caption.replace("the ten most important predictors", f"all {number_word(ctx.n_ranked)} predictors")
        caption = ctx.t(unit_words(caption, *ctx.ph.unit, rows=ctx.ph.rows), f"results.json:figures.{i}.caption")
        ctx.figures.append(Figure(label=label, kind=kind, file=f"figures/{name}",
                                        caption=caption or "Figure produced by the analysis stage."))
    return missing


# ---- the paper -----------------------------------------------------------------------------------
def assemble(content: dict[str, str], template: Path, cites: Any, macros: Any, out_dir: Path, *,
             unverified: bool) -> tuple[str, list[str], list[str]]:
    """Fill the fixed template's slots with `content` and write paper.tex, numbers.tex, numbers.json and
    references.bib into out_dir (every kind of study's paper). Citations come from retrieval only: an unknown key is
    removed and its sentence repaired; a paper the review leaves unverified must hold the UNVERIFIED block; a slot
    the template does not know fails. Returns (tex, cited keys, removed keys)."""
    # the appendix "Where the numbers come from" (writer/trace.py), written once the artifacts' records are known
    content["APPENDIX"] = "\n\n".join(x for x in (content.get("APPENDIX", ""), "\\InputIfFileExists{sources.tex}{}{}")
                                        if x)
    removed: list[str] = []
    for name in list(content):
        content[name], dropped = repair_citations(content[name], frozenset(cites.keys_all))
        removed += dropped
    cited = cited_keys("\n".join(content.values()))
    content["BIBLIOGRAPHY"] = ("\\bibliographystyle{ACM-Reference-Format}\n\\bibliography{references}"
                               if cited else "")
    tex = Path(template).read_text(encoding="utf-8")
    for name in SLOTS:
        tex = fill_slot(tex, name, content.get(name, ""))
    if unverified and not UNVERIFIED_BLOCK.search(slot_content(tex, "UNVERIFIED")):
        raise EdmArsError("the review leaves the paper unverified but the UNVERIFIED block is not in the paper")
    leftover = re.findall(r"^[ \t]*%%PLACEHOLDER:([A-Z_]+)%%[ \t]*$", tex, re.M)
    if leftover:
        raise EdmArsError(f"paper template has unknown slots: {', '.join(leftover)}")
    bib = "\n\n".join(cites.bibtex(k) for k in cited)
    atomic_write_text(out_dir / "numbers.tex", macros.to_tex())
    atomic_write_text(out_dir / "numbers.json", macros.to_json())
    atomic_write_text(out_dir / "references.bib", bib + ("\n" if bib else ""))
    atomic_write_text(out_dir / "paper.tex", tex)
    return tex, cited, removed


def build_paper(spec: dict[str, Any], literature: dict[str, Any], data_report: dict[str, Any],
                results: dict[str, Any], review: dict[str, Any], *, figures_dir: Path, template: Path,
                out_dir: Path, registry_labels: dict[str, str] | None = None,
                authors: str | None = None, validate_inputs: bool = True,
                claims: dict[str, Any] | None = None, registry_groups: dict[str, str] | None = None,
                rewriter: Any = None, dataset: dict[str, Any] | None = None,
                phrases: str | Path | Phrases, provenance_record: dict[str, Any] | None = None,
                recovery: dict[str, Any] | None = None, sample: dict[str, Any] | None = None,
                registry_values: dict[str, dict[str, str]] | None = None, selection: dict[str, Any] | None = None,
                drafts: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write paper.tex, numbers.tex, numbers.json, references.bib and figures/ into `out_dir`.

    `phrases` is the phrase file (config/prompts/phrases.yaml) or its loaded table: the fixed sentences.
    `dataset` is the registry's prose (Registry.prose: names, population, source, design, unit, waves,
    grouping); without it the paper describes the data neutrally. `provenance_record` is output/paper/provenance.json
    (what the rows are, the data set's citation, commit, configuration hash, package versions: the availability
    statement; without it the paper has none) and `recovery` output/paper/recovery.json (generated data: the
    recovery check), `sample` the engineer's sample.json (Table 1 and the sample flow; without it the paper has
    neither), `registry_values` the registry's value labels per variable (code -> label), `selection` and `drafts`
    output/selection.json and output/branches.json (the candidate studies: a Methods subsection and table when
    there were several, a Related Work paragraph on earlier runs' studies when the findings store held some). Returns a summary: word counts per section, figure and table counts, cited keys, the number of
    macros, whether the paper is marked unverified, figures that could not be found, and any number
    literal that escaped the macro table (should be none).
    """
    if validate_inputs:
        for obj, kind in ((spec, "research_spec"), (literature, "literature_context"),
                          (data_report, "data_report"), (results, "results"), (review, "review_report")):
            validate(obj, kind, where=f"{kind}.json (writer input)")
        if sample:
            validate(sample, "sample", where="sample.json (writer input)")
    if results["best_model"] not in results["models"]:
        raise EdmArsError(f"results.json: best_model {results['best_model']!r} is not one of the models "
                          f"({', '.join(results['models'])})")
    best = results["models"][results["best_model"]]
    if not isinstance((best.get("metrics") or {}).get(results["primary_metric"]), (int, float)):
        raise EdmArsError(f"results.json: the best model {results['best_model']!r} has no "
                          f"{results['primary_metric']!r} metric")
    template, out_dir, figures_dir = Path(template), Path(out_dir), Path(figures_dir)
    if not template.exists():
        raise EdmArsError(f"paper template not found: {template}")
    out_dir.mkdir(parents=True, exist_ok=True)

    if claims is None:  # the same rules the offline results debate applies
        claims = document(code_claims(results, data_report), round_=int(review.get("round", 0)),
                          backend="offline")
    elif validate_inputs:
        validate(claims, "claims", where="claims.json (writer input)")
    ctx = Ctx(spec=spec, lit=literature, data=data_report, results=results, review=review,
                    m=MacroTable(), cites=Citations.from_literature(literature),
                    registry_labels=dict(registry_labels or {}),
                    ph=phrases if isinstance(phrases, Phrases) else Phrases.load(phrases),
                    claims={c["id"]: c["status"] for c in claims["claims"]}, claims_doc=claims,
                    registry_groups=dict(registry_groups or {}), dataset=dict(dataset or {}),
                    registry_values={k: dict(v) for k, v in (registry_values or {}).items()},
                    provenance=dict(provenance_record or {}), recovery=dict(recovery or {}),
                    sample=dict(sample or {}), selection=dict(selection or {}), drafts=dict(drafts or {}),
                    notation=template_macros(template.read_text(encoding="utf-8")))
    # the fixed sentences say the registry's unit noun (pupils) where they are written about students
    # (with repeated records, a counted row is a record and anyone else the registry's unit: a child)
    if ctx.repeated:
        ctx.ph = ctx.ph.for_unit(ctx.person, ctx.people, rows=(ctx.ds["unit"], ctx.ds["units"]))
    else:
        ctx.ph = ctx.ph.for_unit(ctx.ds["unit"], ctx.ds["units"])
    provenance.add_citation(ctx)
    # the prior work the contribution is stated against (when no published finding was tested): the retrieved
    # papers on the data set and on the studies that used it or predicted such outcomes
    prior = ctx.cites.keys(*[t for t in (ctx.dataset_topic, *((dataset or {}).get("study_topics") or [])) if t])
    ctx.outline = outline.choose(ctx.claims, results, ctx.registry_groups,
                                 expected=(dataset or {}).get("expected_groups"), prior=prior[:3])
    register_numbers(ctx)
    splits.register(ctx)  # the repeated grouped splits, when the study was repeated over them
    supplementary.register(ctx)  # the supplementary analyses run as code, when any were planned
    multilevel.register(ctx)  # the school-level structure, when the analysis ran
    replication.register(ctx)  # the registry's published findings, tested
    branches.register(ctx)  # the candidate studies of the run and earlier runs' studies, when there were any
    missing = _collect_figures(ctx, figures_dir, out_dir)

    # the order of the slots in the paper is the template's
    content = {
        "TITLE": front.title(ctx),
        "AUTHORS": front.authors(ctx, authors),
        "KEYWORDS": front.keywords(ctx),
    }
    for slot, section in WRITTEN:
        content[slot] = section.write(ctx)
    model_notes: list[str] = []
    if rewriter is not None:  # a model rewrites some sections from these drafts; checked in code
        rewritten, model_notes = rewriter(ctx, content)
        content.update(rewritten)
    appendices = [appendix.hyperparameter_table(ctx)]
    if ctx.unverified:
        content["UNVERIFIED"] = appendix.unverified_block(ctx)
        appendices.append(appendix.review_appendix(ctx))
    else:
        content["UNVERIFIED"] = ""
    content["APPENDIX"] = "\n\n".join(a for a in appendices if a)
    content["MACROS"] = "\\input{numbers.tex}"

    tex, cited, removed = assemble(content, template, ctx.cites, ctx.m, out_dir, unverified=ctx.unverified)
    atomic_write_text(out_dir / "outline.json", json.dumps(ctx.outline, indent=2) + "\n")

    leaks = {s: raw_numbers(content[s]) for s in TEXT_SECTIONS + ("TITLE", "AVAILABILITY")
             if raw_numbers(content[s])}
    summary = {
        "paper": str(out_dir / "paper.tex"),
        "sections": {s.lower(): word_count(content[s]) for s in TEXT_SECTIONS},
        "words_total": sum(word_count(content[s]) for s in TEXT_SECTIONS if s != "APPENDIX"),
        "figures": len(ctx.figures),
        "figure_files": [f.file for f in ctx.figures],
        "missing_figures": missing,
        "tables": len(re.findall(r"\\begin\{table\}", tex)),
        "cited_keys": cited,
        "macros": len(ctx.m),
        "unverified": ctx.unverified,
        "raw_numbers": leaks,
        "citations_removed": removed,
        "archetype": ctx.outline["archetype"],
        "model_prose": model_notes,
    }
    return summary
