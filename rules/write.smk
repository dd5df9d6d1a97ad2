# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "write_inputs.smk"


rule recovery:
    input:
        unpack(recovery_inputs),
        unpack(write_gates),
    output:
        recovery="output/{paper}/recovery.json",
    log:
        "logs/recovery/{paper}.log",
    benchmark:
        "benchmarks/recovery/{paper}.tsv"
    conda:
        "../envs/writer.yaml"
    script:
        "../scripts/recovery.py"


rule write:
    input:
        unpack(paper_inputs),
        unpack(write_gates),
        unpack(provenance_inputs),
        registry=REGISTRY_FILES,
        prompts=prompt_file("write"),
        phrases=prompt_file("phrases"),
    output:
        tex="output/{paper}/paper.tex",
        bib="output/{paper}/references.bib",
        numbers="output/{paper}/numbers.tex",
        numbers_json="output/{paper}/numbers.json",
        figures=directory("output/{paper}/figures"),
        sources="output/{paper}/sources.json",
        trace="output/{paper}/trace.json",
        sources_tex="output/{paper}/sources.tex",
        outline="output/{paper}/outline.json",
        ledger="output/ledger/write/{paper}.jsonl",
        transcripts=directory("output/prompts/write/{paper}"),
        verification="output/{paper}/verification.json",
    log:
        "logs/write/{paper}.log",
    benchmark:
        "benchmarks/write/{paper}.tsv"
    conda:
        "../envs/writer.yaml"
    resources:
        llm_api=1,
    params:
        authors=lookup(dpath="paper/authors", within=config),
        branch=paper_branch,
        round=lambda wildcards: final_round(paper_branch(wildcards)),
        llm=agent_settings("write"),
        prompt_hash=prompt_hash("write"),
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
    script:
        "../scripts/write.py"


rule abort_report:
    input:
        unpack(selection_dependency),
        review=abort_review,
    output:
        report=report(
            "output/branch_{branch}/abort_report.json",
            caption="../report/abort_report.rst",
            category="6. Write",
            subcategory=final_round_name,
            labels=final_round_labels("abort report"),
        ),
    log:
        "logs/branch_{branch}/abort_report.log",
    benchmark:
        "benchmarks/branch_{branch}/abort_report.tsv"
    conda:
        "../envs/writer.yaml"
    script:
        "../scripts/abort_report.py"


rule costs:
    input:
        unpack(selection_dependency),
        ledgers=ledgers,
    output:
        calls="output/llm_calls.jsonl",
        costs=report(
            "output/costs.json",
            caption="../report/costs.rst",
            category="7. Run",
            subcategory="all rounds",
            labels={"artifact": "language-model costs", "round": "all"},
        ),
    log:
        "logs/costs.log",
    benchmark:
        "benchmarks/costs.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/costs.py"


rule lessons:
    input:
        unpack(selection_dependency),
        reviews=run_reviews,
        pdf="output/paper.pdf",
    output:
        lessons="output/lessons.json",
    log:
        "logs/lessons.log",
    benchmark:
        "benchmarks/lessons.tsv"
    conda:
        "../envs/data.yaml"
    params:
        store=lessons_store(),
    script:
        "../scripts/lessons.py"


rule revisions:
    input:
        unpack(round_artifacts),
    output:
        md=report(
            "output/branch_{branch}/revisions.md",
            caption="../report/revisions.rst",
            category="5. Critique",
            subcategory="branch {branch}, all rounds",
            labels={
                "artifact": "revision history",
                "branch": "{branch}",
                "round": "all",
            },
        ),
    log:
        "logs/branch_{branch}/revisions.log",
    benchmark:
        "benchmarks/branch_{branch}/revisions.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/revisions.py"
