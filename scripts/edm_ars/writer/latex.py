"""Compiling a paper with latexmk, and reading its log for errors and undefined citations or references."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from ..errors import EdmArsError


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


def compile_pdf(tex_path: Path, log_path: Path, timeout: int = 600, max_overfull_pt: float | None = None) -> Path:
    """Compile `tex_path` with latexmk (pdflatex + BibTeX) in its own folder; return the PDF path.

    latexmk's console output is written to `log_path`. On failure a LatexError carries the LaTeX
    error lines ('!' lines and their 'l.<n>' lines); after a successful run, undefined citations or
    references in the .log also raise a LatexError listing them.
    """
    tex_path = Path(tex_path).resolve()
    log_path = Path(log_path)
    if shutil.which("latexmk") is None:
        raise LatexError("latexmk is not installed (needed to compile the paper)")
    if not tex_path.exists():
        raise LatexError(f"LaTeX source not found: {tex_path}")
    cmd = ["latexmk", "-pdf", "-bibtex", "-interaction=nonstopmode", "-halt-on-error", tex_path.name]
    proc = subprocess.Popen(cmd, cwd=tex_path.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True)
    try:
        console, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # latexmk and the pdflatex/bibtex it started
        console, _ = proc.communicate()
        console = (console or "") + f"\nlatexmk timed out after {timeout} s"
        rc = -1
    tex_log = tex_path.with_suffix(".log")
    log_text = tex_log.read_text(encoding="latin-1") if tex_log.exists() else ""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(console, encoding="utf-8")

    pdf = tex_path.with_suffix(".pdf")
    if rc != 0 or not pdf.exists():
        errors = latex_errors(log_text)
        blg = tex_path.with_suffix(".blg")
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
        raise LatexError(f"{tex_path.name}: overfull boxes wider than {max_overfull_pt:g}pt:\n  " + "\n  ".join(wide))
    unresolved = pdf_text_problems(pdf)
    if unresolved:
        raise LatexError(f"{pdf.name}: " + "; ".join(unresolved))
    return pdf
