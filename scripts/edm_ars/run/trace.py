"""`edm-ars trace`: the chain from a number of the paper to where it comes from, read from the records the Writer
keeps next to the paper (output/paper/): trace.json (writer/trace.py `paper_records`: every macro's source, its
operands as JSON pointers, the job that wrote each artifact, the workflow's commit), verification.json
(verify-paper's report: each printed number with its line, section and status) and sources.json (the artifacts).

A number is asked for as printed (``0.812``, ``23,503``, ``84.4%``), by its macro (``PrimaryEst`` or
``\\PrimaryEst``) or by a page of the PDF and a phrase on it (the numbers printed in the sentence that holds the
phrase). For each match the chain is: the paper (line of paper.tex, section, verify-paper's status), the macro and
its printed value, the source (for a derived number the form and its operands), each operand's artifact file, JSON
pointer and the value there now (whether it agrees with the printed number at its printed precision), the job that
wrote the artifact (rule, script, inputs, parameters, log; Snakemake's record) and the commit; with ``depth`` > 1
the jobs that wrote that job's inputs, one level per step.

A number that is not traced says why: exempt (a year, a small integer, a confidence level: verify-paper's reason),
not found in the paper, printed but unmatched, or matched by verify-paper only as some artifact value (a number
written without a macro, so with no recorded source).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from edm_ars.core.errors import EdmArsError
from edm_ars.writer.sources import SourceError, source_values
from edm_ars.writer.trace import job_record, value_at

#: a number as printed in the PDF (thousands separators, a sign, a percent sign); citation brackets are dropped first
_PRINTED = re.compile(r"(?<![\w.])[-\u2212]?\d[\d,]*(?:\.\d+)?(?:\s?%)?")
_CITATION = re.compile(r"\[\d+(?:[,\u2013-]\s?\d+)*\]")
REWRITE = ("rerun the write rule to make it: snakemake output/paper.pdf -R write "
           "(a causal study: -R causal_write)")


class TraceError(EdmArsError):
    """A paper folder `edm-ars trace` cannot read, or a question it cannot take."""


# ---- the paper's records ----------------------------------------------------------------------------------------
def _load(path: Path, what: str) -> Any:
    if not path.exists():
        raise TraceError(f"{path}: no {path.name} ({what}): the paper was written before `edm-ars trace` existed "
                         f"or its folder is incomplete; {REWRITE}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise TraceError(f"{path}: not valid JSON ({exc}); {REWRITE}") from None


class Paper:
    """The records of one written paper: trace.json, verification.json, sources.json and the artifacts."""

    def __init__(self, paper_dir: str | Path) -> None:
        self.dir = Path(paper_dir)
        if not self.dir.is_dir():
            raise TraceError(f"{self.dir}: no such paper folder (give --paper DIR, default output/paper)")
        self.records = _load(self.dir / "trace.json", "the records of where the numbers come from")
        self.verification = _load(self.dir / "verification.json", "verify-paper's report")
        self.sources = _load(self.dir / "sources.json", "the artifacts the paper was written from")
        self.by_macro = {n["macro"].lstrip("\\"): n for n in self.records.get("numbers", [])}
        self.printed = self.verification.get("numbers") or []
        self.workdir = self._workdir()
        self.artifacts: dict[str, Any] = {}
        for name, rel in self.sources.items():
            try:
                self.artifacts[name] = json.loads((self.dir / rel).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.artifacts[name] = None

    def _workdir(self) -> Path:
        """The workflow's directory: trace.json names the artifacts relative to it, sources.json relative to the
        paper folder, so one artifact named both ways places it (else the current directory)."""
        for name, info in (self.records.get("artifacts") or {}).items():
            rel, where = self.sources.get(name), info.get("path")
            if not rel or not where:
                continue
            full = os.path.normpath(os.path.join(os.path.abspath(self.dir), rel))
            tail = os.path.normpath(where)
            if full.endswith(os.sep + tail):
                return Path(full[: -len(tail) - 1] or os.sep)
        return Path.cwd()

    def where(self, macro: str) -> list[dict[str, Any]]:
        return [n for n in self.printed if (n.get("macro") or "") == macro]


# ---- agreement at the printed precision -------------------------------------------------------------------------
def clean_number(text: str) -> str:
    """A printed number without separators, LaTeX or a percent sign ("3{,}743" and "3,743" -> "3743")."""
    t = str(text).replace("{,}", "").replace("\\,", "").replace("$-$", "-").replace("\u2212", "-")
    return re.sub(r"[,\s$%]|\\%", "", t)


def agrees(text: str, percent: bool, values: list[float], bound: bool = False) -> bool:
    """Whether one of `values` prints as `text` (half a unit of its last digit; a percentage may be a share; a
    bound, "<0.001", holds when the value is smaller)."""
    digits = clean_number(text)
    try:
        printed = float(digits)
    except ValueError:
        return False
    decimals = len(digits.partition(".")[2])
    tol = 0.5 * 10 ** -decimals + 1e-9
    for v in values:
        for c in (v, v * 100) if percent else (v,):
            if abs(c - printed) <= tol or (bound and abs(c) < abs(printed) + 1e-12):
                return True
    return False


def _quoted_agrees(text: str, value: Any) -> bool:
    digits = str(text).lstrip("-").replace("{,}", ",")
    return isinstance(value, str) and (digits in value or digits.replace(",", "") in value.replace(",", ""))


# ---- one chain --------------------------------------------------------------------------------------------------
def _job(paper: Paper, job: dict[str, Any] | None, depth: int, seen: set[str]) -> dict[str, Any] | None:
    if not job:
        return None
    out = {k: job.get(k) for k in ("file", "rule", "script", "inputs", "params", "log")}
    if depth > 1:
        upstream = []
        for path in job.get("inputs") or []:
            rel = os.path.normpath(path)
            if rel in seen:
                continue
            seen.add(rel)
            sub = job_record(rel, paper.workdir)
            if sub is not None:
                upstream.append(_job(paper, sub, depth - 1, seen))
        out["upstream"] = upstream
    return out


def chain(paper: Paper, macro: str, depth: int = 1, texts: list[str] | None = None) -> dict[str, Any]:
    """The chain of one macro (name without backslash): where the paper prints it, its source and operands with
    their values now, the jobs that wrote the artifacts. `texts` are the printed numbers asked about (default:
    those verify-paper found for the macro, else the numbers of its value)."""
    rec = paper.by_macro[macro]
    where = paper.where(macro)
    if texts is None:  # the numbers verify-paper checked (an interval's "95" is exempt), else all it found
        texts = ([w["text"] for w in where if w["status"] != "exempt"] or [w["text"] for w in where]
                 or re.findall(r"-?\d[\d,]*(?:\.\d+)?", clean_sep(rec["value"])))
    texts = list(dict.fromkeys(texts))
    # how each number is printed: a percentage, a bound ("<0.001"); from verify-paper, else from the value
    form = {t: ("\\%" in str(rec["value"]), "<" in str(rec["value"])) for t in texts}
    for w in where:
        if w["text"] in form:
            form[w["text"]] = (bool(w.get("percent")), bool(w.get("bound")))

    def holds(values: list[float]) -> bool:
        return all(agrees(t, form[t][0], values, form[t][1]) for t in texts)

    try:
        now: list[float] | None = source_values(rec["source"], paper.artifacts)
        why_not = None
    except SourceError as exc:
        now, why_not = None, str(exc)
    operands = []
    for op in rec.get("operands") or []:
        info = (paper.records.get("artifacts") or {}).get(op["artifact"]) or {}
        path = info.get("path") or paper.sources.get(op["artifact"])
        exists = bool(path) and (paper.workdir / path).exists()
        try:
            value = value_at(paper.records, paper.dir, op) if exists else None
        except (OSError, ValueError):
            value = None
        entry = {"artifact": op["artifact"], "file": path, "exists": exists, "path": op["path"],
                 "pointer": op["pointer"], "value": value, "agrees": None}
        if not rec.get("derived"):
            if rec.get("quoted") and isinstance(value, str):
                entry["agrees"] = all(_quoted_agrees(t, value) for t in texts)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                entry["agrees"] = holds([float(value)])
            elif isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
                entry["agrees"] = holds([float(v) for v in value])
        operands.append(entry)
    if rec.get("quoted") and operands and operands[0]["agrees"]:
        ok = True
    elif now is not None:
        ok = holds(now)
    else:
        ok = False
    seen: set[str] = set()
    jobs = []
    for name in dict.fromkeys(op["artifact"] for op in operands):
        info = (paper.records.get("artifacts") or {}).get(name) or {}
        jobs.append({"artifact": name, "file": info.get("path"),
                     "job": _job(paper, info.get("job"), depth, seen)})
    return {"macro": "\\" + macro, "value": rec["value"], "raw": rec.get("raw"), "source": rec["source"],
            "derived": bool(rec.get("derived")), "quoted": bool(rec.get("quoted")), "checked": bool(rec.get("checked")),
            "target": rec.get("target"), "printed": texts,
            "where": _where(where),
            "operands": operands, "source_value": now, "source_error": why_not, "agrees": ok, "jobs": jobs}


def clean_sep(value: str) -> str:
    return str(value).replace("{,}", ",").replace("$-$", "-").replace("\\,", "")


def _where(where: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """verify-paper's entries of a number, one per line, text and status."""
    out = {(w.get("line"), w.get("text"), w.get("status")): {k: w.get(k) for k in ("line", "section", "text", "status", "how")}
           for w in where}
    return list(out.values())


