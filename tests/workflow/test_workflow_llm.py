"""The workflow with a language model: the real Anthropic SDK and an OpenAI-compatible client talk to
fake servers on 127.0.0.1, as do the Semantic Scholar and CrossRef clients. No network, no real key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakes.llm_servers import FakeAnthropic, FakeOpenAI
from fakes.scholar_servers import CROSSREF_WORKS, S2_PAPERS, FakeCrossRef, FakeSemanticScholar
from workflow import ROOT, jobs_run, snakemake

from edm_ars.core.artifacts import read_yaml
from edm_ars.data.registry import load_registry
from edm_ars.formulate.spec import offline_spec

pytestmark = pytest.mark.workflow
KEY = "sk-ant-test-not-a-real-key-0123456789"


def spec_draft() -> dict:
    reg = load_registry(ROOT / "registry" / "hsls09")
    spec = offline_spec(reg, prompt=None, question_id="college_attendance", round_=0)
    return {"research_question": spec["research_question"], "outcome": {"name": "X4EVRATNDCLG"},
            "predictors": [{"name": p["name"], "rationale": p["rationale"]} for p in spec["predictors"][:12]],
            "population": spec["population"], "subgroups": spec["subgroups"],
            "expected_contribution": spec["expected_contribution"], "limitations": spec["limitations"],
            "novelty_score": 3.5}


CRITIC_REVIEW = {"overall_score": 8.5, "dimension_scores": {"problem_formulation": 8.5, "data_preparation": 9,
                                                             "analysis": 8.5, "substantive_validity": 8},
                 "issues": [{"id": "model_generalisability", "severity": "minor", "category": "substantive_validity",
                             "description": "Findings generalize to survey respondents only.",
                             "recommendation": "State the population restriction.", "target_stage": "write"}],
                 "revision_instructions": {}, "verdict": "PASS"}


# the synthesizer of the results debate: one judgment more conservative than the code's, one claim added
# with evidence that resolves, one whose evidence does not exist
DEBATE_SYNTHESIS = {
    "claims": [{"id": "ranking_robust", "status": "inconclusive", "reason": "only six perturbations"}],
    "new_claims": [
        {"id": "test_set_size", "statement": "The held-out test set is large enough for stable intervals.",
         "status": "supported", "reason": "thousands of students",
         "evidence": [{"artifact": "results.json", "key": "test_n"}]},
        {"id": "invented", "statement": "A random forest would have done better here.", "status": "supported",
         "reason": "intuition", "evidence": [{"artifact": "results.json", "key": "models.random_forest.metrics.auc"}]}]}


def writer_answer(prompt: str) -> str:
    """The introduction: real prose with a given macro, a given key and an invented key (to be stripped);
    the discussion: a literal number (so it is rejected and the template draft kept)."""
    refs = prompt.split("References you may cite (key: title (year)):", 1)[1].strip().splitlines()
    key = refs[0].split(":", 1)[0].strip()
    body = ("Students who leave high school with clear plans are easier to support than those without them, "
            "and schools want to know early which students may not enrol in college. ") * 22
    if "Write the introduction section" in prompt:
        return (f"WRITTEN-BY-MODEL. {body}Prior studies of this cohort~\\citep{{{key},invented2031ghost}} "
                "motivate a careful design, and the analytic sample holds \\AnalyticN{} students.")
    return f"The selected model reached an AUC of 0.91 on held-out students. {body}"


#: a supplementary analysis the scripted model writes: the outcome gap above and below the top predictor's median
GAP_CODE = """\
import json

import pandas as pd

with open("inputs/context.json") as fh:
    context = json.load(fh)
column = context["top_features"][0]["columns"][0]
x = pd.read_parquet("inputs/train_X.parquet", columns=[column])[column]
y = pd.read_parquet("inputs/train_y.parquet").iloc[:, 0]
high = x > x.median()
gap = float(y[high].mean() - y[~high].mean())
numbers = [{"name": "outcome_gap", "value": gap,
            "meaning": "outcome mean above minus below the median of the top predictor (training rows)"}]
