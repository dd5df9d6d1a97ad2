checkpoint critique:
    input:
        unpack(spec_for),
        unpack(engineered_for),
        unpack(critique_gate),
        results="output/round_{round}/results.json",
        tier2="output/registry/tier2.json",
        registry=REGISTRY_FILES,
    output:
        review="output/round_{round}/review_report.json",
    log:
        "logs/critique/round_{round}.log",
    conda:
        "../envs/data.yaml"
    resources:
        llm_api=1,
    params:
        max_revisions=lookup(dpath="max_revisions", within=config),
        force_revise=lookup(dpath="force_revise", within=config),
        critic=lookup(dpath="critic", within=config),
        min_analytic_n=lookup(dpath="engineer/min_analytic_n", within=config),
    script:
        "../scripts/critique.py"
