"""Small pieces every training loop here shares (the depth family, growth training, recovery
fine-tuning): seeded batches, the learning-rate schedule and the validation loss.

Used by chapters 02–03 (the depth family), 09 and 10.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def shuffled_batches(pool: torch.Tensor, steps: int, batch_size: int, seed: int) -> torch.Tensor:
    """[steps, batch_size, seq_len] windows drawn from `pool` [n, seq_len] in seeded random order,
    passing over the pool again (a fresh permutation each time) when it runs out."""
    need = steps * batch_size
    gen = torch.Generator().manual_seed(seed)
    order = torch.cat([torch.randperm(len(pool), generator=gen)
                       for _ in range(math.ceil(need / len(pool)))])[:need]
    return pool[order].view(steps, batch_size, pool.shape[1])


def warmup_cosine(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warm-up to `peak`, then cosine decay to 10 % of it by `total` (step counts from 0)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


@torch.no_grad()
def mean_loss(model: torch.nn.Module, blocks: torch.Tensor, batch_size: int = 16) -> float:
    """Mean next-token loss (nats per token) of a causal LM over token windows."""
    model.eval()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for i in range(0, len(blocks), batch_size):
        ids = blocks[i : i + batch_size].to(device)
        logits = model(input_ids=ids, use_cache=False).logits
        total += float(F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(),
                                       reduction="sum"))
        count += ids[:, 1:].numel()
    return total / count
