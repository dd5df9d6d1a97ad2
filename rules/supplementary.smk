# Supplementary analyses written as code (edm_ars.supplementary): a checkpoint plans a round's analyses, then one
# job per analysis runs its script in the sandbox (edm_ars.sandbox) with up to codegen.attempts repairs. The
# analyze job collects their records into results.json.


checkpoint plan_supplementary:
    input:
        unpack(spec_for),
        unpack(engineered_for),
        unpack(previous_review_input),
        evaluation="output/round_{round}/analysis/evaluation.json",
        explain="output/round_{round}/analysis/explain.json",
        prompts=prompt_file("supplementary"),
    output:
        plan="output/round_{round}/analysis/supplementary_plan.json",
        ledger="output/ledger/supplementary/round_{round}.jsonl",
        transcripts=directory("output/prompts/supplementary/round_{round}"),
    log:
        "logs/plan_supplementary/round_{round}.log",
    conda:
        "../envs/supplementary.yaml"
    resources:
        llm_api=1,
    params:
        seed=lookup(dpath="seed", within=config),
        codegen=lookup(dpath="codegen", within=config),
        llm=agent_settings("supplementary"),
        prompt_hash=prompt_hash("supplementary"),
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
    script:
        "../scripts/plan_supplementary.py"


rule supplementary:
    input:
        unpack(engineered_for),
        plan="output/round_{round}/analysis/supplementary_plan.json",
        predictions="output/round_{round}/analysis/test_predictions.csv",
        prompts=prompt_file("supplementary"),
    output:
        record="output/round_{round}/supplementary/{analysis}.json",
        attempts=directory("output/round_{round}/supplementary/{analysis}"),
        ledger="output/ledger/supplementary/round_{round}_{analysis}.jsonl",
        transcripts=directory("output/prompts/supplementary/round_{round}_{analysis}"),
    log:
        "logs/supplementary/round_{round}/{analysis}.log",
    benchmark:
        "benchmarks/supplementary/round_{round}/{analysis}.tsv"
    wildcard_constraints:
        analysis="[a-z][a-z0-9_]{1,39}",
    conda:
        "../envs/supplementary.yaml"
    resources:
        llm_api=1,
    params:
        codegen=lookup(dpath="codegen", within=config),
        llm=agent_settings("supplementary"),
        prompt_hash=prompt_hash("supplementary"),
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
    script:
        "../scripts/supplementary.py"
