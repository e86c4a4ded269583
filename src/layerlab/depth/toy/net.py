"""The toy networks of chapter 04 and everything both trainers (`sweep.Sweep`, one sweep of
nn.Modules, and `grid.Grid`, many sweeps batched) build them from: the blocks, teacher and
student construction, the seed scheme, the fixed head, the batch draw, the loss reductions, the
learning-rate schedule and the run record.

Block: pre-norm MLP residual update h ← h + W₂ relu(W₁ rms(h) + b₁)², width n = 32, hidden 4n,
RMSNorm without gain. Input x ~ N(0, I), h₀ = rms(x). A *teacher* of depth L_T has every W₂ scaled
by 1/√L_T; its blocks are independent, or *tied* (all blocks share block 1's tensors: one vector
field iterated, a smooth flow). Students of several depths start as the identity (W₂ = 0, head
= 0) and learn the teacher's output distribution (KL at temperature T through a head) or its
final state (MSE).

The seed scheme: a sweep of teacher seed s draws its teacher and head from s, its training
batches from `data_seed(s)`, its fixed head from `head_seed(s)`, its evaluation batches from
`eval_seed(s)`, its student of depth ℓ from `student_seed(s, ℓ)` and the inputs its angles are
measured on from `probe_seed(s)`; the stored results depend on these offsets.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from layerlab.settings import ToyConfig

WIDTH = 32
VOCAB = 128


# --- the seed scheme ---------------------------------------------------------------------------
def teacher_seed(seed: int) -> int:
    """The seed of a sweep's teacher and its learned head: the sweep's own."""
    return seed


def data_seed(seed: int) -> int:
    """The seed of a sweep's training batch stream."""
    return seed + 1


def head_seed(seed: int) -> int:
    """The seed of a sweep's fixed head (exp-9-3), shared by teacher and students."""
    return seed + 7


def eval_seed(seed: int) -> int:
    """The seed of a sweep's evaluation stream, the same at every evaluation and disjoint from
    training."""
    return seed + 12345


def student_seed(seed: int, depth: int) -> int:
    """The seed of a sweep's student of `depth` blocks (its head included)."""
    return seed * 1000 + depth


def probe_seed(seed: int) -> int:
    """The seed of the inputs the consecutive-update angles are measured on."""
    return seed + 999


def generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with `seed` (data streams are drawn on the CPU everywhere)."""
    return torch.Generator().manual_seed(seed)


def draw_batch(batch_size: int, gen: torch.Generator) -> torch.Tensor:
    """One batch of inputs x ~ N(0, I) [batch_size, WIDTH] from `gen`."""
    return torch.randn(batch_size, WIDTH, generator=gen)


def fixed_head(seed: int) -> torch.Tensor:
    """exp-9-3's fixed head of a sweep: one N(0, 1)/√n matrix [WIDTH, VOCAB] shared by teacher
    and students."""
    return torch.randn(WIDTH, VOCAB, generator=generator(head_seed(seed))) / math.sqrt(WIDTH)


# --- the networks -------------------------------------------------------------------------------
def rms(h: torch.Tensor) -> torch.Tensor:
    """RMSNorm without a learnable gain (PyTorch's default eps)."""
    return F.rms_norm(h, (h.shape[-1],))


class Block(nn.Module):
    """One Euler step: h ← h + f(h), f(h) = W₂ relu(W₁ rms(h) + b₁)²."""

    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.w1 = nn.Linear(width, 4 * width)
        self.w2 = nn.Linear(4 * width, width, bias=False)

    def update(self, h: torch.Tensor) -> torch.Tensor:
        """The residual update f(h) alone."""
        return self.w2(F.relu(self.w1(rms(h))) ** 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h + f(h)."""
        return h + self.update(h)


class RK2Block(nn.Module):
    """P1's explicit-midpoint student block (App. C.3, exp-9-4): two MLPs, k₁ = f₁(h),
    h ← h + f₂(h + ½k₁). A smooth flow is integrated with error ∝ 1/ℓ⁴ by such steps, so if a
    student's exponent is bounded by its block type, RK2 students show it."""

    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.first, self.second = Block(width), Block(width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h + f₂(h + ½ f₁(h))."""
        return h + self.second.update(h + 0.5 * self.first.update(h))


BLOCKS = {"euler": Block, "rk2": RK2Block}


class ResidualMLP(nn.Module):
    """A stack of blocks; `forward` returns the final state, `trajectory` all L+1 states."""

    def __init__(self, depth: int, width: int = WIDTH, *, tied: bool = False,
                 block: str = "euler"):
        super().__init__()
        kind = BLOCKS[block]
        first = kind(width)
        self.blocks = nn.ModuleList([first] * depth if tied else
                                    [first] + [kind(width) for _ in range(depth - 1)])
        self.tied = tied

    @property
    def depth(self) -> int:
        """The number of blocks (a tied network counts its one block at every layer)."""
        return len(self.blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The final state from the input x (normalised first)."""
        h = rms(x)
        for block in self.blocks:
            h = block(h)
        return h

    def trajectory(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Every state h₀ = rms(x), h₁, …, h_L."""
        states = [rms(x)]
        for block in self.blocks:
            states.append(block(states[-1]))
        return states


def make_teacher(depth: int, *, tied: bool, seed: int, width: int = WIDTH,
                 vocab: int = VOCAB) -> tuple[ResidualMLP, nn.Linear]:
    """A teacher (W₂ scaled by 1/√depth) and its default-initialised head, seeded."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = ResidualMLP(depth, width, tied=tied)
        with torch.no_grad():
            for block in {id(b): b for b in net.blocks}.values():  # a tied block once
                block.w2.weight.mul_(1 / math.sqrt(depth))
        head = nn.Linear(width, vocab, bias=False)
    for p in [*net.parameters(), *head.parameters()]:
        p.requires_grad_(False)
    return net, head


def make_student(depth: int, *, seed: int, width: int = WIDTH, vocab: int = VOCAB,
                 head: bool = True, block: str = "euler", identity: bool = True) -> nn.ModuleDict:
    """A student that starts as the identity map: every W₂ and the head are zero. With
    `identity=False` it keeps PyTorch's default initialisation (the untrained control)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = ResidualMLP(depth, width, block=block)
        parts = {"net": net}
        if head:
            parts["head"] = nn.Linear(width, vocab, bias=False)
    if not identity:
        return nn.ModuleDict(parts)
    with torch.no_grad():
        for mlp in (m for m in net.modules() if isinstance(m, Block)):
            mlp.w2.weight.zero_()
        if head:
            parts["head"].weight.zero_()
    return nn.ModuleDict(parts)


# --- a sweep's networks, as both trainers build them --------------------------------------------
def learns_head(cfg: ToyConfig) -> bool:
    """Whether the sweep's students learn their own head (KL through a learned head, exp-9/9-1)."""
    return cfg.objective == "kl" and cfg.head == "learned"


def sweep_teacher(cfg: ToyConfig) -> tuple[ResidualMLP, nn.Linear]:
    """The sweep's teacher and its head."""
    return make_teacher(cfg.teacher_depth, tied=cfg.teacher == "tied", seed=teacher_seed(cfg.seed))


def sweep_student(cfg: ToyConfig, depth: int) -> nn.ModuleDict:
    """The sweep's student of `depth` blocks, at its identity start."""
    return make_student(depth, seed=student_seed(cfg.seed, depth), head=learns_head(cfg),
                        block=cfg.student_block)


# --- losses, schedule and the run record ---------------------------------------------------------
def mse(h: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over batch and width, per network: [B, n] gives a scalar (PyTorch's
    fused `mse_loss`), a stack [S, B, n] one value per network (the same formula written out).
    The two agree to rounding, not bit for bit (their gradients round in another order); each
    keeps the op order its trainer's stored results were made with."""
    if h.dim() == 2:
        return F.mse_loss(h, target)
    return ((h - target) ** 2).mean(dim=(-2, -1))


def kl(logp: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """KL(target ‖ student) from log-probabilities, summed over the vocabulary and averaged over
    the batch (PyTorch's `batchmean`), per network: [B, V] gives a scalar (`kl_div`), a stack
    [S, B, V] one value per network (the same formula written out, as `mse`)."""
    if logp.dim() == 2:
        return F.kl_div(logp, target, log_target=True, reduction="batchmean")
    return (target.exp() * (target - logp)).sum(dim=(-2, -1)) / logp.shape[-2]


def param_group(params, cfg: ToyConfig, depth: int) -> dict[str, Any]:
    """The Adam parameter group of the students of one depth: P1's per-depth learning rate."""
    return {"params": params, "lr": cfg.lr(depth), "initial_lr": cfg.lr(depth)}


def set_rates(opt: torch.optim.Optimizer, cfg: ToyConfig, step: int) -> None:
    """Every group's learning rate at `step` of the schedule (a tensor rate, as a captured CUDA
    graph reads it, is filled in place)."""
    for group in opt.param_groups:
        value = group["initial_lr"] * cfg.factor(step)
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(value)
        else:
            group["lr"] = value


def evaluates_at(cfg: ToyConfig, step: int) -> bool:
    """Whether a run evaluates after `step` steps: every `eval_every` and at the end."""
    return step % cfg.eval_every == 0 or step == cfg.steps


def run_record(cfg: ToyConfig, curve: list[dict[str, Any]]) -> dict[str, Any]:
    """What a trained sweep returns: its config, student depths, test-loss curve and final
    losses (None before the first evaluation)."""
    return {"config": asdict(cfg), "depths": list(cfg.student_depths), "curve": curve,
            "final": curve[-1]["test_loss"] if curve else None}
