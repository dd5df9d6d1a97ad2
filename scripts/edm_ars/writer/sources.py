"""Evaluate the source a number macro records (numbers.json / numbers.tex), so that `verify-paper` can check the
printed value against the value the source denotes.

A source is a small expression over artifact paths. The forms the Writer emits (writer/numbers.py, common.py,
narrative.py and sections/*), each evaluated here:

==========================  ===============================================================================
form                        example
==========================  ===============================================================================
path                        ``results.json:models.xgboost.metrics.auc`` (a number, or a list of numbers:
                            a confidence interval; a key that holds dots, ``class_balance.1.0``, is found)
length                      ``len(data_report.json:predictors_before)``
count                       ``count(data_report.json:checks[passed])``,
                            ``count(results.json:fairness.attributes[kind=attribute].gaps[flagged])``:
                            the items a path reaches through filters (below)
difference                  ``len(results.json:selection_evidence.overlapping_top) - 1``, ``A - B``
sum                         ``A + B``, ``A + B - C`` (the units of repeated records: train_units +
                            test_units - units_on_both_sides of ``data_report.json:split.repeated``)
absolute difference         ``|results.json:models.a.metrics.auc - results.json:models.b.metrics.auc|``
ratio                       ``results.json:models.m.metrics.rmse / data_report.json:outcome_summary.sd``,
                            ``data_report.json:analytic_n / data_report.json:original_n``
share of a total            ``data_report.json:class_balance.1 / sum(class_balance)`` (the total is the sum
                            of the values at ``class_balance`` in the same artifact)
scaled (percentage)         ``100 * results.json:stability.thresholds.unstable_top5``
overlap of two top fives    ``|top5(results.json:shap.by_model.a.top_features) &
                            top5(results.json:shap.by_model.b.top_features)|``
common top five             ``count(features in top5 of every results.json:shap.by_model entry)``
a number in a text          ``data_report.json:split.method (n_splits)``: the printed value must be one of the
                            numbers the text at the path holds (the parenthesised note says which one)
==========================  ===============================================================================

A filter ``[...]`` after a key takes the items of the mapping or list there (their values) and keeps those that
pass every comma-separated condition: ``field`` (truthy), ``field=value``, ``field!=value`` (``true``, ``false``,
``null`` or text), ``field>number`` (also <, >=, <=), ``not null`` (the item itself), and ``predictors`` (the
item's key is one of the study's predictors, data_report.json:predictors_before). Keys after a filter apply to
every item kept.

:func:`evaluate` returns the value(s) or raises :class:`SourceError` saying why the source cannot be evaluated
(a form not listed here, an artifact or a key that is absent); :func:`source_values` is its numeric view.
"""

from __future__ import annotations

import math
import re
from typing import Any

from edm_ars.core.errors import EdmArsError

#: an artifact path: FILE.json:dotted.path[filter].more. A key may hold spaces (the intersection attribute
#: "X1RACE x X1SEX") but no parenthesis, bar or bracket, and no operator between spaces (" - ", " / ", " * ", " & ")
_STEPS = r"(?:(?! [-/*&] )[^|()\[\]]|\[[^\[\]]*\])+"
PATH = rf"[A-Za-z_]+\.json:{_STEPS}"
_PATH = re.compile(rf"(?P<file>[A-Za-z_]+\.json):(?P<path>{_STEPS})")
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


class SourceError(EdmArsError):
    """A macro's source that cannot be evaluated."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ---- paths -------------------------------------------------------------------------------------------
def _tokens(path: str) -> list[tuple[str, str]]:
    """('key', name) and ('filter', conditions) tokens of a dotted path with [filters]."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in re.finditer(r"\.?([^.\[\]]+)|\[([^\]]*)\]", path):
        if m.start() != pos:
            raise SourceError(f"malformed path {path!r}")
        out.append(("key", m.group(1)) if m.group(1) is not None else ("filter", m.group(2).strip()))
        pos = m.end()
    if pos != len(path) or not out:
        raise SourceError(f"malformed path {path!r}")
    return out


def _literal(text: str) -> Any:
    low = text.strip().lower()
    return {"true": True, "false": False, "null": None, "none": None}.get(low, text.strip())


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, bool) or wanted is None:
        return value is wanted
    if _is_number(value):
        try:
            return float(value) == float(wanted)
        except ValueError:
            return False
    return str(value) == str(wanted)


