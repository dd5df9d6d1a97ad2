# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "analyze_inputs.smk"


# Stacking is a model of the others, the baselines are not tuned: their own rules, never fit_model jobs.
ruleorder: fit_stacking > fit_model
ruleorder: fit_baselines > fit_model


rule fit_model:
    input:
        unpack(training_for),
        unpack(analysis_gate),
    output:
        model="output/branch_{branch}/round_{round}/models/{model}.joblib",
        meta="output/branch_{branch}/round_{round}/models/{model}.json",
        oof="output/branch_{branch}/round_{round}/models/{model}.oof.parquet",
    log:
        "logs/branch_{branch}/fit_model/round_{round}/{model}.log",
    benchmark:
        "benchmarks/branch_{branch}/fit_model/round_{round}/{model}.tsv"
    group:
        fit_group()
    conda:
        "../envs/analysis.yaml"
    threads: 1
    resources:
        **cluster_resources("fit_model"),
    params:
        seed=lookup(dpath="seed", within=config),
        cv_folds=lookup(dpath="analysis/cv_folds", within=config),
        large_data=lookup(dpath="analysis/large_data", within=config),
    script:
        "../scripts/fit_model.py"


rule fit_stacking:
    input:
        unpack(stacking_inputs),
        unpack(analysis_gate),
    output:
        model="output/branch_{branch}/round_{round}/models/stacking.joblib",
        meta="output/branch_{branch}/round_{round}/models/stacking.json",
    log:
        "logs/branch_{branch}/fit_stacking/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/fit_stacking/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        **cluster_resources("fit_stacking"),
    params:
        bases=round_bases,
        seed=lookup(dpath="seed", within=config),
        cv_folds=lookup(dpath="analysis/cv_folds", within=config),
    script:
        "../scripts/fit_stacking.py"


rule fit_baselines:
    input:
        unpack(training_for),
        unpack(analysis_gate),
        registry=REGISTRY_FILES,
    output:
        model="output/branch_{branch}/round_{round}/models/baselines.joblib",
        meta="output/branch_{branch}/round_{round}/models/baselines.json",
    log:
        "logs/branch_{branch}/fit_baselines/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/fit_baselines/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        **cluster_resources("fit_baselines"),
    params:
        core_k=lookup(dpath="analysis/baselines/core_k", within=config),
    script:
        "../scripts/fit_baselines.py"


