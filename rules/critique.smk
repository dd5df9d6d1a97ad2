# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "critique_inputs.smk"


checkpoint critique:
    input:
        unpack(spec_for),
        unpack(engineered_for),
        unpack(critique_gate),
        unpack(generated_truth),
        manifest="output/data/dataset.json",
        results="output/branch_{branch}/round_{round}/results.json",
        claims="output/branch_{branch}/round_{round}/claims.json",
        tier2="output/registry/tier2.json",
        registry=REGISTRY_FILES,
        rubric=RUBRIC,
        prompts=prompt_file("critique"),
    output:
        review=report(
            "output/branch_{branch}/round_{round}/review_report.json",
            caption="../report/review.rst",
            category="5. Critique",
            subcategory="branch {branch}, round {round}",
            labels={"artifact": "review", "branch": "{branch}", "round": "{round}"},
        ),
        ledger="output/branch_{branch}/ledger/critique/round_{round}.jsonl",
        transcripts=directory("output/branch_{branch}/prompts/critique/round_{round}"),
    log:
        "logs/branch_{branch}/critique/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/critique/round_{round}.tsv"
    conda:
        "../envs/agents.yaml"
    resources:
        llm_api=1,
    params:
        max_revisions=last_round,
        force_revise=lookup(dpath="force_revise", within=config),
        force_revise_rounds=lookup(dpath="force_revise_rounds", within=config),
        critic=critic_settings,
        llm=agent_settings("critique"),
        prompt_hash=prompt_hash("critique"),
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
        min_analytic_n=lookup(dpath="critic/abort_below_n", within=config),
        min_test_n=lookup(dpath="critic/min_test_n", within=config),
        lessons_store=lessons_store(),
        lessons_k=lookup(dpath="lessons/k", within=config),
    script:
        "../scripts/critique.py"
