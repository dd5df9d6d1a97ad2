"""The LLM layer: one client for every agent, with providers behind a small backend interface."""

from edm_ars.llm.backends import BACKENDS, AttemptFailed, Backend, Reply, make_backend, register_backend
from edm_ars.llm.client import Completion, LLMClient, cache_key, ledger_spent, repair_request
from edm_ars.llm.errors import LLMError, ModelServiceError
from edm_ars.llm.jsonout import extract_json, strip_thinking
from edm_ars.llm.prompts import fill, load_prompt, placeholders, prompt_hash
from edm_ars.llm.settings import AgentSettings

__all__ = [
    "BACKENDS", "AgentSettings", "AttemptFailed", "Backend", "Completion", "LLMClient", "LLMError",
    "ModelServiceError", "Reply",
    "cache_key", "extract_json", "fill", "ledger_spent", "load_prompt", "make_backend", "placeholders",
    "prompt_hash", "register_backend", "repair_request", "strip_thinking",
]
