rule synthesize:
    input:
        unpack(layout_input),
        registry=REGISTRY_FILES,
    output:
        raw="output/data/raw.parquet",
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


rule export_dataset:
    input:
        index=DATASET_INDEX,
    output:
        raw="output/data/raw.parquet",
    log:
        "logs/export_dataset.log",
    benchmark:
        "benchmarks/export_dataset.tsv"
    conda:
        "../envs/data.yaml"
    params:
        source=ADAPTER.source,
    script:
        "../scripts/export_dataset.py"


# Only the adapter's own rule writes the raw file of a generated data set.
if ADAPTER.kind != "synthetic":

    ruleorder: export_dataset > synthesize

else:

    ruleorder: synthesize > export_dataset


rule dataset:
    input:
        raw=raw_data,
        registry=REGISTRY_FILES,
    output:
        manifest="output/data/dataset.json",
    log:
        "logs/dataset.log",
    benchmark:
        "benchmarks/dataset.tsv"
    conda:
        "../envs/data.yaml"
    params:
        dataset=lookup(dpath="dataset", within=config),
        min_rows=lookup(dpath="engineer/min_analytic_n", within=config),
        abort_below_n=lookup(dpath="critic/abort_below_n", within=config),
        source=ADAPTER.provenance_source,
    script:
        "../scripts/dataset.py"


rule registry_tier2:
    input:
        unpack(layout_input),
        raw=raw_data,
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
    output:
        tier2="output/registry/tier2.json",
    log:
        "logs/registry_tier2.log",
    benchmark:
        "benchmarks/registry_tier2.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/registry_tier2.py"
