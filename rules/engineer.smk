# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "engineer_inputs.smk"


rule engineer:
    input:
        unpack(spec_for),
        unpack(engineer_extras),
        unpack(layout_input),
        raw=raw_data,
        manifest="output/data/dataset.json",
        tier2="output/registry/tier2.json",
        registry=REGISTRY_FILES,
    output:
        train_X="output/branch_{branch}/round_{round}/data/train_X.parquet",
        train_y="output/branch_{branch}/round_{round}/data/train_y.parquet",
        train_groups="output/branch_{branch}/round_{round}/data/train_groups.parquet",
        test_X="output/branch_{branch}/round_{round}/data/test_X.parquet",
        test_y="output/branch_{branch}/round_{round}/data/test_y.parquet",
        test_protected="output/branch_{branch}/round_{round}/data/test_protected.parquet",
        test_groups="output/branch_{branch}/round_{round}/data/test_groups.parquet",
        train_levels="output/branch_{branch}/round_{round}/data/train_levels.parquet",
        test_levels="output/branch_{branch}/round_{round}/data/test_levels.parquet",
        sample="output/branch_{branch}/round_{round}/data/sample.json",
        sample_table="output/branch_{branch}/round_{round}/tables/sample.csv",
        report=report(
            "output/branch_{branch}/round_{round}/data/data_report.json",
            caption="../report/data_report.rst",
            category="2. Engineer",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "data report",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
    log:
        "logs/branch_{branch}/engineer/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/engineer/round_{round}.tsv"
    conda:
        "../envs/data.yaml"
    resources:
        **cluster_resources("engineer"),
    params:
        seed=lookup(dpath="seed", within=config),
        protocol=lookup(dpath="engineer", within=config),
    script:
        "../scripts/engineer.py"
