"""Prompt files: YAML with a `system` template and user templates (str.format placeholders)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from string import Formatter
from typing import Any

from edm_ars.core.artifacts import read_yaml
from edm_ars.llm.errors import LLMError


def load_prompt(path: str | Path) -> dict[str, Any]:
    """Read a prompt file: a mapping with at least a string `system` (usually a `user` template too; other
    keys such as `debate_user` or `roles` are returned as they are)."""
    path = Path(path)
    data = read_yaml(path, "prompt file", LLMError)
    if not isinstance(data, dict):
        raise LLMError(f"{path}: a prompt file must be a mapping with keys `system` and `user`")
    if not isinstance(data.get("system"), str):
        raise LLMError(f"{path}: a prompt file needs a string `system` template")
    if "user" in data and not isinstance(data["user"], str):
        raise LLMError(f"{path}: `user` must be a string template")
    return data


def prompt_hash(path: str | Path) -> str:
    """First 16 hex digits of the sha256 of the file's bytes (recorded with results to tie them to a prompt)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def placeholders(template: str) -> set[str]:
    """The field names a str.format template uses."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in Formatter().parse(template) if name}


def fill(template: str, /, **values: Any) -> str:
    """str.format with a message naming the placeholders that have no value."""
    missing = sorted(placeholders(template) - set(values))
    if missing:
        raise LLMError(f"prompt template needs values for: {', '.join(missing)}")
    return template.format(**values)


#: A shared prompt prefix shorter than this (characters) is not marked for the prompt cache.
MIN_SHARED_PREFIX_CHARS = 2048


def shared_prefix_contents(texts: list[str]) -> list[str | list[dict[str, Any]]]:
    """The user messages of calls that begin alike (the debaters' turns on the same results, the Writer's
    sections on the same claims): each as two text blocks, the part all of them share (up to a line end)
    marked with a prompt-cache breakpoint, then its own rest. The anthropic backend sends the breakpoint, so
    the first call writes the shared part to the service's cache and the others read it; the words are the
    same (other backends get the text joined). A short shared part leaves the texts as they are."""
    if len(texts) < 2:
        return list(texts)
    common = os.path.commonprefix(texts)
    common = common[:common.rfind("\n") + 1]
    if len(common) < MIN_SHARED_PREFIX_CHARS:
        return list(texts)
    return [[{"type": "text", "text": common, "cache_control": {"type": "ephemeral"}},
             {"type": "text", "text": t[len(common):] or " "}] for t in texts]
