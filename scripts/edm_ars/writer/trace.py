"""Where the paper's numbers come from: the record of every checked number, from the same records `verify-paper`
uses (numbers.json: each macro's source; sources.json: the artifacts the paper was written from), with

- the operands of its source: the artifact and the field, as a JSON pointer (RFC 6901; ``*`` where a filter of
  the source takes several items), and for a derived number (a difference, a ratio, a percentage, a count) the
  form that combines them;
- the job that wrote each artifact: Snakemake's own record of it (``.snakemake/metadata``): the rule, the input
  files, the parameters and the script, and the workflow's commit from provenance.json.

`paper_records` builds them; `sources_tex` writes the paper's appendix "Where the numbers come from" (one entry
per artifact with its job, and one line per group of fields, each a link target), and `link_macros` rewrites
numbers.tex so that every checked number is a link to its line. `edm-ars trace` reads the same records
(trace.json). A number printed without a decimal that is a year or a small integer is exempt in verify-paper and
is not linked.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from edm_ars.core.texescape import escape_latex
from edm_ars.writer.sources import _PATH, SourceError, _step, _tokens, resolve

#: the macro that makes a number a link (defined at the top of numbers.tex; plain text in PDF strings)
LINK_MACRO = "\\srclink"
LINK_DEF = ("\\providecommand{\\srclink}{}\\DeclareRobustCommand{\\srclink}[2]{\\hyperlink{#1}{#2}}"
            "\\pdfstringdefDisableCommands{\\def\\srclink#1#2{#2}}")  # robust in captions, plain in PDF strings
_NUMBER = re.compile(r"-?\d[\d{},]*(?:\.\d+)?")
SMALL_INT = 100


# ---- sources and pointers ---------------------------------------------------------------------------------------
def operands(source: str) -> list[tuple[str, str]]:
    """The (artifact, dotted path) operands of a macro's source, in order; a number quoted from an artifact's text
    ("quoted from provenance.json") has the artifact and an empty path."""
    pieces = re.split(r" [-+/*&] ", source or "")  # the operators of a sum or difference (a key holds none)
    found = [(m.group("file"), m.group("path").strip()) for piece in pieces for m in _PATH.finditer(piece)]
    if not found:
        m = re.search(r"([A-Za-z_]+\.json)", source or "")
        if m:
            found = [(m.group(1), "")]
    return found


def derived(source: str) -> bool:
    """Whether a source combines or transforms its operands (anything but one bare path)."""
    ops = operands(source)
    if len(ops) != 1:
        return True
    file, path = ops[0]
    return (source or "").strip() != f"{file}:{path}"


def pointer(artifact: Any, path: str) -> str:
    """The JSON pointer of a dotted path in one artifact (a key that holds dots is found as verify-paper finds it;
    a filter becomes ``*``); the path as written when the artifact does not hold it."""
    if not path:
        return ""
    try:
        tokens = _tokens(path)
    except SourceError:
        return "/" + path.replace(".", "/")
    parts: list[str] = []
    node: Any = artifact
    keys: list[str] = []

    def flush() -> None:
        nonlocal node, keys
        while keys:
            try:
                child, used = _step(node, keys) if node is not None else (None, 1)
            except KeyError:
                child, used = None, 1
            parts.append(".".join(keys[:used]))
            node, keys = child, keys[used:]

    for kind, text in tokens:
        if kind == "key":
            keys.append(text)
            continue
        flush()
        parts.append("*")
        node = None  # after a filter the pointer names every item kept
    flush()
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def group_pointer(ptr: str) -> str:
    """A pointer with its list indices as ``*`` (the rows of one table share a line of the appendix)."""
    return re.sub(r"/\d+(?=/|$)", "/*", ptr)


def anchor(*parts: str) -> str:
    return "src:" + hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:10]


# ---- the jobs that wrote the artifacts --------------------------------------------------------------------------
def _metadata_file(workdir: Path, path: str) -> Path:
    """Snakemake's metadata record of an output file (its name is the path, base64-encoded, in folders of at most
    255 characters)."""
    name = base64.urlsafe_b64encode(path.encode()).decode()
    chunks = [name[i:i + 255] for i in range(0, len(name), 255)] or [name]
    return Path(workdir, ".snakemake", "metadata", *chunks)


#: the workflow's own folder (the repository): its files are named from there in the records, so a project moved or
#: copied elsewhere gives the same records
WORKFLOW_ROOT = Path(__file__).resolve().parents[3]


def _portable(path: str, workdir: Path) -> str:
    """A job's input as the records name it: a file of the workflow (registry, config, prompts) as
    ``workflow:<path in the repository>``, any other path as Snakemake recorded it (relative to the project)."""
    full = Path(os.path.normpath(Path(workdir).resolve() / path))
    try:
        return "workflow:" + str(full.relative_to(WORKFLOW_ROOT))
    except ValueError:
        return path


def _listed(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str) and value.startswith("["):
        return re.findall(r"'([^']*)'", value)
    return [str(value)] if value else []


def job_record(path: str | Path, workdir: str | Path = ".") -> dict[str, Any] | None:
    """The job that wrote an output file, from Snakemake's record of it: rule, inputs, parameters, log and script
    (not when it ran: two runs of the same inputs give the same paper, byte for byte); None when Snakemake kept no
    record (a file made outside the workflow)."""
    rel = os.path.relpath(path, workdir) if os.path.isabs(str(path)) else os.path.normpath(str(path))
    meta = _metadata_file(Path(workdir), rel)
    try:
        record = json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
    code = str(record.get("code") or "")
    script = re.search(r"[\"']([^\"']+\.py)[\"']", code)
    return {"file": rel, "rule": record.get("rule"),
            "inputs": [_portable(i, Path(workdir)) for i in _listed(record.get("input"))],
            "params": _listed(record.get("params")), "log": _listed(record.get("log")),
            "script": os.path.normpath(script.group(1).replace("../", "", 1)) if script else None}


# ---- the records of one paper -----------------------------------------------------------------------------------
def printed_numbers(value: str) -> list[str]:
    """The numbers a macro's printed value holds (LaTeX thousands separators read as they print)."""
    text = str(value).replace("{,}", ",").replace("\\,", "")
    return [m.group(0) for m in _NUMBER.finditer(text)]


