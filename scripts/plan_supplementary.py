"""Checkpoint plan_supplementary: the round's supplementary analyses (vetted offline, written by the model online)."""

from edm_ars.jobs.supplementary import plan
from edm_ars.rule_io import run

run(snakemake, plan)  # noqa: F821
