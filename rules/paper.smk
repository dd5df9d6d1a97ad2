# The paper's shared rules, for every kind of study: the availability facts (provenance) and the PDF build.
include: "paper_inputs.smk"


rule provenance:
    input:
        manifest="output/data/dataset.json",
        bibliography=BIBLIOGRAPHY[0],
    output:
        provenance="output/{paper}/provenance.json",
    log:
        "logs/provenance/{paper}.log",
    benchmark:
        "benchmarks/provenance/{paper}.tsv"
    conda:
        "../envs/writer.yaml"
    params:
        config=run_config(),
    script:
        "../scripts/provenance.py"


rule compile_pdf:
    input:
        unpack(run_records),
        tex="output/{paper}/paper.tex",
        bib="output/{paper}/references.bib",
        numbers="output/{paper}/numbers.tex",
        sources_tex="output/{paper}/sources.tex",
        figures="output/{paper}/figures",
        provenance="output/{paper}/provenance.json",
    output:
        pdf=report(
            "output/{paper}.pdf",
            caption="../report/paper.rst",
            category="6. Write",
            subcategory=final_round_name,
            labels=final_round_labels("paper"),
        ),
    log:
        "logs/compile_pdf/{paper}.log",
    benchmark:
        "benchmarks/compile_pdf/{paper}.tsv"
    conda:
        "../envs/writer.yaml"
    resources:
        **cluster_resources("compile_pdf"),
    params:
        max_overfull_pt=lookup(dpath="paper/max_overfull_pt", within=config),
    script:
        "../scripts/compile_pdf.py"
