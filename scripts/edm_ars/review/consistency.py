"""Claims consistent with each other and with the evidence: a check of a written paper (run by the Writer and by
`edm-ars verify-paper`).

On paper.tex, with results.json as the evidence (and outline.json, where the Writer records the comparisons and
promises it writes), four things are checked:

1. **Comparative claims.** Every sentence with a comparative cue ("better than", "outperforms", "improves on",
   "could not be distinguished", "does not settle whether", "similar to", "differed by", ...) names the models it
   compares (two at least: "the best single model" alone does not name one) and says what the comparison
   evidence of those two models shows. The evidence (:func:`comparison_evidence`) is read from results.json:
   the paired comparisons of the selected model with every other model and baseline (``paired_comparisons``:
   bootstrap difference, interval, Holm-adjusted p), then ``selection_evidence.stacking_minus_selected``, and -
   only for results without paired comparisons - whether two models' intervals of the primary metric overlap.
   "Clearly better than B" needs a paired interval that excludes zero in A's favour and a Holm-adjusted p below
   ``comparison_alpha``; "could not be distinguished" needs evidence that does not; a comparison of two models
   that no paired comparison covers has no evidence and fails.
   A comparison against chance, a floor or a threshold is not a comparison of models and is left alone.
2. **Contradictions.** No two claims about the same two models disagree (A better than B against "does not settle
   whether A predicts better than B", or B better than A).
3. **Promises.** Every "Section N discusses X" / "Section~\\ref{sec:...} discusses X" holds X in that section, X being
   the terms the sentence names in \\texttt{...} (a data check's name); every promise the Writer recorded
   (outline.json ``promises``: target label and topic words) is kept by the section it names.
4. **References.** Every \\ref / \\autoref / \\cref names a \\label the paper defines, and every literal "Section N",
   "Table N", "Figure N" exists.

The Writer also records each comparison it writes (outline.json ``comparisons``: the models, what the sentence
asserts, the evidence it rests on); each record must match the evidence and appear in the text.

To add a kind of comparison evidence (e.g. paired comparisons of every pair of models), add a reader to
:data:`EVIDENCE_READERS`: a function of results.json returning :class:`Evidence` records."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edm_ars.core.conventions import MODEL_ORDER, STACKING
from edm_ars.core.text import is_number

HIGHER_IS_BETTER = {"auc": True, "r2": True, "balanced_accuracy": True, "accuracy": True, "f1": True,
                    "precision": True, "recall": True, "rmse": False, "mae": False, "brier": False}

# ---- the evidence ----------------------------------------------------------------------------------------
BETTER, WORSE, INDISTINCT = "better", "worse", "indistinct"
_FLIP = {BETTER: WORSE, WORSE: BETTER, INDISTINCT: INDISTINCT}


@dataclass(frozen=True)
class Evidence:
    """A comparison of models a and b on one metric: a is `verdict` (better, worse, indistinct) than b."""

    a: str
    b: str
    metric: str
    kind: str  # paired | intervals
    verdict: str
    source: str  # the artifact keys it was read from
    detail: str

    def oriented(self, x: str, y: str) -> Evidence:
        """The same evidence read as x against y."""
        if (x, y) == (self.a, self.b):
            return self
        return Evidence(y, x, self.metric, self.kind, _FLIP[self.verdict], self.source, self.detail)


def _ci(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2 and all(is_number(x) for x in v)


def stacking_base(results: dict[str, Any]) -> str | None:
    """The single model stacking was compared with: the simplest of the models whose intervals overlap the top
    single model's (analysis.select_best), as selection_evidence records them."""
    ev = results.get("selection_evidence") or {}
    models = results.get("models") or {}
    tied = [m for m in ev.get("overlapping_top") or [] if m in models]
    if not tied:
        return ev.get("top_single") if ev.get("top_single") in models else None
    primary = results.get("primary_metric")
    sign = 1 if HIGHER_IS_BETTER.get(primary, True) else -1

    def key(m: str) -> tuple[int, float]:
        value = ((models[m].get("metrics") or {}).get(primary))
        rank = MODEL_ORDER.index(m) if m in MODEL_ORDER else 99
        return rank, -sign * value if is_number(value) else 0.0

    return min(tied, key=key)


