# Input functions of the selection and the findings store (rules/select.smk, which includes this file): the
# files of each branch's final round, or of its screening round for the selection of a screening run.


def selection_inputs(wildcards=None):
    """What the selection ranks: each branch's final review, specification, results and claims (with screening,
    its screening round's)."""
    finals = {b: 0 if SCREENING else final_round(b) for b in BRANCHES}
    return round_files(finals)


def finished_inputs(wildcards=None):
    """Each branch's study as it finished (its final round's files), for the findings store."""
    return round_files({b: final_round(b) for b in BRANCHES})


def round_files(finals):
    return {
        "reviews": [review_file(b, r) for b, r in finals.items()],
        "specs": [spec_for(wildcards_for(b, r))["spec"] for b, r in finals.items()],
        "results": [
            f"output/branch_{b}/round_{r}/results.json" for b, r in finals.items()
        ],
        "claims": [
            f"output/branch_{b}/round_{r}/claims.json" for b, r in finals.items()
        ],
    }
