"""What a killed run leaves in a workflow directory: Snakemake's lock and the outputs it marked incomplete.

A run killed by SIGKILL (a time limit, `scancel`, a lost node, `kill -9`) cannot release Snakemake's lock, so the
next run stops with a LockException until `snakemake --unlock`; the outputs of the jobs that were in flight are
marked incomplete and remade by the next run (`rerun-incomplete` in profiles/default). `edm-ars status` reads
both from here, and tells a stale lock (no live Snakemake process works in the directory) from a running one.

While Snakemake runs, the outputs of its jobs in progress are marked incomplete too (a job's markers go when it
finishes): with a live Snakemake those are running jobs, named by their rule and wildcards from the run's log
(.snakemake/log/, the newest file); only without one are they outputs of jobs that were stopped.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

#: the command that resumes a run when none is known: the README's
RESUME = "snakemake --cores 8 output/paper.pdf"


@dataclass(frozen=True)
class Job:
    """A job a Snakemake log shows started: its rule, wildcards (`k=v, ...`, "" for none) and outputs."""
    jobid: str
    rule: str
    wildcards: str
    outputs: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.rule} ({self.wildcards})" if self.wildcards else self.rule


@dataclass(frozen=True)
class RunState:
    locked: bool  # Snakemake's lock files are present
    live: list[int] | None  # pids of Snakemake processes working in the directory; None where that cannot be told
    incomplete: list[str]  # outputs marked incomplete, relative to the directory
    log: str | None = None  # the newest Snakemake log, relative to the directory (the running one's while it runs)
    jobs: list[Job] = field(default_factory=list)  # with a live Snakemake: its jobs in progress, from its log

    @property
    def running(self) -> bool:
        return self.locked and bool(self.live)

    @property
    def orphans(self) -> list[str]:
        """The incomplete outputs that are no running job's (all of them when no job could be named)."""
        mine = {o for job in self.jobs for o in job.outputs}
        return [o for o in self.incomplete if o not in mine]

    @property
    def stale_lock(self) -> bool:
        return self.locked and self.live == []


def _locks(directory: Path) -> bool:
    folder = directory / ".snakemake" / "locks"
    return folder.is_dir() and any(folder.glob("*.lock"))