def _paired_verdict(ci: list[float], higher: bool) -> str:
    if ci[0] > 0:
        return BETTER if higher else WORSE
    if ci[1] < 0:
        return WORSE if higher else BETTER
    return INDISTINCT


def _paired_stacking(results: dict[str, Any]) -> list[Evidence]:
    diff = (results.get("selection_evidence") or {}).get("stacking_minus_selected")
    base = stacking_base(results)
    if not (isinstance(diff, dict) and _ci(diff.get("ci")) and base and STACKING in (results.get("models") or {})):
        return []
    primary = results.get("primary_metric", "")
    lo, hi = diff["ci"]
    return [Evidence(STACKING, base, primary, "paired", _paired_verdict([lo, hi], HIGHER_IS_BETTER.get(primary, True)),
                     "results.json:selection_evidence.stacking_minus_selected",
                     f"paired bootstrap difference {STACKING} - {base}: 95% interval [{lo:+.4f}, {hi:+.4f}]")]


def compared_models(results: dict[str, Any]) -> dict[str, Any]:
    """Every model a comparison may name: the battery's models and the baselines (results.json baselines)."""
    base = results.get("baselines") if isinstance(results.get("baselines"), dict) else {}
    return {**base, **(results.get("models") or {})}


def _paired_list(results: dict[str, Any]) -> list[Evidence]:
    """Paired comparisons recorded as a list of {a, b, metric, mean, ci} (results.json paired_comparisons), with
    the bootstrap p-value and its Holm adjustment over the selected model's comparisons where recorded (p, p_holm):
    a difference whose Holm-adjusted p is not under the recorded level (comparison_alpha) is not distinguishable,
    whatever its unadjusted interval."""
    out = []
    models = compared_models(results)
    alpha = results.get("comparison_alpha") if is_number(results.get("comparison_alpha")) else 0.05
    for i, rec in enumerate(results.get("paired_comparisons") or []):
        if not (isinstance(rec, dict) and rec.get("a") in models and rec.get("b") in models and _ci(rec.get("ci"))):
            continue
        metric = rec.get("metric") or results.get("primary_metric", "")
        lo, hi = rec["ci"]
        verdict = _paired_verdict([lo, hi], HIGHER_IS_BETTER.get(metric, True))
        adjusted = is_number(rec.get("p_holm"))
        if adjusted and rec["p_holm"] >= alpha:
            verdict = INDISTINCT
        holm = f", Holm-adjusted p {rec['p_holm']:.4f}" if adjusted else ""
        out.append(Evidence(rec["a"], rec["b"], metric, "paired", verdict, f"results.json:paired_comparisons.{i}",
                            f"paired difference {rec['a']} - {rec['b']}: 95% interval [{lo:+.4f}, {hi:+.4f}]{holm}"))
    return out


def _intervals(results: dict[str, Any]) -> list[Evidence]:
    """Overlap of two models' intervals: evidence only for results without paired comparisons (artifacts from
    before every comparison of the selected model was paired); with them, a claim rests on a paired comparison."""
    if results.get("paired_comparisons"):
        return []
    primary = results.get("primary_metric", "")
    higher = HIGHER_IS_BETTER.get(primary, True)
    models = results.get("models") or {}
    have = [m for m in models if _ci((models[m].get("ci") or {}).get(primary))]
    out = []
    for i, a in enumerate(have):
        for b in have[i + 1:]:
            ca, cb = models[a]["ci"][primary], models[b]["ci"][primary]
            if ca[0] > cb[1]:
                verdict = BETTER if higher else WORSE
            elif cb[0] > ca[1]:
                verdict = WORSE if higher else BETTER
            else:
                verdict = INDISTINCT
            out.append(Evidence(a, b, primary, "intervals", verdict,
                                f"results.json:models.{a}.ci.{primary}, results.json:models.{b}.ci.{primary}",
                                f"95% intervals of {primary} [{ca[0]:.4f}, {ca[1]:.4f}] ({a}) and "
                                f"[{cb[0]:.4f}, {cb[1]:.4f}] ({b}) "
                                + ("overlap" if verdict == INDISTINCT else "do not overlap")))
    return out