def _status(where: list[dict[str, Any]]) -> tuple[str, str]:
    """traced / exempt / unmatched / not printed, from verify-paper's statuses of a macro's printed numbers."""
    if not where:
        return "not printed", "the macro is defined in numbers.tex but paper.tex does not print it"
    statuses = {w["status"] for w in where}
    if "unmatched" in statuses:
        how = next(w["how"] for w in where if w["status"] == "unmatched")
        return "unmatched", f"printed but unmatched by verify-paper: {how}"
    if "matched" in statuses:
        return "traced", ""
    hows = sorted({w["how"] for w in where})
    return "exempt", "exempt from verify-paper (" + ", ".join(hows) + "): not checked against an artifact"


# ---- the three questions ----------------------------------------------------------------------------------------
def by_macro(paper: Paper, name: str, depth: int = 1) -> list[dict[str, Any]]:
    macro = name.strip().lstrip("\\")
    if macro not in paper.by_macro:
        return [{"query": name, "status": "not found",
                 "reason": f"no macro \\{macro} in {paper.dir / 'trace.json'} (the paper's numbers.json)"}]
    result = chain(paper, macro, depth)
    status, reason = _status(result["where"])
    if status == "traced" and not result["agrees"]:
        status, reason = "disagrees", _disagreement(result)
    return [{"query": name, "status": status, "reason": reason, **result}]


