# Input functions and params of the paper's shared rules (rules/paper.smk): the branch a paper is written for,
# the run's configuration as the availability statement states it and the report's labels of a paper.
import re


def paper_branch(wildcards):
    """The branch a paper (wildcard `paper`) is written for: the selected one for output/paper, else its own."""
    if wildcards.paper == "paper":
        return chosen_branch()
    return int(re.fullmatch(r"branch_(\d+)/paper", wildcards.paper).group(1))


def run_config():
    """The run's configuration without any key that could hold a secret (edm_ars.run.runinfo): its hash is printed in
    the paper, so a change of any setting rewrites the availability statement."""
    from edm_ars.run.runinfo import config_snapshot

    return config_snapshot(config)


def final_round_name(wildcards):
    """The report's subcategory of a paper (or abort report): the branch and round it was written from."""
    b = (
        paper_branch(wildcards)
        if hasattr(wildcards, "paper")
        else int(wildcards.branch)
    )
    return f"branch {b}, round {final_round(b)}"


def final_round_labels(artifact):
    def labels(wildcards):
        b = (
            paper_branch(wildcards)
            if hasattr(wildcards, "paper")
            else int(wildcards.branch)
        )
        return {"artifact": artifact, "branch": str(b), "round": str(final_round(b))}

    return labels


def run_records(wildcards):
    """The run's records that the report shows beside the paper (output/costs.json, and each branch's revisions.md
    in a prediction study): inputs of the run's paper, so that `snakemake --report` works after the target
    output/paper.pdf as after the default target (docs/outputs.md, Report). Seconds of work.
    """
    if wildcards.paper != "paper":
        return {}
    records = {"costs": "output/costs.json"}
    if TASK != "causal":
        records["revisions"] = [f"output/branch_{b}/revisions.md" for b in BRANCHES]
    return records
