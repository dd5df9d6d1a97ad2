"""Rule fairness (Analyst, fairness phase): subgroup audit of the selected model on the test students.

Groups come from test_protected.parquet (original labels snapshotted before encoding), never from
one-hot columns. For continuous outcomes errors are expressed in outcome standard deviations, so
the gap threshold means the same on any scale."""

from edm_ars.jobs.analysis.fairness import fairness
from edm_ars.jobs.rule_io import run

run(snakemake, fairness)  # noqa: F821
