# Input functions and params of the paper's rules and the run's records (rules/write.smk, which includes this
# file): the branch and round a paper is written from and their files, the approvals the Writer waits for, the
# LLM call ledgers, the reviews and the revision history. Helpers shared by several stages (the data set,
# branches and rounds, the revision loop) are in rules/common.smk.
def selection_dependency(wildcards=None):
    """output/selection.json as an input of the jobs whose inputs depend on a branch's final round, when the run
    screens: the selection decides whether a branch goes on to its full round, so they are re-evaluated when
    `select` writes it."""
    return {"selection": SELECTION} if SCREENING else {}


def round_artifacts(wildcards):
    """Per round of a branch: the specification, data report, results and review it used (by path)."""
    b = int(wildcards.branch)
    rounds = range(final_round(b) + 1)
    return selection_dependency() | {
        "specs": [spec_for(wildcards_for(b, r))["spec"] for r in rounds],
        "reports": [engineered_for(wildcards_for(b, r))["report"] for r in rounds],
        "results": [f"output/branch_{b}/round_{r}/results.json" for r in rounds],
        "reviews": [review_file(b, r) for r in rounds],
    }


def run_reviews(wildcards=None):
    return [review_file(b, r) for b in BRANCHES for r in range(final_round(b) + 1)]


def ledgers(wildcards=None):
    """The LLM call ledgers of every agent job of the run (one file per job): the drafting of the candidate
    studies, every branch's rounds, and the papers written."""
    out = ["output/ledger/draft.jsonl"]
    for b in BRANCHES:
        out += branch_ledgers(b)
    # an aborted study has no paper, so it has no Writer ledger; the chosen branch aborted only if all did
    written = [b for b in BRANCHES if verdict_of(b, final_round(b)) != "ABORT"]
    if written:
        out.append("output/ledger/write/paper.jsonl")
    if config["papers"] == "all":
        out += [f"output/ledger/write/{paper_name(b)}.jsonl" for b in written]
    return out


def branch_ledgers(b):
    last = final_round(b)
    d = f"output/branch_{b}/ledger"
    formulate = [
        f"{d}/formulate/round_{r}.jsonl"
        for r in range(last + 1)
        if r == 0 or STAGES.index(rerun_from(b, r)) == 0
    ]
    per_round = [
        f"{d}/{agent}/round_{r}.jsonl"
        for r in range(last + 1)
        for agent in ("debate", "critique")
    ]
    return formulate + per_round + supplementary_ledgers(b, last)


def supplementary_ledgers(b, last):
    """The ledgers of the supplementary analyses' plans and slots, rounds 0..last (none when codegen.n is 0)."""
    n = config["codegen"]["n"]
    if not n:
        return []
    return [
        f"output/branch_{b}/ledger/supplementary/round_{r}{slot}.jsonl"
        for r in range(last + 1)
        if not screening_round(b, r)
        for slot in [""] + [f"_slot_{k}" for k in range(1, n + 1)]
    ]


def write_gates(wildcards):
    b = paper_branch(wildcards)
    r = final_round(b)
    return (
        gate_approval("critique", b, r)
        | gate_approval("write", b, r)
        | human_notes("write", b, r)
    )


def abort_review(wildcards):
    b = int(wildcards.branch)
    return review_file(b, final_round(b))


def paper_inputs(wildcards):
    b = paper_branch(wildcards)
    r = final_round(b)
    common = {"selection": "output/selection.json", "drafts": "output/branches.json"}
    if verdict_of(b, r) == "ABORT":
        return common | {
            "review": review_file(b, r),
            "abort": f"output/branch_{b}/abort_report.json",
        }
    spec = spec_for(wildcards_for(b, r))
    data = engineered_for(wildcards_for(b, r))
    d = f"output/branch_{b}/round_{r}"
    return common | {
        "spec": spec["spec"],
        "literature": spec["literature"],
        "report": data["report"],
        "sample": str(Path(data["report"]).with_name("sample.json")),
        "results": f"{d}/results.json",
        "claims": f"{d}/claims.json",
        "figures": [f"{d}/figures/{phase}" for phase in FIGURE_PHASES],
        "review": review_file(b, r),
        "template": PAPER_TEMPLATE,
    }


def provenance_inputs(wildcards):
    """What the Writer states about the data and the run (output/<paper>/provenance.json),
    and for generated rows the recovery check against the truth (output/<paper>/recovery.json).
    """
    out = {"provenance": f"output/{wildcards.paper}/provenance.json"}
    b = paper_branch(wildcards)
    if ADAPTER.kind == "synthetic" and verdict_of(b, final_round(b)) != "ABORT":
        out["recovery"] = f"output/{wildcards.paper}/recovery.json"
    return out


def recovery_inputs(wildcards):
    """The truth of the generated data and the final round's specification and results; the round's
    review too, so that the engine re-evaluates these inputs when a redone review adds a round.
    """
    b = paper_branch(wildcards)
    r = final_round(b)
    return {
        "selection": SELECTION,
        "dgp": "output/data/dgp.json",
        "spec": spec_for(wildcards_for(b, r))["spec"],
        "results": f"output/branch_{b}/round_{r}/results.json",
        "review": review_file(b, r),
    }
