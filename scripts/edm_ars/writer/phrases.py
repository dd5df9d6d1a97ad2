"""The paper's fixed sentences, as data: config/prompts/phrases.yaml, beside the agents' prompts.

The file maps each section to its phrases: `section: {key: template}`. A template is LaTeX text with
named slots that the section fills from the run's artifacts (macros, labels, citations, lists). A slot is
a lower-case name in braces, `{name}`, anywhere except as the argument of a LaTeX command: `\\emph{model}`,
`\\ref{sec:methods}` and `\\Rsq{}` are text, while `students{cite}.` and `\\textbf{{verdict}}` have the
slots `cite` and `verdict`. Filling is strict: a slot left without a value, or a value for a slot the
template does not have, is an error that names the file and the phrase, so an edited phrase can never
leave a hole in the paper or drop a number. Surrounding whitespace is not part of a phrase: the sections
join phrases with spaces.

The phrases are written about students. Where the registry names its unit otherwise (`dataset.prose.unit` and
`units`: pupil, pupils), :meth:`Phrases.for_unit` gives a table that says the registry's noun in the phrases' own
words (student -> pupil, Students -> Pupils, a student -> an applicant), never in the values filled into slots.
A phrase that starts with `= ` states what the literature found about students (early-warning systems flag
students at risk): it keeps its word students whatever the data set's unit (states, classes) is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_yaml
from edm_ars.core.errors import EdmArsError

_BRACED = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_COMMAND_BEFORE = re.compile(r"\\(?:[A-Za-z@]+\*?)?$")  # a command (or a lone backslash) right before the brace


def _slot_matches(template: str) -> list[re.Match[str]]:
    """The `{name}` groups of a template that are slots."""
    return [m for m in _BRACED.finditer(template) if not _COMMAND_BEFORE.search(template, 0, m.start())]


#: the slots of the study's facts (Phrases.with_facts): filled from the study, never by the calling code
FACT_PREFIX = "study_"


class PhraseError(EdmArsError):
    """The phrase file is malformed, a phrase is missing, or a phrase's slots do not match the values."""


#: the start of a phrase about students in the literature (its words keep saying students)
LITERATURE_MARK = "= "
#: the unit noun the phrases are written with (singular, plural)
DEFAULT_UNIT = ("student", "students")
_UNIT_WORD = re.compile(r"\b(?:(an?|An?) )?([Ss]tudents?)\b('(?![A-Za-z]))?")  # group 3: a plural's possessive


#: what comes right before a count of rows: a number, a number macro or a slot (`after_slot`), perhaps with the side
#: of the split ("\\TestN{} test students", "{n} students"), or the side alone ("the training students"), or a number
#: word of a group's rows ("fewer than ten of a group's students": a figure caption of the analysis)
_COUNTED = re.compile(r"(?:(?:\\[A-Za-z]+\{\}|\d)\s*(?:(?:test|training|held-out)\s+)?|\b(?:test|training|held-out)\s+"
                      r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|twenty|fifty|hundred) of (?:a|each|the) "
                      r"group's\s+)$")


def unit_words(text: str, unit: str, units: str, rows: tuple[str, str] | None = None, after_slot: bool = False) -> str:
    """`text` with the word student(s) said as the registry's unit noun (its article and capital kept right). With
    `rows` (the noun of a row where it differs from the unit's: repeated records of a child), a student counted as a
    row (after a number, a count macro or slot, or the side of the split) is said as a row, any other as the unit."""
    if ((unit, units) == DEFAULT_UNIT and not rows) or not unit or not units:
        return text

    def sub(m: re.Match[str]) -> str:
        article, word = m.group(1), m.group(2)
        one, many = unit, units
        if rows and not article:
            before = text[:m.start()]
            if _COUNTED.search(before) or (after_slot and not before.strip()):
                one, many = rows
        noun = many if word.lower() == "students" else one
        if word[0].isupper():
            noun = noun[0].upper() + noun[1:]
        if m.group(3):  # students' -> pupils', children's
            noun += "'" if noun.endswith("s") else "'s"
        if not article:
            return noun
        an = noun[0].lower() in "aeiou"
        return ("An " if an else "A ") + noun if article[0] == "A" else ("an " if an else "a ") + noun

    return _UNIT_WORD.sub(sub, text)


