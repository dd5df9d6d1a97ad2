"""The LLM client against fake Anthropic and OpenAI-compatible servers on 127.0.0.1 (no network, no real key)."""

import hashlib
import json
import random
import socket
from pathlib import Path

import pytest
from fakes.llm_servers import FakeAnthropic, FakeOpenAI

from edm_ars.core.ledger import keep_failed, read_ledgers, summarize
from edm_ars.llm import (
    AgentSettings,
    LLMClient,
    LLMError,
    ModelServiceError,
    cache_key,
    extract_json,
    fill,
    ledger_spent,
    load_prompt,
    prompt_hash,
)

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-not-secret-123"
MODEL = {"anthropic": "claude-test", "openai_compatible": "gpt-test"}
PRICES = {"claude-test": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
          "gpt-test": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}
FAKE = {"anthropic": FakeAnthropic, "openai_compatible": FakeOpenAI}
LEDGER_KEYS = {"time", "agent", "round", "tag", "backend", "model", "attempt", "status", "http_status", "retry",
               "repair", "input_tokens", "output_tokens", "cost_usd", "latency_s", "cache_hit", "stop_reason",
               "cache_creation_input_tokens", "cache_read_input_tokens"}
SCHEMA = {"type": "object", "required": ["question", "n"], "additionalProperties": False,
          "properties": {"question": {"type": "string"}, "n": {"type": "integer"}}}
USER = [{"role": "user", "content": "Propose one research question as JSON."}]


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    for var in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_PROFILE",
                "ANTHROPIC_CONFIG_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture(params=["anthropic", "openai_compatible"])
def api(request):
    return request.param


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def make(tmp_path, sleeps):
    """A client for a running fake server; keyword arguments go to AgentSettings or LLMClient."""
    setting_names = {"temperature", "max_tokens", "timeout_s", "max_retries", "api_key_env", "model", "base_url",
                     "effort", "prompt_caching"}

    def _make(server, **kw):
        backend = "anthropic" if isinstance(server, FakeAnthropic) else "openai_compatible"
        options = {"model": MODEL[backend], "temperature": 0.2, "max_tokens": 512, "timeout_s": 5.0,
                   "max_retries": 2, "base_url": server.url if backend == "anthropic" else f"{server.url}/v1"}
        options.update({k: kw.pop(k) for k in list(kw) if k in setting_names})
        settings = AgentSettings(agent="formulate", backend=backend, **options)
        client_kw = {"run_round": 1, "cache_dir": tmp_path / "cache", "ledger_path": tmp_path / "ledger.jsonl",
                     "transcript_dir": tmp_path / "transcripts", "prices": PRICES, "sleep": sleeps.append,
                     "rng": random.Random(0)}
        client_kw.update(kw)
        return LLMClient(settings, **client_kw)

    return _make


def ledger(tmp_path):
    path = tmp_path / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def conversation(server, i):
    """The user/assistant messages of the i-th request (the OpenAI system message left out)."""
    return [m for m in server.requests[i]["messages"] if m["role"] != "system"]


def sent_key(server, i=0):
    headers = server.headers[i]
    return headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"


# ------------------------------------------------------------------------------------------ happy paths
def test_anthropic_happy_path(make, tmp_path):
    reply = {"text": "Hello from the fake.", "usage": {"input_tokens": 1200, "output_tokens": 300}}
    with FakeAnthropic([reply]) as server:
        client = make(server)
        comp = client.complete("You are terse.", [{"role": "user", "content": "Say hello."}], tag="hello")
        assert server.count == 1
    assert (comp.text, comp.stop_reason, comp.cache_hit) == ("Hello from the fake.", "end_turn", False)
    assert comp.attempts == 1
    assert (comp.model, comp.backend, comp.input_tokens, comp.output_tokens) == ("claude-test", "anthropic", 1200, 300)
    assert comp.cost_usd == pytest.approx(1200 * 3.0 / 1e6 + 300 * 15.0 / 1e6)
    assert comp.latency_s >= 0
    body = server.requests[0]
    assert server.paths[0] == "/v1/messages"
    assert body["model"] == "claude-test" and body["system"] == "You are terse." and body["max_tokens"] == 512
    assert body["messages"] == [{"role": "user", "content": "Say hello."}]
    # SDK 2.x (API 2026-10-21) has no sampling parameters: temperature is sent only when the SDK takes it
    assert ("temperature" in body) == client.backend.sends_temperature
    assert sent_key(server)
    [line] = ledger(tmp_path)
    assert LEDGER_KEYS <= set(line)
    assert (line["agent"], line["round"], line["tag"], line["backend"], line["model"]) == (
        "formulate", 1, "hello", "anthropic", "claude-test")
    assert (line["input_tokens"], line["output_tokens"], line["cache_hit"], line["attempt"]) == (1200, 300, False, 1)
    assert (line["status"], line["http_status"], line["retry"], line["repair"]) == ("ok", 200, False, False)
    assert line["cost_usd"] == pytest.approx(comp.cost_usd)
    prompt = json.loads((tmp_path / "transcripts" / "hello-1.prompt.json").read_text())
    assert prompt["system"] == "You are terse." and prompt["messages"] == body["messages"]
    assert prompt["model"] == "claude-test" and prompt["temperature"] == 0.2
    assert (tmp_path / "transcripts" / "hello-1.response.txt").read_text() == "Hello from the fake."


def test_openai_compatible_happy_path(make, tmp_path):
    with FakeOpenAI(["Hi there, friend."]) as server:
        comp = make(server).complete("Be kind.", [{"role": "user", "content": "Greet me."}], tag="greet")
    body = server.requests[0]
    assert server.paths[0] == "/v1/chat/completions"
    assert body["messages"] == [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Greet me."}]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-test", 0.2, 512)
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    # the fake's default usage: all request text // 4 in, answer // 4 out
    assert comp.input_tokens == len("Be kind." + "Greet me.") // 4
    assert comp.output_tokens == len("Hi there, friend.") // 4
    assert comp.cost_usd == pytest.approx(comp.input_tokens * 0.5 / 1e6 + comp.output_tokens * 1.5 / 1e6)
    assert comp.cost_usd > 0
    assert (comp.text, comp.stop_reason, comp.backend) == ("Hi there, friend.", "stop", "openai_compatible")
    assert ledger(tmp_path)[0]["cost_usd"] == pytest.approx(comp.cost_usd)


