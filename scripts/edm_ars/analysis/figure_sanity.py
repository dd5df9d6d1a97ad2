"""Figure sanity on the facts a drawn figure recorded (edm_ars.analysis.figures.figure_facts, kept in each figure's entry of
results.json under `drawn`): every numeric axis named, a legend wherever more than one series is plotted, and the
categories of an ordered categorical axis (quintiles, grades, waves, ordinal labels) in their order. Pure functions
over plain data (no matplotlib): the Critic's code check (review.checks.check_figure_sanity) and the fairness figure (the
order of an ordered attribute's groups) share them."""

from __future__ import annotations

import re
from typing import Any

ELLIPSIS = "\u2026"
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
            "eleventh", "twelfth")
_NUMBER = re.compile(r"^[\u2212-]?\d+(\.\d+)?$")
_Q = re.compile(r"^q(\d+)\b")  # Q1 (lowest), Q2, ...
_NTH = re.compile(r"^(\d+)(st|nd|rd|th)\b")  # 1st grade, 2nd grade, ...
_N_SUFFIX = re.compile(r"\(n=[\d,]+\)$")  # a group's size after its name (fairness_figures.n_suffix), squashed
_KINDERGARTEN = ("k", "kg", "kindergarten")  # the grade before grade 1
RANKING = "ranking"  # the panel (axes gid) of a figure whose categories are ranked (the SHAP figures)


def squash(text: Any) -> str:
    """A label without its whitespace (a wrapped tick label compares equal to the name it wraps)."""
    return "".join(str(text).split()).lower()


def shows(shown: str, name: Any) -> bool:
    """Whether a drawn label `shown` is `name` (wrapped, or cut after whole words with an ellipsis)."""
    s, n = _N_SUFFIX.sub("", squash(shown)), squash(name)
    if s.endswith(ELLIPSIS):
        return bool(s[:-1]) and n.startswith(s[:-1])
    return s == n


def ordinal_rank(label: Any) -> float | None:
    """The place a label states for itself: a number (a grade, a code of an ordered scale), Q<n> (a quintile),
    <n>st/nd/rd/th, or an ordinal word (First quintile); None for a label that states none (a name)."""
    text = " ".join(str(label).split()).lower()
    if _NUMBER.match(text):
        return float(text.replace("\u2212", "-"))
    if text in _KINDERGARTEN:
        return 0.0
    for pattern in (_Q, _NTH):
        m = pattern.match(text)
        if m:
            return float(m.group(1))
    for i, word in enumerate(ORDINALS):
        if text == word or text.startswith(word + " "):
            return float(i + 1)
    return None


def ranked(labels: list[Any]) -> list[Any] | None:
    """The labels in the order they state (:func:`ordinal_rank`), when every one states a distinct place; else
    None."""
    ranks = [ordinal_rank(x) for x in labels]
    if not labels or any(r is None for r in ranks) or len(set(ranks)) < len(ranks):
        return None
    return [x for _, x in sorted(zip(ranks, labels, strict=True), key=lambda t: t[0])]


def ordered_groups(rec: dict[str, Any]) -> list[str] | None:
    """The groups of an audited attribute (a fairness audit record) in their order when the attribute is ordered:
    binned into quintiles by the audit (the audit's order), or every group label stating its place (ordinal
    words, numbers, Q<n>); None for a nominal attribute (its groups have no order)."""
    names = [str(g["group"]) for g in rec.get("groups") or []]
    order = ranked(names)
    if order is not None:
        return order
    if rec.get("binned"):
        return names
    return None


def _in_order(shown: list[str], expected: list[list[Any]]) -> tuple[bool, list[str]]:
    """Whether the drawn categories follow `expected` (each place: the names it may be drawn as), in either
    direction (bottom-up or top-down); the drawn categories that have no place in it are returned too."""
    places, strangers = [], []
    for s in shown:
        k = next((i for i, names in enumerate(expected) if any(shows(s, n) for n in names)), None)
        if k is None:
            strangers.append(s)
        else:
            places.append(k)
    up = all(a < b for a, b in zip(places, places[1:], strict=False))
    down = all(a > b for a, b in zip(places, places[1:], strict=False))
    return up or down, strangers


def _flat(text: Any) -> str:
    return " ".join(str(text).split())


def _wave_names(reg: Any) -> list[list[str]]:
    """Each wave's names (key, label, prose) in the registry's order of waves."""
    waves = [w for w in (getattr(reg, "waves", None) or []) if isinstance(w, dict)] if reg is not None else []
    return [[str(w[k]) for k in ("key", "label", "prose") if w.get(k)]
            for w in sorted(waves, key=lambda w: float(w.get("order", 0)))]


