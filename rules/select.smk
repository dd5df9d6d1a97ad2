# The input functions of the rules below; helpers shared by several stages are in common.smk.
include: "select_inputs.smk"


# Breadth (edm_ars.formulate.branches): every branch is reviewed, then `select` ranks the branches by the stated rule; the
# paper output/paper.pdf is written for the chosen one. `findings` keeps the run's studies in the findings store.


checkpoint select:
    input:
        unpack(selection_inputs),
        drafts="output/branches.json",
    output:
        selection=report(
            "output/selection.json",
            caption="../report/selection.rst",
            category="5. Critique",
            subcategory="all branches",
            labels={
                "artifact": "selection of the study",
                "branch": "all",
                "round": "all",
            },
        ),
    log:
        "logs/select.log",
    benchmark:
        "benchmarks/select.tsv"
    conda:
        "../envs/agents.yaml"
    params:
        screening=screening_facts,
    script:
        "../scripts/select_branch.py"


rule findings:
    input:
        unpack(finished_inputs),
        selection="output/selection.json",
        drafts="output/branches.json",
        pdf="output/paper.pdf",
    output:
        findings="output/findings.json",
    log:
        "logs/findings.log",
    benchmark:
        "benchmarks/findings.tsv"
    conda:
        "../envs/agents.yaml"
    params:
        lessons_store=lessons_store(),
        findings_store=lookup(dpath="findings/store", within=config),
    script:
        "../scripts/findings.py"
