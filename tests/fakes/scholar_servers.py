"""Fake Semantic Scholar and CrossRef servers: real HTTP on 127.0.0.1, with scripted failures and request logs.

Fixture data
------------
`S2_PAPERS` is a Semantic Scholar /paper/search result list. Nine entries are real EDM / ML papers whose
metadata (title, authors, year, venue, volume, pages, DOI) is copied from registry/bibliography/references.bib,
where every field was confirmed in a public source; their paper ids are synthetic (sha1 of the title) and their
abstracts are short stand-ins written for these tests, not the papers' real abstracts. The planted faults are:

* a real NeurIPS paper with no DOI that CrossRef does not know            -> SUSPICIOUS
* an invented paper whose DOI resolves to a different work (XGBoost)       -> HALLUCINATED
* an invented paper that has no paperId in the response                    -> HALLUCINATED
* an entry with no year (skipped before verification)

`CROSSREF_WORKS` are CrossRef-style work records for the real papers (plus the XGBoost paper and a distractor).
`EXPECTED_STATUS` maps each title to the status verification should give it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _pid(title: str) -> str:
    return hashlib.sha1(title.encode()).hexdigest()


def _s2(title: str, authors: list[str], year: int | None, venue: str, *, doi: str | None = None,
        journal: dict[str, Any] | None = None, types: list[str] | None = None, abstract: str | None = None,
        url: bool = True, paper_id: str | None | bool = True, citations: int = 0) -> dict[str, Any]:
    pid = _pid(title) if paper_id is True else (paper_id or None)
    external: dict[str, Any] = {"DOI": doi} if doi else {}
    return {
        "paperId": pid, "externalIds": external, "title": title, "abstract": abstract, "venue": venue,
        "year": year, "citationCount": citations, "publicationTypes": types,
        "journal": journal, "url": f"https://www.semanticscholar.org/paper/{pid}" if url and pid else None,
        "authors": [{"authorId": str(1000 + i), "name": n} for i, n in enumerate(authors)],
    }


ROMERO = "Educational data mining and learning analytics: An updated survey"
BAKER = "Algorithmic Bias in Education"
GARDNER = "Evaluating the Fairness of Predictive Student Models Through Slicing Analysis"
BOWERS = ("Do We Know Who Will Drop Out? A Review of the Predictors of Dropping out of High School: "
          "Precision, Sensitivity, and Specificity")
KOTSIANTIS = "Predicting students' performance in distance learning using machine learning techniques"
LAKKARAJU = "A Machine Learning Framework to Identify Students at Risk of Adverse Academic Outcomes"
SANSONE = "Beyond Early Warning Indicators: High School Dropout and Machine Learning"
HE = "Predicting College Enrollment for Low-Socioeconomic-Status Students Using Machine Learning Approaches"
LUNDBERG = "From local explanations to global understanding with explainable AI for trees"
HARDT = "Equality of Opportunity in Supervised Learning"
FAKE_DOI_TITLE = "Gradient Boosted Early Warning Models for College Enrollment in the HSLS:09 Cohort"
FAKE_ID_TITLE = "Ninth-Grade Belonging and Postsecondary Persistence: A National Machine Learning Study"
NO_YEAR_TITLE = "Student Success Prediction in Secondary Schools"
XGBOOST = "XGBoost: A Scalable Tree Boosting System"

VERIFIED_TITLES = [ROMERO, BAKER, GARDNER, BOWERS, KOTSIANTIS, LAKKARAJU, SANSONE, HE, LUNDBERG]
EXPECTED_STATUS = {**dict.fromkeys(VERIFIED_TITLES, "VERIFIED"), HARDT: "SUSPICIOUS",
                   FAKE_DOI_TITLE: "HALLUCINATED", FAKE_ID_TITLE: "HALLUCINATED"}

S2_PAPERS: list[dict[str, Any]] = [
    _s2(ROMERO, ["Cristóbal Romero", "Sebastián Ventura"], 2020, "WIREs Data Mining and Knowledge Discovery",
        doi="10.1002/widm.1355", types=["JournalArticle", "Review"], citations=900,
        journal={"name": "WIREs Data Mining and Knowledge Discovery", "volume": "10", "pages": "e1355"},
        abstract="A survey of educational data mining and learning analytics research."),
    _s2(NO_YEAR_TITLE, ["Jane Q. Example"], None, "", types=None),
    _s2(BAKER, ["Ryan S. Baker", "Aaron Hawn"], 2022, "International Journal of Artificial Intelligence in Education",
        doi="10.1007/s40593-021-00285-9", types=["JournalArticle", "Review"], citations=400,
        journal={"name": "International Journal of Artificial Intelligence in Education", "volume": "32",
                 "pages": "1052 - 1092"},
        abstract="A review of algorithmic bias and fairness in educational prediction models."),
    _s2(GARDNER, ["Josh Gardner", "Christopher Brooks", "Ryan Baker"], 2019,
        "International Conference on Learning Analytics and Knowledge", doi="10.1145/3303772.3303791",
        types=["JournalArticle", "Conference"], citations=200,
        journal={"name": "Proceedings of the 9th International Conference on Learning Analytics & Knowledge",
                 "pages": "225-234"}),
    _s2(FAKE_DOI_TITLE, ["Morgan Fieldstone", "Priya Ramanathan"], 2021, "Journal of Educational Data Mining",
        doi="10.1145/2939672.2939785", types=["JournalArticle"],
        journal={"name": "Journal of Educational Data Mining", "volume": "13", "pages": "1-29"},
        abstract="Gradient boosting predicts college enrollment from HSLS:09 survey data."),
    _s2(BOWERS, ["Alex J. Bowers", "Ryan Sprott", "Sherry A. Taff"], 2013, "The High School Journal",
        doi="10.1353/hsj.2013.0000", types=["JournalArticle", "Review"], citations=300,
        journal={"name": "The High School Journal", "volume": "96", "pages": "77 - 100"}),
    _s2(KOTSIANTIS, ["S. Kotsiantis", "C. Pierrakeas", "P. Pintelas"], 2004, "Applied Artificial Intelligence",
        doi="10.1080/08839510490442058", types=["JournalArticle"], citations=700,
        journal={"name": "Applied Artificial Intelligence", "volume": "18", "pages": "411 - 426"}),
    _s2(HARDT, ["Moritz Hardt", "Eric Price", "Nathan Srebro"], 2016, "Neural Information Processing Systems",
        types=["Conference"], citations=4000, journal={"name": "", "pages": "3315-3323"},
        abstract="A criterion for discrimination against a specified sensitive attribute in supervised learning."),
    _s2(LAKKARAJU, ["Himabindu Lakkaraju", "Everaldo Aguiar", "Carl Shan", "David Miller", "Nasir Bhanpuri",
                    "Rayid Ghani", "Kecia L. Addison"], 2015, "Knowledge Discovery and Data Mining",
        doi="10.1145/2783258.2788620", types=["JournalArticle", "Conference"], citations=350,
        journal={"name": "Proceedings of the 21th ACM SIGKDD International Conference on Knowledge Discovery "
                         "and Data Mining", "pages": "1909-1918"},
        abstract="An early warning framework identifies students at risk of not graduating high school on time."),
    _s2(FAKE_ID_TITLE, ["Dana Whitcombe"], 2023, "Computers & Education", types=["JournalArticle"],
        journal={"name": "Computers & Education", "volume": "201"}, paper_id=None),
    _s2(SANSONE, ["Dario Sansone"], 2019, "Oxford Bulletin of Economics and Statistics", doi="10.1111/obes.12277",
        types=["JournalArticle"], citations=100,
        journal={"name": "Oxford Bulletin of Economics and Statistics", "volume": "81", "pages": "456-485"},
        abstract="Machine learning improves on early warning indicators of high school dropout."),
    _s2(HE, ["Surina He", "Mehrdad Yousefpoori-Naeim", "Ying Cui", "Maria Cutumisu"], 2025,
        "Big Data and Cognitive Computing", doi="10.3390/bdcc9040099", types=["JournalArticle"], citations=3,
        journal={"name": "Big Data and Cognitive Computing", "volume": "9", "pages": "99"},
        abstract="Machine learning models predict college enrollment of low-SES students using HSLS:09 data."),
    _s2(LUNDBERG, ["Scott M. Lundberg", "Gabriel Erion", "Hugh Chen", "Alex DeGrave", "Jordan M. Prutkin",
                   "Bala Nair", "Ronit Katz", "Jonathan Himmelfarb", "Nisha Bansal", "Su-In Lee"], 2020,
        "Nature Machine Intelligence", doi="10.1038/s42256-019-0138-9", types=["JournalArticle"], citations=5000,
        journal={"name": "Nature Machine Intelligence", "volume": "2", "pages": "56 - 67"},
        abstract="TreeExplainer computes exact SHAP values for tree ensembles."),
]


def _cr(doi: str, title: str, authors: list[tuple[str, str]], year: int, container: str,
        kind: str = "journal-article") -> dict[str, Any]:
    return {"DOI": doi, "title": [title], "type": kind, "container-title": [container] if container else [],
            "author": [{"given": g, "family": f} for g, f in authors], "issued": {"date-parts": [[year]]},
            "URL": f"https://doi.org/{doi}"}


CROSSREF_WORKS: list[dict[str, Any]] = [
    _cr("10.1002/widm.1355", ROMERO, [("Cristóbal", "Romero"), ("Sebastián", "Ventura")], 2020,
        "WIREs Data Mining and Knowledge Discovery"),
    _cr("10.1007/s40593-021-00285-9", BAKER, [("Ryan S.", "Baker"), ("Aaron", "Hawn")], 2022,
        "International Journal of Artificial Intelligence in Education"),
    _cr("10.1145/3303772.3303791", GARDNER, [("Josh", "Gardner"), ("Christopher", "Brooks"), ("Ryan", "Baker")], 2019,
        "Proceedings of the 9th International Conference on Learning Analytics & Knowledge", "proceedings-article"),
    # CrossRef's record writes "?:" where Semantic Scholar has "?": word similarity still 1.0.
    _cr("10.1353/hsj.2013.0000", BOWERS.replace("Out? A", "Out?: A"), [("Alex J.", "Bowers"), ("Ryan", "Sprott"),
                                                                        ("Sherry A.", "Taff")], 2013,
        "The High School Journal"),
    _cr("10.1080/08839510490442058", KOTSIANTIS.replace("students'", "students’"),
        [("S.", "Kotsiantis"), ("C.", "Pierrakeas"), ("P.", "Pintelas")], 2004, "Applied Artificial Intelligence"),
    _cr("10.1145/2783258.2788620", LAKKARAJU, [("Himabindu", "Lakkaraju"), ("Everaldo", "Aguiar")], 2015,
        "Proceedings of the 21th ACM SIGKDD International Conference on Knowledge Discovery and Data Mining",
        "proceedings-article"),
    _cr("10.1111/obes.12277", SANSONE, [("Dario", "Sansone")], 2019, "Oxford Bulletin of Economics and Statistics"),
    _cr("10.3390/bdcc9040099", HE, [("Surina", "He"), ("Ying", "Cui")], 2025, "Big Data and Cognitive Computing"),
    _cr("10.1038/s42256-019-0138-9", LUNDBERG,
        [("Scott M.", "Lundberg"), ("Su-In", "Lee")], 2020, "Nature Machine Intelligence"),
    _cr("10.1145/2939672.2939785", XGBOOST, [("Tianqi", "Chen"), ("Carlos", "Guestrin")], 2016,
        "Proceedings of the 22nd ACM SIGKDD International Conference on Knowledge Discovery and Data Mining",
        "proceedings-article"),
    _cr("10.1016/j.patrec.2005.10.010", "An introduction to ROC analysis", [("Tom", "Fawcett")], 2006,
        "Pattern Recognition Letters"),
]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


# ---------------------------------------------------------------------------------------------- servers


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client that timed out and hung up is expected
        pass


class FakeServer:
    """A real HTTP server on 127.0.0.1 (port 0) in a daemon thread; use as a context manager.

    `script` is a list of steps consumed one per request before normal answers resume:
    {"status": 429, "retry_after": "2"}, {"status": 500}, {"status": 403}, or {"sleep": 1.5} (answer normally,
    late). `requests` records every request: method, path, query (dict of first values) and headers (lower-case).
    """

    def __init__(self, script: list[dict[str, Any]] | None = None):
        self.script = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: _QuietServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------
    def __enter__(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (BaseHTTPRequestHandler's naming)
                fake._dispatch(self)

            def log_message(self, format, *args):  # noqa: A002
                pass

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        server = self._server
        self._thread = threading.Thread(target=lambda: server.serve_forever(poll_interval=0.02), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        assert self._server is not None, "use the fake server as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def requests_to(self, path_prefix: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["path"].startswith(path_prefix)]

    # -- dispatch --------------------------------------------------------------------------------------
    def _dispatch(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(handler.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query, keep_blank_values=True).items()}
        record = {"method": handler.command, "path": urllib.parse.unquote(parts.path), "query": query,
                  "headers": {k.lower(): v for k, v in handler.headers.items()}, "time": time.monotonic()}
        with self._lock:
            self.requests.append(record)
            step = self.script.pop(0) if self.script else None
        try:
            if step and "sleep" in step:
                time.sleep(step["sleep"])
            if step and "status" in step:
                headers = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else {}
                self._send(handler, step["status"], {"message": step.get("message", "scripted failure")}, headers)
                return
            status, body = self.answer(record["path"], query)
            self._send(handler, status, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the answer

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None):
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        raise NotImplementedError


class FakeSemanticScholar(FakeServer):
    """GET /graph/v1/paper/search -> {"total", "offset", "data": papers[:limit]} (fields projected as requested)."""

    def __init__(self, papers: list[dict[str, Any]], script: list[dict[str, Any]] | None = None):
        super().__init__(script)
        self.papers = [dict(p) for p in papers]

    @property
    def base_url(self) -> str:
        return f"{self.url}/graph/v1"

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if path != "/graph/v1/paper/search":
            return 404, {"error": f"no route {path}"}
        if not query.get("query"):
            return 400, {"error": "query is required"}
        limit = int(query.get("limit", "10"))
        fields = [f for f in query.get("fields", "title").split(",") if f]
        data = [{"paperId": p.get("paperId"), **{f: p.get(f) for f in fields if f != "paperId"}}
                for p in self.papers[:limit]]
        out: dict[str, Any] = {"total": len(self.papers), "offset": 0, "data": data}
        if limit < len(self.papers):
            out["next"] = limit
        return 200, out


class FakeCrossRef(FakeServer):
    """GET /works?query.bibliographic=&rows= (ranked by word overlap) and GET /works/{doi} (404 when unknown)."""

    def __init__(self, works: list[dict[str, Any]], script: list[dict[str, Any]] | None = None):
        super().__init__(script)
        self.works = [dict(w) for w in works]

    @property
    def base_url(self) -> str:
        return self.url

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if path == "/works":
            wanted = _words(query.get("query.bibliographic", ""))
            rows = int(query.get("rows", "20"))
            scored = []
            for w in self.works:
                have = _words(" ".join(w.get("title", [])))
                overlap = len(wanted & have) / max(1, len(wanted | have))
                if overlap > 0:
                    scored.append((overlap, w))
            scored.sort(key=lambda t: -t[0])
            items = [dict(w, score=round(100 * s, 2)) for s, w in scored[:rows]]
            return 200, {"status": "ok", "message-type": "work-list",
                         "message": {"total-results": len(scored), "items": items}}
        if path.startswith("/works/"):
            doi = path[len("/works/"):].lower()
            for w in self.works:
                if w["DOI"].lower() == doi:
                    return 200, {"status": "ok", "message-type": "work", "message": w}
            return 404, b"Resource not found."
        return 404, {"error": f"no route {path}"}
