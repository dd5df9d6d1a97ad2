"""Errors that stop a stage with a message naming what is wrong."""

import errno
from pathlib import Path
from typing import Any


class EdmArsError(Exception):
    """A user-facing failure: the message names the file, column, variable or value."""


class DataError(EdmArsError):
    """The input data cannot be used as it is."""


class SpecError(EdmArsError):
    """A research specification breaks the registry's rules."""

    def __init__(self, violations: list[str]):
        self.violations = list(violations)
        lines = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(f"research specification rejected ({len(self.violations)} violation(s)):\n{lines}")


class SchemaError(EdmArsError):
    """An artifact does not match its schema."""


class OutputWriteError(EdmArsError):
    """An output could not be written (a full disk, a quota, an unwritable folder): one line naming the path."""

    REASONS = {errno.ENOSPC: ("no space left on the device", "free some space"),
               errno.EDQUOT: ("the disk quota is exceeded", "free some space"),
               errno.EFBIG: ("the file is larger than this system allows", "free some space"),
               errno.EACCES: ("the folder is not writable", "make it writable"),
               errno.EPERM: ("the folder is not writable", "make it writable"),
               errno.EROFS: ("the file system is read-only", "make it writable")}

    @classmethod
    def of(cls, exc: OSError, path: str | Path | None = None) -> "OutputWriteError":
        # a copy (shutil) names its source in `filename` and the file it could not write in `filename2`
        where = path if path is not None else (exc.filename2 or exc.filename or "an output")
        reason, fix = cls.REASONS.get(exc.errno or 0, (exc.strerror or str(exc), "fix that"))
        return cls(f"cannot write {where}: {reason}; nothing half-written was kept ({fix}, then run the same "
                   "command again)")

    @classmethod
    def is_write_failure(cls, exc: BaseException) -> bool:
        """An OSError of the kinds REASONS names (not a missing input or a bug)."""
        return isinstance(exc, OSError) and exc.errno in cls.REASONS


# ---- conditions an analysis phase records -------------------------------------------------------------------


class AnalysisLimitation(EdmArsError):
    """A condition of the data (or of a model fitted on them) under which one analysis step cannot be done.

    Raised where the condition is detected, never for a bug. Inside an analysis phase (edm_ars.core.phases.recorded)
    it is recorded, under its class name, as a limitation of the study, and the phase goes on with its other
    steps; anywhere else it stops the rule with its message."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class SingleClass(AnalysisLimitation):
    """The rows a classifier is fitted on hold only one outcome class."""


class TooFewGroups(AnalysisLimitation):
    """Fewer groups (schools) than the cross-validation needs folds."""


class FitDiverged(AnalysisLimitation):
    """A fitted model's predictions are not finite."""


class MissingPredictions(AnalysisLimitation):
    """A model built on other models' predictions (stacking) lacks some of them: those models failed."""


class NoInterpretedModel(AnalysisLimitation):
    """No model passed the quality floor, so there is no model to interpret or perturb."""


class ExplainSkipped(AnalysisLimitation):
    """A model was not explained; `reason` says why (shown in the report instead of the SHAP results)."""


class SHAPTimeout(ExplainSkipped):
    """An explanation passed its wall-clock limit."""


def yaml_problem(exc: Exception) -> str:
    """A YAML syntax error in one line: where (line and column, counted from 1) and what, without the excerpt of
    the file PyYAML prints under it."""
    def at(mark: Any) -> str:
        return f"line {mark.line + 1}, column {mark.column + 1}"

    mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    what = " ".join(str(getattr(exc, "problem", None) or exc).split())
    context = " ".join(str(getattr(exc, "context", None) or "").split())
    if context and context_mark is not None and (mark is None or context_mark.line != mark.line):
        context += f" opened at {at(context_mark)}"
    where = f"{at(mark)}: " if mark is not None else ""
    return f"{where}{what}" + (f" ({context})" if context else "")
