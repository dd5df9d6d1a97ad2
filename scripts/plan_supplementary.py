"""Rule plan_supplementary: the round's supplementary analyses (vetted offline, written by the model online)."""

from edm_ars.jobs.rule_io import run
from edm_ars.jobs.supplementary import plan_supplementary

run(snakemake, plan_supplementary)  # noqa: F821
