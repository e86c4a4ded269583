"""Chapter 10's arms as programs: P2's Growth Transformer Training (GTT, research/paper2.md §9),
uniform training at full and at GTT's budget, G_stack depth stacking, GTT with random layer
labels, the paper's own GTT arm (63 % of uniform's optimizer steps) and GTT at uniform's
optimizer steps (the paper's "identical training steps"), each a list of segments under one budget accounting.

A segment trains a set of layers for some optimizer steps (the embedding and final norm train
in every segment) and may start with an operation: `clone` (GTT's growth: layers initialised
from trained core layers plus noise) or `stack` (G_stack: a 3-layer model repeated four
times). GTT ends by scaling its never-trained anti-layers by 0.9. The layers come from an
`Anatomy`, P2's layer classes mapped onto the smaller model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from layerlab import paper
from layerlab.anatomy.growth.model import step_flops
from layerlab.settings import GrowthConfig


@dataclass(frozen=True)
class Anatomy:
    """The layer classes of one stack (critical core, I/O, anti-layers and the connective rest),
    as indices: what GTT's phases train, clone from and scale."""

    core: tuple[int, ...]
    io: tuple[int, ...]
    anti: tuple[int, ...]
    connective: tuple[int, ...]


def proportional_anatomy(n_layers: int = 12, source_layers: int = paper.P2_N_LAYERS.value,
                         core=paper.P2_CRITICAL_CORE.value, anti=paper.P2_ANTI_LAYERS.value,
                         io=paper.P2_IO_LAYERS.value) -> Anatomy:
    """P2's SmolLM2 classes mapped to a smaller stack by index × n/30 (the spec's option (a))."""
    def scale(ls):
        return tuple(sorted({min(n_layers - 1, round(l * n_layers / source_layers)) for l in ls}))

    c, a = scale(core), scale(anti)
    i = tuple(l for l in scale(io) if l not in c and l not in a)
    rest = tuple(l for l in range(n_layers) if l not in (*c, *a, *i))
    return Anatomy(core=c, io=i, anti=tuple(l for l in a if l not in c), connective=rest)


@dataclass(frozen=True)
class Segment:
    """One stretch of a program: `steps` optimizer steps training the blocks `trainable` of a
    `model_layers`-block model, after the operation `op` (if any)."""

    name: str
    trainable: tuple[int, ...]
    steps: int
    op: str | None = None  # "clone" or "stack", applied before the segment's first step
    model_layers: int = 12


@dataclass(frozen=True)
class Program:
    """One arm: its segments in order, the layers scaled after training and the (target,
    source) pairs of its clone operation; what `train_arm` runs."""

    arm: str
    segments: tuple[Segment, ...]
    final_scale: tuple[int, ...] = ()  # layers scaled by anti_scale after training
    clone_from: tuple[tuple[int, int], ...] = ()  # (target, source) pairs of the clone op

    @property
    def steps(self) -> int:
        """Optimizer steps of the whole program."""
        return sum(s.steps for s in self.segments)

    @property
    def layer_steps(self) -> int:
        """Layer-steps of the whole program (trainable blocks × steps, summed over segments):
        the budget measure the arms are sized by."""
        return sum(len(s.trainable) * s.steps for s in self.segments)


GTT_PHASES = (  # (name, which layers, share of GTT's optimizer steps)
    ("gastrulation", "core", 0.20), ("neurulation", "io", 0.15),
    ("organogenesis", "core+adjacent", 0.20), ("growth", "core+connective", 0.15),
    ("connective", "connective", 0.15), ("maturation", "all but anti", 0.15),
)


def _phase_layers(which: str, a: Anatomy, n: int) -> tuple[int, ...]:
    if which == "core":
        return a.core
    if which == "io":
        return a.io
    if which == "core+adjacent":
        near = {m for c in a.core for m in (c - 1, c, c + 1) if 0 <= m < n}
        return tuple(sorted(near - set(a.anti)))
    if which == "core+connective":
        return tuple(sorted({*a.core, *a.connective}))
    if which == "connective":
        return a.connective
    if which == "all but anti":
        return tuple(l for l in range(n) if l not in a.anti)
    raise ValueError(which)


def _nearest(target: int, sources: tuple[int, ...]) -> int:
    return min(sources, key=lambda s: (abs(s - target), s))


