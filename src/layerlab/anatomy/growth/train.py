"""Training one arm of chapter 10: its data (a natural-text or a memorised regime), the loop
that runs a program on the shared `training.Run` and the checkpoint folder.

The curve counts every budget measure per optimizer step: layer-steps (trainable layers),
tokens, FLOPs (`model.step_flops`), wall-clock (training time only) and, on the CPU,
CPU-seconds: the process time of the optimizer steps alone (`time.process_time`), which other
work on a shared machine moves far less than wall-clock. Training checkpoints
atomically; an interrupted arm resumes and ends with the same weights as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import torch

from layerlab import corpus, models, paths, results, training
from layerlab.anatomy.growth.arms import Program, Segment
from layerlab.anatomy.growth.model import (
    build,
    clone_layers,
    scale_layers,
    set_trainable,
    stack_model,
    step_flops,
)
from layerlab.settings import GrowthConfig


def data(cfg: GrowthConfig, tok, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """([steps, batch, seq] training batches, [n, seq] validation windows), seeded."""
    if cfg.regime == "natural":
        pool = corpus.token_blocks(tok, "wikipedia", n_tokens=10**9, seq_len=cfg.seq_len,
                                   split="train", allow_fewer=True)
        val = corpus.token_blocks(tok, "wikipedia", n_tokens=cfg.eval_blocks * cfg.seq_len,
                                  seq_len=cfg.seq_len, split="validation")
    elif cfg.regime == "memorise":
        # a small set, trained on and evaluated on: the paper's loss of ~0.13 needs this regime
        ids = corpus.token_blocks(tok, "kjv", n_tokens=cfg.memorise_tokens, seq_len=cfg.seq_len,
                                  split="train").reshape(-1)
        starts = torch.arange(0, len(ids) - cfg.seq_len, max(1, cfg.seq_len // 4))
        pool = torch.stack([ids[s : s + cfg.seq_len] for s in starts])
        val = pool[:: max(1, len(pool) // cfg.eval_blocks)][: cfg.eval_blocks]
    else:
        raise ValueError(f"unknown regime {cfg.regime!r}: 'natural' or 'memorise'")
    return training.shuffled_batches(pool, steps, cfg.batch_size, cfg.seed), val


def folder(cfg: GrowthConfig) -> Path:
    """The folder of one config's checkpoints (one file per arm), keyed by the config's hash
    so that runs of different settings never share a checkpoint."""
    return paths.cache_dir() / "growth" / results.config_hash(cfg.key())


def _segment_at(prog: Program, step: int) -> tuple[int, Segment]:
    start = 0
    for seg in prog.segments:
        if step < start + seg.steps:
            return start, seg
        start += seg.steps
    return start, prog.segments[-1]


def train_arm(prog: Program, cfg: GrowthConfig, tok, *, progress: bool = True,
              stop_after: int | None = None, device: str | None = None,
              checkpoints: Path | None = None) -> dict[str, Any]:
    """Run one program (resuming from its checkpoint); the curve holds every budget measure.
    Trains on the GPU when there is one (`device` overrides); the checkpoint is device-free.
    `checkpoints`: the folder of the checkpoint (default `folder(cfg)`; a rerun that must not
    resume from the first run's checkpoint names another)."""
    device = device or models.default_device()
    vocab = len(tok)
    batches, val = data(cfg, tok, prog.steps)
    first = prog.segments[0].model_layers
    where = checkpoints or folder(cfg)
    run = training.Run(where / f"{results.slug(prog.arm)}.ckpt", prog.steps, desc=prog.arm,
                       progress=progress, stop_after=stop_after,
                       counters={"layer_steps": 0, "tokens": 0, "flops": 0.0,
                                 "cpu_seconds": 0.0, "model_layers": first, "finished": False})
    saved = run.saved()
    count = run.state.counters
    # a checkpoint written before CPU-seconds were counted cannot say what its steps took
    count.setdefault("cpu_seconds", float("nan"))
    # process time measures the training on a CPU only; on a GPU it is the host's share: None
    on_cpu = torch.device(device).type == "cpu"
    # a run stopped after a stack resumes at the stacked depth
    model = build(cfg, vocab, count["model_layers"]).to(device)
    opt = training.adamw(model.parameters(), cfg.lr, cfg.weight_decay)
    if saved is not None:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
    if not run.state.curve:
        run.log({"step": 0, "layer_steps": 0, "tokens": 0, "flops": 0.0, "seconds": 0.0,
                 "cpu_seconds": 0.0 if on_cpu else None,
                 "val_loss": training.mean_loss(model, val)})
    for step in run.steps():
        started = time.process_time()
        seg_start, seg = _segment_at(prog, step)
        if step == seg_start and seg.op == "stack":
            big = build(cfg, vocab, seg.model_layers).to(device)
            stack_model(model, big, seg.model_layers // len(model.model.layers))
            model = big
            count["model_layers"] = seg.model_layers
            opt = training.adamw(model.parameters(), cfg.lr, cfg.weight_decay)
        elif step == seg_start and seg.op == "clone":
            clone_layers(model, prog.clone_from, cfg.clone_noise, seed=cfg.seed * 7919 + step)
        set_trainable(model, seg.trainable)
        model.train()
        loss = training.step(model, opt, batches[step].to(device),
                             lr=training.warmup_cosine(step, prog.steps, cfg.lr, cfg.warmup))
        # the step's operation, forward, backward and update: no evaluation, no checkpoint
        count["cpu_seconds"] += time.process_time() - started
        done = step + 1
        count["layer_steps"] += len(seg.trainable)
        count["tokens"] += cfg.batch_size * cfg.seq_len
        count["flops"] += step_flops(cfg, vocab, count["model_layers"], seg.trainable)
        last = done == prog.steps
        if last and prog.final_scale:
            scale_layers(model, prog.final_scale, cfg.anti_scale)
        if run.due(done, cfg.eval_every):
            run.lap()
            with run.untimed():  # the curve's seconds are training time only
                run.log({"step": done, "layer_steps": count["layer_steps"],
                         "tokens": count["tokens"], "flops": count["flops"],
                         "seconds": run.state.seconds,
                         "cpu_seconds": count["cpu_seconds"] if on_cpu else None,
                         "train_loss": loss.item(),
                         "val_loss": training.mean_loss(model, val), "phase": seg.name})
        if run.due(done, cfg.checkpoint_every):
            count["finished"] = last
            run.save(model, opt, done)
    state = run.state
    return {"arm": prog.arm, "steps": prog.steps, "layer_steps_budget": prog.layer_steps,
            "finished": state.counters["finished"],
            "params": sum(p.numel() for p in model.parameters()),
            "final_val_loss": state.curve[-1]["val_loss"], "curve": state.curve,
            "segments": [dataclasses.asdict(s) for s in prog.segments]}


def final_weights(prog: Program, cfg: GrowthConfig) -> dict[str, torch.Tensor]:
    """The weights an arm's checkpoint holds (for tests and inspection)."""
    return torch.load(folder(cfg) / f"{results.slug(prog.arm)}.ckpt", weights_only=True,
                      map_location="cpu")["model"]
