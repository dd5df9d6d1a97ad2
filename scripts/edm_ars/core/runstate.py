"""What a killed run leaves in a workflow directory: Snakemake's lock and the outputs it marked incomplete.

A run killed by SIGKILL (a time limit, `scancel`, a lost node, `kill -9`) cannot release Snakemake's lock, so the
next run stops with a LockException until `snakemake --unlock`; the outputs of the jobs that were in flight are
marked incomplete and remade by the next run (`rerun-incomplete` in profiles/default). `edm-ars status` reads
both from here, and tells a stale lock (no live Snakemake process works in the directory) from a running one.
"""

from __future__ import annotations

import base64
import binascii
import os
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunState:
    locked: bool  # Snakemake's lock files are present
    live: list[int] | None  # pids of Snakemake processes working in the directory; None where that cannot be told
    incomplete: list[str]  # outputs marked incomplete, relative to the directory

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
    for marker in folder.iterdir():
        try:
            found.append(base64.urlsafe_b64decode(marker.name).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
    return sorted(found)


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
    directory = Path(directory).resolve()
    locked = _locks(directory)
    return RunState(locked=locked, live=_live_snakemake(directory) if locked else [],
                    incomplete=_incomplete(directory))


def describe(state: RunState, directory: str | Path) -> list[str]:
    """The lines `edm-ars status` prints about a lock and incomplete outputs (none for a clean directory)."""
    where = Path(directory).resolve()
    unlock = "snakemake --unlock" + ("" if where == Path.cwd().resolve() else f" --directory {shlex.quote(str(where))}")
    lines = []
    if state.stale_lock:
        lines.append(f"stale lock: {where / '.snakemake' / 'locks'} is left from a run that was killed (no Snakemake "
                     f"process is working here); clear it with `{unlock}`, then run your command again")
    elif state.locked and state.live:
        lines.append(f"running: Snakemake (pid {', '.join(map(str, state.live))}) is working in {where}")
    elif state.locked:
        lines.append(f"locked: {where / '.snakemake' / 'locks'} holds a lock; if no Snakemake is running on this "
                     f"directory, clear it with `{unlock}`")
    if state.incomplete:
        shown = ", ".join(state.incomplete[:3]) + (f" and {len(state.incomplete) - 3} more"
                                                   if len(state.incomplete) > 3 else "")
        lines.append(f"incomplete: {len(state.incomplete)} output(s) of jobs that were stopped ({shown}); the next "
                     "run remakes them and what depends on them, nothing else")
    return lines
