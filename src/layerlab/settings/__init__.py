"""Typed run settings: one frozen dataclass per experiment, holding every size and default the
experiment reads. `profiles.py` builds one of each per profile; module code and notebooks read
these fields only (`ToySettings.from_profile(profile).steps`), never a dict.

Every class validates itself on construction (types, ranges, names), and `shrunk()` gives the
same settings at toy size: the gpu dry run (`make gpu-dry`) executes the gpu profile's code paths
on a CPU with these (fewer steps, tokens, sweeps and layers; the same keys and branches).

Used by every chapter (00–11) through `profiles`.

One module per area, all re-exported here: `base` (`SettingsError` and the validation every
class shares), `depth` (P1's depth wing, chapters 01–04: `DepthScalingSettings`,
`FamilySettings`, `GeometrySettings`, `TracingSettings`, `ToyConfig`, `ToySettings`), `anatomy`
(P2's anatomy wing, chapters 05–10: `RecoveryConfig`, `MAP_METHODS`, `AnatomySettings`,
`GrowthConfig`, `GrowthTuning`, `GrowthSettings`) and `report` (`layerlab report` and chapter
12: `ReportSettings`, `REPORT_QUICK`, `REPORT_FULL`, `ReportsSettings`). Each imports only
`base` (and `paper`); `EXPERIMENT_SETTINGS`, one class per experiment, is here. This package
stays on the ground floor: it imports none of the wings.
"""

from layerlab.settings.anatomy import (
    MAP_METHODS,
    AnatomySettings,
    GrowthConfig,
    GrowthSettings,
    GrowthTuning,
    RecoveryConfig,
)
from layerlab.settings.base import SettingsError
from layerlab.settings.depth import (
    DepthScalingSettings,
    FamilySettings,
    GeometrySettings,
    ToyConfig,
    ToySettings,
    TracingSettings,
)
from layerlab.settings.report import (
    REPORT_FULL,
    REPORT_QUICK,
    ReportSettings,
    ReportsSettings,
)

__all__ = [
    # base
    "SettingsError",
    # depth
    "DepthScalingSettings", "FamilySettings", "GeometrySettings", "TracingSettings", "ToyConfig",
    "ToySettings",
    # anatomy
    "RecoveryConfig", "MAP_METHODS", "AnatomySettings", "GrowthConfig", "GrowthTuning",
    "GrowthSettings",
    # report
    "ReportSettings", "REPORT_QUICK", "REPORT_FULL", "ReportsSettings",
    # every experiment's settings, in profiles.SETTINGS_FIELDS' order
    "EXPERIMENT_SETTINGS",
]

EXPERIMENT_SETTINGS = (DepthScalingSettings, FamilySettings, GeometrySettings, TracingSettings,
                       ToySettings, AnatomySettings, GrowthSettings, ReportsSettings)
