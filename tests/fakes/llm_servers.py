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
"""

from __future__ import annotations

import json
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
        reply = self._next_reply(request)
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
            usage = {"input_tokens": self.request_chars(request) // 4, "output_tokens": len(text) // 4}
            usage.update(reply.get("usage") or {})
            body = self.success_body(request, reply, text, usage)
        self._send(h, status, reply.get("headers") or {}, body, cut=bool(reply.get("cut_body")))

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
    def request_chars(self, request: dict[str, Any]) -> int:
        raise NotImplementedError

    def success_body(self, request: dict[str, Any], reply: dict[str, Any], text: str,
                     usage: dict[str, int]) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError


class FakeAnthropic(_FakeServer):
    """The Anthropic Messages API: POST /v1/messages. Point the SDK at base_url=server.url."""

    path = "/v1/messages"

    def request_chars(self, request: dict[str, Any]) -> int:
        return len(_text_of(request.get("system", ""))) + sum(
            len(_text_of(m.get("content"))) for m in request.get("messages", []))

    def success_body(self, request, reply, text, usage):
        return {"id": f"msg_fake_{self.count:04d}", "type": "message", "role": "assistant",
                "model": reply.get("model", request.get("model", "fake-model")),
                "content": [{"type": "text", "text": text}],
                "stop_reason": reply.get("stop_reason", "end_turn"), "stop_sequence": None,
                "usage": {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]}}

    def error_body(self, status, message):
        return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}


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
