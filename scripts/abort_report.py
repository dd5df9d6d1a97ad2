"""Rule abort_report: the Critic aborted the study; say why, in a file and on the terminal."""

from edm_ars.artifacts import read_json, write_json
from edm_ars.rule_io import log, run


def main(smk):
    review = read_json(smk.input.review, "review_report")
    report = {"round": review["round"], "reason": review["abort_reason"],
              "critical_issues": [i for i in review["issues"] if i["severity"] == "critical"],
              "review": smk.input.review}
    log.error("the Critic aborted the study in round %s: %s", review["round"], review["abort_reason"])
    write_json(smk.output.report, report)


run(snakemake, main)  # noqa: F821
