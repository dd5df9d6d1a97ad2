"""The sandbox for generated analysis code: scan() refuses hostile code before it runs (fast unit tests), and
run_sandboxed(..., skip_scan=True) contains the same code when it does run: each attack ends in a refusal or a
kill, or has no effect, and nothing outside the output folder changes. The bwrap tests skip (with the reason)
where bubblewrap cannot run; the ones taking a second or more are marked workflow."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from edm_ars.codegen import bwrap, sandbox
from edm_ars.codegen.bwrap import sandbox_available
from edm_ars.codegen.limits import Limits
from edm_ars.codegen.sandbox import FORBIDDEN_MODULES, run_sandboxed, scan

UNAVAILABLE = sandbox_available()
needs_bwrap = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"bubblewrap cannot run here: {UNAVAILABLE}")

GOOD = """\
import json
from pathlib import Path

manifest = json.loads(Path("inputs/manifest.json").read_text())
rows = Path(manifest["x.csv"]["path"]).read_text().splitlines()[1:]
total = sum(int(line.split(",")[0]) for line in rows)
out = Path("out")
(out / "result.json").write_text(json.dumps({"rows": len(rows), "total": total}))
print("rows", len(rows))
"""

GOOD_PANDAS = """\
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.linear_model import LogisticRegression

manifest = json.loads(Path("inputs/manifest.json").read_text())
df = pd.read_csv(manifest["x.csv"]["path"])
model = LogisticRegression().fit(df[["a"]], df["b"])
plt.plot(df["a"], df["b"])
plt.savefig("out/profile.png")
with open("out/result.json", "w") as fh:
    json.dump({"rows": len(df), "coef_a": float(model.coef_[0][0])}, fh)
"""

#: what a model might well write: a module docstring, dataclasses, scipy, names for the folders, figures
REALISTIC = """\
'''Supplementary analysis: does the effect of math self-efficacy differ by SES quintile?'''
import json
import math
import warnings
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

warnings.filterwarnings("ignore")
INPUTS = Path("inputs")
OUT = Path("out")
OUT.mkdir(exist_ok=True)
(OUT / "figures").mkdir(parents=True, exist_ok=True)

manifest = json.loads((INPUTS / "manifest.json").read_text())
data = pd.read_csv(INPUTS / "prepared.csv")
preds = pd.read_csv(manifest["predictions.csv"]["path"], index_col=0)


@dataclass
class Effect:
    name: str
    value: float


def fit(frame: pd.DataFrame, cols: list[str]) -> float:
    X_train, X_test, y_train, y_test = train_test_split(frame[cols], frame["y"], random_state=0)
    model = LogisticRegression(max_iter=500).fit(X_train, y_train)
    return roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])


results = {}
for a, b in combinations(["x1", "x2", "x3"], 2):
    data[f"{a}_x_{b}"] = data[a] * data[b]
    results[f"auc_{a}_{b}"] = {"value": fit(data, [a, b, f"{a}_x_{b}"]), "meaning": "AUC with interaction"}
t, p = stats.ttest_ind(data["x1"], data["x2"])
results["t"] = {"value": float(t), "meaning": f"t statistic, p = {p:.3g}"}
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot(np.linspace(0, 1, 10), np.sqrt(np.linspace(0, 1, 10)))
ax.set_title("Interaction profile...")
fig.savefig(OUT / "figures" / "interaction.png", dpi=150)
plt.close(fig)
summary = pd.DataFrame(results).T
summary.to_csv(OUT / "summary.csv")
with open(OUT / "result.json", "w", encoding="utf-8") as fh:
    json.dump(results, fh, indent=2)
