"""Cost that grows with the rows, at small sizes: the DataEngineer's CPU time and the generator's memory.

Speed is measured by benchmark scripts (bench/large_data.py prints every stage at 25k to 1M students); these tests
only guard against a step that grows faster than the rows coming back, and are built not to depend on the load of
the machine: CPU time (not wall time) of the process with one BLAS thread, the least of several repeats, and a bound
(the rows' own growth) that linear cost with its fixed part stays well under; the generator's memory is counted by tracemalloc, which
is deterministic.
"""

from __future__ import annotations

import io
import math
import time
import tracemalloc
import warnings
from pathlib import Path

import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from edm_ars.data.datasets.synthetic import generate
from edm_ars.data.engineer import needed_columns, prepare
from edm_ars.data.protocol import Protocol
from edm_ars.formulate.spec import offline_spec

ROOT = Path(__file__).resolve().parents[2]
SIZES = (10_000, 40_000)  # students; schools at the 25 students each
#: growth of the DataEngineer's CPU time from SIZES[0] to SIZES[1] rows: linear cost with a fixed part grows less
#: than the rows (4x; measured about 2x), quadratic cost up to 16x
MAX_GROWTH = 4.0
#: the generator's peak traced memory per additional student (the issue: a million students within 2 GB)
MAX_BYTES_PER_STUDENT = 1_600


