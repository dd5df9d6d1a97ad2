"""Issue 39: the commands a gate prints are followed literally through a whole gate-only run, and every gate stops
the run (exit status 3, the waiting block last) until it is approved; a reject note the offline stage cannot act on
(the engineer's, the Writer's) is recorded as such in its artifact and in `edm-ars status`."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from workflow import LEAN, jobs_run, snakemake

WAITING = 3  # edm_ars.run.gates.EXIT_WAITING, as the README documents it
BAR = "=" * 78


def _block(result: subprocess.CompletedProcess) -> dict[str, str]:
    """The gate block a stopped run ends with: the gate it names, and its continue and reject commands."""
    assert result.returncode == WAITING, (result.returncode, result.stderr[-3000:])
    text = result.stderr.rstrip()
    assert text.endswith(BAR), text[-2000:]  # the block is the last thing the run prints
    block = text[text.rindex(BAR, 0, len(text) - len(BAR)):]
    lines = block.splitlines()
    gate = next(line.split("'")[1] for line in lines if "is waiting for your review" in line)
    commands = {"continue": "  To continue:  ", "reject": "  To send it back with an instruction:  "}
    found = {key: line[len(start):] for line in lines for key, start in commands.items() if line.startswith(start)}
    assert len(found) == 2 and block.count("is waiting for your review") == 1, block
    return {"gate": gate, **found}


def _follow(line: str, cwd) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """Run a printed `edm-ars ... && snakemake ...` line literally, its two parts one after the other, in the run's
    directory (snakemake as `python -m snakemake`, the same program)."""
    first, second = line.split(" && ")
    edm = subprocess.run(shlex.split(first), capture_output=True, text=True, cwd=cwd)
    assert edm.returncode == 0, edm.stdout + edm.stderr
    assert edm.stdout.rstrip().endswith(f"Continue with: {second}")  # approve/reject repeat the same command
    argv = shlex.split(second)
    assert argv[0] == "snakemake"
    run = subprocess.run([sys.executable, "-m", "snakemake", *argv[1:]], capture_output=True, text=True, cwd=cwd,
                         timeout=900)
    return edm, run


def test_following_the_printed_commands_of_a_gate_only_run_stops_at_every_gate(tmp_path):
    first = snakemake(tmp_path, "output/paper.pdf", config={"hitl": "gate-only"}, overrides=LEAN)
    block = _block(first)
    assert block["gate"] == "formulate" and "hitl=gate-only" in block["continue"]
    assert f"--directory {tmp_path}" in block["continue"].split(" && ")[0]
    assert str(tmp_path / "overrides.yaml") in block["continue"]  # the run's second --configfile too
    assert "formulate" in jobs_run(first) and not {"engineer", "fit_model", "write"} & set(jobs_run(first))
    # a normal stop: one line from the gate job, then the block; none of Snakemake's failure report
    assert not any(t in first.stderr for t in ("Error in rule gate", "RuleException", "Exiting because"))
    assert first.stderr.count("is waiting for your review") == 2, first.stderr[-3000:]
    assert not (tmp_path / "output" / "branch_1" / "round_0" / "data").exists()
    status = subprocess.run(["edm-ars", "status", "-d", str(tmp_path)], capture_output=True, text=True).stdout
    assert "waiting for the researcher: formulate (round 0)" in status, status
    seen = ["formulate"]

    _, run = _follow(block["continue"], tmp_path)
    block = _block(run)
    assert block["gate"] == "engineer" and "fit_model" not in jobs_run(run)
    seen.append("engineer")

    note = "Impute with the median instead"
    _, run = _follow(block["reject"].replace('"..."', shlex.quote(note)), tmp_path)
    assert "engineer" in jobs_run(run)  # the stage reran with the note
    block = _block(run)
    assert block["gate"] == "engineer"
    seen.append("engineer")
    report = json.loads((tmp_path / "output/branch_1/round_0/data/data_report.json").read_text())
    assert f"Researcher: {note}" in report["revision_notes"]
    assert [(n["note"], n["acted_on"]) for n in report["researcher_notes"]] == [(note, False)]
    status = subprocess.run(["edm-ars", "status", "-d", str(tmp_path)], capture_output=True, text=True).stdout
    assert f'note not acted on (output/branch_1/round_0/data/data_report.json): "{note}"' in status
    assert "cannot act on a free-text note" in status and "waiting for the researcher: engineer (round 0)" in status

    while block["gate"] != "write":  # a revision round would gate its re-run stages again
        _, run = _follow(block["continue"], tmp_path)
        block = _block(run)
        seen.append(block["gate"])
    assert "write" not in jobs_run(run) and not (tmp_path / "output" / "paper.pdf").exists()
    assert seen[:3] == ["formulate", "engineer", "engineer"] and seen[-1] == "write"

    # a note on the write gate: the gate stops again, and the Writer records the note it cannot act on
    wording = "Lead with the fairness results"
    _, run = _follow(block["reject"].replace('"..."', shlex.quote(wording)), tmp_path)
    block = _block(run)
    assert block["gate"] == "write" and "write" not in jobs_run(run)

    _, last = _follow(block["continue"], tmp_path)
    assert last.returncode == 0, last.stderr[-3000:]
    assert {"write", "compile_pdf"} <= set(jobs_run(last)) and (tmp_path / "output" / "paper.pdf").exists()
    verification = json.loads((tmp_path / "output/paper/verification.json").read_text())
    assert [(n["note"], n["acted_on"]) for n in verification["researcher_notes"]] == [(wording, False)]