def _passes(key: Any, item: Any, condition: str, artifacts: dict[str, Any]) -> bool:
    cond = condition.strip()
    if cond == "not null":
        return item is not None
    if cond == "predictors":
        preds = (artifacts.get("data_report.json") or {}).get("predictors_before")
        if not isinstance(preds, list):
            raise SourceError("the filter [predictors] needs data_report.json:predictors_before")
        return key in preds
    m = re.fullmatch(r"([\w.-]+)\s*(!=|>=|<=|=|>|<)\s*(.+)", cond)
    if not m:
        if not re.fullmatch(r"[\w.-]+", cond):
            raise SourceError(f"unknown filter condition {cond!r}")
        return isinstance(item, dict) and bool(item.get(cond))
    field, op, raw = m.groups()
    value = item.get(field) if isinstance(item, dict) else None
    if op in ("=", "!="):
        return _same(value, _literal(raw)) == (op == "=")
    if not _is_number(value):
        return False
    bound = float(raw)
    return {">": value > bound, "<": value < bound, ">=": value >= bound, "<=": value <= bound}[op]


def _step(node: Any, parts: list[str]) -> tuple[Any, int]:
    """The child of `node` at parts[0] (a mapping key, which may itself hold dots: the longest that exists is
    taken; or a list index), and how many parts it used."""
    if isinstance(node, dict):
        for k in range(len(parts), 0, -1):
            key = ".".join(parts[:k])
            if key in node:
                return node[key], k
    elif isinstance(node, list) and re.fullmatch(r"-?\d+", parts[0]) and -len(node) <= int(parts[0]) < len(node):
        return node[int(parts[0])], 1
    raise KeyError(parts[0])


def resolve(artifacts: dict[str, Any], file: str, path: str) -> tuple[Any, bool]:
    """The value at FILE:path, and whether a filter made it a list of items. KeyError names what is absent."""
    if file not in artifacts:
        raise SourceError(f"artifact {file} is not among the paper's artifacts")
    tokens = _tokens(path)
    nodes: list[tuple[Any, Any]] = [(None, artifacts[file])]
    many = False
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == "filter":
            kept = []
            for _, node in nodes:
                items = list(node.items()) if isinstance(node, dict) else list(enumerate(node)) \
                    if isinstance(node, list) else []
                kept += [(k, v) for k, v in items
                         if all(_passes(k, v, c, artifacts) for c in _split_conditions(text))]
            nodes, many = kept, True
            i += 1
            continue
        keys = [text]
        j = i + 1
        while j < len(tokens) and tokens[j][0] == "key":
            keys.append(tokens[j][1])
            j += 1
        out = []
        for _, node in nodes:
            cur, rest = node, keys
            try:
                while rest:
                    cur, used = _step(cur, rest)
                    rest = rest[used:]
            except KeyError:
                if many:
                    continue  # an item without the key
                raise KeyError(f"{file}:{path} (no {'.'.join(rest)!r})") from None
            out.append((None, cur))
        nodes = out
        i = j
    values = [v for _, v in nodes]
    return (values if many else values[0]), many


def _split_conditions(text: str) -> list[str]:
    return [c for c in (p.strip() for p in text.split(",")) if c]


# ---- expressions -----------------------------------------------------------------------------------
def _path(src: str, artifacts: dict[str, Any]) -> Any:
    m = _PATH.fullmatch(src.strip())
    if not m:
        raise SourceError(f"not an artifact path: {src!r}")
    return resolve(artifacts, m.group("file"), m.group("path"))[0]


def _top5(src: str, artifacts: dict[str, Any]) -> list[str]:
    m = re.fullmatch(r"top5\((.+)\)", src.strip())
    if not m:
        raise SourceError(f"not a top-five set: {src!r}")
    return _top5_of(_path(m.group(1), artifacts))


def _top5_of(features: Any) -> list[str]:
    if not isinstance(features, list):
        raise SourceError("top5(...) needs a list of features")
    return [str(f.get("feature")) for f in features[:5] if isinstance(f, dict) and f.get("feature")]


def _number(value: Any, src: str) -> float:
    if _is_number(value):
        return float(value)
    raise SourceError(f"{src!r} is not a number")


def evaluate(source: str, artifacts: dict[str, Any]) -> Any:
    """The value a macro's source denotes: a number, or a list of numbers (an interval; the numbers of a text).
    Raises SourceError when the form is unknown or the value is absent or not numeric."""
    src = source.strip()
    try:
        return _evaluate(src, artifacts)
    except KeyError as exc:
        raise SourceError(f"{source}: absent from the artifacts: {exc.args[0]}") from None
    except ZeroDivisionError:
        raise SourceError(f"{source}: division by zero") from None


