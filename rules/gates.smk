# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "gates_inputs.smk"


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
