"""Rule synthesize: the embedded hsls09_synthetic data set and its data-generating process."""

from edm_ars.artifacts import write_csv, write_json
from edm_ars.datasets.synthetic import generate
from edm_ars.layout import load_layout
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    reg = registry_of(smk)
    layout = load_layout(smk.input.layout)
    frame, dgp = generate(reg, layout, n_students=smk.params.n_students, n_schools=smk.params.n_schools,
                          seed=smk.params.seed)
    log.info("generated %d students x %d columns", *frame.shape)
    write_csv(smk.output.raw, frame)
    write_json(smk.output.dgp, dgp, "dgp")


run(snakemake, main)  # noqa: F821
