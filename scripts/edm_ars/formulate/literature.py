"""Literature retrieval: Semantic Scholar search, CrossRef verification, BibTeX built from retrieved metadata.

Every reference the pipeline cites from a live search passes three checks before it is kept:
the paper id is one the search actually returned, CrossRef knows a work with (nearly) the same
title, and a DOI, when one is given, resolves at CrossRef to that same title. Papers failing the
first or the last check are dropped as HALLUCINATED; papers CrossRef cannot confirm are kept as
SUSPICIOUS with their status shown. When the search cannot deliver enough VERIFIED papers, the
curated bibliography is used instead (``fallback``), with ``retrieval_failed`` set and a note saying why.

HTTP uses the standard library only. Responses are cached on disk (``cache_dir``) keyed by the request
path and parameters, never by credentials: a rerun makes no request. The Semantic Scholar API key is read
from the environment, sent as the ``x-api-key`` header, and never logged or written to the cache.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import re
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.client import HTTPException
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, validate
from edm_ars.core.errors import EdmArsError
from edm_ars.core.retry_after import retry_after_seconds
from edm_ars.core.texescape import escape_latex

log = logging.getLogger(__name__)

S2_FIELDS = ("paperId,title,authors,year,venue,externalIds,url,abstract,citationCount,publicationTypes,"
             "journal")
USER_AGENT = "EDM-ARS/0.1 (literature retrieval)"
TITLE_MATCH = 0.8          # word-Jaccard threshold for "same title"
MAX_BACKOFF_S = 60.0       # cap on exponential backoff
MAX_RETRY_AFTER_S = 300.0  # cap on a server's retry-after
# DOI prefixes registered with DataCite, not CrossRef (arXiv, Zenodo, figshare, Dryad): a CrossRef 404
# for these says nothing about whether the DOI exists, so it cannot confirm or refute the paper.
NON_CROSSREF_DOI_PREFIXES = ("10.48550/", "10.5281/", "10.6084/", "10.5061/")


class RetrievalError(EdmArsError):
    """A literature service failed: network error after retries, an HTTP error, or an unusable response."""


# ---------------------------------------------------------------------------------------------- HTTP


class _JsonService:
    """GET-JSON with retries (429, 5xx, network errors and timeouts), backoff, retry-after and a disk cache."""

    service = "service"

    def __init__(self, base_url: str, *, timeout_s: float, max_retries: int, cache_dir: Path | None,
                 sleep: Callable[[float], Any], backoff_base_s: float):
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_retries = max(0, int(max_retries))
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.sleep = sleep
        self.backoff_base_s = backoff_base_s
        self.requests_made = 0  # network requests actually sent (cache hits excluded)

    # Subclasses add credentials or contact details here; nothing returned here is cached or logged.
    def _headers(self) -> dict[str, str]:
        return {"Accept": "application/json", "User-Agent": USER_AGENT}

    def _extra_params(self) -> dict[str, str]:
        return {}

    # -- cache ---------------------------------------------------------------------------------------
    def _cache_path(self, path: str, params: dict[str, Any]) -> Path | None:
        if self.cache_dir is None:
            return None
        ident = json.dumps({"path": path, "params": params}, sort_keys=True)
        return self.cache_dir / f"{self.service}-{hashlib.sha256(ident.encode()).hexdigest()[:32]}.json"

    def _cache_read(self, cpath: Path | None) -> dict[str, Any] | None:
        if cpath is None or not cpath.exists():
            return None
        try:
            entry = json.loads(cpath.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            log.warning("%s: ignoring unreadable cache file %s", self.service, cpath)
            return None
        return entry if isinstance(entry, dict) and entry.get("status") in (200, 404) else None

    def _cache_write(self, cpath: Path | None, path: str, params: dict[str, Any], status: int, body: Any) -> None:
        if cpath is None:
            return
        entry = {"service": self.service, "path": path, "params": params, "status": status, "body": body}
        atomic_write_text(cpath, json.dumps(entry, ensure_ascii=False, indent=1) + "\n")

    # -- request -------------------------------------------------------------------------------------
    def _backoff(self, attempt: int) -> float:
        return min(MAX_BACKOFF_S, self.backoff_base_s * (2 ** attempt))

    def get_json(self, path: str, params: dict[str, Any] | None = None, *, cache_404: bool = False) -> tuple[int, Any]:
        """(200, body) or (404, None). Raises RetrievalError once retries are spent or on another HTTP error.

        A 404 is cached only with `cache_404` (a DOI CrossRef does not know is an answer; a wrong route is not).
        """
        params = {k: str(v) for k, v in (params or {}).items()}
        cpath = self._cache_path(path, params)
        cached = self._cache_read(cpath)
        if cached is not None:
            log.debug("%s: cache hit for %s", self.service, path)
            return cached["status"], cached["body"]
        query = urllib.parse.urlencode({**params, **self._extra_params()})
        url = f"{self.base_url}{path}" + (f"?{query}" if query else "")
        shown = f"{self.base_url}{path}?{urllib.parse.urlencode(params)}"  # what is logged: no extras
        failure = "no attempt made"
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            self.requests_made += 1
            log.info("%s: GET %s (attempt %d/%d)", self.service, shown, attempt + 1, self.max_retries + 1)
            request = urllib.request.Request(url, headers=self._headers(), method="GET")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                    raw = resp.read()
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise RetrievalError(f"{self.service}: {path} returned a body that is not JSON ({exc})") from exc
                self._cache_write(cpath, path, params, 200, body)
                return 200, body
            except urllib.error.HTTPError as exc:
                code = exc.code
                retry_after = retry_after_seconds(exc.headers)
                exc.close()
                if code == 404:
                    if cache_404:
                        self._cache_write(cpath, path, params, 404, None)
                    return 404, None
                if code != 429 and code < 500:
                    raise RetrievalError(f"{self.service}: HTTP {code} for {path} (not retried)") from None
                failure = f"HTTP {code}"
                if retry_after is not None:
                    wait = min(retry_after, MAX_RETRY_AFTER_S)
            except (TimeoutError, urllib.error.URLError, ConnectionError, HTTPException, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                failure = f"network error ({type(reason).__name__}: {reason})"
            if attempt < self.max_retries:
                wait = self._backoff(attempt) if wait is None else wait
                log.warning("%s: %s for %s; retrying in %.1f s", self.service, failure, path, wait)
                self.sleep(wait)
        raise RetrievalError(f"{self.service}: {failure} for {path} after {self.max_retries + 1} attempt(s)")


class SemanticScholar(_JsonService):
    """Semantic Scholar Academic Graph API: relevance search for papers."""

    service = "semantic_scholar"

    def __init__(self, base_url: str = "https://api.semanticscholar.org/graph/v1", api_key_env: str = "S2_API_KEY",
                 timeout_s: float = 30, max_retries: int = 4, cache_dir: Path | None = None,
                 sleep: Callable[[float], Any] = time.sleep, backoff_base_s: float = 1.0):
        super().__init__(base_url, timeout_s=timeout_s, max_retries=max_retries, cache_dir=cache_dir, sleep=sleep,
                         backoff_base_s=backoff_base_s)
        self.api_key_env = api_key_env
        self.__api_key = (os.environ.get(api_key_env) or None) if api_key_env else None

    @property
    def has_api_key(self) -> bool:
        return self.__api_key is not None

    def __repr__(self) -> str:
        return f"SemanticScholar(base_url={self.base_url!r}, api_key={'set' if self.__api_key else 'unset'})"

    def _headers(self) -> dict[str, str]:
        headers = super()._headers()
        if self.__api_key:
            headers["x-api-key"] = self.__api_key
        return headers

    def search(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        """The `data` list of GET /paper/search (plain-text query; hyphens become spaces, as the API asks)."""
        query = " ".join(query.replace("-", " ").split())
        if not query:
            raise ValueError("empty Semantic Scholar query")
        params = {"query": query, "limit": max(1, min(100, int(limit))), "fields": S2_FIELDS}
        _, body = self.get_json("/paper/search", params)
        if body is None:
            raise RetrievalError(f"{self.service}: /paper/search returned 404")
        data = body.get("data", []) if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise RetrievalError(f"{self.service}: /paper/search response has no `data` list")
        return [p for p in data if isinstance(p, dict)]


class CrossRef(_JsonService):
    """CrossRef REST API: bibliographic title search and DOI resolution."""

    service = "crossref"

    def __init__(self, base_url: str = "https://api.crossref.org", mailto: str | None = None, timeout_s: float = 30,
                 max_retries: int = 4, cache_dir: Path | None = None, sleep: Callable[[float], Any] = time.sleep,
                 backoff_base_s: float = 1.0):
        super().__init__(base_url, timeout_s=timeout_s, max_retries=max_retries, cache_dir=cache_dir, sleep=sleep,
                         backoff_base_s=backoff_base_s)
        self.mailto = mailto

    def _headers(self) -> dict[str, str]:
        headers = super()._headers()
        if self.mailto:  # CrossRef's "polite pool" asks for a contact in the User-Agent or a mailto parameter
            headers["User-Agent"] = f"{USER_AGENT[:-1]}; mailto:{self.mailto})"
        return headers

    def _extra_params(self) -> dict[str, str]:
        return {"mailto": self.mailto} if self.mailto else {}

    def search_title(self, title: str, rows: int = 3) -> list[dict[str, Any]]:
        """The best bibliographic matches for a title (CrossRef work records)."""
        _, body = self.get_json("/works", {"query.bibliographic": " ".join(title.split()), "rows": int(rows)})
        items = ((body or {}).get("message") or {}).get("items", []) if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise RetrievalError(f"{self.service}: /works response has no message.items list")
        return [w for w in items if isinstance(w, dict)]

    def resolve_doi(self, doi: str) -> dict[str, Any] | None:
        """The CrossRef work record of a DOI; None when CrossRef does not know it (404)."""
        status, body = self.get_json("/works/" + urllib.parse.quote(normalise_doi(doi), safe="/"), cache_404=True)
        if status == 404:
            return None
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, dict):
            raise RetrievalError(f"{self.service}: /works/{{doi}} response has no message object")
        return message


# ---------------------------------------------------------------------------------------------- matching


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", html.unescape(text or "")).lower())


def title_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the sets of lower-cased alphanumeric words (1.0 identical, 0.0 disjoint)."""
    wa, wb = set(_words(a)), set(_words(b))
    if not wa and not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def normalise_doi(doi: str) -> str:
    doi = doi.strip()
    doi = re.sub(r"^(https?://(dx\.)?doi\.org/|doi:\s*)", "", doi, flags=re.IGNORECASE)
    return doi