print(f"done: {len(results)} numbers, log-odds {math.log(2):.3f}")
"""


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[int, int]]:
    """Every file under root except the output folder: relative path -> (size, mtime)."""
    seen = {}
    for path in sorted(root.rglob("*")):
        if path == skip or skip in path.parents:
            continue
        info = path.lstat()
        seen[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return seen


def _processes_of(uid: int) -> list[str]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid:
            found.append(f"{status.parent.name} {fields['Name'].strip()}")
    return found


@pytest.fixture
def run(tmp_path):
    """Write the source as analysis.py beside an input x.csv, run it into tmp_path/out (skip_scan unless told),
    and check that nothing else under tmp_path changed."""

    def go(source: str, limits: Limits | None = None, mode: str = "bwrap", skip_scan: bool = True):
        (tmp_path / "x.csv").write_text("a,b\n1,0\n2,1\n3,0\n4,1\n", encoding="utf-8")
        script = tmp_path / "analysis.py"
        script.write_text(source, encoding="utf-8")
        out_dir = tmp_path / "out"
        before = _snapshot(tmp_path, out_dir)
        result = run_sandboxed(script, {"x.csv": tmp_path / "x.csv"}, out_dir, limits or Limits(), mode=mode,
                               skip_scan=skip_scan)
        assert _snapshot(tmp_path, out_dir) == before, "something outside the output folder changed"
        return result, out_dir

    return go


def _out_text(out_dir: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in out_dir.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------------------------------
# scan(): the early refusal


def test_scan_accepts_code_within_the_contract():
    assert scan(GOOD) == []
    assert scan(GOOD_PANDAS) == []
    assert scan(REALISTIC) == []
    assert scan("""\
import json
from pathlib import Path
import numpy as np
import pandas as pd
manifest = json.load(open("inputs/manifest.json"))
for name, entry in manifest.items():
    data = np.loadtxt(entry["path"], delimiter=",", skiprows=1)
    np.save(Path("out") / f"{name}.npy", data)
