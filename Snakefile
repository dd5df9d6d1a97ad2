# EDM-ARS: educational data mining research as a Snakemake workflow.
# Wiring only: helpers and input functions live in rules/common.smk.
import os

from snakemake.utils import min_version, validate

min_version("9.21.1")


# The default configuration ships with the workflow; --configfile adds to or overrides it.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


validate(config, schema="config/config.schema.yaml")


# One Apptainer image for every rule (--sdm apptainer); build it from containers/edm-ars.def.
container: "containers/edm-ars.sif"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/formulate.smk"
include: "rules/engineer.smk"
include: "rules/analyze.smk"
include: "rules/critique.smk"
include: "rules/write.smk"


rule all:
    default_target: True
    input:
        final_targets(),
