"""Chapter 07's Gram-space machinery (also read by chapters 05 and 11's stand-in precision check
and by `layerlab report`, chapter 12's page): one Gram matrix of the layers and the ones vector,
kernel ridge from layer t−1 to layer t under three protocols, the mean and persistence
baselines, the shared autoregression, and the summary-statistic descriptors (§5.2 P1–P3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


# -- the Gram-space machinery -----------------------------------------------------------------
@dataclass
class Gram:
    """Inner products of the layers and the all-ones vector: G[i, j] = ⟨W_i, W_j⟩, with index L
    standing for the ones vector (so G[L, L] = n, the number of elements)."""

    G: np.ndarray  # [L+1, L+1], float64
    n: int

    @property
    def layers(self) -> int:
        """L: G's last row and column belong to the ones vector, not to a layer."""
        return self.G.shape[0] - 1

    @classmethod
    def of(cls, stack: np.ndarray | torch.Tensor) -> "Gram":
        """The Gram of an [L, n] stack (one flattened layer per row), taken as float32 and
        summed in float64; beyond 5·10^7 elements it is summed in column blocks to bound
        memory."""
        s = torch.as_tensor(np.asarray(stack, dtype=np.float32))
        L, n = s.shape
        g = (s.double() @ s.double().T).numpy() if n * L < 5e7 else _blocked_gram(s)
        sums = s.double().sum(dim=1).numpy()
        G = np.empty((L + 1, L + 1))
        G[:L, :L], G[:L, L], G[L, :L], G[L, L] = g, sums, sums, n
        return cls(G, n)

    def e(self, i: int) -> np.ndarray:
        """Coefficients over [W; 1] of layer i alone (i = L: the ones vector)."""
        v = np.zeros(self.layers + 1)
        v[i] = 1.0
        return v

    def dot(self, a: np.ndarray, b: np.ndarray) -> float:
        """aᵀ G b: the inner product of two combinations of the layers and the ones vector,
        given as coefficient vectors, without forming either tensor."""
        return float(a @ self.G @ b)

    def scores(self, c: np.ndarray, t: int) -> dict[str, float]:
        """R² (SST about the target's element mean), cosine and SSE of prediction c for layer t."""
        y = self.e(t)
        r = y - c
        sse = self.dot(r, r)
        ones = self.e(self.layers)
        sst = self.dot(y, y) - self.dot(y, ones) ** 2 / self.n
        with np.errstate(invalid="ignore", divide="ignore"):  # a constant layer: NaN, no warning
            cos = self.dot(c, y) / np.sqrt(max(self.dot(c, c), 1e-300) * max(self.dot(y, y), 1e-300))
        r2 = 1 - sse / sst if sst > 0 else float("nan")  # a constant layer has nothing to explain
        return {"r2": r2, "cosine": cos, "sse": sse}


def _blocked_gram(s: torch.Tensor, block: int = 1 << 20) -> np.ndarray:
    g = torch.zeros(s.shape[0], s.shape[0], dtype=torch.float64)
    for start in range(0, s.shape[1], block):
        part = s[:, start : start + block].double()
        g += part @ part.T
    return g.numpy()


def ridge_coefficients(gram: Gram, train: list[int], target: int, alpha: float) -> np.ndarray:
    """Kernel ridge (with intercept) from layer t−1 to layer t, trained on the pairs whose targets
    are `train`, predicting `target`: the prediction as coefficients over [W; 1]."""
    L1 = gram.layers + 1
    m = len(train)
    X = np.zeros((m, L1))
    Y = np.zeros((m, L1))
    for row, t in enumerate(train):
        X[row, t - 1] = 1.0
        Y[row, t] = 1.0
    xc = X - X.mean(axis=0)
    yc = Y - Y.mean(axis=0)
    K = xc @ gram.G @ xc.T
    x = np.zeros(L1)
    x[target - 1] = 1.0
    k = (x - X.mean(axis=0)) @ gram.G @ xc.T
    weights = np.linalg.solve(K + alpha * np.eye(m), k)
    return Y.mean(axis=0) + weights @ yc


