"""The one model client every agent uses: cache, budget, retries, ledger, transcripts, structured output.

Every call goes: transcript of the prompt -> content-addressed cache (a hit makes no request) -> budget check
-> the backend, retried with exponential backoff and full jitter on 429, 5xx/529, timeouts and dropped
connections (honouring `retry-after`) -> cache, ledger line, transcript of the answer. The API key lives only
in the environment and the request headers: anything written (cache, ledger, transcripts) or raised is
scrubbed of it as a second line of defence.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jsonschema

from ..artifacts import atomic_write_text
from .backends import AttemptFailed, Backend, Reply, make_backend
from .errors import LLMError
from .jsonout import extract_json, strip_thinking

log = logging.getLogger(__name__)

#: Characters per token used to estimate a prompt's size for the budget check.
CHARS_PER_TOKEN = 3.5
#: Longest wait between attempts: backoff is capped here, and so is a server's retry-after.
MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 300.0
CACHE_VERSION = 1


@dataclass
class AgentSettings:
    agent: str  # "formulate", "critique", "write", ...
    backend: str  # "anthropic" | "openai_compatible" (see backends.BACKENDS)
    model: str
    temperature: float
    max_tokens: int
    timeout_s: float = 120.0
    max_retries: int = 4
    base_url: str | None = None  # anthropic: optional (SDK default / ANTHROPIC_BASE_URL); openai_compatible: required
    api_key_env: str | None = None  # env var holding the key; default ANTHROPIC_API_KEY / OPENAI_API_KEY


@dataclass
class Completion:
    text: str
    stop_reason: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: the model has no price; 0.0 for a cache hit
    latency_s: float
    cache_hit: bool
    model: str
    backend: str
    attempts: int = 1  # requests made (0 for a cache hit)


def cache_key(backend: str, model: str, system: str, messages: list[dict[str, Any]], temperature: float,
              max_tokens: int) -> str:
    payload = {"backend": backend, "model": model, "system": system, "messages": messages,
               "temperature": temperature, "max_tokens": max_tokens}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ledger_spent(ledger_path: str | Path) -> float:
    """Dollars spent according to one ledger file (unpriced calls count as 0)."""
    path = Path(ledger_path)
    if not path.exists():
        return 0.0
    total = 0.0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            total += json.loads(line).get("cost_usd") or 0.0
    return total


def _content_chars(content: Any) -> int:
    return len(content) if isinstance(content, str) else len(json.dumps(content, ensure_ascii=False))


def _check_messages(messages: list[dict[str, Any]]) -> None:
    if not isinstance(messages, list) or not messages:
        raise LLMError("messages must be a non-empty list of {'role': ..., 'content': ...}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in {"user", "assistant"} or "content" not in m:
            raise LLMError(f"message {i} must be {{'role': 'user' | 'assistant', 'content': ...}} "
                           "(the system prompt is passed separately)")


class LLMClient:
    def __init__(self, settings: AgentSettings, *, run_round: int, cache_dir: Path, ledger_path: Path,
                 transcript_dir: Path | None, prices: dict[str, dict[str, float]] | None = None,
                 budget_usd: float | None = None, spent_usd: Callable[[], float] | None = None,
                 backoff_base_s: float = 1.0, sleep: Callable[[float], Any] = time.sleep,
                 rng: random.Random | None = None):
        self.settings = settings
        self.backend: Backend = make_backend(settings)
        self.run_round = run_round
        self.cache_dir = Path(cache_dir)
        self.ledger_path = Path(ledger_path)
        self.transcript_dir = Path(transcript_dir) if transcript_dir is not None else None
        self.prices = prices or {}
        self.budget_usd = budget_usd
        self.spent_usd = spent_usd or (lambda: ledger_spent(self.ledger_path))
        self.backoff_base_s = backoff_base_s
        self.sleep = sleep
        self.rng = rng or random.Random()

    # ---------------------------------------------------------------- helpers
    def _scrub(self, text: str) -> str:
        """Replace the API key's value, should it ever turn up, before text is written or raised."""
        env = self.backend.key_env
        key = os.environ.get(env) if env else None
        if key and len(key) >= 8 and key in text:
            text = text.replace(key, "[redacted]")
        return text

    def _error(self, detail: str) -> LLMError:
        s = self.settings
        return LLMError(self._scrub(f"agent {s.agent!r} (model {s.model}, backend {s.backend}): {detail}"))

    def _price(self) -> dict[str, float] | None:
        price = self.prices.get(self.settings.model)
        if price is None:
            return None
        if not {"input_per_mtok", "output_per_mtok"} <= set(price):
            raise self._error(f"prices[{self.settings.model!r}] needs input_per_mtok and output_per_mtok")
        return price

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        price = self._price()
        if price is None:
            return None
        return round(input_tokens * price["input_per_mtok"] / 1e6 + output_tokens * price["output_per_mtok"] / 1e6, 10)

    def _check_budget(self, system: str, messages: list[dict[str, Any]], tag: str) -> None:
        if self.budget_usd is None:
            return
        price = self._price()
        if price is None:
            raise self._error(f"cannot enforce the budget of ${self.budget_usd:.2f} on an unpriced model: add "
                              f"input_per_mtok and output_per_mtok for {self.settings.model!r} to the prices")
        chars = len(system) + sum(_content_chars(m.get("content")) for m in messages)
        estimate = (chars / CHARS_PER_TOKEN * price["input_per_mtok"] / 1e6
                    + self.settings.max_tokens * price["output_per_mtok"] / 1e6)
        spent = float(self.spent_usd())
        if spent + estimate > self.budget_usd:
            raise self._error(f"budget of ${self.budget_usd:.4f} would be exceeded: spent ${spent:.4f} of "
                              f"${self.budget_usd:.4f}, and call {tag!r} may cost up to ${estimate:.4f}; "
                              "no request was made")

    def _cache_path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _read_cache(self, key: str) -> Reply | None:
        path = self._cache_path(key)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            r = entry["response"]
            return Reply(text=r["text"], stop_reason=r["stop_reason"], input_tokens=int(r["input_tokens"]),
                         output_tokens=int(r["output_tokens"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable cache entry %s (%s)", path, type(exc).__name__)
            return None

    def _write_cache(self, key: str, system: str, messages: list[dict[str, Any]], reply: Reply) -> None:
        s = self.settings
        entry = {"version": CACHE_VERSION, "key": key, "backend": s.backend, "model": s.model,
                 "created": _now(), "request": {"system": system, "messages": messages,
                                                "temperature": s.temperature, "max_tokens": s.max_tokens},
                 "response": asdict(reply)}
        atomic_write_text(self._cache_path(key), self._scrub(json.dumps(entry, indent=1, ensure_ascii=False)) + "\n")

    def _ledger(self, tag: str, comp: Completion | None, attempts: int, error: str | None = None) -> None:
        s = self.settings
        entry: dict[str, Any] = {
            "time": _now(), "agent": s.agent, "round": self.run_round, "tag": tag, "backend": s.backend,
            "model": s.model, "input_tokens": comp.input_tokens if comp else 0,
            "output_tokens": comp.output_tokens if comp else 0,
            "cost_usd": comp.cost_usd if comp else (None if self._price() is None else 0.0),
            "latency_s": round(comp.latency_s, 4) if comp else None, "cache_hit": comp.cache_hit if comp else False,
            "attempts": attempts, "stop_reason": comp.stop_reason if comp else None}
        if error is not None:
            entry["error"] = error
        line = self._scrub(json.dumps(entry, ensure_ascii=False)) + "\n"
        self.ledger_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.ledger_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))  # one write of one line: appends from parallel jobs do not mix
        finally:
            os.close(fd)

    def _transcript_prompt(self, tag: str, system: str, messages: list[dict[str, Any]]) -> Path | None:
        """Write <tag>-<n>.prompt.json with the next free n; returns the stem for the response file."""
        if self.transcript_dir is None:
            return None
        s = self.settings
        self.transcript_dir.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", tag).strip("._") or "call"
        pattern = re.compile(rf"{re.escape(safe)}-(\d+)\.prompt\.json")
        taken = [int(m.group(1)) for p in self.transcript_dir.iterdir() if (m := pattern.fullmatch(p.name))]
        n = max(taken, default=0) + 1
        record = {"agent": s.agent, "round": self.run_round, "tag": tag, "backend": s.backend, "model": s.model,
                  "temperature": s.temperature, "temperature_sent": self.backend.sends_temperature,
                  "max_tokens": s.max_tokens, "system": system, "messages": messages}
        text = self._scrub(json.dumps(record, indent=2, ensure_ascii=False)) + "\n"
        while True:
            stem = self.transcript_dir / f"{safe}-{n}"
            try:
                with open(f"{stem}.prompt.json", "x", encoding="utf-8") as fh:  # claims n against parallel writers
                    fh.write(text)
                return stem
            except FileExistsError:
                n += 1

    def _transcript_response(self, stem: Path | None, text: str) -> None:
        if stem is not None:
            atomic_write_text(f"{stem}.response.txt", self._scrub(text))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S)
        return self.rng.uniform(0.0, min(MAX_BACKOFF_S, self.backoff_base_s * 2 ** attempt))

    def _send(self, system: str, messages: list[dict[str, Any]], tag: str) -> tuple[Reply, int, float]:
        """The backend call with retries: (reply, attempts, latency of the successful attempt)."""
        retries = max(0, int(self.settings.max_retries))
        for attempt in range(retries + 1):
            start = time.monotonic()
            try:
                return self.backend.send(system, messages), attempt + 1, time.monotonic() - start
            except AttemptFailed as exc:
                if not exc.retryable:
                    detail = f"call {tag!r} failed: {exc.description} (not retried)"
                elif attempt == retries:
                    detail = f"call {tag!r} failed after {attempt + 1} attempt(s); last error: {exc.description}"
                else:
                    delay = self._delay(attempt, exc.retry_after)
                    log.warning("%s (%s) %s: %s; retry %d of %d in %.2f s", self.settings.agent,
                                self.settings.model, tag, self._scrub(exc.description), attempt + 1, retries, delay)
                    self.sleep(delay)
                    continue
                self._ledger(tag, None, attempt + 1, error=self._scrub(exc.description))
                raise self._error(detail) from None
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- the API
    def complete(self, system: str, messages: list[dict[str, Any]], *, tag: str) -> Completion:
        """One model answer (from the cache when this exact request was answered before)."""
        _check_messages(messages)
        s = self.settings
        key = cache_key(s.backend, s.model, system, messages, s.temperature, s.max_tokens)
        stem = self._transcript_prompt(tag, system, messages)
        cached = self._read_cache(key)
        if cached is not None:
            comp = Completion(text=cached.text, stop_reason=cached.stop_reason, input_tokens=cached.input_tokens,
                              output_tokens=cached.output_tokens, cost_usd=0.0, latency_s=0.0, cache_hit=True,
                              model=s.model, backend=s.backend, attempts=0)
            self._ledger(tag, comp, 0)
            self._transcript_response(stem, comp.text)
            return comp
        self._check_budget(system, messages, tag)
        reply, attempts, latency = self._send(system, messages, tag)
        cost = self.cost(reply.input_tokens, reply.output_tokens)
        comp = Completion(text=reply.text, stop_reason=reply.stop_reason, input_tokens=reply.input_tokens,
                          output_tokens=reply.output_tokens, cost_usd=cost, latency_s=latency, cache_hit=False,
                          model=s.model, backend=s.backend, attempts=attempts)
        if reply.stop_reason != "refusal":  # a refusal is not kept: a later run asks again
            self._write_cache(key, system, messages, reply)
        self._ledger(tag, comp, attempts)
        self._transcript_response(stem, comp.text)
        return comp

    def complete_json(self, system: str, messages: list[dict[str, Any]], *, tag: str, schema: dict | None = None,
                      check: Callable[[Any], list[str]] | None = None) -> tuple[Any, Completion]:
        """A JSON answer, validated against `schema` and/or `check`; one repair re-prompt when it is unusable.

        Returns (value, completion of the answer used). A refusal fails at once; an answer cut off at
        max_tokens counts as unusable."""
        comp = self.complete(system, messages, tag=tag)
        value, problems = self._assess(comp, tag, schema, check)
        if not problems:
            return value, comp
        log.warning("%s %s: unusable JSON answer, asking once for a repair: %s", self.settings.agent, tag, problems)
        repair = [*messages, {"role": "assistant", "content": comp.text.strip() or "(empty answer)"},
                  {"role": "user", "content": repair_request(problems)}]
        comp = self.complete(system, repair, tag=f"{tag}-repair")
        value, problems = self._assess(comp, f"{tag}-repair", schema, check)
        if problems:
            raise self._error(f"call {tag!r}: the answer was still unusable after one repair re-prompt:\n"
                              + "\n".join(f"  - {p}" for p in problems))
        return value, comp

    def _assess(self, comp: Completion, tag: str, schema: dict | None,
                check: Callable[[Any], list[str]] | None) -> tuple[Any, list[str]]:
        if comp.stop_reason == "refusal":
            preview = " ".join(comp.text.split())[:200]
            raise self._error(f"call {tag!r}: the model refused to answer (stop_reason 'refusal')"
                              + (f": {preview!r}" if preview else ""))
        if comp.stop_reason == "max_tokens":
            return None, [f"the answer was truncated: it reached the limit of max_tokens={self.settings.max_tokens} "
                          "output tokens before it was complete; give the complete JSON, more concisely"]
        try:
            value = extract_json(comp.text)
        except ValueError as exc:
            hint = _json_error_hint(comp.text)
            return None, [f"{exc}" + (f" (parse error: {hint})" if hint else "")]
        if schema is not None:
            validator = jsonschema.Draft202012Validator(schema)
            errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
            if errors:
                return value, [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors[:20]]
        if check is not None:
            problems = [str(p) for p in (check(value) or [])]
            if problems:
                return value, problems
        return value, []


def repair_request(problems: list[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems)
    return ("Your previous answer could not be used:\n" + listed + "\n\nReply with the corrected JSON only: one "
            "complete JSON value that fixes every problem above, with no prose before or after it.")


def _json_error_hint(text: str) -> str | None:
    """The parser's complaint about the first JSON-looking part of the answer, to help the repair."""
    body = strip_thinking(text)
    starts = [k for k in (body.find("{"), body.find("[")) if k >= 0]
    if not starts:
        return None
    candidate = body[min(starts):]
    fence = candidate.find("```")
    if fence >= 0:
        candidate = candidate[:fence]
    try:
        json.loads(candidate)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return None


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
