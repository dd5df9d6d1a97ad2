# Supplementary analyses written as code (edm_ars.codegen.supplementary): plan_supplementary plans a round's analyses, then
# one job per slot (codegen.n of them, known before the plan, so no checkpoint is needed) runs the analysis planned
# for it in the sandbox (edm_ars.codegen.sandbox) with up to codegen.attempts repairs; a slot the plan leaves empty records
# so. The analyze job collects the records into results.json.


rule plan_supplementary:
    input:
        unpack(spec_for),
        unpack(engineered_for),
        unpack(previous_review_input),
        evaluation="output/branch_{branch}/round_{round}/analysis/evaluation.json",
        explain="output/branch_{branch}/round_{round}/analysis/explain.json",
        prompts=prompt_file("supplementary"),
    output:
        plan="output/branch_{branch}/round_{round}/analysis/supplementary_plan.json",
        ledger="output/branch_{branch}/ledger/supplementary/round_{round}.jsonl",
        transcripts=directory(
            "output/branch_{branch}/prompts/supplementary/round_{round}"
        ),
    log:
        "logs/branch_{branch}/plan_supplementary/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/plan_supplementary/round_{round}.tsv"
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
        plan="output/branch_{branch}/round_{round}/analysis/supplementary_plan.json",
        predictions="output/branch_{branch}/round_{round}/analysis/test_predictions.parquet",
        prompts=prompt_file("supplementary"),
    output:
        record="output/branch_{branch}/round_{round}/supplementary/slot_{slot}.json",
        attempts=directory(
            "output/branch_{branch}/round_{round}/supplementary/slot_{slot}"
        ),
        ledger="output/branch_{branch}/ledger/supplementary/round_{round}_slot_{slot}.jsonl",
        transcripts=directory(
            "output/branch_{branch}/prompts/supplementary/round_{round}_slot_{slot}"
        ),
    log:
        "logs/branch_{branch}/supplementary/round_{round}/slot_{slot}.log",
    benchmark:
        "benchmarks/branch_{branch}/supplementary/round_{round}/slot_{slot}.tsv"
    wildcard_constraints:
        slot=r"\d+",
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
