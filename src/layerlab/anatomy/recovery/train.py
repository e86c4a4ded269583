"""Chapter 09's numerics: damage one layer with Gaussian noise (σ × each matrix's std), fine-tune
it on held-out Wikipedia text (`training_windows`, disjoint from E0 and E1) and evaluate every
few steps (`evaluator`: E1's held-out text in order, or E0). `recover` returns the recovery curve
and restores the model exactly; `summarise` reads the steps to recover per τ and the area under
the curve from it; `calibrate_sigma` finds the σ of the equal-damage control.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from layerlab import corpus, training
from layerlab.anatomy import edits
from layerlab.anatomy.lab import Lab
from layerlab.settings import RecoveryConfig

__all__ = ["training_windows", "evaluator", "recover", "summarise", "calibrate_sigma"]


def training_windows(tokenizer: Any, cfg: RecoveryConfig, seed: int | None = None) -> torch.Tensor:
    """[steps, batch, seq_len] windows of Wikipedia's train split, shuffled by the seed."""
    blocks = corpus.token_blocks(tokenizer, "wikipedia", n_tokens=10**9, seq_len=cfg.seq_len,
                                 split="train", allow_fewer=True)
    return training.shuffled_batches(blocks, cfg.steps, cfg.batch_size,
                                     cfg.seed if seed is None else seed)


def evaluator(lab: Lab, cfg: RecoveryConfig):
    """The evaluation set of the recovery runs: E1's held-out text in order up to `eval_tokens`
    tokens (`Lab.evalset`'s passage: a curve, not an interval, is read from it), or E0."""
    return lab.evaluator(cfg.eval_set, cfg.eval_tokens, passage=True)


def _trainable(lab: Lab, layer: int, cfg: RecoveryConfig) -> list[torch.nn.Parameter]:
    if cfg.trainable == "layer":
        return list(lab.lm.blocks[layer].parameters())
    if cfg.trainable == "model":
        return list(lab.lm.model.parameters())
    raise ValueError(f"trainable must be 'layer' or 'model', got {cfg.trainable!r}")


def recover(lab: Lab, layer: int, sigma: float, cfg: RecoveryConfig, *,
            windows: torch.Tensor | None = None, seed: int | None = None,
            damage: bool = True) -> dict[str, Any]:
    """Noise `layer`, fine-tune, and return the recovery curve; the model is restored after.

    `damage=False` is the no-damage control: the same fine-tuning of the same layer on the same
    batches with no noise, run to the step limit (it has nothing to recover, so no early stop):
    what fine-tuning alone does to the perplexity, against which "recovered" is judged."""
    lm = lab.lm
    seed = cfg.seed if seed is None else seed
    ev = evaluator(lab, cfg)
    base = ev.base().ppl
    windows = training_windows(lm.tokenizer, cfg, seed) if windows is None else windows
    params = _trainable(lab, layer, cfg)
    start = layer if cfg.trainable == "layer" else 0
    all_params = list(lm.model.parameters())
    flags = [p.requires_grad for p in all_params]
    snapshot = [p.detach().clone() for p in params]
    threshold = min(cfg.taus)
    curve = []
    try:
        for p in all_params:
            p.requires_grad_(False)
        for p in params:
            p.requires_grad_(True)
        noise = edits.edit("noise", layer, sigma=sigma, seed=seed) if damage else None
        with edits.applied(lm, noise):
            curve.append({"step": 0, "ppl": ev.current(start).ppl})
            # fine-tuning a pretrained layer: AdamW's default betas, no decay, no schedule, no
            # clipping (the paper's recovery loop)
            opt = training.adamw(params, cfg.lr, 0.0, betas=(0.9, 0.999))
            step = 0
            while step < cfg.steps and (not damage or curve[-1]["ppl"] > (1 + threshold) * base):
                for _ in range(cfg.eval_every):
                    loss = training.step(lm.model, opt, windows[step].to(lm.device), clip=None,
                                         upcast=True)
                    step += 1
                curve.append({"step": step, "ppl": ev.current(start).ppl,
                              "train_loss": float(loss.detach())})
    finally:
        with torch.no_grad():
            for p, saved in zip(params, snapshot):
                p.copy_(saved)
        for p, flag in zip(all_params, flags):
            p.requires_grad_(flag)
    return summarise(curve, base, cfg) | {"layer": layer, "sigma": sigma, "seed": seed}


def summarise(curve: list[dict[str, Any]], base: float, cfg: RecoveryConfig) -> dict[str, Any]:
    """Steps to recover per τ (None = censored: not within the step limit) and the area under
    log(PPL / base) over the evaluation grid 0 … steps (the last value carried forward after an
    early stop at recovery)."""
    out: dict[str, Any] = {"base_ppl": base, "damaged_ppl": curve[0]["ppl"], "curve": curve}
    for tau in cfg.taus:
        hit = [c["step"] for c in curve if c["ppl"] <= (1 + tau) * base]
        out[f"steps_tau{tau:g}"] = hit[0] if hit else None
    grid = range(0, cfg.steps + 1, cfg.eval_every)
    by_step = {c["step"]: c["ppl"] for c in curve}
    last, area = curve[0]["ppl"], []
    for s in grid:
        last = by_step.get(s, last)
        area.append(max(0.0, math.log(last / base)))
    out["auc"] = float(np.mean(area))
    return out


def calibrate_sigma(lab: Lab, layer: int, cfg: RecoveryConfig, *, lo: float = 1e-3,
                    hi: float = 8.0, iters: int = 12, seed: int | None = None) -> float:
    """σ at which the noised layer gives `equal_damage` × base PPL (bisection on log σ)."""
    ev = evaluator(lab, cfg)
    target = cfg.equal_damage * ev.base().ppl
    seed = cfg.seed if seed is None else seed

    def damaged(sigma: float) -> float:
        return ev.evaluate(edits.edit("noise", layer, sigma=sigma, seed=seed)).ppl

    if damaged(hi) < target:
        return hi  # even the largest σ does not reach the target: reported as such
    a, b = math.log(lo), math.log(hi)
    for _ in range(iters):
        mid = (a + b) / 2
        if damaged(math.exp(mid)) < target:
            a = mid
        else:
            b = mid
    return float(math.exp(b))
