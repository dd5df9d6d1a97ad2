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


def _branch_option(branch: int) -> str:
    return f" --branch {branch}" if branch != 1 else ""


def continue_command(gate: str, round_: int, branch: int = 1) -> str:
    return f"edm-ars approve {gate} --round {round_}{_branch_option(branch)} && snakemake --cores 8 output/paper.pdf"


def waiting_message(gate: str, round_: int, reason: str, branch: int = 1) -> str:
    files = "\n".join(f"    {p}" for p in subjects(gate, round_, branch))
    edit = (f"\n  You may edit {EDITABLE[gate]} before approving; everything downstream then reruns."
            if gate in EDITABLE else "")
    where = f"round {round_}" + (f", branch {branch}" if branch != 1 else "")
    return (f"gate '{gate}' ({where}) is waiting for your review: {reason}\n"
            f"  Review:\n{files}{edit}\n"
            f"  To continue:  {continue_command(gate, round_, branch)}\n"
            f"  To send it back with an instruction:  edm-ars reject {gate} --round {round_}{_branch_option(branch)}"
            " --note \"...\" "
            "&& snakemake --cores 8 output/paper.pdf")


def check(gate: str, round_: int, workdir: Path, branch: int = 1) -> dict[str, Any]:
    """The approval record when the gate is approved for the current artifacts; otherwise an
    EdmArsError that says what to review and the exact command to continue."""
    current = digest(subjects(gate, round_, branch, run_task(workdir, branch)), workdir)
    path = approval_path(workdir, gate, round_, branch)
    if not path.exists():
        raise EdmArsError(waiting_message(gate, round_, "not approved yet", branch))
    record = json.loads(path.read_text())
    if record.get("decision") != "approved":
        raise EdmArsError(waiting_message(gate, round_, f"decision is {record.get('decision')}", branch))
    if record.get("subjects") != current:
        raise EdmArsError(waiting_message(gate, round_, "the artifacts changed after the approval", branch))
    return record


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