def exempt(text: str, percent: bool = False) -> bool:
    """A printed number verify-paper does not reconcile: a year or a small integer printed without decimals."""
    clean = text.replace(",", "").replace("{", "").replace("}", "")
    if "." in clean or percent:
        return False
    try:
        v = int(clean)
    except ValueError:
        return False
    return 1900 <= v <= 2100 or abs(v) <= SMALL_INT


def checked(value: str) -> bool:
    """Whether a macro's printed value holds a number verify-paper checks (so the macro becomes a link)."""
    percent = "\\%" in str(value) or "percent" in str(value)
    return any(not exempt(n, percent) for n in printed_numbers(value))


def paper_records(out_dir: str | Path, workdir: str | Path = ".",
                  checked_macros: set[str] | None = None) -> dict[str, Any]:
    """Every macro of the paper with its printed value, source, operands (artifact, dotted path, JSON pointer) and
    link target; every artifact with the job that wrote it; the workflow's commit. Read from numbers.json and
    sources.json in `out_dir` (the records verify-paper uses) and the artifacts they name. `checked_macros`: the
    macros whose printed numbers verify-paper checked (its report); without it, judged from the printed value."""
    out = Path(out_dir)
    macros = json.loads((out / "numbers.json").read_text())["macros"]
    sources = json.loads((out / "sources.json").read_text())
    arts: dict[str, Any] = {}
    for name, rel in sources.items():
        try:
            arts[name] = json.loads((out / rel).read_text())
        except (OSError, ValueError):
            arts[name] = None
    numbers = []
    for m in macros:
        source = str(m.get("source") or "")
        ops = []
        for file, path in operands(source):
            ptr = pointer(arts.get(file), path) if path else ""
            ops.append({"artifact": file, "path": path, "pointer": ptr, "group": group_pointer(ptr)})
        is_derived = derived(source)
        target = (anchor("derived", source) if is_derived else
                  anchor(ops[0]["artifact"], ops[0]["group"]) if ops else None)
        numbers.append({"macro": m["macro"], "value": m["value"], "raw": m.get("raw"), "source": source,
                        "quoted": bool(m.get("quoted")), "operands": ops, "derived": is_derived,
                        "checked": bool(ops) and (m["macro"].lstrip("\\") in checked_macros
                                                  if checked_macros is not None else checked(str(m["value"]))),
                        "target": target})
    provenance = arts.get("provenance.json") or {}
    workflow = provenance.get("workflow") or {}
    artifacts = {}
    for name, rel in sources.items():
        path = os.path.normpath(os.path.join(os.path.relpath(out, workdir), rel))
        artifacts[name] = {"path": path, "job": job_record(path, workdir)}
    return {"numbers": numbers, "artifacts": artifacts,
            "workflow": {"commit": workflow.get("commit"), "short": workflow.get("short"),
                         "modified": workflow.get("modified")}}


# ---- the paper's links and appendix -----------------------------------------------------------------------------
def link_macros(numbers_tex: str, records: dict[str, Any]) -> str:
    """numbers.tex with every checked macro's value wrapped in a link to its appendix line."""
    target = {n["macro"].lstrip("\\"): n["target"] for n in records["numbers"] if n["checked"] and n["target"]}
    out = [numbers_tex.splitlines()[0], LINK_DEF] if numbers_tex else [LINK_DEF]
    for line in numbers_tex.splitlines()[1:]:
        head, sep, comment = line.partition(" % ")
        m = re.fullmatch(r"\\newcommand\{\\([A-Za-z]+)\}\{(.*)\}", head)
        if m and m.group(1) in target:
            line = (f"\\newcommand{{\\{m.group(1)}}}{{{LINK_MACRO}{{{target[m.group(1)]}}}{{{m.group(2)}}}}}"
                    + sep + comment)
        out.append(line)
    return "\n".join(out) + "\n"


def _tt(text: str) -> str:
    return "\\texttt{" + escape_latex(text).replace("/", "/\\allowbreak{}") + "}"


