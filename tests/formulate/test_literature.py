"""Literature retrieval against fake Semantic Scholar / CrossRef servers (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from fakes.scholar_servers import (
    CROSSREF_WORKS,
    EXPECTED_STATUS,
    FAKE_DOI_TITLE,
    FAKE_ID_TITLE,
    GARDNER,
    HARDT,
    LAKKARAJU,
    NO_YEAR_TITLE,
    S2_PAPERS,
    VERIFIED_TITLES,
    FakeCrossRef,
    FakeSemanticScholar,
)

from edm_ars.core.artifacts import validate
from edm_ars.formulate.bibliography import parse_bibtex
from edm_ars.formulate.literature import build_query, retrieve, search_queries, topics_of, verify
from edm_ars.formulate.metadata import bib_key, bibtex_name, title_similarity, to_bibtex
from edm_ars.formulate.scholarly import CrossRef, RetrievalError, SemanticScholar
from edm_ars.formulate.spec import CORE_TOPICS, curated_literature

ROOT = Path(__file__).resolve().parents[2]
BIB = ROOT / "registry" / "bibliography" / "references.bib"
TOPICS = ROOT / "registry" / "bibliography" / "topics.yaml"

SPEC = {
    "dataset": "hsls09",
    "question_id": "college_attendance",
    "research_question": "How accurately can postsecondary attendance by February 2016 be predicted?",
    "outcome": {"name": "X4EVRATNDCLG", "label": "Ever attended college by the end of February 2016",
                "wave": "update_panel", "type": "binary"},
    "predictors": [
        {"name": "X1SES", "label": "X1 Socio-economic status composite", "rationale": "SES predicts access."},
        {"name": "X1TXMTSCOR", "label": "X1 Mathematics standardized theta score", "rationale": "Preparation."},
        {"name": "X1STUEDEXPCT", "label": "X1 How far in school 9th grader thinks he/she will get",
         "rationale": "Expectations."},
    ],
}
BY_TITLE = {p["title"]: p for p in S2_PAPERS}


class Sleeps(list):
    """A stand-in for time.sleep that records the requested delays."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def curated(note: str) -> dict:
    return curated_literature(BIB, TOPICS, ["college", "hsls09_study", "hsls09", *CORE_TOPICS], note=note)


def clients(s2: FakeSemanticScholar, cr: FakeCrossRef, cache_dir: Path | None = None, **kw):
    sleeps = Sleeps()
    opts = {"cache_dir": cache_dir, "sleep": sleeps, "timeout_s": 5, **kw}
    return SemanticScholar(base_url=s2.base_url, **opts), CrossRef(base_url=cr.base_url, **opts), sleeps


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("S2_API_KEY", raising=False)


# ---------------------------------------------------------------------------------------------- happy path


