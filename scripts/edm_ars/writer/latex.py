"""Compiling a paper with latexmk, and reading its log for errors and undefined citations or references."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_copy
from edm_ars.core.errors import EdmArsError


class LatexError(EdmArsError):
    """latexmk failed, or the PDF has undefined citations or references."""


# ---- compiling ---------------------------------------------------------------------------
_UNDEFINED = re.compile(r"(?:LaTeX|Package natbib) Warning: (Citation|Reference) [`'](.+?)' "
                        r"(?:on page \S+ )?undefined")


_FILE_LINE_ERROR = re.compile(r"^\S+\.(?:tex|sty|cls|bbl|aux):\d+: ")


def latex_errors(log_text: str) -> list[str]:
    """The error lines of a LaTeX log: each '!' line, its followers up to the 'l.<n>' line."""
    lines = log_text.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("!") or _FILE_LINE_ERROR.match(lines[i]):
            block = [lines[i]]
            j = i + 1
            while j < len(lines) and j <= i + 12:
                if re.match(r"^l\.\d+", lines[j]):
                    block.append(lines[j])
                    break
                j += 1
            found.append("\n".join(block))
            i = j
        i += 1
    return found


def undefined_refs(log_text: str) -> list[str]:
    """'Citation `key' undefined' / 'Reference `label' undefined' warnings of a LaTeX log."""
    seen: list[str] = []
    for kind, key in _UNDEFINED.findall(log_text):
        item = f"{kind} `{key}' undefined"
        if item not in seen:
            seen.append(item)
    return seen


_OVERFULL = re.compile(r"^Overfull \\[hv]box \((?P<pt>[\d.]+)pt too (?:wide|high)\) (?P<where>.*?lines? (?P<lines>[\d-]+))",
                       re.M)


def overfull_boxes(log_text: str, max_pt: float) -> list[str]:
    """Overfull boxes of a LaTeX log wider than `max_pt`, with the source lines LaTeX names."""
    return [f"overfull box {m.group('pt')}pt too wide {m.group('where')}" for m in _OVERFULL.finditer(log_text)
            if float(m.group("pt")) > max_pt]


def pdf_text_problems(pdf: Path) -> list[str]:
    """'??' (an unresolved reference) in the PDF's text, when pdftotext is installed."""
    if shutil.which("pdftotext") is None:
        return []
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, errors="replace").stdout
    return [f"'??' in the PDF text: ...{text[max(0, i - 40):i + 2]!r}" for i in
            [m.start() for m in re.finditer(r"\?\?", text)][:5]]


# What a LaTeX run leaves beside its source; never copied into a build folder, so no earlier run's state is read.
_BUILD_PRODUCTS = ("*.aux", "*.bbl", "*.blg", "*.fdb_latexmk", "*.fls", "*.log", "*.out", "*.synctex.gz", "*.pdf",
                   ".*.tmp")


def _top_level_build_products(source: Path) -> Any:
    """A copytree `ignore` that leaves out earlier builds' products beside the source (figures' PDFs are kept)."""
    products = shutil.ignore_patterns(*_BUILD_PRODUCTS)

    def ignore(folder: str, names: list[str]) -> set[str]:
        return products(folder, names) if Path(folder) == source else set()

    return ignore


#: The PDF's date when neither SOURCE_DATE_EPOCH nor a commit time is given: 1980-01-01, the reproducible-builds
#: convention (the earliest date a ZIP archive can hold).
FALLBACK_DATE_EPOCH = 315532800


def _with_fixed_trailer_id(tex: str, trailer_id: str) -> str:
    """`tex` with pdfTeX's trailer ID fixed, prepended to the first line (so LaTeX's line numbers still match)."""
    return rf"\ifdefined\pdftrailerid\pdftrailerid{{{trailer_id}}}\fi " + tex


