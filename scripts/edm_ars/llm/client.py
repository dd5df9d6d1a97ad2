"""The one model client every agent uses: cache, budget, retries, ledger, transcripts, structured output.

Every call goes: transcript of the prompt -> content-addressed cache (a hit makes no request) -> budget check
-> the backend, retried with exponential backoff and full jitter on 429, 5xx/529, timeouts, dropped
connections and malformed 200 bodies (honouring `retry-after`) -> ledger line, transcript of the answer, cache.
An answer cut at max_tokens or a refusal stops the call at once and is never cached; a JSON answer that cannot
be used gets one repair re-prompt, which asks the model to restate or correct its own answer (code never
completes one). Every attempt is a ledger line (status, HTTP status, attempt, retry, repair, tokens, cost);
every failure is a :class:`ModelServiceError` with a one-line message naming service, agent, round and cause.
The API key lives only in the environment and the request headers: anything written (cache, ledger,
transcripts) or raised is scrubbed of it as a second line of defence.
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

from edm_ars.core.artifacts import atomic_write_text
from edm_ars.llm.backends import AttemptFailed, Backend, Reply, make_backend, malformed
from edm_ars.llm.errors import LLMError, ModelServiceError
from edm_ars.llm.jsonout import extract_json, strip_thinking
from edm_ars.llm.settings import AgentSettings

log = logging.getLogger(__name__)

#: Characters per token used to estimate a prompt's size for the budget check.
CHARS_PER_TOKEN = 3.5
#: Longest wait between attempts: backoff is capped here, and so is a server's retry-after.
MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 300.0
CACHE_VERSION = 1
#: Stop reasons (in the Anthropic vocabulary the backends translate to) of an answer that is not complete.
TRUNCATED = frozenset({"max_tokens", "model_context_window_exceeded"})
REFUSED = frozenset({"refusal"})


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
    cache_creation_input_tokens: int = 0  # prompt caching: input tokens written to the service's cache
    cache_read_input_tokens: int = 0  # and read from it (both billed apart from input_tokens)


def cache_key(backend: str, model: str, system: str, messages: list[dict[str, Any]], temperature: float | None,
              max_tokens: int, options: dict[str, Any] | None = None) -> str:
    """The response cache's key: what decides the answer. `options` is what the request carries besides the
    prompt and max_tokens (Backend.request_options: temperature only where it is sent, effort, output format);
    given, it replaces `temperature`, so a temperature that is not sent does not key the answer."""
    payload = {"backend": backend, "model": model, "system": system, "messages": messages,
               "temperature": temperature, "max_tokens": max_tokens}
    if options is not None:
        del payload["temperature"]
        payload["options"] = options
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

    def _service_error(self, tag: str, cause: str, status: str, attempts: int) -> ModelServiceError:
        s = self.settings
        return ModelServiceError(service=self.backend.service, model=s.model, agent=s.agent, round_=self.run_round,
                                 call=tag, cause=self._scrub(cause), status=status, attempts=attempts)

    def _price(self) -> dict[str, float] | None:
        price = self.prices.get(self.settings.model)
        if price is None:
            return None
        if not {"input_per_mtok", "output_per_mtok"} <= set(price):
            raise self._error(f"prices[{self.settings.model!r}] needs input_per_mtok and output_per_mtok")
        return price

    def cost(self, input_tokens: int, output_tokens: int, cache_write_tokens: int = 0,
             cache_read_tokens: int = 0) -> float | None:
        """Dollars for one answer. Prompt-cache writes and reads are priced with the model's cache_write_per_mtok
        and cache_read_per_mtok; a call that used the cache on a model without those prices costs null (never 0)."""
        price = self._price()
        if price is None:
            return None
        total = input_tokens * price["input_per_mtok"] / 1e6 + output_tokens * price["output_per_mtok"] / 1e6
        for tokens, name in ((cache_write_tokens, "cache_write_per_mtok"), (cache_read_tokens, "cache_read_per_mtok")):
            if tokens:
                if price.get(name) is None:
                    return None
                total += tokens * price[name] / 1e6
        return round(total, 10)

    def cache_key(self, system: str, messages: list[dict[str, Any]], schema: dict | None = None) -> str:
        """The response cache's key of this request (what is sent decides it: see :func:`cache_key`)."""
        s = self.settings
        return cache_key(s.backend, s.model, system, messages, s.temperature, s.max_tokens,
                         self.backend.request_options(schema))

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
            reply = Reply(text=r["text"], stop_reason=r["stop_reason"], input_tokens=int(r["input_tokens"]),
                          output_tokens=int(r["output_tokens"]),
                          cache_creation_input_tokens=int(r.get("cache_creation_input_tokens") or 0),
                          cache_read_input_tokens=int(r.get("cache_read_input_tokens") or 0))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable cache entry %s (%s)", path, type(exc).__name__)
            return None
        if reply.stop_reason in TRUNCATED | REFUSED:  # written by an earlier version: asked again
            log.warning("ignoring cache entry %s: its answer is incomplete (stop_reason %s)", path, reply.stop_reason)
            return None
        return reply

    def _write_cache(self, key: str, system: str, messages: list[dict[str, Any]], reply: Reply,
                     schema: dict | None = None) -> None:
        s = self.settings
        entry = {"version": CACHE_VERSION, "key": key, "backend": s.backend, "model": s.model,
                 "created": _now(), "request": {"system": system, "messages": messages,
                                                "temperature": s.temperature, "max_tokens": s.max_tokens,
                                                "options": self.backend.request_options(schema)},
                 "response": asdict(reply)}
        atomic_write_text(self._cache_path(key), self._scrub(json.dumps(entry, indent=1, ensure_ascii=False)) + "\n")

    def _ledger(self, tag: str, *, attempt: int, status: str, repair: bool, comp: Completion | None = None,
                http_status: int | None = None, latency_s: float | None = None, error: str | None = None) -> None:
        """One line per attempt: a request made (attempt 1, 2, ...) or a cache hit (attempt 0).

        status: ok, unusable (an answer with no usable JSON), truncated, refused, http_error, timeout,
        connection, dropped, malformed or error; retry: this attempt repeats a failed one; repair: this call is
        the repair re-prompt. Tokens and cost are those of the answer (an attempt with no answer costs 0)."""
        s = self.settings
        if comp is not None:
            latency_s = comp.latency_s
        entry: dict[str, Any] = {
            "time": _now(), "agent": s.agent, "round": self.run_round, "tag": tag, "backend": s.backend,
            "model": s.model, "attempt": attempt, "status": status, "http_status": http_status,
            "retry": attempt > 1, "repair": repair, "input_tokens": comp.input_tokens if comp else 0,
            "output_tokens": comp.output_tokens if comp else 0,
            "cache_creation_input_tokens": comp.cache_creation_input_tokens if comp else 0,
            "cache_read_input_tokens": comp.cache_read_input_tokens if comp else 0,
            "cost_usd": comp.cost_usd if comp else (None if self._price() is None else 0.0),
            "latency_s": round(latency_s, 4) if latency_s is not None else None,
            "cache_hit": comp.cache_hit if comp else False, "stop_reason": comp.stop_reason if comp else None}
        if error is not None:
            entry["error"] = error
        line = self._scrub(json.dumps(entry, ensure_ascii=False)) + "\n"
        self.ledger_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.ledger_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line.encode("utf-8"))  # one write of one line: appends from parallel jobs do not mix
        finally:
            os.close(fd)

    def _transcript_prompt(self, tag: str, system: str, messages: list[dict[str, Any]],
                           schema: dict | None = None) -> Path | None:
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
                  "options_sent": self.backend.request_options(schema), "max_tokens": s.max_tokens, "system": system, "messages": messages}
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

    def _send(self, system: str, messages: list[dict[str, Any]], tag: str, repair: bool,
              schema: dict | None = None) -> tuple[Reply, int, float]:
        """The backend call with retries: (reply, attempts, latency of the successful attempt). Every failed
        attempt is a ledger line; the last one ends in a ModelServiceError."""
        retries = max(0, int(self.settings.max_retries))
        for attempt in range(1, retries + 2):
            start = time.monotonic()
            try:
                reply = self.backend.send(system, messages, json_schema=schema)
                if not reply.text.strip() and reply.stop_reason not in TRUNCATED | REFUSED:
                    raise malformed(f"an empty answer (no text; stop_reason {reply.stop_reason})", "",
                                    reply.http_status)
                return reply, attempt, time.monotonic() - start
            except AttemptFailed as exc:
                description = self._scrub(exc.description)
                self._ledger(tag, attempt=attempt, status=exc.status, repair=repair, http_status=exc.http_status,
                             latency_s=time.monotonic() - start, error=description)
                if exc.retryable and attempt <= retries:
                    delay = self._delay(attempt - 1, exc.retry_after)
                    log.warning("%s (%s) %s: %s; retry %d of %d in %.2f s", self.settings.agent,
                                self.settings.model, tag, description, attempt, retries, delay)
                    self.sleep(delay)
                    continue
                if exc.retryable:
                    cause = f"{description}; gave up after {attempt} attempt(s) (llm.max_retries is {retries})"
                else:
                    cause = f"{description} (not retried)"
                raise self._service_error(tag, cause, exc.status, attempt) from None
        raise AssertionError("unreachable")

    def _incomplete(self, reply: Reply) -> tuple[str, str] | None:
        """(status, cause) for an answer that must not be used: cut off, or refused."""
        if reply.stop_reason == "max_tokens":
            agent = self.settings.agent
            return "truncated", (f"answer cut at max_tokens ({self.settings.max_tokens} tokens): raise "
                                 f"llm.agents.{agent}.max_tokens")
        if reply.stop_reason in TRUNCATED:
            return "truncated", (f"answer cut: the prompt and the answer filled the model's context window "
                                 f"(stop_reason {reply.stop_reason})")
        if reply.stop_reason in REFUSED:
            preview = " ".join(reply.text.split())[:200]
            return "refused", "the model refused to answer" + (f": {preview!r}" if preview else " (no text)")
        return None

    def _call(self, system: str, messages: list[dict[str, Any]], *, tag: str, repair: bool,
              assess: Callable[[Completion], tuple[Any, list[str]]] | None, schema: dict | None = None
              ) -> tuple[Completion, Any, list[str]]:
        """One answer (cached or requested), its ledger line and transcript; (completion, value, problems).

        A truncated or refused answer raises (never cached). An answer that `assess` finds problems with is
        recorded as `unusable` and not cached (complete_json caches it once its repair succeeded)."""
        _check_messages(messages)
        s = self.settings
        key = self.cache_key(system, messages, schema)
        stem = self._transcript_prompt(tag, system, messages, schema)
        reply = self._read_cache(key)
        hit = reply is not None
        if reply is None:
            self._check_budget(system, messages, tag)
            reply, attempt, latency = self._send(system, messages, tag, repair, schema)
        else:
            attempt, latency = 0, 0.0
        comp = Completion(text=reply.text, stop_reason=reply.stop_reason, input_tokens=reply.input_tokens,
                          output_tokens=reply.output_tokens,
                          cost_usd=0.0 if hit else self.cost(reply.input_tokens, reply.output_tokens,
                                                             reply.cache_creation_input_tokens,
                                                             reply.cache_read_input_tokens),
                          latency_s=latency, cache_hit=hit, model=s.model, backend=s.backend, attempts=attempt,
                          cache_creation_input_tokens=reply.cache_creation_input_tokens,
                          cache_read_input_tokens=reply.cache_read_input_tokens)
        self._transcript_response(stem, comp.text)
        http_status = None if hit else reply.http_status
        incomplete = self._incomplete(reply)
        if incomplete is not None:
            status, cause = incomplete
            self._ledger(tag, attempt=attempt, status=status, repair=repair, comp=comp, http_status=http_status,
                         error=cause)
            raise self._service_error(tag, cause, status, attempt)
        value, problems = assess(comp) if assess is not None else (None, [])
        self._ledger(tag, attempt=attempt, status="unusable" if problems else "ok", repair=repair, comp=comp,
                     http_status=http_status, error=self._scrub("; ".join(problems)) if problems else None)
        if not hit and not problems:
            self._write_cache(key, system, messages, reply, schema)
        return comp, value, problems

    # ---------------------------------------------------------------- the API
    def complete(self, system: str, messages: list[dict[str, Any]], *, tag: str) -> Completion:
        """One complete model answer (from the cache when this exact request was answered before).

        Raises ModelServiceError when the service fails after the retries, or the answer was cut at
        max_tokens or refused."""
        return self._call(system, messages, tag=tag, repair=False, assess=None)[0]

    def complete_json(self, system: str, messages: list[dict[str, Any]], *, tag: str, schema: dict | None = None,
                      check: Callable[[Any], list[str]] | None = None) -> tuple[Any, Completion]:
        """A JSON answer, validated against `schema` and/or `check`; one repair re-prompt when it is unusable.

        Returns (value, completion of the answer used). The repair asks the model to restate its own answer
        as JSON (no JSON found) or to correct the named problems; code never completes or invents a value.
        A truncated or refused answer, or a repair that is unusable too, raises ModelServiceError."""
        def assess(comp: Completion) -> tuple[Any, list[str]]:
            return self._assess(comp, schema, check)

        comp, value, problems = self._call(system, messages, tag=tag, repair=False, assess=assess, schema=schema)
        if not problems:
            return value, comp
        log.warning("%s %s: unusable JSON answer, asking once for a repair: %s", self.settings.agent, tag,
                    self._scrub("; ".join(problems)))
        repair = [*messages, {"role": "assistant", "content": comp.text.strip() or "(empty answer)"},
                  {"role": "user", "content": repair_request(problems, restate=value is None)}]
        fixed, value, again = self._call(system, repair, tag=f"{tag}-repair", repair=True, assess=assess,
                                         schema=schema)
        if again:
            raise self._service_error(tag, "no usable JSON: the answer was unusable, and so was the answer to the "
                                      "one repair re-prompt: " + "; ".join(again), "unusable", fixed.attempts)
        if not comp.cache_hit:  # the repaired exchange is complete: a rerun replays it from the cache
            self._write_cache(self.cache_key(system, messages, schema), system, messages,
                              Reply(text=comp.text, stop_reason=comp.stop_reason, input_tokens=comp.input_tokens,
                                    output_tokens=comp.output_tokens,
                                    cache_creation_input_tokens=comp.cache_creation_input_tokens,
                                    cache_read_input_tokens=comp.cache_read_input_tokens), schema)
        return value, fixed

    def _assess(self, comp: Completion, schema: dict | None,
                check: Callable[[Any], list[str]] | None) -> tuple[Any, list[str]]:
        """(value, problems): value is None when no complete JSON value was found."""
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


def repair_request(problems: list[str], *, restate: bool = False) -> str:
    """The repair re-prompt. `restate` (no JSON was found): restate the same answer as JSON, form only;
    otherwise correct exactly the listed problems. Neither asks for anything the answer did not say."""
    listed = "\n".join(f"- {p}" for p in problems)
    if restate:
        return ("Your previous answer could not be read as JSON:\n" + listed + "\n\nRestate your previous answer "
                "as the JSON requested: one complete JSON value, with no prose before or after it. Change only its "
                "form: do not add, drop or alter any content.")
    return ("Your previous answer could not be used:\n" + listed + "\n\nReply with the corrected JSON only: one "
            "complete JSON value that fixes every problem above, with no prose before or after it. Change nothing "
            "else.")


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
