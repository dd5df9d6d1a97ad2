"""Rule recovery: the analysis of generated rows against their data-generating process (the planted strong
predictors among the top features, the planted group effect in the subgroup audit): output/paper/recovery.json."""

from edm_ars.jobs.rule_io import run
from edm_ars.jobs.writer import recovery

run(snakemake, recovery)  # noqa: F821
