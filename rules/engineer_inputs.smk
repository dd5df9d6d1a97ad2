# The input function of rules/engineer.smk (which includes this file); helpers shared by several stages (the
# data set, branches and rounds, the revision loop) are in rules/common.smk.


def engineer_extras(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    return (
        previous_review_input(wildcards)
        | gate_approval("formulate", b, producing_round(b, "formulate", r))
        | human_notes("engineer", b, r)
    )