def paper_doi(paper: dict[str, Any]) -> str | None:
    doi = (paper.get("externalIds") or {}).get("DOI") or paper.get("doi")
    return normalise_doi(doi) if isinstance(doi, str) and doi.strip() else None


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


# ---------------------------------------------------------------------------------------------- BibTeX

_CONF_RE = re.compile(r"\b(conference|proceedings|symposium|workshop|congress)\b", re.IGNORECASE)
_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "la", "le", "ter", "ten", "dos",
              "das", "do"}
_SUFFIXES = {"jr", "sr", "ii", "iii", "iv"}
_KEY_STOP = {"a", "an", "the", "on", "of", "in", "for", "to", "and", "with", "from", "at", "by", "is", "are",
             "how", "what", "why", "when", "towards", "toward"}
_KEY_RE = re.compile(r"^[A-Za-z0-9_:-]+$")


def _bib_escape(text: str) -> str:
    """A BibTeX field's text escaped for LaTeX, its letters beyond Latin-1 kept (see escape_latex)."""
    return escape_latex(text, fold_unicode=False)


def _clean(text: Any) -> str | None:
    """Whitespace-normalised text with HTML entities decoded; None when empty."""
    if text is None:
        return None
    text = " ".join(html.unescape(str(text)).split())
    return text or None


