"""The law itself for chapter 01: its constants (the paper's units, start, learning rates and
outlier cut), the Chinchilla runs and the cut, the design in the paper's units, and the model
with its derivatives, batched over B parameter vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from layerlab import paths

PARAMS = ("ln_c_m", "ln_c_l", "ln_c_D", "alpha_m", "alpha_l", "alpha_D", "L0")
DEPTH_UNIT = 100.0  # the paper fits ℓ' = 100 ℓ ...
TOKEN_UNIT = 1e6  # ... and D' = D / 10^6 (m stays raw)
PAPER_START = np.array([np.log(200.0), np.log(200.0), np.log(10.0), 1.0, 1.0, 0.33, 1.69])
PAPER_LR = np.array([5e-3, 5e-3, 5e-3, 5e-4, 5e-4, 5e-4, 5e-3])
PAPER_STEPS = 50_000
PAPER_EXCLUDED = 40  # points at or above the 40th-largest loss are dropped: 203 of 245 remain
ALL_FREE = np.ones(7, dtype=bool)
NO_DEPTH_TERM = np.array([True, False, True, True, False, True, True])
_OFF = -60.0  # ln c_ℓ for a switched-off depth term (exp(-60) ≈ 1e-26)


# --- data -----------------------------------------------------------------------------------
def load_chinchilla() -> pd.DataFrame:
    """The 245 Chinchilla runs (Epoch AI's extraction, with P1's width/depth per run).

    Columns: N (parameters), C (FLOP), loss, D = C / (6N) tokens, m (d_model), ell (layers).
    """
    raw = pd.read_csv(paths.data_dir() / "get_fitting_data_chinchilla.csv")
    data = pd.DataFrame({
        "N": raw["model_size"], "C": raw["FLOP"], "loss": raw["loss"],
        "D": raw["num_tokens"], "m": raw["d_model"].astype(int), "ell": raw["n_layers"].astype(int),
    })
    if len(data) != 245 or not np.allclose(data["D"], data["C"] / (6 * data["N"]), rtol=1e-9):
        raise ValueError("get_fitting_data_chinchilla.csv is not the expected 245-run file")
    return data


def outlier_mask(loss: np.ndarray, n_excluded: int = PAPER_EXCLUDED) -> np.ndarray:
    """Keep points whose loss is strictly below the `n_excluded`-th largest loss (the paper's
    rule; ties with it are dropped too). `n_excluded=0` keeps everything."""
    loss = np.asarray(loss, dtype=float)
    if n_excluded <= 0:
        return np.ones(loss.shape, dtype=bool)
    threshold = np.sort(loss)[::-1][n_excluded - 1]
    return loss < threshold


@dataclass(frozen=True)
class Design:
    """Log features in the paper's units and log loss, for one set of points."""

    X: np.ndarray  # [n, 3]: ln m, ln ℓ', ln D'
    y: np.ndarray  # [n]: ln loss
    loss: np.ndarray  # [n]
    depth_offset: int = 0

    @property
    def n(self) -> int:
        """Number of runs: the n of the SEs' s² = Σ r² / (n − 7)."""
        return len(self.y)


def design(data: pd.DataFrame, depth_offset: int = 0) -> Design:
    """`depth_offset=2` is P1's ℓ−2 variant (first and last block not counted)."""
    ell = data["ell"].to_numpy(float) - depth_offset
    if (ell <= 0).any():
        raise ValueError(f"depth_offset={depth_offset} leaves non-positive depths")
    X = np.column_stack([np.log(data["m"].to_numpy(float)), np.log(DEPTH_UNIT * ell),
                         np.log(data["D"].to_numpy(float) / TOKEN_UNIT)])
    loss = data["loss"].to_numpy(float)
    return Design(X=X, y=np.log(loss), loss=loss, depth_offset=depth_offset)


def kept(data: pd.DataFrame, n_excluded: int = PAPER_EXCLUDED) -> pd.DataFrame:
    """The runs left after the outlier cut (`outlier_mask`), re-indexed from 0: 203 of the
    245 at the paper's cut."""
    return data[outlier_mask(data["loss"].to_numpy(), n_excluded)].reset_index(drop=True)


# --- the model and its derivatives (batched over B parameter vectors) ------------------------
def terms(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Width, depth and data terms, shape [B, n, 3]."""
    theta = np.atleast_2d(theta)
    log_c, alpha = theta[:, :3], theta[:, 3:6]
    return np.exp(log_c[:, None, :] - alpha[:, None, :] * X[None, :, :])


def predict(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """L̂, shape [B, n]."""
    theta = np.atleast_2d(theta)
    return terms(theta, X).sum(-1) + theta[:, 6:7]


def jacobian(theta: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L̂ [B, n] and ∂L̂/∂θ [B, n, 7] (linear loss space)."""
    t = terms(theta, X)
    J = np.concatenate([t, -t * X[None], np.ones(t.shape[:2] + (1,), dtype=t.dtype)], axis=-1)
    return t.sum(-1) + np.atleast_2d(theta)[:, 6:7], J


def objective(theta: np.ndarray, d: Design, w: np.ndarray) -> np.ndarray:
    """100 × weighted mean of (ln L − ln L̂)², shape [B]; NaN-safe (bad regions give inf)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        rho = d.y[None] - np.log(predict(theta, d.X))
        value = 100 * (w * rho**2).sum(-1) / w.sum(-1)
    return np.where(np.isfinite(value), value, np.inf)


def _log_residual_and_jacobian(theta, d: Design):
    Lhat, J = jacobian(theta, d.X)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = d.y[None] - np.log(Lhat)
    return rho, J / Lhat[..., None]  # ∂ ln L̂ / ∂θ
