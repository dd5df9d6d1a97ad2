# The input function of rules/gates.smk (which includes this file): the artifacts a human gate shows the
# researcher. The approvals that the stages wait for are in rules/common.smk (gate_approval, human_notes).
from edm_ars.run.gates import subjects  # noqa: E402


def gate_subject(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    files = subjects(wildcards.gate, r, b, TASK)
    named = {f"subject_{i}": f for i, f in enumerate(files)}
    if wildcards.gate == "formulate":
        named["spec"] = files[0]
    if wildcards.gate == "write":
        # the Writer's gate comes after the Critic's (when the mode has both): one stage at a time
        named |= gate_approval("critique", b, r)
    return named
