# Input functions and params of the analysis rules (rules/analyze.smk, which includes this file): the fits,
# prepared data and earlier results a round's jobs read (a revision round reuses by path what its data leave
# unchanged), its model families and screening facts. Helpers shared by several stages (the data set, branches
# and rounds, the revision loop) are in rules/common.smk.
from edm_ars.analysis.stability import perturbations  # noqa: E402
from edm_ars.analysis.splits import extra_splits  # noqa: E402


def round_models(wildcards):
    return models(wildcards.branch, wildcards.round)


def round_bases(wildcards):
    return base_models(wildcards.branch, wildcards.round)


def analysis_gate(wildcards):
    b = int(wildcards.branch)
    return gate_approval(
        "engineer", b, producing_round(b, "engineer", int(wildcards.round))
    )


def round_screening(wildcards):
    """A screening round's facts for its results (without which branches go on: that is the selection's)."""
    if not screening_round(wildcards.branch, wildcards.round):
        return None
    return {k: v for k, v in screening_facts().items() if k != "full"}


def training_for(wildcards):
    files = engineered_for(wildcards)
    return {k: files[k] for k in ("train_X", "train_y", "train_groups", "report")}


def model_round(b, m, r):
    """The round whose fit of family `m` serves round r of branch b. A revision round refits a family only
    when its data changed (the engineer stage re-ran in that round) or the round adds it, and stacking also
    when its base models changed; otherwise the earlier fit is reused by path, as stages are.
    """
    r = int(r)
    if not data_unchanged(b, r) or m not in models(b, r - 1):
        return r
    if m == STACKING and base_fits(b, r) != base_fits(b, r - 1):
        return r
    return model_round(b, m, r - 1)


def base_fits(b, r):
    """The base families of round r and the rounds whose fits serve them."""
    return {m: model_round(b, m, r) for m in base_models(b, r)}


def model_file(b, m, r, kind):
    """A fitted model's file (`joblib`, `json` or `oof.parquet`) as round r of branch b uses it."""
    return f"output/branch_{b}/round_{model_round(b, m, r)}/models/{m}.{kind}"


def fitted_models(wildcards):
    b, r = int(wildcards.branch), wildcards.round
    listed = models(b, r)
    return {m: model_file(b, m, r, "joblib") for m in listed} | {
        f"{m}_meta": model_file(b, m, r, "json") for m in listed
    }


def baseline_fits(wildcards):
    """The baselines round r uses: fitted in the round whose prepared data serve it (they depend on nothing else),
    so a revision round that keeps the data reuses them by path."""
    b = int(wildcards.branch)
    r = producing_round(b, "engineer", int(wildcards.round))
    return {
        "baselines": f"output/branch_{b}/round_{r}/models/baselines.joblib",
        "baselines_meta": f"output/branch_{b}/round_{r}/models/baselines.json",
    }


def stacking_inputs(wildcards):
    b, r = int(wildcards.branch), wildcards.round
    bases = base_models(b, r)
    return (
        training_for(wildcards)
        | {f"{m}_oof": model_file(b, m, r, "oof.parquet") for m in bases}
        | {f"{m}_meta": model_file(b, m, r, "json") for m in bases}
    )


def data_unchanged(b, r):
    """Whether round r > 0 uses the same prepared data as round r-1 (its engineer stage did not re-run)."""
    r = int(r)
    return r > 0 and producing_round(int(b), "engineer", r) < r


def earlier_round(**files):
    """An input function: the previous round's `files` (paths with {prev} for that round, and the job's
    wildcards), when the round's data are those of the previous round; else nothing. Jobs that take them
    keep each result computed there from the same inputs (edm_ars.core.reuse) instead of computing it again.
    """

    def inputs(wildcards):
        r = int(wildcards.round)
        if not data_unchanged(wildcards.branch, r):
            return {}
        return {
            k: v.format(prev=r - 1, **dict(wildcards.items())) for k, v in files.items()
        }

    return inputs


def stability_summary(wildcards):
    """stability.json for the analyze job (none in a screening round)."""
    if screening_round(wildcards.branch, wildcards.round):
        return {}
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return {"stability": f"{d}/analysis/stability.json"}


def stability_runs(wildcards):
    names = perturbations(config["analysis"]["stability"])
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return [f"{d}/analysis/stability/{p}.json" for p in names]


def split_runs(wildcards):
    """The repeated grouped splits of a round (split 0 is the main split: no job)."""
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return [
        f"{d}/analysis/splits/split_{k}.json"
        for k in extra_splits(config["analysis"]["repeated_splits"])
    ]


def split_fits(wildcards):
    """The tuned configurations (models/<m>.json) a split job refits: every single family of the round."""
    b, r = int(wildcards.branch), wildcards.round
    return {f"{m}_meta": model_file(b, m, r, "json") for m in base_models(b, r)}


def supplementary_records(wildcards):
    """The round's supplementary analyses for the analyze job: the plan and one record per slot (none when
    codegen.n is 0)."""
    n = config["codegen"]["n"]
    if not n or screening_round(wildcards.branch, wildcards.round):
        return {}
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return {
        "supplementary_plan": f"{d}/analysis/supplementary_plan.json",
        "supplementary": [f"{d}/supplementary/slot_{k}.json" for k in range(1, n + 1)],
    }


def split_summary(wildcards):
    """splits.json for the analyze job, when the study is repeated over more than one split."""
    if not extra_splits(config["analysis"]["repeated_splits"]) or screening_round(
        wildcards.branch, wildcards.round
    ):
        return {}
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return {"splits": f"{d}/analysis/splits.json"}


def training_rows_for(wildcards):
    """The prepared training rows (X, y, groups) and data_report.json of a round: what the replication job reads."""
    keep = ("train_X", "train_y", "train_groups", "report")
    return {k: v for k, v in engineered_for(wildcards).items() if k in keep}


def multilevel_for_replication(wildcards):
    """multilevel.json for the replication job (its between-cluster shares), when the workflow has the multilevel rule."""
    if not rules.has("multilevel"):
        return {}
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return {"multilevel": f"{d}/analysis/multilevel.json"}