#: readers of comparison evidence, strongest first (a pair's first record is the one a claim is held to)
EVIDENCE_READERS: list[Callable[[dict[str, Any]], list[Evidence]]] = [_paired_list, _paired_stacking, _intervals]


def comparison_evidence(results: dict[str, Any]) -> list[Evidence]:
    return [e for reader in EVIDENCE_READERS for e in reader(results)]


def evidence_for(evidence: list[Evidence], x: str, y: str, kind: str | None = None) -> Evidence | None:
    """The strongest evidence comparing x and y (of `kind` when given), read as x against y."""
    for e in evidence:
        if {e.a, e.b} == {x, y} and (kind is None or e.kind == kind):
            return e.oriented(x, y)
    return None


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
    # results debate left it open for a reason other than the evidence (claims.json: see _left_open)
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


# ---- the document -----------------------------------------------------------------------------------------
@dataclass
class Section:
    level: int  # 1 section, 2 subsection, 3 subsubsection
    number: str  # "4", "4.2" (empty after \appendix: lettered)
    title: str
    label: str | None
    start: int
    end: int = 0


@dataclass
class Doc:
    tex: str
    body_start: int
    lines: list[int]
    sections: list[Section]
    labels: dict[str, tuple[str, int]]  # label -> (kind, position)

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.lines, pos)

    def section_at(self, pos: int) -> Section | None:
        inner = [s for s in self.sections if s.start <= pos < s.end]
        return max(inner, key=lambda s: s.level) if inner else None

    def where(self, pos: int) -> str:
        s = self.section_at(pos)
        return (s.label or s.title) if s else "front matter"

    def section_of(self, label: str) -> Section | None:
        return next((s for s in self.sections if s.label == label), None)

    def text_of(self, s: Section) -> str:
        return self.tex[s.start:s.end]


