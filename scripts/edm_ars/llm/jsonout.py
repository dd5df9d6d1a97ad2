"""Finding the JSON answer in a model's text: fences, prose, thinking sections, several blocks."""

from __future__ import annotations

import json
import re
from typing import Any

_THINKING = re.compile(r"<(thinking|think)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_THINK_END = re.compile(r"</(?:thinking|think)\s*>", re.IGNORECASE)
_THINK_START = re.compile(r"<(?:thinking|think)\b[^>]*>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
_JSON_FENCES = {"", "json", "jsonc", "json5", "javascript", "js"}
_CLOSER = {"{": "}", "[": "]"}
_STARTS_VALUE = set('{["]-0123456789tfn')


def strip_thinking(text: str) -> str:
    """Remove <thinking>/<think> sections; also a section whose opening tag is missing (everything up to the
    last closing tag) and one that never closes (everything from its opening tag)."""
    text = _THINKING.sub("", text)
    ends = list(_THINK_END.finditer(text))
    if ends:
        text = text[ends[-1].end():]
    start = _THINK_START.search(text)
    return text[:start.start()] if start else text


def _looks_like_json(text: str, j: int) -> bool:
    """Whether the bracket at j opens something JSON-like ({"... or [1, [{ ...), not prose like "[see"."""
    rest = text[j + 1:j + 200].lstrip()
    if not rest:
        return True  # the text ends right after the bracket: an answer cut off at its start
    return rest[0] in ('"}' if text[j] == "{" else _STARTS_VALUE)


def _span_end(text: str, j: int) -> int | None:
    """End (exclusive) of the bracketed span opened at j; None when the text ends inside it; -1 when a
    closing bracket does not match."""
    stack: list[str] = []
    in_string = escaped = False
    for k in range(j, len(text)):
        c = text[k]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in _CLOSER:
            stack.append(_CLOSER[c])
        elif c in "}]":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return k + 1
    return None


def _scan(text: str) -> list[Any]:
    """The complete top-level JSON objects and arrays in the text, left to right.

    A value the text ends inside (a cut-off answer) stops the scan, so fragments nested in it are never
    taken for an answer; a malformed but closed value is skipped whole for the same reason."""
    found: list[Any] = []
    i, n = 0, len(text)
    while i < n:
        j = min((k for k in (text.find("{", i), text.find("[", i)) if k >= 0), default=-1)
        if j < 0:
            break
        if not _looks_like_json(text, j):
            i = j + 1
            continue
        end = _span_end(text, j)
        if end is None:
            break
        if end < 0:
            i = j + 1
            continue
        try:
            found.append(json.loads(text[j:end]))
        except json.JSONDecodeError:
            pass
        i = end
    return found


def extract_json(text: str) -> Any:
    """The last complete JSON object or array in a model's answer.

    Thinking sections (<thinking>, <think>) are ignored. Fenced blocks (```json or bare ```) that parse win
    over JSON in the prose; among several, the last is taken. In prose, the last object is preferred to a
    trailing array (a citation like "[1]" after the answer is not the answer). Raises ValueError when no
    complete JSON object or array is found (e.g. the answer was cut off inside it).
    """
    if not isinstance(text, str):
        raise ValueError(f"expected the model's text, got {type(text).__name__}")
    body = strip_thinking(text)
    fenced: list[Any] = []
    for match in _FENCE.finditer(body):
        if match.group(1).lower() in _JSON_FENCES:
            fenced.extend(_scan(match.group(2)))
    if fenced:
        return fenced[-1]
    found = _scan(body)
    objects = [v for v in found if isinstance(v, dict)]
    if objects:
        return objects[-1]
    if found:
        return found[-1]
    preview = " ".join(body.split())[:120]
    raise ValueError(f"no complete JSON object or array found in the answer ({len(text)} characters"
                     + (f"; it starts {preview!r})" if preview else "; nothing outside thinking sections)"))
