"""Rules a registry must meet for a run to use it, shared by `validate-registry` (data/registry_validation.py) and
the run itself: the fewest usable predictors of a question (`MIN_PREDICTORS`, the spec gate and the formulator,
formulate/spec.py and formulate/branches.py) with the reason each other predictor is not usable, and the prose rules
of the texts the paper splices into its own sentences (registry/README.md, "The paper's words about the data set"),
and the data set's own citation a registry may carry (`dataset.citation`). Each problem names the question or key
and says what to do.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from edm_ars.data.registry import (
    DRAFT_MARKER,
    Registry,
    early_warning_waves,
    is_excluded,
    is_temporally_valid,
    wave_of,
)
from edm_ars.data.registry_causal import question_task

#: the fewest usable predictors a study may have (the spec gate rejects fewer, the formulator skips the question)
MIN_PREDICTORS = 3

#: dataset.prose keys the paper splices after its own article ("the {short}", "a {design}"): no leading article
PROSE_NO_ARTICLE = ("short", "long", "design", "unit", "units")
#: keys that must begin with a word ("collected_for": "to ...", "used_for": "to ..." or "in ...")
PROSE_STARTS = {"collected_for": ("to ",), "used_for": ("to ", "in ")}
PROSE_PHRASES = ("short", "long", "about", "design", "collected_for", "measures", "purpose", "actors",
                 "decision_time", "unit", "units", "used_for")
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
ARTICLE = re.compile(r"^(the|a|an)\s", re.IGNORECASE)
#: a text the paper puts after its own article cannot begin with a preposition either ("in the at intake")
PREPOSITION = re.compile(r"^(at|in|on|during|when|after|before|by|from|of|upon)\s", re.IGNORECASE)


def usable_predictors(reg: Registry, q: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """A question's predictors a run can use (exclusions, time order, early-warning waves), and why each other
    one is not (predictor -> reason)."""
    allowed = early_warning_waves(q)
    usable, unusable = [], {}
    for name in q.get("predictors") or {}:
        if name == q.get("outcome"):
            unusable[name] = "the outcome itself"
        elif name in reg.id_columns:
            unusable[name] = "the identifier column (dataset.id_column)"
        elif is_excluded(reg, name):
            role = (reg.variable(name) or {}).get("role")
            unusable[name] = f"role {role}" if role else "excluded by tier3 (weights, identifiers, flags)"
        elif not is_temporally_valid(reg, name, q["outcome"]):
            unusable[name] = (f"its wave {wave_of(reg, name)} does not strictly precede the outcome's "
                              f"{wave_of(reg, q['outcome'])}")
        elif allowed is not None and wave_of(reg, name) not in allowed:
            unusable[name] = f"its wave {wave_of(reg, name)} is not one of the early-warning waves {allowed}"
        else:
            usable.append(name)
    return usable, unusable


def predictor_shortfall(reg: Registry, q: dict[str, Any]) -> str | None:
    """Why a prediction question cannot be studied for want of predictors (naming the question, the predictors
    counted, why the others were not usable, and the fix), or None when it has at least MIN_PREDICTORS."""
    if question_task(q) != "prediction" or not q.get("outcome"):
        return None
    usable, unusable = usable_predictors(reg, q)
    if len(usable) >= MIN_PREDICTORS:
        return None
    why = "; not usable: " + ", ".join(f"{p} ({r})" for p, r in unusable.items()) if unusable else ""
    return (f"question {q.get('id', '?')}: {len(usable)} usable predictor(s) {usable}, fewer than the "
            f"{MIN_PREDICTORS} a study needs{why}. Add predictors to questions[{q.get('id', '?')}].predictors "
            "(variables with role predictor or protected, measured before the outcome, not part of it), or remove "
            "the question")


def predictor_minimum_problems(reg: Registry) -> list[str]:
    """Every prediction question with fewer than MIN_PREDICTORS usable predictors (the run never studies it)."""
    return [s for s in (predictor_shortfall(reg, q) for q in reg.questions) if s]


def _unbacked_numbers(text: str) -> list[str]:
    """Numbers that verify-paper would hold against the artifacts when the paper prints the text: anything but a
    year (1900-2100) or an integer up to 100."""
    out = []
    for m in NUMBER.finditer(text):
        raw = m.group(0).rstrip(",")
        value = float(raw.replace(",", ""))
        if "." in raw or "," in raw or not (value <= 100 or 1900 <= value <= 2100):
            out.append(raw)
    return out


def _prose_texts(reg: Registry) -> list[tuple[str, str, bool]]:
    """(key, text, whether the paper puts its own article before it) of every text the paper splices."""
    prose = reg.dataset.get("prose") or {}
    texts = [(f"dataset.prose.{k}", prose[k], k in PROSE_NO_ARTICLE) for k in PROSE_PHRASES
             if isinstance(prose.get(k), str)]
    texts += [(f"dataset.prose.group_phrases.{g}", p, False) for g, p in (prose.get("group_phrases") or {}).items()
              if isinstance(p, str)]
    texts += [(f"dataset.waves[{w.get('key')}].{k}", w[k], True) for w in reg.waves for k in ("label", "prose")
              if isinstance(w.get(k), str)]
    return texts


def prose_problems(reg: Registry) -> list[str]:
    """The prose rules: a name, design, unit or wave text has no leading article (the paper adds "the"); no text
    ends with a period (each is a phrase inside the paper's sentence); no text holds a number the run cannot back
    (other than a year or an integer up to 100); purpose does not begin with "to" (the paper writes it);
    collected_for begins with "to", used_for with "to" or "in". Texts still holding the draft marker are left to
    the draft check."""
    errors = []
    for where, raw, no_article in _prose_texts(reg):
        text = raw.strip()
        if not text or DRAFT_MARKER in text:
            continue
        key = where.rsplit(".", 1)[-1]
        if no_article and ARTICLE.match(text):
            errors.append(f"{where} {text!r} begins with an article, and the paper adds its own (\"the "
                          f"{text.split()[0].lower()} ...\"): write {ARTICLE.sub('', text)!r}")
        if no_article and PREPOSITION.match(text):
            errors.append(f"{where} {text!r} begins with {text.split()[0]!r}, but the paper puts it after its own "
                          f"article (\"recorded in the {text}\"): write a noun phrase naming it, such as "
                          "'intake wave (age 11)'")
        if text.endswith("."):
            errors.append(f"{where} {text!r} ends with a period, but it is a phrase inside the paper's sentence: "
                          "drop the period")
        numbers = _unbacked_numbers(text)
        if numbers:
            errors.append(f"{where} {text!r} holds {', '.join(numbers)}, a number no artifact of the run backs "
                          "(the paper's numbers come from the data): write it in words or leave it out")
        if key == "purpose" and text.lower().startswith("to "):
            errors.append(f"{where} {text!r} begins with 'to', which the paper writes before it: write "
                          f"{text[3:]!r}")
        starts = PROSE_STARTS.get(key)
        if starts and not text.lower().startswith(starts):
            errors.append(f"{where} {text!r} must begin with " + " or ".join(repr(s.strip()) for s in starts))
    return errors


BIB_ENTRY = re.compile(r"@\s*(\w+)\s*\{\s*([^,\s{}]+)\s*,")


def _bib_entries(text: str) -> list[tuple[str, str]]:
    """(key, entry text) of every entry of a BibTeX text (from one '@' to the next)."""
    starts = [m for m in BIB_ENTRY.finditer(text) if m.group(1).lower() not in ("comment", "string", "preamble")]
    ends = [m.start() for m in starts[1:]] + [len(text)] * bool(starts)
    return [(m.group(2), text[m.start():end].strip()) for m, end in zip(starts, ends, strict=True)]


def registry_citation(reg: Registry) -> tuple[str | None, str | None, list[str]]:
    """The data set's own citation carried by the registry (`dataset.citation`): a BibTeX entry as text, or the name
    of a .bib file beside the registry (in its folder). Returns (key, BibTeX entry, problems); (None, None, []) when
    the registry carries none (the key `dataset.provenance.citation` then names an entry of the project's curated
    bibliography). With several entries in the file, `dataset.provenance.citation` chooses the one to use."""
    given = reg.dataset.get("citation")
    if given is None or (isinstance(given, str) and not given.strip()):
        return None, None, []
    if not isinstance(given, str):
        return None, None, [f"dataset.citation must be text: a BibTeX entry (@misc{{key, ...}}) or the name of a "
                            f".bib file beside the registry (got {type(given).__name__})"]
    text, where = given.strip(), "dataset.citation"
    if not text.startswith("@"):
        if not text.endswith(".bib"):
            return None, None, [f"dataset.citation {text!r} is neither a BibTeX entry (beginning with '@') nor the "
                                "name of a .bib file beside the registry"]
        path = (reg.root or Path(".")) / text
        try:
            text, where = path.read_text(encoding="utf-8"), f"dataset.citation file {path}"
        except (OSError, UnicodeDecodeError) as exc:
            return None, None, [f"dataset.citation names {path}, which cannot be read ({' '.join(str(exc).split())}):"
                                " put the .bib file in the registry's folder or write the entry into the registry"]
    entries = dict(_bib_entries(text))
    if not entries:
        return None, None, [f"{where}: no BibTeX entry with a key (expected @misc{{key, title = {{...}}, ...}})"]
    chosen = str((reg.dataset.get("provenance") or {}).get("citation") or "").strip() or None
    if chosen is None and len(entries) > 1:
        return None, None, [f"{where} holds {len(entries)} entries ({', '.join(entries)}): name the data set's "
                            "one in dataset.provenance.citation"]
    key = chosen or next(iter(entries))
    if key not in entries:
        return None, None, [f"dataset.provenance.citation {key!r} is not an entry of {where} (its entries: "
                            f"{', '.join(entries)})"]
    missing = [f for f in ("title", "year") if not re.search(rf"\b{f}\s*=", entries[key], re.IGNORECASE)]
    if missing:
        return None, None, [f"{where}: entry {key} has no {' or '.join(missing)} (the paper's reference list needs "
                            "both)"]
    return key, entries[key], []
