"""The one training loop every experiment here shares (the depth family, growth training,
recovery fine-tuning): seeded batches, the optimizer, one optimizer step, the learning-rate
schedule, the validation loss, and a resumable run (state, checkpoint, cadence, clock, progress).

Used by chapters 02–03 (the depth family), 09 and 10.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["BETAS", "Run", "TrainState", "adamw", "mean_loss", "next_token_loss",
           "shuffled_batches", "step", "warmup_cosine"]

# AdamW's betas for training from scratch (the depth family, growth): the usual LM setting
BETAS = (0.9, 0.95)


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


def adamw(params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float,
          betas: tuple[float, float] = BETAS) -> torch.optim.AdamW:
    """The optimizer of every run here (one place for its settings)."""
    return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay)


def next_token_loss(model: torch.nn.Module, ids: torch.Tensor, *, upcast: bool = False
                    ) -> torch.Tensor:
    """Mean next-token cross-entropy of a causal LM on `ids` [batch, seq_len]; `upcast` computes
    it from float32 logits (a model held in half precision)."""
    logits = model(input_ids=ids, use_cache=False).logits[:, :-1].flatten(0, 1)
    return F.cross_entropy(logits.float() if upcast else logits, ids[:, 1:].flatten())


def step(model: torch.nn.Module, opt: torch.optim.Optimizer, ids: torch.Tensor, *,
         lr: float | None = None, clip: float | None = 1.0, upcast: bool = False) -> torch.Tensor:
    """One optimizer step on one batch; returns the batch's loss (before the step).

    `lr` sets every parameter group's rate first (a schedule); `clip` is the gradient norm it
    clips to, over the parameters that have a gradient (None: no clipping)."""
    if lr is not None:
        for group in opt.param_groups:
            group["lr"] = lr
    with torch.enable_grad():  # callers may hold no_grad (evaluation code around fine-tuning)
        loss = next_token_loss(model, ids, upcast=upcast)
        opt.zero_grad(set_to_none=True)
        loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None], clip)
    opt.step()
    return loss


@dataclasses.dataclass
class TrainState:
    """Where a resumable run stands: steps done, its curve, seconds spent training, and any
    counters a run keeps besides (growth: layer-steps, tokens, FLOPs, model depth, finished).

    Saved flat (`as_dict`), as the checkpoints written before this class were."""

    step: int = 0
    curve: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    counters: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The state as the checkpoint stores it."""
        return {"step": self.step, "curve": self.curve, "seconds": self.seconds, **self.counters}

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> TrainState:
        """The state a checkpoint stored (`as_dict`'s inverse)."""
        rest = {k: v for k, v in saved.items() if k not in ("step", "curve", "seconds")}
        return cls(saved["step"], saved["curve"], saved["seconds"], rest)


class Run:
    """One resumable training run of `total` steps, checkpointed to `path`.

    The caller owns the model and optimizer; the run owns the state, the step loop (with its
    progress bar and an optional early stop, as an interruption would: tests), the clock and the
    checkpoint. A rerun resumes at the last checkpoint and reaches the same weights."""

    def __init__(self, path: Path, total: int, *, desc: str, progress: bool = True,
                 stop_after: int | None = None, counters: dict[str, Any] | None = None):
        self.path, self.total, self.desc = Path(path), total, desc
        self.progress, self.stop_after = progress, stop_after
        self.state = TrainState(counters=dict(counters or {}))
        self._bar: Any = None
        self._started = time.perf_counter()

    def saved(self) -> dict[str, Any] | None:
        """The checkpoint (model and optimizer state dicts), its state now this run's; None when
        there is none yet."""
        if not self.path.is_file():
            return None
        saved = torch.load(self.path, weights_only=True, map_location="cpu")
        self.state = TrainState.from_dict(saved["state"])
        return saved

    def resume(self, model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
        """Load the checkpoint, if there is one, into `model` and `opt`."""
        if (saved := self.saved()) is not None:
            model.load_state_dict(saved["model"])
            opt.load_state_dict(saved["opt"])

    def steps(self) -> Iterator[int]:
        """The steps still to run (from 0), with a progress bar; stops after `stop_after`."""
        from layerlab.progress import tqdm

        self._bar = tqdm(range(self.state.step, self.total), desc=self.desc,
                         disable=not self.progress, initial=self.state.step, total=self.total,
                         leave=False)
        self._started = time.perf_counter()
        for i in self._bar:
            yield i
            if self.stop_after is not None and i + 1 >= self.stop_after:
                break

    def due(self, done: int, every: int) -> bool:
        """Whether a cadence of `every` steps falls after `done` steps (the last step always)."""
        return done % every == 0 or done == self.total

    def lap(self) -> None:
        """Add the time since the last lap (or the loop's start) to the state's seconds."""
        now = time.perf_counter()
        self.state.seconds += now - self._started
        self._started = now

    @contextlib.contextmanager
    def untimed(self) -> Iterator[None]:
        """Time spent inside (evaluation) is not added to the state's seconds."""
        entered = time.perf_counter()
        try:
            yield
        finally:
            self._started += time.perf_counter() - entered

    def log(self, row: dict[str, Any]) -> None:
        """Append one point to the curve (and show its validation loss on the bar)."""
        self.state.curve.append(row)
        if self._bar is not None and "val_loss" in row:
            self._bar.set_postfix(val=f"{row['val_loss']:.3f}")

    def save(self, model: torch.nn.Module, opt: torch.optim.Optimizer, done: int) -> None:
        """Checkpoint after `done` steps: weights, optimizer and state, written atomically."""
        from layerlab import results

        self.state.step = done
        results.save_torch({"model": model.state_dict(), "opt": opt.state_dict(),
                            "state": self.state.as_dict()}, self.path)