def _incomplete(directory: Path) -> list[str]:
    """Snakemake's incomplete markers: one file per output, named by the output's path in URL-safe base64."""
    folder = directory / ".snakemake" / "incomplete"
    if not folder.is_dir():
        return []
    found = []
    for marker in folder.rglob("*"):
        if not marker.is_file() or marker.name == "migration_underway":
            continue
        # a name longer than the file system allows is split into folders, each part but the last led by "@"
        name = "".join(part.removeprefix("@") for part in marker.relative_to(folder).parts)
        try:
            found.append(base64.urlsafe_b64decode(name).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
    return sorted(found)


def _newest_log(directory: Path) -> Path | None:
    logs = [p for p in (directory / ".snakemake" / "log").glob("*.snakemake.log") if p.is_file()]
    return max(logs, key=lambda p: (p.stat().st_mtime, p.name)) if logs else None


_START = re.compile(r"^(?:local)?(?:rule|checkpoint) (?P<rule>\S+):$")
_FIELD = re.compile(r"^\s+(?P<key>jobid|output|wildcards): (?P<value>.*)$")
_FINISHED = re.compile(r"^Finished (?:jobid:|job) (?P<jobid>\d+)\b")


def started_jobs(log: str) -> list[Job]:
    """The jobs a Snakemake log shows started and not ended (no `Finished jobid: N` and no `Error in rule`
    block with its jobid), in the order they started. A log written with `--quiet progress` has no finish lines:
    read it with the incomplete markers (run_state keeps the jobs whose outputs are still marked)."""
    started: dict[str, Job] = {}
    ended: set[str] = set()
    block: dict[str, str] | None = None
    kind = None

    def close() -> None:
        if block is None or "jobid" not in block:
            return
        if kind == "error":
            ended.add(block["jobid"])
        else:
            outputs = tuple(o.strip() for o in block.get("output", "").split(", ") if o.strip())
            started[block["jobid"]] = Job(block["jobid"], block["rule"], block.get("wildcards", ""), outputs)

    for line in log.splitlines():
        line = line.rstrip()
        field_ = _FIELD.match(line) if block is not None else None
        if field_:
            block.setdefault(field_.group("key"), field_.group("value").strip())
            continue
        if line.startswith((" ", "\t")) and block is not None:
            continue
        close()
        block, kind = None, None
        if m := _START.match(line):
            block, kind = {"rule": m.group("rule")}, "start"
        elif line.startswith("Error in rule ") and line.endswith(":"):
            block, kind = {"rule": line[len("Error in rule "):-1]}, "error"
        elif m := _FINISHED.match(line):
            ended.add(m.group("jobid"))
    close()
    return [job for jobid, job in started.items() if jobid not in ended]


def _works_in(argv: list[str], cwd: Path | None, directory: Path) -> bool:
    """Whether a command line is a Snakemake run on `directory` (its --directory/-d, else its working folder)."""
    if not any("snakemake" in Path(a).name or a == "snakemake" for a in argv[:3]):
        return False
    for i, arg in enumerate(argv):
        value = None
        if arg in ("--directory", "-d") and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--directory="):
            value = arg.split("=", 1)[1]
        if value is not None:
            base = cwd if cwd is not None else Path.cwd()
            return (base / value).resolve() == directory
    return cwd is not None and cwd.resolve() == directory


def _live_snakemake(directory: Path) -> list[int] | None:
    """Pids of the processes running Snakemake on `directory` (Linux /proc); None where /proc is not there."""
    proc = Path("/proc")
    if not (proc / "self" / "cmdline").exists():
        return None
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:  # gone meanwhile, or another user's process
            continue
        if _works_in([a for a in argv if a], cwd, directory):
            pids.append(int(entry.name))
    return sorted(pids)


def run_state(directory: str | Path) -> RunState:
    """The lock, the live Snakemake processes, the incomplete outputs and, while Snakemake runs, its jobs in
    progress: those its log shows started and not ended whose outputs are still marked incomplete."""
    directory = Path(directory).resolve()
    locked = _locks(directory)
    live = _live_snakemake(directory) if locked else []
    incomplete = _incomplete(directory)
    log = _newest_log(directory)
    jobs: list[Job] = []
    if locked and live and log is not None:
        try:
            text = log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        marked = set(incomplete)
        jobs = [job for job in started_jobs(text) if marked.intersection(job.outputs)]
    return RunState(locked=locked, live=live, incomplete=incomplete,
                    log=str(log.relative_to(directory)) if log is not None else None, jobs=jobs)


def _some(items: list[str], k: int = 3) -> str:
    return ", ".join(items[:k]) + (f" and {len(items) - k} more" if len(items) > k else "")


def describe(state: RunState, directory: str | Path, resume: str = RESUME) -> list[str]:
    """The lines `edm-ars status` prints about a lock, a running Snakemake and incomplete outputs (none for a
    clean directory). With a live Snakemake its jobs in progress are running, and nothing is suggested that
    would start a second run; only without one are incomplete outputs those of jobs that were stopped, with
    `resume` (the run's command) to finish them."""
    where = Path(directory).resolve()
    here = where == Path.cwd().resolve()
    unlock = "snakemake --unlock" + ("" if here else f" --directory {shlex.quote(str(where))}")
    lines = []
    if state.running:
        log = state.log and (state.log if here else str(where / state.log))
        follow = (f"follow it with `tail -f {shlex.quote(log)}`" if log else "follow it in its console") + \
            " or wait for it to end; starting another run here now would stop at its lock"
        lines.append(f"running: Snakemake (pid {', '.join(map(str, state.live or []))}) is working in {where}; "
                     + follow)
        lines += [f"running job: {job.name}, writing {_some(list(job.outputs), 2)}" for job in state.jobs]
        if state.orphans and state.jobs:
            lines.append(f"incomplete: {len(state.orphans)} output(s) left by an earlier run that was stopped "
                         f"({_some(state.orphans)}); the running Snakemake remakes those its targets need")
        elif state.orphans:  # no job named in the log (quiet, or not written yet): the marked outputs
            lines.append(f"running jobs' outputs: {len(state.orphans)} marked in progress ({_some(state.orphans)})")
        return lines
    if state.stale_lock:
        lines.append(f"stale lock: {where / '.snakemake' / 'locks'} is left from a run that was killed (no Snakemake "
                     f"process is working here); clear it with `{unlock}`, then run your command again")
    elif state.locked:
        lines.append(f"locked: {where / '.snakemake' / 'locks'} holds a lock; if no Snakemake is running on this "
                     f"directory, clear it with `{unlock}`")
    if state.incomplete and state.locked and state.live is None:  # whether Snakemake runs cannot be told here
        lines.append(f"incomplete: {len(state.incomplete)} output(s) marked incomplete ({_some(state.incomplete)}): "
                     "a running Snakemake's jobs in progress, or else jobs that were stopped, which the next run "
                     "remakes")
    elif state.incomplete:
        lines.append(f"incomplete: {len(state.incomplete)} output(s) of jobs that were stopped "
                     f"({_some(state.incomplete)}); resume with `{resume}`"
                     + (" after the unlock" if state.stale_lock else "")
                     + ": it remakes them and what depends on them, nothing else")
    return lines
