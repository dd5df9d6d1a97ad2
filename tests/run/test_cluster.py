"""The SLURM profile's requests: memory and run time from measured use, account and partition from the
configuration, small jobs and the LaTeX build on the submitting host, the container image from the workflow's
folder."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from workflow import ROOT, TEST_CONFIG, snakemake

from edm_ars.run import cluster

sys.path.insert(0, str(ROOT / "bench"))
import slurm_resources  # noqa: E402

TABLE = {"rules": {
    "one": {"measured": [{"rows": 1000, "mem_mb": 800.0, "s": 120.0, "jobs": 1}]},
    "two": {"measured": [{"rows": 10000, "mem_mb": 1000.0, "s": 600.0, "jobs": 2},
                         {"rows": 1000, "mem_mb": 200.0, "s": 60.0, "jobs": 2}]},
    "flat": {"measured": [{"rows": 1000, "mem_mb": 900.0, "s": 30.0}, {"rows": 2000, "mem_mb": 700.0, "s": 20.0}]},
}}


def test_one_size_scales_linearly_with_margin():
    # 800 MB and 120 s at 1000 rows; at 3000 rows 2400 MB and 360 s, times 1.5 and 2
    assert cluster.request(TABLE, "one", 3000) == {"mem_mb": 3600, "runtime": 12}
    assert cluster.request(TABLE, "one", 1000) == {"mem_mb": 1200, "runtime": cluster.RUNTIME_FLOOR_MIN}


def test_floors():
    # 80 MB, 12 s at 100 rows: the floors (1000 MB, 10 minutes) apply
    assert cluster.request(TABLE, "one", 100) == {"mem_mb": cluster.MEM_FLOOR_MB, "runtime": cluster.RUNTIME_FLOOR_MIN}


def test_two_sizes_fixed_part_plus_per_row():
    # the line through (1000, 200 MB) and (10000, 1000 MB): 200 + 800/9000 per row; at 100000 rows 9000 MB
    req = cluster.request(TABLE, "two", 100_000)
    assert req["mem_mb"] == pytest.approx(9000 * 1.5, abs=2)
    # 60 + 540/9000 per row -> 6000 s at 100000 rows, x2 -> 200 minutes
    assert req["runtime"] == 200
    # in between: on the line (600 MB at 5500 rows)
    assert cluster.measured_at(cluster._points(TABLE, "two"), "mem_mb", 5500) == pytest.approx(600)


def test_two_sizes_never_below_what_was_measured():
    # the larger size used less (noise): the slope is 0 and the request never goes under 900 MB x 1.5
    assert cluster.request(TABLE, "flat", 50_000)["mem_mb"] == 1350
    # under the smallest size: that size's use scaled down from the origin (900 MB x 0.5), not the line's 900
    assert cluster.measured_at(cluster._points(TABLE, "flat"), "mem_mb", 500) == pytest.approx(900)
    assert cluster.measured_at(cluster._points(TABLE, "two"), "mem_mb", 500) == pytest.approx(155.6, abs=0.1)


def test_unknown_rows_and_unknown_rule():
    # rows unknown (no dataset.json, a data set that is not generated): the largest measurement, unscaled
    assert cluster.request(TABLE, "two", None) == {"mem_mb": 1500, "runtime": 20}
    # a rule never measured: the profile's former fixed request
    assert cluster.request(TABLE, "missing", 5000) == cluster.FALLBACK
    assert cluster.request({}, "one", 5000) == cluster.FALLBACK


def test_slurm_settings_only_when_set():
    assert cluster.slurm_settings({"slurm_account": "", "slurm_partition": ""}) == {}
    assert cluster.slurm_settings({}) == {}
    assert cluster.slurm_settings({"slurm_account": " proj1 ", "slurm_partition": 7}) == {
        "slurm_account": "proj1", "slurm_partition": "7"}


def test_table_from_benchmarks_in_both_layouts(tmp_path):
    """The table is keyed by rule name; benchmark files are found with and without a branch folder."""
    def run(name, rows, files):
        d = tmp_path / name
        (d / "output" / "data").mkdir(parents=True)
        (d / "output" / "data" / "dataset.json").write_text(json.dumps({"n_rows": rows}))
        for rel, (s, rss) in files.items():
            f = d / "benchmarks" / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(f"s\th:m:s\tmax_rss\tmax_vms\n{s}\t0:00:01\t{rss}\t1\n")
        return d

    a = run("a", 3000, {"fit_model/round_0/xgboost.tsv": (20, 180), "fit_model/round_0/logistic.tsv": (5, 150),
                        "compile_pdf.tsv": (3, 100), "not_a_rule/x.tsv": (1, 1), "synthesize.tsv": (3, 100)})
    b = run("b", 20000, {"fit_model/branch_1/round_0/xgboost.tsv": (90, 400),
                         "branch_2/fit_model/round_1/logistic.tsv": (30, 300)})
    out = tmp_path / "resources.yaml"
    assert slurm_resources.main([str(a), str(b), "--out", str(out)]) == 0
    table = yaml.safe_load(out.read_text())
    # synthesize runs on the submitting host: it asks nothing of the cluster, so the table has no entry for it
    assert set(table["rules"]) == {"fit_model", "compile_pdf"}
    assert table["rules"]["fit_model"]["measured"] == [
        {"rows": 3000, "mem_mb": 180.0, "s": 20.0, "jobs": 2},
        {"rows": 20000, "mem_mb": 400.0, "s": 90.0, "jobs": 2},
    ]
    # --merge: a large run of the fits only adds its size, keeping the other sizes and rules
    c = run("c", 250000, {"branch_1/fit_model/round_0/xgboost.tsv": (400, 900)})
    a2 = run("a2", 3000, {"fit_model/round_0/xgboost.tsv": (25, 190)})
    assert slurm_resources.main([str(c), str(a2), "--out", str(out), "--merge"]) == 0
    merged = yaml.safe_load(out.read_text())
    assert set(merged["rules"]) == {"fit_model", "compile_pdf"}
    assert merged["rules"]["compile_pdf"] == table["rules"]["compile_pdf"]
    assert merged["rules"]["fit_model"]["measured"] == [
        {"rows": 3000, "mem_mb": 190.0, "s": 25.0, "jobs": 1},
        {"rows": 20000, "mem_mb": 400.0, "s": 90.0, "jobs": 2},
        {"rows": 250000, "mem_mb": 900.0, "s": 400.0, "jobs": 1},
    ]


def test_a_jobs_logged_peak_counts_when_snakemake_sampled_less(tmp_path):
    """A job's own peak (its log's `job resources:` line, children included) is used when it is larger than the
    peak Snakemake's sampling caught."""
    d = tmp_path / "run"
    (d / "output" / "data").mkdir(parents=True)
    (d / "output" / "data" / "dataset.json").write_text(json.dumps({"n_rows": 1000}))
    for rel, rss in (("split_run/round_0/split_1", 250), ("split_run/round_0/split_2", 240)):
        f = d / "benchmarks" / "branch_1" / f"{rel}.tsv"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"s\th:m:s\tmax_rss\tmax_vms\n7\t0:00:07\t{rss}\t1\n")
    log = d / "logs" / "branch_1" / "split_run" / "round_0" / "split_1.log"
    log.parent.mkdir(parents=True)
    log.write_text("... INFO [edm_ars] job resources: cpu_s=6.10 peak_rss_mb=1900.5\n")
    out = tmp_path / "resources.yaml"
    assert slurm_resources.main([str(d), "--out", str(out)]) == 0
    measured = yaml.safe_load(out.read_text())["rules"]["split_run"]["measured"]
    assert measured == [{"rows": 1000, "mem_mb": 1900.5, "s": 7.0, "jobs": 2}]


