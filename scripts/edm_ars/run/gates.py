"""Human-in-the-loop gates: what each gate shows, approvals and rejections, and their checks.

An approval is valid for exactly the artifacts the researcher saw (their SHA-256 is recorded), so
a regenerated artifact needs a new approval. A researcher may edit research_spec.json before
approving: the approval records the edited file and everything downstream reruns.
A rejection note is kept in its own file, which the gated stage declares as input: the stage
reruns with the note as a revision instruction."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text
from edm_ars.core.errors import EdmArsError
from edm_ars.run.command import edm_ars_line

MODES: dict[str, list[str]] = {
    "full-auto": [],
    "gate-only": ["formulate", "engineer", "write"],
    "co-pilot": ["formulate", "engineer", "critique", "write"],
    "step-by-step": ["formulate", "engineer", "analyze", "critique", "write"],
}
EDITABLE = {"formulate": "research_spec.json"}


def run_task(workdir: Path, branch: int = 1) -> str:
    """The kind of study a run's branch is (causal or prediction), from its first specification."""
    spec = Path(workdir) / "output" / f"branch_{branch}" / "round_0" / "research_spec.json"
    try:
        return "causal" if json.loads(spec.read_text()).get("task") == "causal" else "prediction"
    except (OSError, ValueError):
        return "prediction"


def subjects(gate: str, round_: int, branch: int = 1, task: str | None = None) -> list[str]:
    """The artifacts a gate asks the researcher to review (paths relative to the working directory), for one
    candidate study (branch) of the run; a causal study's frame report and results are under causal/ (the task is
    read from the run's first specification when not given)."""
    d = f"output/branch_{branch}/round_{round_}"
    if (task or run_task(Path("."), branch)) == "causal":
        table = {
            "formulate": [f"{d}/research_spec.json", f"{d}/literature_context.json"],
            "engineer": [f"{d}/causal/data_report.json"],
            "analyze": [f"{d}/causal/results.json"],
            "critique": [f"{d}/review_report.json"],
            "write": [f"{d}/causal/results.json", f"{d}/review_report.json"],
        }
    else:
        table = {
            "formulate": [f"{d}/research_spec.json", f"{d}/literature_context.json"],
            "engineer": [f"{d}/data/data_report.json"],
            "analyze": [f"{d}/results.json"],
            "critique": [f"{d}/review_report.json"],
            "write": [f"{d}/results.json", f"{d}/claims.json", f"{d}/review_report.json"],
        }
    if gate not in table:
        raise EdmArsError(f"unknown gate '{gate}' (known: {sorted(table)})")
    return table[gate]


def approval_path(workdir: Path, gate: str, round_: int, branch: int = 1) -> Path:
    return Path(workdir) / "approvals" / f"branch_{branch}" / f"round_{round_}" / f"{gate}.json"


def notes_path(workdir: Path, gate: str, round_: int, branch: int = 1) -> Path:
    return Path(workdir) / "approvals" / f"branch_{branch}" / f"round_{round_}" / f"{gate}.notes.json"


def digest(paths: list[str], workdir: Path) -> dict[str, str]:
    out = {}
    for p in paths:
        f = Path(workdir) / p
        if not f.exists():
            raise EdmArsError(f"gate subject {p} does not exist yet: nothing to review")
        out[p] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def _gate_args(gate: str, round_: int, branch: int) -> list[str]:
    return [gate, "--round", str(round_), *(["--branch", str(branch)] if branch != 1 else [])]


def continue_command(gate: str, round_: int, branch: int = 1, workdir: Path = Path(".")) -> str:
    """`edm-ars approve <gate> ... && <the run's own snakemake command>` (edm_ars.run.command)."""
    return edm_ars_line(["approve", *_gate_args(gate, round_, branch)], workdir)


def reject_command(gate: str, round_: int, branch: int = 1, workdir: Path = Path(".")) -> str:
    return edm_ars_line(["reject", *_gate_args(gate, round_, branch)], workdir, note=True)


