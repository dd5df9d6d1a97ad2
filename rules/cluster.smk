# Cluster requests: what a job asks of a scheduler (SLURM), from measured use. Used by the rules whose
# jobs run on compute nodes (`resources: **cluster_resources("<rule>")`); local rules ask nothing.
# Ignored by a local run (`--cores`), which schedules by threads and the llm_api throttle only.
import edm_ars.run.cluster as _cluster  # noqa: E402
import yaml as _yaml  # noqa: E402

# The table bench/slurm_resources.py writes from a run's benchmarks/ (keyed by rule name).
CLUSTER_TABLE_FILE = BASE / "profiles" / "slurm" / "resources.yaml"
CLUSTER_TABLE = _yaml.safe_load(CLUSTER_TABLE_FILE.read_text()) or {}
# Account and partition: config keys slurm_account and slurm_partition (empty: not passed).
SLURM_SETTINGS = _cluster.slurm_settings(config)


def data_rows():
    """The data set's rows, for scaling a job's request: output/data/dataset.json once the rule dataset
    has run; before that the configured size of the generated data, or the lines of the user's data file (a
    package export: None, the largest measurement).
    """
    manifest = Path("output/data/dataset.json")
    try:
        return int(json.loads(manifest.read_text())["n_rows"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if ADAPTER.kind == "synthetic":
        return int(config["synthetic"]["n_students"])
    if not ADAPTER.generated:
        return _cluster.file_rows(ADAPTER.raw_path(config))
    return None


def fit_group():
    """The cluster group of the model-family fits: every family of a round in one SLURM job with the baselines and
    the stacking (`fit_{round}`, the profile's group of those two), unless the data set has more rows than
    analysis.large_data.rows; then none, and each family runs as a job of its own with its own request.
    """
    return _cluster.fit_group(data_rows(), config["analysis"]["large_data"]["rows"])


def cluster_resources(rule):
    """The `resources:` of a cluster rule: memory (MB) and run time (minutes) from the measured table,
    scaled by the data set's rows when the job is scheduled, doubled, tripled... on a retry (--retries);
    the SLURM account and partition when configured."""

    def mem_mb(wildcards, attempt):
        return _cluster.request(CLUSTER_TABLE, rule, data_rows())["mem_mb"] * attempt

    def runtime(wildcards, attempt):
        return _cluster.request(CLUSTER_TABLE, rule, data_rows())["runtime"] * attempt

    return dict(mem_mb=mem_mb, runtime=runtime, **SLURM_SETTINGS)
