"""The resource limits of a sandboxed run (edm_ars.codegen.sandbox): CPU, memory, wall clock, processes,
output size and open files, and the memory raised for scripts given large frames (memory_for)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

#: open files allowed
NOFILE = 256


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run."""

    cpu_s: int = 120  # all processes together (totals.py), and RLIMIT_CPU of each (SIGXCPU at cpu_s)
    memory_mb: int = 2048  # all processes together (totals.py), and RLIMIT_AS of each
    wall_s: int = 300  # the whole sandbox is killed after this
    max_procs: int = 16  # RLIMIT_NPROC (threads count), in the sandbox's own user namespace; the cgroup's
    # pids.max (plus bubblewrap's own processes) where there is one
    output_mb: int = 50  # RLIMIT_FSIZE, and the out folder's total size while written and afterwards


#: the memory limit for scripts given large frames: this much for the interpreter and its libraries, plus
#: FRAME_COPIES times the frames' size in memory (8 bytes a cell), room for a few working copies of them
BASE_MB = 1024
FRAME_COPIES = 6


def memory_for(limits: Limits, frame_cells: int) -> Limits:
    """The limits with memory_mb raised, when the frames a script is given need more, to BASE_MB + FRAME_COPIES x
    their size (8-byte cells): a plain refit on a million students' rows then fits, while small data keep the
    configured limit. The configured memory_mb is the floor, never lowered."""
    need = BASE_MB + math.ceil(FRAME_COPIES * 8 * int(frame_cells) / 2**20)
    return limits if need <= limits.memory_mb else replace(limits, memory_mb=need)
