rule debate:
    input:
        unpack(spec_for),
        unpack(engineered_for),
        results="output/branch_{branch}/round_{round}/results.json",
        prompts=prompt_file("debate"),
    output:
        claims=report(
            "output/branch_{branch}/round_{round}/claims.json",
            caption="../report/claims.rst",
            category="4. Debate",
            subcategory="branch {branch}, round {round}",
            labels={"artifact": "claims", "branch": "{branch}", "round": "{round}"},
        ),
        ledger="output/branch_{branch}/ledger/debate/round_{round}.jsonl",
        transcripts=directory("output/branch_{branch}/prompts/debate/round_{round}"),
    log:
        "logs/branch_{branch}/debate/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/debate/round_{round}.tsv"
    conda:
        "../envs/agents.yaml"
    resources:
        llm_api=1,
    params:
        llm=agent_settings("debate"),
        prompt_hash=prompt_hash("debate"),
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
        lessons_store=lessons_store(),
        lessons_k=lookup(dpath="lessons/k", within=config),
    script:
        "../scripts/debate.py"
