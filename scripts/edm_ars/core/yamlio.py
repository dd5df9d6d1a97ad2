"""YAML reading shared by the light modules (the registry) and the artifact helpers."""

from __future__ import annotations

from typing import Any

import yaml

#: the safe loader of libyaml where PyYAML was built with it (about ten times faster on the phrase file), else PyYAML's
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """yaml.safe_load, with libyaml's loader when it is there (the same documents; errors carry the same marks)."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)
