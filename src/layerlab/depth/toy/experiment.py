"""Chapter 04's cached experiment: the named sweeps of a profile, each student stored as its own
record (`toy_students`), trained as batched groups (`grid.Grid`) or sweep by sweep
(`sweep.Sweep`), and the angle signatures of trained and untrained students (`toy_signatures`).

Their versions are the experiments' schema versions in `layerlab.results.SCHEMAS`, like every
other record's.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from layerlab import results
from layerlab.depth.toy.angles import student_angles, untrained_angles
from layerlab.depth.toy.display import setting_key
from layerlab.depth.toy.grid import Grid, groups
from layerlab.depth.toy.sweep import Sweep
from layerlab.profiles import Profile
from layerlab.settings import ToyConfig, ToySettings

if TYPE_CHECKING:
    import pandas as pd

STUDENTS = "toy_students"
SIGNATURES = "toy_signatures"


def sweep_configs(profile) -> dict[str, ToyConfig]:
    """The named sweeps of a profile."""
    return ToySettings.from_profile(profile).sweep_configs()


def student_key(cfg: ToyConfig) -> dict[str, Any]:
    """What one student's result depends on: its sweep's settings without the list of depths.
    Students share nothing but the teacher and the batches, so a student trained alongside
    others ends exactly where it would alone (`tests/unit/test_toy.py`), and a sweep extended by one
    depth reuses every student already stored."""
    key = asdict(cfg)
    key.pop("student_depths")
    return key


def _stored(name: str, cfg: ToyConfig, cache) -> dict[int, Any]:
    from layerlab.results import MISSING

    key = student_key(cfg)
    return {d: v for d in cfg.student_depths
            if (v := cache.lookup(STUDENTS, key, f"{name}-d{d}")) is not MISSING}


def _assemble(cfg: ToyConfig, stored: dict[int, Any]) -> dict[str, Any]:
    depths = list(cfg.student_depths)
    steps = [p["step"] for p in stored[depths[0]]["curve"]]
    curve = [{"step": step, "test_loss": [stored[d]["curve"][i]["test_loss"] for d in depths]}
             for i, step in enumerate(steps)]
    return {"config": asdict(cfg), "depths": depths, "curve": curve,
            "final": curve[-1]["test_loss"]}


def _store(name: str, cfg: ToyConfig, run: dict[str, Any], cache) -> None:
    """Each student of a finished run (only its missing depths) as its own record."""
    for i, d in enumerate(run["depths"]):
        curve = [{"step": p["step"], "test_loss": p["test_loss"][i]} for p in run["curve"]]
        cache.put(STUDENTS, student_key(cfg), {"depth": d, "curve": curve}, item=f"{name}-d{d}")


def _missing(name: str, cfg: ToyConfig, stored: dict[int, Any], cache) -> tuple[int, ...]:
    """The student depths of a sweep not in `stored` (allowed to be computed, or an error)."""
    missing = tuple(d for d in cfg.student_depths if d not in stored)
    if missing:
        cache.may_compute(f"{STUDENTS}/{name} depths {missing}")
    return missing


def stored_sweeps(configs: dict[str, ToyConfig], cache) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(every sweep whose students are all stored, assembled; the names of the others), reading
    the cache only: another profile's committed grid, which may be partly finished."""
    runs, missing = {}, []
    for name, cfg in configs.items():
        stored = _stored(name, cfg, cache)
        if len(stored) == len(cfg.student_depths):
            runs[name] = _assemble(cfg, stored)
        else:
            missing.append(name)
    return runs, missing


def run_sweep(name: str, cfg: ToyConfig, cache, *, progress: bool = True) -> dict[str, Any]:
    """One sweep, student by student from the cache; the missing students train together."""
    stored = _stored(name, cfg, cache)
    if missing := _missing(name, cfg, stored, cache):
        _store(name, cfg, Sweep(cfg.replace(student_depths=missing)).run(progress=progress), cache)
        stored = _stored(name, cfg, cache)
    return _assemble(cfg, stored)


def grid_checkpoint(profile_name: str, names: list[str]) -> Path:
    """Where a batched group of sweeps keeps its resumable state (outside the results)."""
    from layerlab import paths, results

    return paths.cache_dir() / "toygrid" / profile_name / f"{results.config_hash({'sweeps': names})}.pt"