def _blank_comments(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*$", lambda m: " " * len(m.group(0)), tex, flags=re.M)


def parse(tex: str) -> Doc:
    tex = _blank_comments(tex)
    lines = [i for i, ch in enumerate(tex) if ch == "\n"]
    begin = tex.find("\\begin{document}")
    body_start = begin if begin >= 0 else 0
    end_doc = tex.find("\\end{document}")
    end_doc = end_doc if end_doc >= 0 else len(tex)
    sections: list[Section] = []
    counters = [0, 0, 0]
    appendix = None
    heads = list(re.finditer(r"\\(sub)?(sub)?section(\*?)\{((?:[^{}]|\{[^{}]*\})*)\}|\\appendix\b", tex[:end_doc]))
    for m in heads:
        if m.start() < body_start:
            continue
        if m.group(0).startswith("\\appendix"):
            appendix = m.start()
            counters = [0, 0, 0]
            continue
        level = 1 + bool(m.group(1)) + bool(m.group(2))
        starred = bool(m.group(3))
        if not starred:
            counters[level - 1] += 1
            for i in range(level, 3):
                counters[i] = 0
        top = counters[0] if appendix is None else chr(ord("A") + counters[0] - 1) if counters[0] else "?"
        number = "" if starred else ".".join([str(top)] + [str(c) for c in counters[1:level]])
        after = tex[m.end():m.end() + 80]
        lab = re.match(r"\s*\\label\{([^}]*)\}", after)
        sections.append(Section(level, number, plain(m.group(4)), lab.group(1) if lab else None, m.start()))
    for i, s in enumerate(sections):
        nxt = next((t.start for t in sections[i + 1:] if t.level <= s.level), None)
        if appendix is not None and s.start < appendix and (nxt is None or nxt > appendix):
            nxt = appendix
        s.end = nxt if nxt is not None else end_doc
    labels: dict[str, tuple[str, int]] = {}
    for m in re.finditer(r"\\label\{([^}]*)\}", tex):
        env = _enclosing_env(tex, m.start())
        kind = "table" if env and env.startswith("table") else "figure" if env and env.startswith("figure") else \
            "section"
        labels.setdefault(m.group(1), (kind, m.start()))
    return Doc(tex, body_start, lines, sections, labels)


def _enclosing_env(tex: str, pos: int) -> str | None:
    depth: dict[str, int] = {}
    for m in re.finditer(r"\\(begin|end)\{([a-z*]+)\}", tex[:pos]):
        depth[m.group(2)] = depth.get(m.group(2), 0) + (1 if m.group(1) == "begin" else -1)
    open_ = [e for e, d in depth.items() if d > 0 and e.rstrip("*") in ("table", "figure")]
    return open_[-1] if open_ else None


_FLOAT = re.compile(r"\\begin\{(table|figure)\*?\}.*?\\end\{\1\*?\}", re.S)
_BOUNDARY = re.compile(r"\n\s*\n|\\item\b|\\(?:sub)*section\*?\{[^}]*\}(?:\\label\{[^}]*\})?|"
                       r"\\begin\{[a-z*]+\}|\\end\{[a-z*]+\}")
_ABBREV = re.compile(r"(?:\be\.g|\bi\.e|\bet al|\bcf|\bvs|\bFig|\bSec|\bTab|\bNo)\.$")


def sentences(doc: Doc) -> list[tuple[int, str]]:
    """(position, LaTeX text) of every sentence of the body outside floats (captions are not claims)."""
    tex = doc.tex
    body = _FLOAT.sub(lambda m: " " * len(m.group(0)), tex)
    out = []
    chunks, last = [], doc.body_start
    for m in _BOUNDARY.finditer(body, doc.body_start):
        chunks.append((last, body[last:m.start()]))
        last = m.end()
    chunks.append((last, body[last:]))
    for start, chunk in chunks:
        pos = 0
        for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z\\(])", chunk):
            piece = chunk[pos:m.start()]
            if _ABBREV.search(piece):
                continue
            if piece.strip():
                out.append((start + pos + len(piece) - len(piece.lstrip()), piece.strip()))
            pos = m.end()
        if chunk[pos:].strip():
            piece = chunk[pos:]
            out.append((start + pos + len(piece) - len(piece.lstrip()), piece.strip()))
    return out


# ---- the report ----------------------------------------------------------------------------------------------
@dataclass
class Finding:
    line: int
    section: str
    sentence: str
    reason: str

    def __str__(self) -> str:
        text = re.sub(r"\s+", " ", self.sentence)
        text = text if len(text) <= 260 else text[:257] + "..."
        where = f"line {self.line} [{self.section}]" if self.line else f"[{self.section}]"
        return f"{where}: {self.reason}" + (f": \"{text}\"" if text else "")


@dataclass
class ConsistencyReport:
    paper: str
    findings: list[Finding] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def failures(self) -> list[str]:
        name = self.paper.rsplit("/", 1)[-1]
        return [f"{name}: consistency: {f}" for f in self.findings]

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": [str(f) for f in self.findings],
                "claims": [{"line": c.line, "section": c.section, "assertion": c.assertion, "models": c.models}
                           for c in self.claims]}


def _name(m: str, results: dict[str, Any]) -> str:
    rec = compared_models(results).get(m) or {}
    return f"{m} ({rec['label']})" if rec.get("label") and rec["label"].lower() != m else m


def _left_open(claims_doc: dict[str, Any] | None, x: str, y: str) -> str | None:
    """The id of an inconclusive claim of claims.json comparing x and y whose evidence lens (the skeptic) supports it:
    the debate left the comparison open for a reason other than the evidence (a design objection), so the paper
    may call it open although the evidence decides it."""
    for c in (claims_doc or {}).get("claims") or []:
        rec = c.get("compares")
        if (c.get("status") == "inconclusive" and isinstance(rec, dict) and {rec.get("a"), rec.get("b")} == {x, y}
                and ((c.get("lenses") or {}).get("skeptic") or {}).get("status") == "supported"):
            return str(c.get("id"))
    return None


