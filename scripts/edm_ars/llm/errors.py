"""The error every failed model call ends in."""

from __future__ import annotations

from ..errors import EdmArsError


class LLMError(EdmArsError):
    """A model call failed for good: the message names the agent, the model and the last error (never a key)."""
