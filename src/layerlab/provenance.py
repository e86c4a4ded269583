"""Where a number came from: profile, device, package versions, git commit, time.

Used by every chapter (00–11): each ends with a provenance block.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from importlib import metadata
from typing import Any

from layerlab import __version__, paths

PACKAGES = ("torch", "transformers", "datasets", "numpy", "pandas", "altair", "statsmodels")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def git_commit() -> str:
    """HEAD of the repository layerlab runs from, marked `+dirty` when sources have changes."""
    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(paths.REPO_ROOT), *args], capture_output=True,
                             text=True, timeout=10)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        return out.stdout.strip()

    try:
        head = git("rev-parse", "--short=12", "HEAD")
    except (OSError, RuntimeError, subprocess.TimeoutExpired):
        return "unknown"
    # outputs (executed notebooks, cached results) do not make the code that produced them
    # dirty; an untracked file does (a new corpus under data/ or a new chapter is read by the
    # run, yet no commit holds it). Ignored files (.venv, _build, caches) do not.
    dirty = git("status", "--porcelain", "--untracked-files=all", "--", ".",
                ":(exclude)notebooks/*.ipynb", ":(exclude)results")
    return head + ("+dirty" if dirty else "")


def device_description() -> str:
    import torch

    if torch.cuda.is_available():
        names = {torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())}
        return f"cuda x{torch.cuda.device_count()} ({', '.join(sorted(names))})"
    return f"cpu ({torch.get_num_threads()} torch threads, {platform.processor() or platform.machine()})"


def collect(profile: str | None = None, **extra: Any) -> dict[str, Any]:
    """A provenance record; `extra` adds experiment facts (models, tokens, seeds...)."""
    from layerlab import profiles

    record: dict[str, Any] = {
        "profile": profile or profiles.active().name,
        "device": device_description(),
        "python": platform.python_version(),
        "layerlab": __version__,
        **{pkg: _version(pkg) for pkg in PACKAGES},
        "git_commit": git_commit(),
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
    }
    import torch

    if torch.cuda.is_available():  # the GPU's CUDA runtime (absent from CPU records)
        record["cuda"] = torch.version.cuda
    if os.environ.get("LAYERLAB_DRY") == "1":  # shrunk sizes: never a real result
        record["dry"] = True
    record.update(extra)
    return record


def shown(value: Any) -> str:
    """A value as words: lists joined, settings as `name = value` pairs (no raw reprs), floats
    to six significant digits."""
    if isinstance(value, dict):
        return "; ".join(f"{k} = {shown(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(shown(v) for v in value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if hasattr(value, "__dataclass_fields__"):
        return shown({f: getattr(value, f) for f in value.__dataclass_fields__})
    return str(value)


def table(record: dict[str, Any]):
    """The record as a two-column DataFrame, for the provenance block of a notebook."""
    import pandas as pd

    rows = [(k, shown(v)) for k, v in record.items()]
    from layerlab.folded import fold

    return fold(pd.DataFrame(rows, columns=["field", "value"]).set_index("field"),
                "Provenance: code, versions, machine and settings of this run (click to open)")