def _bib_title(title: str) -> str:
    """Escape LaTeX specials; brace-protect words with capitals beyond the initial (XGBoost, SHAP, R&D, eXplain)."""
    out = []
    for word in title.split(" "):
        esc = _bib_escape(word)
        protect = sum(c.isupper() for c in word) >= 2 or re.search(r"[a-z][A-Z]", word)
        out.append("{" + esc + "}" if protect else esc)
    return " ".join(out)


def _name_parts(name: str) -> tuple[str, str, str]:
    """(last, first, suffix) of a name written "First Middle Last" (particles such as "van" go with last)."""
    tokens = name.split()
    suffix = ""
    if len(tokens) > 2 and tokens[-1].lower().rstrip(".") in _SUFFIXES:
        suffix = tokens.pop()
    if len(tokens) == 1:
        return tokens[0], "", suffix
    start = len(tokens) - 1
    for i in range(1, len(tokens) - 1):
        if tokens[i] in _PARTICLES:
            start = i
            break
    return " ".join(tokens[start:]), " ".join(tokens[:start]), suffix


def bibtex_name(name: str) -> str:
    """A retrieved author name as BibTeX "Last, First" (or "Last, Jr., First")."""
    name = _clean(name) or ""
    if "," in name or re.search(r"\band\b", name, re.IGNORECASE):
        return "{" + _bib_escape(name) + "}"  # already inverted, or a corporate name: keep it whole
    last, first, suffix = _name_parts(name)
    last, first, suffix = _bib_escape(last), _bib_escape(first), _bib_escape(suffix)
    if not first:
        return last
    return f"{last}, {suffix}, {first}" if suffix else f"{last}, {first}"


