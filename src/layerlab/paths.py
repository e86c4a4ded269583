"""Where the repository's data, results and caches live.

The package is installed editable from a clone (`pip install -e .`, also on Colab), so the
repository root is two levels above this file. Environment variables override each folder, which
is how the tests point everything at temporary directories.

Used by every chapter (through results, corpus and models).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env_path(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    return Path(value).expanduser() if value else default


def data_dir() -> Path:
    """The vendored data folder (`data/` at the repository root, or `$LAYERLAB_DATA`)."""
    path = _env_path("LAYERLAB_DATA", REPO_ROOT / "data")
    if not path.is_dir():
        raise FileNotFoundError(
            f"layerlab's data folder {path} does not exist. layerlab must run from a clone of the "
            "repository (pip install -e .), or set LAYERLAB_DATA to a copy of its data/ folder."
        )
    return path


def results_dir() -> Path:
    """The results cache root (`results/` at the repository root, or `$LAYERLAB_RESULTS`)."""
    return _env_path("LAYERLAB_RESULTS", REPO_ROOT / "results")


def cache_dir() -> Path:
    """Derived, never-committed files such as converted model weights (`$LAYERLAB_CACHE`)."""
    xdg = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return _env_path("LAYERLAB_CACHE", xdg / "layerlab")