frame = pd.DataFrame()
frame.to_latex("out/table.tex", caption="Odds ratios...", label="tab:or")
figures = Path("out/figures")
figures.mkdir()
Path(f"out/figures/{len(manifest)}.txt").write_text("n")
""") == []


@pytest.mark.parametrize(("source", "expected"), [
    ("import socket\n", "line 1: import of socket (network) is not allowed"),
    ("x = 1\nfrom urllib.request import urlopen\n", "line 2: import of urllib.request (network) is not allowed"),
    ("import http.client as h\n", "line 1: import of http.client (network)"),
    ("import subprocess\n", "line 1: import of subprocess (processes)"),
    ("from concurrent import futures\n", "line 1: import of concurrent (processes)"),
    ("import os\n", "line 1: import of os (the operating system)"),
    ("import sys\n", "line 1: import of sys (the operating system)"),
    ("import ctypes\n", "line 1: import of ctypes (the operating system)"),
    ("import importlib\n", "line 1: import of importlib (code loading)"),
    ("import _posixsubprocess\n", "line 1: import of _posixsubprocess (processes)"),
    ("import _io\n", "line 1: import of _io (a private module)"),
    ("from pathlib import os\n", "line 1: import of os (the operating system)"),
    ("eval('1+1')\n", "line 1: call of eval() is not allowed"),
    ("exec('x=1')\n", "line 1: call of exec() is not allowed"),
    ("c = compile('1', 'f', 'eval')\n", "line 1: call of compile() is not allowed"),
    ("m = __import__('os')\n", "line 1: use of __import__ is not allowed"),
    ("g = globals()\n", "line 1: call of globals() is not allowed"),
    ("k = ().__class__.__bases__[0].__subclasses__()\n", "line 1: access to the attribute __class__"),
    ("import pathlib\nf = getattr(pathlib, 'o' + 's')\n", "line 2: getattr() with a computed or private"),
    ("import pandas as pd\npd.read_pickle('inputs/x.pkl')\n", "line 2: use of .read_pickle is not allowed"),
    ("import numpy as np\nnp.load('inputs/x.npy', allow_pickle=True)\n", "line 2: allow_pickle"),
    ("from pathlib import Path\nPath('out/x').symlink_to('/etc/passwd')\n", "line 2: use of .symlink_to is not allowed"),
    ("import pandas as pd\npd.io.common.os.system('id')\n", "line 2: access to the module os through an attribute"),
    ("import numpy as np\nnp.ctypeslib.load_library('x', 'out')\n", "line 2: access to the module ctypeslib"),
    ("from numpy import ctypeslib\n", "line 1: import of ctypeslib from numpy is not allowed"),
    ("import numpy.ctypeslib\n", "line 1: import of numpy.ctypeslib is not allowed"),
])
def test_scan_refuses_hostile_constructs_naming_the_line(source, expected):
    violations = scan(source)
    assert any(v.startswith(expected) for v in violations), violations


@pytest.mark.parametrize(("source", "expected"), [
    ("open('/etc/passwd')\n", "absolute path '/etc/passwd' given to open()"),
    ("open('/tmp/x', 'w').write('x')\n", "absolute path '/tmp/x' given to open()"),
    ("from pathlib import Path\nPath('~/.edm_ars_secret').read_text()\n", "home-relative path"),
    ("import pandas as pd\npd.read_csv('inputs/../../etc/passwd')\n", "climbs out with '..'"),
    ("import pandas as pd\ndf = pd.read_csv('inputs/x.csv')\ndf.to_csv('results.csv')\n",
     "line 3: path 'results.csv' is outside the contract"),
    ("from pathlib import Path\np = Path('out') / '../escape.txt'\n", "line 2: path '../escape.txt' climbs out"),
    ("import matplotlib.pyplot as plt\nplt.savefig(f'/tmp/{1}.png')\n", "absolute path '/tmp/' given to savefig()"),
    ("import pandas as pd\nname = input()\npd.read_csv(name)\n", "line 3: the path given to read_csv() is neither"),
    ("import numpy as np\nname = '/etc/' + 'passwd'\nnp.load(name)\n", "line 3: the path given to load() is neither"),
    ("import pandas as pd\npd.read_csv('http://example.org/x.csv')\n", "outside the contract"),
    ("from pathlib import Path\nimport pandas as pd\npd.read_csv(Path('inputs').resolve().parent / 'x')\n",
     "line 3: the path given to read_csv() is neither"),
    ("import logging\nlogging.basicConfig(filename='/tmp/log.txt')\n", "absolute path '/tmp/log.txt'"),
    ("p = f'out/../../{1}'\nopen(p, 'w')\n", "line 2: the path given to open() is neither"),
    ("p = 'out/' + '../x'\n", "line 1: path '../x' climbs out with '..'"),
])
def test_scan_refuses_file_access_outside_the_contract(source, expected):
    violations = scan(source)
    assert any(expected in v for v in violations), violations


def test_scan_reports_a_syntax_error_with_its_line():
    assert scan("x = 1\nif x\n") == ["line 2: syntax error: expected ':'"]


def test_forbidden_modules_cover_network_processes_and_escape_hatches():
    for name in ("socket", "subprocess", "multiprocessing", "ctypes", "urllib", "http", "requests", "ftplib",
                 "smtplib", "asyncio", "signal", "threading", "os", "shutil", "pty", "importlib", "builtins", "sys"):
        assert name in FORBIDDEN_MODULES


# ---------------------------------------------------------------------------------------------------------
# run_sandboxed(): the boundary


@needs_bwrap
def test_good_code_runs_and_writes_its_result(run):
    result, out_dir = run(GOOD, skip_scan=False)
    assert (result.status, result.exit_code, result.reason) == ("ok", 0, ""), result
    assert json.loads((out_dir / "result.json").read_text()) == {"rows": 4, "total": 10}
    assert result.stdout == "rows 4\n"
    assert (out_dir / "result.json").stat().st_uid == os.geteuid()  # handed back after the uid drop


@needs_bwrap
@pytest.mark.workflow
def test_good_pandas_sklearn_matplotlib_code_runs(run):
    result, out_dir = run(GOOD_PANDAS, skip_scan=False)
    assert result.status == "ok", result
    assert json.loads((out_dir / "result.json").read_text())["rows"] == 4
    assert (out_dir / "profile.png").stat().st_size > 0


@needs_bwrap
@pytest.mark.workflow
def test_a_realistic_analysis_runs_with_two_inputs(tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((300, 3)), columns=["x1", "x2", "x3"])
    frame["y"] = (frame["x1"] + rng.standard_normal(300) > 0).astype(int)
    frame.to_csv(tmp_path / "prepared.csv", index=False)
    pd.DataFrame({"p": rng.random(300)}).to_csv(tmp_path / "predictions.csv")
    script = tmp_path / "analysis.py"
    script.write_text(REALISTIC)
    inputs = {"prepared.csv": tmp_path / "prepared.csv", "predictions.csv": tmp_path / "predictions.csv"}
    result = run_sandboxed(script, inputs, tmp_path / "out")
    assert result.status == "ok", result
    numbers = json.loads((tmp_path / "out" / "result.json").read_text())
    assert set(numbers) == {"auc_x1_x2", "auc_x1_x3", "auc_x2_x3", "t"}
    assert (tmp_path / "out" / "figures" / "interaction.png").stat().st_size > 0


def test_good_code_runs_in_mode_none_with_the_same_contract_and_environment(run, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    source = GOOD + "import os\nprint(sorted(os.environ))\nprint(os.environ.get('ANTHROPIC_API_KEY'))\n"
    result, out_dir = run(source, mode="none")
    assert result.status == "ok", result
    assert json.loads((out_dir / "result.json").read_text()) == {"rows": 4, "total": 10}
    assert "sk-test-secret" not in result.stdout and "'HOME'" in result.stdout


def test_scan_violations_refuse_before_anything_runs(run):
    result, out_dir = run("import socket\nopen('out/ran', 'w')\n", skip_scan=False)
    assert result.status == "refused" and "line 1: import of socket (network)" in result.reason
    assert not (out_dir / "ran").exists()


@needs_bwrap
def test_a_non_empty_output_folder_is_refused(tmp_path):
    script = tmp_path / "analysis.py"
    script.write_text(GOOD)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.json").write_text("{}")
    result = run_sandboxed(script, {}, tmp_path / "out")
    assert result.status == "refused" and "must be new or empty" in result.reason


def test_bubblewrap_missing_is_a_refusal_naming_the_fix(tmp_path, monkeypatch):
    script = tmp_path / "analysis.py"
    script.write_text("open('out/ran', 'w').write('x')\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap here
    reason = sandbox_available()
    assert reason is not None and "apt-get install bubblewrap" in reason and "codegen.sandbox: none" in reason
    result = run_sandboxed(script, {}, tmp_path / "out")
    assert result.status == "refused" and result.reason == reason
    assert not (tmp_path / "out" / "ran").exists()


def test_an_unusable_bubblewrap_is_a_refusal_too(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "sandbox_available", lambda python=None: "bwrap: setting up uid map: Permission "
                        "denied; install bubblewrap (`apt-get install bubblewrap`), or set `codegen.sandbox: none`")
    script = tmp_path / "analysis.py"
    script.write_text("open('out/ran', 'w').write('x')\n")
    result = run_sandboxed(script, {}, tmp_path / "out")
    assert result.status == "refused" and result.reason.startswith("bwrap: setting up uid map")
    assert not (tmp_path / "out" / "ran").exists()


@needs_bwrap
def test_socket_to_a_loopback_listener_never_connects(run):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    source = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\ns.sendall(b'data')\n"
    assert scan(source)[0].startswith("line 1: import of socket (network)")
    try:
        result, _ = run(source)
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    # the sandbox has a loopback of its own (nobody listens there) and no other interface
    assert result.status == "error" and ("Connection refused" in result.reason
                                         or "Network is unreachable" in result.reason), result


@needs_bwrap
def test_writing_outside_the_output_folder_has_no_effect(run, tmp_path):
    host_tmp = Path("/tmp") / f"edm_ars_sandbox_escape_{uuid.uuid4().hex}"
    source = (f"from pathlib import Path\nPath({str(host_tmp)!r}).write_text('escaped')\n"
              f"Path({str(tmp_path / 'escape.txt')!r}).write_text('escaped')\n")
    assert any("absolute path" in v for v in scan(source))
    result, out_dir = run(source)
    assert not host_tmp.exists()  # the sandbox's /tmp is its own
    assert not (tmp_path / "escape.txt").exists()
    assert result.status == "error" and "No such file or directory" in result.reason, result


@needs_bwrap
@pytest.mark.parametrize("attempt", ["Path('inputs/x.csv').write_text('changed')",
                                     "Path('analysis.py').write_text('changed')",
                                     "Path('/sandbox/escape').write_text('x')", "Path('/usr/escape').write_text('x')"])
def test_the_inputs_the_script_and_the_system_are_read_only(run, attempt):
    result, _ = run(f"from pathlib import Path\n{attempt}\n")  # the fixture checks x.csv and analysis.py
    assert result.status == "error" and ("Read-only file system" in result.reason
                                         or "Permission denied" in result.reason), (attempt, result)


@needs_bwrap
def test_an_api_key_in_the_environment_does_not_reach_the_script(run, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    source = ("import json, os\nprint(dict(os.environ))\n"
              "open('out/env.json', 'w').write(json.dumps(dict(os.environ)))\n"
              "import sys\nprint(open('/proc/1/environ').read(), file=sys.stderr)\n")
    assert any("import of os" in v for v in scan(source))
    result, out_dir = run(source)
    assert "sk-test-secret" not in result.stdout + result.stderr + _out_text(out_dir)
    env = json.loads((out_dir / "env.json").read_text())
    assert env["HOME"] == "/sandbox/out" and "ANTHROPIC_API_KEY" not in env


@needs_bwrap
def test_a_secret_file_under_home_is_out_of_reach(run):
    secret = Path.home() / ".edm_ars_sandbox_test_secret"
    secret.write_text("sk-home-secret")
    try:
        source = (f"from pathlib import Path\nfor p in [{str(secret)!r}, str(Path.home() / {secret.name!r})]:\n"
                  "    try:\n        print(Path(p).read_text())\n    except OSError as exc:\n        print(exc)\n"
                  f"print(open({str(secret)!r}).read())\n")
        assert any("absolute path" in v for v in scan(source))
        result, out_dir = run(source)
    finally:
        secret.unlink()
    assert result.status == "error" and "No such file or directory" in result.reason, result
    assert "sk-home-secret" not in result.stdout + result.stderr + _out_text(out_dir)


@needs_bwrap
def test_starting_a_subprocess_fails(run):
    source = ("import subprocess\nsubprocess.run(['id'], check=True)\n")
    assert scan(source)[0].startswith("line 1: import of subprocess (processes)")
    result, _ = run(source)
    assert result.status == "error" and "PermissionError" in result.reason, result
    source = ("import os\ncode = os.system('id > out/id.txt')\nprint('exit', code)\n"
              "os.execv('/usr/bin/id', ['id'])\n")
    assert scan(source)[0].startswith("line 1: import of os")
    result, out_dir = run(source)
    assert "uid=" not in result.stdout + _out_text(out_dir)
    assert result.status == "error" and "PermissionError" in result.reason, result


def assert_no_sandbox_process_left() -> None:
    """As root, no process of the sandbox's uid outlives the run (3 s for the kernel to reap them)."""
    if os.geteuid() != 0:
        return
    deadline = time.monotonic() + 3
    while _processes_of(bwrap.UNPRIVILEGED_ID) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_of(bwrap.UNPRIVILEGED_ID) == []


