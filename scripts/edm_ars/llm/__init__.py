"""The LLM layer: one client for every agent, with providers behind a small backend interface."""

from .backends import BACKENDS, AttemptFailed, Backend, Reply, make_backend, register_backend
from .client import AgentSettings, Completion, LLMClient, cache_key, ledger_spent, repair_request
from .errors import LLMError, ModelServiceError
from .jsonout import extract_json, strip_thinking
from .prompts import fill, load_prompt, placeholders, prompt_hash

__all__ = [
    "BACKENDS", "AgentSettings", "AttemptFailed", "Backend", "Completion", "LLMClient", "LLMError",
    "ModelServiceError", "Reply",
    "cache_key", "extract_json", "fill", "ledger_spent", "load_prompt", "make_backend", "placeholders",
    "prompt_hash", "register_backend", "repair_request", "strip_thinking",
]
