"""Fake LLM provider servers: real HTTP on 127.0.0.1 speaking the Anthropic Messages API and the OpenAI
chat-completions API, with scripted replies.

A script is a list of replies consumed in order, or a callable(request_json) -> reply. A reply is
- a string: a 200 answer with that text;
- a dict with any of: "text", "stop_reason" ("end_turn" | "max_tokens" | "refusal" | ...), "usage"
  ({"input_tokens", "output_tokens"}; default: all request text // 4 and len(text) // 4), "status" (an
  HTTP error status, e.g. 429, 500, 529), "headers" (e.g. {"retry-after": "0"}), "sleep" (seconds to wait
  before answering, to trigger a client timeout), "drop" (close the connection without answering),
  "cut_body" (send the status, the headers and the first half of the body, then close the connection:
  a connection dropped mid-body), "body" (the body sent as it is: a JSON value, or a string such as "" or
  "not json"), "model"; for the OpenAI server also "finish_reason" and "refusal" (the message's refusal
  text, with null content).
The servers record every request body (`requests`), its headers (`headers`, names lower-cased, including
authorization / x-api-key so a test can check a key was sent) and count them (`count`); they never print.

FakeAnthropic speaks today's request contract for current (5.x) model ids and the old one for older ids; see
its docstring. A reply for it may also give "thinking" (the text of the thinking block a current model's answer
starts with; None for none) and "json" (the value a structured-output answer holds).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | dict[str, Any]
Script = list[Reply] | Callable[[dict[str, Any]], Reply]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return ""


class _FakeServer:
    path = "/"

    def __init__(self, script: Script):
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.gets: list[tuple[str, dict[str, str]]] = []  # GET requests (the model list), apart from the calls
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._index = 0
        self._port: int | None = None

    # --------------------------------------------------------------- lifecycle
    def start(self) -> _FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                fake._handle(self)

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                fake._handle_get(self)

            def log_message(self, format: str, *args: Any) -> None:  # never print (headers hold keys)
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        httpd.handle_error = lambda request, client_address: None  # a client that timed out is not an error
        self._httpd = httpd
        self._port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> _FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port it listens on (still known after it stopped, for checking messages that name it)."""
        assert self._port is not None, "the fake server was never started"
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    # --------------------------------------------------------------- answering
    def _next_reply(self, request: dict[str, Any]) -> dict[str, Any]:
        if callable(self.script):
            reply = self.script(request)
        else:
            with self._lock:
                index = self._index
                self._index += 1
            if index >= len(self.script):
                return {"status": 400, "error": f"fake server: script exhausted after {len(self.script)} replies"}
            reply = self.script[index]
        return {"text": reply} if isinstance(reply, str) else dict(reply)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            request = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            request = {"_raw": raw.decode("utf-8", "replace")}
        with self._lock:
            self.requests.append(request)
            self.headers.append({k.lower(): v for k, v in h.headers.items()})
            self.paths.append(h.path)
        if h.path.split("?")[0] != self.path:
            self._send(h, 404, {}, self.error_body(404, f"no route {h.path}"))
            return
        refused = self.contract_error(request)
        reply = {"status": refused[0], "error": refused[1]} if refused else self.shape(request,
                                                                                     self._next_reply(request))
        if reply.get("sleep"):
            self._stopping.wait(float(reply["sleep"]))
        if reply.get("drop"):
            h.close_connection = True  # nothing is written: the client sees the connection closed
            return
        status = int(reply.get("status", 200))
        if "body" in reply:
            body = reply["body"]
        elif status >= 400:
            body = self.error_body(status, reply.get("error", f"scripted HTTP {status}"))
        else:
            text = reply.get("text", "")
            usage = {**self.prompt_usage(request), "output_tokens": len(text) // 4}
            usage.update(reply.get("usage") or {})
            body = self.success_body(request, reply, text, usage)
        self._send(h, status, reply.get("headers") or {}, body, cut=bool(reply.get("cut_body")))

    def _handle_get(self, h: BaseHTTPRequestHandler) -> None:
        """GET: recorded in `gets` as (path, headers), apart from the model calls (`requests`, `count`);
        `get_body` answers it, else 404."""
        with self._lock:
            self.gets.append((h.path, {k.lower(): v for k, v in h.headers.items()}))
        found = self.get_body(h.path.split("?")[0])
        if found is None:
            self._send(h, 404, {}, self.error_body(404, f"no route {h.path}"))
        else:
            self._send(h, found[0], {}, found[1])

    def get_body(self, path: str) -> tuple[int, Any] | None:
        """(status, body) of a GET of `path`, None for no such route."""
        return None

    def _send(self, h: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: Any,
              cut: bool = False) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
        try:
            h.send_response(status)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))  # the full length, also when the body is cut
            for name, value in headers.items():
                h.send_header(name, str(value))
            h.end_headers()
            h.wfile.write(data[:len(data) // 2] if cut else data)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            h.close_connection = True
        if cut:  # the client sees the connection closed before content-length bytes arrived
            h.close_connection = True

    # --------------------------------------------------------------- per API
    def contract_error(self, request: dict[str, Any]) -> tuple[int, str] | None:
        """(status, message) when the service refuses the request before any reply is scripted."""
        return None

    def shape(self, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        """The scripted reply as the service would give it for this request."""
        return reply

    def prompt_usage(self, request: dict[str, Any]) -> dict[str, int]:
        return {"input_tokens": self.request_chars(request) // 4}

    def request_chars(self, request: dict[str, Any]) -> int:
        raise NotImplementedError

    def success_body(self, request: dict[str, Any], reply: dict[str, Any], text: str,
                     usage: dict[str, int]) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError


#: Model ids the service answers 404 not_found for: retired (the SDK 2.14.0 model list no longer has them).
RETIRED = re.compile(r"^claude-(?:3-|3\.|opus-4-1|opus-4-0|sonnet-4-0)")
_GENERATION = re.compile(r"^claude-[a-z]+-(\d+)(?:-|$)")
EFFORTS = {"low", "medium", "high", "xhigh", "max"}


def is_current(model: str) -> bool:
    m = _GENERATION.match(model or "")
    return bool(m) and int(m.group(1)) >= 5


def _cache_marks(value: Any) -> int:
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(_cache_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(_cache_marks(v) for v in value)
    return 0


def _instance(schema: Any) -> Any:
    """A small value matching a JSON schema (what constrained decoding would at least produce)."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _instance(schema[key][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _instance(props.get(k, {})) for k in schema.get("required", [])}
    if kind == "array":
        return [_instance(schema.get("items", {})) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


class FakeAnthropic(_FakeServer):
    """The Anthropic Messages API: POST /v1/messages. Point the SDK at base_url=server.url.

    The contract it enforces, as Anthropic documents it:
    - retired ids (claude-opus-4-1, claude-3-*): HTTP 404 not_found_error, as for a model that does not exist;
    - current (5.x) ids, per the Claude Sonnet 5.5 migration guide
      (https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide): HTTP 400 invalid_request_error
      for a sampling parameter (temperature, top_p, top_k), an assistant prefill (the last message is the
      assistant's), a forced tool choice (tool_choice any or tool), a thinking budget (thinking enabled) and
      thinking disabled; the answer starts with a thinking block before the text (adaptive thinking; "select
      content blocks by type"); output_config.effort must be one of low, medium, high, xhigh, max
      (https://platform.claude.com/docs/en/build-with-claude/effort); with output_config.format {type:
      json_schema, schema} the text is JSON matching the schema (structured outputs,
      https://platform.claude.com/docs/en/build-with-claude/structured-outputs);
    - every id, per the prompt caching page (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
      at most 4 cache_control breakpoints (else 400); the prefix up to each breakpoint (tools, system, messages
      in that order) is cached across calls; usage then has cache_creation_input_tokens (prefix tokens written)
      and cache_read_input_tokens (the longest cached prefix read), and input_tokens counts the rest. Prefixes
      under `min_cache_tokens` are not cached. Tokens are characters // 4 throughout.
    Older ids keep the old behaviour (anything goes, no thinking block, no output_config needed).
    """

    path = "/v1/messages"

    def __init__(self, script: Script, *, min_cache_tokens: int = 0):
        super().__init__(script)
        self.min_cache_tokens = min_cache_tokens
        self.prompt_cache: set[str] = set()  # the prefixes cached so far (keyed by their content)

    def reject(self, request: dict[str, Any]) -> tuple[int, str] | None:
        """(status, message) of a request the service refuses, or None."""
        model = str(request.get("model", ""))
        if RETIRED.match(model):
            return 404, f"model: {model}"
        if _cache_marks(request) > 4:
            return 400, f"A maximum of 4 blocks with cache_control may be provided. Found {_cache_marks(request)}."
        config = request.get("output_config")
        if config is not None:
            if not isinstance(config, dict):
                return 400, "output_config: Input should be an object"
            if "effort" in config and config["effort"] not in EFFORTS:
                return 400, f"output_config.effort: Input should be one of {sorted(EFFORTS)}"
            fmt = config.get("format")
            if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "json_schema"
                                    or not isinstance(fmt.get("schema"), dict)):
                return 400, "output_config.format: expected {type: json_schema, schema: {...}}"
        if not is_current(model):
            return None
        for name in ("temperature", "top_p", "top_k"):
            if name in request:
                return 400, f"{name}: sampling parameters are not supported for {model}"
        messages = request.get("messages") or []
        if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
            return 400, f"This model does not support assistant message prefill ({model})"
        choice = request.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
            return 400, f"tool_choice: forced tool use is not supported for {model}"
        thinking = request.get("thinking")
        if isinstance(thinking, dict):
            if thinking.get("type") == "disabled":
                return 400, f"thinking.type: 'disabled' is not supported for {model}"
            if thinking.get("type") == "enabled" or "budget_tokens" in thinking:
                return 400, f"thinking.budget_tokens: thinking budgets are not supported for {model}; use " \
                            "thinking {type: adaptive} with output_config.effort"
        return None

    def contract_error(self, request: dict[str, Any]) -> tuple[int, str] | None:
        return self.reject(request)

    def _prefixes(self, request: dict[str, Any]) -> list[tuple[str, int]]:
        """(key, tokens) of the prefix up to each cache breakpoint, in the order tools, system, messages."""
        parts: list[tuple[str, int, bool]] = []  # (content, characters counted as input, marked)

        def add(prefix: str, block: dict[str, Any]) -> None:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            parts.append((prefix + json.dumps(plain, sort_keys=True), len(_text_of(plain.get("text", ""))),
                          "cache_control" in block))

        for tool in request.get("tools") or []:
            add("tool", tool)
        system = request.get("system", "")
        for b in system if isinstance(system, list) else ([{"type": "text", "text": system}] if system else []):
            add("system", b)
        for m in request.get("messages", []):
            content = m.get("content")
            for b in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                add(str(m.get("role")), b if isinstance(b, dict) else {"type": "text", "text": str(b)})
        prefixes, text, chars = [], str(request.get("model")), 0
        for content, n, marked in parts:
            text += "\x00" + content
            chars += n
            if marked:
                prefixes.append((text, chars // 4))
        return prefixes

    def prompt_usage(self, request: dict[str, Any]) -> dict[str, int]:
        total = self.request_chars(request) // 4
        prefixes = self._prefixes(request)
        if not prefixes:
            return {"input_tokens": total}
        with self._lock:
            read = max((t for k, t in prefixes if k in self.prompt_cache), default=0)
            cacheable = [(k, t) for k, t in prefixes if t >= max(1, self.min_cache_tokens)]
            written = max(0, max((t for _, t in cacheable), default=0) - read)
            self.prompt_cache.update(k for k, _ in cacheable)
        return {"input_tokens": total - read - written, "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read}

    def shape(self, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        """A structured-output request gets JSON text matching its schema."""
        fmt = (request.get("output_config") or {}).get("format")
        if (fmt and int(reply.get("status", 200)) < 400 and "body" not in reply
                and reply.get("stop_reason", "end_turn") not in ("refusal", "max_tokens")):  # those keep their text
            reply = {**reply, "text": json.dumps(self.structured(fmt["schema"], reply))}
        return reply

    @staticmethod
    def structured(schema: dict[str, Any], reply: dict[str, Any]) -> Any:
        """The value a structured-output answer holds: the reply's "json", else the JSON in its text when it
        matches the schema, else a small value matching the schema."""
        import jsonschema

        if "json" in reply:
            return reply["json"]
        try:
            from edm_ars.llm.jsonout import extract_json

            value = extract_json(reply.get("text", ""))
            if not list(jsonschema.Draft202012Validator(schema).iter_errors(value)):
                return value
        except ValueError:
            pass
        return _instance(schema)

    def request_chars(self, request: dict[str, Any]) -> int:
        return len(_text_of(request.get("system", ""))) + sum(
            len(_text_of(m.get("content"))) for m in request.get("messages", []))

    def success_body(self, request, reply, text, usage):
        content = [{"type": "text", "text": text}]
        thinking = reply.get("thinking", "Weighing the request before answering." if is_current(
            str(request.get("model", ""))) else None)
        if thinking is not None:  # adaptive thinking: the thinking block comes before the text
            content.insert(0, {"type": "thinking", "thinking": thinking, "signature": "fake-signature"})
        return {"id": f"msg_fake_{self.count:04d}", "type": "message", "role": "assistant",
                "model": reply.get("model", request.get("model", "fake-model")), "content": content,
                "stop_reason": reply.get("stop_reason", "end_turn"), "stop_sequence": None,
                "usage": usage}

    def error_body(self, status, message):
        return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}

    #: what GET /v1/models lists (the models the key can use); a test may set its own list
    models: list[str] = ["claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-sonnet-4-5"]

    def get_body(self, path: str) -> tuple[int, Any] | None:
        """GET /v1/models (one page, newest first) and GET /v1/models/{id} (404 not_found for an id not listed)."""
        def info(model: str) -> dict[str, Any]:
            return {"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z",
                    "lifecycle": "deprecated" if model == "claude-sonnet-4-5" else "active"}

        if path == "/v1/models":
            return 200, {"data": [info(m) for m in self.models], "has_more": False,
                         "first_id": self.models[0] if self.models else None,
                         "last_id": self.models[-1] if self.models else None}
        if path.startswith("/v1/models/"):
            model = path.rsplit("/", 1)[1]
            return (200, info(model)) if model in self.models else (404, self.error_body(404, f"model: {model}"))
        return None


#: Anthropic stop reasons in OpenAI's vocabulary (a script may also give "finish_reason" directly).
_FINISH = {"end_turn": "stop", "max_tokens": "length", "refusal": "content_filter", "stop_sequence": "stop"}


class FakeOpenAI(_FakeServer):
    """The OpenAI chat-completions API: POST /v1/chat/completions. Use base_url=f"{server.url}/v1"."""

    path = "/v1/chat/completions"

    def request_chars(self, request: dict[str, Any]) -> int:
        return sum(len(_text_of(m.get("content"))) for m in request.get("messages", []))

    def success_body(self, request, reply, text, usage):
        finish = reply.get("finish_reason") or _FINISH.get(reply.get("stop_reason", "end_turn"), "stop")
        message = {"role": "assistant", "content": text}
        if "refusal" in reply:
            message = {"role": "assistant", "content": None, "refusal": reply["refusal"]}
        return {"id": f"chatcmpl-fake-{self.count:04d}", "object": "chat.completion", "created": int(time.time()),
                "model": reply.get("model", request.get("model", "fake-model")),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
                          "total_tokens": usage["input_tokens"] + usage["output_tokens"]}}

    def error_body(self, status, message):
        return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "api_error"), "code": status}}
