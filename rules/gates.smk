# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "gates_inputs.smk"


# A run that stopped only at gates waiting for the researcher ends with one block per gate (what to review, the
# exact commands) and exit status 3 (edm_ars.run.gates.stop_block); any other failure keeps Snakemake's exit 1.
onerror:
    from edm_ars.run.gates import EXIT_WAITING, failed_jobs, stop_block

    _block = stop_block(failed_jobs(getattr(workflow.scheduler, "failed", None)))
    if _block:
        print(_block, file=sys.stderr)
        sys.exit(EXIT_WAITING)


rule gate:
    input:
        unpack(gate_subject),
        tier2="output/registry/tier2.json",
        registry=REGISTRY_FILES,
    output:
        approved="output/branch_{branch}/gates/round_{round}/{gate}.approved.json",
    log:
        "logs/branch_{branch}/gate/round_{round}/{gate}.log",
    benchmark:
        "benchmarks/branch_{branch}/gate/round_{round}/{gate}.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/gate.py"
