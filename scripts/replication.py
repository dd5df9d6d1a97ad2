"""Rule replication (Analyst): the registry's published findings on the data set tested on the training rows
(replication.json: estimate, bootstrap interval and status agrees / differs / cannot_test of each)."""

from edm_ars.jobs.analysis.replication import replication
from edm_ars.jobs.rule_io import run

run(snakemake, replication)  # noqa: F821
