"""Reading a trained stack's weights, for chapters 07 and 08, the stand-in precision check of
chapters 05 and 11 (`layerlab.report.precision`) and the weight statistics of `layerlab report`
(chapter 12's page): the tensor types of a block (Llama names and the same roles in GPT-2 /
GPTBigCode / GPT-NeoX / Phi-3 / OPT stacks), the groups of blocks that hold each, a type stacked
over depth, one parameter read through the offload store, the fused projections cut by the
config's head counts, and the edit that writes tensors back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from layerlab import offload
from layerlab.anatomy import edits
from layerlab.models import LoadedModel

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
