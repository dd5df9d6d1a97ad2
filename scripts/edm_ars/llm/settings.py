"""What an agent's calls are made with: its backend, model, sampling, limits and endpoint (from config llm.*).
The client and the backends both read it; the API key is never here, only the name of the variable that holds it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AgentSettings:
    agent: str  # "formulate", "critique", "write", ...
    backend: str  # "anthropic" | "openai_compatible" (see backends.BACKENDS)
    model: str
    temperature: float | None  # only for models that take sampling parameters (older Claude, OpenAI-compatible)
    max_tokens: int
    timeout_s: float = 120.0
    max_retries: int = 4
    base_url: str | None = None  # anthropic: optional (SDK default / ANTHROPIC_BASE_URL); openai_compatible: required
    api_key_env: str | None = None  # env var holding the key; default ANTHROPIC_API_KEY / OPENAI_API_KEY
    prompt_caching: bool = True  # anthropic: cache breakpoints on the long repeated parts of prompts (llm.prompt_caching)
    effort: str | None = None  # "low" | "medium" | "high": output_config.effort of the current models (llm.agents.*)
