"""The paper's fixed sentences live in config/prompts/phrases.yaml: strict slots, and the code and the file agree."""

import ast
import re
from pathlib import Path

import pytest
import yaml

from edm_ars.writer.integrity import causal_wording, lint
from edm_ars.writer.phrases import FACT_PREFIX, PhraseError, Phrases

ROOT = Path(__file__).resolve().parents[2]
PHRASE_FILE = ROOT / "config" / "prompts" / "phrases.yaml"
WRITER = ROOT / "scripts" / "edm_ars" / "writer"


def table(**phrases: str) -> Phrases:
    return Phrases(phrases, "test.yaml")


def test_slots_are_filled_and_latex_groups_are_text():
    ph = table(**{"s.k": r"The \emph{model} reached {value} (Section~\ref{sec:results}); \textbf{{verdict}} \{x\}.",
                  "s.cited": r"Models differ for students{cite}, \citep{key} aside."})
    assert ph.slots("s.k") == {"value", "verdict"}
    assert ph("s.k", value=r"\BestAUC{}", verdict="PASS") == (
        r"The \emph{model} reached \BestAUC{} (Section~\ref{sec:results}); \textbf{PASS} \{x\}.")
    assert ph("s.cited", cite=r"~\citep{a}") == r"Models differ for students~\citep{a}, \citep{key} aside."


@pytest.mark.parametrize("values, problem", [
    ({}, "no value for slot(s) value"),
    ({"value": "1", "other": "2"}, "value(s) given for other"),
])
def test_a_slot_mismatch_names_the_file_and_the_phrase(values, problem):
    with pytest.raises(PhraseError, match=re.escape(f"test.yaml: phrase s.k: {problem}")):
        table(**{"s.k": "reached {value}."})("s.k", **values)


def test_an_unknown_phrase_is_an_error():
    with pytest.raises(PhraseError, match=r"test.yaml: no phrase 's.missing'"):
        table(**{"s.k": "text"})("s.missing")


@pytest.mark.parametrize("text, problem", [
    ("- just a list\n", "maps each section to its phrases"),
    ("results: [a, b]\n", "section 'results' must map phrase keys to text"),
    ("results:\n  k: 3\n", "phrase results.k must be non-empty text"),
    ("results:\n  k: '  '\n", "phrase results.k must be non-empty text"),
    ("results: {k: [unclosed\n", "not valid YAML"),
])
def test_a_malformed_phrase_file_names_the_file(tmp_path, text, problem):
    path = tmp_path / "phrases.yaml"
    path.write_text(text)
    with pytest.raises(PhraseError, match=re.escape(str(path))) as err:
        Phrases.load(path)
    assert problem in str(err.value)