def _author_names(paper: dict[str, Any]) -> list[str]:
    names = []
    for a in paper.get("authors") or []:
        name = a.get("name") if isinstance(a, dict) else a
        if isinstance(name, str) and name.strip():
            names.append(" ".join(name.split()))
    return names


def _journal(paper: dict[str, Any]) -> dict[str, Any]:
    j = paper.get("journal")
    return j if isinstance(j, dict) else {}


def _entry(paper: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """Entry type and (field, value) pairs, from retrieved metadata only."""
    title = _clean(paper.get("title"))
    types = set(paper.get("publicationTypes") or [])
    venue = _clean(paper.get("venue"))
    journal = _journal(paper)
    jname = _clean(journal.get("name"))
    preprint = bool(jname and jname.lower() == "arxiv")
    if preprint:
        jname = None
    fields: list[tuple[str, str]] = []
    authors = _author_names(paper)
    if authors:
        fields.append(("author", " and ".join(bibtex_name(a) for a in authors)))
    if title:
        fields.append(("title", _bib_title(title)))
    conference = "Conference" in types or bool(venue and _CONF_RE.search(venue) and "JournalArticle" not in types)
    if conference and (venue or jname):
        kind = "inproceedings"
        booktitle = jname if jname and (_CONF_RE.search(jname) or not venue) else venue
        fields.append(("booktitle", _bib_escape(booktitle)))
    elif jname or (venue and "JournalArticle" in types):
        kind = "article"
        fields.append(("journal", _bib_escape(jname or venue)))
        volume = _clean(journal.get("volume"))
        if volume and not preprint:
            fields.append(("volume", _bib_escape(volume)))
    else:
        kind = "misc"
        howpublished = _clean(journal.get("name")) if preprint else venue
        if howpublished:
            fields.append(("howpublished", _bib_escape(howpublished)))
    pages = _clean(journal.get("pages"))
    if pages and kind != "misc":
        fields.append(("pages", _bib_escape(re.sub(r"\s*[-\u2013\u2014]+\s*", "--", pages))))
    year = paper.get("year")
    if isinstance(year, int):
        fields.append(("year", str(year)))
    doi = paper_doi(paper)
    if doi:
        fields.append(("doi", doi.replace("{", "%7B").replace("}", "%7D")))
    url = _clean(paper.get("url"))
    if url:
        fields.append(("url", url.replace("{", "%7B").replace("}", "%7D").replace(" ", "%20")))
    return kind, fields


def to_bibtex(paper: dict[str, Any], key: str) -> str:
    """A BibTeX entry built only from the retrieved metadata: a field that was not retrieved is not written.

    @article when a journal name exists, @inproceedings for conference venues, @misc otherwise.
    """
    if not _KEY_RE.match(key):
        raise ValueError(f"BibTeX key {key!r} must match [A-Za-z0-9_:-]+")
    kind, fields = _entry(paper)
    if not fields:
        raise ValueError(f"paper {paper.get('paperId')!r} has no metadata to write")
    width = max(len(name) for name, _ in fields)
    body = ",\n".join(f"  {name:<{width}} = {{{value}}}" for name, value in fields)
    return f"@{kind}{{{key},\n{body}\n}}"


def _ascii_word(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower())


def bib_key(paper: dict[str, Any], taken: set[str]) -> str:
    """A key like "lastname2019firstword", unique against (and added to) `taken`."""
    authors = _author_names(paper)
    last = _ascii_word(_name_parts(authors[0])[0]) if authors else ""
    year = str(paper["year"]) if isinstance(paper.get("year"), int) else "nd"
    words = [_ascii_word(w) for w in re.findall(r"[^\W_]+", html.unescape(paper.get("title") or ""))]
    words = [w for w in words if w]
    first = next((w for w in words if w not in _KEY_STOP), words[0] if words else "")
    base = f"{last or 'anon'}{year}{first}"
    key, n = base, 0
    letters = "bcdefghijklmnopqrstuvwxyz"
    while key in taken:
        key = base + (letters[n] if n < len(letters) else f"_{n}")
        n += 1
    taken.add(key)
    return key


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