def ridge_scores(gram: Gram, alpha: float, protocol: str, split: int | None = None
                 ) -> list[dict[str, Any]]:
    """Per target layer scores of P2's layer-as-sample ridge (§5.2 P1).

    in_sample: fit and score on every pair (targets 1 … L−1); forward: train on targets < split,
    test on targets ≥ split; loo: each target predicted by a fit on all the other pairs.
    """
    L = gram.layers
    split = split if split is not None else default_split(L)
    targets = list(range(1, L))
    rows = []
    for t in targets if protocol != "forward" else range(split, L):
        if protocol == "in_sample":
            train = targets
        elif protocol == "forward":
            train = list(range(1, split))
        elif protocol == "loo":
            train = [u for u in targets if u != t]
        else:
            raise ValueError(f"unknown protocol {protocol!r}: in_sample, forward or loo")
        rows.append({"target": t, **gram.scores(ridge_coefficients(gram, train, t, alpha), t)})
    return rows


def default_split(L: int) -> int:
    """The first test layer of the forward split: 20 of 30 (the spec's l ≥ 20)."""
    return max(2, round(L * 2 / 3))


def baseline_scores(gram: Gram, kind: str, split: int | None = None) -> list[dict[str, Any]]:
    """Nulls on the forward split: the mean of the training layers, or persistence (W_{t−1})."""
    L = gram.layers
    split = split if split is not None else default_split(L)
    rows = []
    for t in range(split, L):
        if kind == "mean":
            c = np.zeros(L + 1)
            c[:split] = 1.0 / split
        elif kind == "persistence":
            c = gram.e(t - 1)
        else:
            raise ValueError(f"unknown baseline {kind!r}")
        rows.append({"target": t, **gram.scores(c, t)})
    return rows


def autoregression(gram: Gram, split: int | None = None, ridge: float = 1e-6) -> dict[str, Any]:
    """§5.2 P2: W_l[i] ≈ a·W_{l−1}[i] + b·W_{l−2}[i] + c with coefficients shared by all elements,
    least squares over every element of the training layers (l < split), scored on l ≥ split."""
    L = gram.layers
    split = split if split is not None else default_split(L)
    ones = L
    A = np.zeros((3, 3))
    rhs = np.zeros(3)
    for t in range(2, split):
        f = [t - 1, t - 2, ones]
        A += gram.G[np.ix_(f, f)]
        rhs += gram.G[f, t]
    a, b, c = np.linalg.solve(A + ridge * np.trace(A) * np.eye(3), rhs)
    rows = []
    for t in range(split, L):
        coef = np.zeros(L + 1)
        coef[t - 1], coef[t - 2], coef[ones] = a, b, c
        rows.append({"target": t, **gram.scores(coef, t)})
    return {"a": float(a), "b": float(b), "c": float(c), "rows": rows}


def prediction_tensor(stack: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """The flattened tensor a coefficient vector over [W; 1] stands for."""
    return coef[:-1] @ np.asarray(stack, dtype=np.float64) + coef[-1]


# -- summary-statistic descriptors (§5.2 P3) ---------------------------------------------------
def descriptors(matrix: torch.Tensor, quantiles: int = 512) -> dict[str, np.ndarray]:
    """Permutation-invariant descriptors of one weight matrix: sorted values (quantiles), the
    singular-value spectrum, and the column and row norm profiles."""
    w = matrix.detach().double()
    q = torch.linspace(0, 1, quantiles, dtype=torch.float64)
    flat = w.reshape(-1)
    sorted_vals = torch.quantile(flat, q) if flat.numel() <= 16_000_000 else torch.quantile(
        flat[:: max(1, flat.numel() // 16_000_000)], q)
    out = {"sorted values": sorted_vals.numpy()}
    if w.ndim == 2:
        out["singular values"] = torch.linalg.svdvals(w).numpy()
        out["column norms"] = w.norm(dim=0).numpy()
        out["row norms"] = w.norm(dim=1).numpy()
    return out


def descriptor_scores(profiles: np.ndarray, alpha: float, split: int | None = None) -> dict[str, float]:
    """Forward-split R² of predicting layer l's descriptor from layer l−1's (kernel ridge), and
    of persistence, averaged over the test layers."""
    gram = Gram.of(profiles)
    ridge = ridge_scores(gram, alpha, "forward", split)
    persist = baseline_scores(gram, "persistence", split)
    return {"ridge_r2": float(np.mean([r["r2"] for r in ridge])),
            "persistence_r2": float(np.mean([r["r2"] for r in persist]))}
