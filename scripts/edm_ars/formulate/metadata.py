"""What the pipeline makes of a retrieved paper's metadata (edm_ars.formulate.literature): its title words and
title similarity, its DOI, and the BibTeX entry and key built only from the retrieved fields.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Any

from edm_ars.core.texescape import escape_latex

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
