"""Literature retrieval: Semantic Scholar search, CrossRef verification, BibTeX built from retrieved metadata.

Every reference the pipeline cites from a live search passes three checks before it is kept:
the paper id is one the search actually returned, CrossRef knows a work with (nearly) the same
title, and a DOI, when one is given, resolves at CrossRef to that same title. Papers failing the
first or the last check are dropped as HALLUCINATED; papers CrossRef cannot confirm are kept as
SUSPICIOUS with their status shown. When the search cannot deliver enough VERIFIED papers, the
curated bibliography is used instead (``fallback``), with ``retrieval_failed`` set and a note saying why.

The HTTP clients of the two services (with their disk cache and the handling of the API key) live in
edm_ars.formulate.scholarly; title matching, DOIs and the BibTeX entries and keys in edm_ars.formulate.metadata.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from edm_ars.core.artifacts import validate
from edm_ars.formulate.metadata import (
    _KEY_STOP,
    _author_names,
    _clean,
    _journal,
    _words,
    bib_key,
    paper_doi,
    title_similarity,
    to_bibtex,
)
from edm_ars.formulate.scholarly import CrossRef, RetrievalError, SemanticScholar

log = logging.getLogger(__name__)

TITLE_MATCH = 0.8          # word-Jaccard threshold for "same title"
# DOI prefixes registered with DataCite, not CrossRef (arXiv, Zenodo, figshare, Dryad): a CrossRef 404
# for these says nothing about whether the DOI exists, so it cannot confirm or refute the paper.
NON_CROSSREF_DOI_PREFIXES = ("10.48550/", "10.5281/", "10.6084/", "10.5061/")


# ---------------------------------------------------------------------------------------------- verification


def _crossref_title(work: dict[str, Any]) -> str:
    title = work.get("title")
    if isinstance(title, list):
        title = title[0] if title else ""
    return title if isinstance(title, str) else ""


def verify(paper: dict[str, Any], search_response_ids: set[str], crossref: CrossRef) -> dict[str, Any]:
    """The paper with `status` (VERIFIED / SUSPICIOUS / HALLUCINATED) and the `checks` behind it.

    VERIFIED: the id was in the search response, CrossRef's best title match is >= 0.8 similar, and a DOI
    (when there is one) resolves at CrossRef to a work whose title is >= 0.8 similar.
    HALLUCINATED: the id was not in the response, or the DOI resolves to a different work, or CrossRef
    does not know a DOI that CrossRef would register. SUSPICIOUS: everything else (CrossRef could not
    confirm the title, or the DOI belongs to another registration agency). A CrossRef service failure
    raises RetrievalError: it is not evidence about the paper.
    """
    title = paper.get("title") or ""
    pid = paper.get("paperId")
    checks: dict[str, Any] = {"id_in_search_response": bool(pid) and pid in search_response_ids}

    best_title, best_sim, best_doi = None, 0.0, None
    for work in crossref.search_title(title, rows=3) if title else []:
        sim = title_similarity(title, _crossref_title(work))
        if sim > best_sim:
            best_title, best_sim, best_doi = _crossref_title(work), sim, work.get("DOI")
    checks.update({"crossref_title": best_title, "crossref_title_similarity": round(best_sim, 3),
                   "crossref_doi": best_doi, "title_match": best_sim >= TITLE_MATCH})

    doi = paper_doi(paper)
    checks["doi"] = doi
    if doi:
        work = crossref.resolve_doi(doi)
        checks["doi_resolves"] = work is not None
        checks["doi_registered_elsewhere"] = work is None and doi.lower().startswith(NON_CROSSREF_DOI_PREFIXES)
        doi_sim = title_similarity(title, _crossref_title(work)) if work else None
        checks["doi_title"] = _crossref_title(work) if work else None
        checks["doi_title_similarity"] = round(doi_sim, 3) if doi_sim is not None else None
        checks["doi_match"] = doi_sim is not None and doi_sim >= TITLE_MATCH

    reasons = []
    if not checks["id_in_search_response"]:
        status = "HALLUCINATED"
        reasons.append("paperId not in the search response")
    elif doi and checks["doi_resolves"] and not checks["doi_match"]:
        status = "HALLUCINATED"
        reasons.append(f"DOI {doi} resolves to a different work")
    elif doi and not checks["doi_resolves"] and not checks["doi_registered_elsewhere"]:
        status = "HALLUCINATED"
        reasons.append(f"DOI {doi} does not exist at CrossRef")
    elif checks["title_match"] and (not doi or checks["doi_match"]):
        status = "VERIFIED"
    else:
        status = "SUSPICIOUS"
        if not checks["title_match"]:
            reasons.append("CrossRef has no work with a matching title")
        if doi and not checks.get("doi_match"):
            reasons.append(f"DOI {doi} is not registered with CrossRef, so it could not be checked")
    checks["reasons"] = reasons
    return {**paper, "status": status, "checks": checks}


# ---------------------------------------------------------------------------------------------- queries

# Words that say nothing about the topic: wave codes, survey wording, months, connectives.
_QUERY_STOP = _KEY_STOP | {
    "x", "ever", "end", "composite", "standardized", "theta", "score", "indicator", "derived", "status", "type",
    "all", "or", "as", "he", "she", "his", "her", "thinks", "will", "get", "far", "grader", "th", "st", "nd", "rd",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "s", "t", "student", "students", "do", "does",
}


def _label_terms(label: str | None, max_words: int) -> list[str]:
    if not label:
        return []
    label = re.sub(r"\([^)]*\)", " ", label)
    label = re.sub(r"^\s*[A-Z]\d\s+", " ", label)  # a wave prefix such as "X1 "
    words = [w.lower().strip("'") for w in re.findall(r"[A-Za-z][A-Za-z']*", label)]
    return [w for w in words if w and w not in _QUERY_STOP and len(w) > 1][:max_words]


def _dedupe(words: list[str]) -> list[str]:
    seen: set[str] = set()
    return [w for w in words if not (w in seen or seen.add(w))]


def build_query(spec: dict[str, Any]) -> str:
    """A plain-text search query: outcome label, two key predictor labels, "educational data mining"."""
    outcome = spec.get("outcome") or {}
    terms = _label_terms(outcome.get("label"), 4)
    if not terms:
        terms = _label_terms(spec.get("research_question"), 5)
    terms.append("prediction")
    for p in (spec.get("predictors") or [])[:2]:
        terms += _label_terms(p.get("label"), 3)
    return " ".join(_dedupe(terms) + ["educational data mining"])


def search_queries(spec: dict[str, Any], dataset_terms: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The primary query and a second one naming the dataset (used when the first returns too little);
    `dataset_terms` are the registry's literature.search_terms."""
    outcome = spec.get("outcome") or {}
    terms = _label_terms(outcome.get("label"), 4) or _label_terms(spec.get("research_question"), 5)
    dataset = dataset_terms[0] if dataset_terms else None
    second = " ".join(_dedupe(terms + ["prediction", "machine", "learning"]) + ([dataset] if dataset else []))
    queries = [build_query(spec)]
    if second != queries[0]:
        queries.append(second)
    return queries


