"""`edm-ars trace`: the chain from a number of the paper to its artifact, the job that wrote it and that job's inputs,
on a small hand-made paper folder (numbers.json, sources.json, artifacts, verification.json, trace.json made by
writer.trace.paper_records, Snakemake records in .snakemake/metadata); and, end to end, for 20 numbers drawn from
each of two finished papers (the default paper and the STAR class-size study), each chain checked against the
artifacts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from edm_ars.cli import main
from edm_ars.run import trace as tr
from edm_ars.writer.trace import _metadata_file, paper_records

OUT = "output/paper"
RESULTS = "output/r/results.json"
REPORT = "output/r/data_report.json"
FRAME = "output/r/frame.parquet"

MACROS = [
    {"macro": "\\AucXgb", "value": "0.812", "raw": 0.8117, "source": "results.json:models.xgb.auc", "quoted": False},
    {"macro": "\\NRows", "value": "23{,}503", "raw": 23503, "source": "data_report.json:n_rows", "quoted": False},
    {"macro": "\\ShareOne", "value": "84.4\\%", "raw": 84.4,
     "source": "100 * data_report.json:class_balance.1", "quoted": False},
    {"macro": "\\AucGap", "value": "0.032", "raw": 0.032,
     "source": "|results.json:models.xgb.auc - results.json:models.lr.auc|", "quoted": False},
    {"macro": "\\NFolds", "value": "5", "raw": 5, "source": "results.json:n_folds", "quoted": False},
    {"macro": "\\AucLr", "value": "0.780", "raw": 0.78, "source": "results.json:models.lr.auc", "quoted": False},
    {"macro": "\\AucCi", "value": "95\\% CI [0.790, 0.834]", "raw": [0.7901, 0.8339],
     "source": "results.json:models.xgb.ci", "quoted": False},
    {"macro": "\\PValue", "value": "$<$0.001", "raw": 0.0003, "source": "results.json:p_value", "quoted": False},
]


def _num(line, text, value, decimals, macro, status, how, percent=False, section="RESULTS"):
    return {"line": line, "text": text, "value": value, "decimals": decimals, "percent": percent,
            "section": section, "macro": macro, "source": None, "status": status, "how": how, "exponent": 0}


VERIFICATION = {"counts": {}, "numbers": [
    _num(12, "0.812", 0.812, 3, "AucXgb", "matched", "results.json:models.xgb.auc", section="ABSTRACT"),
    _num(40, "0.812", 0.812, 3, "AucXgb", "matched", "results.json:models.xgb.auc"),
    _num(20, "23{,}503", 23503, 0, "NRows", "matched", "data_report.json:n_rows", section="METHODS"),
    _num(21, "84.4", 84.4, 1, "ShareOne", "matched", "100 * data_report.json:class_balance.1", percent=True,
         section="METHODS"),
    _num(41, "0.032", 0.032, 3, "AucGap", "matched", "|results.json:models.xgb.auc - results.json:models.lr.auc|"),
    _num(22, "5", 5, 0, "NFolds", "exempt", "small integer", section="METHODS"),
    _num(30, "2009", 2009, 0, None, "exempt", "year", section="METHODS"),
    _num(31, "0.555", 0.555, 3, None, "unmatched", "no artifact value equals 0.555 at 3 decimal(s)"),
    _num(32, "0.780", 0.78, 3, "AucLr", "matched", "results.json:models.lr.auc"),
    _num(42, "95", 95, 0, "AucCi", "exempt", "confidence level", percent=True),
    _num(42, "0.790", 0.79, 3, "AucCi", "matched", "results.json:models.xgb.ci"),
    _num(42, "0.834", 0.834, 3, "AucCi", "matched", "results.json:models.xgb.ci"),
    {**_num(33, "0.001", 0.001, 3, "PValue", "matched", "results.json:p_value"), "bound": True},
]}


def _record(workdir: Path, path: str, rule: str, inputs: list[str], params: list[str], script: str) -> None:
    meta = _metadata_file(workdir, path)
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({  # the fields of a real record (Snakemake 8, record_format_version 6)
        "rule": rule, "input": inputs, "log": [f"logs/{rule}.log"], "shellcmd": None, "params": params,
        "code": f'        "../scripts/{script}"\n', "record_format_version": 6, "starttime": 1.0, "endtime": 2.0,
        "incomplete": False, "external_jobid": None}))


@pytest.fixture
def paper(tmp_path, monkeypatch):
    """A written paper in tmp_path (the workflow's directory): two artifacts, the jobs that wrote them and the job
    before those, trace.json as the Writer writes it."""
    out = tmp_path / OUT
    out.mkdir(parents=True)
    (tmp_path / "output/r").mkdir(parents=True)
    (tmp_path / RESULTS).write_text(json.dumps({"models": {"xgb": {"auc": 0.8117, "ci": [0.7901, 0.8339]}, "lr": {"auc": 0.7801}},
                                                "n_folds": 5, "p_value": 0.0003}))
    (tmp_path / REPORT).write_text(json.dumps({"n_rows": 23503, "class_balance": {"0": 0.156, "1": 0.8441}}))
    (tmp_path / FRAME).write_bytes(b"PAR1")
    (out / "numbers.json").write_text(json.dumps({"macros": MACROS}))
    (out / "verification.json").write_text(json.dumps(VERIFICATION))
    (out / "provenance.json").write_text(json.dumps({"workflow": {"commit": "abc123def4567890", "short": "abc123def456",
                                                                  "modified": False}}))
    (out / "sources.json").write_text(json.dumps({"results.json": "../r/results.json",
                                                  "data_report.json": "../r/data_report.json",
                                                  "provenance.json": "provenance.json"}))
    _record(tmp_path, RESULTS, "fit_model", [FRAME, REPORT], ["'xgb'", "42"], "fit_model.py")
    _record(tmp_path, REPORT, "engineer", ["data/raw.csv"], [], "engineer.py")
    _record(tmp_path, FRAME, "engineer", ["data/raw.csv"], [], "engineer.py")
    records = paper_records(out, tmp_path)
    (out / "trace.json").write_text(json.dumps(records))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(capsys, *args):
    code = main(["trace", *args])
    return code, capsys.readouterr()


def _json(capsys, *args):
    code, out = _run(capsys, *args, "--json")
    return code, json.loads(out.out)


def test_a_number_as_printed_gives_the_whole_chain(paper, capsys):
    code, out = _run(capsys, "0.812")
    assert code == 0, out
    text = out.out
    assert "0.812: TRACED  \\AucXgb = 0.812" in text
    assert "paper.tex line 12 (ABSTRACT)" in text and "paper.tex line 40 (RESULTS)" in text
    assert "source    results.json:models.xgb.auc  (read directly)" in text
    assert "operand   results.json: output/r/results.json" in text
    assert "pointer /models/xgb/auc = 0.8117  agrees with the printed number" in text
    assert "rule      fit_model" in text and "script    scripts/fit_model.py" in text
    assert f"inputs    {FRAME}, {REPORT}" in text and "params    xgb; 42" in text and "log       logs/fit_model.log" in text
    assert "workflow  commit abc123def4567890" in text
    assert "engineer" not in text  # depth 1: the job that wrote the artifact only


def test_separators_and_percent_signs_are_read_as_printed(paper, capsys):
    code, answer = _json(capsys, "23,503")
    assert code == 0 and [r["macro"] for r in answer["results"]] == ["\\NRows"]
    assert answer["results"][0]["operands"][0]["value"] == 23503
    code, answer = _json(capsys, "84.4%")
    (r,) = answer["results"]
    assert code == 0 and r["macro"] == "\\ShareOne" and r["derived"] and r["agrees"]
    assert r["operands"][0]["pointer"] == "/class_balance/1" and r["operands"][0]["value"] == 0.8441
    assert r["source_value"] == [pytest.approx(84.41)]


def test_a_macro_with_or_without_backslash(paper, capsys):
    for name in ("AucXgb", "\\AucXgb"):
        code, answer = _json(capsys, "--macro", name)
        (r,) = answer["results"]
        assert code == 0 and r["status"] == "traced" and r["macro"] == "\\AucXgb"
        assert r["jobs"][0]["job"]["rule"] == "fit_model"
    assert answer["workflow"]["commit"] == "abc123def4567890" and answer["ok"] is True


def test_a_derived_number_names_its_operands(paper, capsys):
    code, out = _run(capsys, "--macro", "AucGap")
    assert code == 0
    assert "(derived)" in out.out and "value now 0.0316 (agrees with 0.032)" in out.out
    assert "pointer /models/xgb/auc = 0.8117" in out.out and "pointer /models/lr/auc = 0.7801" in out.out
    assert out.out.count("rule      fit_model") == 1  # one artifact, one job


def test_depth_two_follows_the_inputs_that_a_job_wrote(paper, capsys):
    code, answer = _json(capsys, "--macro", "AucXgb", "--depth", "2")
    job = answer["results"][0]["jobs"][0]["job"]
    assert code == 0 and job["rule"] == "fit_model"
    assert [(u["file"], u["rule"], u["script"], u["inputs"]) for u in job["upstream"]] == [
        (FRAME, "engineer", "scripts/engineer.py", ["data/raw.csv"]),
        (REPORT, "engineer", "scripts/engineer.py", ["data/raw.csv"])]
    code, out = _run(capsys, "--macro", "AucXgb", "--depth", "2")
    assert f"  input {FRAME}:" in out.out and "rule      engineer (wrote output/r/frame.parquet)" in out.out
    code, answer = _json(capsys, "--macro", "AucXgb")
    assert "upstream" not in answer["results"][0]["jobs"][0]["job"]


def test_exempt_not_found_and_unmatched_are_said_plainly(paper, capsys):
    code, out = _run(capsys, "2009")
    assert code == 1 and "2009: EXEMPT" in out.out and "exempt from verify-paper (year)" in out.out
    code, out = _run(capsys, "--macro", "NFolds")
    assert code == 1 and "EXEMPT" in out.out and "(small integer)" in out.out
    code, out = _run(capsys, "0.999")
    assert code == 1 and "0.999: NOT FOUND" in out.out and "no printed number 0.999" in out.out
    code, out = _run(capsys, "--macro", "NoSuchMacro")
    assert code == 1 and "NOT FOUND" in out.out and "no macro \\NoSuchMacro" in out.out
    code, out = _run(capsys, "0.555")
    assert code == 1 and "UNMATCHED" in out.out and "no artifact value equals 0.555" in out.out


def test_an_interval_is_checked_on_its_ends_and_its_level_is_exempt(paper, capsys):
    code, answer = _json(capsys, "--macro", "AucCi")
    (r,) = answer["results"]
    assert code == 0 and r["status"] == "traced" and r["printed"] == ["0.790", "0.834"]
    assert r["operands"][0]["value"] == [0.7901, 0.8339] and r["operands"][0]["agrees"] is True
    code, answer = _json(capsys, "95%")
    assert code == 1 and [(x["macro"], x["status"]) for x in answer["results"]] == [("\\AucCi", "exempt")]
    assert "confidence level" in answer["results"][0]["reason"]


def test_a_bound_holds_when_the_value_is_smaller(paper, capsys):
    code, answer = _json(capsys, "--macro", "PValue")
    (r,) = answer["results"]
    assert code == 0 and r["status"] == "traced" and r["operands"][0]["agrees"] is True
    (paper / RESULTS).write_text(json.dumps({"models": {}, "p_value": 0.004}))
    code, answer = _json(capsys, "--macro", "PValue")
    assert code == 1 and answer["results"][0]["status"] == "disagrees"


def test_a_value_changed_since_the_paper_was_written_is_reported(paper, capsys):
    (paper / RESULTS).write_text(json.dumps({"models": {"xgb": {"auc": 0.7}, "lr": {"auc": 0.7801}}, "n_folds": 5}))
    code, answer = _json(capsys, "0.812")
    (r,) = answer["results"]
    assert code == 1 and r["status"] == "disagrees" and r["operands"][0]["agrees"] is False
    assert "does not print as 0.812" in r["reason"]


def test_a_page_and_phrase_trace_the_numbers_of_that_sentence(paper, capsys, monkeypatch):
    pages = {}

    def fake_page(pdf, page):
        pages[page] = pdf
        return ("Intro text. The data hold 23,503 rows in 2009 [3, 4]; 84.4% are in class one. "
                "The boosted trees reach an AUC of 0.812. Nothing else.")

    monkeypatch.setattr(tr, "page_text", fake_page)
    code, answer = _json(capsys, "--page", "2", "--phrase", "data  hold")
    assert pages == {2: Path("output/paper.pdf")}
    assert [(r["query"], r["status"]) for r in answer["results"]] == [
        ("23,503", "traced"), ("2009", "exempt"), ("84.4%", "traced")]  # the citation [3, 4] is not a number
    assert answer["results"][0]["sentence"].startswith("The data hold")
    assert code == 1  # the year is not traced
    code, answer = _json(capsys, "--page", "2", "--phrase", "AUC of")
    assert code == 0 and [r["macro"] for r in answer["results"]] == ["\\AucXgb"]
    code, out = _run(capsys, "--page", "2", "--phrase", "not on the page")
    assert code == 1 and "is not on page 2" in out.out


def test_the_sentence_and_numbers_of_a_page():
    text = "First one. On 3,743 students the effect is 16.00 (95% CI [7.37, 24.63]). Krueger [6] said so."
    found = tr.sentence(text, "the effect")
    assert found == "On 3,743 students the effect is 16.00 (95% CI [7.37, 24.63])."
    assert tr.numbers_in(found) == ["3,743", "16.00", "95%", "7.37", "24.63"]
    assert tr.numbers_in("Krueger [6] and [1, 3] said so in Section 5.1") == ["5.1"]
    assert tr.sentence(text, "absent") is None


def test_a_missing_pdf_is_named(paper, capsys):
    code, out = _run(capsys, "--page", "1", "--phrase", "x")
    assert code == 2 and "output/paper.pdf: no PDF to read page 1 from" in out.err


def test_a_paper_without_trace_json_says_to_rerun_the_write_rule(paper, capsys):
    (paper / OUT / "trace.json").unlink()
    code, out = _run(capsys, "0.812")
    assert code == 2
    assert "output/paper/trace.json: no trace.json" in out.err and "-R write" in out.err and "-R causal_write" in out.err
    code, out = _run(capsys, "0.812", "--paper", "nowhere")
    assert code == 2 and "nowhere: no such paper folder" in out.err


def test_bad_usage_exits_2(paper, capsys):
    for args in ([], ["0.812", "--macro", "AucXgb"], ["--page", "1"], ["--phrase", "x"], ["--macro", "AucXgb",
                                                                                        "--depth", "0"],
                 ["abc"]):
        code, out = _run(capsys, *args)
        assert code == 2, args
        assert out.err.startswith("edm-ars: ") and out.out == ""
    with pytest.raises(SystemExit) as exc:
        main(["trace", "0.812", "--depth", "two"])
    assert exc.value.code == 2


def test_the_paper_folder_may_be_given_from_elsewhere(paper, capsys, monkeypatch, tmp_path_factory):
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    code, answer = _json(capsys, "0.812", "--paper", str(paper / OUT), "--depth", "2")
    (r,) = answer["results"]
    assert code == 0 and Path(answer["workdir"]) == paper
    assert r["operands"][0]["exists"] and len(r["jobs"][0]["job"]["upstream"]) == 2


# ---- end to end: 20 numbers of each of two finished papers --------------------------------------------------------
def _pointer_value(doc, pointer: str):
    """The value at an RFC 6901 pointer, read with json alone (no `*`: a pointer through a filter is skipped)."""
    node = doc
    for part in pointer.lstrip("/").split("/") if pointer else []:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _declared_rule(workdir: Path, path: str) -> str:
    """The rule Snakemake recorded for an output file, read straight from its metadata record."""
    return json.loads(_metadata_file(workdir, path).read_text())["rule"]


def _check_sample(workdir: Path, capsys, monkeypatch) -> int:
    monkeypatch.chdir(workdir)
    verification = json.loads((workdir / OUT / "verification.json").read_text())
    checked = sorted({n["macro"] for n in verification["numbers"] if n["status"] == "matched" and n["macro"]})
    sample = random.Random(38).sample(checked, min(20, len(checked)))
    assert len(sample) == 20, f"only {len(checked)} checked macros in {workdir}"
    texts = {n["macro"]: n["text"] for n in verification["numbers"] if n["status"] == "matched" and n["macro"]}
    form = {(n["macro"], n["text"]): (bool(n["percent"]), bool(n.get("bound")))  # how verify-paper read it
            for n in verification["numbers"] if n["macro"] and n["status"] == "matched"}
    direct = 0
    for i, macro in enumerate(sample):
        if i % 4 == 0:  # some by the printed number, the rest by the macro
            code, answer = _json(capsys, texts[macro].replace("{,}", ","))
            (r,) = [x for x in answer["results"] if x.get("macro") == "\\" + macro]
        else:
            code, answer = _json(capsys, "--macro", macro)
            (r,) = answer["results"]
        assert r["status"] == "traced" and r["agrees"], r
        assert answer["workflow"]["commit"]
        for op in r["operands"]:
            art = workdir / op["file"]
            assert art.exists(), op
            if not r["derived"] and "*" not in op["pointer"]:
                value = _pointer_value(json.loads(art.read_text()), op["pointer"])
                assert value == op["value"]
                if r["quoted"]:
                    assert all(t.replace("{,}", ",").lstrip("-") in str(value) for t in r["printed"]), r
                else:
                    values = [float(v) for v in (value if isinstance(value, list) else [value])]
                    assert all(tr.agrees(t, form[macro, t][0], values, bound=form[macro, t][1])
                               for t in r["printed"]), (r, value)
                direct += 1
        for j in r["jobs"]:
            assert j["job"] is not None, j
            assert j["job"]["rule"] == _declared_rule(workdir, j["file"])
            assert j["job"]["script"] and (Path(tr.__file__).parents[3] / j["job"]["script"]).exists()
    return direct


@pytest.mark.workflow
def test_twenty_numbers_of_the_default_paper_trace_to_their_artifacts(base_run, capsys, monkeypatch):
    workdir, _ = base_run
    assert _check_sample(workdir, capsys, monkeypatch) >= 10
