"""Output read defensively (edm_ars.codegen.outputs): whatever result.json, file names or folders a script leaves,
the attempt fails with a one-line reason the repair loop sees, the analysis is dropped, the record is written, and a
rerun in the same folder works. The six one-line scripts of issue 34 go through the real path: the sandbox (scan
skipped: the sandbox is the boundary), the reading code, run_analysis and the supplementary job."""

from __future__ import annotations

import json
import os
import shutil
import stat
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from edm_ars.codegen import outputs, sandbox
from edm_ars.codegen.bwrap import sandbox_available
from edm_ars.codegen.limits import Limits
from edm_ars.codegen.outputs import MAX_DEPTH, read_result, remove_tree, tidy
from edm_ars.codegen.sandbox import SandboxResult, run_sandboxed
from edm_ars.codegen.supplementary import ContractError, check_output, run_analysis
from edm_ars.core.artifacts import read_json, write_json
from edm_ars.core.frames import write_frame

ROOT = Path(__file__).resolve().parents[2]
ENTRY = {"name": "mean_gap", "purpose": "How far apart are the outcome means of the two halves of X1?",
         "reports": ["gap"], "source": "generated", "requested_by": "analyst"}
GOOD_RESULT = {"numbers": [{"name": "gap", "value": 0.25, "meaning": "outcome rate above minus below the median"}]}
#: deeper than Python's recursion limit (1000), where shutil.rmtree and os.walk fail (each rmdir of a nested
#: folder costs about 2 ms on ext4: the six scripts' case keeps the 3000 of issue 34)
DEEP = 1200
GOOD = f"import json\njson.dump({GOOD_RESULT!r}, open('out/result.json', 'w'))\n"


def _result_text(value: str = "0.25", meaning: str = "a gap of the outcome") -> str:
    return '{"numbers": [{"name": "gap", "value": ' + value + ', "meaning": "' + meaning + '"}]}'