def run_grid(profile_name: str, configs: dict[str, ToyConfig], cache, *, device=None,
             deadline: float | None = None, progress: bool = True,
             max_group: int | None = None) -> bool:
    """Train every missing student of `configs` as batched groups (`grid.Grid`), resuming each
    group from its checkpoint and storing its students when it finishes (groups of at most
    `max_group` sweeps); on CUDA each group's step is a captured CUDA graph. Stops cleanly once
    `time.monotonic()` passes `deadline`; True when nothing is left to train."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    todo = {}
    for name, cfg in configs.items():
        if missing := _missing(name, cfg, _stored(name, cfg, cache), cache):
            todo[name] = cfg.replace(student_depths=missing)
    for group in groups(todo, max_group):
        grid = Grid(group, device=device)
        ckpt = grid_checkpoint(cache.profile, list(group))
        grid.load(ckpt)
        grid.use_cuda_graph()  # a no-op on a CPU
        every = max(1, grid.cfg.eval_every)
        if not grid.train(deadline=deadline, checkpoint=ckpt, checkpoint_every=every,
                          progress=progress):
            return False
        for name, run in grid.results().items():
            _store(name, configs[name], run, cache)
        ckpt.unlink(missing_ok=True)
    return True


def run_sweeps(profile, cache=None, *, only: list[str] | None = None, progress: bool = True,
               batched: bool = True) -> dict[str, dict[str, Any]]:
    """Every sweep of the profile. Missing students train as batched groups of sweeps
    (`batched`, the default) or sweep by sweep; each is stored when its group finishes and a
    rerun resumes (a group from its checkpoint; a sweep given a deeper student trains only it)."""
    from layerlab.progress import tqdm

    cache = cache or results.Cache(profile.name)
    configs = {k: v for k, v in sweep_configs(profile).items() if only is None or k in only}
    if batched:
        run_grid(profile.name, configs, cache, progress=progress)
    return {name: run_sweep(name, cfg, cache, progress=progress)
            for name, cfg in tqdm(configs.items(), desc="toy sweeps", disable=not progress)}


def signatures(profile, cache=None, *, progress: bool = True) -> "pd.DataFrame":
    """Consecutive-update angles of trained students of both teacher types (MSE objective,
    `ToySettings.signature_steps` steps), cached per teacher type. Each row also names its run's
    teacher seed, length (`train_steps`) and setting (`display.setting_key`), read from the
    run's config (not stored in the record), for the verdicts' seeds and convergence test."""
    import pandas as pd

    spec = ToySettings.from_profile(profile)
    configs = {t: asdict(spec.signature_config(t)) for t in ("independent", "tied")}
    out = _signature.each(configs, profile, show=progress, cache=cache, progress=progress)
    return pd.DataFrame([{**row, "seed": configs[t]["seed"], "train_steps": configs[t]["steps"],
                          "setting_key": setting_key(configs[t])}
                         for t, rows in out.items() for row in rows])


# the item is the sweep's whole config: it says everything the record depends on
@results.recorded(SIGNATURES, context=results.in_profile, ignore=("show",))
def _signature(profile: Profile, item: dict[str, Any], *, show: bool) -> list[dict[str, Any]]:
    cfg = ToyConfig(**item)
    sweep = Sweep(cfg)
    sweep.run(progress=show)
    return [{**row, "teacher": cfg.teacher} for row in student_angles(sweep)]


def untrained_signatures(profile, cache=None, seed: int = 0) -> "pd.DataFrame":
    """The signature's control: students of the signature depths at PyTorch's default
    initialisation (not the identity start), measured exactly as the trained ones. Cached:
    float32 matrix products differ in the last bits between CPUs, and the page must show the
    stored numbers."""
    import pandas as pd

    spec = ToySettings.from_profile(profile)
    return pd.DataFrame(_untrained(profile, spec.student_depths, seed, cache=cache))


@results.recorded(SIGNATURES, context=results.in_profile)
def _untrained(profile: Profile, untrained: tuple[int, ...], seed: int) -> list[dict[str, Any]]:
    return untrained_angles(untrained, seed)
