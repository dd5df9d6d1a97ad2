"""`edm-ars init-registry DATA.csv`: a draft registry for a researcher's own CSV, to edit before a run.

Every decision is a stated suspicion from the column's name and values (identifier, weight or flag,
missing code, cluster, repeated person identifier (long format), protected attribute, outcome with its task, ranked
scores first, near-duplicate columns); the draft loads and matches its own file,
and its header lists each suspicion for the user to check. Every text the paper would print that the draft
can only guess (names, population and source of the data set, labels of columns named by codes, value labels,
the provenance statement) starts with the literal DRAFT_MARKER, and `validate_registry` refuses the registry,
naming each key, until the user has replaced them all. A text is drafted without the marker only when it cannot
be false: a readable column name as its label ("math_score" -> "Math score"), a question and population built
from the draft's own facts (outcome, predictors, subgroups, unit noun), and '' for the optional texts whose
absence makes the paper say something neutral (measures, purpose, actors, decision_time, predictor rationales).
Prose is drafted without leading articles ("mathplacement data"), since the paper's sentences add their own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from edm_ars.core.errors import DataError
from edm_ars.data.registry import DRAFT_MARKER, Registry, code_key, draft_marker_keys

MISSING_LABELS = ("NA", "N/A", "n/a", "na", "Missing", "missing", "MISSING", "Refused", "refused",
                  "Don't know", "Don't Know", "don't know", "DK", ".", "")
ID_TAIL = {"id", "ids", "uuid", "guid", "rownames"}
ID_NAME = re.compile(r"^(rownames|unnamed: ?0|index|(stu|student|user|learner|pupil|person|case|resp|respondent|"
                     r"sch|school|class|course|teacher|record|row|obs)_?(id|no|num|number)?)$|[a-z]ID$", re.IGNORECASE)
CLUSTERS = ("school", "class", "classroom", "section", "course", "teacher", "cluster", "college", "district", "site",
            "campus", "secondary", "second", "primary", "elementary", "university")
PERSONS = ("student", "stu", "user", "learner", "pupil", "person", "child", "kid", "participant")
SCHOOL_KINDS = {"secondary": "secondary school", "second": "secondary school", "primary": "primary school",
                "elementary": "elementary school"}  # a column named only by its school's kind (mlmRev ScotsSec)
TIME_WORDS = ("year", "years", "yr", "wave", "waves", "time", "occasion", "occ", "grade", "grd", "semester", "term",
              "session", "period", "visit", "round", "month", "week", "day", "date")  # most likely first
PLURALS = {"child": "children", "person": "people", "kid": "kids", "primary school": "primary schools",
           "secondary school": "secondary schools", "elementary school": "elementary schools", "class": "classes"}
WEIGHT_TOKENS = {"weight", "weights", "wt", "wgt", "wts"}
FLAG_NAME = re.compile(r"(flag|_flg|flg|_imp)$", re.IGNORECASE)
PROTECTED_TOKENS = {"sex", "gender", "female", "male", "race", "ethnicity", "ethnic", "raceeth", "minority", "lunch",
                    "frl", "frpl", "fsm", "meal", "meals", "ses", "disability", "disabled", "iep", "sped", "sen", "ell",
                    "esl", "eal", "lep", "immigrant", "black", "white", "hispanic", "latino", "latina", "asian"}
# names that are a protected attribute only as a few categories (a home language, a social class), not as a score
PROTECTED_CATEGORY_TOKENS = {"language", "lang", "homelang", "social", "class"}
SEX_VALUES = {"f", "m", "female", "male", "girl", "boy", "girls", "boys", "woman", "man", "women", "men"}
GROUP_WORDS = {w: w.capitalize() for w in ("black", "white", "hispanic", "latino", "latina", "asian")} | {
    w: w for w in ("female", "male", "minority", "immigrant", "disabled")}  # a 0/1 column named by its group
SUBJECTS = {"math", "maths", "mathematics", "reading", "read", "lang", "language", "english", "literacy", "numeracy",
            "science", "writing", "arithmetic"}  # a continuous column named by a school subject is a score
RARE_SHARE = 0.10  # a binary outcome whose smaller class is rarer than this is a flag: ranked after scores
STRONG_OUTCOME = re.compile(r"^(outcome|final\w*|post|posttest|postscore|pass|passed|passing|dropout\w*|dropped|"
                            r"complete[ds]?|completion|graduat\w*|retained|retention|persist\w*|attain\w*|result)$")
OUTCOME = re.compile(r"(score|scores|exam|exams|gpa|grade|grades|achieve|achievement)$|^(tests?|ach|achv)$")
PRIOR = re.compile(r"^(prior\w*|pre|pre(test|score|exam)s?|baseline|intake|entry|previous|prev|lag\w*|initial|start)$")
MAX_PREDICTORS = 30
MAX_LEVELS = 50  # a text column with more levels (free text, timestamps) is left out of the predictors
VALUE_LEVELS = {"protected": 12, "predictor": 6}  # codes with at most this many levels get drafted value labels


def draft(text: str) -> str:
    """A placeholder the user must replace: the text behind the draft marker."""
    return f"{DRAFT_MARKER} {text}"


def _yaml_code(value: Any) -> Any:
    """A code as a YAML key: an integer for float-coded integers (1.0 -> 1), else the text."""
    key = code_key(value)
    return int(key) if re.fullmatch(r"-?\d+", key) else key


def _draft_values(values: pd.Series, role: str) -> dict[Any, str] | None:
    """Value labels to edit for a column of a few codes: every protected attribute (its groups are named in the
    paper) and numeric codes of a predictor (0/1, 1-5...), whose meaning the draft cannot know."""
    present = values.dropna()
    numeric = pd.api.types.is_numeric_dtype(present) and not pd.api.types.is_bool_dtype(present)
    if role not in VALUE_LEVELS or present.nunique() > VALUE_LEVELS[role] or (role == "predictor" and not numeric):
        return None
    if numeric and not _integer_like(present):
        return None
    codes = sorted(present.unique(), key=lambda v: (float(v), "") if numeric else (0.0, str(v)))
    return {_yaml_code(c): draft(f"what {code_key(c)} means") for c in codes}


def known_values(words: list[str], values: pd.Series) -> dict[Any, str] | None:
    """Value labels the draft can know, without a draft marker: a sex coded F/M (female/male, girl/boy...), and a
    0/1 column named by one group (black, hispanic, female...: 1 is the group, 0 is not); None otherwise."""
    present = values.dropna()
    observed = {code_key(v): str(v).strip().lower() for v in present.unique()}
    if len(observed) == 2 and set(observed.values()) <= SEX_VALUES:
        return {_yaml_code(k): "Female" if v in ("f", "female", "girl", "girls", "woman", "women") else "Male"
                for k, v in sorted(observed.items())}
    if len(words) == 1 and words[0] in GROUP_WORDS and set(observed) == {"0", "1"}:
        group = GROUP_WORDS[words[0]]
        other = {"female": "male", "male": "female"}.get(group, f"not {group}")
        return {0: other.capitalize() if group in ("female", "male") else other,
                1: group.capitalize() if group in ("female", "male") else group}
    return None


def tokens(name: Any) -> list[str]:
    """Lower-case words of a column name (snake_case, camelCase, spaces, dots)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def identifier_name(name: str) -> str:
    """A lower-case identifier from a file name or a label (dataset.name, question ids)."""
    ident = re.sub(r"[^a-z0-9_]+", "_", str(name).lower()).strip("_") or "dataset"
    return f"data_{ident}" if ident[0].isdigit() else ident


