rule formulate:
    input:
        unpack(previous_review_input),
        tier2="output/registry/tier2.json",
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
        bibliography=BIBLIOGRAPHY,
    output:
        spec="output/round_{round}/research_spec.json",
        literature="output/round_{round}/literature_context.json",
    log:
        "logs/formulate/round_{round}.log",
    conda:
        "../envs/data.yaml"
    resources:
        llm_api=1,
    params:
        prompt=lookup(dpath="prompt", within=config),
        question=lookup(dpath="question", within=config),
        backend=lookup(dpath="backend", within=config),
    script:
        "../scripts/formulate.py"
