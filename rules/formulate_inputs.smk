# The input function of rules/formulate.smk (which includes this file); helpers shared by several stages (the
# data set, branches and rounds, the revision loop) are in rules/common.smk.


def formulate_extras(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    return previous_review_input(wildcards) | human_notes("formulate", b, r)