def sources_tex(records: dict[str, Any]) -> str:
    """The appendix "Where the numbers come from": per artifact, the job that wrote it (rule, inputs, parameters,
    script, commit) and one line per group of fields (a link target) with how many numbers it gives; then the
    derived numbers with their operands. Each target appears once."""
    checked_numbers = [n for n in records["numbers"] if n["checked"] and n["target"]]
    if not checked_numbers:
        return ""
    wf = records.get("workflow") or {}
    commit = wf.get("short") or (wf.get("commit") or "")[:12]
    lines = ["\\section{Where the numbers come from}\\label{sec:number-sources}",
             "{\\scriptsize\\raggedright",
             "Every number checked against the run's artifacts is a link to its line below: the artifact, the field "
             "(a JSON pointer; \\texttt{*} stands for the items of a list or a filter), the rule and job that wrote "
             "it, their inputs and parameters, and the script"
             + (f" at commit {_tt(commit)}" if commit else "") + ". \\texttt{edm-ars trace} prints the same "
             "chain for one number.\\par"]
    by_artifact: dict[str, dict[str, int]] = {}
    derived_numbers = []
    for n in checked_numbers:
        if n["derived"]:
            derived_numbers.append(n)
            continue
        op = n["operands"][0]
        groups = by_artifact.setdefault(op["artifact"], {})
        groups[op["group"]] = groups.get(op["group"], 0) + 1
    for art in sorted(by_artifact):  # (no counts: every number the paper prints is one it verifies)
        info = records["artifacts"].get(art) or {}
        job = info.get("job")
        head = f"\\smallskip\\noindent\\textbf{{{escape_latex(art)}}} ({_tt(info.get('path') or art)})"
        if job:
            inputs = job.get("inputs") or []
            shown = ", ".join(_tt(os.path.basename(i)) for i in inputs[:6]) + (" and others" if len(inputs) > 6 else "")
            params = [p for p in job.get("params") or [] if p not in ("None", "")]
            head += (f": rule \\texttt{{{escape_latex(str(job['rule']))}}}"
                     + (f", script {_tt(job['script'])}" if job.get("script") else "")
                     + (f"; inputs {shown}" if inputs else "")
                     + ("; with the rule's parameters" if params else "; no parameters") + ".")
        else:
            head += ": no Snakemake record of the job that wrote it."
        lines.append(head + "\\par")
        parents: dict[str, list[str]] = {}
        for group in sorted(by_artifact[art]):  # one line per parent object, each field its own link target
            parent, _, leaf = group.rpartition("/")
            parents.setdefault(parent, []).append(group)
        for parent, groups in parents.items():
            leaves = ", ".join(f"\\hypertarget{{{anchor(art, g)}}}{{}}{_tt(g.rpartition('/')[2] or '(text)')}"
                               for g in groups)
            lines.append(f"{_tt(parent + '/')}\\{{{leaves}\\}}\\par" if parent or len(groups) > 1
                         else f"{leaves}\\par")
    if derived_numbers:
        lines.append("\\smallskip\\noindent\\textbf{Derived numbers} (a difference, ratio, percentage or count of "
                     "the fields named):\\par")
        seen = set()
        for n in derived_numbers:
            if n["target"] in seen:
                continue
            seen.add(n["target"])
            ops = "; ".join(f"{escape_latex(o['artifact'])} {_tt(o['pointer'] or '(text)')}" for o in n["operands"])
            form = re.sub(r"[A-Za-z_]+\.json:[^|()\[\] ]+(?:\[[^\]]*\][^|()\[\] ]*)*", "x", n["source"])
            lines.append(f"\\hypertarget{{{n['target']}}}{{}}{_tt(form)}: {ops}\\par")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_links(out_dir: str | Path, workdir: str | Path = ".", report: Any = None) -> dict[str, Any]:
    """The paper's records (trace.json), the appendix (sources.tex) and numbers.tex with its links, in out_dir.
    `report`: verify-paper's report of the paper, whose checked numbers (matched or unmatched) become the links."""
    from edm_ars.core.artifacts import atomic_write_text

    out = Path(out_dir)
    macros = None if report is None else {
        (n.macro or "").lstrip("\\") for n in report.numbers if n.status in ("matched", "unmatched") and n.macro}
    records = paper_records(out, workdir, macros)
    atomic_write_text(out / "trace.json", json.dumps(records, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out / "sources.tex", sources_tex(records))
    tex = out / "numbers.tex"
    atomic_write_text(tex, link_macros(tex.read_text(encoding="utf-8"), records))
    return records


def value_at(records: dict[str, Any], out_dir: str | Path, operand: dict[str, Any]) -> Any:
    """The value an operand names, read from its artifact (for `edm-ars trace`)."""
    rel = json.loads((Path(out_dir) / "sources.json").read_text()).get(operand["artifact"])
    if not rel or not operand.get("path"):
        return None
    data = {operand["artifact"]: json.loads((Path(out_dir) / rel).read_text())}
    try:
        return resolve(data, operand["artifact"], operand["path"])[0]
    except (KeyError, SourceError):
        return None