def _evaluate(src: str, artifacts: dict[str, Any]) -> Any:
    # a number read from a text: PATH (note)
    if m := re.fullmatch(rf"({PATH}) \(([^()]+)\)", src):
        text = _path(m.group(1), artifacts)
        if not isinstance(text, str):
            raise SourceError(f"{m.group(1)} is not a text to read a number from")
        found = [float(x) for x in _NUMBER_IN_TEXT.findall(text)]
        if not found:
            raise SourceError(f"{m.group(1)} holds no number")
        return found
    # |top5(A) & top5(B)|: the size of the overlap of two top-five sets
    if m := re.fullmatch(r"\|(top5\(.+?\)) & (top5\(.+?\))\|", src):
        return float(len(set(_top5(m.group(1), artifacts)) & set(_top5(m.group(2), artifacts))))
    # |A - B|
    if m := re.fullmatch(r"\|(.+) - (.+)\|", src):
        return abs(_scalar(m.group(1), artifacts) - _scalar(m.group(2), artifacts))
    # K * A
    if m := re.fullmatch(r"(-?\d+(?:\.\d+)?) \* (.+)", src):
        return float(m.group(1)) * _scalar(m.group(2), artifacts)
    # A / sum(REL): a share of the total of the values at REL in A's artifact
    if m := re.fullmatch(rf"({PATH}) / sum\(([\w.\[\]=!<>, -]+)\)", src):
        file = _PATH.fullmatch(m.group(1)).group("file")  # type: ignore[union-attr]
        whole = resolve(artifacts, file, m.group(2))[0]
        values = list(whole.values()) if isinstance(whole, dict) else whole
        if not isinstance(values, list) or not all(_is_number(v) for v in values):
            raise SourceError(f"sum({m.group(2)}) needs numbers in {file}")
        return _scalar(m.group(1), artifacts) / sum(float(v) for v in values)
    # A / B
    if m := re.fullmatch(r"(.+?) / (.+)", src):
        return _scalar(m.group(1), artifacts) / _scalar(m.group(2), artifacts)
    # A + B (the terms may be differences: A + B - C)
    if m := re.fullmatch(r"(.+?) \+ (.+)", src):
        return _scalar(m.group(1), artifacts) + _scalar(m.group(2), artifacts)
    # A - B (a constant or another term)
    if m := re.fullmatch(r"(.+?) - (.+)", src):
        return _scalar(m.group(1), artifacts) - _scalar(m.group(2), artifacts)
    if re.fullmatch(r"-?\d+(?:\.\d+)?", src):
        return float(src)
    # count(features in top5 of every PATH entry)
    if m := re.fullmatch(rf"count\(features in top5 of every ({PATH}) entry\)", src):
        by = _path(m.group(1), artifacts)
        sets = [_top5_of(v.get("top_features") or []) for v in (by.values() if isinstance(by, dict) else by)
                if isinstance(v, dict)]
        sets = [s for s in sets if s]
        return float(len(set.intersection(*map(set, sets)))) if sets else 0.0
    # len(PATH), count(PATH[filters])
    if m := re.fullmatch(rf"(len|count)\(({PATH})\)", src):
        value = _path(m.group(2), artifacts)
        if not isinstance(value, (list, dict)):
            raise SourceError(f"{m.group(1)}({m.group(2)}) needs a list or a mapping")
        return float(len(value))
    if _PATH.fullmatch(src):
        value = _path(src, artifacts)
        if _is_number(value):
            return float(value)
        if isinstance(value, list) and value and all(_is_number(v) for v in value):
            return [float(v) for v in value]
        raise SourceError(f"{src} is not a number or a list of numbers")
    raise SourceError(f"{src!r} is not a source form verify-paper evaluates (see writer/sources.py)")


def _scalar(src: str, artifacts: dict[str, Any]) -> float:
    value = _evaluate(src.strip(), artifacts)
    if isinstance(value, list):
        raise SourceError(f"{src!r} is not a single number")
    return _number(value, src)


def source_values(source: str, artifacts: dict[str, Any]) -> list[float]:
    """The value(s) a source denotes, as a list of numbers; SourceError when it cannot be evaluated."""
    value = evaluate(source, artifacts)
    return value if isinstance(value, list) else [float(value)]
