"""Human gates (edm_ars.run.gates): which modes gate which stages, approvals bound to what was shown."""

from __future__ import annotations

import json

import pytest

from edm_ars.core.errors import EdmArsError
from edm_ars.run.gates import MODES, approve, check, read_notes, reject


def test_modes_nest():
    assert MODES["full-auto"] == []
    assert set(MODES["co-pilot"]) == set(MODES["gate-only"]) | {"critique"}
    assert set(MODES["step-by-step"]) == {"formulate", "engineer", "analyze", "critique", "write"}


def _round(tmp_path):
    d = tmp_path / "output" / "branch_1" / "round_0"
    d.mkdir(parents=True)
    (d / "review_report.json").write_text(json.dumps({"verdict": "PASS"}))
    return d


def test_co_pilot_critique_gate_blocks_until_approved_and_an_edit_voids_the_approval(tmp_path):
    d = _round(tmp_path)
    with pytest.raises(EdmArsError, match="edm-ars approve critique --round 0"):
        check("critique", 0, tmp_path)
    approve("critique", 0, tmp_path, note="agree with the review")
    assert check("critique", 0, tmp_path)["note"] == "agree with the review"
    (d / "review_report.json").write_text(json.dumps({"verdict": "REVISE"}))  # regenerated after approval
    with pytest.raises(EdmArsError, match="changed after the approval"):
        check("critique", 0, tmp_path)


def test_a_rejection_needs_a_note_and_withdraws_the_approval(tmp_path):
    _round(tmp_path)
    approve("critique", 0, tmp_path)
    with pytest.raises(EdmArsError, match="needs a note"):
        reject("critique", 0, tmp_path, "  ")
    path = reject("critique", 0, tmp_path, "The fairness audit needs intersections")
    assert read_notes(path) == ["The fairness audit needs intersections"]
    with pytest.raises(EdmArsError, match="not approved yet"):
        check("critique", 0, tmp_path)


def test_a_causal_study_shows_its_own_artifacts_at_each_gate(tmp_path):
    from edm_ars.run.gates import subjects

    r0 = tmp_path / "output" / "branch_1" / "round_0"
    (r0 / "causal").mkdir(parents=True)
    (r0 / "research_spec.json").write_text(json.dumps({"task": "causal"}))
    (r0 / "literature_context.json").write_text("{}")
    (r0 / "causal" / "data_report.json").write_text("{}")
    assert subjects("engineer", 0, 1, "causal") == ["output/branch_1/round_0/causal/data_report.json"]
    assert subjects("engineer", 0, 1, "prediction") == ["output/branch_1/round_0/data/data_report.json"]
    # the task is read from the run's first specification: approving and checking use the causal files
    approve("engineer", 0, tmp_path)
    assert check("engineer", 0, tmp_path)["decision"] == "approved"
    (r0 / "causal" / "data_report.json").write_text('{"changed": true}')
    with pytest.raises(EdmArsError, match="changed after the approval"):
        check("engineer", 0, tmp_path)
