# EDM-ARS: educational data mining research as a Snakemake workflow.
# Wiring only: helpers and input functions live in rules/common.smk.
import os
import sys

from snakemake.utils import min_version, validate

min_version("9.21.1")


# The default configuration ships with the workflow; --configfile adds to or overrides it.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


# An unknown key (a typo such as datset=star) stops the run with one line naming it, where it came from and
# the closest known key, before the schema's other checks and before any job (edm_ars.configcheck).
sys.path.insert(0, os.path.join(workflow.basedir, "scripts"))
from edm_ars.configcheck import unknown_setting

_unknown = unknown_setting(
    config,
    os.path.join(workflow.basedir, "config", "config.schema.yaml"),
    workflow,
    default_file=os.path.join(workflow.basedir, "config", "config.yaml"),
)
if _unknown:
    sys.exit(_unknown)


validate(config, schema="config/config.schema.yaml")


# The key is read from the environment by the client; declared only when it is needed, because a
# declared variable that is unset fails even a dry-run.
if config["backend"] == "anthropic" and not config.get("api_key_env"):

    envvars:
        "ANTHROPIC_API_KEY",


# `snakemake --report output/report.html`: this description, then the outputs marked with report() in the rules,
# by stage (category) and round (subcategory); captions are in report/.
report: "report/workflow.rst"


# One Apptainer image for every rule (--sdm apptainer); build it from containers/edm-ars.def.
container: "containers/edm-ars.sif"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/formulate.smk"
include: "rules/engineer.smk"
include: "rules/analyze.smk"
include: "rules/supplementary.smk"
include: "rules/debate.smk"
include: "rules/critique.smk"
include: "rules/write.smk"
include: "rules/gates.smk"


# Compute nodes often have no internet: agent rules stay on the submitting host.
if config["local_agents"]:

    localrules:
        formulate,
        plan_supplementary,
        supplementary,
        debate,
        critique,
        write,
        costs,
        gate,
        lessons,


rule all:
    default_target: True
    input:
        final_targets(),