def _deep_tree(top: Path, depth: int, locked_every: int = 0) -> None:
    """top/a/a/.../a, `depth` folders, made through descriptors (the path outgrows PATH_MAX); every
    `locked_every`-th folder left with mode 000 (made last, from the bottom up, so the descent still works)."""
    top.mkdir(parents=True, exist_ok=True)
    fds = [os.open(top, os.O_RDONLY | os.O_DIRECTORY)]
    for _ in range(depth):
        os.mkdir("a", dir_fd=fds[-1])
        fds.append(os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
    (Path(f"/proc/self/fd/{fds[-1]}") / "leaf.txt").write_text("x")
    for level in range(depth, 0, -1):
        if locked_every and level % locked_every == 0:
            os.chmod("a", 0, dir_fd=fds[level - 1])
    for fd in fds:
        os.close(fd)


# ---- reading result.json within limits -----------------------------------------------------------------------


@pytest.mark.parametrize("text, problem", [
    ("[" * 100_000 + "]" * 100_000, "nests arrays and objects 100000 deep, over 8"),
    ('{"numbers": ' + "[" * 20 + "]" * 20 + "}", "nests arrays and objects 21 deep"),
    (_result_text("9" * 5000), "numbers/0/value: a number written with 5000 characters (at most 40)"),
    (_result_text("9" * 401), "numbers/0/value: a number written with 401 characters"),
    (_result_text("1e999"), "numbers/0/value: 1e999 is out of the range of a finite number"),
    (_result_text("NaN"), "numbers/0/value: NaN is not a finite number"),
    (_result_text("-Infinity"), "numbers/0/value: -Infinity is not a finite number"),
    (_result_text(meaning="a gap of the \\udcff outcome"), "numbers/0/meaning: a string that is not UTF-8"),
    (_result_text(meaning="a gap of the\\t outcome"), "numbers/0/meaning: a string that is not UTF-8 or holds a "
                                                      "control character ('a gap of the\\t outcome')"),
    ('{"numbers": [], "\\ud800": 1}', "(root): a key that is not UTF-8"),
    ('{"numbers": [', "is not valid JSON (Expecting value"),
])
def test_result_json_beyond_the_limits_is_refused_naming_the_key(tmp_path, text, problem):
    (tmp_path / "result.json").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        read_result(tmp_path / "result.json")
    message = str(caught.value)
    assert message.startswith("out/result.json") and problem in message, message
    assert "\n" not in message
    message.encode("utf-8")  # a record can hold it


def test_bytes_that_are_not_utf8_and_an_oversized_file_are_refused_unparsed(tmp_path):
    (tmp_path / "result.json").write_bytes(_result_text().encode() + b"\xff")
    with pytest.raises(ValueError, match=r"is not UTF-8 text \(byte 0xff at offset 80\)"):
        read_result(tmp_path / "result.json")
    (tmp_path / "result.json").write_text(" " * outputs.MAX_RESULT_BYTES + _result_text())
    with pytest.raises(ValueError, match="holds 1000080 bytes, over the 1000000"):
        read_result(tmp_path / "result.json")


def test_a_result_within_the_limits_reads_as_plain_json(tmp_path):
    text = _result_text("-1.5e-300", meaning="brackets [[[[[[[[[[ and braces {{{{{{{{{ in a string, \\u00e9")
    (tmp_path / "result.json").write_text(text, encoding="utf-8")
    assert read_result(tmp_path / "result.json") == json.loads(text)
    (tmp_path / "result.json").write_text(_result_text("12345678901234567890"), encoding="utf-8")
    assert read_result(tmp_path / "result.json")["numbers"][0]["value"] == 12345678901234567890


def test_check_output_turns_each_into_a_contract_error_a_record_can_hold(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for text in ("[" * 100_000, _result_text("9" * 5000), _result_text("9" * 401),
                 _result_text(meaning="a gap of the \\udcff outcome")):
        (out / "result.json").write_text(text, encoding="utf-8")
        with pytest.raises(ContractError) as caught:
            check_output(out, ENTRY)
        write_json(tmp_path / "outcome.json", {"reason": str(caught.value)})
        assert read_json(tmp_path / "outcome.json")["reason"] == str(caught.value)


# ---- the output folder ---------------------------------------------------------------------------------------


def test_remove_tree_removes_a_locked_tree_deeper_than_the_recursion_limit(tmp_path):
    _deep_tree(tmp_path / "gone", DEEP, locked_every=7)
    (tmp_path / "gone").chmod(0)
    remove_tree(tmp_path / "gone")
    assert not (tmp_path / "gone").exists() and list(tmp_path.iterdir()) == []
    remove_tree(tmp_path / "gone")  # missing: nothing to do


def test_tidy_removes_deep_folders_bad_names_and_special_files_and_keeps_the_rest(tmp_path):
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "a.pdf").write_bytes(b"%PDF-1.4")
    (out / "result.json").write_text(_result_text())
    _deep_tree(out / "deep", DEEP, locked_every=5)
    _deep_tree(out / "shallow", MAX_DEPTH - 1)  # deep/ and shallow/ are level 1: MAX_DEPTH levels in all
    (out / os.fsdecode(b"bad\xffname")).write_text("x")
    (out / "new\nline").mkdir()
    os.mkfifo(out / "pipe")
    (out / "figures").chmod(0)
    total, removed = tidy(out, None)
    assert removed == ["bad\\xffname (a name that is not printable UTF-8)",
                       "deep/a/a/a/a/a/a/a/a (folders nested deeper than 8)",
                       "new\\nline (a name that is not printable UTF-8)", "pipe (neither a file nor a folder)"]
    assert total == len(b"%PDF-1.4") + len(_result_text()) + 1
    assert (out / "deep/a/a/a/a/a/a/a").is_dir() and not (out / "deep/a/a/a/a/a/a/a/a").exists()
    assert (out / ("shallow" + "/a" * (MAX_DEPTH - 1)) / "leaf.txt").is_file()
    assert stat.S_IMODE((out / "figures").stat().st_mode) == 0o700


def test_the_removed_list_of_a_reason_is_one_short_line():
    assert outputs.listing([f"f{i} (a link)" for i in range(9)]) == \
        "f0 (a link), f1 (a link), f2 (a link), f3 (a link), f4 (a link) and 4 more"
    assert len(outputs.shown("x" * 500)) == outputs.SHOWN_CHARS + 3


def test_a_rerun_removes_any_leftover_attempt_deep_or_locked(tmp_path):
    """A job killed mid-attempt leaves an untidied out/ (deeper than the recursion limit, locked); the next run
    starts clean."""
    folder = tmp_path / "run"
    _deep_tree(folder / "attempt_1" / "out", DEEP, locked_every=3)
    (folder / "attempt_1" / "out").chmod(0)
    (folder / "attempt_2").mkdir()
    (folder / "attempt_2").chmod(0)

    def runner(script, inputs, out, limits, mode):
        out.mkdir(parents=True)
        (out / "result.json").write_text(json.dumps(GOOD_RESULT))
        return SandboxResult("ok", 0, "", "", 0.0, "")

    record = run_analysis(ENTRY | {"code": GOOD}, {}, folder, limits=Limits(), mode="none", attempts=3, repair=None,
                          runner=runner)
    assert record["status"] == "ok" and record["numbers"]["gap"]["value"] == 0.25
    assert sorted(p.name for p in folder.iterdir()) == ["attempt_1"]

    scratch = tmp_path / ".running"  # the job's out/ outside its declared outputs, left by a killed job
    _deep_tree(scratch / "attempt_1" / "out", DEEP, locked_every=4)
    written = []
    record = run_analysis(ENTRY | {"code": GOOD}, {}, folder, limits=Limits(), mode="none", attempts=3, repair=None,
                          runner=lambda script, inputs, out, **kw: written.append(out) or runner(script, inputs, out,
                                                                                                   **kw),
                          scratch=scratch)
    assert written == [scratch / "attempt_1" / "out"] and not scratch.exists()
    assert record["status"] == "ok" and (folder / "attempt_1" / "out" / "result.json").is_file()


# ---- the six scripts of issue 34, through the sandbox, run_analysis and the job --------------------------------

needs_sandbox = pytest.mark.skipif(sandbox_available() is not None, reason=f"no sandbox here: {sandbox_available()}")

WRITE = "open('out/result.json', 'w').write({text})\n"
SIX = {
    "nested_brackets": (WRITE.format(text="'[' * 100000 + ']' * 100000"),
                        "contract: out/result.json nests arrays and objects 100000 deep, over 8 (a result needs three)"),
    "int_5000_digits": (WRITE.format(text=repr(_result_text("9" * 5000))),
                        "contract: out/result.json: numbers/0/value: a number written with 5000 characters (at most 40)"),
    "int_401_digits": (WRITE.format(text=repr(_result_text("9" * 401))),
                       "contract: out/result.json: numbers/0/value: a number written with 401 characters (at most 40)"),
    "lone_surrogate": (WRITE.format(text=repr(_result_text(meaning="a gap of the \\udcff outcome"))),
                       "contract: out/result.json: numbers/0/meaning: a string that is not UTF-8 or holds a control "
                       "character ('a gap of the \\udcff outcome')"),
    "name_not_utf8": ("from pathlib import Path\n(Path('out') / b'\\xff'.decode('utf-8', 'surrogateescape'))"
                      ".write_text('x')\n" + GOOD,
                      "error: the output folder may hold only files and folders with printable UTF-8 names, at most "
                      "8 folders deep; removed: \\xff (a name that is not printable UTF-8)"),
    "folders_3000_deep": ("import os\nos.chdir('out')\nfor _ in range(3000):\n    os.mkdir('a')\n    os.chdir('a')\n"
                          "os.chmod('.', 0)\n" + GOOD.replace("out/result.json", "/sandbox/out/result.json"),
                          "error: the output folder may hold only files and folders with printable UTF-8 names, at "
                          "most 8 folders deep; removed: a/a/a/a/a/a/a/a/a (folders nested deeper than 8)"),
}


@needs_sandbox
@pytest.mark.parametrize("case", sorted(SIX))
def test_each_malformed_output_drops_the_analysis_and_a_rerun_repairs_it(tmp_path, case):
    source, reason = SIX[case]
    runner = partial(run_sandboxed, skip_scan=True)
    folder = tmp_path / "run"
    record = run_analysis(ENTRY | {"code": source}, {}, folder, limits=Limits(), mode="bwrap", attempts=1,
                          repair=None, runner=runner)
    assert record["status"] == "dropped" and "numbers" not in record, record
    assert record["reason"] == f"attempt 1 of 1: {reason}", record["reason"]
    write_json(tmp_path / "slot_1.json", {"slot": 1} | record, "supplementary_record")
    assert read_json(folder / "attempt_1" / "outcome.json")["reason"] == reason.split(": ", 1)[1]

    seen = []  # the rerun, in the same folder: the repair loop sees the failure and its repair runs
    record = run_analysis(ENTRY | {"code": source}, {}, folder, limits=Limits(), mode="bwrap", attempts=2,
                          repair=lambda code, failure: seen.append(failure) or GOOD, runner=runner)
    assert record["status"] == "ok" and [a["status"] for a in record["attempts"]] == [reason.split(":")[0], "ok"]
    assert seen[0]["reason"] == reason.split(": ", 1)[1] and record["numbers"]["gap"]["value"] == 0.25
    write_json(tmp_path / "slot_1.json", {"slot": 1} | record, "supplementary_record")


@needs_sandbox
@pytest.mark.workflow
def test_the_job_records_every_malformed_output_as_dropped_and_reruns(tmp_path, monkeypatch):
    """The supplementary job (edm_ars.jobs.supplementary) with the six scripts planned as slots 1-6: each slot's
    record says dropped with the reason; then every job runs again over the same folders."""
    from edm_ars.jobs.supplementary import supplementary

    monkeypatch.setattr(sandbox, "run_sandboxed", partial(run_sandboxed, skip_scan=True))
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"X1": rng.normal(size=50), "X2": rng.normal(size=50)})
    y = pd.DataFrame({"Y": (X["X1"] > 0).astype(float)})
    frames = {}
    for name, frame in (("train_X", X), ("test_X", X), ("train_y", y), ("test_y", y),
                        ("predictions", pd.DataFrame({"logistic": rng.random(50)}))):
        frames[name] = str(tmp_path / f"{name}.parquet")
        write_frame(frames[name], frame)
    cases = sorted(SIX)
    plan = {"analyses": [{"name": case, "purpose": f"the malformed output {case}", "reports": ["gap"],
                          "source": "generated", "requested_by": "analyst", "code": SIX[case][0]} for case in cases],
            "skipped": [], "backend": "offline", "context": {"seed": 7}, "requested": [], "sandbox": "bwrap",
            "attempts": 1}
    write_json(tmp_path / "plan.json", plan, "supplementary_plan")
    configured = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["codegen"]
    codegen = configured | {"n": len(cases), "attempts": 1, "sandbox": "bwrap"}
    out = tmp_path / "supplementary"
    for run in (1, 2):
        for slot, case in enumerate(cases, start=1):
            if run == 2:  # as Snakemake does before a rerun (shutil.rmtree), after a killed job's leftover
                shutil.rmtree(out / f"slot_{slot}")
                _deep_tree(out / f".slot_{slot}.running" / "attempt_1" / "out", 1100, locked_every=9)
            smk = SimpleNamespace(
                input=SimpleNamespace(plan=str(tmp_path / "plan.json"), prompts=str(tmp_path / "unused.yaml"),
                                      **frames),
                output=SimpleNamespace(record=str(out / f"slot_{slot}.json"), attempts=str(out / f"slot_{slot}"),
                                       ledger=str(tmp_path / f"ledger_{slot}.jsonl"),
                                       transcripts=str(tmp_path / f"transcripts_{slot}")),
                params=SimpleNamespace(codegen=codegen, llm={"backend": "offline"}),
                wildcards=SimpleNamespace(slot=str(slot)))
            supplementary(smk)
            record = read_json(out / f"slot_{slot}.json", "supplementary_record")
            assert record["status"] == "dropped" and record["reason"] == f"attempt 1 of 1: {SIX[case][1]}", \
                (run, case, record["reason"])
    assert sorted(p.name for p in out.iterdir()) == sorted(f"slot_{k}{e}" for k in range(1, 7) for e in ("", ".json"))