def test_retrieve_happy_path_statuses_and_bibtex(tmp_path):
    with FakeSemanticScholar(S2_PAPERS) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, sleeps = clients(s2, cr, tmp_path / "cache")
        lit = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated,
                       dataset_literature={"topic": "hsls09", "search_terms": ["High School Longitudinal Study", "HSLS"]})
        searches = s2.requests_to("/graph/v1/paper/search")
        crossref_titles_queried = [r["query"].get("query.bibliographic") for r in cr.requests_to("/works")]

    validate(lit, "literature_context")
    assert lit["source"] == "semantic_scholar" and lit["retrieval_failed"] is False
    assert 8 <= len(lit["papers"]) <= 12
    assert sleeps == []
    # One query sufficed (12 usable results); the request asked for every field the bibliography needs.
    assert len(searches) == 1
    fields = set(searches[0]["query"]["fields"].split(","))
    assert {"paperId", "title", "authors", "year", "venue", "externalIds", "journal", "publicationTypes"} <= fields
    assert "college" in searches[0]["query"]["query"]

    status = {p["title"]: p["status"] for p in lit["papers"]}
    assert status == {t: s for t, s in EXPECTED_STATUS.items() if s != "HALLUCINATED"}
    assert FAKE_DOI_TITLE not in status and FAKE_ID_TITLE not in status
    assert NO_YEAR_TITLE not in status and NO_YEAR_TITLE not in crossref_titles_queried  # never verified
    assert sum(s == "VERIFIED" for s in status.values()) == len(VERIFIED_TITLES)
    assert "9 VERIFIED, 1 SUSPICIOUS, 2 HALLUCINATED" in lit["retrieval_note"]
    assert "dropped 2 HALLUCINATED" in lit["retrieval_note"]
    hardt = next(p for p in lit["papers"] if p["title"] == HARDT)
    assert hardt["checks"]["title_match"] is False and hardt["doi"] is None

    keys = [p["key"] for p in lit["papers"]]
    assert len(set(keys)) == len(keys)
    assert "romero2020educational" in keys and "sansone2019beyond" in keys
    for paper in lit["papers"]:
        src = BY_TITLE[paper["title"]]
        (entry,) = parse_bibtex(paper["bibtex"])
        assert entry.key == paper["key"]
        assert entry.year == src["year"] == paper["year"]
        assert len(entry.authors) == len(src["authors"])
        doi = (src.get("externalIds") or {}).get("DOI")
        assert entry.fields.get("doi") == doi == paper["doi"]  # no doi field unless the paper has one
        journal = src.get("journal") or {}
        if not journal.get("pages"):
            assert "pages" not in entry.fields
        if not journal.get("volume"):
            assert "volume" not in entry.fields
        assert set(entry.fields) <= {"title", "author", "year", "journal", "booktitle", "volume", "pages", "doi",
                                     "url", "howpublished"}
        expected_type = "inproceedings" if paper["title"] in (GARDNER, LAKKARAJU, HARDT) else "article"
        assert entry.type == expected_type, paper["title"]
    topics = {p["key"]: p["topics"] for p in lit["papers"]}
    assert "hsls09" in topics["he2025predicting"] and "college" in topics["he2025predicting"]
    assert "shap" in topics["lundberg2020local"]
    assert "fairness" in topics["baker2022algorithmic"]
    assert "dropout" in topics["sansone2019beyond"]


def test_bibtex_fields_are_retrieved_values():
    lundberg = next(p for p in S2_PAPERS if p["year"] == 2020 and "Lundberg" in p["authors"][0]["name"])
    (entry,) = parse_bibtex(to_bibtex(lundberg, "lundberg2020local"))
    assert entry.type == "article"
    assert entry.fields["journal"] == "Nature Machine Intelligence"
    assert entry.fields["volume"] == "2" and entry.fields["pages"] == "56--67"
    assert entry.fields["doi"] == "10.1038/s42256-019-0138-9"
    assert "{AI}" in entry.fields["title"]  # capitals of an acronym protected
    assert entry.authors[0] == "Lundberg, Scott M." and entry.authors[-1] == "Lee, Su-In"
    assert "number" not in entry.fields  # Semantic Scholar gives no issue number: none is written

    gardner = BY_TITLE[GARDNER]
    (entry,) = parse_bibtex(to_bibtex(gardner, "gardner2019evaluating"))
    assert entry.type == "inproceedings"
    assert entry.fields["booktitle"] == (r"Proceedings of the 9th International Conference on Learning Analytics "
                                         r"\& Knowledge")

    minimal = {"paperId": "x", "title": "Grades_and 100% of R&D: a {study}", "year": 2001, "authors": []}
    text = to_bibtex(minimal, "anon2001grades")
    (entry,) = parse_bibtex(text)
    assert entry.type == "misc"
    assert set(entry.fields) == {"title", "year"}
    assert entry.fields["title"] == (r"Grades\_and 100\% of {R\&D:} a \textbraceleft{}study\textbraceright{}")


def test_names_and_keys():
    assert bibtex_name("Stef van Buuren") == "van Buuren, Stef"
    assert bibtex_name("Martin Luther King Jr.") == "King, Jr., Martin Luther"
    assert bibtex_name("Plato") == "Plato"
    assert bibtex_name("Bill and Melinda Gates Foundation") == "{Bill and Melinda Gates Foundation}"
    taken: set[str] = set()
    paper = {"title": "The Elements of Statistical Learning", "year": 2009, "authors": [{"name": "Trevor Hastie"}]}
    assert bib_key(paper, taken) == "hastie2009elements"
    assert bib_key(paper, taken) == "hastie2009elementsb"
    assert bib_key({"title": "¿Qué?", "year": None, "authors": [{"name": "José Núñez"}]}, taken) == "nunezndque"
    assert bib_key({"title": "", "authors": []}, taken) == "anonnd"
    assert all(re.fullmatch(r"[A-Za-z0-9_:-]+", k) for k in taken)