rule evaluate:
    input:
        unpack(fitted_models),
        unpack(baseline_fits),
        unpack(engineered_for),
    output:
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        predictions="output/branch_{branch}/round_{round}/analysis/test_predictions.parquet",
        metrics_table=report(
            "output/branch_{branch}/round_{round}/tables/metrics.csv",
            caption="../report/table.rst",
            category="3. Analyze",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "table: metrics",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
        figures=report(
            directory("output/branch_{branch}/round_{round}/figures/evaluate"),
            patterns=FIGURE_PATTERNS,
            caption="../report/evaluate_figure.rst",
            category="3. Analyze",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "evaluate figure: {figure}",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
    log:
        "logs/branch_{branch}/evaluate/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/evaluate/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        **cluster_resources("evaluate"),
    params:
        seed=lookup(dpath="seed", within=config),
        n_bootstrap=lookup(dpath="analysis/n_bootstrap", within=config),
        models=round_models,
        leakage={key: config["analysis"][key] for key in ("leakage_auc", "leakage_r2")},
    script:
        "../scripts/evaluate.py"


rule explain:
    input:
        unpack(fitted_models),
        unpack(engineered_for),
        unpack(
            earlier_round(
                earlier="output/branch_{branch}/round_{prev}/analysis/explain.json",
                earlier_figures="output/branch_{branch}/round_{prev}/figures/explain",
            )
        ),
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        registry=REGISTRY_FILES,
    output:
        explain="output/branch_{branch}/round_{round}/analysis/explain.json",
        figures=report(
            directory("output/branch_{branch}/round_{round}/figures/explain"),
            patterns=FIGURE_PATTERNS,
            caption="../report/explain_figure.rst",
            category="3. Analyze",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "explain figure: {figure}",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
    log:
        "logs/branch_{branch}/explain/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/explain/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        **cluster_resources("explain"),
    params:
        seed=lookup(dpath="seed", within=config),
        shap=lookup(dpath="analysis/shap", within=config),
    script:
        "../scripts/explain.py"


rule fairness:
    input:
        unpack(spec_for),
        unpack(engineered_for),
        unpack(
            earlier_round(
                earlier="output/branch_{branch}/round_{prev}/analysis/fairness.json"
            )
        ),
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        predictions="output/branch_{branch}/round_{round}/analysis/test_predictions.parquet",
        registry=REGISTRY_FILES,
    output:
        fairness="output/branch_{branch}/round_{round}/analysis/fairness.json",
        table=report(
            "output/branch_{branch}/round_{round}/tables/fairness.csv",
            caption="../report/table.rst",
            category="3. Analyze",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "table: fairness",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
        figures=report(
            directory("output/branch_{branch}/round_{round}/figures/fairness"),
            patterns=FIGURE_PATTERNS,
            caption="../report/fairness_figure.rst",
            category="3. Analyze",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "fairness figure: {figure}",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
    log:
        "logs/branch_{branch}/fairness/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/fairness/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        **cluster_resources("fairness"),
    params:
        seed=lookup(dpath="seed", within=config),
        n_bootstrap=lookup(dpath="analysis/n_bootstrap", within=config),
        fairness=lookup(dpath="analysis/fairness", within=config),
    script:
        "../scripts/fairness.py"


# The school-level structure: for every declared cluster level, the ICC of the null random-intercept model, what the
# predictors explain of the between- and within-cluster variance, and whether cluster context improves held-out
# prediction (edm_ars.analysis.multilevel; docs/analysis.md).
rule multilevel:
    input:
        unpack(spec_for),
        unpack(engineered_for),
        unpack(levels_for),
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        registry=REGISTRY_FILES,
    output:
        multilevel="output/branch_{branch}/round_{round}/analysis/multilevel.json",
    log:
        "logs/branch_{branch}/multilevel/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/multilevel/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        **cluster_resources("multilevel"),
    params:
        seed=lookup(dpath="seed", within=config),
        n_bootstrap=lookup(dpath="analysis/n_bootstrap", within=config),
        multilevel=lookup(dpath="analysis/multilevel", within=config),
    script:
        "../scripts/multilevel.py"


# What is already known about the data: the registry's published findings (dataset.findings) tested on the training
# rows, each agrees / differs / cannot_test with its numbers (edm_ars.analysis.replication).
rule replication:
    input:
        unpack(training_rows_for),
        unpack(multilevel_for_replication),
        registry=REGISTRY_FILES,
    output:
        replication="output/branch_{branch}/round_{round}/analysis/replication.json",
    log:
        "logs/branch_{branch}/replication/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/replication/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    params:
        seed=lookup(dpath="seed", within=config),
        n_bootstrap=lookup(dpath="analysis/n_bootstrap", within=config),
    script:
        "../scripts/replication.py"


rule stability_run:
    input:
        unpack(fitted_models),
        unpack(engineered_for),
        unpack(spec_for),
        unpack(layout_input),
        unpack(
            earlier_round(
                earlier="output/branch_{branch}/round_{prev}/analysis/stability/{perturbation}.json"
            )
        ),
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        raw=raw_data,
        manifest="output/data/dataset.json",
        tier2="output/registry/tier2.json",
        registry=REGISTRY_FILES,
    output:
        run="output/branch_{branch}/round_{round}/analysis/stability/{perturbation}.json",
    log:
        "logs/branch_{branch}/stability_run/round_{round}/{perturbation}.log",
    benchmark:
        "benchmarks/branch_{branch}/stability_run/round_{round}/{perturbation}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        **cluster_resources("stability_run"),
    params:
        seed=lookup(dpath="seed", within=config),
        shap=lookup(dpath="analysis/shap", within=config),
        protocol=lookup(dpath="engineer", within=config),
    script:
        "../scripts/stability_run.py"


rule stability:
    input:
        runs=stability_runs,
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        explain="output/branch_{branch}/round_{round}/analysis/explain.json",
    output:
        stability="output/branch_{branch}/round_{round}/analysis/stability.json",
    log:
        "logs/branch_{branch}/stability/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/stability/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/stability.py"


rule split_run:
    input:
        unpack(split_fits),
        unpack(spec_for),
        unpack(layout_input),
        unpack(
            earlier_round(
                earlier="output/branch_{branch}/round_{prev}/analysis/splits/split_{split}.json"
            )
        ),
        report=lambda wildcards: engineered_for(wildcards)["report"],
        raw=raw_data,
        manifest="output/data/dataset.json",
        tier2="output/registry/tier2.json",
        registry=REGISTRY_FILES,
    output:
        run="output/branch_{branch}/round_{round}/analysis/splits/split_{split}.json",
    log:
        "logs/branch_{branch}/split_run/round_{round}/split_{split}.log",
    benchmark:
        "benchmarks/branch_{branch}/split_run/round_{round}/split_{split}.tsv"
    conda:
        "../envs/analysis.yaml"
    threads: 1
    resources:
        **cluster_resources("split_run"),
    params:
        seed=lookup(dpath="seed", within=config),
        protocol=lookup(dpath="engineer", within=config),
        models=round_bases,
    script:
        "../scripts/split_run.py"


rule splits:
    input:
        runs=split_runs,
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        report=lambda wildcards: engineered_for(wildcards)["report"],
    output:
        splits="output/branch_{branch}/round_{round}/analysis/splits.json",
    log:
        "logs/branch_{branch}/splits/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/splits/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    params:
        repeated=lookup(dpath="analysis/repeated_splits", within=config),
    script:
        "../scripts/splits.py"


rule analyze:
    input:
        unpack(split_summary),
        unpack(supplementary_records),
        unpack(stability_summary),
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        explain="output/branch_{branch}/round_{round}/analysis/explain.json",
        fairness="output/branch_{branch}/round_{round}/analysis/fairness.json",
        multilevel="output/branch_{branch}/round_{round}/analysis/multilevel.json",
        replication="output/branch_{branch}/round_{round}/analysis/replication.json",
    output:
        results=report(
            "output/branch_{branch}/round_{round}/results.json",
            caption="../report/results.rst",
            category="3. Analyze",
            subcategory="branch {branch}, round {round}",
            labels={"artifact": "results", "branch": "{branch}", "round": "{round}"},
        ),
    log:
        "logs/branch_{branch}/analyze/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/analyze/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    params:
        screening=round_screening,
    script:
        "../scripts/analyze.py"