def _disagreement(result: dict[str, Any]) -> str:
    now = result["source_value"]
    return (f"the artifacts now give {result['source']} = "
            + (", ".join(f"{v:.6g}" for v in now) if now is not None else f"no value ({result['source_error']})")
            + f", which does not print as {', '.join(result['printed'])}: the artifacts changed after the paper "
            "was written")


def by_number(paper: Paper, text: str, depth: int = 1) -> list[dict[str, Any]]:
    """Every printed number that reads as `text` ("23,503", "84.4%", "-0.3"), one result per macro (or literal)."""
    wanted = clean_number(text)
    percent = "%" in text
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", wanted):
        raise TraceError(f"{text!r} is not a number as printed (e.g. 0.812, 23,503, 84.4%)")
    hits = [n for n in paper.printed if clean_number(n["text"]) == wanted and (n.get("percent") or not percent)]
    if not hits:
        return [{"query": text, "status": "not found",
                 "reason": f"no printed number {text} in {paper.dir / 'paper.tex'} (verify-paper's report lists "
                           f"{len(paper.printed)} printed numbers)"}]
    groups: dict[str, list[dict[str, Any]]] = {}
    for n in hits:
        groups.setdefault(n.get("macro") or f"literal:{n['status']}:{n['how']}", []).append(n)
    out = []
    for key, where in groups.items():
        if key.startswith("literal:"):
            w = where[0]
            base = {"query": text, "macro": None, "printed": [w["text"]],
                    "where": _where(where)}
            if w["status"] == "exempt":
                out.append({**base, "status": "exempt",
                            "reason": f"exempt from verify-paper ({w['how']}): not checked against an artifact"})
            elif w["status"] == "unmatched":
                out.append({**base, "status": "unmatched", "reason": f"printed but unmatched: {w['how']}"})
            else:
                out.append({**base, "status": "untraced",
                            "reason": f"verify-paper matched it as {w['how']}, but it is written without a macro, so "
                                      "no source was recorded for it"})
            continue
        if key not in paper.by_macro:
            out.append({"query": text, "status": "not found", "macro": "\\" + key,
                        "reason": f"verify-paper names macro \\{key} but {paper.dir / 'trace.json'} has no record "
                                  f"of it; {REWRITE}"})
            continue
        result = chain(paper, key, depth, texts=[w["text"] for w in where])
        status, reason = _status(where)
        if status == "traced" and not result["agrees"]:
            status, reason = "disagrees", _disagreement(result)
        result["where"] = _where(where)
        out.append({"query": text, "status": status, "reason": reason, **result})
    return out


