"""Running the workflow from tests: snakemake in a temporary directory with the offline backend."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_CONFIG = ROOT / "tests" / "workflow_config.yaml"
#: fewer resamples, one split and no perturbations (a second config file over the small configuration): for tests
#: of the workflow's control flow (gates, aborts, floors) rather than of its analyses
LEAN = """analysis:
  n_bootstrap: 100
  repeated_splits: 1
  stability: {imputation: [], bootstrap: 0, seeds: 0}
codegen:
  n: 1
"""


def snakemake(workdir: Path, *args: str, config: dict[str, str] | None = None, overrides: str | None = None,
              cores: int = 2, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run snakemake on the repository's workflow in `workdir`; targets go before --config.

    `config` sets top-level keys; `overrides` is YAML text for nested keys, given as a second
    config file (Snakemake merges config files in order)."""
    cmd = [sys.executable, "-m", "snakemake", *args, "--snakefile", str(ROOT / "Snakefile"),
           "--directory", str(workdir), "--cores", str(cores), "--configfile", str(TEST_CONFIG)]
    if overrides:
        extra = Path(workdir) / "overrides.yaml"
        extra.write_text(overrides)
        cmd.append(str(extra.resolve()))
    if config:
        cmd += ["--config", *[f"{k}={v}" for k, v in config.items()]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir)


# a job's start: Snakemake's `rule X:` header (EDM_ARS_CONSOLE=full, a dry run) or the short console's one line
# `[12:00:01] localrule X: branch=1, round=0` (edm_ars.run.console)
_JOB_START = re.compile(r"^(?:\[\d\d:\d\d:\d\d\] )?(?:local)?(?:rule|checkpoint) (\w+):(?: .*)?$")


def jobs_run(result: subprocess.CompletedProcess) -> list[str]:
    """Names of the rules Snakemake started, in order."""
    return [m.group(1) for line in result.stderr.splitlines() if (m := _JOB_START.match(line.strip()))]