def _calls() -> list[tuple[str, ast.Call]]:
    """Every `ph(...)` call in the writer package, with its file."""
    out = []
    for path in sorted(WRITER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "ph":
                out.append((path.relative_to(ROOT).as_posix(), node))
    return out


def test_the_shipped_phrase_file_loads_and_every_phrase_is_used_with_its_slots():
    ph = Phrases.load(PHRASE_FILE)
    sections = set(yaml.safe_load(PHRASE_FILE.read_text()))
    modules = {p.stem for p in (WRITER / "sections").glob("*.py")} | {p.stem for p in WRITER.glob("*.py")}
    assert sections <= modules, f"phrase sections without a module: {sorted(sections - modules)}"
    used, prefixes, problems = set(), set(), []
    for where, call in _calls():
        key = call.args[0] if call.args else None
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            if key.value not in ph.table:
                problems.append(f"{where}:{call.lineno}: no phrase {key.value!r} in {PHRASE_FILE.name}")
                continue
            used.add(key.value)
            if not any(k.arg is None for k in call.keywords):  # no **values: the slots must match exactly
                given = {k.arg for k in call.keywords}
                if given != {s for s in ph.slots(key.value) if not s.startswith(FACT_PREFIX)}:
                    problems.append(f"{where}:{call.lineno}: {key.value} has slots {sorted(ph.slots(key.value))}, "
                                    f"the code gives {sorted(given)}")
        elif isinstance(key, ast.JoinedStr) and isinstance(key.values[0], ast.Constant):
            prefixes.add(key.values[0].value)  # f"section.kind_{level}": every phrase with the prefix may be used
        else:
            problems.append(f"{where}:{call.lineno}: a phrase key must be a string or an f-string with a literal start")
    for prefix in prefixes:
        matched = {k for k in ph.table if k.startswith(prefix)}
        if not matched:
            problems.append(f"no phrase starts with {prefix!r}")
        used |= matched
    unused = sorted(set(ph.table) - used)
    assert not problems and not unused, "\n".join(problems + [f"unused phrase: {k}" for k in unused])


def test_phrases_hold_no_literal_numbers_or_citations():
    """Numbers and citations come from artifacts through slots; a phrase may not type them."""
    ph = Phrases.load(PHRASE_FILE)
    bad = []
    for key, text in ph.table.items():
        body = re.sub(r"\\ref\{[^}]*\}|\\label\{[^}]*\}", "", text)
        if re.search(r"(?<![A-Za-z{])\d", body):
            bad.append(f"{key}: a digit")
        if re.search(r"\\cite[a-z]*\*?[\[{]", text):
            bad.append(f"{key}: a citation")
    assert not bad, bad


def causal_phrases(ph: Phrases) -> list[str]:
    """Every phrase that the paper's causal-language lint (integrity.causal_wording, which lint() applies to the
    result sections) rejects, with the verb and the sentence. A phrase may be used in any section, so every
    phrase is held to it."""
    return [f"{key}: causal verb {verb!r} in: {sentence}"
            for key, text in ph.table.items() for verb, sentence in causal_wording(text)]


def test_every_fixed_phrase_passes_the_causal_language_lint():
    bad = causal_phrases(Phrases.load(PHRASE_FILE))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("text, verb", [
    ("Much of what determines the outcome may happen after the last wave.", "determines"),
    ("The sample may be too small for the effect of any single predictor to be detected.", "effect of"),
    ("Prior achievement drives {outcome} in this sample.", "drives"),
    ("A {gap} gap, the affected students were fewer.", "affected"),
])
def test_a_planted_causal_phrase_is_caught(text, verb):
    ph = table(**{"s.fine": "Prior achievement was the strongest predictor of {outcome}.", "s.planted": text})
    found = causal_phrases(ph)
    assert len(found) == 1 and found[0].startswith(f"s.planted: causal verb {verb!r}"), found
    # the same sentence in a result section fails the paper's lint, so the helper and the lint agree
    assert [f.kind for f in lint({"DISCUSSION": text}) if f.kind == "causal"] == ["causal"]


@pytest.mark.parametrize("text", [
    "Predictive associations do not identify causes.",
    "They do not show that group membership influences the outcome.",
    "The estimates support no causal interpretation of what drives the outcome.",
])
def test_negated_or_framing_sentences_pass(text):
    assert causal_phrases(table(**{"s.k": text})) == []


def test_a_slot_followed_by_s_is_a_plural_that_follows_the_noun():
    from edm_ars.writer.phrases import Phrases

    ph = Phrases({"x.y": "split by {unit}s, not {unit}s' or {unit}'s"})
    assert ph("x.y", unit="class") == "split by classes, not classes' or class's"
    assert ph("x.y", unit="school") == "split by schools, not schools' or school's"


def test_with_repeated_records_a_counted_row_is_a_record_and_anyone_else_the_unit():
    """Long format: 'students' after a count, a count slot or the side of the split is said as records, any other
    as the registry's unit (children), with the possessive of an irregular plural right; without rows, as before."""
    from edm_ars.writer.phrases import unit_words

    rows = ("record", "records")
    assert unit_words(r"a test set of \TestN{} students", "child", "children", rows=rows) == \
        r"a test set of \TestN{} records"
    assert unit_words(" test students", "child", "children", rows=rows, after_slot=True) == " test records"
    assert unit_words("fitted on the training students", "child", "children", rows=rows) == \
        "fitted on the training records"
    assert unit_words("Predicting students' achievement", "child", "children", rows=rows) == \
        "Predicting children's achievement"
    assert unit_words("groups of students defined by", "child", "children", rows=rows) == \
        "groups of children defined by"
    assert unit_words("Predicting students' achievement", "pupil", "pupils") == "Predicting pupils' achievement"
    assert unit_words("Predicting students' achievement", "student", "students") == "Predicting students' achievement"
