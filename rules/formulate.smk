# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "formulate_inputs.smk"


rule draft_studies:
    input:
        tier2="output/registry/tier2.json",
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
        prompts=prompt_file("draft"),
    output:
        drafts=report(
            "output/branches.json",
            caption="../report/branches.rst",
            category="1. Formulate",
            subcategory="all branches",
            labels={"artifact": "candidate studies", "branch": "all", "round": "0"},
        ),
        ledger="output/ledger/draft.jsonl",
        transcripts=directory("output/prompts/draft"),
    log:
        "logs/draft_studies.log",
    benchmark:
        "benchmarks/draft_studies.tsv"
    conda:
        "../envs/agents.yaml"
    resources:
        llm_api=1,
    params:
        branches=lookup(dpath="branches", within=config),
        prompt=lookup(dpath="prompt", within=config),
        question=lookup(dpath="question", within=config),
        llm=agent_settings("formulate"),
        prompt_hash=prompt_hash("draft"),
        round=0,
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
        lessons_store=lessons_store(),
        findings_store=lookup(dpath="findings/store", within=config),
    script:
        "../scripts/draft_studies.py"


rule formulate:
    input:
        unpack(formulate_extras),
        drafts="output/branches.json",
        tier2="output/registry/tier2.json",
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
        bibliography=BIBLIOGRAPHY,
        prompts=prompt_file("formulate"),
    output:
        spec=report(
            "output/branch_{branch}/round_{round}/research_spec.json",
            caption="../report/spec.rst",
            category="1. Formulate",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "research specification",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
        literature="output/branch_{branch}/round_{round}/literature_context.json",
        ledger="output/branch_{branch}/ledger/formulate/round_{round}.jsonl",
        transcripts=directory("output/branch_{branch}/prompts/formulate/round_{round}"),
    log:
        "logs/branch_{branch}/formulate/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/formulate/round_{round}.tsv"
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