def _point(results: dict[str, Any], model: str) -> float:
    """A model's primary metric oriented so that higher is better (-inf when it has none)."""
    primary = results.get("primary_metric", "")
    v = ((compared_models(results).get(model) or {}).get("metrics") or {}).get(primary)
    if not is_number(v):
        return float("-inf")
    return float(v) if HIGHER_IS_BETTER.get(primary, True) else -float(v)


def check_claims(doc: Doc, results: dict[str, Any], report: ConsistencyReport,
                 claims_doc: dict[str, Any] | None = None) -> None:
    aliases = model_aliases(results)
    evidence = comparison_evidence(results)
    for pos, sent in sentences(doc):
        for assertion, models, paired, generic, clause in read_claim(sent, aliases):
            claim = Claim(doc.line(pos), doc.where(pos), sent, assertion, models, paired, generic)
            # a long sentence (a list of statements) is quoted by the clause that makes the claim
            where = (claim.line, claim.section, sent if len(plain(sent)) <= 240 else f"... {clause} ...")
            if len(models) < 2:
                named = f"names only {_name(models[0], results)}" if models else "names no model"
                also = f" (\"{generic[0]}\" does not say which)" if generic else ""
                report.findings.append(Finding(*where, f"a comparative claim ({assertion}) {named}{also}: a "
                                               "comparison names both models it compares"))
                continue
            report.claims.append(claim)
            for x, y in claim.pairs():
                ev = evidence_for(evidence, x, y, "paired" if paired else None)
                if ev is None:
                    what = "paired comparison" if paired else "comparison"
                    report.findings.append(Finding(*where, f"no {what} of {x} and {y} in results.json supports this "
                                                   f"claim ({assertion})"))
                elif assertion == "at_least" and _point(results, x) < _point(results, y):
                    report.findings.append(Finding(*where, f"the claim says {x} matched or exceeded {y}, but its "
                                                   f"{results.get('primary_metric')} is lower "
                                                   f"({_point(results, x):.4f} against {_point(results, y):.4f})"))
                elif ev.verdict not in ASSERTIONS[assertion] and not (
                        assertion == "open" and _left_open(claims_doc, x, y)):
                    report.findings.append(Finding(*where, f"the claim says {x} is {_say(assertion)} {y}, but the "
                                                   f"evidence ({ev.source}) shows {x} {_say_ev(ev.verdict)} {y}: "
                                                   f"{ev.detail}"))
    _contradictions(report)


def _say(assertion: str) -> str:
    return {"better": "better than", "worse": "worse than", "indistinct": "not distinguishable from",
            "not_better": "not better than", "at_least": "at least as good as",
            "difference": "compared with", "open": "not settled against"}[assertion]


def _say_ev(verdict: str) -> str:
    return {BETTER: "clearly better than", WORSE: "clearly worse than",
            INDISTINCT: "not distinguishable from"}[verdict]


#: what each assertion says of the pair (x, y): a set of possible orders ('>', '=', '<')
#: ('?': not settled, which contradicts a settled order only)
ORDERS = {"better": {">"}, "worse": {"<"}, "indistinct": {"="}, "not_better": {"=", "<"}, "at_least": {">", "="},
          "difference": {">", "=", "<"}, "open": {"?"}}
_REVERSE = {">": "<", "<": ">", "=": "=", "?": "?"}


def _conflict(a: set[str], b: set[str]) -> bool:
    """Two claims on the same ordered pair disagree: no order both allow, or one leaves open what the other settles
    as better or worse."""
    if "?" in a or "?" in b:
        other = b if "?" in a else a
        return "?" not in other and other <= {">", "<"}
    return not (a & b)


def _contradictions(report: ConsistencyReport) -> None:
    said: dict[tuple[str, str], list[tuple[set[str], Claim]]] = {}
    for c in report.claims:
        for x, y in c.pairs():
            orders = ORDERS[c.assertion]
            key = (x, y) if x <= y else (y, x)
            if key != (x, y):
                orders = {_REVERSE[o] for o in orders}
            for earlier_orders, earlier in said.get(key, []):
                if _conflict(orders, earlier_orders):
                    before = re.sub(r"\s+", " ", earlier.sentence)
                    before = before if len(before) <= 160 else before[:157] + "..."
                    report.findings.append(Finding(
                        c.line, c.section, c.sentence,
                        f"contradicts line {earlier.line} [{earlier.section}] on {key[0]} and {key[1]} "
                        f"(\"{before}\")"))
            said.setdefault(key, []).append((orders, c))


