"""Rule revisions: output/revisions.md from every round's artifacts."""

from pathlib import Path

from edm_ars.artifacts import atomic_write_text, read_json
from edm_ars.revisions import render
from edm_ars.rule_io import log, run


def main(smk):
    rounds, cache = [], {}

    def load(path, kind):
        if path not in cache:
            cache[path] = read_json(path, kind)
        return cache[path]

    for r, (spec, report, results, review) in enumerate(zip(smk.input.specs, smk.input.reports, smk.input.results,
                                                              smk.input.reviews, strict=True)):
        reran = [s for s, p in (("formulate", spec), ("engineer", report)) if Path(p).parts[1] == f"round_{r}"]
        rounds.append({"round": r, "spec": load(spec, "research_spec"), "report": load(report, "data_report"),
                       "results": load(results, "results"), "review": load(review, "review_report"),
                       "reran": reran + ["analyze", "critique"]})
    text = render(rounds)
    log.info("%d rounds", len(rounds))
    atomic_write_text(smk.output.md, text)


run(snakemake, main)  # noqa: F821
