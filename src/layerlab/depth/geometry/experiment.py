"""Chapters 02 and 03's cached experiments, model by model, in `results.Cache`: `run` (every
model's statistics and per-token profiles, `EXPERIMENT`), `token_profiles` (one model's stored
profiles, for chapter 03) and `controls` (per-sequence statistics of every control model,
trained and untrained, `CONTROLS`). Every key is built by `_cache_key`; an interrupted run
resumes at the next model."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from layerlab import results
from layerlab.depth import family
from layerlab.depth.geometry.measurement import (
    FAMILY_PREFIX,
    _batches,
    _control_model,
    _member,
    config_for,
    control_names,
    measure,
    model_names,
    sequence_stats,
)
from layerlab.profiles import Profile

__all__ = ["EXPERIMENT", "CONTROLS", "run", "token_profiles", "controls"]


EXPERIMENT = "hidden_geometry"
CONTROLS = "geometry_sequences"


def _cache_key(profile: Profile, name: str | None = None) -> dict[str, Any]:
    """What a model's geometry results depend on (shared by `run`, `token_profiles` and
    `controls`): a family member's also depend on the family's settings."""
    key = {**profile.config(), "geometry": config_for(profile).key()}
    if name is None or name.startswith(FAMILY_PREFIX):
        key["family"] = family.config_for(profile).key()
    return key


def run(profile: Profile, cache: results.Cache | None = None, *, progress: bool = True,
        only: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """`measure` every model of the profile; each model's results are stored as soon as it
    finishes, so an interrupted run (a Colab disconnect) resumes at the next model."""
    from layerlab.progress import tqdm

    cache = cache or results.Cache(profile.name)
    out = {}
    names = only or model_names(profile)
    for name in tqdm(names, desc="models", disable=not progress):
        key = _cache_key(profile, name)
        stats = cache.get(EXPERIMENT, key, name)
        if stats is None or cache.get_arrays(EXPERIMENT, key, name) is None:
            cache.may_compute(f"{EXPERIMENT}/{name}")
            stats, arrays = measure(name, profile)
            cache.put_arrays(EXPERIMENT, key, arrays, item=name)
            stats = cache.put(EXPERIMENT, key, stats, item=name)
        out[name] = stats
    return out


def token_profiles(profile: Profile, name: str, cache: results.Cache | None = None) -> dict:
    """One model's stored sample of per-token profiles (column name → array, with the decoded
    `token_text`) for chapter 03's PCA; read from the cache only, so `run` must have measured
    the model (LookupError otherwise)."""
    cache = cache or results.Cache(profile.name)
    arrays = cache.get_arrays(EXPERIMENT, _cache_key(profile, name), name)
    if arrays is None:
        raise LookupError(f"no token profiles for {name!r}: run geometry.run(profile) first")
    return arrays


def controls(profile: Profile, cache: results.Cache | None = None, *,
             progress: bool = True, only: list[str] | None = None) -> pd.DataFrame:
    """Per-sequence statistics of every control model, trained and untrained (one row per
    sequence), each model cached as soon as it finishes."""
    from layerlab.progress import tqdm

    cache = cache or results.Cache(profile.name)
    cfg = config_for(profile)
    frames = []
    todo = [(n, t) for n in (only or control_names(profile)) for t in (True, False)]
    for name, trained in tqdm(todo, desc="controls", disable=not progress):
        key = {**_cache_key(profile, name), "sequences": cfg.control_sequences}
        item = f"{name}-{'trained' if trained else 'untrained'}"
        rows = cache.get(CONTROLS, key, item)
        if rows is None:
            cache.may_compute(f"{CONTROLS}/{item}")
            lm = _control_model(name, profile, trained)
            batches, _ = _batches(lm, profile, cfg)
            rows = cache.put(CONTROLS, key, sequence_stats(lm, batches,
                                                           limit=cfg.control_sequences), item=item)
            del lm
        frame = pd.DataFrame(rows)
        frame["model"], frame["trained"] = name, trained
        frame["layers"] = (_member(name)[0] if name.startswith(FAMILY_PREFIX)
                           else rows[0]["layers"] if rows else np.nan)
        frame["family"] = name.startswith(FAMILY_PREFIX)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