with open("out/result.json", "w") as fh:
    json.dump({"numbers": numbers}, fh)
"""
#: ... first written with a typo, which the repair fixes
GAP_BUGGY = GAP_CODE.replace("gap = float(", "gap = flaot(")


def supplementary_answer(text: str) -> str:
    """The Analyst's proposal (one analysis, with a bug) and its repair (the fixed script)."""
    if "Propose at most" in text:
        return json.dumps({"analyses": [{"name": "top_median_gap", "purpose": "How different is the outcome above "
                                         "and below the median of the top predictor?", "reports": ["outcome_gap"],
                                         "code": GAP_BUGGY}]})
    return f"The corrected script:\n```python\n{GAP_CODE}```"


def agent(request: dict) -> str:
    """A scripted model: debate turns in prose, the synthesizer's specification as JSON in prose, and
    the Critic's three-lens review as JSON after its reasoning."""
    system = request.get("system") or ""
    system = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    if "You are the Critic" in system:
        return "<thinking>methodologist, skeptic, synthesizer</thinking>\n" + json.dumps(CRITIC_REVIEW)
    messages = request["messages"]
    last = messages[-1]["content"]
    text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last)
    if "You are the Writer" in system:
        return writer_answer(text)
    if "You are the Analyst" in system:
        return supplementary_answer(text)
    if "You are the results debate" in system:
        if "As the synthesizer of the results debate" in text:
            return json.dumps(DEBATE_SYNTHESIS)
        return "The stability analysis supports the feature ranking; the subgroup gaps need care."
    if "As the synthesizer" in text:
        return "Here is the specification.\n```json\n" + json.dumps(spec_draft()) + "\n```\nThat is all."
    return "I would predict postsecondary attendance (X4EVRATNDCLG) from earlier-wave indicators."


def literature_overrides(s2: FakeSemanticScholar, cr: FakeCrossRef) -> str:
    # lessons off (k: 0): the store changes between runs, which would (rightly) change the prompts
    return (f"literature: {{semantic_scholar_url: '{s2.base_url}', crossref_url: '{cr.base_url}', "
            "n_min: 5, n_max: 12}\nlessons: {store: .lessons/lessons.jsonl, k: 0}\n")


def files_under(workdir: Path):
    for top in ("output", "logs", ".snakemake", ".cache"):
        for path in (workdir / top).rglob("*"):
            if path.is_file():
                yield path


