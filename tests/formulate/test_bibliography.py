"""edm_ars.formulate.bibliography: the one pattern of a BibTeX entry's head, and the reader of the curated bibliography."""

from __future__ import annotations

from pathlib import Path

import pytest

from edm_ars.formulate.bibliography import entry_head, parse_bibtex, with_key

BIB = Path(__file__).resolve().parents[2] / "registry" / "bibliography" / "references.bib"


@pytest.mark.parametrize("text, head", [
    ("@article{lundberg2020local,\n  title = {A}\n}", ("article", "lundberg2020local")),
    ("@ article {key,", ("article", "key")),
    ("  \n\t@InProceedings\n{ Key:2020-a ,title={A}}", ("inproceedings", "Key:2020-a")),
    ("@misc{x,}", ("misc", "x")),
])
def test_entry_head(text, head):
    assert entry_head(text) == head


@pytest.mark.parametrize("text", [
    "", "article{key,", "% @article{key,", "see @article{key,", "@article{key}", "@article{,", "@{key,",
    "@article key,", "@art1cle{key,",
])
def test_not_an_entry_head(text):
    assert entry_head(text) is None


def test_with_key():
    entry = "@article{wrong2020,\n  title = {A},\n  note = {wrong2020}\n}"
    assert with_key(entry, "right2020") == "@article{right2020,\n  title = {A},\n  note = {wrong2020}\n}"
    assert with_key("@ book { old ,title={B}}", "new") == "@ book { new ,title={B}}"
    assert with_key("not an entry", "new") == "not an entry"


def test_parse_bibtex_finds_the_heads_entry_head_reads():
    text = "% a comment\n@ article {k1, title = {A {B}}, year = 2001}\n\n@Book{k2,\n  title = {C}\n}\n"
    entries = parse_bibtex(text)
    assert [(e.type, e.key) for e in entries] == [("article", "k1"), ("book", "k2")]
    assert entries[0].fields == {"title": "A {B}", "year": "2001"}
    assert [entry_head(e.text) for e in entries] == [("article", "k1"), ("book", "k2")]


def test_curated_bibliography():
    text = BIB.read_text()
    entries = parse_bibtex(text)
    assert len(entries) == sum(line.startswith("@") for line in text.splitlines())
    assert len({e.key for e in entries}) == len(entries)
    assert all(entry_head(e.text) == (e.type, e.key) for e in entries)
