"""The control stacks of chapters 07 and 08 (and of `layerlab report`'s weight statistics, chapter
12's page): synthetic stacks with known answers, and stacks with no cross-layer structure beside
the real one (the same layers shuffled, matched i.i.d. Gaussians, an untrained model's init).
"""

from __future__ import annotations

import numpy as np
import torch

from layerlab.anatomy.weights.tensors import stack, value
from layerlab.models import LoadedModel


# -- synthetic stacks with known answers (controls) -------------------------------------------
def synthetic(kind: str, layers: int, n: int, *, rho: float = 0.9, std: float | np.ndarray = 1.0,
              seed: int = 0) -> np.ndarray:
    """iid (independent layers), ar1 (persistence rho), walk (random walk), smooth (a common
    matrix plus a slow drift: strong positive structure)."""
    rng = np.random.default_rng(seed)
    std = np.broadcast_to(np.asarray(std, dtype=np.float64), (layers,))
    if kind == "iid":
        return rng.standard_normal((layers, n)) * std[:, None]
    if kind == "ar1":
        out = np.empty((layers, n))
        out[0] = rng.standard_normal(n)
        for l in range(1, layers):
            out[l] = rho * out[l - 1] + np.sqrt(1 - rho**2) * rng.standard_normal(n)
        return out * std[:, None]
    if kind == "walk":
        return np.cumsum(rng.standard_normal((layers, n)), axis=0) * std[:, None]
    if kind == "smooth":
        base, drift = rng.standard_normal(n), rng.standard_normal(n)
        t = np.linspace(0, 1, layers)[:, None]
        return base + t * drift + 0.01 * rng.standard_normal((layers, n))
    raise ValueError(f"unknown synthetic stack {kind!r}; use iid, ar1, walk or smooth")


# -- random-init control ---------------------------------------------------------------------
def random_init_stack(shape: tuple[int, ...], layers: int, *, is_norm: bool, std: float,
                      seed: int) -> np.ndarray:
    """What an untrained model of the same config holds: N(0, std²) matrices (HF's Llama init
    with initializer_range) and all-ones norm weights."""
    n = int(np.prod(shape))
    if is_norm:
        return np.ones((layers, n), dtype=np.float32)
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(layers, n, generator=gen) * std).numpy()


def shuffled(stack: np.ndarray, seed: int = 0) -> np.ndarray:
    """The same layers in a seeded random order: a null that keeps every layer's values and
    removes only their order in depth."""
    return stack[np.random.default_rng(seed).permutation(stack.shape[0])]


def matched_gaussian(stack: np.ndarray, seed: int = 0) -> np.ndarray:
    """i.i.d. Gaussian layers with each real layer's mean and std."""
    rng = np.random.default_rng(seed)
    s = np.asarray(stack, dtype=np.float64)
    return (rng.standard_normal(s.shape) * s.std(axis=1, keepdims=True)
            + s.mean(axis=1, keepdims=True)).astype(np.float32)


def controls(lm: LoadedModel, name: str, init_std: float, seed: int = 0) -> dict[str, np.ndarray]:
    """The real stack of tensor `name` beside three stacks with no cross-layer structure: the same
    layers in shuffled order, i.i.d. Gaussian layers with each real layer's mean and std, and what
    an untrained model of the same config holds."""
    real = stack(lm, name)
    shape = tuple(value(lm.blocks[0], name).shape)
    return {
        "real": real,
        "shuffled order": shuffled(real, seed),
        "i.i.d. Gaussian, matched std": matched_gaussian(real, seed),
        "untrained (random init)": random_init_stack(shape, real.shape[0], is_norm=len(shape) == 1,
                                                     std=init_std, seed=seed),
    }