def page_text(pdf: Path, page: int) -> str:
    """The text of one page of the PDF in reading order (pdftotext), its lines joined."""
    if not pdf.exists():
        raise TraceError(f"{pdf}: no PDF to read page {page} from (the paper's PDF is output/paper.pdf)")
    try:
        done = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), str(pdf), "-"],
                              capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise TraceError("pdftotext is not installed (poppler-utils); trace by number or --macro instead") from None
    if done.returncode != 0:
        raise TraceError(f"pdftotext could not read page {page} of {pdf}: {done.stderr.strip()}")
    return re.sub(r"\s+", " ", done.stdout.replace("\f", " ")).strip()


def sentence(text: str, phrase: str) -> str | None:
    """The sentence of `text` that holds `phrase` (case and spacing ignored; it may span sentences)."""
    norm = re.sub(r"\s+", " ", phrase).strip()
    m = re.search(re.escape(norm), text, re.I)
    if not m or not norm:
        return None
    ends = [e.end() for e in re.finditer(r"[.!?]\)?\s+(?=[A-Z(\[])", text)]
    start = max([e for e in ends if e <= m.start()], default=0)
    stop = min([e for e in ends if e >= m.end()], default=len(text))
    return text[start:stop].strip()


def numbers_in(text: str) -> list[str]:
    """The numbers printed in a piece of the PDF's text (citation numbers left out)."""
    return [n.replace(" ", "") for n in _PRINTED.findall(_CITATION.sub(" ", text))]


def by_phrase(paper: Paper, pdf: Path, page: int, phrase: str, depth: int = 1) -> list[dict[str, Any]]:
    text = page_text(pdf, page)
    found = sentence(text, phrase)
    if found is None:
        return [{"query": f"page {page}: {phrase}", "status": "not found",
                 "reason": f"the phrase {phrase!r} is not on page {page} of {pdf}"}]
    numbers = numbers_in(found)
    if not numbers:
        return [{"query": f"page {page}: {phrase}", "status": "not found", "sentence": found,
                 "reason": f"the sentence on page {page} that holds {phrase!r} prints no number"}]
    out = []
    for n in dict.fromkeys(numbers):
        for r in by_number(paper, n, depth):
            out.append({**r, "sentence": found})
    return out


# ---- printing ---------------------------------------------------------------------------------------------------
def _short(value: Any, width: int = 100) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _job_lines(job: dict[str, Any], indent: str, top: bool) -> list[str]:
    lines = [f"{indent}rule      {job['rule']}" + (f" (wrote {job['file']})" if not top else "")]
    if job.get("script"):
        lines.append(f"{indent}script    {job['script']}")
    inputs = job.get("inputs") or []
    lines.append(f"{indent}inputs    " + (", ".join(inputs) if inputs else "none"))
    if top:
        params = [p for p in job.get("params") or [] if p not in ("None", "''", "")]
        lines.append(f"{indent}params    " + ("; ".join(_short(p, 80).strip("'\"") for p in params) if params
                                              else "none"))
        if job.get("log"):
            lines.append(f"{indent}log       {', '.join(job['log'])}")
    for sub in job.get("upstream") or []:
        lines.append(f"{indent}  input {sub['file']}:")
        lines += _job_lines(sub, indent + "    ", False)
    return lines


