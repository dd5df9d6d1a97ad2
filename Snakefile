# EDM-ARS: educational data mining research as a Snakemake workflow.
# Wiring only: shared helpers are in rules/common.smk, each stage's input functions in rules/<stage>_inputs.smk.
import os
import sys

from snakemake.settings.types import DeploymentMethod
from snakemake.utils import min_version, validate

min_version("9.21.1")


# The default configuration ships with the workflow; --configfile adds to or overrides it.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


sys.path.insert(0, os.path.join(workflow.basedir, "scripts"))
# A short console: a line per job start and per job done, warnings, errors and the jobs' result lines; the
# details are in the logs (edm_ars.run.console; EDM_ARS_CONSOLE=full for Snakemake's own).
from edm_ars.run.console import dry_run, shorten

shorten(dryrun=workflow.dryrun or dry_run(sys.argv))


# An unknown key (a typo such as datset=star) stops the run with one line naming it, where it came from and
# the closest known key, before the schema's other checks and before any job (edm_ars.run.configcheck).
from edm_ars.run.configcheck import unknown_setting

_unknown = unknown_setting(
    config,
    os.path.join(workflow.basedir, "config", "config.schema.yaml"),
    workflow,
    default_file=os.path.join(workflow.basedir, "config", "config.yaml"),
)
if _unknown:
    sys.exit(_unknown)


validate(config, schema="config/config.schema.yaml")


# A model-backed run checks its models against the installed anthropic SDK before any job: a deprecated one gets
# a warning line (end of life, key, replacement), one the SDK does not know stops the run with one line
# (edm_ars.llm.models). When jobs are about to run (not in a dry run), the service is asked about each model
# (GET /v1/models/{id}, nothing billed): a 404 not_found or a refused key stops the run, again with one line.
if config["backend"] == "anthropic":
    from edm_ars.llm.models import preflight, service_check

    _preflight = preflight(config)
    for _line in _preflight.warnings:
        print(_line, file=sys.stderr)
    if _preflight.error:
        sys.exit(_preflight.error)


# When jobs are about to run (never in a dry run), in Snakemake's own process: the run's command line (its --config
# values, --configfiles, target and --directory) is recorded in .snakemake/edm-ars/command.json, and every command
# the gates and `edm-ars approve`/`reject` print next repeats it (edm_ars.run.command); not a rule parameter, so a
# changed command line reruns nothing. A model-backed run then asks the service about its models.
onstart:
    from edm_ars.run.command import record as _record_command

    _record_command(sys.argv)
    if config["backend"] == "anthropic":
        _service = service_check(config)
        for _line in _service.warnings:
            print(_line, file=sys.stderr)
        if _service.error:
            sys.exit(_service.error)


# The key is read from the environment by the client; declared only when it is needed, because a
# declared variable that is unset fails even a dry-run.
if config["backend"] == "anthropic" and not config.get("api_key_env"):

    envvars:
        "ANTHROPIC_API_KEY",


# `snakemake --report output/report.html`: this description, then the outputs marked with report() in the rules,
# by stage (category) and round (subcategory); captions are in report/.
report: "report/workflow.rst"


# One Apptainer image for every rule (--sdm apptainer); build it from containers/edm-ars.def. Addressed from
# the workflow's folder, so a run elsewhere (--directory) finds it.
container: os.path.join(workflow.basedir, "containers", "edm-ars.sif")


include: "rules/common.smk"
include: "rules/cluster.smk"
include: "rules/data.smk"
include: "rules/paper.smk"


# A prediction question runs the prediction study's stages; a causal one (TASK, rules/common.smk) the causal
# study's (rules/causal.smk), which share the data, the revision loop, the gates and the PDF build.
if TASK == "causal":

    include: "rules/causal.smk"

else:

    include: "rules/formulate.smk"
    include: "rules/engineer.smk"
    include: "rules/analyze.smk"
    include: "rules/supplementary.smk"
    include: "rules/debate.smk"
    include: "rules/critique.smk"
    include: "rules/select.smk"
    include: "rules/write.smk"


include: "rules/gates.smk"


# Compute nodes often have no internet: agent rules stay on the submitting host. Jobs of seconds and little memory
# (profiles/slurm/resources.yaml) stay there too under a cluster executor: a submission costs more than they do.
if TASK == "causal":
    if config["local_agents"]:

        localrules:
            causal_formulate,
            critique,
            causal_write,
            costs,
            gate,

    localrules:
        synthesize,
        export_dataset,
        dataset,
        registry_tier2,
        provenance,
        causal_frame,
        causal_recovery,

else:
    if config["local_agents"]:

        localrules:
            draft_studies,
            formulate,
            plan_supplementary,
            supplementary,
            debate,
            critique,
            write,
            costs,
            gate,
            lessons,

    localrules:
        synthesize,
        export_dataset,
        dataset,
        registry_tier2,
        stability,
        splits,
        analyze,
        provenance,
        recovery,
        revisions,
        abort_report,
        select,
        findings,


# The LaTeX build needs TeX Live, which compute nodes often lack: it stays on the submitting host unless the
# rules run in the image (--sdm apptainer), which carries TeX Live.
if DeploymentMethod.APPTAINER not in workflow.deployment_settings.deployment_method:

    localrules:
        compile_pdf,


rule all:
    default_target: True
    input:
        final_targets,
