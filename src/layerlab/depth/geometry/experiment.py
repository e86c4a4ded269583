"""Chapters 02 and 03's cached experiments, model by model, in `results.Cache`: `run` (every
model's statistics and per-token profiles, `EXPERIMENT`), `token_profiles` (one model's stored
profiles, for chapter 03) and `controls` (per-sequence statistics of every control model,
trained and untrained, `CONTROLS`, with the last angle after the final norm from its own record,
`PAPER_LAST_EXPERIMENT`). Each is a `results.recorded` step per model, keyed by
`model_context` and its own arguments; an interrupted run resumes at the next model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from layerlab import results
from layerlab.depth import family
from layerlab.depth.geometry.measurement import (
    FAMILY_PREFIX,
    PAPER_LAST,
    _batches,
    _control_model,
    _member,
    config_for,
    control_names,
    measure,
    model_names,
    paper_last_angles,
    sequence_stats,
)
from layerlab.profiles import Profile

__all__ = ["EXPERIMENT", "CONTROLS", "PAPER_LAST_EXPERIMENT", "ModelGeometry", "model_context", "condition", "run", "token_profiles", "controls"]


EXPERIMENT = "hidden_geometry"
CONTROLS = "geometry_sequences"
# P1-A1's last angle in the paper's convention (after the final norm), per window: its own
# records, so the block-only statistics of `CONTROLS` keep theirs
PAPER_LAST_EXPERIMENT = "geometry_sequences_paper_last"


def model_context(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], results.Cache]:
    """What a model's results depend on, for every per-model step of chapter 02 (`recorded`'s
    context; the step's first two arguments are the profile and the model's name): the profile,
    the geometry settings and, for a family member, the family's settings; in the profile's
    cache."""
    profile, name = arguments["profile"], arguments["name"]
    key = {**profile.config(), "geometry": config_for(profile).key()}
    if name.startswith(FAMILY_PREFIX):
        key["family"] = family.config_for(profile).key()
    return key, results.Cache(profile.name)


def condition(arguments: Mapping[str, Any]) -> str:
    """The record of a model trained or untrained (`<name>-trained`, `<name>-untrained`)."""
    return f"{arguments['name']}-{'trained' if arguments['trained'] else 'untrained'}"


@dataclass(frozen=True, eq=False)
class ModelGeometry:
    """One model's statistics (`run`, from `hidden.collect`): per convention ("raw": the last
    block's output; "hf": after the final norm), token group ("pos_ge_1", "all") and metric
    (θ, relative update, θ of the updates, …), the mean and quartiles per layer or pair."""

    n_layers: int
    conventions: dict[str, dict[str, dict[str, Any]]]
    summary: dict[str, Any]  # the model: architecture, width, vocabulary, source

    def group(self, convention: str = "raw", group: str = "pos_ge_1") -> dict[str, Any]:
        """One convention's token group: metric -> quantiles, with its `tokens`."""
        return self.conventions[convention][group]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ModelGeometry:
        """Read back a stored record (the fields as `measure` gives them)."""
        return cls(n_layers=int(record["n_layers"]), conventions=record["conventions"],
                   summary=record["summary"])


@results.recorded(EXPERIMENT, context=model_context, ignore=("name",), record=lambda a: a["name"],
                  arrays=True, decode=ModelGeometry.from_record)
def _measured(profile: Profile, name: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return measure(name, profile)


@results.recorded(CONTROLS, context=model_context, ignore=("name", "trained"), record=condition)
def _sequences(profile: Profile, name: str, trained: bool, *, sequences: int) -> list[dict]:
    lm = _control_model(name, profile, trained)
    batches, _ = _batches(lm, profile, config_for(profile))
    return sequence_stats(lm, batches, limit=sequences)


@results.recorded(PAPER_LAST_EXPERIMENT, context=model_context, ignore=("name", "trained"),
                  record=condition)
def _paper_last(profile: Profile, name: str, trained: bool, *, sequences: int) -> list[dict]:
    lm = _control_model(name, profile, trained)
    batches, _ = _batches(lm, profile, config_for(profile))
    return paper_last_angles(lm, batches, limit=sequences)


def run(profile: Profile, cache: results.Cache | None = None, *, progress: bool = True,
        only: list[str] | None = None) -> dict[str, ModelGeometry]:
    """`measure` every model of the profile; each model's results are stored as soon as it
    finishes, so an interrupted run (a Colab disconnect) resumes at the next model."""
    from layerlab.progress import tqdm

    names = only or model_names(profile)
    return {name: _measured(profile, name, cache=cache)
            for name in tqdm(names, desc="models", disable=not progress)}


def token_profiles(profile: Profile, name: str, cache: results.Cache | None = None) -> dict:
    """One model's stored sample of per-token profiles (column name → array, with the decoded
    `token_text`) for chapter 03's PCA; read from the cache only, so `run` must have measured
    the model (LookupError otherwise)."""
    cache = cache or results.Cache(profile.name)
    arrays = cache.get_arrays(EXPERIMENT, _measured.key(profile, name), name)
    if arrays is None:
        raise LookupError(f"no token profiles for {name!r}: run geometry.run(profile) first")
    return arrays


def controls(profile: Profile, cache: results.Cache | None = None, *,
             progress: bool = True, only: list[str] | None = None,
             paper_last: bool = True) -> pd.DataFrame:
    """Per-sequence statistics of every control model, trained and untrained (one row per
    sequence), each model cached as soon as it finishes. `paper_last`: also the last angle after
    the final norm (`PAPER_LAST`, P1-A1's convention) on the same windows, from its own record;
    False for a caller that reads no edge ratio (the family's slopes)."""
    from layerlab.progress import tqdm

    cfg = config_for(profile)
    frames = []
    todo = [(n, t) for n in (only or control_names(profile)) for t in (True, False)]
    for name, trained in tqdm(todo, desc="controls", disable=not progress):
        rows = _sequences(profile, name, trained, sequences=cfg.control_sequences, cache=cache)
        frame = pd.DataFrame(rows)
        if paper_last and (cfg.paper_last_family or not name.startswith(FAMILY_PREFIX)):
            frame[PAPER_LAST] = _paper_frame(profile, name, trained, rows, cfg, cache)
        elif paper_last:  # not measured for the family in this profile: its A1 unit says so
            frame[PAPER_LAST] = np.nan
        frame["model"], frame["trained"] = name, trained
        frame["layers"] = (_member(name)[0] if name.startswith(FAMILY_PREFIX)
                           else rows[0]["layers"] if rows else np.nan)
        frame["family"] = name.startswith(FAMILY_PREFIX)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _paper_frame(profile: Profile, name: str, trained: bool, rows: list[dict], cfg,
                 cache: results.Cache | None) -> list[float]:
    """The paper-convention last angle of each of `rows`' windows; the two records must cover
    the same windows (the same count and kept tokens), or the joint bootstrap would pair
    different texts."""
    last = _paper_last(profile, name, trained, sequences=cfg.control_sequences, cache=cache)
    if [r["tokens"] for r in last] != [r["tokens"] for r in rows]:
        raise ValueError(f"{name}: the paper-convention record does not cover the same windows "
                         "as the per-sequence statistics")
    return [r[PAPER_LAST] for r in last]