def test_committed_table_covers_every_cluster_rule():
    """Every rule that asks for cluster resources has a measurement in the committed table."""
    table = yaml.safe_load((ROOT / "profiles" / "slurm" / "resources.yaml").read_text())
    asked = set()
    for smk in (ROOT / "rules").glob("*.smk"):
        asked.update(re.findall(r'cluster_resources\("(\w+)"\)', smk.read_text()))
    assert asked, "no rule asks for cluster resources"
    missing = {r for r in asked if not table["rules"].get(r, {}).get("measured")}
    assert not missing, f"no measurement in profiles/slurm/resources.yaml for {sorted(missing)}"
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    # a fixed request in the profile would override the measured ones
    assert "set-resources" not in profile and "default-resources" not in profile


LOAD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, DeploymentMethod, DeploymentSettings, OutputSettings,
                                          ResourceSettings)
    root, workdir, methods = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(configfiles=[root / "tests" / "workflow_config.yaml"]),
                          deployment_settings=DeploymentSettings(
                              deployment_method={DeploymentMethod.parse_choice(m) for m in methods}),
                          snakefile=root / "Snakefile", workdir=workdir)
        w = wf._workflow
        print(json.dumps({"container": w.modifier.global_container_img,
                          "rule_containers": sorted({r.container_img for r in w.rules if r.container_img}),
                          "local": sorted(w._localrules)}))
