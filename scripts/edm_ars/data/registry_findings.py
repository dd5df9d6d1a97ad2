"""Published findings on a data set (`dataset.findings` of a registry): what is already known about its data, each
finding with its claim, the citation key of its source, where in the source it is stated, and the test the study can
run on its own data (edm_ars.analysis.replication). `finding_problems` lists every inconsistency, naming the registry
file, the finding's id and the value; `load_registry` refuses a registry with any.

A finding:

    - id: hsb_between_school_share            # snake_case, unique in the registry
      claim: "About 18% of the variance in mathematics achievement lies between schools."
      cite: raudenbush2002hierarchical        # a key of registry/bibliography/references.bib (or of dataset.citation)
      where: "Table 4.2, p. 70"
      outcomes: [MathAch]                     # optional: the outcome(s) the finding is about (absent: any outcome)
      test: {kind: between_cluster_share, value: 0.18, tolerance: 0.05}
          | {kind: association, variable: MEANSES, direction: positive}
          | {kind: group_difference, variable: Sector, higher: Catholic, lower: Public}
          | {kind: none, reason: "<why this design cannot test it>"}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: The tests a finding can carry, with their keys (every key required).
FINDING_KINDS: dict[str, tuple[str, ...]] = {
    "between_cluster_share": ("value", "tolerance"),
    "association": ("variable", "direction"),
    "group_difference": ("variable", "higher", "lower"),
    "none": ("reason",),
}
FINDING_KEYS = ("id", "claim", "cite", "where", "test", "outcomes")
DIRECTIONS = ("positive", "negative")
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
#: a BibTeX entry's head (the pattern of edm_ars.data.registry_rules.BIB_ENTRY, which imports the registry module)
_BIB_HEAD = re.compile(r"@\s*(\w+)\s*\{\s*([^,\s{}]+)\s*,")


def _bib_keys(text: str) -> set[str]:
    return {m.group(2) for m in _BIB_HEAD.finditer(text) if m.group(1).lower() not in ("comment", "string", "preamble")}

#: The project's curated bibliography, beside the package (scripts/edm_ars/data -> the project root).
CURATED_BIB = Path(__file__).resolve().parents[3] / "registry" / "bibliography" / "references.bib"


def bibliography_keys(reg: Any, bib: Path | None = None) -> set[str] | None:
    """The citation keys a finding may cite: those of the curated bibliography and of the registry's own
    `dataset.citation` entries. None when the curated bibliography cannot be read (then keys are not checked)."""
    path = bib or CURATED_BIB
    try:
        keys = _bib_keys(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    own = reg.dataset.get("citation")
    if isinstance(own, str) and own.strip():
        text = own.strip()
        if not text.startswith("@") and text.endswith(".bib"):
            try:
                text = ((reg.root or Path(".")) / text).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
        keys |= _bib_keys(text)
    return keys


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _test_problems(reg: Any, where: str, test: Any) -> list[str]:
    if not isinstance(test, dict):
        return [f"{where}.test must be a mapping with a kind (one of {list(FINDING_KINDS)}), got {test!r}"]
    kind = test.get("kind")
    if kind not in FINDING_KINDS:
        return [f"{where}.test.kind {kind!r} is not one of {list(FINDING_KINDS)}"]
    needed = FINDING_KINDS[kind]
    errors = [f"{where}.test: kind {kind} needs {key!r} (keys: {', '.join(needed)})"
              for key in needed if test.get(key) is None or test.get(key) == ""]
    unknown = sorted(set(test) - {"kind", *needed})
    if unknown:
        errors.append(f"{where}.test: unknown key(s) {unknown} for kind {kind} (known: kind, {', '.join(needed)})")
    if errors:
        return errors
    if kind == "between_cluster_share":
        value, tol = _number(test["value"]), _number(test["tolerance"])
        if value is None or not 0 < value < 1:
            errors.append(f"{where}.test.value {test['value']!r} must be a share between 0 and 1 (e.g. 0.18)")
        if tol is None or not 0 <= tol < 1:
            errors.append(f"{where}.test.tolerance {test['tolerance']!r} must be a number from 0 to 1 (e.g. 0.05)")
        if not reg.grouping.get("columns"):
            errors.append(f"{where}.test: kind between_cluster_share needs a cluster level, but the registry declares "
                          "no dataset.grouping.columns")
    elif kind in ("association", "group_difference"):
        var = str(test["variable"])
        rec = reg.tier1.get(var)
        if rec is None:
            return [f"{where}.test.variable {var!r} is not a variable of the registry"]
        if rec.get("role") == "outcome":
            errors.append(f"{where}.test.variable {var} is an outcome; name the predictor the finding is about")
        if kind == "association":
            if rec.get("type") != "continuous":
                errors.append(f"{where}.test.variable {var} has type {rec.get('type')}; an association needs a "
                              "continuous variable (use kind group_difference for a binary or categorical one)")
            if test["direction"] not in DIRECTIONS:
                errors.append(f"{where}.test.direction {test['direction']!r} is not one of {list(DIRECTIONS)}")
        else:
            if rec.get("type") not in ("binary", "categorical"):
                errors.append(f"{where}.test.variable {var} has type {rec.get('type')}; a group difference needs a "
                              "binary or categorical variable (use kind association for a continuous one)")
            higher, lower = str(test["higher"]), str(test["lower"])
            if higher == lower:
                errors.append(f"{where}.test: higher and lower are both {higher!r}; name two levels of {var}")
            codes = rec.get("values")
            if isinstance(codes, dict) and codes:
                for key in ("higher", "lower"):
                    if str(test[key]) not in {str(c) for c in codes}:
                        errors.append(f"{where}.test.{key} {test[key]!r} is not a code of {var} "
                                      f"(its codes: {', '.join(map(str, codes))})")
    else:  # none
        reason = test["reason"]
        if not isinstance(reason, str) or len(" ".join(reason.split())) < 10:
            errors.append(f"{where}.test.reason {reason!r} must say in a sentence why this design cannot test it")
    return errors


def finding_problems(reg: Any, bib_keys: set[str] | None = None, file: str | None = None) -> list[str]:
    """Every inconsistency of the registry's `dataset.findings`, each naming the file, the finding's id and the value
    (empty: valid, or no findings). `bib_keys`: the keys a finding may cite (None: not checked)."""
    findings = reg.dataset.get("findings")
    if findings is None:
        return []
    src = f"registry {file}: " if file else ""
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        return [f"{src}dataset.findings must be a list of mappings (id, claim, cite, where, test)"]
    errors, seen = [], set()
    for k, f in enumerate(findings):
        fid = f.get("id")
        where = f"{src}dataset.findings[{fid if fid else k}]"
        if not isinstance(fid, str) or not _SNAKE.match(fid):
            errors.append(f"{where}.id {fid!r} must be snake_case (lower-case letters, digits, underscores)")
        elif fid in seen:
            errors.append(f"{where}.id {fid!r} is used by another finding; ids must be unique")
        seen.add(fid)
        unknown = sorted(set(f) - set(FINDING_KEYS))
        if unknown:
            errors.append(f"{where}: unknown key(s) {unknown} (known: {', '.join(FINDING_KEYS)})")
        for key in ("claim", "where"):
            text = f.get(key)
            if not isinstance(text, str) or len(" ".join(text.split())) < 5:
                errors.append(f"{where}.{key} {text!r} must be text: "
                              + ("the finding in one sentence, as the source states it" if key == "claim"
                                 else "the page, table or section of the source"))
        cite = f.get("cite")
        if not isinstance(cite, str) or not cite.strip():
            errors.append(f"{where}.cite {cite!r} must be the BibTeX key of the source")
        elif bib_keys is not None and cite not in bib_keys:
            errors.append(f"{where}.cite {cite!r} is not a key of {CURATED_BIB.relative_to(CURATED_BIB.parents[2])} "
                          "(nor of dataset.citation): add the confirmed entry there (bibliography_facts.md) first")
        outcomes = f.get("outcomes")
        if outcomes is not None:
            if not isinstance(outcomes, list) or not outcomes:
                errors.append(f"{where}.outcomes {outcomes!r} must be a list of outcome variables")
            else:
                for out in outcomes:
                    if (reg.tier1.get(str(out)) or {}).get("role") != "outcome":
                        errors.append(f"{where}.outcomes: {out!r} is not an outcome variable of the registry")
        errors += _test_problems(reg, where, f.get("test"))
    return errors
