# Input functions and params of the Critic's checkpoint (rules/critique.smk, which includes this file): the last
# round it may ask for, its settings at screening, the approval it waits for and the truth of generated data.
# Helpers shared by several stages (the data set, branches and rounds, the revision loop) are in rules/common.smk.


def last_round(wildcards):
    """The last round the Critic may ask for (its `max_revisions`): the configured revisions after round 0, or
    after round 1 (the full analysis) when the run screens."""
    r = int(wildcards.round)
    return int(config["max_revisions"]) + (1 if SCREENING and r >= 1 else 0)


def critic_settings(wildcards):
    """The Critic's settings for a round; at screening, the fewest individual models it accepts is the number of
    screening families (the full round is held to the configured minimum)."""
    settings = dict(config["critic"])
    if screening_round(wildcards.branch, wildcards.round):
        singles = base_models(wildcards.branch, wildcards.round)
        settings["min_models"] = min(int(config["critic"]["min_models"]), len(singles))
    return settings


def critique_gate(wildcards):
    return gate_approval("analyze", int(wildcards.branch), int(wildcards.round))


def generated_truth(wildcards=None):
    """The data-generating process, for the Critic's provenance check, when the workflow generates the rows."""
    return {"dgp": "output/data/dgp.json"} if ADAPTER.kind == "synthetic" else {}
