# Input functions of the causal study's rules (rules/causal.smk, which includes this file): the round's analytic
# frame, the final round's artifacts for the paper, and the truth of generated data. Helpers shared with the
# prediction study (the data set, rounds and the revision loop) are in rules/common.smk.


def causal_frame_for(wildcards):
    """The analytic frame and its data report of the round that last re-ran the engineer stage."""
    b = int(wildcards.branch)
    r = producing_round(b, "engineer", int(wildcards.round))
    d = f"output/branch_{b}/round_{r}/causal"
    return {"frame": f"{d}/frame.parquet", "report": f"{d}/data_report.json"}


def causal_results_for(wildcards):
    """The estimation of the round that last re-ran the analyze stage."""
    b = int(wildcards.branch)
    r = producing_round(b, "analyze", int(wildcards.round))
    d = f"output/branch_{b}/round_{r}/causal"
    return {"results": f"{d}/results.json", "figures": f"{d}/figures"}


def causal_final(wildcards):
    """The final round's specification, literature, frame report, results, figures and review (one branch)."""
    b = paper_branch(wildcards)
    w = wildcards_for(b, final_round(b))
    return (
        spec_for(w)
        | {"report": causal_frame_for(w)["report"]}
        | causal_results_for(w)
        | {"review": review_file(b, final_round(b))}
    )


def causal_truth(wildcards):
    """For generated rows: the planted effect (the recovery check the paper reports)."""
    if ADAPTER.kind != "synthetic":
        return {}
    return {"recovery": f"output/{wildcards.paper}/recovery.json"}


def causal_settings():
    """The estimation settings (config `causal`), each named: a change of one reruns the estimation."""
    c = config["causal"]
    return {
        "alpha": c["alpha"],
        "trimming_threshold": c["trimming_threshold"],
        "n_folds": c["n_folds"],
        "n_rep": c["n_rep"],
        "sensitivity": {
            "cf_y": c["sensitivity"]["cf_y"],
            "cf_d": c["sensitivity"]["cf_d"],
            "rho": c["sensitivity"]["rho"],
        },
        "min_group_n": c["min_group_n"],
    }


def causal_formulate_extras(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    return previous_review_input(wildcards) | human_notes("formulate", b, r)


def causal_frame_extras(wildcards):
    """The approved specification (when the mode gates it) and the researcher's notes on the frame."""
    b, r = int(wildcards.branch), int(wildcards.round)
    return (
        previous_review_input(wildcards)
        | gate_approval("formulate", b, producing_round(b, "formulate", r))
        | human_notes("engineer", b, r)
    )


def causal_estimate_extras(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    return previous_review_input(wildcards) | gate_approval(
        "engineer", b, producing_round(b, "engineer", r)
    )


def causal_critique_gate(wildcards):
    return gate_approval("analyze", int(wildcards.branch), int(wildcards.round))


def causal_write_gates(wildcards):
    b = paper_branch(wildcards)
    r = final_round(b)
    return (
        gate_approval("critique", b, r)
        | gate_approval("write", b, r)
        | human_notes("write", b, r)
    )


def causal_ledgers(wildcards=None):
    """The LLM call ledgers of the causal study's agent jobs: the specification of each round that re-ran it, the
    review of every round, and the paper (none when the Critic aborted)."""
    b = 1
    last = final_round(b)
    d = f"output/branch_{b}/ledger"
    out = [
        f"{d}/formulate/round_{r}.jsonl"
        for r in range(last + 1)
        if r == 0 or STAGES.index(rerun_from(b, r)) == 0
    ]
    out += [f"{d}/critique/round_{r}.jsonl" for r in range(last + 1)]
    if verdict_of(b, last) != "ABORT":
        out.append("output/ledger/write/paper.jsonl")
    return out