def gtt_program(cfg: GrowthConfig, a: Anatomy, arm: str = "gtt",
                steps: int | None = None, exact: bool = False) -> Program:
    """GTT's six phases, with optimizer steps sized so layer-steps = budget × uniform's; or,
    given `steps`, so that the phases add up to that many optimizer steps (the paper's arm:
    each phase's share rounded, so within a few steps of it). `exact`: the last phase takes
    up the rounding, so the phases add up to exactly `steps` (the identical-steps arm)."""
    n = cfg.layers
    sets = [(name, _phase_layers(which, a, n), share) for name, which, share in GTT_PHASES]
    if steps is None:
        target = cfg.budget * n * cfg.uniform_steps
        total = target / sum(share * len(layers) for _, layers, share in sets)
    else:
        total = steps / sum(share for _, _, share in sets)
    segs = tuple(Segment(name, layers, max(1, round(share * total)),
                         op="clone" if name == "growth" else None) for name, layers, share in sets)
    if exact and steps is not None:
        rest = steps - sum(s.steps for s in segs[:-1])
        if rest < 1:
            raise ValueError(f"{steps} steps are too few for GTT's {len(segs)} phases")
        segs = (*segs[:-1], dataclasses.replace(segs[-1], steps=rest))
    clone = tuple((t, _nearest(t, a.core)) for t in a.connective)
    return Program(arm, segs, final_scale=a.anti, clone_from=clone)


def random_program(cfg: GrowthConfig, a: Anatomy, seed: int) -> Program:
    """GTT's program with the layer labels permuted at random: same budget, phases and
    operations, no anatomy."""
    perm = np.random.default_rng(10_000 + seed).permutation(cfg.layers)

    def p(ls):
        return tuple(sorted(int(perm[l]) for l in ls))

    shuffled = Anatomy(core=p(a.core), io=p(a.io), anti=p(a.anti), connective=p(a.connective))
    prog = gtt_program(cfg, a, arm="random schedule")
    segs = tuple(dataclasses.replace(s, trainable=p(s.trainable)) for s in prog.segments)
    clone = tuple((int(perm[t]), int(perm[s])) for t, s in prog.clone_from)
    return Program("random schedule", segs, final_scale=shuffled.anti, clone_from=clone)


def uniform_program(cfg: GrowthConfig, share: float = 1.0) -> Program:
    """Uniform training: every layer for `share` of `cfg.uniform_steps` (1: the full-budget
    baseline every arm is compared with; `cfg.budget`: the same budget as GTT)."""
    steps = max(1, round(share * cfg.uniform_steps))
    name = "uniform" if share == 1.0 else f"uniform {share:.0%} budget"
    return Program(name, (Segment("all layers", tuple(range(cfg.layers)), steps),))


def gstack_program(cfg: GrowthConfig, small: int = 3) -> Program:
    """G_stack: a `small`-layer model, stacked to `layers`, with layer-steps split evenly
    between the two stages and the total equal to GTT's budget."""
    if cfg.layers % small:
        raise ValueError(f"{cfg.layers} layers cannot be stacked from {small}")
    target = cfg.budget * cfg.layers * cfg.uniform_steps
    t_small = max(1, round(target / 2 / small))
    t_big = max(1, round(target / 2 / cfg.layers))
    return Program("G_stack", (
        Segment("small model", tuple(range(small)), t_small, model_layers=small),
        Segment("stacked", tuple(range(cfg.layers)), t_big, op="stack"),
    ))


# The paper's own GTT arm: "GTT at 50 % budget (416 steps) ... uniform at full budget (656
# steps)" -- 63 % of uniform's optimizer steps, whatever that is in layer-steps. Our "gtt" arm
# reads "50 %" as layer-steps instead (more optimizer steps than uniform); both are run.
PAPER_ARM = "gtt, paper's steps"
PAPER_STEP_SHARE = paper.P2_GROWTH_STEPS.value["gtt"] / paper.P2_GROWTH_STEPS.value["uniform"]
# The arm of "4.7× lower loss ... in identical training steps" and "13 % faster": GTT's program
# at exactly uniform's optimizer steps (same tokens; fewer layers trained in most steps).
IDENTICAL_ARM = "gtt, uniform's steps"


def programs(cfg: GrowthConfig, seed: int) -> dict[str, Program]:
    """Every arm's program by arm name, on the proportional anatomy of `cfg.layers` (`seed`
    draws the random schedule's permutation)."""
    a = proportional_anatomy(cfg.layers)
    return {"uniform": uniform_program(cfg), "uniform same budget": uniform_program(cfg, cfg.budget),
            "gtt": gtt_program(cfg, a), "G_stack": gstack_program(cfg),
            "random schedule": random_program(cfg, a, seed),
            PAPER_ARM: gtt_program(cfg, a, arm=PAPER_ARM,
                                   steps=max(1, round(PAPER_STEP_SHARE * cfg.uniform_steps))),
            IDENTICAL_ARM: gtt_program(cfg, a, arm=IDENTICAL_ARM, steps=cfg.uniform_steps,
                                       exact=True)}


def program_flops(prog: Program, cfg: GrowthConfig, vocab: int) -> float:
    """Training FLOPs of a whole program, counted analytically from its segments (each step as
    `model.step_flops` counts it): what an arm's curve accumulates, known without training."""
    return float(sum(seg.steps * step_flops(cfg, vocab, seg.model_layers, seg.trainable)
                     for seg in prog.segments))