def test_openai_compatible_without_a_key_sends_no_authorization(make, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAI(["local answer"]) as server:
        assert make(server).complete("s", USER, tag="local").text == "local answer"
    assert "authorization" not in server.headers[0]


def test_key_from_a_named_environment_variable(make, monkeypatch):
    monkeypatch.setenv("EDM_TEST_LOCAL_KEY", "sk-other-test-key-456")
    with FakeOpenAI(["ok"]) as server:
        make(server, api_key_env="EDM_TEST_LOCAL_KEY").complete("s", USER, tag="named")
    assert server.headers[0]["authorization"] == "Bearer sk-other-test-key-456"


def test_anthropic_missing_key_names_the_variable(make, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with FakeAnthropic(["never"]) as server:
        with pytest.raises(LLMError, match="ANTHROPIC_API_KEY") as info:
            make(server).complete("s", USER, tag="nokey")
        assert server.count == 0
    assert "formulate" in str(info.value) and "claude-test" in str(info.value)


def test_settings_errors(tmp_path):
    common = {"run_round": 0, "cache_dir": tmp_path, "ledger_path": tmp_path / "l.jsonl", "transcript_dir": None}
    with pytest.raises(LLMError, match="base_url"):
        LLMClient(AgentSettings("write", "openai_compatible", "m", 0.0, 10), **common)
    with pytest.raises(LLMError, match="unknown backend 'carrier_pigeon'"):
        LLMClient(AgentSettings("write", "carrier_pigeon", "m", 0.0, 10), **common)


def test_callable_script(make):
    with FakeAnthropic(lambda request: f"echo: {request['messages'][-1]['content']}") as server:
        assert make(server).complete("s", [{"role": "user", "content": "ping"}], tag="echo").text == "echo: ping"


# ------------------------------------------------------------------------------------------ retries
def test_rate_limit_honours_retry_after(api, make, sleeps, tmp_path):
    with FAKE[api]([{"status": 429, "headers": {"retry-after": "1.5"}}, "after the wait"]) as server:
        comp = make(server).complete("s", USER, tag="limited")
        assert server.count == 2
    assert comp.text == "after the wait" and comp.attempts == 2
    assert sleeps == [1.5]
    lines = ledger(tmp_path)
    assert [(x["attempt"], x["status"], x["http_status"], x["retry"]) for x in lines] == [
        (1, "http_error", 429, False), (2, "ok", 200, True)]


def test_server_errors_until_retries_run_out(api, make, sleeps, tmp_path):
    with FAKE[api]([{"status": 500}] * 3) as server:
        with pytest.raises(LLMError) as info:
            make(server, max_retries=2).complete("s", USER, tag="broken")
        assert server.count == 3
    message = str(info.value)
    assert "formulate" in message and MODEL[api] in message and "HTTP 500" in message and "3 attempt" in message
    assert len(sleeps) == 2
    assert all(0 <= s <= 2 ** i for i, s in enumerate(sleeps))  # full jitter: uniform(0, base * 2^attempt)
    assert "HTTP 500" in ledger(tmp_path)[-1]["error"]


def test_overloaded_529_is_retried(api, make):
    with FAKE[api]([{"status": 529}, {"status": 503}, "made it"]) as server:
        assert make(server).complete("s", USER, tag="busy").text == "made it"
        assert server.count == 3


def test_client_errors_are_not_retried(api, make, sleeps):
    with FAKE[api]([{"status": 400, "error": "messages: bad field"}, "unused"]) as server:
        with pytest.raises(LLMError, match="HTTP 400.*not retried"):
            make(server).complete("s", USER, tag="bad")
        assert server.count == 1
    assert sleeps == []


def test_timeout_is_retried_then_fails(api, make, sleeps):
    with FAKE[api]([{"sleep": 3.0, "text": "too late"}] * 2) as server:
        with pytest.raises(LLMError, match="timeout") as info:
            make(server, timeout_s=0.3, max_retries=1).complete("s", USER, tag="slow")
        assert server.count == 2
    assert "formulate" in str(info.value) and MODEL[api] in str(info.value)
    assert len(sleeps) == 1


def test_dropped_connection_is_retried(api, make):
    with FAKE[api]([{"drop": True}, "after the drop"]) as server:
        comp = make(server).complete("s", USER, tag="dropped")
        assert server.count == 2
    assert comp.text == "after the drop" and comp.attempts == 2


# ------------------------------------------------------------------------------------------ structured output
def test_malformed_json_is_repaired(api, make, tmp_path):
    bad = '{"question": "Does 9th-grade math efficacy predict GPA?", "n": 3,'
    good = '{"question": "Does 9th-grade math efficacy predict GPA?", "n": 3}'
    with FAKE[api]([bad, good]) as server:
        value, comp = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 2
    assert value == json.loads(good) and comp.text == good
    repair = conversation(server, 1)
    assert repair[:-2] == USER
    assert repair[-2] == {"role": "assistant", "content": bad}
    assert repair[-1]["role"] == "user"
    # no JSON could be read: the model is asked to restate its own answer, form only
    assert "no complete JSON" in repair[-1]["content"] and "Restate your previous answer" in repair[-1]["content"]
    assert "do not add, drop or alter any content" in repair[-1]["content"]
    lines = ledger(tmp_path)
    assert [(x["tag"], x["status"], x["repair"]) for x in lines] == [("spec", "unusable", False),
                                                                     ("spec-repair", "ok", True)]
    assert "no complete JSON" in lines[0]["error"]


def test_schema_problems_are_named_in_the_repair(make):
    with FakeAnthropic(['{"question": "q", "n": "three"}', '{"question": "q", "n": 3}']) as server:
        value, _ = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
    assert value == {"question": "q", "n": 3}
    repair = conversation(server, 1)[-1]["content"]
    assert "n: 'three' is not of type 'integer'" in repair and "corrected JSON only" in repair


def test_check_problems_are_named_in_the_repair(make):
    def check(value):
        return [] if value["n"] <= 5 else [f"n must be at most 5, got {value['n']}"]

    with FakeOpenAI(['{"question": "q", "n": 9}', '{"question": "q", "n": 4}']) as server:
        value, _ = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA, check=check)
    assert value["n"] == 4
    assert "n must be at most 5, got 9" in conversation(server, 1)[-1]["content"]


def test_still_unusable_after_one_repair_fails(make):
    with FakeAnthropic(["I would rather chat.", '{"question": 1}', "unused"]) as server:
        with pytest.raises(ModelServiceError, match="so was the answer to the one repair re-prompt") as info:
            make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 2
    assert "question: 1 is not of type 'string'" in str(info.value) and info.value.status == "unusable"


@pytest.mark.parametrize("text", [
    'Here is the specification you asked for:\n{"question": "q", "n": 1}\nLet me know if it helps.',
    '```json\n{"question": "q", "n": 1}\n```',
    'Sure.\n```\n{"question": "q", "n": 1}\n```\nDone.',
    '<thinking>Maybe {"question": "draft", "n": 0}? No.</thinking>\n{"question": "q", "n": 1}',
    '<think>draft [0] {"n": 0}</think>```json\n{"question": "q", "n": 1}\n```',
    'First try: {"question": "old", "n": 0}\nCorrected:\n```json\n{"question": "q", "n": 1}\n```',
    '{"question": "old", "n": 0}\n\nRevised answer: {"question": "q", "n": 1} (see [1])',
], ids=["prose", "fence", "bare-fence", "thinking", "think", "several-fenced", "several-prose"])
def test_json_found_in_prose_fences_and_after_thinking(make, text):
    with FakeAnthropic([text]) as server:
        value, _ = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 1
    assert value == {"question": "q", "n": 1}


def test_extract_json_edge_cases():
    assert extract_json("[1, 2]\n[3, 4]") == [3, 4]
    assert extract_json('{"a": {"b": "}"}}') == {"a": {"b": "}"}}
    assert extract_json('[see below] {"a": 1}') == {"a": 1}
    assert extract_json('reasoning without an opening tag {"a": 0}</think>{"a": 1}') == {"a": 1}
    assert extract_json('draft {"a": 1}, final {"a": [{"b": 1}, {"c"') == {"a": 1}  # not a fragment of the cut one
    for text in ['{"a": {"b": 1}, "c": [', "no JSON here", "", '<thinking>{"a": 1}</thinking>', "<think>{"]:
        with pytest.raises(ValueError, match="no complete JSON"):
            extract_json(text)


# ------------------------------------------------------------------------------------------ faults of the service
# Each fault, against both fake servers: retried or repaired where that can help; otherwise a ModelServiceError
# whose message is one line naming the service, the agent, the round, the call and the cause, every attempt a
# ledger line, and nothing cached that a later run would take for a good answer.
GOOD = '{"question": "q", "n": 1}'
WRONG_SHAPE = {"anthropic": {"type": "message", "content": "not a list of blocks", "stop_reason": "end_turn"},
               "openai_compatible": {"object": "chat.completion", "choices": []}}


def failure(server, api, tag, excinfo) -> str:
    """The error's message, checked for the shape every model fault has."""
    message = str(excinfo.value)
    assert isinstance(excinfo.value, ModelServiceError)
    assert "\n" not in message and "Traceback" not in message and KEY not in message
    prefix = f"model call failed: {api} at 127.0.0.1:{server.port} (model {MODEL[api]}), agent formulate, round 1, "
    assert message.startswith(prefix + f"call {tag!r}: "), message
    return message[len(prefix + f"call {tag!r}: "):]


def cached(tmp_path) -> list[Path]:
    return list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("body", ["not json {", "", "wrong shape"], ids=["not-json", "empty", "wrong-shape"])
def test_malformed_200_body_is_retried_then_stops(api, make, sleeps, tmp_path, body):
    reply = {"body": WRONG_SHAPE[api] if body == "wrong shape" else body}
    with FAKE[api]([reply] * 3) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server, max_retries=2).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 3
    cause = failure(server, api, "spec", info)
    what = {"not json {": "a body that is not valid JSON: 'not json {'", "": "an empty body",
            "wrong shape": "a body of the wrong shape ("}[body]
    assert cause.startswith(f"malformed response: HTTP 200 with {what}")
    assert cause.endswith("gave up after 3 attempt(s) (llm.max_retries is 2)")
    assert info.value.status == "malformed" and len(sleeps) == 2
    assert [(x["attempt"], x["status"], x["http_status"], x["retry"]) for x in ledger(tmp_path)] == [
        (1, "malformed", 200, False), (2, "malformed", 200, True), (3, "malformed", 200, True)]
    assert cached(tmp_path) == []


