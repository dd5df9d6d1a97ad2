"""Reading the comparative claims of a sentence: its comparative cues ("better than", "could not be distinguished",
"does not settle whether", ...), what each asserts of the models it compares, and which models it names (the
models and baselines of results.json, by key, label or family name); LaTeX made plain text for matching words.

Used by the consistency check (on a paper's sentences) and by the Critic's check of the results debate's claims."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from edm_ars.core.conventions import STACKING
from edm_ars.review.evidence import BETTER, INDISTINCT, WORSE, compared_models

# ---- what a claim asserts -------------------------------------------------------------------------------
#: assertion -> the evidence verdicts (of the first model against the second) that support it
ASSERTIONS = {
    "better": {BETTER},  # A is better than B
    "worse": {WORSE},
    "indistinct": {INDISTINCT},  # could not be distinguished, does not settle, similar
    "not_better": {INDISTINCT, WORSE},  # not clearly better, did not improve on
    "at_least": {BETTER, INDISTINCT},  # matched or exceeded
    "difference": {BETTER, WORSE, INDISTINCT},  # a difference stated without a verdict
    # an open question ("does not settle whether A predicts better than B"): the evidence does not decide it, or the
    # results debate left it open for a reason other than the evidence (claims.json: see consistency._left_open)
    "open": {INDISTINCT},
}

_OPEN = (r"does not settle whether|do not settle whether|not settled whether|(?:leaves?|left) open whether|"
         r"open questions?|is not settled|are not settled|remains? open")
#: cues, most specific first: (assertion, pattern)
CUES: list[tuple[str, str]] = [
    ("indistinct", r"could not be distinguished|cannot be distinguished|not distinguishable|indistinguishable|"
                   r"do(?:es)? not establish|do(?:es)? not settle|not settled|similar to|as accurate as|"
                   r"no clear difference|on a par with|leaves? open"),
    ("not_better", r"not (?:clearly |significantly |reliably )?better|(?:did|does|do) not improve on|"
                   r"no better than|not improve on|no gain over|without a (?:demonstrable|clear) gain over"),
    ("at_least", r"matched or exceeded|at least as (?:accurate|good) as"),
    ("worse", r"worse than|fell short of|underperform\w*"),
    ("better", r"better than|outperform\w*|improve[sd]? on|improvement over|gain over|beat|exceed(?:s|ed)?"),
    ("difference", r"differed by|difference (?:in [^,;]{1,40}? )?between|differences? between|ranged from"),
]
#: what follows a cue when the comparison is not one of models (chance, a floor, a threshold, zero, a number: plain()
#: prints a number macro as N)
NOT_MODELS = re.compile(r"^\s*(?:that of |those of )?(?:the |a |an |its )?(?:chance|random guess\w*|coin|"
                        r"(?:quality |leakage |flagging |stability )?(?:floor|threshold|ceiling)|zero|baseline|"
                        r"sampling variation|N\b|\d)", re.I)


@dataclass
class Claim:
    line: int
    section: str  # the label (or title) of the (sub)section it is in
    sentence: str
    assertion: str
    models: list[str]  # in the order named: the first is the subject
    paired: bool = False  # the sentence says it rests on a paired comparison
    generic: list[str] = field(default_factory=list)  # unnamed references ("the best single model")

    def pairs(self) -> list[tuple[str, str]]:
        """The pairs compared: the subject against every other model named (a "difference between" or a range of
        two models compares those two)."""
        head = self.models[0]
        return [(head, m) for m in self.models[1:]]


#: references to one model that do not name it (plurals are statements about models in general)
GENERIC = re.compile(r"\b(?:the|a|that|this) (?:best|top|selected|chosen|simpler|simplest|other|more flexible|"
                     r"tree|tree-based|linear) ?(?:single |individual )?(?:model|ensemble|learner)\b|"
                     r"\bthe single model\b|\bthe best single\b", re.I)

FAMILY_ALIASES = {
    "logistic": ("logistic regression", "ridge regression", "ridge"),
    "elastic_net": ("elastic net", "elastic-net"),
    "random_forest": ("random forest",),
    "xgboost": ("xgboost", "gradient boosting", "gradient-boosted trees"),
    "mlp": ("multilayer perceptron", "neural network", "mlp"),
    STACKING: ("stacked ensemble", "stacking", "stacked model"),
}


def model_aliases(results: dict[str, Any]) -> dict[str, str]:
    """Lower-case name in running text -> model key, from results.json (keys, labels) and the families' names."""
    from edm_ars.core.text import MODEL_NAMES

    out: dict[str, str] = {}
    for m, rec in compared_models(results).items():
        names = {m.replace("_", " "), m, *FAMILY_ALIASES.get(m, ())}
        if MODEL_NAMES.get(m):
            names.add(MODEL_NAMES[m])
        if isinstance(rec, dict) and rec.get("label"):
            names.add(plain(str(rec["label"])))
        for n in names:
            n = n.lower().strip()
            if n and n not in out:
                out[n] = m
    return out


