rule formulate:
    input:
        unpack(formulate_extras),
        tier2="output/registry/tier2.json",
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
        bibliography=BIBLIOGRAPHY,
        prompts=prompt_file("formulate"),
    output:
        spec=report(
            "output/round_{round}/research_spec.json",
            caption="../report/spec.rst",
            category="1. Formulate",
            subcategory="round {round}",
            labels={"artifact": "research specification", "round": "{round}"},
        ),
        literature="output/round_{round}/literature_context.json",
        ledger="output/ledger/formulate/round_{round}.jsonl",
        transcripts=directory("output/prompts/formulate/round_{round}"),
    log:
        "logs/formulate/round_{round}.log",
    conda:
        "../envs/agents.yaml"
    resources:
        llm_api=1,
    params:
        prompt=lookup(dpath="prompt", within=config),
        question=lookup(dpath="question", within=config),
        llm=agent_settings("formulate"),
        prompt_hash=prompt_hash("formulate"),
        candidates=lookup(dpath="candidates", within=config),
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
        literature=lookup(dpath="literature", within=config),
        lessons_store=lessons_store(),
        lessons_k=lookup(dpath="lessons/k", within=config),
    script:
        "../scripts/formulate.py"
