"""Lessons across runs: what the Critic and the humans objected to, kept in a JSON-lines store in the
user's data folder, weighted by severity and age, and shown to the agents of later runs.

A lesson comes from a failed code check or Critic issue, from a revision the Critic demanded, or from a
human rejection at a gate. Its weight is the severity weight (critical 3, major 2, minor 1) halved every
`half_life_days`; after `horizon_days` it is ignored. The store is append-only: existing lines are never
changed, and each write replaces the whole file atomically under a lock.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text

log = logging.getLogger("edm_ars")

SEVERITY_WEIGHT = {"critical": 3.0, "major": 2.0, "minor": 1.0}
SOURCES = ("failed_check", "revision", "rejection")
STAGE_ORDER = ["formulate", "engineer", "analyze", "write"]
# The Critic's check ids start with the rubric dimension they belong to.
CHECK_PREFIX = {"pf": ("problem_formulation", "formulate"), "dp": ("data_preparation", "engineer"),
                "an": ("analysis", "analyze"), "sv": ("substantive_validity", "formulate")}
# Gates (edm_ars.run.gates) and the stage whose output each one shows; a rejected review has no single stage.
GATE_STAGE = {"formulate": "formulate", "engineer": "engineer", "analyze": "analyze", "critique": None,
              "write": "write"}
FORCED_ISSUE = "forced_revision"  # the offline Critic's configured test revision teaches nothing
RENDER_CHARS = 300

_ROUND_DIR = re.compile(r"round_(\d+)")
_BRANCH_DIR = re.compile(r"branch_(\d+)")
_NOTES_FILE = re.compile(r"(?P<gate>[a-z]+)\.notes\.json")


def _utc(dt: datetime) -> datetime:
    """A datetime in UTC; a naive one is taken to be UTC already."""
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _iso(dt: datetime) -> str:
    return _utc(dt).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """An ISO 8601 timestamp (with Z, an offset, or naive meaning UTC) as an aware UTC datetime."""
    return _utc(datetime.fromisoformat(text))


@dataclass
class Lesson:
    category: str
    severity: str  # critical | major | minor
    text: str
    time: str  # ISO 8601, UTC
    run_id: str
    source: str  # failed_check | revision | rejection
    stage: str | None = None
    action: dict[str, Any] | None = None  # a structured revision action (edm_ars.review.actions) the lesson carries

    def __post_init__(self) -> None:
        if self.severity not in SEVERITY_WEIGHT:
            raise ValueError(f"unknown severity {self.severity!r} (expected one of {', '.join(SEVERITY_WEIGHT)})")
        for name in ("category", "text", "time", "run_id", "source"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        if self.stage is not None and not isinstance(self.stage, str):
            raise ValueError(f"stage must be a string or null, got {self.stage!r}")
        if self.action is not None and not (isinstance(self.action, dict) and "action" in self.action):
            raise ValueError(f"action must be a revision action object or null, got {self.action!r}")
        parse_time(self.time)  # raises ValueError when it is not a timestamp

    @property
    def key(self) -> tuple[str, str]:
        return (self.category, self.text)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, obj: Any) -> Lesson:
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        missing = [f for f in ("category", "severity", "text", "time", "run_id", "source") if f not in obj]
        if missing:
            raise ValueError(f"missing field(s): {', '.join(missing)}")
        return cls(category=obj["category"], severity=obj["severity"], text=obj["text"], time=obj["time"],
                   run_id=obj["run_id"], source=obj["source"], stage=obj.get("stage"), action=obj.get("action"))


def default_store_path() -> Path:
    """$EDM_ARS_LESSONS if set, else $XDG_DATA_HOME/edm-ars/lessons.jsonl, else
    ~/.local/share/edm-ars/lessons.jsonl (a relative XDG_DATA_HOME is ignored, as the XDG spec says)."""
    explicit = os.environ.get("EDM_ARS_LESSONS")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "edm-ars" / "lessons.jsonl"


# ---- collecting lessons from a finished run ------------------------------------------------------------


def _read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("lessons: skipping %s (%s)", path, exc)
        return None


def _stage(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _severity(value: Any, default: str = "major") -> str:
    return value if value in SEVERITY_WEIGHT else default


def _detail(detail: Any) -> str:
    text = json.dumps(detail, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:197] + "..."


def _review_lessons(review: dict[str, Any], run_id: str, time: str) -> list[Lesson]:
    out: list[Lesson] = []
    issues = [i for i in review.get("issues") or [] if isinstance(i, dict)]
    real = [i for i in issues if i.get("id") != FORCED_ISSUE]
    for issue in real:
        prefix = str(issue.get("id", "")).split("_", 1)[0]
        category = issue.get("category") or issue.get("dimension") or CHECK_PREFIX.get(prefix, ("general",))[0]
        text = str(issue.get("description", "")).strip()
        if issue.get("recommendation"):
            text += " -> " + str(issue["recommendation"]).strip()
        out.append(Lesson(category=str(category), severity=_severity(issue.get("severity")), text=text, time=time,
                          run_id=run_id, source="failed_check", stage=_stage(issue.get("target_stage"))))
    # A failed check the Critic turned into an issue is already there, with its description.
    covered = {i.get("id") for i in issues}
    for check in review.get("checks") or []:
        if not isinstance(check, dict) or check.get("passed", True) or check.get("id") in covered:
            continue
        cid = str(check.get("id", "unnamed"))
        category, stage = CHECK_PREFIX.get(cid.split("_", 1)[0], ("general", None))
        text = f"Code check {cid} failed (detail: {_detail(check.get('detail'))})."
        out.append(Lesson(category=category, severity="major", text=text, time=time, run_id=run_id,
                          source="failed_check", stage=stage))
    if review.get("verdict") == "REVISE":
        stage = _stage(review.get("rerun_from"))
        forced = [i for i in issues if i.get("id") == FORCED_ISSUE]
        if forced or not stage:  # the stage real issues ask for: the earliest one they target
            targets = [i.get("target_stage") for i in real if i.get("target_stage") in STAGE_ORDER]
            stage = min(targets, key=STAGE_ORDER.index) if targets else None
        if stage:
            skip = {i.get("recommendation") for i in forced}
            instructions = review.get("revision_instructions") or {}
            order = sorted(instructions, key=lambda st: (STAGE_ORDER.index(st) if st in STAGE_ORDER else 99, st))
            steps = [str(s) for st in order for s in instructions[st] or [] if s not in skip]
            text = f"The Critic sent the run back to re-run from {stage}"
            text += (": " + "; ".join(dict.fromkeys(steps))) if steps else "."
            out.append(Lesson(category="revision", severity="major", text=text, time=time, run_id=run_id,
                              source="revision", stage=stage))
    severity = {i.get("id"): _severity(i.get("severity")) for i in issues}
    for a in review.get("revision_actions") or []:
        if not isinstance(a, dict) or a.get("issue") == FORCED_ISSUE or "action" not in a:
            continue
        value = f" {a['value']}" if a.get("value") is not None else ""
        text = f"Revision action {a['action']}{value} ({a.get('reason') or a.get('issue') or 'no reason given'})"
        out.append(Lesson(category="revision_action", severity=severity.get(a.get("issue"), "major"), text=text,
                          time=time, run_id=run_id, source="revision", stage=_stage(a.get("stage")),
                          action=dict(a)))
    return out


def carried_actions(ranked: list[tuple[float, Lesson]], stage: str, outcome: str) -> list[dict[str, Any]]:
    """The predictor actions that earlier runs' reviews demanded for the same outcome, from lessons that
    still carry weight: a later run applies them from the start instead of repeating the mistake."""
    out = []
    for _, le in ranked:
        a = le.action
        if (a and le.stage == stage and a.get("action") in ("drop_predictor", "add_predictor")
                and a.get("outcome") == outcome):
            out.append(dict(a, reason=f"lesson from run {le.run_id}: {a.get('reason') or a.get('issue')}"))
    return out


def gate_stage(gate: str) -> str | None:
    """The stage whose output a gate shows (None for the Critic's gate and unknown gates)."""
    return GATE_STAGE.get(gate)


def _rejection_lessons(approvals_dir: Path, run_id: str, now: datetime) -> list[Lesson]:
    """Every note of approvals/branch_<b>/round_<r>/<gate>.notes.json (written by `edm-ars reject`)."""
    files = []
    for path in approvals_dir.glob("branch_*/round_*/*.notes.json"):
        m, r = _NOTES_FILE.fullmatch(path.name), _ROUND_DIR.fullmatch(path.parent.name)
        b = _BRANCH_DIR.fullmatch(path.parent.parent.name)
        if m and r and b:
            files.append((int(b.group(1)), int(r.group(1)), m.group("gate"), path))
    out = []
    for _, _, gate, path in sorted(files):
        records = _read_json(path)
        for record in records if isinstance(records, list) else []:
            if not isinstance(record, dict):
                continue
            try:
                time = _iso(parse_time(str(record["time"])))
            except (KeyError, ValueError):
                time = _iso(now)
            note = str(record.get("note") or "").strip()
            text = f"A human rejected the output at the {gate} gate: {note}" if note else \
                f"A human rejected the output at the {gate} gate (no note given)."
            out.append(Lesson(category="human_rejection", severity="major", text=text, time=time, run_id=run_id,
                              source="rejection", stage=gate_stage(gate)))
    return out


def lessons_from_run(output_dir: Path, approvals_dir: Path | None, run_id: str, now: datetime) -> list[Lesson]:
    """Every round's review (failed checks, issues, revisions) of every branch and every human rejection of a
    run, in branch and round order, identical (category, text) pairs once. Review lessons are stamped `now`; a
    rejection keeps the time recorded in its approval file when there is one."""
    output_dir, stamp = Path(output_dir), _iso(now)
    rounds = sorted((int(b.group(1)), int(m.group(1)), p) for p in output_dir.glob("branch_*/round_*")
                    if (m := _ROUND_DIR.fullmatch(p.name)) and (b := _BRANCH_DIR.fullmatch(p.parent.name))
                    and (p / "review_report.json").exists())
    found: list[Lesson] = []
    for _, _, path in rounds:
        review = _read_json(path / "review_report.json")
        if isinstance(review, dict):
            found += _review_lessons(review, run_id, stamp)
    if approvals_dir is not None and Path(approvals_dir).is_dir():
        found += _rejection_lessons(Path(approvals_dir), run_id, now)
    unique: dict[tuple[str, str], Lesson] = {}
    for lesson in found:
        unique.setdefault(lesson.key, lesson)
    return list(unique.values())


# ---- the store -----------------------------------------------------------------------------------------


@contextmanager
def _locked(store: Path) -> Iterator[None]:
    """An exclusive lock on a sidecar file (the store itself is replaced by rename, so it cannot hold one)."""
    store.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # no POSIX locks (Windows): the temp+rename still keeps each write whole
        yield
        return
    with open(store.with_name(store.name + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _parse(text: str, where: Path, *, quiet: bool = False) -> list[Lesson]:
    out = []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a JSON string
        if not line.strip():
            continue
        try:
            out.append(Lesson.from_dict(json.loads(line)))
        except (json.JSONDecodeError, ValueError, TypeError) as exc:
            if not quiet:
                log.warning("lessons: skipping malformed line %d of %s (%s)", n, where, exc)
    return out


def _read_store(store: Path) -> str:
    try:
        with open(store, encoding="utf-8", errors="replace", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


def load(store: Path) -> list[Lesson]:
    """The lessons in the store, in the order written; a missing store is empty, a bad line is skipped."""
    store = Path(store)
    return _parse(_read_store(store), store)


def append(store: Path, lessons: list[Lesson]) -> int:
    """Add lessons to the store and return how many were new. A lesson whose (category, text) the store
    already holds for the same run_id is left out. Existing lines are kept byte for byte."""
    store = Path(store)
    with _locked(store):
        text = _read_store(store)
        seen = {(le.run_id, *le.key) for le in _parse(text, store, quiet=True)}  # load() warns
        new = []
        for lesson in lessons:
            if (lesson.run_id, *lesson.key) not in seen:
                seen.add((lesson.run_id, *lesson.key))
                new.append(lesson.to_json())
        if new:
            if text and not text.endswith("\n"):
                text += "\n"
            atomic_write_text(store, text + "\n".join(new) + "\n")
        return len(new)


# ---- weighting, ranking and showing --------------------------------------------------------------------


def age_days(lesson: Lesson, now: datetime) -> float:
    """Days since the lesson was recorded (0 for a time in the future)."""
    return max(0.0, (_utc(now) - parse_time(lesson.time)).total_seconds() / 86400)


def weight(lesson: Lesson, now: datetime, half_life_days: float = 30, horizon_days: float = 90) -> float:
    """Severity weight (critical 3, major 2, minor 1) halved every `half_life_days`; 0 past `horizon_days`."""
    age = age_days(lesson, now)
    if age > horizon_days:
        return 0.0
    return SEVERITY_WEIGHT[lesson.severity] * 0.5 ** (age / half_life_days)


def _tier(lesson: Lesson, stage: str | None) -> int:
    """With a stage: its own lessons first, then lessons for no particular stage, then other stages."""
    if stage is None or lesson.stage == stage:
        return 0
    return 1 if lesson.stage is None else 2


def _rank(lessons: Iterable[Lesson], now: datetime, stage: str | None, half_life_days: float,
          horizon_days: float) -> list[tuple[float, Lesson]]:
    scored = [(weight(le, now, half_life_days, horizon_days), le) for le in lessons]
    return sorted(scored, key=lambda wl: (_tier(wl[1], stage), -wl[0], -parse_time(wl[1].time).timestamp(),
                                          wl[1].category, wl[1].text))


def relevant(lessons: Iterable[Lesson], now: datetime, *, stage: str | None = None, k: int = 5,
             half_life_days: float = 30, horizon_days: float = 90) -> list[tuple[float, Lesson]]:
    """The top k lessons as (weight, lesson), heaviest first; with a stage, that stage's lessons come
    before the others (which are kept, ranked after). Zero weights are dropped, and a lesson learnt in
    several runs appears once, with its heaviest (most recent) instance."""
    best: dict[tuple[str, str, str | None], tuple[float, Lesson]] = {}
    for w, le in _rank(lessons, now, stage, half_life_days, horizon_days):  # already in order: first is best
        if w > 0:
            best.setdefault((*le.key, le.stage), (w, le))
    return list(best.values())[:max(k, 0)]


def _short(text: str, limit: int = RENDER_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def render(ranked: list[tuple[float, Lesson]]) -> str:
    """A short bullet list for an agent's prompt; empty when there is nothing to say."""
    if not ranked:
        return ""
    lines = ["Lessons from earlier runs (avoid repeating these problems):"]
    for _, le in ranked:
        where = f", {le.stage}" if le.stage else ""
        lines.append(f"- [{le.severity}{where}; {le.category}] {_short(le.text)}")
    return "\n".join(lines)


def cli_lessons(store: Path, now: datetime, *, stage: str | None, k: int, all_: bool) -> str:
    """Text for `edm-ars lessons`: one line per lesson with weight, age in days, severity, stage and text.
    Without all_, the k most relevant (ranked as agents see them); with all_, every stored lesson, expired
    ones and repeats included, in the same order. With a stage, only that stage's lessons (not those of
    other stages, nor those for no particular stage), ranked the same way."""
    store = Path(store)
    lessons = load(store)
    if not lessons:
        return f"no lessons in {store}"
    head = f"{len(lessons)} lesson(s) in {store}"
    if stage:
        lessons = [le for le in lessons if le.stage == stage]
        head += f", {len(lessons)} for stage {stage}"
        if not lessons:
            return head + f"\n(no lesson for stage {stage}; `edm-ars lessons` without --stage lists them all)"
    rows = _rank(lessons, now, stage, 30, 90) if all_ else relevant(lessons, now, stage=stage, k=k)
    head += "; showing " + ("all" if all_ else f"top {k}")
    if not rows:
        return head + "\n(none weigh anything now: all are older than 90 days)"
    lines = [head, f"{'weight':>6}  {'age':>6}  {'severity':<8}  {'stage':<9}  lesson"]
    for w, le in rows:
        lines.append(f"{w:6.2f}  {age_days(le, now):5.1f}d  {le.severity:<8}  {le.stage or '-':<9}  "
                     f"[{le.category}] {_short(le.text, 200)}")
    return "\n".join(lines)
