"""Chapter 01's fits and tables through the results cache. Each step is a function decorated
with `results.recorded`: its record's key is its name and its arguments (a fit it starts from
enters as that fit's own key), its value a `Fit` or a table through the codec
`_encode`/`_decode`. The stored numbers make the page the same on every machine: float32 Adam over
50,000 steps is not bit-reproducible across CPUs. `Experiment` supplies a profile's arguments to
every step, so neither the chapter nor its caller writes a key.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from layerlab import results
from layerlab.depth.scaling import fits, implications, uncertainty
from layerlab.depth.scaling.fits import Fit
from layerlab.depth.scaling.law import load_chinchilla

if TYPE_CHECKING:
    from layerlab.profiles import Profile

_SEED = 0  # the bootstraps' and the held-out splits' seed
_HUBER_DELTA = 1e-3  # Hoffmann et al.'s δ


# --- a Fit or a table as a record's value -------------------------------------------------------
def _encode(value: Any) -> dict[str, Any]:
    if isinstance(value, Fit):
        return {"fit": value.to_dict()}
    if isinstance(value, pd.DataFrame):
        return {"frame": {"columns": [str(c) for c in value.columns],
                          "index": value.index.tolist(), "index_name": value.index.name,
                          "data": value.to_numpy(dtype=object).tolist()}}
    raise TypeError(f"cannot store {type(value).__name__}: a Fit or a DataFrame")


def _decode(stored_: dict[str, Any]) -> Any:
    if "fit" in stored_:
        return Fit.from_dict(stored_["fit"])
    f = stored_["frame"]
    frame = pd.DataFrame(f["data"], columns=f["columns"], index=f["index"]).infer_objects()
    frame.index.name = f["index_name"]
    return frame


# --- the chapter's steps: each record's key is its step's name and arguments -------------------
# `data` (the Chinchilla runs) is in no key: the schema's inputs carry the CSV's hash. A `start`
# returned by another step enters the key as that step's key.
_step = functools.partial(results.recorded, "depth_scaling", ignore=("data",),
                          encode=_encode, decode=_decode)


@_step("paper fit")
def paper_fit(data: pd.DataFrame, *, steps: int) -> Fit:
    """The authors' recipe: float32 Adam for `steps` steps from their start."""
    return fits.fit(data, "paper", steps=steps)


@_step("converged fit")
def converged_fit(data: pd.DataFrame) -> Fit:
    """The same objective solved to convergence (Levenberg–Marquardt from 16 starts)."""
    return fits.fit(data, "converged")


@_step("paper fit float64")
def paper_fit_float64(data: pd.DataFrame, *, steps: int) -> Fit:
    """The authors' recipe in float64 instead of float32."""
    return fits.fit(data, "paper", steps=steps, dtype=np.float64)


@_step("scipy check")
def scipy_check(data: pd.DataFrame, *, start: Fit) -> Fit:
    """scipy's MINPACK solver on the same objective, started beside `start`."""
    return fits.fit_scipy(data, start)


@_step("adam path")
def adam_path(data: pd.DataFrame, *, checkpoints: tuple[int, ...]) -> pd.DataFrame:
    """The authors' recipe's parameters after each of the Adam step counts."""
    return uncertainty.adam_path(data, checkpoints=checkpoints)


@_step("profile")
def alpha_l_profile(data: pd.DataFrame, *, grid: tuple[float, float, int],
                    start: Fit) -> pd.DataFrame:
    """The objective profiled over the α_ℓ grid (low, high, points), started at `start`."""
    lo, hi, n = grid
    return uncertainty.profile_alpha_l(data, np.linspace(lo, hi, n), start=start)


@_step("bootstrap")
def bootstrap(data: pd.DataFrame, *, resamples: int, seed: int, start: Fit) -> pd.DataFrame:
    """The bootstrap over runs, warm-started at `start`."""
    return uncertainty.bootstrap(data, start, n_resamples=resamples, seed=seed)


@_step("shape bootstrap")
def shape_bootstrap(data: pd.DataFrame, *, resamples: int, seed: int,
                    start: Fit) -> pd.DataFrame:
    """The bootstrap over model shapes, warm-started at `start`."""
    return uncertainty.shape_bootstrap(data, start, n_resamples=resamples, seed=seed)


@_step("huber fit")
def huber_fit(data: pd.DataFrame, *, delta: float, start: Fit) -> Fit:
    """The law fitted with a Huber loss of threshold `delta`, started at `start`."""
    return fits.fit_huber(data, start, delta=delta)


@_step("cut scan")
def cut_scan(data: pd.DataFrame, *, cuts: tuple[int, ...], steps: int) -> pd.DataFrame:
    """Both recipes at each outlier cut."""
    return uncertainty.cut_scan(data, cuts=cuts, steps=steps)


@_step("held out")
def held_out(data: pd.DataFrame, *, splits: int, seed: int) -> pd.DataFrame:
    """Test errors with and without the depth term over `splits` random splits."""
    return uncertainty.held_out(data, n_splits=splits, seed=seed)


