"""Benchmark: what the sandbox costs per analysis.

The same small analysis script (pandas reads a 23,503 x 60 Parquet file, as the analyses read their inputs;
scikit-learn fits a logistic regression, result.json is written) runs K times directly (`python -I -B
analysis.py` in a folder laid out like /sandbox, with the sandbox's environment, so both use one BLAS thread)
and K times through run_sandboxed (scan, staging, bubblewrap, uid drop, limits, exec filter, the output check),
alternating, each with a fresh output folder. Then the same for a script that only writes result.json: the fixed
cost of the sandbox, without the noise of a 2.5 s analysis on a shared machine. Seconds are wall seconds of the
whole call.

    python bench/sandbox.py [--runs 5] [--rows 23503] [--cols 60] [--mode bwrap|none]

The last line is `direct=<median s> sandboxed=<median s> ratio=<sandboxed/direct> overhead=<difference s>`
for the analysis script.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from edm_ars.codegen.bwrap import _child_env, sandbox_available  # noqa: E402
from edm_ars.codegen.limits import Limits  # noqa: E402
from edm_ars.codegen.sandbox import run_sandboxed  # noqa: E402
from edm_ars.core.frames import write_frame  # noqa: E402

EMPTY = """\
from pathlib import Path

Path("out/result.json").write_text('{"rows": 1}')
"""

SCRIPT = """\
import json
from pathlib import Path

import pandas as pd
from sklearn.linear_model import LogisticRegression

manifest = json.loads(Path("inputs/manifest.json").read_text())
df = pd.read_parquet(manifest["data.parquet"]["path"])
X, y = df.drop(columns=["outcome"]), df["outcome"]
model = LogisticRegression(max_iter=200).fit(X, y)
result = {"rows": len(df), "accuracy": float(model.score(X, y)), "intercept": float(model.intercept_[0])}
Path("out/result.json").write_text(json.dumps(result, indent=2))
"""


def make_data(path: Path, rows: int, cols: int, seed: int = 42) -> None:
    """A Parquet file of `cols` columns: cols - 1 standard-normal features and a binary outcome that depends on
    some."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((rows, cols - 1))
    logit = features[:, :5] @ np.array([0.8, -0.5, 0.3, 0.2, -0.1])
    outcome = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(int)
    frame = pd.DataFrame(features, columns=[f"x{i}" for i in range(cols - 1)]).round(4)
    frame["outcome"] = outcome
    write_frame(path, frame)


def direct(work: Path, script: Path, data: Path) -> float:
    """One direct run in a fresh folder laid out like /sandbox (copies made before the clock starts)."""
    if work.exists():
        shutil.rmtree(work)
    (work / "inputs").mkdir(parents=True)
    (work / "out").mkdir()
    shutil.copyfile(script, work / "analysis.py")
    (work / "inputs" / "data.parquet").symlink_to(data)
    manifest = {"data.parquet": {"path": "inputs/data.parquet", "bytes": data.stat().st_size}}
    (work / "inputs" / "manifest.json").write_text(json.dumps(manifest))
    start = time.monotonic()
    env = _child_env(str(Path(sys.executable).parent), str(work / "out"), str(work / "out"))
    subprocess.run([sys.executable, "-I", "-B", "analysis.py"], cwd=work, check=True, env=env)
    seconds = time.monotonic() - start
    assert json.loads((work / "out" / "result.json").read_text())["rows"] > 0
    return seconds


def sandboxed(out_dir: Path, script: Path, data: Path, mode: str) -> float:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    start = time.monotonic()
    result = run_sandboxed(script, {"data.parquet": data}, out_dir, Limits(), mode=mode)
    seconds = time.monotonic() - start
    if result.status != "ok":
        raise SystemExit(f"sandboxed run failed: {result.status}: {result.reason}\n{result.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=int, default=23503)
    parser.add_argument("--cols", type=int, default=60)
    parser.add_argument("--mode", choices=["bwrap", "none"], default="bwrap")
    args = parser.parse_args()
    if args.mode == "bwrap" and (reason := sandbox_available()) is not None:
        raise SystemExit(f"cannot benchmark the sandbox here: {reason}")
    with tempfile.TemporaryDirectory(prefix="edm_ars_bench_sandbox_") as tmp:
        tmp_path = Path(tmp)
        data = tmp_path / "data.parquet"
        make_data(data, args.rows, args.cols)
        print(f"data: {args.rows} x {args.cols} Parquet, {data.stat().st_size / 1e6:.1f} MB; {args.runs} runs each, "
              f"mode {args.mode}; python {sys.version.split()[0]}")
        rows = []
        for label, source in (("write only", EMPTY), ("analysis", SCRIPT)):
            script = tmp_path / "analysis.py"
            script.write_text(source, encoding="utf-8")
            direct(tmp_path / "warm", script, data)  # warm the page cache for both
            times: dict[str, list[float]] = {"direct": [], "sandboxed": []}
            for k in range(args.runs):
                times["direct"].append(direct(tmp_path / "direct", script, data))
                times["sandboxed"].append(sandboxed(tmp_path / "out", script, data, args.mode))
                print(f"{label} run {k + 1}: direct {times['direct'][-1]:.3f} s, "
                      f"sandboxed {times['sandboxed'][-1]:.3f} s")
            med = {name: statistics.median(values) for name, values in times.items()}
            rows.append((label, med["direct"], med["sandboxed"]))
    print(f"{'script':12}{'direct s':>10}{'sandboxed s':>13}{'ratio':>8}{'overhead s':>12}   (medians)")
    for label, plain, boxed in rows:
        print(f"{label:12}{plain:>10.3f}{boxed:>13.3f}{boxed / plain:>8.2f}{boxed - plain:>12.3f}")
    _, plain, boxed = rows[-1]
    print(f"direct={plain:.3f} sandboxed={boxed:.3f} ratio={boxed / plain:.3f} overhead={boxed - plain:.3f}")


if __name__ == "__main__":
    main()