def test_build_query_from_spec():
    query = build_query(SPEC)
    assert "college" in query and "educational data mining" in query
    assert "socio" in query and "mathematics" in query
    assert not re.search(r"\d|X1|february", query, re.IGNORECASE)
    queries = search_queries(SPEC, ["High School Longitudinal Study"])
    assert len(queries) == 2 and "High School Longitudinal Study" in queries[1]
    assert topics_of({"title": "Who goes to college? Evidence from the High School Longitudinal Study"},
                     {"hsls09": ("high school longitudinal study",)}) == ["college", "hsls09"]
    assert topics_of({"title": "Fair prediction of college dropout with SHAP", "abstract": None}) == [
        "shap", "fairness", "dropout", "college"]


@pytest.mark.parametrize(("a", "b", "check"), [
    ("Algorithmic Bias in Education", "Algorithmic Bias in Education", lambda s: s == 1.0),
    ("Algorithmic Bias in Education", "education in bias, ALGORITHMIC", lambda s: s == 1.0),
    ("Do We Know Who Will Drop Out? A Review", "Do we know who will drop out?: a review", lambda s: s == 1.0),
    ("Algorithmic Bias in Education", "XGBoost: A Scalable Tree Boosting System", lambda s: s < 0.8),
    ("Predicting college enrollment with machine learning", "Predicting dropout with deep learning",
     lambda s: s < 0.8),
    ("", "", lambda s: s == 0.0),
])
def test_title_similarity(a, b, check):
    assert check(title_similarity(a, b))


def test_verify_labels_each_case():
    with FakeCrossRef(CROSSREF_WORKS) as cr:
        crossref = CrossRef(base_url=cr.base_url, sleep=Sleeps())
        romero = S2_PAPERS[0]
        ids = {romero["paperId"]}
        assert verify(romero, ids, crossref)["status"] == "VERIFIED"
        # Same paper, but its id was not in the response it supposedly came from.
        out = verify(romero, {"someotherid"}, crossref)
        assert out["status"] == "HALLUCINATED" and out["checks"]["id_in_search_response"] is False
        # A CrossRef-prefixed DOI that CrossRef does not know: it does not exist.
        ghost = {**romero, "externalIds": {"DOI": "10.1002/widm.9999999"}}
        out = verify(ghost, ids, crossref)
        assert out["status"] == "HALLUCINATED" and out["checks"]["doi_resolves"] is False
        # A DataCite DOI (Zenodo) is unknown to CrossRef without being false: not confirmed, not refuted.
        jedm = {"paperId": "j1", "title": "The State of Educational Data Mining in 2009: A Review and Future Visions",
                "year": 2009, "externalIds": {"DOI": "10.5281/zenodo.3554657"}}
        out = verify(jedm, {"j1"}, crossref)
        assert out["status"] == "SUSPICIOUS" and out["checks"]["doi_registered_elsewhere"] is True
        # No DOI, title known to CrossRef: verified by title alone.
        no_doi = {**romero, "externalIds": {}}
        assert verify(no_doi, ids, crossref)["status"] == "VERIFIED"


# ---------------------------------------------------------------------------------------------- failures


def test_429_then_success_honours_retry_after(tmp_path):
    with FakeSemanticScholar(S2_PAPERS, script=[{"status": 429, "retry_after": "7"}]) as s2, \
            FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, sleeps = clients(s2, cr)
        lit = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        assert s2.request_count == 2
    assert sleeps == [7.0]
    assert lit["source"] == "semantic_scholar" and lit["retrieval_failed"] is False


def test_timeout_then_success_backs_off():
    with FakeSemanticScholar(S2_PAPERS[:3], script=[{"sleep": 1.0}]) as s2:
        sleeps = Sleeps()
        scholar = SemanticScholar(base_url=s2.base_url, timeout_s=0.25, sleep=sleeps, backoff_base_s=0.5)
        data = scholar.search("college dropout", limit=3)
        assert s2.request_count == 2
    assert sleeps == [0.5]
    assert [p["title"] for p in data] == [p["title"] for p in S2_PAPERS[:3]]