def waiting_message(gate: str, round_: int, reason: str, branch: int = 1, workdir: Path = Path(".")) -> str:
    files = "\n".join(f"    {p}" for p in subjects(gate, round_, branch, run_task(workdir, branch)))
    edit = (f"\n  You may edit {EDITABLE[gate]} before approving; everything downstream then reruns."
            if gate in EDITABLE else "")
    where = f"round {round_}" + (f", branch {branch}" if branch != 1 else "")
    return (f"gate '{gate}' ({where}) is waiting for your review: {reason}\n"
            f"  Review:\n{files}{edit}\n"
            f"  To continue:  {continue_command(gate, round_, branch, workdir)}\n"
            f"  To send it back with an instruction:  {reject_command(gate, round_, branch, workdir)}")


class GateWaiting(EdmArsError):
    """A gate that stops the run until the researcher approves: a normal end of the run, not a failure."""


def check(gate: str, round_: int, workdir: Path, branch: int = 1) -> dict[str, Any]:
    """The approval record when the gate is approved for the current artifacts; otherwise GateWaiting, which says
    what to review and the exact command to continue."""
    current = digest(subjects(gate, round_, branch, run_task(workdir, branch)), workdir)
    path = approval_path(workdir, gate, round_, branch)
    if not path.exists():
        raise GateWaiting(waiting_message(gate, round_, "not approved yet", branch, workdir))
    record = json.loads(path.read_text())
    if record.get("decision") != "approved":
        raise GateWaiting(waiting_message(gate, round_, f"decision is {record.get('decision')}", branch, workdir))
    if record.get("subjects") != current:
        raise GateWaiting(waiting_message(gate, round_, "the artifacts changed after the approval", branch,
                                          workdir))
    return record


def waiting_path(workdir: Path, gate: str, round_: int, branch: int = 1) -> Path:
    """Where a gate job that stopped the run records that it waits (beside its log): read by the Snakefile's onerror."""
    return Path(workdir) / "logs" / f"branch_{branch}" / "gate" / f"round_{round_}" / f"{gate}.waiting.txt"


EXIT_WAITING = 3  # the exit status of a run that stopped only at gates waiting for the researcher


def failed_jobs(jobs: Any) -> list[tuple[str, dict[str, str]]]:
    """(rule name, wildcards) of the failed jobs of Snakemake's scheduler (a group job counts as no gate)."""
    return [(getattr(getattr(job, "rule", None), "name", "group"), dict(getattr(job, "wildcards_dict", None) or {}))
            for job in jobs or ()]


def stop_block(failed: list[tuple[str, dict[str, str]]], workdir: Path = Path(".")) -> str | None:
    """The block the run ends with when every failed job (rule name, wildcards) is a gate that waits for the
    researcher (its waiting file written by this run's job); None when anything else failed."""
    if not failed:
        return None
    messages = []
    for rule, wildcards in failed:
        if rule != "gate":
            return None
        path = waiting_path(workdir, wildcards.get("gate", ""), int(wildcards.get("round", 0)),
                            int(wildcards.get("branch", 1)))
        if not path.exists():
            return None
        messages.append(path.read_text().rstrip())
    bar = "=" * 78
    return "\n".join([bar, f"The run stopped at {len(messages)} human gate(s) waiting for your review "
                            f"(exit status {EXIT_WAITING}; not an error).", *messages, bar])


def approve(gate: str, round_: int, workdir: Path, note: str | None = None, branch: int = 1) -> Path:
    record = {"gate": gate, "round": round_, "branch": branch, "decision": "approved", "note": note,
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "subjects": digest(subjects(gate, round_, branch, run_task(workdir, branch)), workdir)}
    path = approval_path(workdir, gate, round_, branch)
    atomic_write_text(path, json.dumps(record, indent=2) + "\n")
    return path


