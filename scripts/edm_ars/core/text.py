"""Words with no context: lists, capitals, counts, labels, model families and word counts."""

from __future__ import annotations

import math
import re
from typing import Any

from edm_ars.core.conventions import LOWER_IS_BETTER, STACKING

MODEL_NAMES = {
    "logistic_regression": "penalised logistic regression",
    "logistic": "penalised logistic regression",
    "elastic_net": "elastic-net regression",
    "linear_regression": "ordinary least squares regression",
    "ridge": "ridge regression",
    "lasso": "lasso regression",
    "random_forest": "random forest",
    "extra_trees": "extremely randomised trees",
    "xgboost": "XGBoost",
    "gradient_boosting": "gradient-boosted trees",
    "lightgbm": "LightGBM",
    "decision_tree": "decision tree",
    "mlp": "multilayer perceptron",
    STACKING: "stacked ensemble",
    "dummy": "majority-class baseline",
}


_TREE = ("forest", "xgb", "boost", "tree", "lgbm", "lightgbm", "catboost", "gbm")


_LINEAR = ("logistic", "linear", "elastic", "lasso", "ridge", "ols", "glm", "logit")


NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def model_family(name: str) -> str:
    low = name.lower()
    if "stack" in low or "ensemble" in low:
        return STACKING
    if any(t in low for t in _TREE):
        return "tree"
    if any(t in low for t in _LINEAR):
        return "linear"
    return "other"


def join_list(items: list[str], conj: str = "and") -> str:
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    return ", ".join(items[:-1]) + f", {conj} {items[-1]}"


def clean_label(label: str) -> str:
    """A codebook label without its wave prefix: 'X1 Student's sex' -> 'Student's sex'."""
    label = re.sub(r"\s+", " ", str(label)).strip()
    return re.sub(r"^[A-Z][0-9]\s+", "", label) or label


def lc_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def cap_first(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


def number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "vs"}


def title_case(text: str) -> str:
    """Capitalise the words of a (LaTeX) label for a title, leaving control sequences alone."""
    words = text.split(" ")
    out = []
    for i, w in enumerate(words):
        if w and w[0].isalpha() and w[0].islower() and (i == 0 or w not in _SMALL_WORDS):
            w = w[0].upper() + w[1:]
        out.append(w)
    return " ".join(out)


def sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def word_count(tex: str) -> int:
    """Approximate words of running text: floats, comments, labels and citations are dropped;
    a macro use (\\BestAUC{}) or a reference counts as one word."""
    text = re.sub(r"\\begin\{(table|figure)\}.*?\\end\{\1\}", " ", tex, flags=re.S)
    text = re.sub(r"(?<!\\)%.*$", " ", text, flags=re.M)
    text = re.sub(r"\\(?:label|cite[tp]?|begin|end)\{[^}]*\}", " ", text)
    text = re.sub(r"\\ref\{[^}]*\}", " X ", text)
    text = re.sub(r"\\[A-Za-z]+\{\}", " X ", text)
    text = re.sub(r"\\[A-Za-z]+", " ", text)
    text = re.sub(r"[{}\[\]~]", " ", text)
    return len([w for w in text.split() if re.search(r"[A-Za-z0-9]", w)])


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def higher_better(metric: str) -> bool:
    return metric not in LOWER_IS_BETTER

