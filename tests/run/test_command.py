"""The run's own command (edm_ars.run.command) in what the gates print, and the block a run stopped at gates ends
with (edm_ars.run.gates.stop_block)."""

from __future__ import annotations

import json
import shlex

import pytest

from edm_ars.run.command import record, recorded, run_command
from edm_ars.run.gates import EXIT_WAITING, GateWaiting, check, stop_block, waiting_message, waiting_path


def test_the_command_keeps_the_settings_and_leaves_out_what_acts_once(tmp_path):
    argv = ["/usr/lib/python3/site-packages/snakemake/__main__.py", "--cores", "4", "-F", "--forcerun", "engineer",
            "write", "--configfile", "my study.yaml", "--config", "hitl=gate-only", "dataset=star", "-d", "runs/a",
            "--until=analyze", "output/paper.pdf"]
    assert run_command(argv) == ["snakemake", "--cores", "4", "--configfile", "my study.yaml", "--config",
                                 "hitl=gate-only", "dataset=star", "-d", "runs/a", "output/paper.pdf"]
    assert run_command(["/usr/bin/pytest", "-q"]) is None  # the workflow started through the API: nothing to repeat
    assert record(["/usr/bin/pytest"], tmp_path) is None and recorded(tmp_path) == ["snakemake", "--cores", "8",
                                                                                  "output/paper.pdf"]
    path = record(["/opt/bin/snakemake", *argv[1:]], tmp_path)
    assert json.loads(path.read_text())["command"] == recorded(tmp_path) == run_command(argv)


def test_the_waiting_message_repeats_the_recorded_command_and_directory(tmp_path):
    record(["/opt/bin/snakemake", "--cores", "2", "--directory", str(tmp_path), "--configfile", "a b.yaml",
            "--config", "hitl=gate-only", "output/paper.pdf"], tmp_path)
    text = waiting_message("engineer", 1, "not approved yet", branch=2, workdir=tmp_path)
    run = f"snakemake --cores 2 --directory {tmp_path} --configfile 'a b.yaml' --config hitl=gate-only output/paper.pdf"
    assert f"To continue:  edm-ars approve engineer --round 1 --branch 2 --directory {tmp_path} && {run}" in text
    reject = f'edm-ars reject engineer --round 1 --branch 2 --directory {tmp_path} --note "..." && {run}'
    assert f"To send it back with an instruction:  {reject}" in text
    assert shlex.split(run)[-3:] == ["--config", "hitl=gate-only", "output/paper.pdf"]


def test_a_run_ends_with_exit_3_only_when_every_failure_is_a_waiting_gate(tmp_path):
    spec = tmp_path / "output/branch_1/round_0/research_spec.json"
    spec.parent.mkdir(parents=True)
    spec.write_text("{}")
    (tmp_path / "output/branch_1/round_0/literature_context.json").write_text("{}")
    with pytest.raises(GateWaiting) as stopped:
        check("formulate", 0, tmp_path)
    waiting = waiting_path(tmp_path, "formulate", 0)
    waiting.parent.mkdir(parents=True)
    waiting.write_text(str(stopped.value))
    gate = ("gate", {"gate": "formulate", "round": "0", "branch": "1"})
    block = stop_block([gate], tmp_path)
    assert block and f"exit status {EXIT_WAITING}" in block and "gate 'formulate' (round 0) is waiting" in block
    assert stop_block([gate, ("fit_model", {"model": "mlp"})], tmp_path) is None  # a real failure beside it
    assert stop_block([("gate", {"gate": "engineer", "round": "0", "branch": "1"})], tmp_path) is None  # no record
    assert stop_block([], tmp_path) is None
