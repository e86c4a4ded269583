"""P1's settings, the depth wing's (chapters 01–04): the decomposed scaling law (chapter 01),
the depth family trained here (chapters 01–03), hidden-state geometry and causal tracing
(chapters 02–03), and the toy teacher–student sweeps (chapter 04).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from layerlab.settings.base import _check, _positive_ints, _Settings


# --- chapter 01 --------------------------------------------------------------------------------
@dataclass(frozen=True)
class DepthScalingSettings(_Settings):
    """P1's decomposed law on the Chinchilla runs (chapter 01)."""

    adam_steps: int = 50_000
    bootstrap: int = 4000
    cuts: tuple[int, ...] = (1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
    adam_path: tuple[int, ...] = (1_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000)
    profile_grid: tuple[float, float, int] = (0.8, 2.4, 33)  # α_ℓ from, to, points
    held_out_splits: int = 10

    profile_field = "depth_scaling"

    def validate(self) -> None:
        _check(self.adam_steps > 0 and self.bootstrap > 1 and self.held_out_splits > 1,
               f"adam_steps, bootstrap and held_out_splits must be positive: {self}")
        _positive_ints(self.cuts, "cuts")
        _positive_ints(self.adam_path, "adam_path")
        lo, hi, n = self.profile_grid
        _check(0 < lo < hi and isinstance(n, int) and n >= 3, f"bad profile_grid {self.profile_grid}")

    def shrunk(self) -> "DepthScalingSettings":
        return self.replace(adam_steps=200, bootstrap=10, cuts=(20, 40), adam_path=(50, 200),
                            profile_grid=(0.8, 2.4, 5), held_out_splits=2)


# --- the depth family (chapters 01-03) ------------------------------------------------------------
@dataclass(frozen=True)
class FamilySettings(_Settings):
    """GPT-NeoX-style byte-level LMs of one width and several depths, trained here."""

    depths: tuple[int, ...] = (2, 4, 8, 16, 32)
    width: int = 64
    heads: int = 4
    seq_len: int = 128
    batch_size: int = 16
    steps: int = 600
    lr: float = 3e-3
    warmup: int = 30
    weight_decay: float = 0.1
    eval_every: int = 100
    eval_blocks: int = 32
    checkpoint_every: int = 100
    corpus: str = "wikipedia"
    seeds: tuple[int, ...] = (0,)  # every depth is trained once per seed (the seed spread)

    profile_field = "family"

    @property
    def tokens_per_model(self) -> int:
        return self.steps * self.batch_size * self.seq_len

    def validate(self) -> None:
        _positive_ints(self.depths, "family depths")
        _check(self.width % self.heads == 0, f"width {self.width} not divisible by {self.heads} heads")
        _check(min(self.seq_len, self.batch_size, self.steps, self.eval_every, self.eval_blocks,
                   self.checkpoint_every) > 0, f"family sizes must be positive: {self}")
        _check(0 <= self.warmup < self.steps, f"warmup {self.warmup} must be below steps {self.steps}")
        _check(self.lr > 0, f"lr must be positive, got {self.lr}")
        _check(isinstance(self.seeds, tuple) and len(self.seeds) > 0
               and all(isinstance(s, int) and s >= 0 for s in self.seeds)
               and len(set(self.seeds)) == len(self.seeds),
               f"family seeds must be distinct non-negative ints: {self.seeds!r}")

    @property
    def seed(self) -> int:
        """The seed whose members the geometry chapters measure."""
        return self.seeds[0]

    def key(self) -> dict[str, Any]:
        """Shared by every member: a member's depth and seed name its record."""
        return {k: v for k, v in asdict(self).items() if k not in ("depths", "seeds")}

    def shrunk(self) -> "FamilySettings":
        return self.replace(depths=tuple(sorted(self.depths)[:3]), seeds=self.seeds[:1],
                            width=32, heads=2, seq_len=32,
                            batch_size=2, steps=8, warmup=2, eval_every=4, eval_blocks=2,
                            checkpoint_every=4)


# --- chapters 02-03 --------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeometrySettings(_Settings):
    """Hidden-state geometry of every model of a profile. Text is either `tokens` tokens of the
    profile's corpus in `seq_len` windows, or P1's `documents` FineWeb documents."""

    seq_len: int
    batch_size: int
    profiles: int  # token profiles kept for chapter 03's PCA
    family_tokens: int  # test tokens per depth-family member
    tokens: int | None = None
    documents: int | None = None
    dtype: str | None = None  # None: float32
    device_map: str | None = None  # "auto": accelerate places the model (layer by layer)
    primary: str | None = None  # the model standing in for Pythia-410m (None: the first)
    models: tuple[str, ...] | None = None  # None: the profile's models
    control_models: tuple[str, ...] | None = None  # with untrained twins (None: every model)
    control_sequences: int = 64  # sequences per model for the controls' bootstrap
    # chapter 03: is the 99.6 % bulk the first position? Bulk fraction against context length
    context_lengths: tuple[int, ...] = (64, 128, 256, 512, 1024)
    context_tokens: int = 8192  # tokens per (model, context length, BOS or not)
    context_models: tuple[str, ...] | None = None  # None: the profile's models
    lens_tokens: int = 2048  # tokens per model for the last-block CE lens (chapter 02)
    # P1-A1's last angle after the final norm for the depth family too (False: only the LLMs; a
    # family member's weights must be retrained to measure it, ~40 CPU minutes for the family)
    paper_last_family: bool = True

    profile_field = "geometry"

    def validate(self) -> None:
        _check((self.tokens is None) != (self.documents is None),
               "geometry needs exactly one of tokens and documents")
        _check(min(self.seq_len, self.batch_size, self.profiles, self.family_tokens) > 0,
               f"geometry sizes must be positive: {self}")
        _check(self.dtype in (None, "float32", "bfloat16", "float16"), f"bad dtype {self.dtype!r}")
        _check(self.device_map in (None, "auto"), f"bad device_map {self.device_map!r}")
        if self.primary is not None and self.models is not None:
            _check(self.primary in self.models, f"primary {self.primary!r} not among the models")

    @property
    def torch_dtype(self) -> str:
        return self.dtype or "float32"

    def key(self) -> dict[str, Any]:
        """What the per-layer statistics depend on (the controls add their own fields)."""
        skip = ("control_models", "control_sequences", "context_lengths", "context_tokens",
                "context_models", "lens_tokens", "paper_last_family")
        return {k: v for k, v in asdict(self).items() if v is not None and k not in skip}

    def shrunk(self) -> "GeometrySettings":
        return self.replace(seq_len=32, batch_size=2, profiles=64, family_tokens=64,
                            control_sequences=4, context_lengths=(16, 32), context_tokens=128,
                            lens_tokens=64,
                            tokens=None if self.tokens is None else 128,
                            documents=None if self.documents is None else 4)


@dataclass(frozen=True)
class TracingSettings(_Settings):
    """Chapter 02: causal tracing (P1 Fig. 6, research/paper1.md §6) on the book's facts."""

    models: tuple[str, ...] | None = None  # None: the profile's models
    threshold: float = 0.1  # a fact is "known" when the clean p(target) is at least this
    noise_scale: float = 3.0  # × the std of the embedding outputs (P1: 3)
    noise_samples: int = 3  # noise draws per fact, averaged (P1: one unseeded draw)
    seed: int = 0
    dtype: str | None = None  # None: float32
    facts: int | None = None  # the first n of the book's facts (None: all)

    profile_field = "tracing"

    def validate(self) -> None:
        _check(0 < self.threshold < 1, f"threshold must be in (0, 1), got {self.threshold}")
        _check(self.noise_scale > 0 and self.noise_samples > 0,
               "noise_scale and noise_samples must be positive")
        _check(self.dtype in (None, "float32", "bfloat16", "float16"), f"bad dtype {self.dtype!r}")

    def shrunk(self) -> "TracingSettings":
        return self.replace(noise_samples=1, facts=2)


# --- chapter 04 --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToyConfig(_Settings):
    """One toy sweep: a teacher type, an objective, a temperature, and student depths."""

    teacher: str = "independent"  # or "tied"
    objective: str = "kl"  # "kl" (through a head, at temperature T) or "mse" (final states)
    temperature: float = 1.0
    head: str = "fixed"  # "fixed": one shared random head W (exp-9-3); "learned": exp-9/9-1
    teacher_depth: int = 64
    student_depths: tuple[int, ...] = (2, 4, 8, 16)
    batch_size: int = 256
    steps: int = 4000
    base_lr: float = 6e-4
    schedule: str = "decay"  # "constant" (exp-9/9-1) or "decay" (80 % constant, then to 0.1x)
    eval_every: int = 500
    eval_batches: int = 10
    seed: int = 0
    student_block: str = "euler"  # or "rk2": explicit-midpoint blocks (App. C.3, exp-9-4)

    def validate(self) -> None:
        _check(self.teacher in ("independent", "tied"), f"bad teacher {self.teacher!r}")
        _check(self.student_block in ("euler", "rk2"), f"bad student_block {self.student_block!r}")
        _check(self.objective in ("kl", "mse"), f"bad objective {self.objective!r}")
        _check(self.head in ("fixed", "learned"), f"bad head {self.head!r}")
        _check(self.schedule in ("decay", "constant"), f"bad schedule {self.schedule!r}")
        _check(self.temperature > 0 and self.base_lr > 0, "temperature and lr must be positive")
        _positive_ints(self.student_depths, "student_depths")
        _check(min(self.teacher_depth, self.batch_size, self.steps, self.eval_every,
                   self.eval_batches) > 0, f"toy sizes must be positive: {self}")

    def lr(self, depth: int) -> float:
        """P1's per-depth learning rates: constant 6e-4 for exp-9/9-1; 6e-4·4/√ℓ (KL, fixed
        head) or 6e-4·2/√ℓ (MSE) with the decaying schedule."""
        if self.schedule == "constant":
            return self.base_lr
        scale = 2.0 if self.objective == "mse" else 4.0
        return self.base_lr * scale / math.sqrt(depth)

    def factor(self, step: int) -> float:
        if self.schedule == "constant" or step < 0.8 * self.steps:
            return 1.0
        t = (step - 0.8 * self.steps) / (0.2 * self.steps)
        return 1.0 - 0.9 * min(1.0, t)


_TOY_FIELDS = {f.name for f in fields(ToyConfig)}


@dataclass(frozen=True)
class ToySettings(_Settings):
    """Chapter 04: the shared sizes and the named sweeps (each overrides some `ToyConfig`
    fields). `steps` is the default a sweep without its own `steps` trains for."""

    teacher_depth: int
    student_depths: tuple[int, ...]
    batch_size: int
    steps: int
    eval_every: int
    signature_steps: int  # the MSE runs whose trained students give the angle signatures
    sweeps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    eval_batches: int = 10

    profile_field = "toy"

    def validate(self) -> None:
        _check(len(self.sweeps) > 0, "the toy needs at least one sweep")
        for name, over in self.sweeps.items():
            unknown = set(over) - _TOY_FIELDS
            _check(not unknown, f"sweep {name!r} sets unknown fields {sorted(unknown)}")
        self.sweep_configs()  # builds (and so validates) every sweep

    def base(self) -> dict[str, Any]:
        return {"teacher_depth": self.teacher_depth, "student_depths": self.student_depths,
                "batch_size": self.batch_size, "steps": self.steps,
                "eval_every": self.eval_every, "eval_batches": self.eval_batches}

    def sweep_configs(self) -> dict[str, ToyConfig]:
        return {name: ToyConfig(**{**self.base(), **over}) for name, over in self.sweeps.items()}

    def signature_config(self, teacher: str) -> ToyConfig:
        return ToyConfig(**{**self.base(), "objective": "mse", "teacher": teacher,
                            "steps": self.signature_steps})

    def step_range(self) -> tuple[int, int]:
        """Fewest and most steps of any sweep (the gpu sweeps set their own)."""
        steps = [c.steps for c in self.sweep_configs().values()]
        return min(steps), max(steps)

    def key(self) -> dict[str, Any]:
        return {**asdict(self), "sweeps": {k: dict(v) for k, v in self.sweeps.items()}}

    def shrunk(self) -> "ToySettings":
        """Fewer sweeps (one per teacher, objective and extreme temperature), shallow nets, a
        handful of steps; the sweeps keep their names, heads and schedules."""
        configs = self.sweep_configs()
        chosen: dict[tuple, str] = {}
        temps = [c.temperature for c in configs.values() if c.objective == "kl"]
        for name, c in configs.items():
            extreme = c.objective == "mse" or c.temperature in (min(temps), max(temps))
            group = (c.teacher, c.objective, c.temperature if c.objective == "kl" else None)
            if extreme and group not in chosen:
                chosen[group] = name
        sweeps = {n: {**self.sweeps[n], **({"steps": 12} if "steps" in self.sweeps[n] else {})}
                  for n in chosen.values()}
        return self.replace(teacher_depth=8, student_depths=tuple(self.student_depths[:3]),
                            batch_size=16, steps=12, eval_every=6, eval_batches=2,
                            signature_steps=12, sweeps=sweeps)
