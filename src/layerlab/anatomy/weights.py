"""Chapters 07-08: the weights of a trained stack as a sequence over depth (research/paper2.md
§5-§6): delta correlations with their closed-form null, adjacent-layer correlations, and ridge
predictability under three protocols, with nulls and positive controls.

Everything element-wise reduces to inner products between layers. For one tensor type the
layers W_0 … W_{L−1} (flattened) and the all-ones vector span a space in which every prediction
we make (ridge, mean, persistence, autoregression) is a linear combination, so one Gram matrix
G = [W; 1][W; 1]ᵀ of size (L+1)² answers every R², cosine and correlation exactly, whatever the
number of elements. The stack is read once per type; kernel-form ridge then takes milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from layerlab import offload
from layerlab.anatomy import edits
from layerlab.models import LoadedModel

__all__ = ["FUSED_LAYOUTS", "LLAMA_TYPES", "MATRIX_TYPES", "OTHER_TYPES", "adjacent_correlation",
           "autoregression", "baseline_scores", "controls", "default_split", "delta_correlation",
           "descriptor_scores", "descriptors", "fused_layout", "fused_part", "FusedLayout", "Gram",
           "independent_prediction", "matched_gaussian", "prediction_tensor", "random_init_stack",
           "replace_edit", "ridge_coefficients", "ridge_scores", "shuffled", "span", "stack",
           "stationary_prediction", "synthetic", "tensor_groups", "tensor_types", "TensorGroup",
           "value"]

# short labels of the nine per-layer tensors of a Llama-style block (P2's table, §2.1)
LLAMA_TYPES = {
    "q": "self_attn.q_proj.weight", "k": "self_attn.k_proj.weight",
    "v": "self_attn.v_proj.weight", "o": "self_attn.o_proj.weight",
    "gate": "mlp.gate_proj.weight", "up": "mlp.up_proj.weight", "down": "mlp.down_proj.weight",
    "attn_norm": "input_layernorm.weight", "mlp_norm": "post_attention_layernorm.weight",
}
MATRIX_TYPES = ("q", "k", "v", "o", "gate", "up", "down")


# The same nine roles in other block stacks. "name[part]" is one part of a fused projection
# (GPT-2's and GPTBigCode's c_attn, GPT-NeoX's query_key_value, Phi-3's qkv_proj and
# gate_up_proj), cut out in the [out, in] orientation by the config's head counts
# (FUSED_LAYOUTS, by model type); GPTBigCode's blocks use GPT-2's names; GPT-2's Conv1D weights are stored [in, out], and every statistic
# here is element-wise (correlations, Gram matrices, singular values), hence the same either way.
OTHER_TYPES: dict[str, dict[str, str]] = {
    "gpt2": {
        "q": "attn.c_attn.weight[q]", "k": "attn.c_attn.weight[k]", "v": "attn.c_attn.weight[v]",
        "o": "attn.c_proj.weight", "up": "mlp.c_fc.weight", "down": "mlp.c_proj.weight",
        "attn_norm": "ln_1.weight", "mlp_norm": "ln_2.weight"},
    "gpt_neox": {
        "q": "attention.query_key_value.weight[q]", "k": "attention.query_key_value.weight[k]",
        "v": "attention.query_key_value.weight[v]", "o": "attention.dense.weight",
        "up": "mlp.dense_h_to_4h.weight", "down": "mlp.dense_4h_to_h.weight",
        "attn_norm": "input_layernorm.weight", "mlp_norm": "post_attention_layernorm.weight"},
    "phi3": {
        "q": "self_attn.qkv_proj.weight[q]", "k": "self_attn.qkv_proj.weight[k]",
        "v": "self_attn.qkv_proj.weight[v]", "o": "self_attn.o_proj.weight",
        "gate": "mlp.gate_up_proj.weight[gate]", "up": "mlp.gate_up_proj.weight[up]",
        "down": "mlp.down_proj.weight",
        "attn_norm": "input_layernorm.weight", "mlp_norm": "post_attention_layernorm.weight"},
    "opt": {
        "q": "self_attn.q_proj.weight", "k": "self_attn.k_proj.weight",
        "v": "self_attn.v_proj.weight", "o": "self_attn.out_proj.weight",
        "up": "fc1.weight", "down": "fc2.weight",
        "attn_norm": "self_attn_layer_norm.weight", "mlp_norm": "final_layer_norm.weight"},
}


def _base(spec: str) -> tuple[str, str | None]:
    name, _, part = spec.partition("[")
    return name, (part.rstrip("]") or None)


@dataclass(frozen=True)
class TensorGroup:
    """One tensor type stacked over the blocks that hold it: `tensor` (a parameter name inside a
    block, or a fused part) of the same shape in each of `blocks` (depth order). `shape` is the
    parameter's (the whole fused tensor's for a part). A homogeneous stack has one group per type,
    over every block; a stack whose blocks differ (a dense first block, then mixture-of-experts
    blocks) has a group for each tensor over the blocks that have it."""

    label: str
    tensor: str
    blocks: tuple[int, ...]
    shape: tuple[int, ...]


def span(blocks: tuple[int, ...] | list[int]) -> str:
    """Block indices in short: `L3`, `L1–4` (a run) or `L0, L2, L5`."""
    b = list(blocks)
    if len(b) > 1 and b == list(range(b[0], b[-1] + 1)):
        return f"L{b[0]}–{b[-1]}"
    return ", ".join(f"L{l}" for l in b)


def _shapes(lm: LoadedModel) -> list[dict[str, tuple[int, ...]]]:
    return [{n: tuple(p.shape) for n, p in b.named_parameters()} for b in lm.blocks]


def _layouts_known(lm: LoadedModel, table: dict[str, str]) -> bool:
    """Every fused part of `table` has a layout for this model's type (otherwise its parameters
    are taken whole, not cut by a guess)."""
    for spec in table.values():
        base, part = _base(spec)
        if part is not None:
            try:
                fused_layout(lm.blocks[0], base)
            except KeyError:
                return False
    return True


def tensor_groups(lm: LoadedModel) -> list[TensorGroup]:
    """The tensor types of the stack, each over the blocks that hold it with the same shape.

    Where one table of roles (Llama names, or the same roles in GPT-2 / GPTBigCode / GPT-NeoX /
    Phi-3 / OPT stacks, fused parts only where the model type's layout is known) fits every
    block, its types over the whole depth; otherwise every parameter, grouped
    by name and shape, in name order. A group over part of the depth is labelled with its blocks
    (`mlp.experts.down_proj (L1–4)`)."""
    shapes = _shapes(lm)
    every = tuple(range(len(shapes)))
    for table in (LLAMA_TYPES, *OTHER_TYPES.values()):
        bases = {_base(spec)[0] for spec in table.values()}
        if all(bases <= s.keys() and all(s[n] == shapes[0][n] for n in bases) for s in shapes) \
                and _layouts_known(lm, table):
            return [TensorGroup(label, spec, every, shapes[0][_base(spec)[0]])
                    for label, spec in table.items()]
    found: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for l, s in enumerate(shapes):
        for name, shape in s.items():
            found.setdefault((name, shape), []).append(l)
    groups = []
    for (name, shape), blocks in sorted(found.items(), key=lambda kv: (kv[0][0], kv[1][0])):
        label = name if len(blocks) == len(every) else f"{name} ({span(blocks)})"
        groups.append(TensorGroup(label, name, tuple(blocks), shape))
    return groups


def tensor_types(lm: LoadedModel) -> dict[str, str]:
    """Label → parameter name (or fused part) inside a block, for the types every block holds
    (`tensor_groups` over the whole depth): Llama-style names, the same roles in GPT-2 / GPT-NeoX /
    Phi-3 / OPT stacks, or every parameter otherwise."""
    L = lm.n_layers
    return {g.label: g.tensor for g in tensor_groups(lm) if len(g.blocks) == L}


def stack(lm: LoadedModel, name: str, blocks: tuple[int, ...] | list[int] | None = None
          ) -> np.ndarray:
    """[blocks, n] float32: the flattened tensor `name` of each of `blocks` (default: every
    block), in depth order."""
    idx = list(range(lm.n_layers)) if blocks is None else list(blocks)
    base = _base(name)[0]
    missing = [l for l in idx if base not in dict(lm.blocks[l].named_parameters())]
    if missing:
        raise ValueError(
            f"{name} is not a parameter of block{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(str, missing))} of {lm.name}: its blocks differ, so stack it over "
            "the blocks that hold it (weights.tensor_groups)")
    return np.stack([value(lm.blocks[l], name).float().cpu().reshape(-1).numpy() for l in idx])


def value(block: torch.nn.Module, name: str) -> torch.Tensor:
    """Parameter `name` of `block`, detached; read from the offload store when the block is
    offloaded (`device_map` with CPU or disk offload), where the parameter itself is `meta`.
    `name[part]` cuts one projection out of a fused one, as [out, in]."""
    base, part = _base(name)
    w = offload.read(block, base)
    return w if part is None else fused_part(block, base, part, w)


@dataclass(frozen=True)
class FusedLayout:
    """How the projections sit in one fused weight: `parts` in order, each `rows` output rows
    (per head where `heads` is set: [heads, Σ rows, in], head after head; otherwise one after the
    other), the whole stored [out, in], or [in, out] where `transposed` (GPT-2's Conv1D)."""

    parts: tuple[str, ...]
    rows: tuple[int, ...]
    heads: int | None = None
    transposed: bool = False

    def split(self, w: torch.Tensor) -> dict[str, torch.Tensor]:
        """Each part, [out, in]; they join back to `w` exactly (`join`)."""
        m = w.T if self.transposed else w
        out, fan_in = m.shape
        want = sum(self.rows) * (self.heads or 1)
        if out != want:
            raise ValueError(f"{want} output rows from the config, the tensor has {out}")
        if self.heads is None:
            return dict(zip(self.parts, m.split(list(self.rows), dim=0)))
        per_head = m.reshape(self.heads, sum(self.rows), fan_in).split(list(self.rows), dim=1)
        return {p: t.reshape(-1, fan_in) for p, t in zip(self.parts, per_head)}

    def join(self, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        """The fused weight from its parts (the inverse of `split`), in the stored orientation."""
        ps = [parts[p] for p in self.parts]
        if self.heads is None:
            m = torch.cat(ps, dim=0)
        else:
            fan_in = ps[0].shape[-1]
            m = torch.cat([t.reshape(self.heads, -1, fan_in) for t in ps], dim=1).reshape(-1, fan_in)
        return m.T if self.transposed else m


def _heads(cfg: Any) -> tuple[int, int, int]:
    """(query heads, key-value heads, head dim) from a config: num_key_value_heads where given
    (grouped-query), one key-value head under GPTBigCode's multi_query, else as many as queries."""
    heads = int(cfg.num_attention_heads)
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    if getattr(cfg, "multi_query", None) is not None:
        kv = 1 if cfg.multi_query else heads
    else:
        kv = getattr(cfg, "num_key_value_heads", None) or heads
    return heads, int(kv), int(hd)


def _qkv_rows(cfg: Any) -> tuple[int, int, int]:
    heads, kv, hd = _heads(cfg)
    return heads * hd, kv * hd, kv * hd


# model type → fused parameter (leaf module) → its layout from the config, as transformers'
# forward passes read it: GPT-2 splits c_attn's output columns in three; GPT-NeoX views its
# output as [heads, 3 · head_size]; Phi-3 slices q | k | v with the key-value heads' sizes and
# chunks gate | up; GPTBigCode slices q | k | v with one key-value head under multi_query, and
# otherwise views [heads, 3 · head_dim] like GPT-NeoX
FUSED_LAYOUTS: dict[str, dict[str, Any]] = {
    "gpt2": {"c_attn": lambda c: FusedLayout(tuple("qkv"), _qkv_rows(c), transposed=True)},
    "gpt_neox": {"query_key_value": lambda c: FusedLayout(
        tuple("qkv"), (_heads(c)[2],) * 3, heads=_heads(c)[0])},
    "phi3": {"qkv_proj": lambda c: FusedLayout(tuple("qkv"), _qkv_rows(c)),
             "gate_up_proj": lambda c: FusedLayout(("gate", "up"), (c.intermediate_size,) * 2)},
    "gpt_bigcode": {"c_attn": lambda c: (
        FusedLayout(tuple("qkv"), _qkv_rows(c)) if c.multi_query
        else FusedLayout(tuple("qkv"), (_heads(c)[2],) * 3, heads=_heads(c)[0]))},
}


def _config(block: torch.nn.Module, module_path: str) -> Any:
    """The model config a fused module reads: on the module, its owner, the block or any of the
    block's submodules (transformers' attention and MLP modules keep it)."""
    path = module_path
    while True:
        cfg = getattr(block.get_submodule(path), "config", None)
        if cfg is not None:
            return cfg
        if not path:
            break
        path = path.rpartition(".")[0]
    for module in block.modules():
        if getattr(module, "config", None) is not None:
            return module.config
    raise KeyError(f"no config in the block holding {module_path}: its fused layout is unknown")


def fused_layout(block: torch.nn.Module, name: str) -> FusedLayout:
    """The layout of fused parameter `name` of `block`, from its model type and head counts."""
    module_path = name.rpartition(".")[0]
    cfg = _config(block, module_path)
    leaf = module_path.rpartition(".")[2]
    make = FUSED_LAYOUTS.get(getattr(cfg, "model_type", None), {}).get(leaf)
    if make is None:
        raise KeyError(f"no known layout for the fused tensor {name} of a "
                       f"{getattr(cfg, 'model_type', '?')!r} model")
    return make(cfg)


def fused_part(block: torch.nn.Module, name: str, part: str, w: torch.Tensor) -> torch.Tensor:
    """One projection of a fused weight, [out, in], cut by the config's head counts
    (`FUSED_LAYOUTS`)."""
    layout = fused_layout(block, name)
    try:
        return layout.split(w)[part]
    except ValueError as err:
        raise ValueError(f"{name}: {err} (config and weights disagree)") from None


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


def replace_edit(lm: LoadedModel, values: dict[int, dict[str, np.ndarray]]) -> edits.Edit:
    """An edit that writes the given flattened tensors (reshaped to the parameters) into layers."""
    fused = [n for tensors in values.values() for n in tensors if "[" in n]
    if fused:  # a part of a fused projection would need its siblings written back with it
        raise ValueError(f"replace_edit writes whole parameters; {fused[0]} is part of a fused one")
    shaped = {}
    for l, tensors in values.items():
        params = dict(lm.blocks[l].named_parameters())
        shaped[l] = {n: torch.as_tensor(np.asarray(v, dtype=np.float32)).reshape(params[n].shape)
                     for n, v in tensors.items()}
    return edits.edit("replace", sorted(values), values=shaped)
