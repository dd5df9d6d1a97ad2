"""The errors every failed model call ends in."""

from __future__ import annotations

from edm_ars.core.errors import EdmArsError


class LLMError(EdmArsError):
    """A model call failed for good: the message names the agent, the model and the last error (never a key)."""


class ModelServiceError(LLMError):
    """A model call that the service or the model could not bring to a usable answer: an HTTP error, a
    malformed or dropped response, a timeout, an answer cut at max_tokens, a refusal, or an answer with no
    usable JSON even after the repair re-prompt.

    The message is one line naming the service (backend and host), the model, the agent, the round, the call
    and the cause; `status` is the ledger status of the last attempt (http_error, timeout, connection,
    dropped, malformed, truncated, refused or unusable)."""

    def __init__(self, *, service: str, model: str, agent: str, round_: int, call: str, cause: str, status: str,
                 attempts: int):
        self.service, self.model, self.agent, self.round, self.call = service, model, agent, round_, call
        self.cause, self.status, self.attempts = one_line(cause), status, attempts
        super().__init__(f"model call failed: {service} (model {model}), agent {agent}, round {round_}, "
                         f"call {call!r}: {self.cause}")


def one_line(text: str, limit: int = 600) -> str:
    """Text on one line (newlines and runs of spaces folded), at most `limit` characters."""
    folded = " ".join(str(text).split())
    return folded if len(folded) <= limit else folded[:limit - 3] + "..."