@_step("parts by cut")
def parts_by_cut(data: pd.DataFrame, *, cuts: tuple[int, ...], steps: int,
                 cache: results.Cache) -> pd.DataFrame:
    """Fig. 2f's depth part at each cut of the cut scan of these settings (read from its own
    record), under that cut's converged fit."""
    return implications.parts_by_cut(data, cut_scan(data, cuts=cuts, steps=steps, cache=cache))


@_step("paper fit l-2")
def paper_fit_minus_two(data: pd.DataFrame, *, steps: int) -> Fit:
    """The authors' recipe on the ℓ − 2 variant (first and last block not counted)."""
    return fits.fit(data, "paper", depth_offset=2, steps=steps)


STEPS = ("paper_fit", "converged_fit", "paper_fit_float64", "scipy_check", "adam_path",
         "alpha_l_profile", "bootstrap", "shape_bootstrap", "huber_fit", "cut_scan", "held_out",
         "parts_by_cut", "paper_fit_minus_two")
_STARTED = ("scipy_check", "alpha_l_profile", "bootstrap", "shape_bootstrap", "huber_fit")  # at converged


class Experiment:
    """Chapter 01's steps on one profile, each one call returning its stored value (computed and
    stored on first use, then kept). The profile supplies the arguments; the steps above derive
    their keys from them, a step started at the converged fit carrying that record's key."""

    def __init__(self, profile: Profile):
        self.profile = profile.name
        self.settings = profile.depth_scaling
        self.cache = results.Cache(profile.name)
        self._data: pd.DataFrame | None = None
        self._values: dict[str, Any] = {}

    @property
    def data(self) -> pd.DataFrame:
        """The 245 Chinchilla runs every step fits (`load_chinchilla`; every key carries the
        CSV's hash), read on first use."""
        if self._data is None:
            self._data = load_chinchilla()
        return self._data

    def arguments(self, step: str) -> dict[str, Any]:
        """The profile's arguments of `step` (less the data). Nothing is read or computed,
        except the converged fit for the steps that start there."""
        s = self.settings
        start = {"start": self.converged_fit()} if step in _STARTED else {}
        return {**start, **{
            "paper_fit": {"steps": s.adam_steps}, "paper_fit_float64": {"steps": s.adam_steps},
            "paper_fit_minus_two": {"steps": s.adam_steps}, "adam_path": {"checkpoints": s.adam_path},
            "alpha_l_profile": {"grid": s.profile_grid},
            "bootstrap": {"resamples": s.bootstrap, "seed": _SEED},
            "shape_bootstrap": {"resamples": s.bootstrap, "seed": _SEED},
            "huber_fit": {"delta": _HUBER_DELTA},
            "cut_scan": {"cuts": s.cuts, "steps": s.adam_steps},
            "parts_by_cut": {"cuts": s.cuts, "steps": s.adam_steps},
            "held_out": {"splits": s.held_out_splits, "seed": _SEED},
        }.get(step, {})}

    def _run(self, step: str) -> Any:
        if step not in self._values:
            fn = globals()[step]
            self._values[step] = fn(self.data, **self.arguments(step), cache=self.cache)
        return self._values[step]

    def paper_fit(self) -> Fit:
        """The authors' recipe: float32 Adam for the profile's steps from their start."""
        return self._run("paper_fit")

    def converged_fit(self) -> Fit:
        """The same objective solved to convergence (Levenberg–Marquardt from 16 starts)."""
        return self._run("converged_fit")

    def paper_fit_float64(self) -> Fit:
        """The authors' recipe in float64 instead of float32."""
        return self._run("paper_fit_float64")

    def scipy_check(self) -> Fit:
        """scipy's MINPACK solver on the same objective, started beside the converged fit."""
        return self._run("scipy_check")

    def adam_path(self) -> pd.DataFrame:
        """The authors' recipe's parameters after each of the profile's Adam step counts."""
        return self._run("adam_path")

    def alpha_l_profile(self) -> pd.DataFrame:
        """The objective profiled over the profile's α_ℓ grid, started at the converged fit."""
        return self._run("alpha_l_profile")

    def bootstrap(self) -> pd.DataFrame:
        """The bootstrap over runs, warm-started at the converged fit."""
        return self._run("bootstrap")

    def shape_bootstrap(self) -> pd.DataFrame:
        """The bootstrap over model shapes, warm-started at the converged fit."""
        return self._run("shape_bootstrap")

    def huber_fit(self) -> Fit:
        """The law fitted with a Huber loss (δ = 10⁻³), started at the converged fit."""
        return self._run("huber_fit")

    def cut_scan(self) -> pd.DataFrame:
        """Both recipes at each of the profile's outlier cuts."""
        return self._run("cut_scan")

    def held_out(self) -> pd.DataFrame:
        """Test errors with and without the depth term over the profile's random splits."""
        return self._run("held_out")

    def parts_by_cut(self) -> pd.DataFrame:
        """Fig. 2f's depth part at each cut of the cut scan, under that cut's converged fit."""
        return self._run("parts_by_cut")

    def paper_fit_minus_two(self) -> Fit:
        """The authors' recipe on the ℓ − 2 variant (first and last block not counted)."""
        return self._run("paper_fit_minus_two")

