"""Parser for the NCES EDAT ASCII layout file (variable names, labels and value labels)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

_VAR_LINE = re.compile(r"^(?P<name>\S{1,15}?)\s*(?P<start>\d+)-(?P<end>\d+)\s+(?P<label>.*)$")
_VALUE_LINE = re.compile(r'^\s+(?P<code>-?\d+)\s*=\s*"(?P<label>.*)"\s*$')


@dataclass
class Layout:
    labels: dict[str, str] = field(default_factory=dict)
    value_labels: dict[str, dict[int, str]] = field(default_factory=dict)

    def codes(self, name: str) -> dict[int, str]:
        """Value labels of a variable (empty for continuous variables)."""
        return self.value_labels.get(name, {})

    def substantive_codes(self, name: str) -> dict[int, str]:
        """Value labels with non-negative codes, i.e. without the missing-data reserve codes."""
        return {c: lab for c, lab in self.codes(name).items() if c >= 0}


def parse_layout(text: str) -> Layout:
    """Parse the text of an EDAT layout file.

    The variable block lists `NAME START-END LABEL` with names in a 15-character field (longer
    names run into the position field); the value-label block lists each variable followed by
    indented `CODE = "LABEL"` lines.
    """
    layout = Layout()
    section = None
    current = None
    for raw in text.splitlines():
        line = raw.rstrip("\r\n")
        if line.startswith("/* Variable Names"):
            section = "names"
            continue
        if line.startswith("/* Variable Value Labels"):
            section = "values"
            continue
        if not line.strip():
            continue
        if section == "names":
            head, tail = line[:15].strip(), line[15:]
            m = re.match(r"^\s*(\d+)-(\d+)\s+(.*)$", tail)
            if head and m:
                layout.labels[head] = m.group(3).strip()
        elif section == "values":
            m = _VALUE_LINE.match(line)
            if m and current:
                layout.value_labels.setdefault(current, {})[int(m.group("code"))] = m.group("label")
            elif not line.startswith((" ", "\t")):
                current = line.strip()
    return layout


@lru_cache(maxsize=4)
def load_layout(path: str | Path) -> Layout:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"layout file not found: {path}")
    return parse_layout(path.read_text(encoding="latin-1"))
