"""The Claude models a configuration names, checked before any job of a model-backed run (and by `edm-ars status`),
and what `edm-ars models` prints.

What the installed anthropic SDK knows is the reference: its model ids (`anthropic.types.model.Model`) and the ones
it marks deprecated with their end-of-life dates (`anthropic._data.deprecated_models.DEPRECATED_MODELS`). A model
the SDK marks deprecated gets one warning line (its end of life, the config key, a current replacement); a model
it does not list (retired, such as claude-opus-4-1, or misspelled) stops the run with one line naming the agent,
the key and the current models. Only the `anthropic` backend is checked: the offline backend calls no model and an
OpenAI-compatible server names its own models."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

#: model families: a deprecated model's replacement is the newest current model of its family
FAMILIES = ("sonnet", "opus", "haiku", "fable", "mythos")


def sdk_models() -> list[str]:
    """The model ids the installed anthropic SDK lists, newest first (as the SDK orders them)."""
    from anthropic.types.model import Model

    ids: list[str] = []
    for arg in get_args(Model):
        ids += [a for a in get_args(arg) if isinstance(a, str)]
    return ids


def sdk_deprecated() -> dict[str, str]:
    """Deprecated model id -> its end-of-life date, as the installed anthropic SDK gives them."""
    try:
        from anthropic._data.deprecated_models import DEPRECATED_MODELS
    except ImportError:  # an SDK without the list marks nothing deprecated
        return {}
    return dict(DEPRECATED_MODELS)


def sdk_version() -> str:
    import anthropic

    return str(getattr(anthropic, "__version__", "?"))


def current_models(known: list[str] | None = None, deprecated: Mapping[str, str] | None = None) -> list[str]:
    """The SDK's models that are not deprecated, without the dated aliases (claude-haiku-4-5-20251001), newest first."""
    known = sdk_models() if known is None else known
    deprecated = sdk_deprecated() if deprecated is None else deprecated
    return [m for m in known if m not in deprecated and not re.search(r"-\d{8}$", m)]


def family(model: str) -> str | None:
    return next((f for f in FAMILIES if f in model), None)


def replacement(model: str, current: list[str]) -> str:
    """A current model of the same family (the newest the SDK lists), else the newest current model."""
    same = [m for m in current if family(m) is not None and family(m) == family(model)]
    return (same or current or ["(none)"])[0]


