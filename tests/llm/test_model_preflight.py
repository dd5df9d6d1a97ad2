"""The models a configuration names: the defaults are current, priced models; the preflight before any job of a
model-backed run (a retired model stops it with one line, a deprecated one warns once); `edm-ars models`
against the fake Anthropic server."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from fakes.llm_servers import FakeAnthropic
from workflow import snakemake

from edm_ars.cli import main
from edm_ars.llm.models import (
    current_models,
    preflight,
    price_text,
    replacement,
    sdk_deprecated,
    sdk_models,
    service_check,
)

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def model_backed(**agents: str) -> dict:
    config = copy.deepcopy(DEFAULTS)
    config["backend"] = "anthropic"
    for agent, model in agents.items():
        config["llm"]["agents"][agent]["model"] = model
    return config


def test_the_default_models_are_current_and_fully_priced():
    """Every model the default config names is one the installed SDK lists and does not mark deprecated, and has
    all four prices; the Critic is Opus-class, the working agents Sonnet-class; effort replaces temperature."""
    agents, prices = DEFAULTS["llm"]["agents"], DEFAULTS["llm"]["prices"]
    models = {a["model"] for a in agents.values()}
    assert models <= set(sdk_models()) and not models & set(sdk_deprecated())
    assert "opus" in agents["critique"]["model"]
    assert all("sonnet" in a["model"] for name, a in agents.items() if name != "critique")
    for model in models:
        assert set(prices[model]) == {"input_per_mtok", "output_per_mtok", "cache_write_per_mtok",
                                      "cache_read_per_mtok"}
    assert all(a.get("effort") in {"low", "medium", "high"} and "temperature" not in a for a in agents.values())
    assert preflight(model_backed()).warnings == [] and preflight(model_backed()).error is None


def test_a_retired_model_stops_with_one_line_naming_agent_key_and_current_models():
    result = preflight(model_backed(critique="claude-opus-4-1"))
    line = result.error
    assert line is not None and "\n" not in line
    assert "agent critique (llm.agents.critique.model: 'claude-opus-4-1')" in line
    assert "claude-sonnet-5-5" in line and "claude-opus-5-5" in line and "claude-sonnet-4-5," not in line
    assert "--config model=claude-opus-5-5" in line  # the newest current model of its family


def test_a_deprecated_model_warns_once_with_end_of_life_key_and_replacement():
    config = model_backed(formulate="claude-sonnet-4-5", write="claude-sonnet-4-5")
    config["llm"]["prices"]["claude-sonnet-4-5"] = {"input_per_mtok": 3.0, "output_per_mtok": 15.0,
                                                    "cache_write_per_mtok": 3.75, "cache_read_per_mtok": 0.3}
    result = preflight(config)
    assert result.error is None
    assert result.warnings == ["EDM-ARS warning: claude-sonnet-4-5 (llm.agents.formulate.model, "
                               "llm.agents.write.model) is deprecated: end of life November 30th, 2026; replace it "
                               "with claude-sonnet-5-5"]


def test_the_top_level_model_is_the_key_named_and_an_unpriced_model_is_said_to_cost_null():
    config = model_backed()
    config["model"] = "claude-haiku-5-5"
    result = preflight(config)
    assert result.error is None
    assert result.warnings == ["EDM-ARS warning: llm.prices has no price for claude-haiku-5-5: its cost is null "
                               "(unpriced), never 0; add input_per_mtok, output_per_mtok, cache_write_per_mtok and "
                               "cache_read_per_mtok from Anthropic's pricing page"]
    config["model"] = "claude-opus-4-1"
    assert "agent write (model: 'claude-opus-4-1')" in preflight(config).error


def test_only_the_anthropic_backend_is_checked():
    for backend in ("offline", "openai_compatible"):
        config = model_backed(critique="claude-opus-4-1")
        config["backend"] = backend
        assert preflight(config).error is None and preflight(config).warnings == []


def test_replacements_and_current_models_follow_the_sdk_lists():
    known = ["claude-sonnet-9", "claude-opus-9", "claude-sonnet-8", "claude-sonnet-8-20990101"]
    current = current_models(known, {"claude-sonnet-8": "someday"})
    assert current == ["claude-sonnet-9", "claude-opus-9"]
    assert replacement("claude-sonnet-8", current) == "claude-sonnet-9"
    assert replacement("claude-opus-1", current) == "claude-opus-9"
    assert replacement("claude-haiku-1", current) == "claude-sonnet-9"
    assert price_text({"input_per_mtok": 2, "output_per_mtok": 10}) == (
        "$2 in / $10 out, cache write null / read null per MTok")


# ---- edm-ars models ----------------------------------------------------------------------------------------------

def test_models_lists_the_keys_models_the_agents_and_their_prices(monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-models")
    with FakeAnthropic([]) as server:
        server.models = ["claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"]
        code = main(["models", "--base-url", server.url])
        path, headers = server.gets[-1]
        assert path.startswith("/v1/models") and server.count == 0  # a listing, no model call
        assert "sk-test-models" in " ".join(headers.values())  # the key was sent
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert "claude-sonnet-5-5  used by formulate, engineer, analyze, debate, supplementary, write; $2 in / $10 out, " \
           "cache write $2.5 / read $0.2 per MTok" in lines
    assert "claude-opus-5-5  used by critique; $4 in / $20 out, cache write $5 / read $0.2 per MTok" in lines
    assert "claude-haiku-5-5  not used; not priced (cost null)" in lines


def test_models_flags_a_configured_model_the_key_cannot_use(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-models")
    pinned = tmp_path / "pin.yaml"
    pinned.write_text("llm:\n  agents:\n    critique: {model: claude-opus-4-7, effort: high, max_tokens: 8000}\n")
    with FakeAnthropic([]) as server:
        server.models = ["claude-sonnet-5-5", "claude-opus-5-5"]
        code = main(["models", "--base-url", server.url, "--configfile", str(pinned)])
    out = capsys.readouterr().out
    assert code == 1
    assert ("claude-opus-4-7  used by critique; not listed for this key (the service would answer 404 not_found); "
            "not priced (cost null)") in out.splitlines()


def test_models_without_a_key_is_one_clear_line(monkeypatch, capsys):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["models"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["edm-ars: no API key: set ANTHROPIC_API_KEY (or name another variable with --api-key-env) to "
                   "list the models it can use"]


# ---- before any job -----------------------------------------------------------------------------------------------

@pytest.mark.workflow
def test_a_retired_critic_model_stops_a_dry_run_before_any_job(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-preflight")
    result = snakemake(tmp_path, "-n", "output/paper.pdf", config={"backend": "anthropic"},
                       overrides="llm:\n  agents:\n    critique: {model: claude-opus-4-1, temperature: 0.0, "
                                 "max_tokens: 8000}\n")
    assert result.returncode != 0
    lines = [x for x in result.stderr.splitlines() if "claude-opus-4-1" in x]
    assert len(lines) == 1 and lines[0].startswith("EDM-ARS: model not available: agent critique "
                                                   "(llm.agents.critique.model: 'claude-opus-4-1')"), result.stderr
    assert "Traceback" not in result.stderr and "Job stats" not in result.stderr
    assert not (tmp_path / "output").exists()


@pytest.mark.workflow
def test_a_deprecated_model_warns_once_and_the_run_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-preflight")
    result = snakemake(tmp_path, "-n", "output/paper.pdf", "--quiet", "rules", config={"backend": "anthropic"},
                       overrides="llm:\n  agents:\n    formulate: {model: claude-sonnet-4-5, temperature: 0.7, "
                                 "max_tokens: 4000}\n  prices:\n    claude-sonnet-4-5: {input_per_mtok: 3.0, "
                                 "output_per_mtok: 15.0, cache_write_per_mtok: 3.75, cache_read_per_mtok: 0.3}\n")
    assert result.returncode == 0, result.stderr[-3000:]
    warned = [x for x in result.stderr.splitlines() if "deprecated" in x]
    assert warned == ["EDM-ARS warning: claude-sonnet-4-5 (llm.agents.formulate.model) is deprecated: end of life "
                      "November 30th, 2026; replace it with claude-sonnet-5-5"], result.stderr[-3000:]


def test_status_runs_the_same_check(tmp_path, capsys):
    pinned = tmp_path / "pin.yaml"
    pinned.write_text("llm:\n  agents:\n    critique: {model: claude-opus-4-1, temperature: 0.0, max_tokens: 8000}\n")
    assert main(["status", "-d", str(tmp_path), "--configfile", str(pinned), "--config", "backend=anthropic"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("EDM-ARS: model not available: agent critique (llm.agents.critique.model: "
                               "'claude-opus-4-1')")
    assert any(line.startswith("no run yet") for line in lines)
    # the offline backend (the default) is not checked
    assert main(["status", "-d", str(tmp_path), "--configfile", str(pinned)]) == 0
    assert "model not available" not in capsys.readouterr().out


# ---- the service's own answer (GET /v1/models/{id}) -------------------------------------------------------------

def test_a_model_the_service_answers_404_for_stops_with_one_line():
    """The installed SDK still knows claude-haiku-5-5, but this key's service answers 404 not_found for it."""
    with FakeAnthropic([]) as server:
        server.models = ["claude-sonnet-5-5", "claude-opus-5-5"]
        config = {**model_backed(write="claude-haiku-5-5"), "base_url": server.url}
        assert preflight(config).error is None  # the SDK knows it
        found = service_check(config, environ={"ANTHROPIC_API_KEY": "sk-test-service"})
        asked = [path.split("?")[0] for path, _ in server.gets]
        assert server.count == 0  # no model call, nothing billed
    assert found.error is not None and "\n" not in found.error
    assert found.error.startswith("EDM-ARS: model not available: agent write (llm.agents.write.model: "
                                  "'claude-haiku-5-5'): ")
    assert "answered 404 not_found" in found.error and "claude-sonnet-5-5, claude-opus-5-5" in found.error
    assert sorted(set(asked)) == ["/v1/models", "/v1/models/claude-haiku-5-5", "/v1/models/claude-opus-5-5",
                                  "/v1/models/claude-sonnet-5-5"]