""")


def load(workdir: Path, *methods: str) -> dict:
    done = subprocess.run([sys.executable, "-c", LOAD, str(ROOT), str(workdir), *methods],
                          capture_output=True, text=True, timeout=120, cwd=workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_container_image_from_the_workflow_folder_and_latex_local_without_apptainer(tmp_path):
    plain = load(tmp_path)
    image = str(ROOT / "containers" / "edm-ars.sif")
    assert plain["container"] == image and plain["rule_containers"] == [image]
    assert {"compile_pdf", "synthesize", "dataset", "registry_tier2", "stability", "splits", "analyze",
            "provenance", "recovery", "revisions", "abort_report"} <= set(plain["local"])
    # the image carries TeX Live: under --sdm apptainer the LaTeX build may go to a compute node
    assert "compile_pdf" not in load(tmp_path, "apptainer")["local"]
    assert {"compile_pdf", "provenance"} <= set(load(tmp_path, "conda")["local"])


def job_resources(stderr: str, rule: str) -> dict[str, str]:
    block = re.search(rf"^\s*(?:local)?rule {rule}:\n(.*?)\n\n", stderr, re.S | re.M)
    assert block, stderr[-3000:]
    line = re.search(r"resources: (.*)", block.group(1)).group(1)
    return dict(kv.split("=", 1) for kv in line.split(", "))


@pytest.mark.workflow
def test_account_partition_and_scaled_requests_reach_a_job(tmp_path):
    """A dry run before any data exist: the engineer job asks for its measurement scaled to the configured
    students, and carries the account and partition; without them set, neither is passed."""
    done = snakemake(tmp_path, "-n", "output/branch_1/round_0/data/data_report.json",
                     config={"slurm_account": "proj1", "slurm_partition": "short"})
    assert done.returncode == 0, done.stderr[-3000:]
    res = job_resources(done.stdout + done.stderr, "engineer")
    table = yaml.safe_load((ROOT / "profiles" / "slurm" / "resources.yaml").read_text())
    rows = yaml.safe_load(TEST_CONFIG.read_text())["synthetic"]["n_students"]
    expected = cluster.request(table, "engineer", rows)
    assert res["slurm_account"] == "proj1" and res["slurm_partition"] == "short"
    assert int(res["mem_mb"]) == expected["mem_mb"] and int(res["runtime"]) == expected["runtime"]
    # a bigger generated data set asks for more (or the floor)
    big = snakemake(tmp_path, "-n", "output/branch_1/round_0/data/data_report.json",
                    overrides="synthetic: {n_students: 2000000, n_schools: 5000}\n")
    assert big.returncode == 0, big.stderr[-3000:]
    res_big = job_resources(big.stdout + big.stderr, "engineer")
    assert "slurm_account" not in res_big and "slurm_partition" not in res_big
    assert int(res_big["mem_mb"]) == cluster.request(table, "engineer", 2000000)["mem_mb"] > expected["mem_mb"]


def test_the_fits_of_a_large_study_leave_the_group():
    assert cluster.fit_group(200_000, 200_000) == cluster.FIT_GROUP == "fit_{round}"
    assert cluster.fit_group(None, 200_000) == cluster.FIT_GROUP  # size unknown: as before
    assert cluster.fit_group(200_001, 200_000) is None
    # the profile leaves fit_model to the rule (a group there would override the rule's choice)
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    groups = dict(g.split("=", 1) for g in profile["groups"])
    assert "fit_model" not in groups and groups["fit_stacking"] == groups["fit_baselines"] == cluster.FIT_GROUP
    assert f"{cluster.FIT_GROUP}=1000" in profile["group-components"]


def test_rows_of_a_data_file_before_its_manifest_exists(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1,2\n3,4\n5,6")  # no final line break
    assert cluster.file_rows(str(path)) == 3
    path.write_text("a,b\n1,2\n3,4\n")
    assert cluster.file_rows(str(path)) == 2
    assert cluster.file_rows(str(tmp_path / "missing.csv")) is None


def dry_run_groups(tmp_path, overrides: str) -> tuple[dict[str, list[str]], str]:
    """A dry run of the fits with the SLURM profile's groups (without the plugin): {group id: its rules} and the
    output."""
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    tmp_path.mkdir()
    done = snakemake(tmp_path, "-n", "output/branch_1/round_0/models/stacking.json",
                     "--groups", *profile["groups"], "--group-components", *profile["group-components"],
                     overrides=overrides)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    groups: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=\[[^\]]+\] )", out):
        head = re.match(r"\[[^\]]+\] Group job (\S+)", block)
        if head:
            groups[head.group(1)] = re.findall(r"^\s+rule (\w+):", block, re.M)
    return groups, out


@pytest.mark.workflow
def test_under_the_profile_a_large_study_fits_each_family_as_its_own_job(tmp_path):
    """The test configuration (3,000 generated students; logistic, XGBoost, stacking): with the default threshold
    its fits form one group job; with the threshold under its rows each family is a job of its own, asking for the
    fit_model request at its rows, and only the stacking stays in the group."""
    small, _ = dry_run_groups(tmp_path / "small", "")
    assert sorted(small["fit_0"]) == ["fit_model", "fit_model", "fit_stacking"]
    large, out = dry_run_groups(tmp_path / "large", "analysis:\n  large_data:\n    rows: 2000\n")
    assert large["fit_0"] == ["fit_stacking"]
    alone = re.findall(r"^rule fit_model:\n(.*?)\n\n", out, re.S | re.M)
    assert len(alone) == 2
    table = yaml.safe_load((ROOT / "profiles" / "slurm" / "resources.yaml").read_text())
    expected = cluster.request(table, "fit_model", 3000)
    for block in alone:
        res = dict(kv.split("=", 1) for kv in re.search(r"resources: (.*)", block).group(1).split(", "))
        assert int(res["mem_mb"]) == expected["mem_mb"] and int(res["runtime"]) == expected["runtime"]
