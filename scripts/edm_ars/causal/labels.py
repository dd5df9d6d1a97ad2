"""Readable names of the causal study's feature columns, shared by the figures and the paper (no plotting
library here: the paper's jobs run without matplotlib)."""

from __future__ import annotations

import re

from edm_ars.core.text import clean_label

#: the most feature columns the love plot shows (those with the largest |SMD|); the paper's caption says so
FIGURE_ROWS = 20
FIGURE_ROWS_WORD = "twenty"


def feature_label(feature: str, covariate: str | None = None, labels: dict[str, str] | None = None) -> str:
    """A frame column's readable name: x__gender=Female -> 'Gender: Female', x__ethnicity__missing ->
    'Ethnicity: missing', x__lunchk -> 'Lunchk' (the covariate's label from `labels` when given)."""
    name = feature.removeprefix("x__")
    missing = name.endswith("__missing")
    name = name.removesuffix("__missing")
    var, _, level = name.partition("=")
    cov = covariate or var
    label = short_label(clean_label(str((labels or {}).get(cov) or cov.replace("_", " "))))
    label = label[:1].upper() + label[1:]
    if missing:
        return f"{label}: missing"
    if len(level.split()) >= 3:  # a level that names itself ('Not qualified for free lunch')
        return level[:1].upper() + level[1:]
    return f"{label}: {level}" if level else label


def short_label(label: str) -> str:
    """A covariate's label without a trailing 'of the student' ('Ethnicity of the student' -> 'Ethnicity')."""
    return re.sub(r"\s+of\s+(the|a|an)\s+\w+$", "", label.strip()) or label
