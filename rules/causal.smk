# The causal study (a registry question with `task: causal`): specification, analytic frame, estimation by design,
# the Critic's causal checklist (the same checkpoint name, so the revision loop of rules/common.smk drives it) and
# the paper. Stage code: scripts/edm_ars/causal/; jobs: scripts/edm_ars/jobs/causal/.
include: "causal_inputs.smk"


rule causal_formulate:
    input:
        unpack(causal_formulate_extras),
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
        bibliography=BIBLIOGRAPHY,
        prompts=prompt_file("causal"),
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
        prompt_hash=prompt_hash("causal"),
        budget_usd=lookup(dpath="budget_usd", within=config),
        prices=lookup(dpath="llm/prices", within=config),
        cache_dir=lookup(dpath="llm/cache_dir", within=config),
        literature=lookup(dpath="literature", within=config),
    script:
        "../scripts/causal_formulate.py"


rule causal_frame:
    input:
        unpack(spec_for),
        unpack(causal_frame_extras),
        raw=raw_data,
        manifest="output/data/dataset.json",
        registry=REGISTRY_FILES,
    output:
        frame="output/branch_{branch}/round_{round}/causal/frame.parquet",
        report=report(
            "output/branch_{branch}/round_{round}/causal/data_report.json",
            caption="../report/data_report.rst",
            category="2. Engineer",
            subcategory="branch {branch}, round {round}",
            labels={
                "artifact": "data report",
                "branch": "{branch}",
                "round": "{round}",
            },
        ),
    log:
        "logs/branch_{branch}/causal_frame/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/causal_frame/round_{round}.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/causal_frame.py"


rule causal_estimate:
    input:
        unpack(spec_for),
        unpack(causal_frame_for),
        unpack(causal_estimate_extras),
    output:
        results=report(
            "output/branch_{branch}/round_{round}/causal/results.json",
            caption="../report/results.rst",
            category="3. Analyze",
            subcategory="branch {branch}, round {round}",
            labels={"artifact": "results", "branch": "{branch}", "round": "{round}"},
        ),
        figures=directory("output/branch_{branch}/round_{round}/causal/figures"),
    log:
        "logs/branch_{branch}/causal_estimate/round_{round}.log",
    benchmark:
        "benchmarks/branch_{branch}/causal_estimate/round_{round}.tsv"
    conda:
        "../envs/analysis.yaml"
    threads: 2
    params:
        seed=lookup(dpath="seed", within=config),
        settings=causal_settings(),
    script:
        "../scripts/causal_estimate.py"


checkpoint critique:
    input:
        unpack(spec_for),
        unpack(causal_frame_for),
        unpack(causal_results_for),
        unpack(causal_critique_gate),
        registry=REGISTRY_FILES,
        rubric=RUBRIC,
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
    params:
        max_revisions=lambda wildcards: int(config["max_revisions"]),
        force_revise=lookup(dpath="force_revise", within=config),
        force_revise_rounds=lookup(dpath="force_revise_rounds", within=config),
    script:
        "../scripts/causal_critique.py"


rule causal_recovery:
    input:
        unpack(causal_final),
        dgp="output/data/dgp.json",
    output:
        recovery="output/{paper}/recovery.json",
    log:
        "logs/recovery/{paper}.log",
    benchmark:
        "benchmarks/recovery/{paper}.tsv"
    conda:
        "../envs/writer.yaml"
    script:
        "../scripts/causal_recovery.py"


rule causal_write:
    input:
        unpack(causal_final),
        unpack(causal_truth),
        unpack(causal_write_gates),
        provenance="output/{paper}/provenance.json",
        registry=REGISTRY_FILES,
        template=PAPER_TEMPLATE,
        bibliography=BIBLIOGRAPHY[0],
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
        ledger="output/ledger/write/{paper}.jsonl",
        transcripts=directory("output/prompts/write/{paper}"),
        verification="output/{paper}/verification.json",
    log:
        "logs/write/{paper}.log",
    benchmark:
        "benchmarks/write/{paper}.tsv"
    conda:
        "../envs/writer.yaml"
    params:
        authors=lookup(dpath="paper/authors", within=config),
    script:
        "../scripts/causal_write.py"


rule costs:
    input:
        ledgers=causal_ledgers,
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