def plain(tex: str) -> str:
    """LaTeX to plain text, for matching words: formatting commands keep their argument, macros of numbers
    become 'N', citations and labels go; references become 'REF{label}'."""
    s = re.sub(r"(?<!\\)%.*$", "", tex, flags=re.M)
    s = re.sub(r"\\(?:cite[a-zA-Z]*|label)\*?(?:\[[^\]]*\])*\{[^}]*\}", "", s)
    s = re.sub(r"\\(?:ref|autoref|cref|Cref|eqref)\{([^}]*)\}", r"REF{\1}", s)
    for _ in range(3):
        s = re.sub(r"\\(?:emph|textbf|textit|texttt|textsc|mbox|text|textsuperscript)\{([^{}]*)\}", r"\1", s)
    s = s.replace("\\_", "_").replace("\\&", "&").replace("\\%", "%").replace("~", " ").replace("--", "-")
    s = re.sub(r"\\[A-Za-z]+\{\}", "N", s)
    s = re.sub(r"\\[A-Za-z]+\*?", " ", s)
    s = re.sub(r"[{}$]", "", s)
    return re.sub(r"\s+", " ", s).strip()


def _words(s: str) -> str:
    """A keyword for matching: lower case, underscores and hyphens as spaces."""
    return re.sub(r"[\s_\-]+", " ", s.lower()).strip()


def find_models(text: str, aliases: dict[str, str]) -> list[tuple[int, str]]:
    """(position, model) of every model named in `text` (plain, any case), longest names first, no overlaps."""
    low = text.lower()
    taken: list[tuple[int, int]] = []
    found = []
    for alias in sorted(aliases, key=len, reverse=True):
        for m in re.finditer(rf"(?<![a-z\-]){re.escape(alias)}(?![a-z])", low):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), aliases[alias]))
    return sorted(found)


def _ordered(found: list[tuple[int, str]]) -> list[str]:
    return list(dict.fromkeys(m for _, m in found))


def read_claim(sentence_tex: str, aliases: dict[str, str]) -> list[tuple[str, list[str], bool, list[str], str]]:
    """The comparative assertions of one sentence: (assertion, models named, paired, generic references, the clause's
    plain text) per clause. A clause is a part of the sentence between semicolons, colons and "whether"; in an open question
    ("does not settle whether ...") a comparison is read as not settled."""
    text = plain(sentence_tex)
    open_ = re.search(_OPEN, text, re.I) is not None
    out, anaphoric = [], []
    clauses = [c for part in re.split(r";|:\s|\bwhether\b|\(\w\)\s", text) for c in _coordinated(part)]
    for clause in clauses:
        cue = _cue(clause)
        if cue is None:
            continue
        assertion, where = cue
        models = _ordered(find_models(clause, aliases))
        # a reference that names no model counts where the comparison's other side stands (after the cue)
        generic = GENERIC.findall(clause[where:where + 80])
        if not models and not generic:
            anaphoric.append(assertion)  # "so these data do not establish that either predicts better than the other"
            continue  # else a statement about groups, methods or models in general, not a comparison of two models
        if open_ and assertion in ("better", "worse", "at_least", "indistinct", "not_better"):
            assertion = "open"
        out.append((assertion, models, "paired" in clause.lower(), generic, clause.strip()))
    # a verdict may stand in one clause and its models in the next ("X was not clearly better: the difference
    # between X and Y ..."): a clause naming fewer than two models whose models another clause names in full is
    # that comparison, and a clause that only states a difference takes the verdict given on its models
    full = [c for c in out if len(c[1]) >= 2]
    kept = [c for c in out if not (len(c[1]) < 2 and not c[3] and any(set(c[1]) <= set(f[1]) for f in full if f is not c))]
    verdicts = [c for c in out if c[0] != "difference" and c[1]]
    for k, c in enumerate(kept):
        if c[0] == "difference" and len(c[1]) >= 2:
            v = next((d for d in verdicts if set(d[1]) <= set(c[1])), None)
            if v is not None:
                kept[k] = (v[0], c[1], c[2] or v[2], c[3], c[4])
            elif len(c[1]) == 2 and [a for a in anaphoric if a != "difference"]:
                # a verdict that refers back to the two models named ("either ... the other")
                kept[k] = ([a for a in anaphoric if a != "difference"][0], c[1], c[2], c[3], c[4])
    return kept


def _coordinated(part: str) -> list[str]:
    """A clause split at ", and" / ", but" / ", while" / ", so" where each side makes its own comparison (a list of
    models joined by ", and" stays one clause)."""
    groups: list[str] = []
    for piece in re.split(r",\s+(?=(?:and|but|while|whereas|so)\s)", part):
        if groups and _cue(groups[-1]) and _cue(piece):
            groups.append(piece)
        elif groups:
            groups[-1] += ", " + piece
        else:
            groups.append(piece)
    return groups


def _cue(text: str) -> tuple[str, int] | None:
    """The first comparative cue of `text` (by CUES' order) that compares with something other than chance, a
    floor, a threshold or zero: (assertion, position)."""
    for assertion, rx in CUES:
        for m in re.finditer(rf"\b(?:{rx})\b", text, re.I):
            if not NOT_MODELS.match(text[m.end():m.end() + 60]):
                return assertion, m.start()
    return None
