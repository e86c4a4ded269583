"""Chapter 05's cached runs, each item stored as it finishes (a rerun after an interruption
resumes): the map (`run_map`, records `importance_map`), the removal-based metrics on E1
(`similarity`), the untrained twin's map, the layer claims' negative control (`untrained_map`),
and `run`, everything the chapter shows in one call (read again, cached, by chapters 06, 09 and
11).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from layerlab import models
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.anatomy.importance.measurement import (
    anchors,
    degradation_table,
    layer_similarity,
    map_tables,
    method_edit,
    with_classes,
)
from layerlab.anatomy.lab import Lab, ProfileOrLab, recorded

__all__ = ["run_map", "similarity", "ImportanceResult", "run", "UNTRAINED_METHODS", "untrained_methods",
           "untrained_map"]


def run_map(lab: Lab, *, force: bool = False) -> dict[tuple[str, str, int], Scores]:
    """Scores of every (set, method, layer) the profile asks for; each cached as it finishes."""
    plan = {f"{s}-{m}-L{l:02d}": {"set": s, "method": m, "layer": l}
            for s, methods in lab.cfg.map_methods.items() for m in methods
            for l in range(lab.n_layers)}
    stored = _map_item.each(plan, lab, force=force, progress=lab.progress)
    return {(plan[k]["set"], plan[k]["method"], plan[k]["layer"]): Scores.from_dict(v)
            for k, v in stored.items()}


@recorded("importance_map")
def _map_item(lab: Lab, item: dict[str, Any]) -> dict[str, Any]:
    return lab.evaluator(item["set"]).evaluate(method_edit(item["method"], item["layer"])).to_dict()


def similarity(lab: Lab) -> pd.DataFrame:
    """`layer_similarity` on E1, cached: the removal-based metrics (Block Influence, angular
    distance) that `anchors` ranks the map against."""
    return pd.DataFrame(_similarity(lab, set="E1"))


@recorded("layer_similarity", reads_e1="set")
def _similarity(lab: Lab, set: str) -> dict[str, list]:  # noqa: A002 -- the key's field is "set"
    return layer_similarity(lab.lm, lab.evaluator(set)).to_dict(orient="list")


@dataclass(frozen=True, eq=False)  # tables: compared field by field, not with ==
class ImportanceResult:
    """Everything chapter 05 shows (`run`)."""

    table: pd.DataFrame  # degradation % and 95 % interval per set, method and layer, with classes
    ranges: pd.DataFrame  # the range statistic per set
    similarity: pd.DataFrame  # the removal-based metrics on E1
    anchors: pd.DataFrame  # the map beside those metrics
    bases: dict[str, Scores]  # the unedited model's scores per set
    sets: pd.DataFrame  # the evaluation sets, described
    untrained: pd.DataFrame | None = None  # the untrained twin's map (the control), if asked


def run(lab: ProfileOrLab, *, untrained: bool = False) -> ImportanceResult:
    """Everything chapter 05 shows: the degradation table with classes, range statistics and
    the anchors; with `untrained`, also the untrained twin's map (the layer claims' negative
    control, `untrained_map`). Cached item by item; a rerun after an interruption resumes."""
    lab = Lab.of(lab)
    runs = run_map(lab)
    bases = {s: lab.base(s) for s in lab.cfg.map_methods}
    table, ranges = map_tables(runs, bases, lab.n_layers, resamples=lab.cfg.bootstrap)
    sim = similarity(lab)
    # the twin's map on every set: both operations where per-layer sweeps are cheap
    # (`single_sets`: E0 on two cores, both on a GPU), neighbour averaging alone (the layer
    # claims' primary) elsewhere; one call per set, so a set's records do not depend on another's
    twin = pd.concat([untrained_map(lab, sets=(s,)) for s in lab.cfg.map_methods],
                     ignore_index=True) if untrained else None
    return ImportanceResult(table=table, ranges=ranges, similarity=sim,
                            anchors=anchors(table, sim, lab.n_layers), bases=bases,
                            sets=pd.DataFrame(lab.describe_sets()), untrained=twin)


UNTRAINED_METHODS = ("neighbour_average", "skip")  # the operations the layer claims read


def untrained_methods(lab: Lab, set_name: str) -> tuple[str, ...]:
    """The twin's operations on one set: both where per-layer sweeps are cheap
    (`single_sets`), else neighbour averaging alone, the operation of every layer claim's
    primary (the control enters the verdict through the primary only)."""
    return UNTRAINED_METHODS if set_name in lab.cfg.single_sets else UNTRAINED_METHODS[:1]


def untrained_map(lab: Lab, *, seed: int = 0, force: bool = False,
                  sets: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The negative control of the layer claims: the same map (neighbour averaging and removal,
    every layer) on the untrained twin (`models.untrained_twin`: the same config at random
    initialisation) on `sets` (default: the map's sets), as a degradation table with classes.
    Cached item by item."""
    sets = list(sets or lab.cfg.map_methods)
    plan: dict[str, dict[str, Any]] = {f"{s}-base": {"set": s, "method": None, "layer": None}
                                       for s in sets}
    plan.update({f"{s}-{m}-L{l:02d}": {"set": s, "method": m, "layer": l}
                 for s in sets for m in untrained_methods(lab, s) for l in range(lab.n_layers)})
    stored = _twin_item.each(plan, lab, seed=seed, sets=sets, held={}, force=force,
                             progress=lab.progress)
    bases = {s: Scores.from_dict(stored[f"{s}-base"]) for s in sets}
    runs = {(it["set"], it["method"], it["layer"]): Scores.from_dict(stored[k])
            for k, it in plan.items() if it["method"] is not None}
    return with_classes(degradation_table(runs, bases, resamples=lab.cfg.bootstrap), lab.n_layers)


# `twin` marks these records apart from the trained map's (one experiment); the sets are in
# each item (`sets` only says whether E1 is read); `held` keeps the twin and its evaluators
@recorded("importance_map", reads_e1="sets", ignore=("sets", "held"))
def _twin_item(lab: Lab, item: dict[str, Any], *, twin: str = "untrained", seed: int,
               sets: list[str], held: dict[str, Any]) -> dict[str, Any]:
    if item["set"] not in held:
        if "twin" not in held:
            held["twin"] = models.untrained_twin(lab.lm, seed=seed)
        held[item["set"]] = Evaluator(held["twin"], lab.evalset(item["set"]),
                                      batch_tokens=lab.cfg.batch_tokens, progress=lab.progress)
    ev = held[item["set"]]
    if item["method"] is None:
        return ev.base().to_dict()
    return ev.evaluate(method_edit(item["method"], item["layer"])).to_dict()
