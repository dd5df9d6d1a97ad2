"""A small BibTeX reader for the curated bibliography (entries kept verbatim, fields parsed), and the one
pattern of an entry's head (`@type{key,`), with which the Writer also checks and rekeys retrieved entries.
Standard library only, so that every rule's environment can import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# An entry's head: `@type{key,`, whitespace allowed around each part (BibTeX allows `@ article {key,`).
# Group 1 is the type, group 2 the key.
ENTRY_HEAD = re.compile(r"@\s*([A-Za-z]+)\s*\{\s*([^,\s]+)\s*,")


@dataclass
class BibEntry:
    key: str
    type: str
    fields: dict[str, str] = field(default_factory=dict)
    text: str = ""

    @property
    def year(self) -> int | None:
        m = re.search(r"\d{4}", self.fields.get("year", ""))
        return int(m.group()) if m else None

    @property
    def authors(self) -> list[str]:
        raw = self.fields.get("author", "")
        return [a.strip() for a in re.split(r"\s+and\s+", raw) if a.strip()]

    @property
    def venue(self) -> str | None:
        for name in ("journal", "booktitle", "institution", "publisher"):
            if self.fields.get(name):
                return self.fields[name]
        return None


def _head(entry: str) -> re.Match[str] | None:
    return ENTRY_HEAD.match(entry, len(entry) - len(entry.lstrip()))


def entry_head(entry: str) -> tuple[str, str] | None:
    """(type in lower case, key) of the entry `entry` starts with (after whitespace); None if it starts otherwise."""
    m = _head(entry)
    return (m.group(1).lower(), m.group(2)) if m else None


def with_key(entry: str, key: str) -> str:
    """`entry` with `key` as its key (unchanged when it does not start with an entry's head)."""
    m = _head(entry)
    return entry[:m.start(2)] + key + entry[m.end(2):] if m else entry


def _balanced(text: str, start: int) -> int:
    """Index just past the brace that closes the one opened before `start`."""
    depth = 1
    i = start
    while i < len(text) and depth:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
        i += 1
    if depth:
        raise ValueError("unbalanced braces in BibTeX entry")
    return i


def _fields(body: str) -> dict[str, str]:
    out = {}
    i = 0
    pattern = re.compile(r"\s*(\w+)\s*=\s*")
    while i < len(body):
        m = pattern.match(body, i)
        if not m:
            i += 1
            continue
        name, j = m.group(1).lower(), m.end()
        if j < len(body) and body[j] == "{":
            end = _balanced(body, j + 1)
            value = body[j + 1:end - 1]
        else:
            end = j
            while end < len(body) and body[end] not in ",\n":
                end += 1
            value = body[j:end].strip().strip('"')
        out[name] = " ".join(value.split())
        i = end
    return out


def parse_bibtex(text: str) -> list[BibEntry]:
    entries = []
    for m in ENTRY_HEAD.finditer(text):
        end = _balanced(text, m.end())
        body = text[m.end():end - 1]
        entries.append(BibEntry(key=m.group(2), type=m.group(1).lower(), fields=_fields(body),
                                text=text[m.start():end].strip()))
    return entries
