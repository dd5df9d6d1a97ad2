"""Rule stability: spread of the metric and agreement of the top features across perturbations."""

from edm_ars.jobs.analysis.robustness import stability
from edm_ars.jobs.rule_io import run

run(snakemake, stability)  # noqa: F821
