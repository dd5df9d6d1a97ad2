"""Providers behind one small interface: a backend sends one request and reports one reply or one failure.

Adding a provider is adding a subclass of :class:`Backend` and registering it with :func:`register_backend`.
A backend never retries, caches or prices: :class:`edm_ars.llm.client.LLMClient` does all of that the same
way for every provider. The API key is read from the environment inside :meth:`Backend.send`, at call time,
and goes nowhere but the request's headers.
"""

from __future__ import annotations

import datetime as _dt
import inspect
import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import LLMError

if TYPE_CHECKING:
    from .client import AgentSettings

try:  # the classic package name; recent SDKs ship it as httpx2
    import httpx
except ImportError:  # pragma: no cover - depends on the environment
    import httpx2 as httpx  # type: ignore[no-redef]

#: HTTP statuses worth another attempt: request timeout, rate limit, server errors, 529 overloaded.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date); None when absent."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
        return max(0.0, (when - _dt.datetime.now(when.tzinfo)).total_seconds())
    except (TypeError, ValueError):
        return None


@dataclass
class Reply:
    """What one successful request returned, already in the provider-neutral vocabulary."""

    text: str
    stop_reason: str | None
    input_tokens: int
    output_tokens: int


class AttemptFailed(Exception):  # noqa: N818 - an outcome, caught by the client's retry loop
    """One attempt failed; `retryable` says whether another attempt may succeed."""

    def __init__(self, description: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(description)
        self.description = description
        self.retryable = retryable
        self.retry_after = retry_after


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

    @abstractmethod
    def send(self, system: str, messages: list[dict[str, Any]]) -> Reply:
        """Send one request; return its Reply or raise AttemptFailed (or LLMError for a setup problem)."""


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


@register_backend
class AnthropicBackend(Backend):
    """The Anthropic Messages API through the official SDK (its own retries off: the client retries)."""

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

        self.sends_temperature = "temperature" in inspect.signature(Messages.create).parameters

    def send(self, system: str, messages: list[dict[str, Any]]) -> Reply:
        anthropic = self._sdk
        s = self.settings
        key = self.api_key()
        client = anthropic.Anthropic(api_key=key, base_url=s.base_url, timeout=s.timeout_s, max_retries=0)
        sampling = {"temperature": s.temperature} if self.sends_temperature else {}
        try:
            response = client.messages.create(model=s.model, system=system, messages=messages,
                                              max_tokens=s.max_tokens, **sampling)
        except anthropic.APITimeoutError:
            raise AttemptFailed(f"timeout after {s.timeout_s:g} s (APITimeoutError)", retryable=True) from None
        except anthropic.APIConnectionError as exc:
            cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "no cause"
            raise AttemptFailed(f"connection failed (APIConnectionError: {cause})", retryable=True) from None
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            detail = getattr(exc, "body", None)
            if isinstance(detail, dict) and isinstance(detail.get("error"), dict):
                detail = detail["error"].get("message", detail)
            raise AttemptFailed(f"HTTP {status} ({type(exc).__name__}): {_short(detail)}",
                                retryable=is_retryable_status(status),
                                retry_after=parse_retry_after(exc.response.headers)) from None
        except anthropic.APIError as exc:
            raise AttemptFailed(f"{type(exc).__name__}: {_short(str(exc))}", retryable=False) from None
        finally:
            client.close()
        text = "".join(getattr(b, "text", "") for b in response.content if getattr(b, "type", None) == "text")
        usage = response.usage
        return Reply(text=text, stop_reason=response.stop_reason,
                     input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                     output_tokens=int(getattr(usage, "output_tokens", 0) or 0))


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

    def send(self, system: str, messages: list[dict[str, Any]]) -> Reply:
        s = self.settings
        key = self.api_key()
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        body = {"model": s.model, "messages": [{"role": "system", "content": system}, *messages],
                "temperature": s.temperature, "max_tokens": s.max_tokens}
        url = f"{s.base_url.rstrip('/')}/chat/completions"
        try:
            with httpx.Client(timeout=s.timeout_s) as client:
                response = client.post(url, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise AttemptFailed(f"timeout after {s.timeout_s:g} s ({type(exc).__name__})", retryable=True) from None
        except httpx.TransportError as exc:
            raise AttemptFailed(f"connection failed ({type(exc).__name__})", retryable=True) from None
        if response.status_code >= 400:
            try:
                detail: Any = response.json()
                if isinstance(detail, dict) and isinstance(detail.get("error"), dict):
                    detail = detail["error"].get("message", detail)
            except ValueError:
                detail = response.text
            raise AttemptFailed(f"HTTP {response.status_code}: {_short(detail)}",
                                retryable=is_retryable_status(response.status_code),
                                retry_after=parse_retry_after(response.headers))
        try:
            data = response.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise AttemptFailed(f"malformed chat-completions response: {_short(response.text)}",
                                retryable=False) from None
        message = choice.get("message") or {}
        content = message.get("content")
        if isinstance(content, list):  # some servers answer with content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        finish = choice.get("finish_reason")
        usage = data.get("usage") or {}
        return Reply(text=content or "", stop_reason=OPENAI_FINISH.get(finish, finish),
                     input_tokens=int(usage.get("prompt_tokens") or 0),
                     output_tokens=int(usage.get("completion_tokens") or 0))
