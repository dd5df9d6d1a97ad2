"""Causal wording in a sentence that reports a finding: the word list the paper's lint (edm_ars.writer.integrity)
and the supplementary analyses' contract (edm_ars.codegen.supplementary) share. Predictive findings are associations."""

from __future__ import annotations

import re

CAUSAL = re.compile(
    r"\b(?:causes?|caused|causing|leads? to|led to|results? in|resulted in|drives?|drove|driven by|"
    r"determines?|determined by|impacts?|impacted|affects?|affected|effect of|influences?|influenced|"
    r"boosts?|boosted|improves? (?:student |students' )?outcomes|reduces? the (?:risk|likelihood)|"
    r"increases? the (?:risk|likelihood|chance)|is responsible for|because of)\b", re.I)
#: a negation shortly before the verb ("does not show that changing it would change ...")
NEGATED = re.compile(r"\b(?:not|no|never|neither|nor|without|cannot)\b[^.;]{0,50}$", re.I)
#: sentences that state the predictive framing itself
FRAMING = re.compile(r"causal (?:claim|interpretation|finding|effect|reading|language|conclusion)|"
                     r"(?:not|never) (?:a )?causal|identify causes|causal(?:ly)? interpret", re.I)


def causal_phrases(sentence: str) -> list[str]:
    """The causal verbs of one sentence that no negation shortly before them takes back, unless the sentence
    states the predictive framing itself."""
    if FRAMING.search(sentence):
        return []
    return [m.group(0) for m in CAUSAL.finditer(sentence) if not NEGATED.search(sentence[:m.start()])]
