"""What chapter 01's fitted law implies: Fig. 2f's parts of the loss (per point, and per outlier
cut for the chapter's slider), the model-size exponent and the optimal width and depth at a
parameter count, beside the shapes Chinchilla trained.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from layerlab.depth.scaling.fits import Fit
from layerlab.depth.scaling.law import PARAMS, design, kept, terms


# --- what the fit implies ---------------------------------------------------------------------
def parts(fit_: Fit, data: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2f: for every point, its loss minus the other fitted terms and L0 ("depth part",
    and likewise the width and data parts), beside the fitted term itself."""
    d = design(data, fit_.depth_offset)
    theta = np.array(fit_.extra["theta"])
    t = terms(theta, d.X)[0]
    resid = d.loss - t.sum(-1) - theta[6]
    out = data[["m", "ell", "D", "loss"]].copy()
    for i, name in enumerate(("width", "depth", "data")):
        out[f"{name}_part"] = resid + t[:, i]
        out[f"{name}_term"] = t[:, i]
    return out


def size_exponent(alpha_m: float, alpha_l: float) -> float:
    """Exponent of N in the width+depth loss at the optimal shape, N = 12 m² ℓ fixed:
    the optimum scales as N^(−α_m α_ℓ / (α_m + 2 α_ℓ)); N^(−1/3) when both exponents are 1."""
    return -alpha_m * alpha_l / (alpha_m + 2 * alpha_l)


def optimal_shape(fit_: Fit, N: np.ndarray) -> pd.DataFrame:
    """Width and depth minimising c_m/m^α_m + c_ℓ/ℓ^α_ℓ at N = 12 m² ℓ non-embedding parameters
    (closed form: α_m c_m m^−α_m = 2 α_ℓ c_ℓ ℓ^−α_ℓ at the optimum)."""
    a, b = fit_.params["alpha_m"], fit_.params["alpha_l"]
    c_m, c_l = fit_.raw["c_m"], fit_.raw["c_l"]
    N = np.asarray(N, dtype=float)
    m = (a * c_m / (2 * b * c_l) * (N / 12) ** b) ** (1 / (a + 2 * b))
    ell = N / (12 * m**2)
    return pd.DataFrame({"N": N, "m": m, "ell": ell, "aspect": m / ell,
                         "width_term": c_m / m**a, "depth_term": c_l / ell**b})


def chinchilla_shapes(data: pd.DataFrame) -> pd.DataFrame:
    """The distinct (m, ℓ) configurations Chinchilla trained, with N = 12 m² ℓ and m/ℓ."""
    shapes = data[["m", "ell"]].drop_duplicates().sort_values(["m", "ell"]).reset_index(drop=True)
    shapes["N"] = 12.0 * shapes["m"] ** 2 * shapes["ell"]
    shapes["aspect"] = shapes["m"] / shapes["ell"]
    return shapes


def parts_by_cut(data: pd.DataFrame, scan: pd.DataFrame, recipe: str = "converged") -> pd.DataFrame:
    """Fig. 2f's depth part for the points kept at each outlier cut, under that cut's own fit
    (long format: cut, ell, depth_part, depth_term), for the interactive cut slider."""
    frames = []
    for _, row in scan[scan["recipe"] == recipe].iterrows():
        theta = row[list(PARAMS)].to_numpy(float)
        points = kept(data, int(row["cut"]))
        fit_ = Fit(recipe, {}, {}, len(points), 0.0, 0.0, 0.0, extra={"theta": theta.tolist()})
        part = parts(fit_, points)[["ell", "m", "D", "loss", "depth_part", "depth_term"]]
        part.insert(0, "cut", int(row["cut"]))
        part["alpha_l"] = theta[4]
        frames.append(part)
    return pd.concat(frames, ignore_index=True)
