"""Prompt files: YAML with a `system` template and user templates (str.format placeholders)."""

from __future__ import annotations

import hashlib
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
