"""The run's own command, repeated in every command the workflow and `edm-ars approve`/`reject` print next.

The Snakefile records the command line Snakemake was started with at `onstart` (so only when jobs are about to run,
never in a dry run) in `.snakemake/edm-ars/command.json` of the working directory: its --config values and
--configfiles (hitl included), its target and --directory. Following a printed command therefore keeps the same
study and the same gates. Options that act once (a dry run, a forced rerun, --touch, --until) are left out. Nothing
secret is in it: the API key is only in the environment."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path

from edm_ars.core.artifacts import atomic_write_text

COMMAND_FILE = Path(".snakemake") / "edm-ars" / "command.json"
DEFAULT = ["snakemake", "--cores", "8", "output/paper.pdf"]
#: options that act on one invocation only, without a value / with values up to the next option
_ONCE_FLAGS = {"-n", "--dry-run", "--dryrun", "-F", "--forceall", "-f", "--force", "-t", "--touch", "--unlock"}
_ONCE_LISTS = {"-R", "--forcerun", "-U", "--until", "-O", "--omit-from", "--allowed-rules"}


def run_command(argv: Sequence[str]) -> list[str] | None:
    """The command to repeat, from Snakemake's sys.argv (`snakemake` for the program, however it was started:
    the console script or `python -m snakemake`); None when the process is not Snakemake's command line (the
    workflow started through the Python API)."""
    if not argv:
        return None
    program = Path(argv[0])
    if not (program.name == "snakemake" or (program.name == "__main__.py" and program.parent.name == "snakemake")):
        return None
    out, skipping = ["snakemake"], False
    for arg in argv[1:]:
        if skipping and not arg.startswith("-"):
            continue
        skipping = False
        name = arg.split("=", 1)[0]
        if name in _ONCE_FLAGS:
            continue
        if name in _ONCE_LISTS:
            skipping = "=" not in arg
            continue
        out.append(arg)
    return out


def record(argv: Sequence[str], workdir: Path = Path(".")) -> Path | None:
    """Record the run's command (a list of arguments) in the working directory; None when there is none to record."""
    command = run_command(argv)
    if command is None:
        return None
    path = Path(workdir) / COMMAND_FILE
    atomic_write_text(path, json.dumps({"command": command}, indent=2) + "\n")
    return path


def recorded(workdir: Path = Path(".")) -> list[str]:
    """The run's recorded command, or `snakemake --cores 8 output/paper.pdf` when none was recorded."""
    path = Path(workdir) / COMMAND_FILE
    try:
        command = json.loads(path.read_text())["command"]
    except (OSError, ValueError, KeyError, TypeError):
        return list(DEFAULT)
    return [str(a) for a in command] if isinstance(command, list) and command else list(DEFAULT)


def directory(command: Sequence[str]) -> str | None:
    """The --directory (-d) the command was given, if any."""
    for i, arg in enumerate(command):
        if arg in ("-d", "--directory") and i + 1 < len(command):
            return command[i + 1]
        if arg.startswith("--directory="):
            return arg.split("=", 1)[1]
    return None


def snakemake_line(workdir: Path = Path(".")) -> str:
    """The run's command as one shell line."""
    return shlex.join(recorded(workdir))


def edm_ars_line(subcommand: Sequence[str], workdir: Path = Path("."), note: bool = False) -> str:
    """`edm-ars <subcommand> [--directory D] [--note "..."] && <the run's command>`: the working directory given to
    Snakemake is given to edm-ars too, so the two parts act on the same run."""
    where = directory(recorded(workdir))
    part = shlex.join(["edm-ars", *subcommand, *(["--directory", where] if where else [])])
    if note:
        part += ' --note "..."'
    return f"{part} && {snakemake_line(workdir)}"