@pytest.fixture(scope="module")
def study(reg, layout):
    """The default study's specification and its columns of the generated data at each size, as the DataEngineer
    reads them from the raw CSV."""
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    columns = needed_columns(spec, reg)
    raws = {}
    for n in SIZES:
        frame, _ = generate(reg, layout, n_students=n, n_schools=n // 25, seed=42)
        text = io.StringIO()
        frame[columns].to_csv(text, index=False)
        text.seek(0)
        raws[n] = pd.read_csv(text, low_memory=False)
    return spec, raws


def cpu_seconds(step, repeats: int) -> float:
    """The least CPU time of the process over `repeats` calls of step() (one BLAS thread, so that no thread
    spinning on a loaded machine is counted)."""
    best = math.inf
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            start = time.process_time()
            step()
            best = min(best, time.process_time() - start)
    return best


def growth(run, repeats: int = 3) -> tuple[float, dict[int, float]]:
    """t(40k) / t(10k) of run(n), CPU seconds."""
    t = {n: cpu_seconds(lambda n=n: run(n), repeats) for n in SIZES}
    return t[SIZES[1]] / t[SIZES[0]], t


@pytest.mark.slow
def test_data_engineer_cost_grows_linearly_with_the_rows(study, reg, layout):
    spec, raws = study
    ratio, t = growth(lambda n: prepare(raws[n], spec, reg, layout, Protocol(seed=42)))
    print(f"DataEngineer growth {ratio:.2f}; CPU s per size {t}")
    assert ratio < MAX_GROWTH, (f"the DataEngineer's cost grew {ratio:.1f}x from {SIZES[0]:,} to {SIZES[1]:,} rows "
                                f"(linear below 4, quadratic up to 16); CPU s per size {t}")


@pytest.mark.slow
def test_the_growth_measure_flags_a_quadratic_step(study, reg, layout, monkeypatch):
    """The measure above can fail: a step whose cost grows with the square of the rows (every pair of students
    compared for a shared school, a block of rows at a time) is flagged at these sizes once it costs about as much
    as the rest of the DataEngineer at 40,000 rows (half an hour at a million rows). A smaller quadratic step (minutes at a million rows) is left to
    the benchmark (bench/large_data.py), which measures at 250,000 and 1,000,000 rows."""
    import numpy as np

    import edm_ars.data.split as split

    linear = split.fingerprint_ids

    def pairwise(frame):
        ids = linear(frame)
        pairs = 0
        for _ in range(16):
            for start in range(0, len(ids), 1000):
                pairs += int(np.count_nonzero(ids[start:start + 1000, None] == ids[None, :]))
        return ids

    spec, raws = study
    monkeypatch.setattr(split, "fingerprint_ids", pairwise)
    ratio, t = growth(lambda n: prepare(raws[n], spec, reg, layout, Protocol(seed=42)), repeats=1)
    print(f"with a quadratic step: growth {ratio:.2f}; CPU s per size {t}")
    assert ratio > MAX_GROWTH, f"a quadratic step grew only {ratio:.1f}x; CPU s per size {t}"


def peak_traced_bytes(reg, layout, n: int) -> int:
    tracemalloc.start()
    try:
        frame, _ = generate(reg, layout, n_students=n, n_schools=n // 25, seed=42)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del frame
    return peak


def test_generator_memory_per_student_is_bounded(reg, layout):
    """The generator's peak memory (numpy and Python allocations, traced) grows by at most MAX_BYTES_PER_STUDENT a
    student: 1.6 GB for a million students. (Before the codes were compact and the working arrays released as the
    columns were built, it was about 3.9 kB a student traced, more with the label texts.)"""
    small, large = 5_000, 20_000
    per_student = (peak_traced_bytes(reg, layout, large) - peak_traced_bytes(reg, layout, small)) / (large - small)
    assert 0 < per_student < MAX_BYTES_PER_STUDENT, f"{per_student:.0f} bytes of peak memory per student"


# ---- the faster steps give the same results as the steps they replaced ------------------------------------------


def test_fingerprint_ids_number_groups_as_the_text_groupby_did():
    import numpy as np

    from edm_ars.data.split import fingerprint_ids

    rng = np.random.default_rng(0)
    for _ in range(50):
        n = 400
        frame = pd.DataFrame({
            "scale": rng.choice([1.0, 2.5, np.nan, 10.0, -1.0, 0.0, -0.0, 0.17], n),  # "-0.0" and "0.0" differ
            "label": pd.array(rng.choice(["x", "y", "Z", "<NA>", "ä", None, "10", "9"], n), dtype="str"),
            "code": rng.integers(0, 20, n),
            "mixed": pd.Series(rng.choice(np.array(["1", 1, 2.0, None, "b"], dtype=object), n), dtype=object),
        })
        text = frame.astype("string").fillna("<NA>")
        expected = text.groupby(list(frame.columns), sort=True, dropna=False).ngroup().to_numpy()
        assert (fingerprint_ids(frame) == expected).all()


@pytest.mark.slow
def test_stratified_group_fold0_is_scikit_learns_first_fold():
    import numpy as np
    from sklearn.model_selection import StratifiedGroupKFold

    from edm_ars.data.split import stratified_group_fold0

    rng = np.random.default_rng(1)
    for trial in range(120):
        n = int(rng.integers(60, 2000))
        groups = rng.choice(np.arange(max(6, n // 4)) * 7 + 3, n)
        y = (rng.random(n) < rng.uniform(0.05, 0.9)).astype(float) if trial % 4 else rng.integers(0, 3, n) * 1.0
        k = int(rng.integers(2, 7))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=trial)
            expected = np.sort(next(splitter.split(np.arange(n), y, groups))[1])
            assert np.array_equal(stratified_group_fold0(y, groups, k, trial), expected), trial


def test_bootstrap_counts_in_blocks_are_the_draws_of_one_call(monkeypatch):
    import numpy as np

    from edm_ars.analysis import metrics

    n, b = 300, 50
    whole = np.random.default_rng(5).multinomial(n, np.full(n, 1 / n), size=b)
    monkeypatch.setattr(metrics, "CHUNK_CELLS", 7 * n)  # blocks of 7 resamples
    counts = metrics.bootstrap_counts(n, b, 5)
    assert counts.dtype == np.uint8 and np.array_equal(counts, whole)
    y = (np.random.default_rng(1).random(n) < 0.4).astype(float)
    p = np.random.default_rng(2).random(n)
    blocked = metrics.over_resamples(metrics.binary_metrics, y, p, counts)
    direct = metrics.binary_metrics(y, p, whole.astype(float))
    for k, v in direct.items():
        np.testing.assert_allclose(blocked[k], v, rtol=1e-12, atol=0)


def test_write_csv_streams_the_text_of_to_csv(tmp_path):
    import numpy as np

    from edm_ars.core import artifacts

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=50_000).round(3), "b": pd.Categorical(rng.choice(["x", "y, z"], 50_000)),
                          "c": np.where(rng.random(50_000) < 0.1, np.nan, 1.5)})
    artifacts.write_csv(tmp_path / "f.csv", frame)
    assert (tmp_path / "f.csv").read_text() == frame.to_csv(index=False)


def test_read_raw_in_blocks_reads_what_one_whole_read_did(tmp_path):
    """read_raw parses in blocks of rows (memory); a column that is numbers in the first blocks and text later (or
    missing for long runs) comes out as from one read of the whole file."""
    import numpy as np

    from edm_ars.data.raw import read_raw

    n = 400_000
    text = np.array(["1.5"] * n, dtype=object)
    text[-5:] = "Missing"
    late = np.full(n, "", dtype=object)
    late[-3:] = "Yes"
    path = tmp_path / "raw.csv"
    pd.DataFrame({"x": text, "late": late, "k": np.arange(n) % 7, "v": np.round(np.linspace(0, 1, n), 3)}).to_csv(
        path, index=False)
    whole = pd.read_csv(path, low_memory=False)
    got = read_raw(path)
    assert (got.dtypes == whole.dtypes).all() and got.equals(whole)
    assert read_raw(path, usecols=["k", "late"]).equals(pd.read_csv(path, usecols=["k", "late"], low_memory=False))


def test_bootstrap_metrics_are_sklearns_weighted_metrics_resample_by_resample():
    """Each resample's metrics (the columns sorted once per model, integer counts summed as integers) are the
    weighted metrics sklearn computes for that resample, ties in the scores counting one half in the AUC."""
    import numpy as np
    from sklearn.metrics import (
        accuracy_score,
        balanced_accuracy_score,
        brier_score_loss,
        f1_score,
        mean_absolute_error,
        precision_score,
        r2_score,
        recall_score,
        roc_auc_score,
    )

    from edm_ars.analysis import metrics

    rng = np.random.default_rng(11)
    n = 400
    y = (rng.random(n) < 0.35).astype(float)
    p = np.round(rng.random(n), 2)  # many tied scores, some exactly at the threshold
    counts = metrics.bootstrap_counts(n, 30, 3)
    weights = {"counts": counts, "float": rng.random((30, n)) * (rng.random((30, n)) < 0.8)}
    for kind, w in weights.items():
        got = metrics.over_resamples(metrics.binary_metrics, y, p, w)
        for b in range(w.shape[0]):
            sw, pred = np.asarray(w[b], dtype=float), (p >= 0.5).astype(float)
            expected = {"auc": roc_auc_score(y, p, sample_weight=sw),
                        "accuracy": accuracy_score(y, pred, sample_weight=sw),
                        "precision": precision_score(y, pred, sample_weight=sw, zero_division=0),
                        "recall": recall_score(y, pred, sample_weight=sw),
                        "f1": f1_score(y, pred, sample_weight=sw),
                        "balanced_accuracy": balanced_accuracy_score(y, pred, sample_weight=sw),
                        "brier": brier_score_loss(y, p, sample_weight=sw)}
            for k, v in expected.items():
                assert abs(got[k][b] - v) < 1e-12, (kind, b, k, got[k][b], v)
    yr = rng.normal(50, 10, n)
    pr = yr + rng.normal(0, 5, n)
    got = metrics.over_resamples(metrics.regression_metrics, yr, pr, counts)
    for b in range(counts.shape[0]):
        sw = counts[b].astype(float)
        assert abs(got["r2"][b] - r2_score(yr, pr, sample_weight=sw)) < 1e-10
        assert abs(got["mae"][b] - mean_absolute_error(yr, pr, sample_weight=sw)) < 1e-10
        assert abs(got["rmse"][b] - np.sqrt(np.average((yr - pr) ** 2, weights=sw))) < 1e-10


def test_tier2_types_and_sentinel_labels_are_judged_on_distinct_values():
    """Tier 2's type of a variable and its sentinel labels (text values) are decided once per distinct value: the
    same answers as row by row, for text, categorical, numeric and empty columns."""
    import numpy as np
    import pandas as pd

    from edm_ars.data.tier2 import _labelled_missing, infer_type

    rng = np.random.default_rng(0)
    assert infer_type(pd.Series(rng.integers(0, 30, 500).astype(float))) == "continuous"
    assert infer_type(pd.Series(rng.choice(["1", "2", "3"], 500))) == "categorical"
    assert infer_type(pd.Series(pd.Categorical(rng.choice(["yes", "no"], 500)))) == "binary"
    assert infer_type(pd.Series(["1.5", "x", "y", None])) == "categorical"
    assert infer_type(pd.Series([np.nan] * 4)) == "empty"
    assert infer_type(pd.Series([str(v) for v in rng.normal(size=40)])) == "continuous"
    for s in (pd.Series(rng.choice(["1", " -9 ", "Missing", None], 300)),
              pd.Series(pd.Categorical(rng.choice(["a", "Missing"], 300))),
              pd.Series(rng.choice(["1", "-9"], 50), dtype="string")):
        by_row = s.astype("string").str.strip().isin(["-9", "Missing"]).fillna(False).astype(bool)
        assert (_labelled_missing(s, ["-9", "Missing"]).to_numpy() == by_row.to_numpy()).all()


def test_the_benchmark_reads_each_jobs_own_cpu_and_peak_from_its_log(tmp_path):
    """bench/large_data.py sums a stage's seconds over its jobs; CPU seconds and peak memory are the larger of the
    job's `job resources:` log line (the kernel's accounting) and Snakemake's sampled file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("large_data_bench", ROOT / "bench" / "large_data.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    head = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for rel, wall, rss, cpu in (("branch_1/split_run/round_0/split_1", 10.0, 100.0, 4.0),
                                ("branch_1/split_run/round_0/split_2", 12.0, 120.0, 5.0), ("synthesize", 3.0, 50.0, 1.0)):
        tsv = tmp_path / "benchmarks" / f"{rel}.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(head + f"{wall}\t0:00:10\t{rss}\t0\t0\t0\t0\t0\t0\t{cpu}\n")
    log = tmp_path / "logs" / "branch_1" / "split_run" / "round_0" / "split_2.log"
    log.parent.mkdir(parents=True)
    log.write_text("2026-11-26 INFO [edm_ars] split 2 ...\n2026-11-26 INFO [edm_ars] job resources: cpu_s=9.50 "
                   "peak_rss_mb=700.0\n")
    # a job whose own accounting saw less than Snakemake's samples (a sandboxed child): the larger counts
    (log.parent / "split_1.log").write_text("... INFO [edm_ars] job resources: cpu_s=1.00 peak_rss_mb=50.0\n")
    wall, cpu = bench.read_stages(tmp_path, "s"), bench.read_stages(tmp_path, "cpu_time")
    assert wall["split_run"] == {"s": 22.0, "mb": 700.0, "jobs": 2}
    assert cpu["split_run"]["s"] == 13.5 and cpu["synthesize"] == {"s": 1.0, "mb": 50.0, "jobs": 1}


def test_a_job_logs_its_cpu_seconds_and_peak_memory_last(tmp_path):
    """Every job run through edm_ars.jobs.rule_io.run ends its log with its CPU seconds and peak resident memory."""
    import re
    from types import SimpleNamespace

    from edm_ars.jobs.rule_io import run

    def main(smk):
        sum(i * i for i in range(200_000))  # some CPU
        bytearray(60 * 2**20)  # 60 MB touched

    log = tmp_path / "job.log"
    run(SimpleNamespace(log=[str(log)], rule="demo", output=SimpleNamespace(keys=lambda: [])), main)
    last = log.read_text().strip().splitlines()[-1]
    found = re.search(r"job resources: cpu_s=([0-9.]+) peak_rss_mb=([0-9.]+)$", last)
    assert found, last
    assert float(found.group(1)) > 0 and float(found.group(2)) >= 60
