rule synthesize:
    input:
        registry=REGISTRY_FILES,
        layout=LAYOUT_FILE,
    output:
        raw="output/data/raw.csv",
        dgp="output/data/dgp.json",
    log:
        "logs/synthesize.log",
    benchmark:
        "benchmarks/synthesize.tsv"
    conda:
        "../envs/data.yaml"
    params:
        seed=lookup(dpath="seed", within=config),
        n_students=lookup(dpath="synthetic/n_students", within=config),
        n_schools=lookup(dpath="synthetic/n_schools", within=config),
    script:
        "../scripts/synthesize.py"


rule dataset:
    input:
        raw=raw_data,
        registry=REGISTRY_FILES,
    output:
        manifest="output/data/dataset.json",
    log:
        "logs/dataset.log",
    conda:
        "../envs/data.yaml"
    params:
        dataset=lookup(dpath="dataset", within=config),
    script:
        "../scripts/dataset.py"


rule registry_tier2:
    input:
        raw=raw_data,
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
        layout=LAYOUT_FILE,
    output:
        tier2="output/registry/tier2.json",
    log:
        "logs/registry_tier2.log",
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/registry_tier2.py"
