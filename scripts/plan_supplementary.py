"""Rule plan_supplementary: the round's supplementary analyses (vetted offline, written by the model online)."""

from edm_ars.jobs.supplementary import plan_supplementary
from edm_ars.rule_io import run

run(snakemake, plan_supplementary)  # noqa: F821