def reject(gate: str, round_: int, workdir: Path, note: str, branch: int = 1) -> Path:
    """Record a rejection note for the gated stage (it reruns with it) and withdraw any approval."""
    if not note or not note.strip():
        raise EdmArsError("a rejection needs a note: it becomes the revision instruction for the stage")
    path = notes_path(workdir, gate, round_, branch)
    notes = json.loads(path.read_text()) if path.exists() else []
    notes.append({"note": note.strip(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "subjects": digest(subjects(gate, round_, branch, run_task(workdir, branch)), workdir)})
    atomic_write_text(path, json.dumps(notes, indent=2) + "\n")
    approval_path(workdir, gate, round_, branch).unlink(missing_ok=True)
    return path


def read_notes(path: str | Path | None) -> list[str]:
    if not path or not Path(path).exists():
        return []
    return [n["note"] for n in json.loads(Path(path).read_text())]


def latest_round(gate: str, workdir: Path, branch: int = 1) -> int:
    """The latest round of a branch whose artifacts for this gate exist."""
    folder = Path(workdir) / "output" / f"branch_{branch}"
    rounds = sorted(int(p.name.split("_")[1]) for p in folder.glob("round_*") if p.name.split("_")[1].isdigit())
    for r in reversed(rounds):
        if all((Path(workdir) / s).exists() for s in subjects(gate, r, branch, run_task(workdir, branch))):
            return r
    raise EdmArsError(f"nothing to review for gate '{gate}' in branch {branch} yet (no round has "
                      f"{subjects(gate, 0, branch, run_task(workdir, branch))[0].split('/', 3)[3]})")


def pending(workdir: Path) -> list[str]:
    """Gates that stopped the run: their job ran (it left a log) but no approval passed it."""
    out = []
    for log in sorted((Path(workdir) / "logs").glob("branch_*/gate/round_*/*.log")):
        b, r, gate = log.parent.parent.parent.name, log.parent.name, log.stem
        if not (Path(workdir) / "output" / b / "gates" / r / f"{gate}.approved.json").exists():
            where = r.replace("_", " ") + (f", {b.replace('_', ' ')}" if b != "branch_1" else "")
            out.append(f"{gate} ({where})")
    return out


#: why a stage only records a researcher's free-text note (edm-ars reject ... --note) instead of acting on it
NOT_ACTED_ON = {
    "formulate": "the offline backend cannot act on a free-text note; edit research_spec.json at the formulate "
                 "gate, or run with a model backend",
    "causal-formulate": "the causal specification is built by rule from the registry and cannot act on a "
                        "free-text note; edit research_spec.json at the formulate gate",
    "engineer": "the data preparation follows the configured protocol and cannot act on a free-text note; edit "
                "research_spec.json at the formulate gate, or change the engineer settings of the configuration",
    "write": "the paper is built from the artifacts by rule and cannot act on a free-text note; edit "
             "research_spec.json at the formulate gate, or send an earlier stage back",
}


def notes_not_acted_on(path: str | Path | None, why: str) -> list[dict[str, Any]]:
    """The researcher's notes of a gate (its notes file, if any) as recorded but not acted on, for the stage's
    artifact (key `researcher_notes`): note, acted_on false and why."""
    return [{"note": n, "acted_on": False, "why": NOT_ACTED_ON[why]} for n in read_notes(path)]


def unacted_notes(workdir: Path) -> list[str]:
    """One line per researcher's note a stage recorded but did not act on (its artifact's `researcher_notes`)."""
    out = Path(workdir) / "output"
    found = [*sorted(out.glob("branch_*/round_*/research_spec.json")),
             *sorted(out.glob("branch_*/round_*/data/data_report.json")),
             *sorted(out.glob("branch_*/round_*/causal/data_report.json")),
             *sorted(out.glob("*/verification.json"))]
    lines = []
    for path in found:
        try:
            notes = json.loads(path.read_text()).get("researcher_notes") or []
        except (OSError, ValueError, AttributeError):
            continue
        for n in notes:
            if isinstance(n, dict) and n.get("acted_on") is False:
                lines.append(f"note not acted on ({path.relative_to(workdir)}): \"{n.get('note')}\": {n.get('why')}")
    return lines
