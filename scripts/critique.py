"""Checkpoint critique (Critic): rubric checks in code, then (with a model) the three-lens review;
the verdict is always computed by rule from the merged issues."""

from edm_ars.jobs.agents import critique
from edm_ars.jobs.rule_io import run

run(snakemake, critique)  # noqa: F821