@needs_bwrap
def test_the_process_limit_stops_forking_and_the_sandbox_leaves_no_process(run):
    source = ("import os, time\ncount = 0\nwhile True:\n    try:\n        pid = os.fork()\n"
              "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n"
              "    count += 1\nprint(count)\n")
    result, _ = run(source, Limits(max_procs=8, wall_s=20))
    assert result.status == "ok", result
    assert 0 < int(result.stdout) < 8  # the children sleep on; the pid namespace ends them with the script
    assert_no_sandbox_process_left()


@needs_bwrap
@pytest.mark.workflow
def test_a_fork_loop_is_stopped_within_its_limits_and_leaves_no_process(run):
    source = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    assert scan(source)[0].startswith("line 1: import of os")
    result, _ = run(source, Limits(cpu_s=2, wall_s=5, max_procs=16))
    assert result.status in {"timeout", "cpu"} and result.seconds < 7, result
    assert_no_sandbox_process_left()
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, timeout=10).returncode == 0


@needs_bwrap
def test_allocating_beyond_the_memory_limit_is_memory(run):
    result, _ = run("x = bytearray(4 * 1024 ** 3)\n", Limits(memory_mb=512))
    assert result.status == "memory" and "512 MB" in result.reason, result
    assert "MemoryError" in result.stderr


