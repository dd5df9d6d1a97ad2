"""The model ProblemFormulator's logic with a scripted client: debate, synthesis, gate, revision, choice."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from edm_ars.core.errors import SpecError
from edm_ars.formulate.model import choose, diversity, formulate_with_model, registry_context
from edm_ars.formulate.spec import offline_spec, validate_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def prompts():
    return yaml.safe_load((ROOT / "config" / "prompts" / "formulate.yaml").read_text())


def draft(reg, question="college_attendance", extra=(), novelty=3.5):
    spec = offline_spec(reg, prompt=None, question_id=question, round_=0)
    preds = [{"name": p["name"], "rationale": p["rationale"]} for p in spec["predictors"]]
    preds += [{"name": n, "rationale": "added by the model"} for n in extra]
    return {"research_question": spec["research_question"], "outcome": {"name": spec["outcome"]["name"]},
            "predictors": preds, "population": spec["population"], "subgroups": spec["subgroups"],
            "expected_contribution": spec["expected_contribution"], "limitations": spec["limitations"],
            "novelty_score": novelty}


class ScriptedClient:
    def __init__(self, drafts):
        self.drafts = list(drafts)
        self.calls = []

    def complete(self, system, messages, *, tag):
        self.calls.append((tag, messages))
        return SimpleNamespace(text=f"My view as {tag}.")

    def complete_json(self, system, messages, *, tag, schema=None, check=None):
        self.calls.append((tag, messages))
        return self.drafts.pop(0), SimpleNamespace(text="{}")


def test_debate_then_synthesis_passes_the_gate(reg, prompts):
    client = ScriptedClient([draft(reg)])
    spec, record = formulate_with_model(client, prompts, reg, prompt="college", round_=0, backend="anthropic",
                                        revision_notes=[])
    assert [t for t, _ in client.calls] == ["debate-innovator", "debate-pragmatist", "debate-contrarian",
                                            "synthesize-1"]
    synth_prompt = client.calls[-1][1][0]["content"]
    assert "[innovator] My view" in synth_prompt and "[contrarian]" in synth_prompt
    assert validate_spec(spec, reg) == [] and spec["backend"] == "anthropic" and spec["prompt"] == "college"
    assert spec["outcome"]["wave"] == "update_panel" and spec["task"] == "binary_classification"
    assert record["gate_revisions"] == 0


def test_gate_failure_gets_one_revision_with_the_messages(reg, prompts):
    client = ScriptedClient([draft(reg, extra=["X4EVRAPPCLG"]), draft(reg)])
    spec, record = formulate_with_model(client, prompts, reg, prompt=None, round_=0, backend="anthropic",
                                        revision_notes=[])
    assert record["gate_revisions"] == 1 and "X4EVRAPPCLG" in record["first_violations"][0]
    revise = client.calls[-1]
    assert revise[0] == "revise" and "X4EVRAPPCLG" in revise[1][-1]["content"]
    assert "X4EVRAPPCLG" not in [p["name"] for p in spec["predictors"]]


def test_a_second_failure_stops_with_the_violations(reg, prompts):
    client = ScriptedClient([draft(reg, extra=["W1STUDENT"]), draft(reg, extra=["W1STUDENT"])])
    with pytest.raises(SpecError, match="W1STUDENT"):
        formulate_with_model(client, prompts, reg, prompt=None, round_=0, backend="anthropic", revision_notes=[])


def test_revision_notes_reach_the_debate(reg, prompts):
    client = ScriptedClient([draft(reg)])
    formulate_with_model(client, prompts, reg, prompt=None, round_=1, backend="anthropic",
                         revision_notes=["Drop X1PAREDU"])
    assert "Drop X1PAREDU" in client.calls[0][1][0]["content"]


def test_candidates_are_chosen_by_the_stated_rule(reg, prompts):
    drafts = [draft(reg, novelty=3.0), draft(reg, "math_achievement", novelty=4.0),
              draft(reg, extra=["X4EVRAPPCLG"], novelty=5.0)]
    client = ScriptedClient(drafts)
    spec, record = formulate_with_model(client, prompts, reg, prompt=None, round_=0, backend="anthropic",
                                        revision_notes=[], n_candidates=3)
    assert spec["outcome"]["name"] == "X2TXMTSCOR"  # highest novelty among those passing the gate
    assert record["choice"]["passing"] == [0, 1] and len(record["choice"]["diversity"]) == 3
    assert "synthesize-3" in [t for t, _ in client.calls]


def test_diversity_and_ties(reg):
    texts = ["college attendance X1SES X3TGPAACAD", "college attendance X1SES X3TGPAACAD", "math X1TXMTSCOR X1MTHEFF"]
    d = diversity(texts)
    assert d[2] > d[0] and d[0] == pytest.approx(d[1])
    a, b = offline_spec(reg, prompt=None, question_id="college_attendance", round_=0), \
        offline_spec(reg, prompt=None, question_id="hs_completion", round_=0)
    index, info = choose([a, b], reg)
    assert info["passing"] == [0, 1] and index in (0, 1)


def test_registry_context_lists_rules_and_variables(reg):
    ctx = registry_context(reg)
    assert "base_year" in ctx["waves"] and "X1SES |" in ctx["variables"] and "-9" in ctx["sentinels"]
    assert "X1ASIAN" not in ctx["variables"]  # suppressed variables are not offered
