"""Checkpoint critique (Critic): rubric checks in code and the computed verdict."""

from edm_ars.artifacts import read_json, write_json
from edm_ars.critic import review
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    report = review(read_json(smk.input.spec, "research_spec"), read_json(smk.input.report, "data_report"),
                    read_json(smk.input.results, "results"), reg, round_=int(smk.wildcards.round),
                    max_revisions=smk.params.max_revisions, force_revise=smk.params.force_revise or None,
                    min_models=smk.params.critic["min_models"], min_analytic_n=smk.params.min_analytic_n)
    log.info("round %s verdict %s (score %.2f, %d issues); rerun from %s", report["round"], report["verdict"],
             report["overall_score"], len(report["issues"]), report["rerun_from"])
    for issue in report["issues"]:
        log.info("  [%s] %s -> %s", issue["severity"], issue["description"], issue["target_stage"])
    write_json(smk.output.review, report, "review_report")


run(snakemake, main)  # noqa: F821
