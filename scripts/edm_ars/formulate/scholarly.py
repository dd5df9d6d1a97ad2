"""The scholarly APIs the literature retrieval (edm_ars.formulate.literature) asks: Semantic Scholar search and
CrossRef title search and DOI resolution, over one GET-JSON client with retries, backoff and a disk cache.

HTTP uses the standard library only. Responses are cached on disk (``cache_dir``) keyed by the request
path and parameters, never by credentials: a rerun makes no request. The Semantic Scholar API key is read
from the environment, sent as the ``x-api-key`` header, and never logged or written to the cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.client import HTTPException
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text
from edm_ars.core.errors import EdmArsError
from edm_ars.core.retry_after import retry_after_seconds
from edm_ars.formulate.metadata import normalise_doi

log = logging.getLogger(__name__)


S2_FIELDS = ("paperId,title,authors,year,venue,externalIds,url,abstract,citationCount,publicationTypes,"
             "journal")


USER_AGENT = "EDM-ARS/0.1 (literature retrieval)"


MAX_BACKOFF_S = 60.0       # cap on exponential backoff


MAX_RETRY_AFTER_S = 300.0  # cap on a server's retry-after


class RetrievalError(EdmArsError):
    """A literature service failed: network error after retries, an HTTP error, or an unusable response."""


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
