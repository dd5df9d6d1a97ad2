"""Errors that stop a stage with a message naming what is wrong."""


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