def _inputs_digest(folder: Path) -> str:
    """SHA-256 over the names and bytes of the files a build reads (the source folder's files, sorted)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL when the job's process dies, so no latexmk outlives a kill."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_latexmk(build: Path, name: str, timeout: int, date_epoch: int) -> tuple[int, str]:
    """latexmk in `build`: (exit code, console). SIGTERM or SIGINT of the job stop latexmk and what it started."""
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(date_epoch), FORCE_SOURCE_DATE="1")  # every date, XMP's too
    cmd = ["latexmk", "-pdf", "-bibtex", "-interaction=nonstopmode", "-halt-on-error", name]
    proc = subprocess.Popen(cmd, cwd=build, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True,
                            preexec_fn=_die_with_parent if sys.platform == "linux" else None)

    def stop(signum: int, _frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        raise SystemExit(128 + signum)  # the build folder is removed on the way out

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        console, _ = proc.communicate(timeout=timeout)
        return proc.returncode, console
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # latexmk and the pdflatex/bibtex it started
        console, _ = proc.communicate()
        return -1, (console or "") + f"\nlatexmk timed out after {timeout} s"
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def pdf_date_epoch(commit_time: int | None) -> int:
    """The date a PDF carries (Unix seconds): SOURCE_DATE_EPOCH from the environment when set, else the given
    commit time of the workflow, else FALLBACK_DATE_EPOCH. Never the clock: the same inputs give the same bytes."""
    given = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if given:
        if not given.isdigit():
            raise LatexError(f"SOURCE_DATE_EPOCH={given!r} is not a whole number of seconds since 1970")
        return int(given)
    return int(commit_time) if commit_time is not None else FALLBACK_DATE_EPOCH


def compile_pdf(tex_path: Path, log_path: Path, timeout: int = 600, max_overfull_pt: float | None = None,
                pdf_path: Path | None = None, commit_time: int | None = None) -> Path:
    """Compile `tex_path` with latexmk (pdflatex + BibTeX) in a private scratch folder; return the PDF's path.

    The source's folder (its .tex, .bib, numbers and figures; no earlier build's records) is copied into a new
    temporary folder, built there, and only a finished PDF that passes every check is moved into place at
    `pdf_path` (default: beside the source). The scratch folder is removed whatever happens, so no build state
    survives a failed or killed job. The PDF's trailer ID is derived from the sources and its dates from
    pdf_date_epoch(commit_time), so the same sources give the same bytes.

    latexmk's console output is written to `log_path`, LaTeX's own log beside it (`<stem>.log`). On failure a
    LatexError carries the LaTeX error lines ('!' lines and their 'l.<n>' lines); after a successful run,
    undefined citations or references in the .log also raise a LatexError listing them.
    """
    tex_path = Path(tex_path).resolve()
    log_path = Path(log_path)
    pdf_path = Path(pdf_path) if pdf_path is not None else tex_path.with_suffix(".pdf")
    if shutil.which("latexmk") is None:
        raise LatexError("latexmk is not installed (needed to compile the paper)")
    if not tex_path.exists():
        raise LatexError(f"LaTeX source not found: {tex_path}")
    date_epoch = pdf_date_epoch(commit_time)
    with tempfile.TemporaryDirectory(prefix="edm-ars-latex-") as scratch:
        build = Path(scratch) / "build"
        shutil.copytree(tex_path.parent, build, ignore=_top_level_build_products(tex_path.parent))
        source = build / tex_path.name
        source.write_text(_with_fixed_trailer_id(source.read_text(encoding="utf-8"), _inputs_digest(build)),
                          encoding="utf-8")
        rc, console = _run_latexmk(build, tex_path.name, timeout, date_epoch)
        tex_log = source.with_suffix(".log")
        log_text = tex_log.read_text(encoding="latin-1") if tex_log.exists() else ""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(console, encoding="utf-8")
        if tex_log.exists():
            shutil.copyfile(tex_log, log_path.parent / tex_log.name)
        built = source.with_suffix(".pdf")
        if rc != 0 or not built.exists():
            errors = latex_errors(log_text)
            blg = source.with_suffix(".blg")
            if blg.exists():
                errors += [ln for ln in blg.read_text(encoding="latin-1").splitlines()
                           if "error message" in ln or ln.startswith("I couldn't") or "---line" in ln]
            if not errors:
                errors = [ln for ln in console.splitlines()[-15:] if ln.strip()]
            raise LatexError(f"LaTeX compilation of {tex_path} failed (exit {rc}); see {log_path}:\n"
                             + "\n".join(errors))
        missing = undefined_refs(log_text)
        if missing:
            raise LatexError(f"{tex_path.name}: compiled with unresolved citations/references:\n  "
                             + "\n  ".join(missing))
        wide = overfull_boxes(log_text, max_overfull_pt) if max_overfull_pt is not None else []
        if wide:
            raise LatexError(f"{tex_path.name}: overfull boxes wider than {max_overfull_pt:g}pt:\n  "
                             + "\n  ".join(wide))
        unresolved = pdf_text_problems(built)
        if unresolved:
            raise LatexError(f"{built.name}: " + "; ".join(unresolved))
        atomic_copy(built, pdf_path)
    return pdf_path