def expected_order(categories: list[str], panel: Any, results: dict[str, Any], reg: Any = None
                   ) -> tuple[list[list[Any]], str] | None:
    """The order a categorical axis must follow (each place: the names it may be drawn as) and where that order
    comes from, or None (a nominal axis): a fairness panel of an ordered attribute (the audit's groups,
    :func:`ordered_groups`); the ranking of the interpreted model's top features (a RANKING panel); the
    registry's waves (every category a wave); labels that state their places (every category, at least three)."""
    attrs = (results.get("fairness") or {}).get("attributes") or {}
    if panel in attrs:
        order = ordered_groups(attrs[panel])
        return ([[g] for g in order], f"the order of the groups of {panel} (fairness audit)") if order else None
    if panel == RANKING:
        top = [[t.get("label") or t.get("feature"), t.get("feature")] for t in results.get("top_features") or []]
        return (top, "the ranking of the top features (results.json top_features)") if top else None
    waves = _wave_names(reg)
    if len(categories) >= 2 and waves and all(any(shows(c, n) for w in waves for n in w) for c in categories):
        return waves, "the registry's order of waves"
    if len(categories) >= 3:
        order = ranked([_flat(c) for c in categories])
        if order is not None:
            return [[c] for c in order], "the places the labels state"
    return None


def figure_problems(figure: dict[str, Any], results: dict[str, Any], reg: Any = None) -> list[str]:
    """What is wrong with one figure entry of results.json, each as a sentence naming the figure and panel:
    no record of what it shows; a numeric axis without a label (nor one on an axes sharing it); a colour bar
    without a label; more than one series without a legend naming them; an ordered categorical axis out of its
    order (or showing a category the order does not have)."""
    name = f"figure {figure.get('kind')} ({figure.get('path')})"
    drawn = figure.get("drawn")
    if not isinstance(drawn, dict) or not isinstance(drawn.get("axes"), list):
        return [f"{name}: no record of what it shows (results.json figures[].drawn), so it cannot be checked"]
    axes = drawn["axes"]
    problems = []
    for i, ax in enumerate(axes):
        if not ax.get("drawn", True):
            continue
        where = f"{name}, panel {i + 1}" + (f" ({ax['panel']})" if ax.get("panel") else "")
        for side in ("x", "y"):
            axis = ax.get(side) or {}
            if axis.get("kind") == "categorical":
                if not axis.get("categories"):
                    problems.append(f"{where}: the categorical {side} axis names no category")
                continue
            shared = [axes[j].get(side) or {} for j in axis.get("shared_with") or [] if 0 <= j < len(axes)]
            if not str(axis.get("label") or "").strip() and not any(str(s.get("label") or "").strip()
                                                                   for s in shared):
                problems.append(f"{where}: the {side} axis has no label")
        series = ax.get("series") or []
        entries = len((ax.get("legend") or {}).get("entries") or []) + sum(
            len(x.get("entries") or []) for x in drawn.get("legends") or [])
        if len(series) > 1 and entries < len(series):
            problems.append(f"{where}: {len(series)} series are plotted but " + (
                f"the legend names only {entries}" if entries else "there is no legend"))
        for side in ("x", "y"):
            axis = ax.get(side) or {}
            cats = [str(c) for c in axis.get("categories") or []] if axis.get("kind") == "categorical" else []
            found = expected_order(cats, ax.get("panel"), results, reg) if cats else None
            if found is None:
                continue
            order, source = found
            ok, strangers = _in_order(cats, order)
            if strangers:
                problems.append(f"{where}: the {side} axis shows {[_flat(s) for s in strangers]}, not in "
                                f"{source}")
            elif not ok:
                problems.append(f"{where}: the categories of the {side} axis {[_flat(c) for c in cats]} are not "
                                f"in {source} ({[_flat(o[0]) for o in order]})")
    for k, bar in enumerate(drawn.get("colorbars") or []):
        if not str(bar.get("label") or "").strip():
            problems.append(f"{name}: colour bar {k + 1} has no label")
    return problems


def figures_problems(results: dict[str, Any], reg: Any = None) -> list[str]:
    """:func:`figure_problems` of every figure of the results."""
    return [p for f in results.get("figures") or [] if isinstance(f, dict) for p in figure_problems(f, results, reg)]