def test_service_down_uses_fallback(tmp_path):
    with FakeSemanticScholar(S2_PAPERS, script=[{"status": 500}] * 10) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, sleeps = clients(s2, cr, tmp_path / "cache", max_retries=3)
        lit = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        assert s2.request_count == 4
        assert cr.request_count == 0
    assert sleeps == [1.0, 2.0, 4.0]  # exponential backoff between the 4 attempts
    validate(lit, "literature_context")
    assert lit["source"] == "curated" and lit["retrieval_failed"] is True
    assert "HTTP 500" in lit["retrieval_note"] and "4 attempt(s)" in lit["retrieval_note"]
    assert "Semantic Scholar retrieval failed" in lit["retrieval_note"]
    assert lit["papers"] and all(p["status"] == "VERIFIED" for p in lit["papers"])
    cache = tmp_path / "cache"
    assert not cache.exists() or not any(cache.iterdir())  # failures are not cached


def test_client_error_is_not_retried(tmp_path):
    with FakeSemanticScholar(S2_PAPERS, script=[{"status": 403}]) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, sleeps = clients(s2, cr)
        lit = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        assert s2.request_count == 1
    assert sleeps == [] and lit["retrieval_failed"] is True and "HTTP 403" in lit["retrieval_note"]


def test_crossref_down_uses_fallback():
    with FakeSemanticScholar(S2_PAPERS) as s2, FakeCrossRef(CROSSREF_WORKS, script=[{"status": 503}] * 10) as cr:
        scholar, crossref, _ = clients(s2, cr, max_retries=1)
        lit = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        assert cr.request_count == 2  # gives up at the first paper, not once per paper
    assert lit["source"] == "curated" and lit["retrieval_failed"] is True
    assert "CrossRef verification" in lit["retrieval_note"] and "HTTP 503" in lit["retrieval_note"]


def test_too_few_verified_uses_fallback():
    few = [p for p in S2_PAPERS if p["title"] in VERIFIED_TITLES[:5] or p["title"] in (HARDT, FAKE_DOI_TITLE)]
    with FakeSemanticScholar(few) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, _ = clients(s2, cr)
        lit = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        assert s2.request_count == 2  # the second, dataset-specific query was tried too
    validate(lit, "literature_context")
    assert lit["source"] == "curated" and lit["retrieval_failed"] is True
    assert "only 5 verified paper(s), 8 needed" in lit["retrieval_note"]


def test_empty_search_uses_fallback():
    with FakeSemanticScholar([]) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, _ = clients(s2, cr)
        lit = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
    assert lit["retrieval_failed"] is True and "no paper with a title and year" in lit["retrieval_note"]


def test_doi_404_is_an_answer_and_other_errors_raise(tmp_path):
    with FakeCrossRef(CROSSREF_WORKS, script=[{"status": 400}]) as cr:
        crossref = CrossRef(base_url=cr.base_url, sleep=Sleeps(), cache_dir=tmp_path)
        with pytest.raises(RetrievalError, match="HTTP 400"):
            crossref.resolve_doi("10.1002/widm.1355")
        assert crossref.resolve_doi("10.9999/nothing") is None
        assert crossref.resolve_doi("https://doi.org/10.1002/WIDM.1355")["DOI"] == "10.1002/widm.1355"
        n = cr.request_count
        assert crossref.resolve_doi("10.9999/nothing") is None  # the 404 was cached: no new request
        assert cr.request_count == n == 3