def numeric_codes(values: pd.Series) -> list[float]:
    """Reserve codes of a numeric column: a few negative integers in an otherwise non-negative column (-1, -7,
    -8, -9...), or 9s-codes (97-99, 997-999, 9997-9999) far above the rest of the values."""
    present = values.dropna()
    if len(present) < 2 or not pd.api.types.is_numeric_dtype(present) or pd.api.types.is_bool_dtype(present):
        return []
    codes: list[float] = []
    neg, rest = present[present < 0], present[present >= 0]
    negs = sorted(float(v) for v in neg.unique())
    contiguous = len(negs) >= 2 and negs == [float(-k) for k in range(len(negs), 0, -1)]
    integer_rest = bool((rest == rest.round()).all())
    if (len(neg) and len(rest) and (neg == neg.round()).all() and len(negs) <= 4 and len(neg) <= 0.3 * len(present)
            and (rest.nunique() >= 3 or max(negs) <= -5) and not (contiguous and integer_rest)):
        codes += negs
    for base in (99.0, 999.0, 9999.0):
        reserve = rest[rest.isin([base - 2, base - 1, base])]
        others = rest[~rest.isin([base - 2, base - 1, base])]
        if (base in set(reserve) and len(others) and others.nunique() >= 2 and others.max() < 0.7 * (base - 2)
                and len(reserve) <= 0.3 * len(present)):
            codes += sorted(float(v) for v in reserve.unique())
    return codes


def _as_numbers(values: pd.Series) -> pd.Series:
    """A text column whose every value is a number, as numbers; anything else unchanged."""
    if pd.api.types.is_numeric_dtype(values) or values.notna().sum() == 0:
        return values
    numeric = pd.to_numeric(values.astype("string").str.strip(), errors="coerce")
    return numeric.astype(float) if numeric.notna().sum() == values.notna().sum() else values


def column_type(values: pd.Series) -> str:
    """continuous, binary or categorical, from the values (missing codes already removed)."""
    present = values.dropna()
    n = present.nunique()
    if n <= 2:
        return "binary"
    numeric = pd.api.types.is_numeric_dtype(present) and not pd.api.types.is_bool_dtype(present)
    if numeric and n > 12:
        return "continuous"
    if numeric and not _integer_like(present):
        return "continuous"  # codes are integers: a few fractional values are measurements (a school's percentage)
    spread = present.max() - present.min() + 1 if numeric else 0
    if numeric and n >= 7 and (spread <= n + 1 or spread > 4 * n):
        return "continuous"  # an integer score with most of its steps observed (1-10), or sparse large values (sizes)
    return "categorical"