def test_anthropic_backend_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    pending = {"overloaded": True, "critic_prose": True}

    def flaky(request: dict) -> dict | str:
        """The scripted model, once overloaded (the first request: retried) and once scoring the Critic's review
        on a 100-point scale: structured outputs hold the review's shape but not its bounds (minimum and maximum
        are not enforced by the service), so the client's validation asks for a repair."""
        if pending.pop("overloaded", False):
            return {"status": 529, "headers": {"retry-after": "0"}}
        if "You are the Critic" in json.dumps(request.get("system")) and pending.pop("critic_prose", False):
            return json.dumps({**CRITIC_REVIEW, "overall_score": 85})
        return agent(request)

    with FakeAnthropic(flaky) as llm, FakeSemanticScholar(S2_PAPERS) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        result = snakemake(tmp_path, config={"backend": "anthropic", "base_url": llm.url},
                           overrides=literature_overrides(s2, cr))
        assert result.returncode == 0, result.stderr[-5000:]
        out = tmp_path / "output"
        spec = json.loads((out / "branch_1" / "round_0" / "research_spec.json").read_text())
        assert spec["backend"] == "anthropic" and spec["outcome"]["name"] == "X4EVRATNDCLG"
        literature = json.loads((out / "branch_1" / "round_0" / "literature_context.json").read_text())
        assert literature["source"] == "semantic_scholar" and not literature["retrieval_failed"]
        assert all(p["status"] != "HALLUCINATED" for p in literature["papers"])
        assert (out / "paper.pdf").exists()

        # costs.json agrees with the usage the fake server reported, priced from config
        calls = [json.loads(line) for line in (out / "llm_calls.jsonl").read_text().splitlines()]
        costs = json.loads((out / "costs.json").read_text())
        reported_in = sum(llm.request_chars(r) // 4 for r in llm.requests[1:])  # the 529 reported no usage
        # three debaters and the synthesizer (the first after one 529), the results debate (three lenses and a
        # synthesizer), then the Critic (an Opus-class model) with its repair re-prompt, and the Writer
        agents = costs["agents"]
        assert (agents["formulate"]["calls"], agents["formulate"]["attempts"], agents["formulate"]["retries"]) == (
            4, 5, 1)
        assert agents["formulate"]["statuses"] == {"http_error": 1, "ok": 4}
        assert (agents["critique"]["calls"], agents["critique"]["repairs"]) == (2, 1)
        assert agents["critique"]["statuses"] == {"unusable": 1, "ok": 1}
        assert agents["debate"]["calls"] == 4 and agents["write"]["calls"] == 2
        # the Analyst's supplementary analysis: its proposal, then one repair of its script
        assert agents["supplementary"]["calls"] == 2
        assert llm.count == 15 == costs["total"]["attempts"] and costs["total"]["calls"] == 14
        assert (costs["total"]["retries"], costs["total"]["repairs"], costs["total"]["failures"]) == (1, 1, 2)
        assert [c["status"] for c in calls if c["agent"] == "critique"] == ["unusable", "ok"]
        tex = (out / "paper" / "paper.tex").read_text()
        intro = tex.split("%%BEGIN:INTRODUCTION%%")[1].split("%%END:INTRODUCTION%%")[0]
        assert "WRITTEN-BY-MODEL" in intro and "invented2031ghost" not in tex and "\\AnalyticN{}" in intro
        discussion = tex.split("%%BEGIN:DISCUSSION%%")[1].split("%%END:DISCUSSION%%")[0]
        assert "0.91" not in discussion and "Information available by the" in discussion
        write_log = (tmp_path / "logs" / "write" / "paper.log").read_text()
        assert "unknown citation key(s) removed: invented2031ghost" in write_log
        assert "discussion: the model's text was rejected (literal number(s)" in write_log
        # prompt caching: the input the server counted is the uncached input, the cache writes and the cache reads
        t = costs["total"]
        assert t["input_tokens"] + t["cache_creation_input_tokens"] + t["cache_read_input_tokens"] == reported_in
        assert t["input_tokens"] == sum(c["input_tokens"] for c in calls)
        assert t["cache_read_input_tokens"] > 0 and t["cache_creation_input_tokens"] > 0
        assert any(isinstance(r.get("system"), list) and r["system"][-1].get("cache_control") for r in llm.requests)
        # config llm.prices: input, output, cache write, cache read
        prices = read_yaml(ROOT / "config" / "config.yaml", "config")["llm"]["prices"]
        price = {m: (p["input_per_mtok"], p["output_per_mtok"], p["cache_write_per_mtok"], p["cache_read_per_mtok"])
                 for m, p in prices.items()}
        expected = sum((c["input_tokens"] * price[c["model"]][0] + c["output_tokens"] * price[c["model"]][1]
                        + c["cache_creation_input_tokens"] * price[c["model"]][2]
                        + c["cache_read_input_tokens"] * price[c["model"]][3]) / 1e6 for c in calls)
        assert costs["total"]["cost_usd"] == pytest.approx(expected, abs=1e-5)  # costs.json rounds per agent
        # the current models' contract: no sampling parameter, effort sent, JSON asked for with a schema
        assert not any({"temperature", "top_p", "top_k"} & set(r) for r in llm.requests)
        assert any("format" in (r.get("output_config") or {}) for r in llm.requests)
        assert {c["model"] for c in calls if c["agent"] == "critique"} == {"claude-opus-5-5"}
        claims = {c["id"]: c for c in json.loads((out / "branch_1" / "round_0" / "claims.json").read_text())["claims"]}
        assert claims["ranking_robust"]["status"] == "inconclusive"  # the model made it more conservative
        assert claims["test_set_size"]["evidence"][0]["value"] > 0  # read from results.json by code
        assert claims["invented"]["status"] == "unsupported"
        discussion = (out / "paper" / "paper.tex").read_text()
        assert "did not settle whether the ranking" in discussion
        review = json.loads((out / "branch_1" / "round_0" / "review_report.json").read_text())
        assert review["model_verdict"] == "PASS" and review["backend"] == "anthropic"
        # the model's supplementary analysis failed once (a typo), was repaired, ran in the sandbox, and its number
        # is in the paper as a macro verify-paper reconciles
        results = json.loads((out / "branch_1" / "round_0" / "results.json").read_text())
        gap = results["supplementary"]["analyses"]["top_median_gap"]
        assert gap["source"] == "generated" and gap["status"] == "ok"
        assert [a["status"] for a in gap["attempts"]] == ["error", "ok"]
        first = out / "branch_1" / "round_0" / "supplementary" / "slot_1" / "top_median_gap" / "attempt_1"
        assert "flaot" in (first / "analysis.py").read_text()
        assert "outcome_gap" in gap["numbers"]
        verified = subprocess.run(["edm-ars", "verify-paper", str(out / "paper" / "paper.tex")], capture_output=True,
                                  text=True)
        assert verified.returncode == 0, verified.stdout[-2000:]
        macros = json.loads((out / "paper" / "numbers.json").read_text())["macros"]
        assert any(m["source"].endswith("top_median_gap.numbers.outcome_gap.value") for m in macros)
        assert any(i["id"] == "model_generalisability" for i in review["issues"])

        # forcing the stage again is answered from the cache: zero requests
        n_llm, n_s2 = llm.count, s2.request_count
        again = snakemake(tmp_path, "output/branch_1/round_0/research_spec.json", "-R", "formulate",
                          config={"backend": "anthropic", "base_url": llm.url},
                          overrides=literature_overrides(s2, cr))
        assert again.returncode == 0, again.stderr[-3000:]
        assert jobs_run(again) == ["formulate"]
        assert llm.count == n_llm and s2.request_count == n_s2
        ledger = [json.loads(line) for line in
                  (out / "branch_1" / "ledger" / "formulate" / "round_0.jsonl").read_text().splitlines()]
        assert len(ledger) == 4 and all(c["cache_hit"] for c in ledger)
    # the key reached the server but is never written anywhere
    assert any(KEY in " ".join(h.values()) for h in llm.headers)
    leaked = [p for p in files_under(tmp_path) if KEY.encode() in p.read_bytes()]
    assert leaked == []


def test_openai_compatible_backend_and_unpriced_cost(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(agent) as llm, FakeSemanticScholar(S2_PAPERS) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        result = snakemake(tmp_path, "output/branch_1/ledger/formulate/round_0.jsonl",
                           config={"backend": "openai_compatible", "base_url": f"{llm.url}/v1",
                                   "model": "local-llama"}, overrides=literature_overrides(s2, cr))
        assert result.returncode == 0, result.stderr[-5000:]
        assert llm.count == 4
    ledger = [json.loads(line) for line in
              (tmp_path / "output" / "branch_1" / "ledger" / "formulate" / "round_0.jsonl").read_text().splitlines()]
    assert {c["model"] for c in ledger} == {"local-llama"} and all(c["cost_usd"] is None for c in ledger)
    spec = json.loads((tmp_path / "output" / "branch_1" / "round_0" / "research_spec.json").read_text())
    assert spec["backend"] == "openai_compatible"


def test_model_that_keeps_breaking_the_gate_stops_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)

    def leaky(request):
        reply = agent(request)
        if "```json" in reply or "rejected by the registry" in json.dumps(request["messages"][-1]):
            draft = spec_draft()
            draft["predictors"].append({"name": "X4EVRAPPCLG", "rationale": "same-wave proxy"})
            return json.dumps(draft)
        return reply

    with FakeAnthropic(leaky) as llm:
        result = snakemake(tmp_path, "output/branch_1/round_0/research_spec.json",
                           config={"backend": "anthropic", "base_url": llm.url})
        assert llm.count == 5  # debate, synthesis, one revision
    assert result.returncode != 0
    assert "X4EVRAPPCLG" in result.stderr and "same wave" in result.stderr
    assert not (tmp_path / "output" / "branch_1" / "round_0" / "research_spec.json").exists()


SYNTHESIZER_REFUSES = "I can't help with that request."


def refusing(request: dict) -> dict | str:
    """The debate goes well; the synthesizer refuses (anthropic: stop_reason refusal; OpenAI: content_filter)."""
    last = request["messages"][-1]["content"]
    if "As the synthesizer" in (last if isinstance(last, str) else json.dumps(last)):
        return {"stop_reason": "refusal", "text": SYNTHESIZER_REFUSES}
    return agent(request)


@pytest.mark.parametrize("backend", ["anthropic", "openai_compatible"])
@pytest.mark.parametrize("fault", ["malformed_body", "refusal"])
def test_model_fault_stops_formulate_with_one_line(tmp_path, monkeypatch, backend, fault):
    """A 200 answer whose body is not JSON (retried once, then given up) and a refusal (not retried): the stage
    stops with one line naming service, agent, round and cause, no traceback, no spec, no paper, and the
    attempts kept in the logs (the ledger is an output, removed with the failed job)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake = {"anthropic": FakeAnthropic, "openai_compatible": FakeOpenAI}[backend]
    script = [{"body": "<html>502 Bad Gateway</html>"}] * 2 if fault == "malformed_body" else refusing
    with fake(script) as llm:
        config = {"backend": backend, "base_url": llm.url if backend == "anthropic" else f"{llm.url}/v1"}
        if backend == "openai_compatible":
            config["model"] = "local-llama"
        result = snakemake(tmp_path, "output/branch_1/round_0/research_spec.json", config=config,
                           overrides="llm: {max_retries: 1}\n")
        requests = llm.count
    model = "claude-sonnet-5-5" if backend == "anthropic" else "local-llama"
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.startswith("EDM-ARS ")]
    kept = "logs/branch_1/formulate/round_0.llm_calls.jsonl"
    if fault == "malformed_body":
        call, cause = "debate-innovator", ("malformed response: HTTP 200 with a body that is not valid JSON: "
                                           "'<html>502 Bad Gateway</html>'; gave up after 2 attempt(s) "
                                           "(llm.max_retries is 1)")
        statuses, n_cached = ["malformed", "malformed"], 0
    else:
        call, cause = "synthesize-1", f"the model refused to answer: {SYNTHESIZER_REFUSES!r}"
        statuses, n_cached = ["ok", "ok", "ok", "refused"], 3  # the three debate turns; never the refusal
    assert line == (f"EDM-ARS formulate: model call failed: {backend} at 127.0.0.1:{llm.port} (model {model}), "
                    f"agent formulate, round 0, call {call!r}: {cause}; its {len(statuses)} model call attempt(s) "
                    f"are kept in {kept}")
    assert requests == len(statuses)
    out = tmp_path / "output"
    for path in ("branch_1/round_0/research_spec.json", "branch_1/round_0/literature_context.json",
                 "branch_1/ledger/formulate/round_0.jsonl", "branch_1/prompts/formulate/round_0", "paper/paper.tex",
                 "paper.pdf"):
        assert not (out / path).exists(), path
    attempts = [json.loads(x) for x in (tmp_path / kept).read_text().splitlines()]
    assert [a["status"] for a in attempts] == statuses
    assert all(a["agent"] == "formulate" and a["round"] == 0 and a["model"] == model for a in attempts)
    assert [a["retry"] for a in attempts] == ([False, True] if fault == "malformed_body" else [False] * 4)
    entries = [json.loads(p.read_text()) for p in (tmp_path / ".cache" / "llm").rglob("*.json")
               if "literature" not in p.parts]
    assert len(entries) == n_cached and all(e["response"]["stop_reason"] in ("end_turn", "stop") for e in entries)
    assert [p for p in files_under(tmp_path) if KEY.encode() in p.read_bytes()] == []