# ---- promises and references ----------------------------------------------------------------------------
_SECTION_REF = re.compile(r"(?:Sections?|\\S)[~\s]*(?:\\ref\{([^}]+)\}|(\d+(?:\.\d+)*))")
_PROMISE_VERB = re.compile(r"\b(?:discuss(?:es|ed)?|describes?|reports?|explains?|covers?|returns? to|addresses|"
                           r"treats?|considers?)\b", re.I)


def _keyword_in(keyword: str, section_text: str) -> bool:
    return _words(keyword) in _words(plain(section_text))


def check_references(doc: Doc, report: ConsistencyReport) -> None:
    tex = doc.tex
    for m in re.finditer(r"\\(?:ref|autoref|cref|Cref|eqref|pageref)\{([^}]*)\}", tex):
        if m.start() < doc.body_start:
            continue
        for label in m.group(1).split(","):
            if label.strip() and label.strip() not in doc.labels:
                report.findings.append(Finding(doc.line(m.start()), doc.where(m.start()), _around(tex, m.start()),
                                               f"\\ref{{{label.strip()}}} names a label the paper does not define"))
    numbered = {s.number for s in doc.sections if s.number}
    n_tables = len(re.findall(r"\\begin\{table\*?\}", tex))
    n_figures = len(re.findall(r"\\begin\{figure\*?\}", tex))
    body = _FLOAT.sub(lambda m: " " * len(m.group(0)), tex)
    for m in re.finditer(r"\b(Sections?|Tables?|Figures?|Fig\.)[~\s]+(\d+(?:\.\d+)*)\b", body):
        if m.start() < doc.body_start:
            continue
        kind, num = m.group(1).lower(), m.group(2)
        bad = ((kind.startswith("section") and num not in numbered)
               or (kind.startswith("table") and not 1 <= int(num.split(".")[0]) <= n_tables)
               or (kind.startswith(("figure", "fig")) and not 1 <= int(num.split(".")[0]) <= n_figures))
        if bad:
            report.findings.append(Finding(doc.line(m.start()), doc.where(m.start()), _around(tex, m.start()),
                                           f"{m.group(1)} {num} does not exist in the paper"))


def _around(tex: str, pos: int) -> str:
    start = max(tex.rfind("\n", 0, pos), tex.rfind(". ", 0, pos) + 1)
    end = min(x for x in (tex.find(". ", pos), tex.find("\n", pos), len(tex)) if x >= 0)
    return tex[start:end + 1].strip()


def _target(doc: Doc, label: str | None, number: str | None) -> Section | None:
    if label:
        return doc.section_of(label)
    return next((s for s in doc.sections if s.number == number), None)


def check_promises(doc: Doc, report: ConsistencyReport, recorded: list[dict[str, Any]] | None = None) -> None:
    """A sentence that says another section discusses something it names (\\texttt terms) is kept by that section;
    so is every promise the Writer recorded."""
    for pos, sent in sentences(doc):
        refs = list(_SECTION_REF.finditer(sent))
        if not refs or not _PROMISE_VERB.search(sent):
            continue
        topics = [plain(t) for t in re.findall(r"\\texttt\{((?:[^{}]|\{[^{}]*\})*)\}", sent)]
        for r in refs:
            if not re.search(rf"{re.escape(r.group(0))}[^.;]{{0,40}}{_PROMISE_VERB.pattern}", sent, re.I):
                continue
            target = _target(doc, r.group(1), r.group(2))
            if target is None:
                continue  # a missing label or number is reported by check_references
            missing = [t for t in topics if not _keyword_in(t, doc.text_of(target))]
            if missing:
                report.findings.append(Finding(doc.line(pos), doc.where(pos), sent,
                                               f"promises that Section {target.number} ({target.title}) discusses "
                                               f"{', '.join(missing)}, which that section never mentions"))
    for p in recorded or []:
        target = doc.section_of(str(p.get("target")))
        origin = str(p.get("from") or "?")
        if target is None:
            report.findings.append(Finding(0, origin, str(p.get("text") or ""), f"outline.json promises a "
                                           f"section {p.get('target')!r} the paper does not have"))
            continue
        words = [str(w) for w in p.get("topics") or []]
        missing = [w for w in words if not _keyword_in(w, doc.text_of(target))]
        if missing:
            report.findings.append(Finding(0, origin, str(p.get("text") or p.get("phrase") or ""),
                                           f"outline.json records a promise that Section {target.number} "
                                           f"({target.title}) discusses {', '.join(missing)}; it does not"))


