"""The toy networks of chapter 04 as stacks for `grid.Grid`: the blocks of several networks of
one depth held as [S, ...] tensors and run as one batched matrix product per layer, with the
arithmetic of `net.Block` and `net.RK2Block` (to float32 rounding: bmm sums in another order
than nn.Linear)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from layerlab.depth.toy.net import Block, rms


def stack_blocks(blocks) -> dict[str, torch.Tensor]:
    """[depth, k, ...] tensors of a block list (k = 1 Euler MLP, 2 for RK2's two MLPs), in
    nn.Linear's [out, in] orientation."""
    mlps = [[b] if isinstance(b, Block) else [b.first, b.second] for b in blocks]
    return {"w1": torch.stack([torch.stack([m.w1.weight for m in ms]) for ms in mlps]),
            "b1": torch.stack([torch.stack([m.w1.bias for m in ms]) for ms in mlps]),
            "w2": torch.stack([torch.stack([m.w2.weight for m in ms]) for ms in mlps])}


def stack_networks(stacks: list[dict[str, torch.Tensor]], device) -> list[list[torch.Tensor]]:
    """Per layer and MLP, [W₁ᵀ, b₁, W₂ᵀ] stacked over networks as contiguous leaves: [S, n, 4n],
    [S, 1, 4n], [S, 4n, n]. One leaf per layer (not one [S, depth, ...] tensor): slicing a
    stacked leaf would make autograd write a full-size zero gradient for every layer."""
    depth, k = stacks[0]["w1"].shape[:2]
    out = []
    for layer in range(depth):
        for j in range(k):
            w1 = torch.stack([s["w1"][layer, j].T for s in stacks])
            b1 = torch.stack([s["b1"][layer, j] for s in stacks]).unsqueeze(1)
            w2 = torch.stack([s["w2"][layer, j].T for s in stacks])
            out.append([t.detach().contiguous().to(device) for t in (w1, b1, w2)])
    return out


def unstack(leaves: list[list[torch.Tensor]], j: int, k: int) -> dict[str, torch.Tensor]:
    """Network `j` of `stack_networks` output back in `stack_blocks` form ([depth, k, ...], CPU)."""
    pick = [[t[j].detach().cpu() for t in mlp] for mlp in leaves]
    grouped = [pick[i:i + k] for i in range(0, len(pick), k)]
    return {"w1": torch.stack([torch.stack([m[0].T for m in g]) for g in grouped]),
            "b1": torch.stack([torch.stack([m[1][0] for m in g]) for g in grouped]),
            "w2": torch.stack([torch.stack([m[2].T for m in g]) for g in grouped])}


def update(h: torch.Tensor, w1t: torch.Tensor, b1: torch.Tensor, w2t: torch.Tensor) -> torch.Tensor:
    """f(h) = W₂ relu(W₁ rms(h) + b₁)² for a stack: h [S, B, n]."""
    r = F.relu(torch.baddbmm(b1, rms(h), w1t))
    return torch.bmm(r * r, w2t)


def forward(h: torch.Tensor, mlps: list[list[torch.Tensor]], block: str) -> torch.Tensor:
    """Run a stacked network (`stack_networks` output) from the normalised input h [S, B, n]."""
    if block == "euler":
        for p in mlps:
            h = h + update(h, *p)
        return h
    for first, second in zip(mlps[0::2], mlps[1::2]):  # RK2Block: h + f₂(h + ½ f₁(h))
        h = h + update(h + 0.5 * update(h, *first), *second)
    return h


def unique_index(values: list) -> tuple[list, list[int]]:
    """Unique values (first-seen order) and each value's position among them."""
    unique = list(dict.fromkeys(values))
    return unique, [unique.index(v) for v in values]
