"""The machinery every settings class shares, for every chapter (00–12) and `layerlab report`:
`SettingsError`, the field and range checks, and `_Settings` (validation on construction,
`from_profile`, `replace`, `key`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, fields
from typing import Any


class SettingsError(ValueError):
    """A run setting with a wrong type, range or name."""


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise SettingsError(what)


def _positive_ints(values, what: str) -> None:
    _check(isinstance(values, tuple) and len(values) > 0
           and all(isinstance(v, int) and v > 0 for v in values),
           f"{what} must be a non-empty tuple of positive ints, got {values!r}")


def _check_types(obj: Any) -> None:
    """Each field's value against its annotation (the simple types this module uses)."""
    hints = {"int": int, "float": (int, float), "str": str, "bool": bool}
    for f in fields(obj):
        value = getattr(obj, f.name)
        ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        optional = ann.endswith("| None")
        base = ann.removesuffix(" | None").strip()
        if value is None:
            _check(optional, f"{type(obj).__name__}.{f.name} must not be None")
            continue
        if base in hints:
            ok = isinstance(value, hints[base]) and not (base != "bool" and isinstance(value, bool))
            _check(ok, f"{type(obj).__name__}.{f.name} must be {base}, got {value!r}")
        elif base.startswith("tuple"):
            _check(isinstance(value, tuple),
                   f"{type(obj).__name__}.{f.name} must be a tuple, got {value!r}")


class _Settings:
    """Shared behaviour: validation after construction, `replace`, `key`."""

    def __post_init__(self) -> None:
        _check_types(self)
        self.validate()

    def validate(self) -> None:  # overridden where there is more to check
        pass

    profile_field = ""  # set by each experiment's settings: the Profile field that holds them

    @classmethod
    def from_profile(cls, profile):
        """This experiment's settings in `profile`."""
        if not cls.profile_field:
            raise TypeError(f"{cls.__name__} is part of an experiment's settings, not one")
        return getattr(profile, cls.profile_field)

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)

    def key(self) -> dict[str, Any]:
        """What results depend on (cache keys and provenance)."""
        return asdict(self)
