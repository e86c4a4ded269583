"""Perplexity of a loaded model on token blocks: the reference measurement every chapter uses."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from layerlab.models import LoadedModel


@torch.no_grad()
def block_nll(lm: LoadedModel, blocks: torch.Tensor, *, batch_size: int = 4,
              progress: bool = False) -> torch.Tensor:
    """Summed next-token negative log-likelihood (nats) of each block, shape [blocks].

    A BOS in position 0 is context only; every later token is predicted from all before it.
    """
    from layerlab.progress import tqdm

    if blocks.ndim != 2 or blocks.shape[1] < 2:
        raise ValueError(f"blocks must be [n, seq_len>=2], got {tuple(blocks.shape)}")
    sums = []
    starts = range(0, blocks.shape[0], batch_size)
    for start in tqdm(starts, desc=f"ppl {lm.name}", disable=not progress):
        ids = blocks[start : start + batch_size].to(lm.device)
        logits = lm.model(input_ids=ids, use_cache=False).logits.float()
        nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
        if not torch.isfinite(nll).all():
            raise FloatingPointError(f"{lm.name}: non-finite loss in batch starting at {start}")
        sums.append(nll.sum(dim=1).cpu())
    return torch.cat(sums)


def perplexity(lm: LoadedModel, blocks: torch.Tensor, *, batch_size: int = 4,
               progress: bool = False) -> dict[str, Any]:
    """Token-pooled perplexity exp(total NLL / predicted tokens), with its parts."""
    nll = block_nll(lm, blocks, batch_size=batch_size, progress=progress)
    n_pred = blocks.shape[0] * (blocks.shape[1] - 1)
    mean = float(nll.sum()) / n_pred
    return {"ppl": math.exp(mean), "nll_per_token": mean, "predicted_tokens": n_pred,
            "blocks": int(blocks.shape[0]), "seq_len": int(blocks.shape[1])}