def check_recorded_comparisons(doc: Doc, results: dict[str, Any], recorded: list[dict[str, Any]],
                               report: ConsistencyReport, claims_doc: dict[str, Any] | None = None) -> None:
    """Each comparison the Writer recorded matches the evidence and is in the text (a claim on the same models)."""
    evidence = comparison_evidence(results)
    models = compared_models(results)
    for i, rec in enumerate(recorded):
        where = f"outline.json:comparisons.{i}"
        a, b, assertion = rec.get("a"), rec.get("b"), rec.get("assertion")
        text = str(rec.get("phrase") or "")
        if a not in models or b not in models or assertion not in ASSERTIONS:
            report.findings.append(Finding(0, where, text, f"a recorded comparison needs two models of results.json "
                                           f"and an assertion ({', '.join(ASSERTIONS)}); got {a!r}, {b!r}, "
                                           f"{assertion!r}"))
            continue
        ev = evidence_for(evidence, a, b, rec.get("kind"))
        if ev is None:
            report.findings.append(Finding(0, where, text, f"no {rec.get('kind') or ''} comparison of {a} and {b} "
                                           "in results.json".replace("  ", " ")))
        elif ev.verdict not in ASSERTIONS[assertion] and not (assertion == "open" and _left_open(claims_doc, a, b)):
            report.findings.append(Finding(0, where, text, f"records that {a} is {_say(assertion)} {b}, but the "
                                           f"evidence ({ev.source}) shows {a} {_say_ev(ev.verdict)} {b}"))
        in_text = any({a, b} <= set(c.models) for c in report.claims)
        if not in_text:
            report.findings.append(Finding(0, where, text, f"the recorded comparison of {a} and {b} is not in the "
                                           "paper's text (no sentence names both with a comparative cue)"))


def check_consistency(tex: str, results: dict[str, Any], outline: dict[str, Any] | None = None,
                      paper: str = "paper.tex", claims: dict[str, Any] | None = None) -> ConsistencyReport:
    """Every check of this module on a paper's LaTeX source, against results.json (and outline.json)."""
    doc = parse(tex)
    report = ConsistencyReport(paper=paper)
    check_references(doc, report)
    check_claims(doc, results, report, claims)
    check_promises(doc, report, (outline or {}).get("promises"))
    if (outline or {}).get("comparisons"):
        check_recorded_comparisons(doc, results, outline["comparisons"], report, claims)
    return report


# ---- what the Writer records while writing ------------------------------------------------------------------
def record_comparison(outline: dict[str, Any] | None, a: str, b: str, assertion: str, phrase: str,
                      kind: str | None = None) -> None:
    """Record a comparison the Writer writes (outline.json ``comparisons``): a against b, what the sentence asserts
    (one of ASSERTIONS), the phrase it comes from, and the kind of evidence it rests on (paired, intervals)."""
    if outline is None:
        return
    rec = {"a": a, "b": b, "assertion": assertion, "phrase": phrase}
    if kind:
        rec["kind"] = kind
    if rec not in outline.setdefault("comparisons", []):
        outline["comparisons"].append(rec)


def record_promise(outline: dict[str, Any] | None, origin: str, target: str, topics: list[str], phrase: str) -> None:
    """Record that the section `origin` says the section labelled `target` discusses `topics` (outline.json
    ``promises``): each topic word must then appear in that section."""
    if outline is None:
        return
    rec = {"from": origin, "target": target, "topics": list(topics), "phrase": phrase}
    if rec not in outline.setdefault("promises", []):
        outline["promises"].append(rec)


