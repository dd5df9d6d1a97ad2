"""Supplementary analyses as code (edm_ars.codegen.supplementary): the contract check, the offline choice of vetted
analyses, the model's proposals, and the self-repair loop against the fake model server with the real sandbox."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakes.llm_servers import FakeAnthropic

from edm_ars.codegen.bwrap import sandbox_available
from edm_ars.codegen.limits import Limits
from edm_ars.codegen.supplementary import (
    CONTRACT,
    LIBRARY,
    ContractError,
    check_output,
    model_plan,
    model_repair,
    offline_plan,
    run_analysis,
)
from edm_ars.core.frames import write_frame
from edm_ars.llm import AgentSettings, LLMClient, load_prompt
from edm_ars.review.actions import validate

ROOT = Path(__file__).resolve().parents[2]
PROMPT = load_prompt(ROOT / "config" / "prompts" / "supplementary.yaml")
ENTRY = {"name": "mean_gap", "purpose": "How far apart are the outcome means of the two halves of X1?",
         "reports": ["gap"], "source": "generated", "requested_by": "analyst"}


def context(top=(("X1", ["X1"]), ("X2", ["X2"])), n_columns=4, task="binary_classification"):
    return {"task": task, "outcome": "Y", "outcome_label": "Y", "primary_metric": "auc", "selected_model": "logistic",
            "models": ["logistic"], "n_predictor_columns": n_columns, "seed": 7,
            "top_features": [{"feature": f, "label": f, "columns": c} for f, c in top]}


def write_result(out: Path, result, files=()):
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result))
    for name in files:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(b"%PDF-1.4")


# ---- the contract ------------------------------------------------------------------------------------------


def test_a_result_that_keeps_the_contract_is_read(tmp_path):
    write_result(tmp_path, {"numbers": [{"name": "gap", "value": 0.25, "meaning": "difference of the means of X1"}],
                            "figures": [{"file": "figures/a.pdf", "caption": "Means by half of X1."}]},
                 files=["figures/a.pdf"])
    assert check_output(tmp_path, ENTRY)["numbers"][0]["value"] == 0.25


@pytest.mark.parametrize("result, files, problem", [
    ({"numbers": [{"name": "other", "value": 1.0, "meaning": "something else entirely"}]}, [],
     "announced gap, which result.json does not report"),
    ({"numbers": [{"name": "gap", "value": 1.0, "meaning": "the gap is 12 points on average"}]}, [],
     "holds a number"),
    ({"numbers": [{"name": "gap", "value": 1.0, "meaning": "how much X1 causes the outcome to rise"}]}, [],
     "causal wording"),
    ({"numbers": [{"name": "gap", "value": 1.0, "meaning": "difference of the means of X1"}]}, ["stolen.txt"],
     "out/stolen.txt is not part of the contract"),
    ({"numbers": [{"name": "gap", "value": float("nan"), "meaning": "difference of the means of X1"}]}, [],
     "not a finite number"),
    ({"numbers": [{"name": "gap", "value": "high", "meaning": "difference of the means of X1"}]}, [],
     "is not of type 'number'"),
    ({"numbers": [{"name": "gap", "value": 1.0, "meaning": "difference of the means of X1"}],
      "figures": [{"file": "figures/missing.pdf", "caption": "A figure that is not there."}]}, [],
     "listed but was not written"),
])
def test_contract_violations_are_named(tmp_path, result, files, problem):
    write_result(tmp_path, result, files)
    with pytest.raises(ContractError, match=problem):
        check_output(tmp_path, ENTRY)


def test_no_result_file_breaks_the_contract(tmp_path):
    with pytest.raises(ContractError, match="wrote no out/result.json"):
        check_output(tmp_path, ENTRY)


# ---- choosing the analyses -----------------------------------------------------------------------------------


def test_offline_plan_follows_its_rules():
    plan = offline_plan(context(), 2)
    assert [a["name"] for a in plan["analyses"]] == ["drop_top_predictor", "interaction_top_two"]
    assert all(a["source"] == "library" and a["requested_by"] == "analyst" for a in plan["analyses"])
    # a categorical top predictor (several columns): no product term, no profile over its range
    plan = offline_plan(context(top=(("X1", ["X1__a", "X1__b"]), ("X2", ["X2"]))), 3)
    assert [a["name"] for a in plan["analyses"]] == ["drop_top_predictor"]
    assert {s["name"] for s in plan["skipped"]} == {"interaction_top_two", "prediction_profile_top"}


def test_a_review_request_comes_first_and_a_description_needs_a_model():
    plan = offline_plan(context(), 1, requested=["prediction_profile_top", "a sensitivity analysis by school size"])
    assert [(a["name"], a["requested_by"]) for a in plan["analyses"]] == [("prediction_profile_top", "critic")]
    assert any("offline backend cannot write" in s["reason"] for s in plan["skipped"])
    assert validate({"action": "add_analysis", "value": "drop_top_predictor"})[1] is None
    assert "must name a vetted analysis" in validate({"action": "add_analysis", "value": "x"})[1]


def test_model_proposals_are_checked_and_never_completed():
    good = {"name": "mean_gap", "purpose": "Outcome means by half of X1.", "reports": ["gap"], "code": "print(1)\n"}
    answer = json.dumps({"analyses": [good, dict(good), {"name": "Bad Name", "purpose": "x", "reports": ["aa"],
                                                          "code": "x"},
                                      {"name": "nocode", "purpose": "x", "reports": ["aa"]}]})
    asked = []
    plan = model_plan(lambda tag, text: asked.append(text) or f"Here:\n```json\n{answer}\n```", PROMPT, context(),
                      "{}", 2)
    assert [a["name"] for a in plan["analyses"]] == ["mean_gap"] and plan["analyses"][0]["source"] == "generated"
    assert sorted(s["reason"] for s in plan["skipped"]) == [
        "a duplicate name", "its name must be lower case letters, digits and underscores (2-40)", "no code"]
    assert CONTRACT.splitlines()[0] in asked[0]
    assert model_plan(lambda tag, text: "I would rather not.", PROMPT, context(), "{}", 2)["analyses"] == []


def test_the_vetted_library_passes_the_scan():
    from edm_ars.codegen.sandbox import scan
    from edm_ars.codegen.supplementary import library_code

    assert {name: scan(library_code(name)) for name in LIBRARY} == {name: [] for name in LIBRARY}


# ---- running, repairing, dropping (real sandbox, fake model) -------------------------------------------------

needs_sandbox = pytest.mark.skipif(sandbox_available() is not None, reason=f"no sandbox here: {sandbox_available()}")

GOOD = """\
import json
import pandas as pd