# ---------------------------------------------------------------------------------------------- topics

TOPIC_KEYWORDS: dict[str, tuple[str, ...]] = {
    "shap": ("shap", "shapley"),
    "interpretability": ("interpretable", "interpretability", "explainable", "explainability"),
    "fairness": ("fairness", "fair", "algorithmic bias", "equity", "equitable"),
    "dropout": ("dropout", "drop out", "dropping out", "attrition"),
    "early_warning": ("early warning", "at risk"),
    "college": ("college", "postsecondary", "higher education", "university enrollment"),
    "edm": ("educational data mining", "learning analytics"),
    "xgboost": ("xgboost", "gradient boosting"),
    "random_forest": ("random forest", "random forests"),
    "stem": ("stem",),
    "performance_prediction": ("student performance", "students performance", "academic performance",
                               "academic achievement", "academic outcomes"),
    "missing_data": ("missing data", "imputation"),
}


def topics_of(paper: dict[str, Any], extra: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Topic tags whose keywords occur (as whole words) in the title or abstract; `extra` adds the data set's
    topic with its search terms (registry literature.topic and search_terms)."""
    text = " ".join(_words(f"{paper.get('title') or ''} {paper.get('abstract') or ''}".replace("'", "")))
    return [topic for topic, keywords in (TOPIC_KEYWORDS | (extra or {})).items()
            if any(re.search(rf"(?<![a-z0-9]){re.escape(k)}(?![a-z0-9])", text) for k in keywords)]


# ---------------------------------------------------------------------------------------------- retrieve


def _venue(paper: dict[str, Any]) -> str | None:
    return _clean(paper.get("venue")) or _clean(_journal(paper).get("name"))


def _fall_back(fallback: Callable[[str], dict[str, Any]], note: str) -> dict[str, Any]:
    log.warning("literature retrieval failed; using the curated bibliography: %s", note)
    result = dict(fallback(note))
    result["retrieval_failed"] = True
    result.setdefault("retrieval_note", note)
    validate(result, "literature_context")
    return result


def retrieve(spec: dict[str, Any], *, scholar: SemanticScholar, crossref: CrossRef, n_min: int = 8,
             n_max: int = 12, fallback: Callable[[str], dict[str, Any]],
             dataset_literature: dict[str, Any] | None = None) -> dict[str, Any]:
    """A literature_context from Semantic Scholar, each paper checked against CrossRef.

    Up to `n_max` papers with a title and a year are verified; HALLUCINATED ones are dropped and SUSPICIOUS
    ones kept with their status. Fewer than `n_min` VERIFIED papers, or a failing service, gives
    ``fallback(note)`` (the curated bibliography) with ``retrieval_failed`` True and the note saying why.
    """
    prefix = "Semantic Scholar retrieval failed"
    lit = dataset_literature or {}
    terms = [str(t) for t in lit.get("search_terms", [])]
    extra_topics = {lit["topic"]: tuple(t.lower() for t in terms)} if lit.get("topic") and terms else {}
    queries = search_queries(spec, terms)
    candidates: list[tuple[dict[str, Any], set[str]]] = []
    seen: set[str] = set()
    used, returned, skipped = [], 0, 0
    try:
        for query in queries:
            if len(candidates) >= n_max:
                break
            data = scholar.search(query, limit=max(20, 2 * n_max))
            used.append(query)
            returned += len(data)
            ids = {p["paperId"] for p in data if isinstance(p.get("paperId"), str) and p["paperId"]}
            for p in data:
                if len(candidates) >= n_max:
                    break
                if not _clean(p.get("title")) or not isinstance(p.get("year"), int):
                    skipped += 1
                    continue
                marks = {f"id:{p['paperId']}"} if p.get("paperId") else set()
                marks.add("title:" + " ".join(_words(p["title"])))
                if marks & seen:
                    continue
                seen |= marks
                candidates.append((p, ids))
    except RetrievalError as exc:
        return _fall_back(fallback, f"{prefix} (search): {exc}. References come from the curated bibliography.")
    if not candidates:
        return _fall_back(fallback, f"{prefix}: {len(used)} search(es) returned no paper with a title and year. "
                                    "References come from the curated bibliography.")
    try:
        checked = [verify(p, ids, crossref) for p, ids in candidates]
    except RetrievalError as exc:
        return _fall_back(fallback, f"{prefix} (CrossRef verification): {exc}. References come from the curated "
                                    "bibliography.")
    counts = {s: sum(1 for p in checked if p["status"] == s) for s in ("VERIFIED", "SUSPICIOUS", "HALLUCINATED")}
    summary = (f"{returned} search result(s) from {len(used)} quer{'y' if len(used) == 1 else 'ies'}, "
               f"{len(candidates)} candidate(s) with a title and year checked against CrossRef: "
               f"{counts['VERIFIED']} VERIFIED, {counts['SUSPICIOUS']} SUSPICIOUS, "
               f"{counts['HALLUCINATED']} HALLUCINATED")
    if counts["VERIFIED"] < n_min:
        return _fall_back(fallback, f"{prefix}: only {counts['VERIFIED']} verified paper(s), {n_min} needed "
                                    f"({summary}). References come from the curated bibliography.")
    taken: set[str] = set()
    papers = []
    for p in checked:
        if p["status"] == "HALLUCINATED":
            log.warning("dropping %r: %s", p.get("title"), "; ".join(p["checks"]["reasons"]))
            continue
        key = bib_key(p, taken)
        papers.append({
            "key": key, "title": _clean(p["title"]), "authors": _author_names(p), "year": p["year"],
            "venue": _venue(p), "doi": paper_doi(p), "url": _clean(p.get("url")), "topics": topics_of(p, extra_topics),
            "status": p["status"], "bibtex": to_bibtex(p, key), "paper_id": p.get("paperId"),
            "citation_count": p.get("citationCount"), "checks": p["checks"],
        })
    note = (f"Semantic Scholar search ({'; '.join(repr(q) for q in used)}): {summary}. "
            f"Kept {len(papers)} (SUSPICIOUS ones marked), dropped {counts['HALLUCINATED']} HALLUCINATED"
            + (f"; {skipped} result(s) without a title or year skipped." if skipped else "."))
    result = {"source": "semantic_scholar", "retrieval_failed": False, "retrieval_note": note, "papers": papers}
    validate(result, "literature_context")
    return result