def agent_models(config: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(agent, config key, model id) of each agent in llm.agents; the top-level `model` overrides them all."""
    agents = (config.get("llm") or {}).get("agents") or {}
    one = config.get("model") or ""
    rows = []
    for agent in agents:
        settings = agents.get(agent) or {}
        rows.append((agent, "model", one) if one else (agent, f"llm.agents.{agent}.model", settings.get("model", "")))
    return rows


@dataclass
class Preflight:
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


def preflight(config: Mapping[str, Any], known: list[str] | None = None,
              deprecated: Mapping[str, str] | None = None) -> Preflight:
    """The check of a run's models before any job: warnings (deprecated, unpriced) and the error line that stops
    it (a model the SDK does not know). Nothing for a backend other than `anthropic`."""
    found = Preflight()
    if config.get("backend") != "anthropic":
        return found
    try:
        known = sdk_models() if known is None else known
    except ImportError:
        found.error = ("EDM-ARS: backend=anthropic needs the anthropic package, which is not installed here: "
                       "pip install -e . (or pip install anthropic)")
        return found
    deprecated = sdk_deprecated() if deprecated is None else deprecated
    current = current_models(known, deprecated)
    rows = agent_models(config)
    unknown = [(agent, key, model) for agent, key, model in rows if model not in known]
    if unknown:
        named = "; ".join(f"agent {agent} ({key}: {model!r})" for agent, key, model in unknown)
        example = replacement(unknown[0][2], current)
        found.error = (f"EDM-ARS: model not available: {named}: the installed anthropic SDK ({sdk_version()}) does "
                       f"not know it (retired or misspelled); current models: {', '.join(current)}; set one with "
                       f"--config model={example} or a configfile line (llm.agents.<agent>.model: {example})")
        return found
    by_model: dict[str, list[str]] = {}
    for _agent, key, model in rows:
        by_model.setdefault(model, []).append(key)
    prices = (config.get("llm") or {}).get("prices") or {}
    for model, keys in by_model.items():
        where = ", ".join(dict.fromkeys(keys))
        if model in deprecated:
            found.warnings.append(f"EDM-ARS warning: {model} ({where}) is deprecated: end of life "
                                  f"{deprecated[model]}; replace it with {replacement(model, current)}")
        price = prices.get(model) or {}
        amounts = {"input_per_mtok": price.get("input_per_mtok"), "output_per_mtok": price.get("output_per_mtok"),
                   "cache_write_per_mtok": price.get("cache_write_per_mtok"),
                   "cache_read_per_mtok": price.get("cache_read_per_mtok")}
        missing = [k for k, v in amounts.items() if v is None]
        if len(missing) == len(amounts):
            found.warnings.append(f"EDM-ARS warning: llm.prices has no price for {model}: its cost is null "
                                  "(unpriced), never 0; add input_per_mtok, output_per_mtok, cache_write_per_mtok "
                                  "and cache_read_per_mtok from Anthropic's pricing page")
        elif missing:
            found.warnings.append(f"EDM-ARS warning: llm.prices.{model} has no {', '.join(missing)}: "
                                  "what those tokens cost is null (unpriced), never 0")
    return found


def price_text(price: Mapping[str, Any] | None) -> str:
    """`$in in / $out out, cache write $w / read $r per MTok`, with `null` for a price the config leaves out."""
    price = price or {}

    def money(key: str) -> str:
        value = price.get(key)
        return "null" if value is None else f"${float(value):g}"

    return (f"{money('input_per_mtok')} in / {money('output_per_mtok')} out, cache write "
            f"{money('cache_write_per_mtok')} / read {money('cache_read_per_mtok')} per MTok")


def service_check(config: Mapping[str, Any], environ: Mapping[str, str] | None = None,
                  timeout: float = 10.0) -> Preflight:
    """The service's own answer for each configured model (GET /v1/models/{id}, no tokens billed), asked once before
    the first job of a model-backed run: a model it answers 404 `not_found` for (retired for this key, or not
    available to it) stops the run with one line naming the agent, the key and the models the key can use; a key the
    service refuses (401/403) stops it too; a service that cannot be reached is one warning line (the jobs retry
    and say so themselves). Nothing without a key (the workflow's envvars check names the variable) and nothing
    for a backend other than `anthropic`."""
    import os

    found = Preflight()
    if config.get("backend") != "anthropic":
        return found
    environ = os.environ if environ is None else environ
    key_env = config.get("api_key_env") or "ANTHROPIC_API_KEY"
    key = environ.get(key_env)
    if not key:
        return found
    import anthropic

    base_url = config.get("base_url") or environ.get("ANTHROPIC_BASE_URL") or None
    where = base_url or "https://api.anthropic.com"
    client = anthropic.Anthropic(api_key=key, base_url=base_url, timeout=timeout, max_retries=1)
    rows = agent_models(config)
    missing: list[tuple[str, str, str]] = []
    for model in dict.fromkeys(m for _, _, m in rows):
        try:
            client.models.retrieve(model)
        except anthropic.NotFoundError:
            missing += [row for row in rows if row[2] == model]
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
            found.error = (f"EDM-ARS: {where} refused the key in {key_env} (HTTP {exc.status_code}) when asked about "
                           f"{model}: check the key (edm-ars models lists what a key can use)")
            return found
        except (anthropic.APIConnectionError, anthropic.APIStatusError) as exc:
            reason = f"HTTP {exc.status_code}" if isinstance(exc, anthropic.APIStatusError) else type(exc).__name__
            found.warnings.append(f"EDM-ARS warning: could not confirm the configured models with {where} ({reason}); "
                                  "the run goes on and each call retries and reports its own failure")
            return found
    if missing:
        named = "; ".join(f"agent {agent} ({key}: {model!r})" for agent, key, model in missing)
        try:
            usable = ", ".join(m.id for m in client.models.list(limit=100))
        except anthropic.APIError:
            usable = "(the list could not be read: run edm-ars models)"
        found.error = (f"EDM-ARS: model not available: {named}: {where} answered 404 not_found for it; models this "
                       f"key can use: {usable}; set one with --config model=ID or a configfile line "
                       "(llm.agents.<agent>.model: ID)")
    return found