def check_paper(tex_path: Any, artifacts: dict[str, Any]) -> ConsistencyReport:
    """The check on a written paper: paper.tex, results.json among `artifacts` (as verify-paper loads them), and
    outline.json beside the paper when the Writer left one."""
    import json
    from pathlib import Path

    tex_path = Path(tex_path)
    results = artifacts.get("results.json")
    report = ConsistencyReport(paper=str(tex_path))
    if not isinstance(results, dict):
        report.findings.append(Finding(0, "artifacts", "", "no results.json among the artifacts: the comparison "
                                       "evidence the claims rest on is missing"))
        return report
    outline_path = tex_path.parent / "outline.json"
    outline = json.loads(outline_path.read_text(encoding="utf-8")) if outline_path.exists() else None
    claims = artifacts.get("claims.json") if isinstance(artifacts.get("claims.json"), dict) else None
    return check_consistency(tex_path.read_text(encoding="utf-8"), results, outline, paper=str(tex_path),
                             claims=claims)


# ---- the results debate's claims (the Critic's check) -----------------------------------------------------
def _claim_comparisons(claim: dict[str, Any], aliases: dict[str, str]) -> list[tuple[str, str, str]]:
    """(a, b, assertion) of a claim: its structured `compares` record(s), else read from its statement."""
    recs = claim.get("compares")
    recs = [recs] if isinstance(recs, dict) else list(recs or [])
    out = [(r["a"], r["b"], r.get("assertion", "better")) for r in recs
           if isinstance(r, dict) and r.get("a") and r.get("b")]
    if out:
        return out
    for assertion, models, _, _, _ in read_claim(str(claim.get("statement") or ""), aliases):
        out += [(models[0], m, assertion) for m in models[1:]]
    return out


def claim_problems(claims_doc: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """What is inconsistent in the results debate's claims (claims.json): a supported comparison the evidence of
    results.json does not support, one that names a single model, and two claims that judge the same comparison
    differently (one supported, the other not; or A better than B and B better than A both supported)."""
    aliases = model_aliases(results)
    evidence = comparison_evidence(results)
    problems: list[str] = []
    judged: dict[tuple[str, str], list[tuple[str, str, set[str]]]] = {}  # (a, b) -> [(claim id, status, orders)]
    for claim in claims_doc.get("claims") or []:
        cid, status = str(claim.get("id")), str(claim.get("status"))
        statement = str(claim.get("statement") or "")
        comps = _claim_comparisons(claim, aliases)
        if not comps and status == "supported":
            for _assertion, models, *_ in read_claim(statement, aliases):
                if len(models) < 2:
                    problems.append(f"claim {cid} ({status}) compares without naming both models: {statement!r}")
        for a, b, assertion in comps:
            if assertion not in ASSERTIONS:
                continue
            if status == "supported":
                ev = evidence_for(evidence, a, b)
                if ev is None:
                    problems.append(f"claim {cid} (supported) compares {a} and {b}, which results.json never compares")
                elif ev.verdict not in ASSERTIONS[assertion]:
                    problems.append(f"claim {cid} (supported) says {a} is {_say(assertion)} {b}, but {ev.source} "
                                    f"shows {a} {_say_ev(ev.verdict)} {b} ({ev.detail})")
            key = (a, b) if a <= b else (b, a)
            orders = ORDERS[assertion] if key == (a, b) else {_REVERSE[o] for o in ORDERS[assertion]}
            for other_id, other_status, other_orders in judged.get(key, []):
                if status == "supported" and other_status == "supported" and not (orders & other_orders):
                    problems.append(f"claims {other_id} and {cid} are both supported but contradict each other on "
                                    f"{key[0]} and {key[1]}")
                elif orders == other_orders and {status, other_status} != {status} and "supported" in (
                        status, other_status):
                    problems.append(f"claims {other_id} ({other_status}) and {cid} ({status}) judge the same "
                                    f"comparison of {key[0]} and {key[1]} differently")
            judged.setdefault(key, []).append((cid, status, orders))
    return problems