def _integer_like(present: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(present):
        return False
    if pd.api.types.is_integer_dtype(present):
        return True
    return pd.api.types.is_numeric_dtype(present) and bool((present == present.round()).all())


def _distinct_per_row(raw: pd.Series) -> bool:
    """As the data check sees an identifier: every present value distinct, and integer-like or text."""
    present = raw.dropna()
    if len(present) < 2 or present.nunique() != len(present):
        return False
    return _integer_like(present) or not pd.api.types.is_numeric_dtype(present)


def _runnable_binary(values: pd.Series) -> bool:
    """Two values the DataEngineer maps to 0/1 without further instructions."""
    observed = {str(v).strip() for v in values.dropna().unique()}
    return len(observed) == 2 and (observed <= {"0", "1", "0.0", "1.0"} or observed == {"No", "Yes"})


def _cluster_word(name: str, clean: pd.Series) -> str | None:
    """The unit a column clusters rows by (school, class, user...), or None: named like a cluster or a repeated
    identifier, integer or text values, at least 2 rows per value on average."""
    words = tokens(name)
    joined = "".join(words)
    present = clean.dropna()
    if present.empty or present.nunique() > len(clean) / 2:
        return None
    if pd.api.types.is_numeric_dtype(present) and not _integer_like(present):
        return None
    for word in CLUSTERS + PERSONS:  # the word alone, or with id/no/code/name (not school_type, class_size)
        if re.fullmatch(rf"{word}(id|no|num|number|code|name)?(\d+|[a-z])?", joined):
            if word in SCHOOL_KINDS and not joined.startswith(word + "school") and not _code_like(present):
                return None  # "primary"/"second" alone name a school only when their values are codes
            return "student" if word == "stu" else SCHOOL_KINDS.get(word, word)
        if word in SCHOOL_KINDS and re.fullmatch(rf"{word}(ary)?(school|sch)(id|no|num|code|name)?", joined):
            return SCHOOL_KINDS[word]
    if re.fullmatch(r"sch(l|ool)?(id|no|num|code)?", joined):
        return "school"
    if len(words) > 1 and words[-1] in ID_TAIL:
        return words[0]
    if (pd.api.types.is_numeric_dtype(present) and _code_like(present)
            and present.min() >= 10_000):  # long integer codes (273026452) repeated across rows
        return words[0] if words else "group"
    return None


def _code_like(present: pd.Series) -> bool:
    """Integer codes with many rows per value (a school or child number), or text labels: at least 5 distinct
    values, at least 2 rows per value on average, none negative."""
    if present.nunique() < 5 or len(present) < 2 * present.nunique():
        return False
    if not pd.api.types.is_numeric_dtype(present) or pd.api.types.is_bool_dtype(present):
        return not pd.api.types.is_bool_dtype(present)
    return _integer_like(present) and present.min() >= 0


def plural(unit: str) -> str:
    """The plural of a unit noun (child -> children, school -> schools)."""
    return PLURALS.get(unit, unit if unit.endswith("s") else f"{unit}s")


def _time_column(frame: pd.DataFrame, clean: dict[Any, pd.Series], unit_col: Any, skip: set[Any]) -> Any:
    """The column ordering a unit's records (year, wave, time, occasion, grade...): named like one and varying
    within most units; None when no column is."""
    ranked = []
    for col in frame.columns:
        words = tokens(col)
        hits = [TIME_WORDS.index(w) for w in words if w in TIME_WORDS]
        if col == unit_col or col in skip or not hits:
            continue
        values = clean[col]
        if values.dropna().nunique() < 2:
            continue
        varying = values.groupby(clean[unit_col]).nunique().gt(1).mean()
        if varying >= 0.5:
            ranked.append((min(hits), list(frame.columns).index(col), col))
    return min(ranked)[2] if ranked else None


def readable_name(name: Any) -> str | None:
    """The column's name as words ("math_score" -> "Math score", "verbal" -> "Verbal") when it is made of
    readable words (letters only, lower case after the first letter, each word with a vowel, joined by _ or .);
    None for a code (X1TXMTSCOR, v23, q4b, ACTM, PlcmtScore), whose label only the user can write."""
    words = str(name).replace(".", "_").split("_")
    if not all(re.fullmatch(r"[A-Za-z][a-z]*", w) and re.search(r"[aeiouy]", w.lower()) for w in words):
        return None
    return " ".join(w.lower() for w in words).capitalize()


def _variable(col: Any, values: pd.Series) -> dict[str, Any]:
    """A variable entry; its label is the readable name of the column (it names the column and claims nothing
    else), or a draft-marker text for a code."""
    label = readable_name(col) or draft(" ".join(tokens(col)).capitalize() or str(col))
    return {"name": col, "label": label, "role": "predictor",
            "type": column_type(values), "pct_missing": round(float(values.isna().mean() * 100), 2)}


def _named(names: list[str]) -> str:
    """Names joined as in a sentence: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _question_texts(col: Any, predictors: list[Any], subgroups: list[Any], units: str) -> tuple[str, str]:
    """The question and population of a drafted question, from the facts the draft holds (the outcome, its
    predictors, the subgroups, the unit noun), true by construction: each variable by its readable name in lower
    case, or by its column name when that is a code; more than 6 predictors: the first 3 "and other variables"."""
    def name(c: Any) -> str:
        readable = readable_name(c)
        return readable.lower() if readable else str(c)
    shown = [name(p) for p in predictors] if len(predictors) <= 6 else [
        *(name(p) for p in predictors[:3]), "other variables"]
    across = (", and is the prediction equally accurate across " + _named([name(s) for s in subgroups])
              + " groups?" if subgroups else "?")
    question = f"How accurately can {name(col)} be predicted from {_named(shown)}{across}"
    return question, f"{units.capitalize()} with a recorded value of {name(col)}"


def _outcome_rank(name: str, typ: str, values: pd.Series, position: int) -> tuple[int, int, int, int] | None:
    """How likely a column is the outcome (smaller first), or None: continuous or binary, named like an outcome
    (score, grade, exam, final, pass, dropout, attainment, a school subject...) and not like a prior measure.
    Runnable first; then scores and attainment, then binary outcomes, then rare flags (smaller class under
    RARE_SHARE); then strong names; then the later column."""
    words = tokens(name) or [str(name).lower()]
    if typ not in ("continuous", "binary") or values.dropna().nunique() < 2 or any(PRIOR.match(w) for w in words):
        return None
    strong = any(STRONG_OUTCOME.match(w) for w in words)
    subject = typ == "continuous" and bool(set(words) & SUBJECTS)
    if not strong and not subject and not any(OUTCOME.search(w) for w in words):
        return None
    runnable = typ == "continuous" or _runnable_binary(values)
    kind = 0 if typ == "continuous" else 2 if values.dropna().value_counts(normalize=True).min() < RARE_SHARE else 1
    return (0 if runnable else 1, kind, 0 if strong or subject else 1, -position)


def _protected_reason(words: list[str], typ: str, values: pd.Series) -> str | None:
    """Why a column looks like a protected attribute (its name: sex, race, ses, lunch, disability, language...,
    or its values: F/M, female/male), or None."""
    hit = sorted(set(words) & PROTECTED_TOKENS)
    if hit:
        return f"named {hit[0]}"
    hit = sorted(set(words) & PROTECTED_CATEGORY_TOKENS)
    if hit and typ != "continuous" and values.dropna().nunique() <= 12:
        return f"named {hit[0]}, with {values.dropna().nunique()} categories"
    observed = {str(v).strip().lower() for v in values.dropna().unique()}
    if len(observed) == 2 and observed <= SEX_VALUES:
        return f"values {sorted(observed)}"
    return None


def near_duplicates(clean: dict[Any, pd.Series], names: list[Any]) -> list[tuple[Any, Any, str]]:
    """Pairs of columns holding the same information, in column order, each with why: equal after recoding (a
    one-to-one map between their values, at most MAX_LEVELS of them or at least 5 rows each), a correlation above
    0.98, or the second a deterministic function of the first's categories (at most MAX_LEVELS, at least 5 rows
    each)."""
    found = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = pd.DataFrame({"a": clean[a], "b": clean[b]}).dropna()
            if len(both) < 10 or both["a"].nunique() < 2 or both["b"].nunique() < 2:
                continue
            a_fixes_b = bool(both.groupby("a")["b"].nunique().max() == 1)
            b_fixes_a = bool(both.groupby("b")["a"].nunique().max() == 1)
            levels = both["a"].nunique()
            if a_fixes_b and b_fixes_a and (levels <= MAX_LEVELS or len(both) >= 5 * levels):
                # categories, not measurements: two columns of (nearly) all-distinct values map one-to-one trivially
                found.append((a, b, "equal after recoding"))
                continue
            numeric = all(pd.api.types.is_numeric_dtype(both[c]) and not pd.api.types.is_bool_dtype(both[c])
                          for c in ("a", "b"))
            if numeric and both["a"].std() > 0 and both["b"].std() > 0:
                r = float(np.corrcoef(both["a"].astype(float), both["b"].astype(float))[0, 1])
                if abs(r) > 0.98:
                    found.append((a, b, f"correlation {r:.3f}"))
                    continue
            for x, y, fixes in ((a, b, a_fixes_b), (b, a, b_fixes_a)):
                levels = both["a" if x == a else "b"].nunique()
                if fixes and levels <= MAX_LEVELS and len(both) >= 5 * levels:
                    found.append((a, b, f"{y} is a function of the categories of {x}"))
                    break
    return found


def draft_registry(frame: pd.DataFrame, source: str, name: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The draft registry of the data frame read from `source` (a file name; `name` overrides the dataset name
    drawn from its stem), and the suspicions behind it, one line each."""
    file = Path(str(source)).name
    dname = identifier_name(name or Path(str(source)).stem)
    if len(frame) == 0:
        raise DataError(f"{source}: the file has no rows; nothing to draft a registry from")
    if frame.shape[1] < 2:
        raise DataError(f"{source}: the file has {frame.shape[1]} column(s); a study needs an outcome and predictors")
    notes: list[str] = []
    labels: set[str] = set()
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]):
            text = frame[col].astype("string").str.strip()
            hits = sorted({t for t in MISSING_LABELS if (text == t).any()})
            if hits:
                labels.update(hits)
                notes.append(f"missing labels in {col}: {hits}")
    unlabelled = {c: _as_numbers(frame[c].mask(frame[c].astype("string").str.strip().isin(labels).fillna(False)
                                                .astype(bool))) for c in frame.columns}
    codes: set[float] = set()
    for col, values in unlabelled.items():
        found = numeric_codes(values)
        if found:
            codes.update(found)
            notes.append(f"missing codes in {col}: {', '.join(f'{c:g}' for c in found)}")
    clean = {c: v.mask(v.isin(sorted(codes))) if pd.api.types.is_numeric_dtype(v) else v for c, v in unlabelled.items()}
    ids, excluded, clusters, protected, variables = [], [], [], [], []
    ranks: dict[str, tuple[int, int, int, int]] = {}
    for position, col in enumerate(frame.columns):
        raw, values, words = frame[col], clean[col], tokens(col)
        present = values.dropna()
        if present.empty:
            excluded.append(col)
            notes.append(f"empty column (every value missing): {col}; left out")
            continue
        unique_rows = bool(raw.notna().all() and raw.nunique() == len(raw))
        id_named = bool(ID_NAME.search(str(col)) or (words and words[-1] in ID_TAIL))
        if unique_rows and (id_named or _distinct_per_row(raw)):
            ids.append(col)
            why = "unique per row" if _distinct_per_row(raw) else "unique per row and named like an ID"
            notes.append(f"suspected identifier: {col} ({why})")
            continue
        if _distinct_per_row(raw):
            excluded.append(col)
            notes.append(f"suspected identifier: {col} (distinct on every row where present, but some rows are "
                         "missing, so it cannot be dataset.id_column); never a predictor")
            continue
        numeric = pd.api.types.is_numeric_dtype(present) and not pd.api.types.is_bool_dtype(present)
        if (words and (set(words) & WEIGHT_TOKENS or re.match(r"^W\d", str(col)))) and numeric and present.min() >= 0 \
                and present.nunique() > 2:
            excluded.append(col)
            notes.append(f"suspected weight: {col}; never a predictor (analyses are unweighted)")
            continue
        if FLAG_NAME.search(str(col)):
            excluded.append(col)
            notes.append(f"suspected flag: {col}; never a predictor")
            continue
        unit = _cluster_word(str(col), values)
        if unit:
            clusters.append((col, unit))
            continue
        if id_named:
            excluded.append(col)
            notes.append(f"named like an identifier but neither unique nor a cluster: {col}; never a predictor")
            continue
        if present.nunique() < 2:
            excluded.append(col)
            notes.append(f"constant column: {col} (one value: {present.iloc[0]!r}); left out")
            continue
        rec = _variable(col, values)
        typ = rec["type"]
        rank = _outcome_rank(str(col), typ, values, position)
        why_protected = _protected_reason(words, typ, values)
        if why_protected:
            rec.update(role="protected", protected=True)
            protected.append(col)
            notes.append(f"suspected protected attribute: {col} ({typ}, {why_protected}); audited for subgroup "
                         "gaps, not a predictor")
        elif rank is not None:
            rec["role"] = "outcome"
            ranks[col] = rank
        elif typ == "categorical" and not numeric and present.nunique() > MAX_LEVELS:
            excluded.append(col)
            notes.append(f"text column with {present.nunique()} distinct values (free text, dates?): {col}; "
                         "left out of the predictors")
            continue
        labels_to_edit = _draft_values(values, rec["role"])
        known = known_values(words, values) if rec["role"] == "protected" else None
        if known:
            labels_to_edit = known
            source_of = "name" if len(words) == 1 and words[0] in GROUP_WORDS else "values"
            notes.append(f"value labels of {col} drafted from its {source_of}: {known}; check them")
        if labels_to_edit:
            rec["values"] = labels_to_edit
        variables.append(rec)

    grouping = {"unit": "school", "columns": [], "reconstructed": False}
    persons = [(c, u) for c, u in clusters if u in PERSONS or u == "student"]
    clusters = [(c, u) for c, u in clusters if (c, u) not in persons]
    for col, unit in list(persons):  # pupils numbered 1, 2, ... within each school: one row per person, no repeats
        within = next((c for c, _ in clusters  # (a few data-entry repeats of a number, under 1% of rows, allowed)
                       if pd.DataFrame({"c": clean[c], "p": clean[col]}).dropna().duplicated().mean() < 0.01), None)
        if within is not None:
            persons.remove((col, unit))
            excluded.append(col)
            notes.append(f"identifier: {col} numbers each {unit} within {within} (almost no number has two rows in "
                         f"one {within}), so each row is a different {unit}: not repeated records; never a predictor")
    repeated = None
    if persons:  # a person identifier that repeats across rows: long format, each unit's records on one side
        col, unit = max(persons, key=lambda cu: clean[cu[0]].nunique())
        excluded.append(col)
        time = _time_column(frame, clean, col, set(ids) | {c for c, _ in clusters})
        repeated = {"unit": unit, "units": plural(unit), "id": col, "time": time}
        if time is not None:  # the time column orders a unit's records: neither a predictor nor an outcome
            variables = [r for r in variables if r["name"] != time]
            protected = [c for c in protected if c != time]
            ranks.pop(time, None)
            excluded.append(time)
        per = len(frame) / clean[col].nunique()
        notes.append(f"repeated records: {col} ({clean[col].nunique()} {plural(unit)}, {per:.1f} rows each) is a "
                     f"{unit} identifier that repeats across rows, drafted as long format (dataset.repeated); each "
                     f"{unit}'s records will be kept on one side of the split" + (
                         f", ordered by {time}" if time else "; no time column found (repeated.time: null)"))
        for other, other_unit in persons:
            if other != col:
                excluded.append(other)
                notes.append(f"another {other_unit} identifier: {other}; not a predictor")
    splittable = [(c, u) for c, u in clusters if clean[c].nunique() >= 5]  # fewer groups cannot make a split
    if splittable:  # schools, classes... with at least 10 groups first
        order = CLUSTERS + tuple(SCHOOL_KINDS.values())
        col, unit = min(splittable, key=lambda cu: (clean[cu[0]].nunique() < 10,
                                                    order.index(cu[1]) if cu[1] in order else len(order)))
        grouping = {"unit": unit, "columns": [col], "reconstructed": False}
    for other, other_unit in clusters:
        n_groups = clean[other].nunique()
        what = f"{other} ({n_groups} {other_unit} values, {len(frame) / n_groups:.1f} rows each)"
        text_labels = not pd.api.types.is_numeric_dtype(clean[other].dropna())
        if other in grouping["columns"]:
            excluded.append(other)
            notes.append(f"suspected grouping: {what}; the split keeps each one on one side"
                         + (f", with each {repeated['unit']}'s records inside it" if repeated else ""))
        elif n_groups <= 12 and text_labels:  # a coarse grouping named by labels (a few courses): a predictor
            variables.append(_variable(other, clean[other]))
            notes.append(f"another cluster-like column: {what}; kept as a predictor")
        else:
            excluded.append(other)
            if grouping["columns"]:  # declared as a level the split does not keep: the paper then says so
                grouping.setdefault("also", []).append({"unit": other_unit, "columns": [other], "reconstructed": False})
                grouping["split_by"] = grouping["unit"]
                notes.append(f"another cluster level (nested or cross-classified): {what}; never a predictor; drafted "
                             f"as grouping.also, with split_by: {grouping['unit']} (the split keeps each "
                             f"{grouping['unit']} on one side; split_by: all would keep every connected group of "
                             "both levels together)")
            else:
                notes.append(f"another cluster level (nested or cross-classified): {what}; never a predictor")
    used = [r["name"] for r in variables] + grouping["columns"]
    for code in sorted(codes):  # the codes apply to every column: warn where one looks like a real value
        for col in used:
            values = unlabelled[col]
            if pd.api.types.is_numeric_dtype(values) and code in set(values) and code not in numeric_codes(values):
                rest = values[values != code]
                if rest.min() <= code <= rest.max():
                    notes.append(f"WARNING: {code:g} is a missing code elsewhere but looks like a real value of {col} "
                                 f"(range {rest.min():g} to {rest.max():g}); sentinels apply to every column")

    if not any(r[0] == 0 for r in ranks.values()):  # no runnable outcome by name: the last 0/1, Yes/No or
        for rec in reversed(variables):                  # continuous column not named like an ID can still serve
            if rec["role"] == "predictor" and not re.search(r"id\d*$", str(rec["name"]), re.IGNORECASE) and (
                    rec["type"] == "continuous" or _runnable_binary(clean[rec["name"]])):
                rec["role"] = "outcome"
                ranks[rec["name"]] = (0, 3, 1, 0)
                notes.append(f"no runnable column is named like an outcome: {rec['name']} drafted as one by its "
                             "values only (probably not the outcome you study)")
                break
    if not ranks:
        raise DataError(f"{source}: no column can serve as an outcome (a 0/1, Yes/No or continuous column "
                        "that is not an identifier, weight, flag, cluster or protected attribute)")
    outcomes = sorted(ranks, key=lambda c: ranks[c])
    types = {r["name"]: r["type"] for r in variables}
    for col in outcomes:
        task = "regression" if types[col] == "continuous" else "binary classification"
        extra = "" if ranks[col][0] == 0 else (
            f"; its values {sorted(map(str, clean[col].dropna().unique()))} are not 0/1 or No/Yes: name the "
            "positive label (derive: {from, map}) before you run it")
        notes.append(f"candidate outcome: {col} ({task}){extra}")

    usable = [r for r in variables if r["role"] == "predictor"]
    if len(usable) > MAX_PREDICTORS:
        kept = {r["name"] for r in sorted(usable, key=lambda r: r["pct_missing"])[:MAX_PREDICTORS]}
        notes.append(f"{len(usable)} usable predictors: the {MAX_PREDICTORS} with the fewest missing values are "
                     f"drafted; left out: {[r['name'] for r in usable if r['name'] not in kept]}")
        usable = [r for r in usable if r["name"] in kept]
    predictors = [r["name"] for r in usable]
    twins: dict[Any, set[Any]] = {}
    for a, b, why in near_duplicates(clean, [r["name"] for r in variables]):
        twins.setdefault(a, set()).add(b)
        twins.setdefault(b, set()).add(a)
        roles = {r["name"]: r["role"] for r in variables}
        notes.append(f"near-duplicate columns: {a} and {b} ({why}); they hold the same information: keep one"
                     + (f"; {b} is not drafted as a predictor of {a}" if roles[a] == "outcome" else "")
                     + (f"; {a} is not drafted as a predictor of {b}" if roles[b] == "outcome" else ""))
    if len(predictors) < 3 and protected:  # a thin file: the protected attributes predict too (and are audited)
        predictors += [p for p in protected if p not in predictors]
        notes.append(f"only {len(usable)} usable predictor(s) besides the protected attributes: "
                     f"{', '.join(map(str, protected))} drafted as predictors too (still audited as subgroups); "
                     "drop them from a question's predictors if the study should not use them")
    per_question = {o: [p for p in predictors if p not in twins.get(o, set())] for o in outcomes}
    if len(per_question[outcomes[0]]) < 3:
        raise DataError(f"{source}: fewer than 3 usable predictors for the outcome {outcomes[0]} "
                        f"({per_question[outcomes[0]]}); identifiers, weights, flags, clusters and outcomes are never "
                        "predictors, nor a near-duplicate of the outcome; a run needs at least 3 (MIN_PREDICTORS)")
    for col in outcomes[1:]:
        if len(per_question[col]) < 3:
            notes.append(f"no question drafted for {col}: {len(per_question[col])} usable predictor(s), a run "
                         "needs at least 3")
    outcomes = [o for o in outcomes if len(per_question[o]) >= 3]
    questions = []
    for i, col in enumerate(outcomes):
        question, population = _question_texts(col, per_question[col], list(protected), "students")
        questions.append({
            "id": f"{identifier_name(col)}_prediction", "default": i == 0, "question": question, "outcome": col,
            "keywords": tokens(col), "population": population, "subgroups": list(protected),
            # '' until the user states why: the paper then leaves the rationale sentence out (registry/README.md)
            "predictors": {p: "" for p in per_question[col]},
        })
    words = " ".join(tokens(Path(str(source)).stem)) or dname
    dataset = {
        "name": dname, "title": draft(f"{words.capitalize()} data ({file})"),
        "id_column": ids[0] if len(ids) == 1 else ids, "require_all_variables": True,
        # no leading articles: the paper's sentences add their own ("Using the {long}, ...")
        "prose": {"short": draft(f"{words} data"), "long": draft(f"{words} data ({file})"),
                  "about": draft(f"students whose records make up {file}"), "source": draft(f"data file {file}"),
                  "design": "", "unit": "student", "units": "students",
                  # optional (the header says what each adds): '' makes the paper say something neutral instead
                  # (registry/README.md, "The paper's words about the data set")
                  "measures": "", "purpose": "", "actors": "", "decision_time": ""},
        "provenance": {"kind": "local_file",
                       "statement": draft(f"where the rows of {file} come from: who collected them, when and for "
                                          "what, and under which licence or agreement you use them.")},
        "grouping": grouping,
        **({"repeated": repeated} if repeated else {}),
        "waves": [],
        "sentinels": {"numeric": sorted(codes), "labels": sorted(labels)},
        "protected_default": list(protected),
        "protected_intersections": [],
        "limitations": [],
    }
    if not ids:
        notes.append("no identifier column found (dataset.id_column: []); name one if rows have an ID")
    doc = {"dataset": dataset, "variables": variables, "tier3": {"exact": ids + excluded}, "pitfalls": [],
           "questions": questions}
    return doc, notes


