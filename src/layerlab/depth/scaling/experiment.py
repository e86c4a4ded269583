"""Chapter 01's fits and tables through the results cache. `stored` keeps one value (a `Fit` or a
table, through the codec `_encode`/`_decode`) under a key; `Experiment` is the chapter's steps,
one call each, every one building its record's key from the settings and the records its value
depends on, so the chapter never writes a key by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from layerlab.depth.scaling import fits, implications, uncertainty
from layerlab.depth.scaling.fits import Fit
from layerlab.depth.scaling.law import load_chinchilla

if TYPE_CHECKING:
    from layerlab.profiles import Profile

_SEED = 0  # the bootstraps' and the held-out splits' seed
_HUBER_DELTA = 1e-3  # Hoffmann et al.'s δ


# --- chapter 01's results through the results cache ------------------------------------------------
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


def stored(profile: str, name: str, compute: Callable[[], Any], **key: Any) -> Any:
    """`compute()` (a fit or a table of chapter 01) cached under `name` and the settings in
    `key`, with the Chinchilla CSV's hash: a re-execution reads the stored numbers, so the page is
    the same on every machine (float32 Adam over 50,000 steps is not bit-reproducible across
    CPUs). The value is always the stored round trip, computed or read."""
    from layerlab import results

    value = results.Cache(profile).cached("depth_scaling", {"name": name, **key},
                                          lambda: _encode(compute()))
    return _decode(value)


class Experiment:
    """Chapter 01's steps on one profile, each one call returning its stored value (computed and
    stored on first use). A step's key holds every setting its value depends on; a step computed
    from another record carries that record's key: the ones started at the converged fit under
    `start`, the outlier cuts' parts the cut scan's settings."""

    def __init__(self, profile: Profile):
        self.profile = profile.name
        self.settings = profile.depth_scaling
        self._data: pd.DataFrame | None = None
        self._values: dict[str, Any] = {}

    @property
    def data(self) -> pd.DataFrame:
        """The 245 Chinchilla runs every step fits (`load_chinchilla`; every key carries the
        CSV's hash), read on first use."""
        if self._data is None:
            self._data = load_chinchilla()
        return self._data

    def keys(self) -> dict[str, dict[str, Any]]:
        """Each step's key (the configuration given to the results cache), by step name.
        Nothing is read or computed."""
        s = self.settings
        converged = {"name": "converged fit"}
        scan = {"name": "cut scan", "cuts": s.cuts, "steps": s.adam_steps}
        return {
            "paper_fit": {"name": "paper fit", "steps": s.adam_steps},
            "converged_fit": converged,
            "paper_fit_float64": {"name": "paper fit float64", "steps": s.adam_steps},
            "scipy_check": {"name": "scipy check", "start": converged},
            "adam_path": {"name": "adam path", "checkpoints": s.adam_path},
            "alpha_l_profile": {"name": "profile", "grid": s.profile_grid, "start": converged},
            "bootstrap": {"name": "bootstrap", "resamples": s.bootstrap, "seed": _SEED,
                          "start": converged},
            "shape_bootstrap": {"name": "shape bootstrap", "resamples": s.bootstrap,
                                "seed": _SEED, "start": converged},
            "huber_fit": {"name": "huber fit", "delta": _HUBER_DELTA, "start": converged},
            "cut_scan": scan,
            "held_out": {"name": "held out", "splits": s.held_out_splits, "seed": _SEED},
            "parts_by_cut": {**scan, "name": "parts by cut"},
            "paper_fit_minus_two": {"name": "paper fit l-2", "steps": s.adam_steps},
        }

    def _stored(self, step: str, compute: Callable[[], Any]) -> Any:
        if step not in self._values:
            key = dict(self.keys()[step])
            self._values[step] = stored(self.profile, key.pop("name"), compute, **key)
        return self._values[step]

    def paper_fit(self) -> Fit:
        """The authors' recipe: float32 Adam for the profile's steps from their start."""
        return self._stored("paper_fit", lambda: fits.fit(
            self.data, "paper", steps=self.settings.adam_steps))

    def converged_fit(self) -> Fit:
        """The same objective solved to convergence (Levenberg–Marquardt from 16 starts)."""
        return self._stored("converged_fit", lambda: fits.fit(self.data, "converged"))

    def paper_fit_float64(self) -> Fit:
        """The authors' recipe in float64 instead of float32."""
        return self._stored("paper_fit_float64", lambda: fits.fit(
            self.data, "paper", steps=self.settings.adam_steps, dtype=np.float64))

    def scipy_check(self) -> Fit:
        """scipy's MINPACK solver on the same objective, started beside the converged fit."""
        converged = self.converged_fit()
        return self._stored("scipy_check", lambda: fits.fit_scipy(self.data, converged))

    def adam_path(self) -> pd.DataFrame:
        """The authors' recipe's parameters after each of the profile's Adam step counts."""
        return self._stored("adam_path", lambda: uncertainty.adam_path(
            self.data, checkpoints=self.settings.adam_path))

    def alpha_l_profile(self) -> pd.DataFrame:
        """The objective profiled over the profile's α_ℓ grid, started at the converged fit."""
        converged = self.converged_fit()
        lo, hi, n = self.settings.profile_grid
        return self._stored("alpha_l_profile", lambda: uncertainty.profile_alpha_l(
            self.data, np.linspace(lo, hi, n), start=converged))

    def bootstrap(self) -> pd.DataFrame:
        """The bootstrap over runs, warm-started at the converged fit."""
        converged = self.converged_fit()
        return self._stored("bootstrap", lambda: uncertainty.bootstrap(
            self.data, converged, n_resamples=self.settings.bootstrap, seed=_SEED))

    def shape_bootstrap(self) -> pd.DataFrame:
        """The bootstrap over model shapes, warm-started at the converged fit."""
        converged = self.converged_fit()
        return self._stored("shape_bootstrap", lambda: uncertainty.shape_bootstrap(
            self.data, converged, n_resamples=self.settings.bootstrap, seed=_SEED))

    def huber_fit(self) -> Fit:
        """The law fitted with a Huber loss (δ = 10⁻³), started at the converged fit."""
        converged = self.converged_fit()
        return self._stored("huber_fit", lambda: fits.fit_huber(
            self.data, converged, delta=_HUBER_DELTA))

    def cut_scan(self) -> pd.DataFrame:
        """Both recipes at each of the profile's outlier cuts."""
        return self._stored("cut_scan", lambda: uncertainty.cut_scan(
            self.data, cuts=self.settings.cuts, steps=self.settings.adam_steps))

    def held_out(self) -> pd.DataFrame:
        """Test errors with and without the depth term over the profile's random splits."""
        return self._stored("held_out", lambda: uncertainty.held_out(
            self.data, n_splits=self.settings.held_out_splits, seed=_SEED))

    def parts_by_cut(self) -> pd.DataFrame:
        """Fig. 2f's depth part at each cut of the cut scan, under that cut's converged fit."""
        scan = self.cut_scan()
        return self._stored("parts_by_cut", lambda: implications.parts_by_cut(self.data, scan))

    def paper_fit_minus_two(self) -> Fit:
        """The authors' recipe on the ℓ − 2 variant (first and last block not counted)."""
        return self._stored("paper_fit_minus_two", lambda: fits.fit(
            self.data, "paper", depth_offset=2, steps=self.settings.adam_steps))