@pytest.mark.parametrize("body", ["not json {", "", "wrong shape"], ids=["not-json", "empty", "wrong-shape"])
def test_malformed_200_body_then_a_good_answer(api, make, tmp_path, body):
    reply = {"body": WRONG_SHAPE[api] if body == "wrong shape" else body}
    with FAKE[api]([reply, GOOD]) as server:
        value, comp = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 2
    assert value == {"question": "q", "n": 1} and comp.attempts == 2
    assert [x["status"] for x in ledger(tmp_path)] == ["malformed", "ok"]


def test_an_answer_with_no_text_is_retried_then_stops(api, make, tmp_path):
    with FAKE[api](["", "  \n", "the answer"]) as server:
        assert make(server).complete("s", USER, tag="empty").text == "the answer"
    assert [x["status"] for x in ledger(tmp_path)] == ["malformed", "malformed", "ok"]
    with FAKE[api]([""] * 2) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server, max_retries=1).complete_json("s", [{"role": "user", "content": "x"}], tag="spec")
    stop = "end_turn" if api == "anthropic" else "stop"
    assert failure(server, api, "spec", info) == (f"malformed response: HTTP 200 with an empty answer (no text; "
                                                  f"stop_reason {stop}); gave up after 2 attempt(s) (llm.max_retries "
                                                  "is 1)")


