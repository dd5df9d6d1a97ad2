"""Providers behind one small interface: a backend sends one request and reports one reply or one failure.

Adding a provider is adding a subclass of :class:`Backend` and registering it with :func:`register_backend`.
A backend never retries, caches or prices: :class:`edm_ars.llm.client.LLMClient` does all of that the same
way for every provider. The API key is read from the environment inside :meth:`Backend.send`, at call time,
and goes nowhere but the request's headers.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from edm_ars.core.retry_after import retry_after_seconds
from edm_ars.llm.errors import LLMError

if TYPE_CHECKING:
    from edm_ars.llm.settings import AgentSettings

try:  # the classic package name; recent SDKs ship it as httpx2
    import httpx
except ImportError:  # pragma: no cover - depends on the environment
    import httpx2 as httpx  # type: ignore[no-redef]

#: HTTP statuses worth another attempt: request timeout, rate limit, server errors, 529 overloaded.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


@dataclass
class Reply:
    """What one successful request returned, already in the provider-neutral vocabulary."""

    text: str
    stop_reason: str | None
    input_tokens: int
    output_tokens: int
    http_status: int = 200
    #: prompt caching (Anthropic): input tokens written to and read from the service's prompt cache. They are
    #: billed apart from `input_tokens` (which counts only the tokens after the last cache breakpoint).
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class AttemptFailed(Exception):  # noqa: N818 - an outcome, caught by the client's retry loop
    """One attempt failed; `retryable` says whether another attempt may succeed.

    `status` is the ledger's word for it: http_error (with `http_status`), timeout, connection (no connection
    was made), dropped (the connection closed before the answer was complete) or malformed (an answer that is
    not valid JSON, is empty or has the wrong shape)."""

    def __init__(self, description: str, *, retryable: bool, retry_after: float | None = None,
                 status: str = "http_error", http_status: int | None = None):
        super().__init__(description)
        self.description = description
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.http_status = http_status


def malformed(what: str, body: str, http_status: int = 200) -> AttemptFailed:
    """A 200 answer the client cannot read: retried, since a proxy or an overloaded server sends these."""
    shown = f": {_short(body, 120)!r}" if body.strip() else ""
    return AttemptFailed(f"malformed response: HTTP {http_status} with {what}{shown}", retryable=True,
                         status="malformed", http_status=http_status)


def _json_body(text: str, http_status: int) -> Any:
    if not text.strip():
        raise malformed("an empty body", text, http_status)
    try:
        return json.loads(text)
    except ValueError:
        raise malformed("a body that is not valid JSON", text, http_status) from None


def _token_count(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _transport_failure(exc: BaseException, timeout_s: float, via: str) -> AttemptFailed:
    """An httpx failure (directly, or as the cause of an SDK connection error) as an attempt that failed. Told
    apart by class name, so that httpx and httpx2 (the SDK's copy) are read alike."""
    bases = {c.__name__ for c in type(exc).__mro__}
    what = f"{via}{type(exc).__name__}" + (f": {_short(str(exc), 160)}" if str(exc) else "")
    if "TimeoutException" in bases:
        return AttemptFailed(f"timeout: no answer within {timeout_s:g} s ({what})", retryable=True,
                             status="timeout")
    if "DecodingError" in bases:
        return AttemptFailed(f"malformed response: the body could not be decoded ({what})", retryable=True,
                             status="malformed")
    if bases & {"RemoteProtocolError", "ReadError", "WriteError", "CloseError"}:
        return AttemptFailed(f"connection dropped before the answer was complete ({what})", retryable=True,
                             status="dropped")
    if bases & {"UnsupportedProtocol", "InvalidURL", "LocalProtocolError"}:
        return AttemptFailed(f"could not send the request ({what}): check base_url", retryable=False,
                             status="connection")
    return AttemptFailed(f"could not connect ({what})", retryable=True, status="connection")


class Backend(ABC):
    """One provider. Subclasses set `name` and `default_key_env` and implement `send`."""

    name: ClassVar[str]
    default_key_env: ClassVar[str | None] = None
    requires_key: ClassVar[bool] = True
    requires_base_url: ClassVar[bool] = False
    #: Whether the configured temperature reaches the provider (recorded in the transcripts).
    sends_temperature: bool = True

    def __init__(self, settings: AgentSettings):
        self.settings = settings
        if self.requires_base_url and not settings.base_url:
            raise LLMError(f"agent {settings.agent!r}: backend {self.name!r} needs a base_url "
                           f"(model {settings.model})")

    def default_base_url(self) -> str:
        """Where requests go when no base_url is configured."""
        return ""

    @property
    def service(self) -> str:
        """The service as the user configured it: backend name and host (never a path, query or credentials)."""
        url = self.settings.base_url or self.default_base_url()
        try:
            parts = urlsplit(url if "//" in url else f"//{url}")
            host, port = parts.hostname or "?", parts.port
        except ValueError:  # not a URL: the message says so, the request failed on it already
            return f"{self.name} at an invalid base_url"
        host = f"[{host}]" if ":" in host else host
        return f"{self.name} at {host}" + (f":{port}" if port else "")

    @property
    def key_env(self) -> str | None:
        return self.settings.api_key_env or self.default_key_env

    def api_key(self) -> str | None:
        """The key from the environment, now. Missing and required: LLMError naming the variable."""
        env = self.key_env
        key = os.environ.get(env) if env else None
        if not key and self.requires_key:
            raise LLMError(f"agent {self.settings.agent!r} (model {self.settings.model}, backend {self.name}): "
                           f"no API key: set the environment variable {env}")
        return key or None

    def request_options(self, json_schema: dict[str, Any] | None = None) -> dict[str, Any]:
        """What a request carries besides the model, system prompt, messages and max_tokens (sampling, effort,
        output format): the answer depends on it, so it is part of the response cache key."""
        temperature = self.settings.temperature
        return {"temperature": temperature} if self.sends_temperature and temperature is not None else {}

    @abstractmethod
    def send(self, system: str, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
             ) -> Reply:
        """Send one request; return its Reply or raise AttemptFailed (or LLMError for a setup problem).

        `json_schema`: the JSON schema the answer must match, for backends that can ask for structured output
        (the others ignore it; the client validates every JSON answer either way)."""


BACKENDS: dict[str, type[Backend]] = {}


def register_backend(cls: type[Backend]) -> type[Backend]:
    """Class decorator: make a backend available under its `name`."""
    BACKENDS[cls.name] = cls
    return cls


def make_backend(settings: AgentSettings) -> Backend:
    try:
        cls = BACKENDS[settings.backend]
    except KeyError:
        raise LLMError(f"agent {settings.agent!r}: unknown backend {settings.backend!r} "
                       f"(known: {', '.join(sorted(BACKENDS))})") from None
    return cls(settings)


def _short(text: Any, limit: int = 300) -> str:
    s = text if isinstance(text, str) else json.dumps(text, default=str)
    return s if len(s) <= limit else s[:limit] + "..."


#: The request contract of current (5.x) Claude models, per Anthropic's Claude Sonnet 5.5 migration guide
#: (https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide): sampling parameters (temperature,
#: top_p, top_k), assistant prefill, forced tool choice, thinking budgets and `thinking: {type: disabled}` are
#: answered with HTTP 400; thinking is adaptive, so an answer may start with thinking blocks before its text (the
#: Sonnet 5 migration guide: "select content blocks by type"); depth is set with `output_config.effort`
#: (https://platform.claude.com/docs/en/build-with-claude/effort); JSON answers can be asked for with
#: `output_config.format` = {type: json_schema, schema} (structured outputs,
#: https://platform.claude.com/docs/en/build-with-claude/structured-outputs).
_CLAUDE_GENERATION = re.compile(r"^claude-[a-z]+-(\d+)(?:-|$)")
#: At most this many cache_control breakpoints in one request (Anthropic's prompt caching page,
#: https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
MAX_CACHE_BREAKPOINTS = 4
#: Our own floor: a prefix shorter than this many characters gets no breakpoint (the service does not cache
#: prefixes under a model's minimum cacheable length, and a short prompt is cheap anyway).
MIN_CACHE_PREFIX_CHARS = 2048
EPHEMERAL = {"type": "ephemeral"}


def current_contract(model: str) -> bool:
    """Whether a Claude model id is of a generation (5 and later: claude-sonnet-5-5, claude-opus-5-5, ...) that
    rejects sampling parameters, prefill and forced tool choice, and takes effort and structured outputs."""
    m = _CLAUDE_GENERATION.match(model or "")
    return bool(m) and int(m.group(1)) >= 5


#: Older ids that take output_config.effort too (the effort page's list of supported models,
#: https://platform.claude.com/docs/en/build-with-claude/effort: Opus 4.5 to 4.8, Sonnet 4.6, Mythos Preview).
_EFFORT_BEFORE_5 = re.compile(r"^claude-(?:opus-4-[5-9]|sonnet-4-[6-9]|mythos)")


def takes_effort(model: str) -> bool:
    return current_contract(model) or bool(_EFFORT_BEFORE_5.match(model or ""))


def _breakpoints_in(value: Any) -> int:
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(_breakpoints_in(v) for v in value.values())
    if isinstance(value, list):
        return sum(_breakpoints_in(v) for v in value)
    return 0


def _mark_last_block(content: Any) -> list[dict[str, Any]] | None:
    """The content as blocks with a cache breakpoint on its last block (None when there is no text to mark)."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content or []]
    if not blocks or not isinstance(blocks[-1], dict) or "cache_control" in blocks[-1]:
        return None
    if blocks[-1].get("type") == "text" and not blocks[-1].get("text"):
        return None  # an empty text block cannot carry a breakpoint
    blocks[-1]["cache_control"] = dict(EPHEMERAL)
    return blocks


def cache_breakpoints(system: str, messages: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """(system, messages) with prompt-cache breakpoints on the parts a study repeats, within the service's
    limit of four (breakpoints the caller set already count): the system prompt (the agent's instructions,
    the registry, the rubric, the code contract), the earlier turns of a conversation (a repair re-prompt or a
    revision repeats the whole exchange before its last message) and, for a conversation, the first message
    (the artifacts a revision is about). The answer does not change; only what the service bills."""
    budget = MAX_CACHE_BREAKPOINTS - _breakpoints_in(messages)
    out = [dict(m) for m in messages]
    prefix = [len(system)]  # characters up to the end of the system prompt, then of each message
    for m in out:
        prefix.append(prefix[-1] + _content_chars(m.get("content")))
    wanted = []
    if len(out) > 1:
        wanted.append(len(out) - 2)  # everything before the last message
        if len(out) > 2:
            wanted.append(0)
    for i in wanted:
        if budget <= 1:  # one is kept for the system prompt
            break
        blocks = _mark_last_block(out[i]["content"]) if prefix[i + 1] >= MIN_CACHE_PREFIX_CHARS else None
        if blocks is not None:
            out[i]["content"] = blocks
            budget -= 1
    system_param: Any = system
    if budget >= 1 and len(system) >= MIN_CACHE_PREFIX_CHARS:
        system_param = [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}]
    return system_param, out


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(b.get("text", "")) for b in content or [] if isinstance(b, dict) and isinstance(b.get("text"), str))


def _json_schema_for_api(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema in the form structured outputs take: the SDK's own transform (it moves the constraints the
    service does not enforce, such as minimum or maxLength, into the descriptions; the client still validates
    every answer against the full schema)."""
    try:
        from anthropic.lib._parse._transform import transform_schema
    except ImportError:  # pragma: no cover - an SDK without it: the schema as it is
        return schema
    return transform_schema(_type_lists_as_any_of(schema))


def expressible(schema: Any) -> bool:
    """Whether structured outputs can hold every answer the schema allows: they close every object
    (additionalProperties false), so a schema with a map (additionalProperties or patternProperties given as a
    schema) is asked for in words only, and the client's validation and repair keep it honest."""
    if isinstance(schema, list):
        return all(expressible(v) for v in schema)
    if not isinstance(schema, dict):
        return True
    if "patternProperties" in schema or schema.get("additionalProperties") not in (None, False):
        return False
    return all(expressible(v) for k, v in schema.items() if k not in ("enum", "const", "default", "examples"))


def _type_lists_as_any_of(schema: Any) -> Any:
    """`{"type": ["string", "null"], ...}` as `{"anyOf": [{"type": "string", ...}, {"type": "null"}]}` (the SDK's
    transform takes one type per schema), everywhere in the schema."""
    if isinstance(schema, list):
        return [_type_lists_as_any_of(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _type_lists_as_any_of(v) for k, v in schema.items()}
    kinds = out.get("type")
    if isinstance(kinds, list):
        rest = {k: v for k, v in out.items() if k not in ("type", "description")}
        out = {k: v for k, v in out.items() if k == "description"}
        out["anyOf"] = [{"type": t} if t == "null" else {"type": t, **rest} for t in kinds]
    return out


@register_backend
class AnthropicBackend(Backend):
    """The Anthropic Messages API through the official SDK (its own retries off: the client retries).

    For current models (:func:`current_contract`) no sampling parameter and no prefill is ever sent; the agent's
    `effort` (when set) goes in `output_config.effort` and a JSON schema in `output_config.format`. With
    `prompt_caching` on (the default), the long repeated parts of a request carry cache breakpoints."""

    name = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"

    def __init__(self, settings: AgentSettings):
        super().__init__(settings)
        import anthropic  # slow to import (seconds): here, so it is not counted in a call's latency

        self._sdk = anthropic
        # SDK 2.x speaks API version 2026-10-21, which removed the sampling parameters (a request carrying one
        # is rejected with HTTP 400) and dropped the argument: then temperature only keys the cache and the
        # transcripts, and is not sent. Older SDKs (API 2023-06-01) take it and get it.
        from anthropic.resources.messages import Messages

        self.current = current_contract(settings.model)
        self.sends_temperature = (not self.current
                                  and "temperature" in inspect.signature(Messages.create).parameters)

    def default_base_url(self) -> str:
        return os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"  # as the SDK does

    def request_options(self, json_schema: dict[str, Any] | None = None) -> dict[str, Any]:
        options = super().request_options(json_schema)
        output_config: dict[str, Any] = {}
        effort = getattr(self.settings, "effort", None)
        if effort and takes_effort(self.settings.model):  # a model without effort keeps the old request
            output_config["effort"] = effort
        if json_schema is not None and self.current and expressible(json_schema):
            output_config["format"] = {"type": "json_schema", "schema": _json_schema_for_api(json_schema)}
        if output_config:
            options["output_config"] = output_config
        return options

    def send(self, system: str, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
             ) -> Reply:
        anthropic = self._sdk
        s = self.settings
        if self.current and messages and messages[-1].get("role") == "assistant":
            raise LLMError(f"agent {s.agent!r} (model {s.model}): the conversation ends with an assistant message "
                           "(a prefill), which current Claude models reject with HTTP 400: end it with a user "
                           "message and ask for the format in words or with a JSON schema")
        key = self.api_key()
        try:
            client = anthropic.Anthropic(api_key=key, base_url=s.base_url, timeout=s.timeout_s, max_retries=0)
        except Exception as exc:  # the SDK parses base_url here (httpx's InvalidURL)
            raise AttemptFailed(f"could not send the request ({type(exc).__name__}: {_short(str(exc), 160)}): "
                                "check base_url", retryable=False, status="connection") from None
        options = self.request_options(json_schema)
        system_param: Any = system
        if getattr(s, "prompt_caching", True):
            system_param, messages = cache_breakpoints(system, messages)
        else:  # off: no breakpoint at all, also none a caller set (shared prefixes)
            messages = [_without_breakpoints(m) for m in messages]
        try:
            # the raw response: its body is read here, by the same rules as the other backends, so that a body
            # that is not JSON or has the wrong shape is an attempt that failed, not an exception of the SDK
            raw = client.messages.with_raw_response.create(model=s.model, system=system_param, messages=messages,
                                                           max_tokens=s.max_tokens, **options)
            status, text = raw.status_code, raw.http_response.text
        except anthropic.APIConnectionError as exc:  # APITimeoutError included; the httpx error is its cause
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            if isinstance(exc, anthropic.APITimeoutError):
                raise AttemptFailed(f"timeout: no answer within {s.timeout_s:g} s (APITimeoutError)", retryable=True,
                                    status="timeout") from None
            raise _transport_failure(cause, s.timeout_s, f"{type(exc).__name__}: ") from None
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            detail = getattr(exc, "body", None)
            if isinstance(detail, dict) and isinstance(detail.get("error"), dict):
                detail = detail["error"].get("message", detail)
            raise AttemptFailed(f"HTTP {status} ({type(exc).__name__}): {_short(detail)}",
                                retryable=is_retryable_status(status),
                                retry_after=retry_after_seconds(exc.response.headers), http_status=status) from None
        except anthropic.AnthropicError as exc:
            raise AttemptFailed(f"{type(exc).__name__}: {_short(str(exc))}", retryable=False,
                                status="error") from None
        finally:
            client.close()
        return anthropic_reply(_json_body(text, status), text, status)


def anthropic_reply(data: Any, text: str, http_status: int = 200) -> Reply:
    """A Messages API body as a Reply; a body of another shape is a malformed attempt."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise malformed("a body of the wrong shape (no `content` list)", text, http_status)
    blocks = data["content"]
    if not all(isinstance(b, dict) for b in blocks) or any(
            b.get("type") == "text" and not isinstance(b.get("text"), str) for b in blocks):
        raise malformed("a body of the wrong shape (`content` is not a list of blocks)", text, http_status)
    stop = data.get("stop_reason")
    if stop is not None and not isinstance(stop, str):
        raise malformed("a body of the wrong shape (`stop_reason` is not a string)", text, http_status)
    usage = data.get("usage")
    # the text blocks only: thinking (and redacted_thinking) blocks that come before the text are never the answer
    return Reply(text="".join(b["text"] for b in blocks if b.get("type") == "text"), stop_reason=stop,
                 input_tokens=_token_count(usage, "input_tokens"), output_tokens=_token_count(usage, "output_tokens"),
                 http_status=http_status,
                 cache_creation_input_tokens=_token_count(usage, "cache_creation_input_tokens"),
                 cache_read_input_tokens=_token_count(usage, "cache_read_input_tokens"))


#: OpenAI finish reasons in the Anthropic vocabulary the rest of the client speaks.
OPENAI_FINISH = {"length": "max_tokens", "content_filter": "refusal"}


@register_backend
class OpenAICompatibleBackend(Backend):
    """Any server speaking OpenAI chat completions (OpenAI, vLLM, Ollama, ...) over plain httpx.

    The key is optional: without one no Authorization header is sent (local servers)."""

    name = "openai_compatible"
    default_key_env = "OPENAI_API_KEY"
    requires_key = False
    requires_base_url = True

    def send(self, system: str, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
             ) -> Reply:
        s = self.settings
        key = self.api_key()
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        body = {"model": s.model, "messages": [{"role": "system", "content": system},
                                                *(_plain_message(m) for m in messages)],
                **self.request_options(json_schema), "max_tokens": s.max_tokens}  # temperature when configured
        url = f"{s.base_url.rstrip('/')}/chat/completions"
        try:
            with httpx.Client(timeout=s.timeout_s) as client:
                response = client.post(url, json=body, headers=headers)
        except (httpx.RequestError, httpx.InvalidURL) as exc:
            raise _transport_failure(exc, s.timeout_s, "") from None
        if response.status_code >= 400:
            try:
                detail: Any = response.json()
                if isinstance(detail, dict) and isinstance(detail.get("error"), dict):
                    detail = detail["error"].get("message", detail)
            except ValueError:
                detail = response.text
            raise AttemptFailed(f"HTTP {response.status_code}: {_short(detail)}",
                                retryable=is_retryable_status(response.status_code),
                                retry_after=retry_after_seconds(response.headers), http_status=response.status_code)
        return openai_reply(_json_body(response.text, response.status_code), response.text, response.status_code)


def _without_breakpoints(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict)
                                   else b for b in content]}


def _plain_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message without prompt-cache breakpoints (an Anthropic notion): text-only blocks joined into one text."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    blocks = [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b for b in content]
    if all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        return {**message, "content": "".join(b.get("text", "") for b in blocks)}
    return {**message, "content": blocks}


def openai_reply(data: Any, text: str, http_status: int = 200) -> Reply:
    """A chat-completions body as a Reply (finish reasons and a `refusal` in the Anthropic vocabulary); a body
    of another shape is a malformed attempt."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed("a body of the wrong shape (no `choices`)", text, http_status)
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise malformed("a body of the wrong shape (the choice has no `message` object)", text, http_status)
    content = message.get("content")
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if content is not None and not isinstance(content, str):
        raise malformed("a body of the wrong shape (`content` is not text)", text, http_status)
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise malformed("a body of the wrong shape (`finish_reason` is not a string)", text, http_status)
    stop = OPENAI_FINISH.get(finish, finish)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():  # the model declined: its words are the answer
        stop, content = "refusal", content or refusal
    usage = data.get("usage")
    return Reply(text=content or "", stop_reason=stop, input_tokens=_token_count(usage, "prompt_tokens"),
                 output_tokens=_token_count(usage, "completion_tokens"), http_status=http_status)