@needs_bwrap
@pytest.mark.workflow
def test_an_infinite_loop_is_stopped_at_the_cpu_limit(run):
    result, _ = run("while True:\n    pass\n", Limits(cpu_s=2, wall_s=5))
    assert result.status in {"cpu", "timeout"} and result.seconds < 6, result
    assert result.status == "cpu" and result.exit_code == 128 + 24  # SIGXCPU


@needs_bwrap
@pytest.mark.workflow
def test_a_sleeping_script_is_killed_at_the_wall_limit_with_its_children(run):
    source = "import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        break\ntime.sleep(60)\n"
    result, _ = run(source, Limits(wall_s=1))
    assert result.status == "timeout" and result.exit_code is None and 1 <= result.seconds < 3, result
    assert_no_sandbox_process_left()


@needs_bwrap
def test_output_over_the_limit_is_output_too_large_and_removed(run):
    result, out_dir = run("open('out/big.bin', 'wb').write(b'x' * (3 * 1024 * 1024))\n", Limits(output_mb=1))
    assert result.status == "output_too_large", result
    assert list(out_dir.iterdir()) == []
    many = "for i in range(3):\n    open(f'out/part{i}.bin', 'wb').write(b'x' * (700 * 1024))\n"
    for child in out_dir.iterdir():
        child.unlink()
    result, out_dir = run(many, Limits(output_mb=1))
    assert result.status == "output_too_large", result
    assert re.search(r"over (the output limit of )?1 MB", result.reason), result  # seen while written, or after
    assert list(out_dir.iterdir()) == []