def test_connection_dropped_mid_body_is_retried_then_stops(api, make, tmp_path):
    with FAKE[api]([{"cut_body": True, "text": "x" * 400}] * 2) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server, max_retries=1).complete("s", USER, tag="cut")
        assert server.count == 2
    cause = failure(server, api, "cut", info)
    assert cause.startswith("connection dropped before the answer was complete (")
    assert "RemoteProtocolError" in cause and cause.endswith("gave up after 2 attempt(s) (llm.max_retries is 1)")
    assert [(x["status"], x["retry"]) for x in ledger(tmp_path)] == [("dropped", False), ("dropped", True)]
    assert cached(tmp_path) == []


def test_connection_dropped_mid_body_then_a_good_answer(api, make, tmp_path):
    with FAKE[api]([{"cut_body": True, "text": "x" * 400}, "whole"]) as server:
        comp = make(server).complete("s", USER, tag="cut")
    assert comp.text == "whole" and comp.attempts == 2
    assert [x["status"] for x in ledger(tmp_path)] == ["dropped", "ok"]


@pytest.mark.parametrize("text", ['{"question": "q", "n": ', 'Draft: {"question": "d", "n": 0}. Final: {"question": "q'],
                         ids=["cut-inside", "complete-draft-before-the-cut"])
def test_answer_cut_at_max_tokens_stops_without_repair(api, make, tmp_path, text):
    # never repaired into a value: not by closing brackets, not by taking a draft before the cut, not by asking
    # the model to finish it
    with FAKE[api]([{"stop_reason": "max_tokens", "text": text, "usage": {"output_tokens": 512}}, GOOD]) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 1
    assert failure(server, api, "spec", info) == ("answer cut at max_tokens (512 tokens): raise "
                                                  "llm.agents.formulate.max_tokens")
    [line] = ledger(tmp_path)
    assert (line["status"], line["stop_reason"], line["output_tokens"], line["repair"]) == (
        "truncated", "max_tokens", 512, False)
    assert line["cost_usd"] > 0  # the cut answer was paid for
    assert cached(tmp_path) == []
    assert (tmp_path / "transcripts" / "spec-1.response.txt").read_text() == text  # kept as it came


def test_answer_cut_at_max_tokens_in_prose_stops(api, make, tmp_path):
    with FAKE[api]([{"stop_reason": "max_tokens", "text": "The innovator argues that"}]) as server:
        with pytest.raises(ModelServiceError, match="answer cut at max_tokens") as info:
            make(server).complete("s", USER, tag="debate-innovator")
    assert info.value.status == "truncated" and cached(tmp_path) == []


def test_refusal_stops_at_once(api, make, tmp_path):
    # anthropic: stop_reason "refusal"; OpenAI: finish_reason "content_filter"
    with FAKE[api]([{"stop_reason": "refusal", "text": "I can't help with that."}, GOOD]) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 1
    assert failure(server, api, "spec", info) == "the model refused to answer: \"I can't help with that.\""
    assert [(x["status"], x["repair"]) for x in ledger(tmp_path)] == [("refused", False)]
    assert cached(tmp_path) == []  # a later run asks again


def test_refusal_of_a_prose_call_stops_too(api, make, tmp_path):
    with FAKE[api]([{"stop_reason": "refusal", "text": ""}]) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server).complete("s", USER, tag="debate-contrarian")
    assert failure(server, api, "debate-contrarian", info) == "the model refused to answer (no text)"
    assert cached(tmp_path) == []


def test_openai_refusal_field_stops_at_once(make, tmp_path):
    with FakeOpenAI([{"refusal": "I won't write that specification.", "finish_reason": "stop"}, GOOD]) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 1
    assert failure(server, "openai_compatible", "spec", info) == (
        "the model refused to answer: \"I won't write that specification.\"")
    assert ledger(tmp_path)[0]["status"] == "refused" and cached(tmp_path) == []


def test_prose_without_json_gets_one_restatement_then_stops(api, make, tmp_path):
    prose = "I would study whether ninth-grade math efficacy predicts college attendance."
    with FAKE[api]([prose, "As I said, math efficacy and attendance.", GOOD]) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 2
    cause = failure(server, api, "spec", info)
    assert cause.startswith("no usable JSON: the answer was unusable, and so was the answer to the one repair "
                            "re-prompt: no complete JSON object or array found in the answer")
    repair = conversation(server, 1)
    assert repair[-2] == {"role": "assistant", "content": prose}
    assert "Restate your previous answer" in repair[-1]["content"]
    assert [(x["tag"], x["status"], x["repair"]) for x in ledger(tmp_path)] == [
        ("spec", "unusable", False), ("spec-repair", "unusable", True)]
    assert cached(tmp_path) == []


def test_persistent_server_errors_stop_the_call(api, make, sleeps, tmp_path):
    with FAKE[api]([{"status": 503}, {"status": 500}, {"status": 529}]) as server:
        with pytest.raises(ModelServiceError) as info:
            make(server, max_retries=2).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 3
    cause = failure(server, api, "spec", info)
    assert cause.startswith("HTTP 529") and "scripted HTTP 529" in cause
    assert cause.endswith("gave up after 3 attempt(s) (llm.max_retries is 2)")
    assert [(x["status"], x["http_status"], x["retry"]) for x in ledger(tmp_path)] == [
        ("http_error", 503, False), ("http_error", 500, True), ("http_error", 529, True)]
    assert len(sleeps) == 2 and cached(tmp_path) == []