def render(result: dict[str, Any], workflow: dict[str, Any] | None = None) -> str:
    head = f"{result['query']}: {result['status'].upper()}"
    if result.get("macro"):
        head += f"  {result['macro']} = {result.get('value') or ', '.join(result.get('printed') or [])}"
    lines = [head]
    if result.get("reason"):
        lines.append(f"  {result['reason']}")
    if result.get("sentence"):
        lines.append(f"  sentence  {_short(result['sentence'], 160)}")
    for w in result.get("where") or []:
        lines.append(f"  paper     paper.tex line {w['line']} ({w['section']}): {clean_sep(w['text'])}, verify-paper "
                     f"{w['status']}" + (f" ({w['how']})" if w.get("how") else ""))
    if "source" not in result:
        return "\n".join(lines)
    kind = "derived" if result["derived"] else "quoted from a text" if result["quoted"] else "read directly"
    lines.append(f"  source    {result['source']}  ({kind})")
    if result["derived"] and result["source_value"] is not None:
        lines.append(f"  value now {', '.join(f'{v:.6g}' for v in result['source_value'])}"
                     f" ({'agrees with' if result['agrees'] else 'DOES NOT agree with'} "
                     f"{', '.join(result['printed'])})")
    for op in result["operands"]:
        lines.append(f"  operand   {op['artifact']}: {op['file']}" + ("" if op["exists"] else "  (MISSING)"))
        agree = ("" if op["agrees"] is None else "  agrees with the printed number" if op["agrees"]
                 else "  DOES NOT agree with the printed number")
        lines.append(f"            pointer {op['pointer'] or '(the text)'} = {_short(op['value'])}{agree}")
    for j in result["jobs"]:
        if j["job"] is None:
            lines.append(f"  job       {j['artifact']}: no Snakemake record of the job that wrote {j['file']}")
            continue
        lines.append(f"  job       {j['artifact']} was written by")
        lines += _job_lines(j["job"], "            ", True)
    if workflow and workflow.get("commit"):
        lines.append(f"  workflow  commit {workflow['commit']}" + (" (with uncommitted changes)"
                                                                  if workflow.get("modified") else ""))
    return "\n".join(lines)


def trace(paper_dir: str | Path, *, number: str | None = None, macro: str | None = None, page: int | None = None,
          phrase: str | None = None, depth: int = 1, pdf: str | Path | None = None) -> dict[str, Any]:
    """Answer one question about a paper: {"paper", "workflow", "results": [...], "ok"} (ok: everything asked
    for was traced)."""
    asked = [x for x in (number is not None, macro is not None, page is not None or phrase is not None) if x]
    if len(asked) != 1:
        raise TraceError("ask for one thing: a NUMBER as printed, --macro NAME, or --page P with --phrase TEXT")
    if (page is None) != (phrase is None):
        raise TraceError("--page and --phrase go together: the phrase is looked for on that page of the PDF")
    if depth < 1:
        raise TraceError(f"--depth {depth}: give 1 (the job that wrote the artifact) or more")
    paper = Paper(paper_dir)
    if number is not None:
        results = by_number(paper, number, depth)
    elif macro is not None:
        results = by_macro(paper, macro, depth)
    else:
        pdf_path = Path(pdf) if pdf else paper.dir.parent / "paper.pdf"
        results = by_phrase(paper, pdf_path, int(page), str(phrase), depth)  # type: ignore[arg-type]
    return {"paper": str(paper.dir), "workdir": str(paper.workdir), "workflow": paper.records.get("workflow") or {},
            "results": results, "ok": all(r["status"] == "traced" for r in results)}


def render_all(answer: dict[str, Any]) -> str:
    return "\n\n".join(render(r, answer["workflow"]) for r in answer["results"])
