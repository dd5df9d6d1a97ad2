"""Rule provenance: what the rows are, the data set's citation, the workflow's commit, the configuration's
hash and the package versions (output/paper/provenance.json), for the paper's availability statement."""

from edm_ars.jobs.rule_io import run
from edm_ars.jobs.writer import provenance

run(snakemake, provenance)  # noqa: F821