@dataclass
class Phrases:
    table: dict[str, str]  # "section.key" -> template
    source: str = "phrases"
    unit: tuple[str, str] = DEFAULT_UNIT  # the noun the fixed words say for the unit of a row (singular, plural)
    rows: tuple[str, str] | None = None  # the noun of a counted row where a row is not a unit (repeated records)
    facts: Callable[[str], str | None] | None = None  # the study's facts (`study_*` slots), by slot name

    def with_facts(self, facts: Callable[[str], str | None] | dict[str, str]) -> Phrases:
        """The same phrases with the study's own facts (`study_data`: the data's name, `study_outcome`: the
        outcome's label, ...: a mapping, or a function of the slot name giving None for an unknown fact) that a
        phrase may say in a `{study_...}` slot without the calling code giving them: a sentence about the same
        procedure then names the study it was done in."""
        if isinstance(facts, dict):
            bad = sorted(k for k in facts if not k.startswith(FACT_PREFIX))
            if bad:
                raise PhraseError(f"{self.source}: a study fact is named {FACT_PREFIX}<name>, not {', '.join(bad)}")
            return replace(self, facts={k: str(v) for k, v in facts.items()}.get)
        return replace(self, facts=facts)

    def for_unit(self, unit: str, units: str, rows: tuple[str, str] | None = None) -> Phrases:
        """The same phrases saying `unit`/`units` (the registry's noun) where they say student(s); with `rows`, a
        counted student is said as a row (record) and any other as the unit (child)."""
        return replace(self, unit=(unit, units), rows=rows)

    @classmethod
    def load(cls, path: str | Path) -> Phrases:
        data = read_yaml(path, "phrase file", PhraseError)
        if not isinstance(data, dict) or not data:
            raise PhraseError(f"{path}: a phrase file maps each section to its phrases (section: {{key: text}})")
        table: dict[str, str] = {}
        for section, phrases in data.items():
            if not isinstance(phrases, dict):
                raise PhraseError(f"{path}: section {section!r} must map phrase keys to text")
            for key, text in phrases.items():
                if not isinstance(text, str) or not text.strip():
                    raise PhraseError(f"{path}: phrase {section}.{key} must be non-empty text")
                table[f"{section}.{key}"] = text.strip()
        return cls(table, str(path))

    def slots(self, key: str) -> set[str]:
        return {m.group(1) for m in _slot_matches(self._template(key))}

    def _template(self, key: str) -> str:
        try:
            return self.table[key]
        except KeyError:
            raise PhraseError(f"{self.source}: no phrase {key!r}") from None

    def __call__(self, key: str, **values: Any) -> str:
        """The phrase `key` ("section.name") with its slots filled from `values`."""
        template = self._template(key)
        literature = template.startswith(LITERATURE_MARK)  # about students in general, never the data set's unit
        if literature:
            template = template[len(LITERATURE_MARK):]
        found = _slot_matches(template)
        wanted = {m.group(1) for m in found}
        facts = {k: self.facts(k) if self.facts else None for k in wanted if k.startswith(FACT_PREFIX)}
        unknown = sorted(k for k, v in facts.items() if v is None)
        if unknown:
            raise PhraseError(f"{self.source}: phrase {key}: no study fact for slot(s) {', '.join(unknown)} "
                              f"(the Writer's facts are {FACT_PREFIX}data, {FACT_PREFIX}short and "
                              f"{FACT_PREFIX}outcome: edit the phrase)")
        values = {**values, **facts}
        missing, extra = sorted(wanted - values.keys()), sorted(values.keys() - wanted)
        if missing or extra:
            problems = ([f"no value for slot(s) {', '.join(missing)}"] if missing else []) + (
                [f"value(s) given for {', '.join(extra)}, which the phrase does not use"] if extra else [])
            raise PhraseError(f"{self.source}: phrase {key}: {'; '.join(problems)}")
        out, end = [], 0

        def text(part: str, after_slot: bool = False) -> str:  # the phrase's own words (never a slot's value)
            return part if literature else unit_words(part, *self.unit, rows=self.rows, after_slot=after_slot)

        for m in found:
            value = str(values[m.group(1)])
            if template.startswith("s", m.end()) and not template[m.end() + 1:m.end() + 2].isalpha():
                # `{unit}s` is a plural: a noun ending in a sibilant takes "es" (class -> classes)
                value = plural(value)
                out += [text(template[end:m.start()], after_slot=end > 0), value]
                end = m.end() + 1
                continue
            out += [text(template[end:m.start()], after_slot=end > 0), value]
            end = m.end()
        return "".join(out) + text(template[end:], after_slot=end > 0)


def plural(noun: str) -> str:
    """The plural of a singular noun (or noun phrase) by its last word: class -> classes, school -> schools,
    local education authority -> local education authorities."""
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    return noun + ("es" if re.search(r"(s|x|z|ch|sh)$", noun) else "s")
