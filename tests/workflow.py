"""Running the workflow from tests: snakemake in a temporary directory with the offline backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_CONFIG = ROOT / "tests" / "workflow_config.yaml"


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


def jobs_run(result: subprocess.CompletedProcess) -> list[str]:
    """Names of the rules Snakemake started, in order."""
    names = []
    for line in result.stderr.splitlines():
        line = line.strip()
        for prefix in ("rule ", "checkpoint ", "localrule ", "localcheckpoint "):
            if line.startswith(prefix) and line.endswith(":"):
                names.append(line[len(prefix):-1])
    return names