def test_search_404_is_an_error_and_not_cached(tmp_path):
    with FakeSemanticScholar(S2_PAPERS) as s2:
        scholar = SemanticScholar(base_url=s2.url + "/wrong/v1", sleep=Sleeps(), cache_dir=tmp_path)
        for _ in range(2):
            with pytest.raises(RetrievalError, match="404"):
                scholar.search("college")
        assert s2.request_count == 2 and not any(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------- cache and key


def test_cached_rerun_makes_no_request(tmp_path):
    cache = tmp_path / "cache"
    with FakeSemanticScholar(S2_PAPERS) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, _ = clients(s2, cr, cache)
        first = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        n_s2, n_cr = s2.request_count, cr.request_count
        assert n_s2 == 1 and n_cr > 0
        scholar, crossref, _ = clients(s2, cr, cache)  # fresh clients, same cache
        second = retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        assert (s2.request_count, cr.request_count) == (n_s2, n_cr)
        assert scholar.requests_made == crossref.requests_made == 0
    assert second == first


def test_api_key_sent_as_header_never_cached_or_logged(tmp_path, monkeypatch, caplog):
    secret = "s2-SECRET-key-0123456789"
    monkeypatch.setenv("S2_API_KEY", secret)
    caplog.set_level(logging.DEBUG, logger="edm_ars.formulate.scholarly")
    cache = tmp_path / "cache"
    with FakeSemanticScholar(S2_PAPERS, script=[{"status": 429, "retry_after": "0"}]) as s2, \
            FakeCrossRef(CROSSREF_WORKS) as cr:
        scholar, crossref, _ = clients(s2, cr, cache)
        assert secret not in repr(scholar) and scholar.has_api_key
        retrieve(SPEC, scholar=scholar, crossref=crossref, fallback=curated)
        assert [r["headers"].get("x-api-key") for r in s2.requests] == [secret, secret]
        assert all("x-api-key" not in r["headers"] for r in cr.requests)
        assert all(secret not in str(r["query"]) for r in s2.requests)
    files = [f for f in cache.rglob("*") if f.is_file()]
    assert files
    assert all(secret.encode() not in f.read_bytes() for f in files)
    assert caplog.records and secret not in caplog.text


def test_no_key_no_header():
    with FakeSemanticScholar(S2_PAPERS[:2]) as s2:
        SemanticScholar(base_url=s2.base_url, sleep=Sleeps()).search("college")
        assert "x-api-key" not in s2.requests[0]["headers"]


def test_crossref_mailto_is_sent_but_not_part_of_cache_key(tmp_path):
    with FakeCrossRef(CROSSREF_WORKS) as cr:
        a = CrossRef(base_url=cr.base_url, mailto="edm@example.org", cache_dir=tmp_path, sleep=Sleeps())
        a.search_title("Algorithmic Bias in Education")
        assert cr.requests[0]["query"]["mailto"] == "edm@example.org"
        assert "mailto:edm@example.org" in cr.requests[0]["headers"]["user-agent"]
        b = CrossRef(base_url=cr.base_url, cache_dir=tmp_path, sleep=Sleeps())
        assert b.search_title("Algorithmic Bias in Education")[0]["DOI"] == "10.1007/s40593-021-00285-9"
        assert cr.request_count == 1
    assert all(b"edm@example.org" not in f.read_bytes() for f in tmp_path.iterdir())


@pytest.mark.parametrize("name, expected", [("star", {"krueger1999experimental"}),
                                            ("hsb_math", {"raudenbush2002hierarchical", "lee1986multilevel"}),
                                            ("london_exam", {"goldstein1993multilevel"}), ("hsls09", set())])
def test_the_sources_of_a_registrys_published_findings_are_in_its_offline_literature(name, expected):
    from edm_ars.data.registry import load_registry
    from edm_ars.formulate.spec import literature_topics, registry_finding_keys

    path = ROOT / "registry" / (name if name == "hsls09" else f"{name}.yaml")
    reg = load_registry(path)
    keys = registry_finding_keys(reg)
    assert set(keys) == expected
    literature = curated_literature(BIB, TOPICS, literature_topics(reg, None), keys=keys)
    assert expected <= {p["key"] for p in literature["papers"]}
    # without the keys, a finding's source outside the data set's topic is not there (lee1986: another topic)
    if name == "hsb_math":
        plain = curated_literature(BIB, TOPICS, literature_topics(reg, None))
        assert "lee1986multilevel" not in {p["key"] for p in plain["papers"]}


def test_retrieved_literature_gains_the_findings_sources_it_lacks_once():
    from edm_ars.jobs.agents import with_works

    curated = curated_literature(BIB, TOPICS, [], keys=["krueger1999experimental", "goldstein1993multilevel"])
    krueger = next(p for p in curated["papers"] if p["key"] == "krueger1999experimental")
    retrieved = {"source": "semantic_scholar", "papers": [
        {"key": "krueger1999", "title": krueger["title"].upper() + ".", "doi": None},  # the same work, retrieved
        {"key": "other2020", "title": "Another study", "doi": "10.1/x"}]}
    retrieved["papers"][0]["bibtex"] = "@article{krueger1999,\n  title = {x}\n}"
    merged = with_works(retrieved, curated)
    # the retrieved copy takes the registry's key (the replication table cites it); the missing work is added
    assert [p["key"] for p in merged["papers"]] == ["krueger1999experimental", "other2020", "goldstein1993multilevel"]
    assert merged["papers"][0]["bibtex"].startswith("@article{krueger1999experimental,")
    assert merged["source"] == "semantic_scholar" and with_works(merged, curated) == merged