def test_unreachable_or_unusable_base_url(api, tmp_path, sleeps):
    closed = socket.socket()  # bound but not listening: connections to it are refused
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    suffix = "" if api == "anthropic" else "/v1"
    common = {"run_round": 1, "cache_dir": tmp_path / "cache", "ledger_path": tmp_path / "ledger.jsonl",
              "transcript_dir": None, "sleep": sleeps.append}
    try:
        refused = LLMClient(AgentSettings("formulate", api, MODEL[api], 0.0, 64, 5.0, 1,
                                          f"http://127.0.0.1:{port}{suffix}"), **common)
        with pytest.raises(ModelServiceError) as info:
            refused.complete("s", USER, tag="t")
    finally:
        closed.close()
    assert str(info.value).startswith(f"model call failed: {api} at 127.0.0.1:{port} (model {MODEL[api]}), "
                                      "agent formulate, round 1, call 't': could not connect (")
    assert "gave up after 2 attempt(s)" in str(info.value) and len(sleeps) == 1
    not_a_url = LLMClient(AgentSettings("formulate", api, MODEL[api], 0.0, 64, 5.0, 1, "localhost-no-scheme"),
                          **common)
    with pytest.raises(ModelServiceError, match=r"could not send the request \(.*\): check base_url \(not retried\)"):
        not_a_url.complete("s", USER, tag="t")
    assert len(sleeps) == 1
    assert [x["status"] for x in ledger(tmp_path)] == ["connection"] * 3


def test_an_incomplete_answer_cached_by_an_earlier_version_is_asked_again(api, make, tmp_path):
    with FAKE[api]([GOOD]) as server:
        client = make(server)
        key = client.cache_key("s", USER, SCHEMA)
        path = tmp_path / "cache" / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"response": {"text": '{"question": "q", "n"', "stop_reason": "max_tokens",
                                                 "input_tokens": 1, "output_tokens": 512}}))
        value, comp = client.complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 1
    assert value == {"question": "q", "n": 1} and not comp.cache_hit
    assert json.loads(path.read_text())["response"]["stop_reason"] in ("end_turn", "stop")


def test_a_repaired_exchange_is_replayed_from_the_cache(api, make, tmp_path):
    with FAKE[api](["prose first", GOOD]) as server:
        make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
    with FAKE[api]([]) as server:
        value, comp = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 0
    assert value == {"question": "q", "n": 1} and comp.cache_hit
    assert [(x["status"], x["cache_hit"]) for x in ledger(tmp_path)[2:]] == [("unusable", True), ("ok", True)]


def test_costs_count_attempts_retries_repairs_and_failures(make, tmp_path):
    script = [{"status": 529}, "prose", GOOD, {"body": ""}, {"stop_reason": "max_tokens", "text": "{"}]
    with FakeAnthropic(script) as server:
        client = make(server)
        client.complete_json("s", USER, tag="spec", schema=SCHEMA)  # 529, prose, repaired
        client.complete_json("s", USER, tag="spec", schema=SCHEMA)  # cached: the unusable answer and the repair
        with pytest.raises(ModelServiceError):
            client.complete_json("s", [{"role": "user", "content": "other"}], tag="other", schema=SCHEMA)
    agent = summarize(read_ledgers([tmp_path / "ledger.jsonl"]))["agents"]["formulate"]
    assert agent["statuses"] == {"http_error": 1, "unusable": 2, "ok": 2, "malformed": 1, "truncated": 1}
    assert (agent["calls"], agent["cache_hits"], agent["attempts"], agent["retries"], agent["repairs"],
            agent["failures"]) == (4, 2, 5, 2, 2, 5)
    lines = ledger(tmp_path)
    assert agent["cost_usd"] == pytest.approx(sum(x["cost_usd"] for x in lines)) and agent["cost_usd"] > 0
    assert agent["output_tokens"] == sum(x["output_tokens"] for x in lines)


def test_a_failed_jobs_ledger_is_kept_next_to_its_log(tmp_path):
    ledger_file, log_file = tmp_path / "output" / "ledger.jsonl", tmp_path / "logs" / "formulate" / "round_0.log"
    assert keep_failed(ledger_file, log_file) is None  # no ledger: nothing to keep
    ledger_file.parent.mkdir()
    ledger_file.write_text('{"agent": "formulate", "status": "malformed"}\n')
    for n in (1, 2):  # a second failure is appended: the attempts of every failed run stay visible
        path, count = keep_failed(ledger_file, log_file)
        assert path == tmp_path / "logs" / "formulate" / "round_0.llm_calls.jsonl" and count == 1
        assert len(path.read_text().splitlines()) == n


# ------------------------------------------------------------------------------------------ cache, cost, budget
def test_cached_rerun_makes_no_request(api, make, tmp_path):
    with FAKE[api](['{"question": "q", "n": 1}']) as server:
        first, _ = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 1
    with FAKE[api]([]) as server:
        client = make(server)
        again, comp = client.complete_json("s", USER, tag="spec", schema=SCHEMA)
        assert server.count == 0
    assert again == first
    assert comp.cache_hit and comp.cost_usd == 0.0 and comp.attempts == 0
    lines = ledger(tmp_path)
    assert [line["cache_hit"] for line in lines] == [False, True]
    assert lines[1]["cost_usd"] == 0.0 and lines[1]["attempt"] == 0 and lines[1]["status"] == "ok"
    key = client.cache_key("s", USER, SCHEMA)
    assert (tmp_path / "cache" / key[:2] / f"{key}.json").exists()
    assert sorted(p.name for p in (tmp_path / "transcripts").iterdir()) == [
        "spec-1.prompt.json", "spec-1.response.txt", "spec-2.prompt.json", "spec-2.response.txt"]


def test_another_temperature_is_another_cache_entry(make):
    with FakeOpenAI(["a", "b"]) as server:
        assert make(server).complete("s", USER, tag="t").text == "a"
        assert make(server, temperature=0.9).complete("s", USER, tag="t").text == "b"
        assert make(server).complete("s", USER, tag="t").text == "a"
        assert server.count == 2


