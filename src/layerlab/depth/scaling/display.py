"""Chapter 01's tables: the authors' recipe beside their reported numbers, several fits side by
side, and the held-out test error with and without the depth term.
"""

from __future__ import annotations

import pandas as pd

from layerlab.depth.scaling.fits import Fit
from layerlab.depth.scaling.rules import PAPER_REPORTED


def compare_with_paper(paper_fit: Fit) -> pd.DataFrame:
    """Our run of the authors' recipe beside their reported values, parameter by parameter."""
    p, se = paper_fit.params, paper_fit.se
    ours = {"n_points": paper_fit.n_points, "alpha_l": p["alpha_l"], "alpha_l_se": se["alpha_l"],
            "alpha_m": p["alpha_m"], "alpha_m_se": se["alpha_m"], "alpha_D": p["alpha_D"],
            "alpha_D_se": se["alpha_D"], "L0": p["L0"], "L0_se": se["L0"], "c_m": p["c_m"],
            "c_l": p["c_l"], "c_D": p["c_D"], "objective": paper_fit.objective,
            "mae": paper_fit.mae, "rel_mae": paper_fit.rel_mae}
    rows = [{"quantity": k, "paper reported": PAPER_REPORTED[k], "ours": v,
             "difference": v - PAPER_REPORTED[k]} for k, v in ours.items()]
    return pd.DataFrame(rows).set_index("quantity")


def recipes_table(fits: dict[str, Fit]) -> pd.DataFrame:
    """Parameters (± SE) and fit quality of several fits side by side."""
    rows = {}
    for label, f in fits.items():
        col = {k: f"{f.params[k]:.4f} ± {f.se[k]:.4f}" for k in ("alpha_l", "alpha_m", "alpha_D", "L0")}
        col |= {"c_m": f"{f.params['c_m']:.2f}", "c_l (ℓ' = 100ℓ)": f"{f.params['c_l']:.2f}",
                "c_D (D' = D/1e6)": f"{f.params['c_D']:.4f}", "objective": f"{f.objective:.7f}",
                "mean |residual|": f"{f.mae:.4f}", "points": f.n_points}
        rows[label] = col
    return pd.DataFrame(rows)


def held_out_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean (and spread) over splits of the test error with and without the depth term."""
    test = table[table["part"] == "test"]
    return test.groupby("model").agg(
        test_mse_log_loss=("mse_log_loss", "mean"), sd_over_splits=("mse_log_loss", "std"),
        test_rel_mae=("rel_mae", "mean"), alpha_l_mean=("alpha_l", "mean"),
        alpha_l_sd=("alpha_l", "std"))