HEADER = """\
# DRAFT registry written by `edm-ars init-registry` from {source}. It loads and matches that file as written,
# but every entry is a guess from column names and values: check each one before you trust a paper.
# Every text the paper prints that the draft could only guess starts with {marker}: a run refuses the registry
# (naming each key) until you have replaced every {marker} text with what is true of your data. Edit these keys:
{keys}
# Format: registry/README.md of EDM-ARS. Check and edit at least:
#   - dataset.title, dataset.prose: the names (without a leading "the": the paper adds it), population (about),
#     source ("We used <source>") and design (e.g. "longitudinal survey"; '' says nothing) the paper states;
#   - optional, drafted '' (the paper then says something neutral; fill them to say more): dataset.prose.measures
#     (what the data record, a noun phrase: "they record <measures>"; '' says "many variables on each of the
#     <units>"), purpose (what a prediction would serve, a verb phrase without "to": "<actors> could use such a
#     prediction to <purpose>"; '' gives a sentence chosen by the task), actors (who acts on it, plural; ''
#     says "schools"), decision_time (when they act, e.g. "early in the school year"; '' when predictors and
#     outcome were recorded together: the paper then says the model cannot flag anyone in advance), and each
#     question's predictor rationales (why the predictor may predict the outcome; '' leaves that out);
#   - dataset.provenance: kind (public_use_file, restricted_use_file, generated, package_export or local_file), an
#     optional citation (a bibliography key) and the statement of where the rows come from; add the data set's own
#     BibTeX entry as dataset.citation (the entry as text, or a .bib file name beside this registry) to cite it;
#   - dataset.id_column and tier3.exact: identifiers, weights, flags and clusters, never predictors;
#   - dataset.sentinels: missing codes and labels apply to EVERY column; drop one that is a real value anywhere;
#   - dataset.grouping: the cluster the split keeps on one side (columns: [] when rows are independent);
#   - dataset.repeated (when drafted): the person whose several records (long format) the split keeps together,
#     {{unit, units, id, time}}; delete it if each row is a different person;
#   - dataset.waves: [] declares one cross-section (the paper then says time order could not be checked). If the
#     data have a time order, add waves [{{key, order, label, prose}}] and a `wave` on every variable, so that
#     each predictor strictly precedes the outcome; label and prose are noun phrases the paper puts after "the"
#     ("recorded in the {{prose}}": prose "intake wave (age 11)", not "at intake");
#   - variables: labels (a readable column name is drafted as its label: "math_score" -> "Math score"; make it
#     say more if you like), types and roles; values: the readable name of each code (group names in the paper);
#     a binary outcome whose values are not 0/1 or No/Yes needs its positive
#     label (research_spec outcome.positive_label, or derive: {{from: COLUMN, map: {{LABEL: 1, OTHER: 0}}}});
#   - questions: one per candidate outcome, the first is the default; keep a predictor only when it is measured
#     before the outcome and is not a part or a proxy of it. The question and population name the outcome, the
#     predictors and the subgroups as drafted: check them, and rewrite them when you change those or a label.
#     For the effect of a treatment instead, write a question with task: causal (its treatment, design and
#     covariates: registry/README.md, "Causal questions"; docs/causal.md).
# What the draft suspects:
{notes}
"""