def test_the_service_check_passes_a_usable_config_and_only_warns_when_unreachable(tmp_path):
    with FakeAnthropic([]) as server:
        config = {**model_backed(), "base_url": server.url}
        assert service_check(config, environ={"ANTHROPIC_API_KEY": "sk-test-service"}) == service_check(
            model_backed(), environ={})  # nothing to say (and nothing asked without a key)
        url = server.url
    # the server is gone: one warning, the run goes on
    found = service_check({**model_backed(), "base_url": url}, environ={"ANTHROPIC_API_KEY": "sk-test-service"},
                          timeout=2.0)
    assert found.error is None and len(found.warnings) == 1
    assert found.warnings[0].startswith(f"EDM-ARS warning: could not confirm the configured models with {url}")
    # a refused key stops the run, naming the variable
    with FakeAnthropic([]) as server:
        server.get_body = lambda path: (401, server.error_body(401, "invalid x-api-key"))
        found = service_check({**model_backed(), "base_url": server.url, "api_key_env": "MY_KEY"},
                              environ={"MY_KEY": "sk-bad"})
    assert found.error is not None and "refused the key in MY_KEY (HTTP 401)" in found.error
    assert service_check({**model_backed(), "backend": "offline"}, environ={"ANTHROPIC_API_KEY": "k"}).error is None


@pytest.mark.workflow
def test_a_run_and_status_stop_when_the_service_answers_404(tmp_path, monkeypatch, capsys):
    """Before the first job (not in a dry run): the run stops with the service's one line, and no job ran."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-service")
    with FakeAnthropic([]) as server:
        server.models = ["claude-sonnet-5-5"]  # the Critic's claude-opus-5-5 is not available to this key
        result = snakemake(tmp_path, "output/data/raw.parquet", config={"backend": "anthropic",
                                                                             "base_url": server.url})
        assert main(["status", "-d", str(tmp_path), "--config", "backend=anthropic", f"base_url={server.url}"]) == 1
        assert server.count == 0
    assert result.returncode != 0
    lines = [x for x in result.stderr.splitlines() if "not available" in x]
    assert len(lines) == 1 and lines[0].startswith("EDM-ARS: model not available: agent critique "
                                                   "(llm.agents.critique.model: 'claude-opus-5-5')"), result.stderr
    assert "answered 404 not_found" in lines[0] and "Traceback" not in result.stderr
    assert not (tmp_path / "output").exists()
    assert capsys.readouterr().out.splitlines()[0] == lines[0]