@needs_bwrap
def test_a_link_left_in_the_output_folder_is_removed_and_an_error(run):
    source = "from pathlib import Path\nPath('out/result.json').symlink_to('/root/.edm_ars_secret')\n"
    assert any("symlink_to" in v for v in scan(source))
    result, out_dir = run(source)
    assert result.status == "error" and "removed: result.json" in result.reason, result
    assert list(out_dir.iterdir()) == []


@needs_bwrap
def test_the_sandbox_sees_only_the_interpreter_and_the_contract(run):
    source = ("from pathlib import Path\nimport json\n"
              "seen = {p: Path(p).exists() for p in ['/work', '/home', '/var', '/etc/passwd', '/root/.bashrc', "
              "'/sandbox/inputs/x.csv', '/sandbox/inputs/manifest.json']}\n"
              "print(json.dumps(seen, sort_keys=True))\nprint(open('/proc/self/status').read())\n")
    result, _ = run(source)
    assert result.status == "ok", result
    seen = json.loads(result.stdout.splitlines()[0])
    assert seen == {"/etc/passwd": False, "/home": False, "/root/.bashrc": False, "/sandbox/inputs/manifest.json": True,
                    "/sandbox/inputs/x.csv": True, "/var": False, "/work": False}
    assert "CapEff:\t0000000000000000" in result.stdout and "NoNewPrivs:\t1" in result.stdout