def keys_to_edit(doc: dict[str, Any]) -> list[str]:
    """The draft's keys that hold the draft marker, grouped for the header: one line per section, variable
    labels and value labels together, a question's rationales together."""
    reg = Registry(dataset=doc["dataset"], tier1={str(v["name"]): v for v in doc["variables"]}, tier3=doc["tier3"],
                   pitfalls=doc["pitfalls"], questions=doc["questions"])
    keys = draft_marker_keys(reg)
    lines = [", ".join(k for k in keys if k.startswith("dataset."))]
    for what in ("label", "values"):
        names = list(dict.fromkeys(k.split("]")[0].removeprefix("variables[") for k in keys
                                   if k.startswith("variables[") and k.split("]", 1)[1].startswith("." + what)))
        if names:
            lines.append(f"variables[NAME].{what} of " + ", ".join(names))
    for q in doc["questions"]:
        mine = [k for k in keys if k.startswith(f"questions[{q['id']}]")]
        rationales = [k for k in mine if ".predictors." in k]
        rest = [k.split("]", 1)[1].lstrip(".") for k in mine if k not in rationales]
        if not mine:
            continue
        lines.append(f"questions[{q['id']}]: " + ", ".join(rest)
                     + (f" and the rationales of its {len(rationales)} predictors" if rationales else ""))
    return [line for line in lines if line]


def render_yaml(doc: dict[str, Any], notes: list[str], source: str | None = None) -> str:
    """The draft as YAML text, under a header comment that says it is a draft, lists the keys to edit and each
    suspicion."""
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110)
    lines = "\n".join(f"# {n}" for n in notes) or "# (nothing)"
    keys = "\n".join(f"#   - {line}" for line in keys_to_edit(doc))
    return HEADER.format(source=source or Path(str(doc["dataset"]["prose"]["source"]).split()[-1]).name,
                         notes=lines, keys=keys, marker=DRAFT_MARKER) + body
