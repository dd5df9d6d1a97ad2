"""What `edm-ars status` says of each round: the stages it ran and its review's verdict, stated as the paper states
it. A review that leaves the paper unverified (writer.integrity.unverified_reasons: the Critic's REVISE at the
revision cap, or one no revision can answer) reads as the rubric's verdict and why the loop ended there, never as
the PASS or UNVERIFIED the loop turned it into; the causal study's reviews have the same fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edm_ars.writer.integrity import unverified_reasons

#: the files whose presence says a stage of a round ran (the prediction study's, then the causal study's)
STAGE_FILES = (("formulate", ("research_spec.json",)),
               ("engineer", ("data/data_report.json", "causal/data_report.json")),
               ("analyze", ("results.json", "causal/results.json")))


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cap(round_: int, cap: Any) -> str:
    if cap == 0:
        return "the revision cap (no revision rounds allowed)"
    return f"the revision cap ({round_} of {cap} revision rounds)"


def _unanswerable(review: dict[str, Any]) -> list[str]:
    """The issues no revision can answer: capping ones only the Writer can act on (too few test rows or clusters),
    the causal checklist's defects no re-run supplies."""
    return [str(i.get("id")) for i in review.get("issues") or []
            if (i.get("caps_verdict") and i.get("target_stage") == "write") or i.get("kind") == "defect"]


def _verdict(review: dict[str, Any], round_: int | None) -> tuple[str, str]:
    """(the verdict, what follows from it): joined by the score and issue count in verdict_words."""
    verdict = review.get("verdict")
    rubric = review.get("rubric_verdict") or verdict
    r = review.get("round", round_)
    cap = review.get("max_revisions")
    if verdict == "ABORT":
        why = str(review.get("abort_reason") or "an unfixable critical issue").rstrip(". ")
        return "review ABORT", f": {why}; no paper is written"
    if verdict == "REVISE":
        return "review REVISE", (f"; the next round re-runs from {review['rerun_from']}"
                                 if review.get("rerun_from") else "")
    if not unverified_reasons(review):
        return f"review {verdict}", ""
    if rubric == "PASS":  # a PASS marked unverified (not the Critic's own doing): as the paper's box says
        return f"review {verdict}, marked unverified", ": the paper is written UNVERIFIED"
    if isinstance(r, int) and isinstance(cap, int) and r >= cap:
        return f"rubric {rubric} at {_cap(r, cap)}", ": the paper is written UNVERIFIED"
    which = _unanswerable(review)
    why = f"that no revision can answer ({', '.join(which)})" if which else "that no revision round can act on"
    return f"rubric {rubric} {why}", ": the paper is written UNVERIFIED"


def verdict_words(review: dict[str, Any], round_: int | None = None) -> str:
    """A round's review in words, as the paper states it (its score and issue count after the verdict): PASS;
    REVISE and the stage the next round re-runs from; ABORT and why; a review that leaves the paper unverified as
    the rubric's verdict, where the loop stopped (at the revision cap, k of n rounds, or with no revision able to
    answer it) and that the paper is written UNVERIFIED."""
    head, tail = _verdict(review, round_)
    detail = f"score {review.get('overall_score')}, {_count(len(review.get('issues') or []), 'issue')}"
    if unverified_reasons(review) and review.get("verdict") not in ("REVISE", "ABORT"):
        return f"{head}{tail}; {detail}"  # the rubric's verdict and where the loop stopped read as one
    return f"{head} ({detail}){tail}"


def read_review(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def round_line(r: int, path: Path) -> str:
    """`round R: ran formulate, engineer, analyze; <the review's verdict in words>` (or `review pending`)."""
    stages = [name for name, files in STAGE_FILES if any((path / f).exists() for f in files)]
    line = f"round {r}: ran {', '.join(stages) or 'nothing yet'}"
    review = read_review(path / "review_report.json")
    return line + (f"; {verdict_words(review, r)}" if isinstance(review, dict) else "; review pending")


def paper_flag(review: dict[str, Any] | None) -> str:
    """`, flagged UNVERIFIED: rubric REVISE at the revision cap (2 of 2 revision rounds)` for a paper written
    from a review that leaves it unverified, else ""."""
    if not isinstance(review, dict) or not unverified_reasons(review):
        return ""
    return f", flagged UNVERIFIED: {_verdict(review, None)[0]}"


def last_review(branch: Path) -> dict[str, Any] | None:
    """The review of a branch's last reviewed round (the one its paper is written from)."""
    rounds = sorted((int(p.parent.name.removeprefix("round_")), p) for p in Path(branch).glob("round_*/review_report.json")
                    if p.parent.name.removeprefix("round_").isdigit())
    return read_review(rounds[-1][1]) if rounds else None
