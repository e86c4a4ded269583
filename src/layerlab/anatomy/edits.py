"""Reversible, in-place edits of a model's layers (P2 §4, §7).

An `Edit` names what to do to which layers; `applied(lm, edit)` changes the weights in place,
and restores them bit for bit on exit (the original tensors are copied back; nothing is
reloaded). New values are always computed from the *original* weights, so an edit of several
layers at once does not depend on the order in which they are written (cloning layers 14 and 15
copies the original 13 and 14).

Kinds (tensor groups: `all` = every parameter of the block, `linear` = parameters of its
nn.Linear modules, `norms` = the rest, `attention` / `mlp` = linear parameters inside / outside
the attention module):

| kind | what it does | default group |
|---|---|---|
| `neighbour_average` | T_l ← (T_{l−1} + T_{l+1}) / 2; an end layer copies its one neighbour | all |
| `mean_of_others` | T_l ← mean of T_j over every other layer j | all |
| `skip` | the block returns its input unchanged (forward hook) | — |
| `zero` | T_l ← 0 (pre-norm blocks then add nothing: the same as `skip`) | linear |
| `clone` | T_l ← T_{l−1} | all |
| `mix` | T_l ← (T_l + T_{l−1}) / 2 | linear |
| `low_rank_mix` | the mix, then a rank-`rank` truncated SVD of each matrix | linear |
| `scale` | W_l ← α · W_l for each weight matrix (biases kept) | linear |
| `noise` | W_l ← W_l + σ · std(W_l) · N(0, 1) for each weight matrix, seeded | linear |
| `replace` | T_l ← given tensors (`values`: {layer: {name: tensor}}) | — |

All but `scale`, `noise`, `skip` and `replace` take `fraction` f: W + f · (W_new − W).

Used by chapters 05, 06, 07 and 09.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from torch import nn

from layerlab import offload
from layerlab.models import LoadedModel

__all__ = ["DEFAULT_GROUP", "GROUPS", "KINDS", "OPTIONS", "REQUIRED", "active", "applied", "edit",
           "Edit", "EditError", "relative_change", "tensor_names"]

GROUPS = ("all", "linear", "norms", "attention", "mlp")
DEFAULT_GROUP = {"neighbour_average": "all", "mean_of_others": "all", "zero": "linear",
                 "clone": "all", "mix": "linear", "low_rank_mix": "linear", "scale": "linear",
                 "noise": "linear"}
KINDS = (*DEFAULT_GROUP, "skip", "replace")
# `fraction` (a float, or {layer: float}) moves each tensor only part of the way to its new value,
# W + f · (W_new − W): the same edit at a chosen size (chapter 06's matched perturbations)
_PARTIAL = {"fraction"}
OPTIONS = {"low_rank_mix": {"rank", *_PARTIAL}, "scale": {"alpha"}, "noise": {"sigma", "seed"},
           "replace": {"values"},
           **{k: _PARTIAL for k in ("neighbour_average", "mean_of_others", "zero", "clone", "mix")}}
REQUIRED = {"low_rank_mix": {"rank"}, "scale": {"alpha"}, "noise": {"sigma"}, "replace": {"values"}}

_ACTIVE: "weakref.WeakKeyDictionary[nn.Module, Edit]" = weakref.WeakKeyDictionary()


class EditError(ValueError):
    """An edit that cannot be built or applied: an unknown kind, group or option, a layer out of
    range, a shape mismatch, or a second edit while one is active (edits do not nest)."""
    pass


@dataclass(frozen=True)
class Edit:
    """What to do to which layers; build one with `edit()`, which validates it. Frozen, with
    `options` as sorted (name, value) pairs, so the same options given in any order compare
    equal."""

    kind: str
    layers: tuple[int, ...]
    group: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def opts(self) -> dict[str, Any]:
        """The options as a dict (`fraction`, `rank`, `alpha`, `sigma`, `seed` or `values`)."""
        return dict(self.options)

    @property
    def label(self) -> str:
        """Short text for tables and errors, e.g. `scale(alpha=0.9) @ L3,4`: the group only when
        it is not the kind's default, and never `replace`'s tensors."""
        opts = ", ".join(f"{k}={v}" for k, v in self.options if k != "values")
        group = f"[{self.group}]" if self.group and self.group != DEFAULT_GROUP.get(self.kind) else ""
        layers = ",".join(map(str, self.layers))
        return f"{self.kind}{group}({opts}) @ L{layers}" if opts else f"{self.kind}{group} @ L{layers}"


def edit(kind: str, layers: int | tuple[int, ...] | list[int], *, group: str | None = None,
         **options: Any) -> Edit:
    """A validated `Edit`: `edit("scale", [3, 4], alpha=0.9)`, `edit("skip", 11)`."""
    if kind not in KINDS:
        raise EditError(f"unknown edit kind {kind!r}; choose one of {KINDS}")
    layers = (layers,) if isinstance(layers, int) else tuple(sorted(set(int(x) for x in layers)))
    if not layers:
        raise EditError("an edit needs at least one layer")
    if group is not None and group not in GROUPS:
        raise EditError(f"unknown tensor group {group!r}; choose one of {GROUPS}")
    allowed = OPTIONS.get(kind, set())
    if set(options) - allowed or REQUIRED.get(kind, set()) - set(options):
        raise EditError(f"{kind} takes options {sorted(allowed) or 'none'}, got {sorted(options)}")
    return Edit(kind, layers, group or DEFAULT_GROUP.get(kind), tuple(sorted(options.items())))


def active(lm: LoadedModel) -> Edit | None:
    """The edit currently applied to `lm`, if any."""
    return _ACTIVE.get(lm.model)


# -- tensors of a block --------------------------------------------------------------------------
def _linear_names(block: nn.Module) -> set[str]:
    from transformers.pytorch_utils import Conv1D  # GPT-2's linear layers, weights [in, out]

    names = set()
    for mod_name, module in block.named_modules():
        if isinstance(module, (nn.Linear, Conv1D)):
            names.update(f"{mod_name}.{p}" for p, _ in module.named_parameters(recurse=False))
    return names


def _is_attention(name: str) -> bool:
    return "attn" in name or "attention" in name


def tensor_names(block: nn.Module, group: str) -> list[str]:
    """Names (relative to the block) of the parameters in a tensor group."""
    linear = _linear_names(block)
    names = [n for n, _ in block.named_parameters()]
    pick: dict[str, Callable[[str], bool]] = {
        "all": lambda n: True,
        "linear": lambda n: n in linear,
        "norms": lambda n: n not in linear,
        "attention": lambda n: n in linear and _is_attention(n),
        "mlp": lambda n: n in linear and not _is_attention(n),
    }
    return [n for n in names if pick[group](n)]


def _is_matrix(name: str, tensor: torch.Tensor) -> bool:
    return tensor.ndim == 2 and name.endswith("weight")


# -- new values -------------------------------------------------------------------------------
def _low_rank(w: torch.Tensor, rank: int) -> torch.Tensor:
    u, s, vh = torch.linalg.svd(w.float(), full_matrices=False)
    r = min(rank, s.numel())
    return (u[:, :r] * s[:r]) @ vh[:r]


def _new_value(e: Edit, lm: LoadedModel, layer: int, name: str,
               original: Callable[[int, str], torch.Tensor]) -> torch.Tensor | None:
    """The value tensor `name` of `layer` takes under the edit (None: leave it)."""
    w = original(layer, name)
    opts = e.opts
    value = _full_value(e, lm, layer, name, original)
    fraction = opts.get("fraction")
    if fraction is None or value is None:
        return value
    f = float(fraction[layer] if isinstance(fraction, dict) else fraction)
    return w + f * (value - w)


def _full_value(e: Edit, lm: LoadedModel, layer: int, name: str,
                original: Callable[[int, str], torch.Tensor]) -> torch.Tensor | None:
    L = lm.n_layers
    w = original(layer, name)
    opts = e.opts
    if e.kind == "neighbour_average":
        sides = [j for j in (layer - 1, layer + 1) if 0 <= j < L]
        return sum(original(j, name) for j in sides) / len(sides)
    if e.kind == "mean_of_others":
        return sum(original(j, name) for j in range(L) if j != layer) / (L - 1)
    if e.kind == "zero":
        return torch.zeros_like(w)
    if e.kind == "clone":
        return original(layer - 1, name).clone()
    if e.kind in ("mix", "low_rank_mix"):
        mixed = (w + original(layer - 1, name)) / 2
        if e.kind == "low_rank_mix" and _is_matrix(name, w):
            mixed = _low_rank(mixed, int(opts["rank"]))
        return mixed
    if e.kind == "scale":
        return w * float(opts["alpha"]) if _is_matrix(name, w) else None
    if e.kind == "noise":
        if not _is_matrix(name, w):
            return None
        gen = torch.Generator().manual_seed(int(opts.get("seed", 0)) * 100_003 + layer)
        noise = torch.randn(w.shape, generator=gen, dtype=torch.float32).to(w.device)
        return w + float(opts["sigma"]) * w.float().std() * noise
    raise EditError(f"{e.kind} does not compute tensors")  # pragma: no cover


@torch.no_grad()
def relative_change(lm: LoadedModel, e: Edit) -> dict[int, float]:
    """‖W_new − W‖ / ‖W‖ per edited layer, over the weight matrices of the edit's tensor group
    (Frobenius norms of all matrices together); computed without touching the model."""
    if e.kind in ("skip", "replace"):
        raise EditError(f"{e.kind} has no tensor values to measure")
    _check(lm, e)
    params = [dict(block.named_parameters()) for block in lm.blocks]

    def original(layer: int, name: str) -> torch.Tensor:
        return offload.read(lm.blocks[layer], name)

    names = [n for n in tensor_names(lm.blocks[e.layers[0]], e.group or "all")
             if _is_matrix(n, params[e.layers[0]][n])]
    out = {}
    for l in e.layers:
        delta = base = 0.0
        for n in names:
            w = original(l, n).float()
            new = _new_value(e, lm, l, n, original)
            if new is not None:
                delta += float(((new.float() - w) ** 2).sum())
            base += float((w ** 2).sum())
        out[l] = (delta / base) ** 0.5
    return out


# -- applying and restoring -------------------------------------------------------------------
def _skip_hook(_module: nn.Module, args: tuple, kwargs: dict, output: Any) -> Any:
    hidden = args[0] if args else kwargs["hidden_states"]
    if isinstance(output, tuple):
        return (hidden, *output[1:])
    return hidden


def _check(lm: LoadedModel, e: Edit) -> None:
    L = lm.n_layers
    bad = [l for l in e.layers if not 0 <= l < L]
    if bad:
        raise EditError(f"layers {bad} out of range: {lm.name} has layers 0…{L - 1}")
    if e.kind in ("clone", "mix", "low_rank_mix") and 0 in e.layers:
        raise EditError(f"{e.kind} uses layer l−1, so it cannot edit layer 0")
    if e.kind in ("neighbour_average", "mean_of_others") and L < 2:
        raise EditError(f"{e.kind} needs at least two layers")


@contextlib.contextmanager
def applied(lm: LoadedModel, e: Edit | None) -> Iterator[LoadedModel]:
    """Apply `e` to `lm` in place for the duration of the block; restore exactly afterwards."""
    if e is None:
        yield lm
        return
    if lm.model in _ACTIVE:
        raise EditError(f"{_ACTIVE[lm.model].label} is already applied; edits do not nest")
    _check(lm, e)
    params = [dict(block.named_parameters()) for block in lm.blocks]
    saved: dict[tuple[int, str], torch.Tensor] = {}
    new: dict[tuple[int, str], torch.Tensor] = {}
    handles = []

    def original(layer: int, name: str) -> torch.Tensor:  # nothing is written before all are read
        return offload.read(lm.blocks[layer], name)  # resident, or from the offload store

    with torch.no_grad():
        if e.kind == "skip":
            handles = [lm.blocks[l].register_forward_hook(_skip_hook, with_kwargs=True)
                       for l in e.layers]
        elif e.kind == "replace":
            values = e.opts["values"]
            new = {(l, n): torch.as_tensor(v) for l in e.layers for n, v in values[l].items()}
        else:
            names = tensor_names(lm.blocks[e.layers[0]], e.group or "all")
            for l in e.layers:  # all values from the originals before anything is written
                for n in names:
                    value = _new_value(e, lm, l, n, original)
                    if value is not None:
                        new[(l, n)] = value
        for (l, n), value in new.items():  # empty for skip
            if n not in params[l]:
                raise EditError(f"layer {l} has no parameter {n!r}")
            p = params[l][n]
            if value.shape != p.shape:
                raise EditError(f"layer {l} {n}: new value {tuple(value.shape)} does not "
                                f"match {tuple(p.shape)}")
            saved[(l, n)] = original(l, n).clone()
    _ACTIVE[lm.model] = e
    tokens: dict[tuple[int, str], torch.Tensor | None] = {}
    try:
        # offloaded weights (device_map with CPU/disk offload) are written through the offload
        # store: an in-place copy into their meta tensors would silently change nothing
        for (l, n), value in new.items():
            tokens[(l, n)] = offload.write(lm.blocks[l], n, value)
        yield lm
    finally:
        for (l, n), token in tokens.items():
            offload.restore(lm.blocks[l], n, saved[(l, n)], token)
        for h in handles:
            h.remove()
        del _ACTIVE[lm.model]