@needs_bwrap
def test_an_input_only_its_owner_can_read_still_reaches_the_script(run, tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,0\n2,1\n3,0\n4,1\n", encoding="utf-8")
    (tmp_path / "x.csv").chmod(0o600)  # as mkstemp leaves it: the uid 65534 of the sandbox gets a copy
    result, out_dir = run(GOOD, skip_scan=False)
    assert result.status == "ok", result
    assert json.loads((out_dir / "result.json").read_text()) == {"rows": 4, "total": 10}


@needs_bwrap
def test_special_mode_bits_made_in_the_sandbox_do_not_survive(run):
    result, out_dir = run("from pathlib import Path\np = Path('out/tool')\np.write_text('x')\np.chmod(0o6755)\n")
    assert result.status == "ok", result
    assert (out_dir / "tool").stat().st_mode & 0o7777 == 0o755


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop and its fallback happen only when started as root")
def test_without_user_namespaces_root_falls_back_to_the_shared_uid_limit(run, monkeypatch):
    """Where `unshare --user` cannot run after the uid drop, the sandbox still runs (pid, net... namespaces,
    uid 65534, limits, exec filter); RLIMIT_NPROC then counts every process of uid 65534."""
    monkeypatch.setattr(bwrap, "OWN_USERNS", ("unshare", "--no-such-option", "--"))
    bwrap._probe.cache_clear()
    try:
        assert bwrap._probe(bwrap.shutil.which("bwrap"), sys.executable, 0) == (None, False)
        result, out_dir = run(GOOD, skip_scan=False)
        assert result.status == "ok", result
        source = ("import os, time\ncount = 0\nwhile True:\n    try:\n        pid = os.fork()\n"
                  "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n"
                  "    count += 1\nprint(count)\n")
        for child in out_dir.iterdir():
            child.unlink()
        result, _ = run(source, Limits(max_procs=8, wall_s=20))
        assert result.status == "ok" and 0 < int(result.stdout) < 8, result
    finally:
        bwrap._probe.cache_clear()


@needs_bwrap
@pytest.mark.workflow
def test_the_private_tmp_is_small(run):
    result, _ = run("open('/tmp/fill', 'wb').write(b'x' * (100 * 1024 * 1024))\n", Limits(output_mb=200))
    assert result.status == "error" and "No space left on device" in result.reason, result


@needs_bwrap
@pytest.mark.workflow
def test_an_interpreter_in_a_venv_under_tmp_runs_with_its_own_prefix(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    script = tmp_path / "analysis.py"
    script.write_text("import sys\nimport pandas\nprint(sys.prefix)\n")
    result = run_sandboxed(script, {}, tmp_path / "out", python=str(venv / "bin" / "python"), skip_scan=True)
    assert result.status == "ok", result
    assert result.stdout.strip() == str(venv)


@needs_bwrap
@pytest.mark.workflow
def test_two_sandboxes_side_by_side_have_a_process_budget_each(tmp_path):
    """Each sandbox holds as many sleeping children as its limit allows, at the same time: with a shared
    budget (one uid, no user namespace of its own) the second would get almost none."""
    from concurrent.futures import ThreadPoolExecutor

    source = ("import os, time\ncount = 0\nwhile True:\n    try:\n        pid = os.fork()\n"
              "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(3)\n        os._exit(0)\n"
              "    count += 1\ntime.sleep(2)\nprint(count)\n")
    script = tmp_path / "analysis.py"
    script.write_text(source)

    def one(k: int):
        return run_sandboxed(script, {}, tmp_path / f"out{k}", Limits(max_procs=8, wall_s=20), skip_scan=True)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, range(2)))
    assert [r.status for r in results] == ["ok", "ok"], results
    counts = [int(r.stdout) for r in results]
    assert all(4 <= c < 8 for c in counts), counts