x = pd.read_parquet("inputs/train_X.parquet")["X1"]
y = pd.read_parquet("inputs/train_y.parquet").iloc[:, 0]
high = x > x.median()
gap = float(y[high].mean() - y[~high].mean())
with open("out/result.json", "w") as fh:
    json.dump({"numbers": [{"name": "gap", "value": gap, "meaning": "outcome rate above minus below the median of X1"}]}, fh)
"""
BUGGY = GOOD.replace("gap = float(", "gap = flaot(")


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"X1": rng.normal(size=200), "X2": rng.normal(size=200)})
    y = pd.DataFrame({"Y": (X["X1"] + rng.normal(size=200) > 0).astype(float)})
    folder = tmp_path / "data"
    folder.mkdir()
    for name, frame in (("train_X", X), ("test_X", X), ("train_y", y), ("test_y", y)):
        write_frame(folder / f"{name}.parquet", frame)
    (folder / "context.json").write_text(json.dumps(context()))
    return {f"{n}.parquet": folder / f"{n}.parquet" for n in ("train_X", "test_X", "train_y", "test_y")} | {
        "context.json": folder / "context.json"}


def client(server, tmp_path):
    settings = AgentSettings(agent="supplementary", backend="anthropic", model="claude-sonnet-4-5", temperature=0.0,
                             max_tokens=4000, timeout_s=5.0, max_retries=1, base_url=server.url)
    return LLMClient(settings, run_round=0, cache_dir=tmp_path / "cache", ledger_path=tmp_path / "ledger.jsonl",
                     transcript_dir=tmp_path / "transcripts", prices={}, sleep=lambda s: None, rng=random.Random(0))


def ask_with(c):
    return lambda tag, text: c.complete(PROMPT["system"], [{"role": "user", "content": text}], tag=tag).text


@needs_sandbox
@pytest.mark.workflow
def test_good_code_runs_and_its_numbers_are_recorded(tmp_path, data, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    record = run_analysis(ENTRY | {"code": GOOD}, data, tmp_path / "run", limits=Limits(), mode="bwrap", attempts=3,
                          repair=None)
    assert record["status"] == "ok" and [a["status"] for a in record["attempts"]] == ["ok"]
    assert 0 < record["numbers"]["gap"]["value"] < 1
    assert (tmp_path / "run" / "attempt_1" / "analysis.py").read_text() == GOOD


@needs_sandbox
@pytest.mark.workflow
def test_buggy_code_is_repaired_on_the_second_attempt(tmp_path, data, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeAnthropic([f"The fix:\n```python\n{GOOD}```"]) as server:
        repair = model_repair(ask_with(client(server, tmp_path)), PROMPT, ENTRY)
        record = run_analysis(ENTRY | {"code": BUGGY}, data, tmp_path / "run", limits=Limits(), mode="bwrap",
                              attempts=3, repair=repair)
        sent = server.requests[0]["messages"][-1]["content"]
    assert record["status"] == "ok" and [a["status"] for a in record["attempts"]] == ["error", "ok"]
    assert "NameError" in sent and "flaot" in sent and "Failure: error" in sent and CONTRACT.splitlines()[0] in sent
    assert (tmp_path / "run" / "attempt_1" / "analysis.py").read_text() == BUGGY
    assert "NameError" in (tmp_path / "run" / "attempt_1" / "stderr.txt").read_text()
    assert (tmp_path / "run" / "attempt_2" / "analysis.py").read_text() == GOOD
    ledger = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [e["tag"] for e in ledger] == ["repair-mean_gap"]


@needs_sandbox
@pytest.mark.workflow
def test_code_that_never_works_is_dropped_with_its_reason(tmp_path, data, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    hostile = "import socket\nsocket.create_connection(('127.0.0.1', 9))\n"
    with FakeAnthropic([f"```python\n{BUGGY}```", f"```python\n{hostile}```"]) as server:
        repair = model_repair(ask_with(client(server, tmp_path)), PROMPT, ENTRY)
        record = run_analysis(ENTRY | {"code": BUGGY}, data, tmp_path / "run", limits=Limits(), mode="bwrap",
                              attempts=3, repair=repair)
        assert server.count == 2  # two repairs: three attempts in all
    assert record["status"] == "dropped" and "numbers" not in record
    assert [a["status"] for a in record["attempts"]] == ["error", "error", "refused"]
    assert record["reason"].startswith("attempt 3 of 3: refused:") and "socket" in record["reason"]


def test_the_memory_limit_grows_with_the_frames_and_never_falls_below_the_configured_one():
    from edm_ars.codegen.limits import BASE_MB, FRAME_COPIES, memory_for

    small = memory_for(Limits(memory_mb=2048), 200 * 63)
    assert small == Limits(memory_mb=2048)
    million = 590_000 * 63 + 147_000 * 63  # a million students' training and test frames
    big = memory_for(Limits(memory_mb=2048), million)
    assert big.memory_mb == BASE_MB + -(-FRAME_COPIES * 8 * million // 2**20) and 3000 < big.memory_mb < 4096
    assert big.cpu_s == Limits().cpu_s and memory_for(Limits(memory_mb=9000), million).memory_mb == 9000


ALLOCATES = """\
import json
import numpy as np

block = np.ones((6, 2**27 // 8))  # six working copies of a 128 MB frame
with open("out/result.json", "w") as fh:
    json.dump({"numbers": [{"name": "gap", "value": float(block.size), "meaning": "cells allocated"}]}, fh)
"""


@needs_sandbox
@pytest.mark.workflow
def test_a_script_over_the_configured_memory_runs_once_the_limit_follows_the_frames(tmp_path, data):
    """A frame-sized allocation fails at a low configured limit ("memory") and runs under the limit memory_for gives
    for frames of that size."""
    from edm_ars.codegen.limits import memory_for

    low = Limits(memory_mb=600)
    failed = run_analysis(ENTRY | {"code": ALLOCATES}, data, tmp_path / "low", limits=low, mode="bwrap", attempts=1,
                          repair=None)
    assert failed["status"] == "dropped" and failed["attempts"][0]["status"] == "memory"
    scaled = memory_for(low, 2**27 // 8)
    done = run_analysis(ENTRY | {"code": ALLOCATES}, data, tmp_path / "scaled", limits=scaled, mode="bwrap",
                        attempts=1, repair=None)
    assert done["status"] == "ok", done["reason"]
