"""Chapter 08's statistics (also read by chapters 05 and 11's stand-in precision check and by
`layerlab report`, chapter 12's page): the delta correlation of a stack over depth, the
adjacent-layer correlations that decide it, and its closed-form predictions for independent
layers and for a stationary sequence.
"""

from __future__ import annotations

import numpy as np


# -- delta correlation and its null -----------------------------------------------------------
def _corr_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    num = np.einsum("ij,ij->i", a, b, dtype=np.float64)
    den = np.sqrt(np.einsum("ij,ij->i", a, a, dtype=np.float64)
                  * np.einsum("ij,ij->i", b, b, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def delta_correlation(stack: np.ndarray) -> np.ndarray:
    """Pearson correlation of consecutive flattened deltas, corr(Δ_l, Δ_{l+1}) with
    Δ_l = W_{l+1} − W_l: one value per adjacent pair of deltas (L − 2 values; NaN where a delta
    is constant). −1/2 exactly for independent layers of equal variance."""
    s = np.asarray(stack, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] < 3:
        raise ValueError(f"need a [layers ≥ 3, elements] stack, got shape {s.shape}")
    d = np.diff(s, axis=0)
    return _corr_rows(d[:-1], d[1:])


def adjacent_correlation(stack: np.ndarray, lag: int = 1) -> np.ndarray:
    """corr(W_l, W_{l+lag}) for every l: the quantity that actually decides the delta correlation."""
    s = np.asarray(stack, dtype=np.float64)
    return _corr_rows(s[:-lag], s[lag:])


def independent_prediction(stack: np.ndarray) -> np.ndarray:
    """The closed-form delta correlation if layers were independent with their measured
    variances σ_l²: −σ²_{l+1} / √((σ_l² + σ²_{l+1})(σ²_{l+1} + σ²_{l+2}))."""
    v = np.asarray(stack, dtype=np.float64).var(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # constant layers: NaN
        return -v[1:-1] / np.sqrt((v[:-2] + v[1:-1]) * (v[1:-1] + v[2:]))


def stationary_prediction(r1: float, r2: float) -> float:
    """Delta correlation of a stationary sequence with lag-1/lag-2 correlations r1, r2:
    (2r1 − 1 − r2) / (2(1 − r1)). AR(1) with ρ gives −(1 − ρ)/2."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.float64(2 * r1 - 1 - r2) / (2 * (1 - r1)))
