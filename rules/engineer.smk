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
        train_X="output/round_{round}/data/train_X.csv",
        train_y="output/round_{round}/data/train_y.csv",
        train_groups="output/round_{round}/data/train_groups.csv",
        test_X="output/round_{round}/data/test_X.csv",
        test_y="output/round_{round}/data/test_y.csv",
        test_protected="output/round_{round}/data/test_protected.csv",
        test_groups="output/round_{round}/data/test_groups.csv",
        sample="output/round_{round}/data/sample.json",
        sample_table="output/round_{round}/tables/sample.csv",
        report=report(
            "output/round_{round}/data/data_report.json",
            caption="../report/data_report.rst",
            category="2. Engineer",
            subcategory="round {round}",
            labels={"artifact": "data report", "round": "{round}"},
        ),
    log:
        "logs/engineer/round_{round}.log",
    benchmark:
        "benchmarks/engineer/round_{round}.tsv"
    conda:
        "../envs/data.yaml"
    resources:
        **cluster_resources("engineer"),
    params:
        seed=lookup(dpath="seed", within=config),
        protocol=lookup(dpath="engineer", within=config),
    script:
        "../scripts/engineer.py"