def test_unpriced_model_has_null_cost(api, make, tmp_path):
    with FAKE[api](["answer"]) as server:
        comp = make(server, prices={}).complete("s", USER, tag="free")
    assert comp.cost_usd is None
    assert ledger(tmp_path)[0]["cost_usd"] is None


def test_budget_stops_before_the_call(api, make):
    with FAKE[api](["unused"]) as server:
        client = make(server, budget_usd=0.01, spent_usd=lambda: 0.0095,
                      prices={MODEL[api]: {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})
        with pytest.raises(LLMError, match=r"budget of \$0\.0100 would be exceeded: spent \$0\.0095 of \$0\.0100"):
            client.complete("s", USER, tag="expensive")
        assert server.count == 0


def test_budget_allows_a_call_that_fits_and_reads_the_ledger_by_default(make, tmp_path):
    with FakeAnthropic(["cheap", "unused"]) as server:
        client = make(server, budget_usd=1.0)
        assert client.complete("s", USER, tag="fits").text == "cheap"
        spent = ledger_spent(tmp_path / "ledger.jsonl")
        assert spent > 0
        (tmp_path / "ledger.jsonl").open("a").write(json.dumps({"cost_usd": 1.0 - spent}) + "\n")
        with pytest.raises(LLMError, match="would be exceeded"):
            client.complete("s", [{"role": "user", "content": "another"}], tag="over")
        assert server.count == 1
        # a cached answer costs nothing and is not stopped by the budget
        assert client.complete("s", USER, tag="fits").cache_hit


def test_budget_on_an_unpriced_model_is_refused(make):
    with FakeOpenAI(["unused"]) as server:
        with pytest.raises(LLMError, match="cannot enforce the budget"):
            make(server, prices={}, budget_usd=5.0).complete("s", USER, tag="x")
        assert server.count == 0


# ------------------------------------------------------------------------------------------ secrecy, transcripts
def test_api_key_is_never_written_or_raised(make, tmp_path, capsys, caplog):
    caplog.set_level("DEBUG")
    errors = []
    with FakeAnthropic(['{"question": "q", "n": 1}', "not json", '{"question": "q", "n": 2}',
                        {"status": 429, "headers": {"retry-after": "0"}}, {"status": 500},
                        {"status": 401, "error": f"invalid key {KEY}"},  # a server echoing the key
                        {"stop_reason": "refusal", "text": "no"}]) as anthropic_server:
        client = make(anthropic_server, max_retries=1)
        client.complete_json("s", USER, tag="ok", schema=SCHEMA)
        client.complete_json("s", USER, tag="ok", schema=SCHEMA)  # cached
        client.complete_json("s", [{"role": "user", "content": "again"}], tag="repair", schema=SCHEMA)
        for tag in ("server-error", "auth", "refusal"):
            with pytest.raises(LLMError) as info:
                client.complete_json("s", [{"role": "user", "content": tag}], tag=tag)
            errors.append(str(info.value))
        with pytest.raises(LLMError) as info:
            over_budget = make(anthropic_server, budget_usd=0.5, spent_usd=lambda: 1.0)
            over_budget.complete("s", [{"role": "user", "content": "$"}], tag="budget")
        errors.append(str(info.value))
    with FakeOpenAI(["plain", {"drop": True}, {"drop": True}]) as openai_server:
        client = make(openai_server, max_retries=1)
        client.complete("s", USER, tag="openai")
        with pytest.raises(LLMError) as info:
            client.complete("s", [{"role": "user", "content": "drop"}], tag="drop")
        errors.append(str(info.value))
    assert sent_key(anthropic_server) and sent_key(openai_server)  # the key did go out, in the headers only
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in files) and any(p.name.endswith(".prompt.json") for p in files)
    assert len(list((tmp_path / "cache").rglob("*.json"))) >= 3
    leaked = [str(p) for p in files if KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert len(errors) == 5 and not [e for e in errors if KEY in e]
    out, err = capsys.readouterr()
    assert KEY not in out + err + caplog.text


def test_transcripts_are_numbered_per_tag(make, tmp_path):
    with FakeOpenAI(["one", "two", "three"]) as server:
        client = make(server)
        client.complete("sys", [{"role": "user", "content": "1"}], tag="debate-methodologist")
        client.complete("sys", [{"role": "user", "content": "2"}], tag="debate-methodologist")
        client.complete("sys", [{"role": "user", "content": "3"}], tag="synthesize 1/2")
    folder = tmp_path / "transcripts"
    assert (folder / "debate-methodologist-2.response.txt").read_text() == "two"
    assert (folder / "synthesize_1_2-1.response.txt").read_text() == "three"
    prompt = json.loads((folder / "debate-methodologist-1.prompt.json").read_text())
    assert prompt["messages"] == [{"role": "user", "content": "1"}] and prompt["system"] == "sys"


def test_no_transcripts_when_no_folder(make, tmp_path):
    with FakeOpenAI(["x"]) as server:
        make(server, transcript_dir=None).complete("s", USER, tag="quiet")
    assert not (tmp_path / "transcripts").exists()


# ------------------------------------------------------------------------------------------ prompt files
def test_load_prompt_and_hash(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text("system: |\n  You study {dataset}.\nuser: 'Question: {question}'\n", encoding="utf-8")
    prompt = load_prompt(path)
    assert prompt["system"].format(dataset="HSLS:09") == "You study HSLS:09.\n"
    assert fill(prompt["user"], question="why?") == "Question: why?"
    with pytest.raises(LLMError, match="question"):
        fill(prompt["user"])
    assert prompt_hash(path) == hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    assert len(prompt_hash(path)) == 16
    (tmp_path / "bad.yaml").write_text("user: hi\n")
    with pytest.raises(LLMError, match="system"):
        load_prompt(tmp_path / "bad.yaml")
    with pytest.raises(LLMError, match="not found"):
        load_prompt(tmp_path / "missing.yaml")


def test_the_project_prompt_files_load():
    for path in sorted((ROOT / "config" / "prompts").glob("*.yaml")):
        if path.name != "phrases.yaml":  # the Writer's fixed sentences, not a prompt (tests/writer/test_phrases.py)
            assert isinstance(load_prompt(path)["system"], str)


# ------------------------------------------------------------------------------------------ today's request contract
CURRENT = "claude-sonnet-5-5"
CURRENT_PRICES = {CURRENT: {"input_per_mtok": 2.0, "output_per_mtok": 10.0, "cache_write_per_mtok": 2.5,
                            "cache_read_per_mtok": 0.1}}
LONG_SYSTEM = "You are the Critic. " + "Check every number against the artifacts. " * 120  # > 2048 characters


def _post(server, body):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{server.url}/v1/messages", data=json.dumps(body).encode(), method="POST",
                                     headers={"x-api-key": KEY, "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_fake_server_speaks_the_current_contract():
    base = {"max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    rejected = [{"temperature": 0.2}, {"top_p": 0.9}, {"top_k": 5},
                {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "{"}]},
                {"tool_choice": {"type": "any"}}, {"tool_choice": {"type": "tool", "name": "x"}},
                {"thinking": {"type": "enabled", "budget_tokens": 1024}}, {"thinking": {"type": "disabled"}},
                {"output_config": {"effort": "extreme"}}]
    with FakeAnthropic(lambda request: "fine") as server:
        for extra in rejected:
            status, body = _post(server, {**base, "model": CURRENT, **extra})
            assert status == 400, extra
            assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", extra
        for retired in ("claude-opus-4-1", "claude-3-5-haiku-20241022"):
            status, body = _post(server, {**base, "model": retired})
            assert (status, body["error"]["type"]) == (404, "not_found_error")
        # an older id keeps the old contract: sampling and prefill are accepted, no thinking block
        status, body = _post(server, {**base, "model": "claude-sonnet-4-5", "temperature": 0.2})
        assert status == 200 and [b["type"] for b in body["content"]] == ["text"]
        status, body = _post(server, {**base, "model": CURRENT, "output_config": {"effort": "low"}})
        assert status == 200 and [b["type"] for b in body["content"]] == ["thinking", "text"]
        marks = [{"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
        status, body = _post(server, {**base, "model": "claude-sonnet-4-5", "system": marks})
        assert status == 400 and "4" in body["error"]["message"]


def test_a_current_model_gets_no_rejected_parameter_and_its_effort(make, tmp_path):
    with FakeAnthropic([{"text": "The answer.", "thinking": "private reasoning first"}]) as server:
        client = make(server, model=CURRENT, temperature=0.7, prices=CURRENT_PRICES)
        client.settings.effort = "medium"
        comp = client.complete("s", USER, tag="plain")
        body = server.requests[0]
    assert comp.text == "The answer."  # the thinking block before the text is skipped
    assert not {"temperature", "top_p", "top_k", "thinking", "tool_choice"} & set(body)
    assert body["output_config"] == {"effort": "medium"}
    assert [line["status"] for line in ledger(tmp_path)] == ["ok"]


def test_a_prefill_is_never_sent_to_a_current_model(make):
    with FakeAnthropic(["never"]) as server:
        client = make(server, model=CURRENT)
        with pytest.raises(LLMError, match="prefill"):
            client.complete("s", [*USER, {"role": "assistant", "content": "{"}], tag="prefill")
        assert server.count == 0


def test_a_thinking_block_before_the_text_is_skipped_for_any_model(make):
    with FakeAnthropic([{"text": '{"question": "q", "n": 2}', "thinking": '{"question": "draft", "n": 0}'}]) as server:
        value, comp = make(server).complete_json("s", USER, tag="spec", schema=SCHEMA)
    assert value == {"question": "q", "n": 2} and "draft" not in comp.text


def test_prompt_cache_usage_is_recorded_and_priced(make, tmp_path):
    with FakeAnthropic(["first", "second"]) as server:
        client = make(server, model=CURRENT, prices=CURRENT_PRICES)
        one = client.complete(LONG_SYSTEM, [{"role": "user", "content": "Review round 1."}], tag="r1")
        two = client.complete(LONG_SYSTEM, [{"role": "user", "content": "Review round 2."}], tag="r2")
        sent = server.requests[0]["system"]
    assert sent == [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    prefix = len(LONG_SYSTEM) // 4
    assert (one.cache_creation_input_tokens, one.cache_read_input_tokens) == (prefix, 0)
    assert (two.cache_creation_input_tokens, two.cache_read_input_tokens) == (0, prefix)
    assert two.cost_usd == pytest.approx(two.input_tokens * 2.0 / 1e6 + two.output_tokens * 10.0 / 1e6
                                         + prefix * 0.1 / 1e6)
    assert one.cost_usd == pytest.approx(one.input_tokens * 2.0 / 1e6 + one.output_tokens * 10.0 / 1e6
                                         + prefix * 2.5 / 1e6)
    lines = ledger(tmp_path)
    assert [(x["cache_creation_input_tokens"], x["cache_read_input_tokens"]) for x in lines] == [(prefix, 0),
                                                                                                   (0, prefix)]
    total = summarize(read_ledgers([tmp_path / "ledger.jsonl"]))["total"]
    assert (total["cache_creation_input_tokens"], total["cache_read_input_tokens"]) == (prefix, prefix)
    assert total["cost_usd"] == pytest.approx(one.cost_usd + two.cost_usd, abs=1e-6)


def test_cache_tokens_on_a_model_without_cache_prices_cost_null(make, tmp_path):
    with FakeAnthropic(["first"]) as server:
        client = make(server, model=CURRENT, prices={CURRENT: {"input_per_mtok": 2.0, "output_per_mtok": 10.0}})
        comp = client.complete(LONG_SYSTEM, USER, tag="r1")
    assert comp.cache_creation_input_tokens > 0 and comp.cost_usd is None
    assert summarize(read_ledgers([tmp_path / "ledger.jsonl"]))["total"]["cost_usd"] is None


def test_prompt_caching_off_sends_no_breakpoint(make):
    marked = [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}},
              {"type": "text", "text": "and the rest"}]
    with FakeAnthropic(["a"]) as server:
        client = make(server, model=CURRENT, prices=CURRENT_PRICES)
        client.settings.prompt_caching = False
        comp = client.complete(LONG_SYSTEM, [{"role": "user", "content": marked}], tag="r1")
        assert server.requests[0]["system"] == LONG_SYSTEM
        assert "cache_control" not in json.dumps(server.requests[0])  # not even the caller's own breakpoint
    assert (comp.cache_creation_input_tokens, comp.cache_read_input_tokens) == (0, 0)


def test_a_conversation_caches_its_earlier_turns_within_four_breakpoints():
    from edm_ars.llm.backends import cache_breakpoints

    long = "x" * 3000
    marked = {"type": "text", "text": "m", "cache_control": {"type": "ephemeral"}}
    system, messages = cache_breakpoints(long, [{"role": "user", "content": long},
                                                {"role": "assistant", "content": "answer"},
                                                {"role": "user", "content": "repair it"}])
    assert system[0]["cache_control"] and messages[1]["content"][-1]["cache_control"]
    assert messages[0]["content"][-1]["cache_control"] and messages[2]["content"] == "repair it"
    # breakpoints the caller set count: never more than 4 in all
    system, messages = cache_breakpoints(long, [{"role": "user", "content": [marked, marked, marked]},
                                                {"role": "assistant", "content": long},
                                                {"role": "user", "content": "next"}])
    assert json.dumps([system, messages]).count("cache_control") == 4


def test_structured_output_needs_no_repair(make, tmp_path):
    prose = 'Here it is: {"question": "q", "n": 3,}'  # a trailing comma: unusable as JSON
    # an older model: no output format is sent, the answer needs the repair re-prompt
    with FakeAnthropic([prose, '{"question": "q", "n": 3}']) as server:
        make(server).complete_json("s", USER, tag="old", schema=SCHEMA)
        assert "output_config" not in server.requests[0]
    # a current model: the schema goes in output_config.format and the JSON answer is used as it is
    with FakeAnthropic([{"text": prose, "json": {"question": "q", "n": 3}}]) as server:
        value, comp = make(server, model=CURRENT, prices=CURRENT_PRICES).complete_json("s", USER, tag="new",
                                                                                        schema=SCHEMA)
        fmt = server.requests[0]["output_config"]["format"]
        assert server.count == 1
    assert fmt["type"] == "json_schema" and fmt["schema"]["required"] == ["question", "n"]
    assert value == {"question": "q", "n": 3}
    repairs = {tag: sum(x["repair"] for x in ledger(tmp_path) if x["tag"].startswith(tag)) for tag in ("old", "new")}
    assert repairs == {"old": 1, "new": 0}


def test_the_cache_key_holds_what_is_sent(make):
    with FakeAnthropic([]) as server:
        cold = make(server, model=CURRENT, temperature=0.0)
        warm = make(server, model=CURRENT, temperature=0.9)
        assert cold.cache_key("s", USER) == warm.cache_key("s", USER)  # a temperature not sent keys nothing
        warm.settings.effort = "low"
        assert cold.cache_key("s", USER) != warm.cache_key("s", USER)  # the effort sent does
        assert cold.cache_key("s", USER, SCHEMA) != cold.cache_key("s", USER)  # so does the output format
    assert cache_key("anthropic", CURRENT, "s", USER, 0.2, 512) != cache_key("anthropic", CURRENT, "s", USER, 0.2,
                                                                             512, options={})


def test_an_older_model_keeps_the_old_request_and_a_map_schema_is_asked_for_in_words(make):
    scores = {"type": "object", "required": ["scores"],
              "properties": {"scores": {"type": "object", "additionalProperties": {"type": "number"}}}}
    with FakeAnthropic(['{"question": "q", "n": 1}', '{"scores": {"rigour": 7}}']) as server:
        old = make(server, effort="medium")  # claude-test: no effort, no output format
        old.complete_json("s", USER, tag="old", schema=SCHEMA)
        current = make(server, model=CURRENT, prices=CURRENT_PRICES)
        value, _ = current.complete_json("s", USER, tag="map", schema=scores)
        assert "output_config" not in server.requests[0]
        # structured outputs close every object, so a map would lose its keys: no format is sent for it
        assert "format" not in (server.requests[1].get("output_config") or {})
    assert value == {"scores": {"rigour": 7}}


def test_calls_that_begin_alike_share_one_cached_prefix(make, tmp_path):
    from edm_ars.llm.prompts import shared_prefix_contents

    context = "## Results summary\n" + "the same results line\n" * 150
    turns = [context + f"Your role: {role}.\n" for role in ("optimist", "skeptic", "methodologist")]
    contents = shared_prefix_contents(turns)
    assert all(c[0]["text"] == context and c[0]["cache_control"] for c in contents)
    assert ["".join(b["text"] for b in c) for c in contents] == turns  # the words are the same
    assert shared_prefix_contents(["short a", "short b"]) == ["short a", "short b"]
    with FakeAnthropic(["a", "b", "c"]) as server:
        client = make(server, model=CURRENT, prices=CURRENT_PRICES)
        comps = [client.complete("s", [{"role": "user", "content": c}], tag="turn") for c in contents]
    shared = (len("s") + len(context)) // 4  # the prefix: the system prompt and the shared context
    assert [(c.cache_creation_input_tokens, c.cache_read_input_tokens) for c in comps] == [
        (shared, 0), (0, shared), (0, shared)]
    # an OpenAI-compatible server gets the same words as one text, without the breakpoint
    with FakeOpenAI(["a"]) as server:
        make(server).complete("s", [{"role": "user", "content": contents[0]}], tag="turn")
        assert conversation(server, 0) == [{"role": "user", "content": turns[0]}]
