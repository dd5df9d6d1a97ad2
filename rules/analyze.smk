rule fit_model:
    input:
        unpack(training_for),
    output:
        model="output/round_{round}/models/{model}.joblib",
        meta="output/round_{round}/models/{model}.json",
    log:
        "logs/fit_model/round_{round}/{model}.log",
    benchmark:
        "benchmarks/fit_model/round_{round}/{model}.tsv"
    conda:
        "../envs/analysis.yaml"
    threads: 1
    params:
        seed=lookup(dpath="seed", within=config),
        cv_folds=lookup(dpath="analysis/cv_folds", within=config),
    script:
        "../scripts/fit_model.py"


rule analyze:
    input:
        unpack(fitted_models),
        unpack(engineered_for),
    output:
        results="output/round_{round}/results.json",
        figures=directory("output/round_{round}/figures"),
        tables=directory("output/round_{round}/tables"),
    log:
        "logs/analyze/round_{round}.log",
    benchmark:
        "benchmarks/analyze/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    params:
        seed=lookup(dpath="seed", within=config),
        n_bootstrap=lookup(dpath="analysis/n_bootstrap", within=config),
        models=lookup(dpath="analysis/models", within=config),
    script:
        "../scripts/analyze.py"
