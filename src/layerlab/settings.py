"""Typed run settings: one frozen dataclass per experiment, holding every size and default the
experiment reads. `profiles.py` builds one of each per profile; module code and notebooks read
these fields only (`ToySettings.from_profile(profile).steps`), never a dict.

Every class validates itself on construction (types, ranges, names), and `shrunk()` gives the
same settings at toy size: the gpu dry run (`make gpu-dry`) executes the gpu profile's code paths
on a CPU with these (fewer steps, tokens, sweeps and layers; the same keys and branches).

Used by every chapter (00–11) through `profiles`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from layerlab import paper


class SettingsError(ValueError):
    """A run setting with a wrong type, range or name."""


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise SettingsError(what)


def _positive_ints(values, what: str) -> None:
    _check(isinstance(values, tuple) and len(values) > 0
           and all(isinstance(v, int) and v > 0 for v in values),
           f"{what} must be a non-empty tuple of positive ints, got {values!r}")


def _check_types(obj: Any) -> None:
    """Each field's value against its annotation (the simple types this module uses)."""
    hints = {"int": int, "float": (int, float), "str": str, "bool": bool}
    for f in fields(obj):
        value = getattr(obj, f.name)
        ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        optional = ann.endswith("| None")
        base = ann.removesuffix(" | None").strip()
        if value is None:
            _check(optional, f"{type(obj).__name__}.{f.name} must not be None")
            continue
        if base in hints:
            ok = isinstance(value, hints[base]) and not (base != "bool" and isinstance(value, bool))
            _check(ok, f"{type(obj).__name__}.{f.name} must be {base}, got {value!r}")
        elif base.startswith("tuple"):
            _check(isinstance(value, tuple),
                   f"{type(obj).__name__}.{f.name} must be a tuple, got {value!r}")


class _Settings:
    """Shared behaviour: validation after construction, `replace`, `key`."""

    def __post_init__(self) -> None:
        _check_types(self)
        self.validate()

    def validate(self) -> None:  # overridden where there is more to check
        pass

    profile_field = ""  # set by each experiment's settings: the Profile field that holds them

    @classmethod
    def from_profile(cls, profile):
        """This experiment's settings in `profile`."""
        if not cls.profile_field:
            raise TypeError(f"{cls.__name__} is part of an experiment's settings, not one")
        return getattr(profile, cls.profile_field)

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)

    def key(self) -> dict[str, Any]:
        """What results depend on (cache keys and provenance)."""
        return asdict(self)


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
                "context_models", "lens_tokens")
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


# --- chapters 05-09 --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecoveryConfig(_Settings):
    """Chapter 09: noise on one layer, then fine-tuning until the damage is repaired."""

    layers: tuple[int, ...] = (1, 2, 8, 9, 10, 11, 14, 17, 20, 25)
    sigma: float = 0.5
    steps: int = 200
    eval_every: int = 10
    lr: float = 1e-4
    batch_size: int = 8
    seq_len: int = 128
    taus: tuple[float, ...] = (0.05, 0.10)
    trainable: str = "layer"  # "layer": only the damaged layer; "model": every parameter
    eval_set: str = "E0"
    eval_tokens: int = 0  # > 0: only the first sentences of the set up to this many tokens
    equal_damage: float = 2.0  # damaged PPL / base PPL that the calibrated σ aims for
    seeds: tuple[int, ...] = (0,)  # noise draw and data order; the first for every layer
    seeded_layers: tuple[int, ...] = ()  # these layers repeat the fixed-σ run for every seed
    # which fixed-σ runs get their no-damage control (None: every layer, every seed); a control
    # run costs a full step limit, so the cpu profile controls only some
    control_layers: tuple[int, ...] | None = None
    control_seeds: tuple[int, ...] | None = None

    @property
    def seed(self) -> int:
        return self.seeds[0]

    def validate(self) -> None:
        _check(len(self.layers) > 0 and all(isinstance(l, int) and l >= 0 for l in self.layers),
               f"recovery layers must be non-negative ints: {self.layers}")
        _check(self.sigma > 0 and self.lr > 0 and self.equal_damage > 1,
               "sigma, lr must be positive and equal_damage above 1")
        _check(min(self.steps, self.eval_every, self.batch_size, self.seq_len) > 0,
               f"recovery sizes must be positive: {self}")
        _check(self.trainable in ("layer", "model"), f"bad trainable {self.trainable!r}")
        _check(self.eval_set in ("E0", "E1"), f"bad eval_set {self.eval_set!r}")
        _check(self.eval_tokens >= 0 and len(self.seeds) > 0,
               f"eval_tokens must be >= 0 and seeds non-empty: {self}")
        _check(set(self.seeded_layers) <= set(self.layers),
               f"seeded_layers {self.seeded_layers} must be among the layers {self.layers}")
        _check(set(self.control_layers or ()) <= set(self.layers)
               and set(self.control_seeds or ()) <= set(self.seeds),
               f"control layers {self.control_layers} and seeds {self.control_seeds} must be "
               f"among the layers {self.layers} and seeds {self.seeds}")

    def key(self) -> dict[str, Any]:
        # which runs get a control selects records, it changes none: every record's own item
        # (layer, seed, condition) is in its key
        return {k: v for k, v in self.__dict__.items()
                if k not in ("control_layers", "control_seeds")}

    def shrunk(self, n_layers: int) -> "RecoveryConfig":
        """Three layers of an `n_layers` stand-in, two steps; seeds kept for the first layer."""
        layers = tuple(sorted({min(l, n_layers - 1) for l in self.layers})[:3])
        return self.replace(layers=layers, steps=2, eval_every=1, batch_size=2, seq_len=16,
                            eval_tokens=min(self.eval_tokens, 64),
                            seeds=self.seeds[:2], seeded_layers=layers[:1] if self.seeded_layers else (),
                            control_layers=None if self.control_layers is None else layers[:1],
                            control_seeds=None if self.control_seeds is None else self.seeds[:1])


MAP_METHODS = ("neighbour_average", "neighbour_average_linear", "skip", "mean_of_others",
               "neighbour_average_attention", "neighbour_average_mlp")


@dataclass(frozen=True)
class AnatomySettings(_Settings):
    """P2's chapters on one model: E0 (our sentences) and E1 (held-out text)."""

    model: str
    n_layers: int
    e1_source: str
    e1_tokens: int
    e1_max_len: int
    batch_tokens: int
    bootstrap: int
    map_methods: Mapping[str, tuple[str, ...]]  # evaluation set -> importance-map methods
    alphas: tuple[float, ...]  # ×α scaling sweep
    generate_tokens: int
    single_sets: tuple[str, ...]  # sets on which each strategy is tried on each layer alone
    init_std: float  # the model's initializer_range: the i.i.d. control's scale
    recovery: RecoveryConfig
    control_elements: int = 200_000  # elements of the synthetic delta-correlation stacks
    tiny_layers: int = 6  # layers of a tiny-* model
    dtype: str | None = None  # None: float32
    # E1's documents: 0 takes its sentences in text order (a few articles); n >= 2 takes an equal
    # share from each of n documents and resamples documents (evalsets.by_document)
    e1_documents: int = 0

    profile_field = "anatomy"

    def validate(self) -> None:
        _check(set(self.map_methods) <= {"E0", "E1"} and self.map_methods,
               f"map_methods must be keyed by E0/E1: {list(self.map_methods)}")
        for s, methods in self.map_methods.items():
            bad = set(methods) - set(MAP_METHODS)
            _check(not bad, f"unknown map methods for {s}: {sorted(bad)}")
        _check(set(self.single_sets) <= {"E0", "E1"}, f"bad single_sets {self.single_sets}")
        _check(all(l < self.n_layers for l in self.recovery.layers),
               f"recovery layers {self.recovery.layers} beyond {self.n_layers} layers")
        _check(min(self.n_layers, self.e1_tokens, self.e1_max_len, self.batch_tokens,
                   self.bootstrap, self.generate_tokens, self.control_elements) > 0,
               f"anatomy sizes must be positive: {self}")
        _check(all(a > 0 for a in self.alphas), f"alphas must be positive: {self.alphas}")
        _check(self.init_std > 0, "init_std must be positive")
        _check(self.dtype in (None, "float32", "bfloat16"), f"bad dtype {self.dtype!r}")
        _check(self.e1_documents == 0 or self.e1_documents >= 2,
               f"e1_documents must be 0 (text order) or at least 2, not {self.e1_documents}")

    @property
    def torch_dtype(self) -> str:
        return self.dtype or "float32"

    def shrunk(self) -> "AnatomySettings":
        """Same model name (served by a tiny stand-in in the dry run), a few layers' worth."""
        n = 6
        # a few documents: the dry run's local FineWeb files hold only a few dozen
        return self.replace(n_layers=n, e1_tokens=200, e1_max_len=64, batch_tokens=512,
                            e1_documents=min(self.e1_documents, 4),
                            bootstrap=10, generate_tokens=4, control_elements=2000,
                            alphas=tuple(self.alphas[:2]), tiny_layers=n,
                            recovery=self.recovery.shrunk(n))


# --- chapter 10 --------------------------------------------------------------------------------
@dataclass(frozen=True)
class GrowthConfig(_Settings):
    """One growth-training run (an arm's model, data and budget)."""

    layers: int = 12
    width: int = 128
    heads: int = 4
    ffn: int = 512
    seq_len: int = 64
    batch_size: int = 8
    uniform_steps: int = 656  # the paper's uniform run
    budget: float = 0.5  # GTT, G_stack, random and the short uniform arm get this share of layer-steps
    lr: float = 1e-3
    warmup: int = 20
    weight_decay: float = 0.1
    eval_every: int = 41
    eval_blocks: int = 16
    checkpoint_every: int = 50
    tokenizer: str = "smollm2"  # "smollm2" (49,152 tokens: 9.44 M parameters) or "byte"
    regime: str = "natural"  # "natural" (Wikipedia train → validation) or "memorise"
    memorise_tokens: int = 4096  # size of the small set of the memorisation regime
    clone_noise: float = 0.01  # × per-tensor std, GTT's growth phase
    anti_scale: float = paper.P2_SCALE_ALPHA.value  # the one benign manipulation, on anti-layers
    seed: int = 0

    def validate(self) -> None:
        _check(self.tokenizer in ("smollm2", "byte"), f"bad tokenizer {self.tokenizer!r}")
        _check(self.regime in ("natural", "memorise"), f"bad regime {self.regime!r}")
        _check(self.width % self.heads == 0, f"width {self.width} not divisible by {self.heads}")
        _check(0 < self.budget <= 1, f"budget must be in (0, 1], got {self.budget}")
        _check(self.layers >= 2 and min(self.seq_len, self.batch_size, self.uniform_steps,
                                         self.eval_every, self.checkpoint_every) > 0,
               f"growth sizes must be positive: {self}")


@dataclass(frozen=True)
class GrowthTuning(_Settings):
    """Chapter 10 in the paper's regime, found by a stated search: uniform training (the base
    config's lr, `search_seed`) on memorised sets of each size in `sizes`; the size whose final
    loss is nearest `target` is kept. There every arm runs each lr of `lrs` with `search_seed`;
    the lowest final loss picks the arm's lr, and `seeds` (not the search seed: the choice is
    not judged on the run that made it) give the verdict."""

    sizes: tuple[int, ...] = (16_384, 65_536, 262_144)
    target: float = paper.P2_GROWTH.value["uniform"]
    lrs: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
    search_seed: int = 0
    seeds: tuple[int, ...] = (1, 2, 3)

    def validate(self) -> None:
        _check(len(self.sizes) > 0 and min(self.sizes) > 0, f"bad sizes {self.sizes}")
        _check(len(self.lrs) > 0 and min(self.lrs) > 0, f"bad lrs {self.lrs}")
        _check(len(self.seeds) > 0 and self.search_seed not in self.seeds,
               f"the verdict's seeds {self.seeds} must not include the search seed")



@dataclass(frozen=True)
class GrowthSettings(_Settings):
    """Chapter 10: one base config, run for every regime × seed × arm."""

    config: GrowthConfig
    regimes: tuple[str, ...]
    seeds: tuple[int, ...]
    tuning: GrowthTuning | None = None  # the paper's regime (a search and per-arm lrs)

    profile_field = "growth"

    def validate(self) -> None:
        _check(set(self.regimes) <= {"natural", "memorise"} and self.regimes,
               f"bad regimes {self.regimes}")
        _check(len(self.seeds) > 0, "growth needs at least one seed")

    def run_config(self, regime: str, seed: int) -> GrowthConfig:
        return self.config.replace(regime=regime, seed=seed)

    def key(self) -> dict[str, Any]:
        base = asdict(self.config)
        base.pop("regime")
        base.pop("seed")
        return {"config": base}

    def describe(self) -> str:
        cfg = ", ".join(f"{k}={v}" for k, v in self.key()["config"].items())
        return f"{cfg}; regimes {list(self.regimes)}; seeds {list(self.seeds)}"

    def shrunk(self) -> "GrowthSettings":
        return self.replace(config=self.config.replace(
            width=16, heads=2, ffn=32, seq_len=16, batch_size=2, uniform_steps=24, warmup=2,
            eval_every=6, eval_blocks=2, checkpoint_every=6, memorise_tokens=512),
            seeds=self.seeds[:1],
            tuning=self.tuning and self.tuning.replace(sizes=(256, 512), lrs=self.tuning.lrs[:2],
                                                       seeds=self.tuning.seeds[:1]))




# --- `layerlab report` -------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportSettings(_Settings):
    """Both papers' per-model diagnostics on one model (`layerlab report`): how much text each
    part reads and how many intervals it draws. `QUICK` and `FULL` below are the two presets."""

    mode: str
    eval_tokens: int  # predicted tokens of the evaluation sentences (importance map, ×α sweep)
    eval_max_len: int  # longest sentence kept, in tokens
    geometry_tokens: int  # tokens of text in windows for P1's statistics
    seq_len: int  # window length for P1's statistics
    batch_size: int  # windows per forward pass
    profiles: int  # tokens sampled for the profile PCA (bulk fraction)
    lens_windows: int  # windows for the CE lens (it costs about L/2 forward passes each)
    bootstrap: int  # resamples of every interval
    alphas: tuple[float, ...]  # the ×α sweep
    scale_layers: int  # the sweep scales the k least important layers together
    ridge_alphas: tuple[float, ...]  # ridge penalties, in-sample and leave-one-out
    batch_tokens: int = 2048  # padded tokens per evaluation batch
    min_eval_tokens: int = 256  # a shorter evaluation text is refused
    seed: int = 0

    def validate(self) -> None:
        _check(self.mode in ("quick", "full", "custom"), f"mode must be quick/full/custom: {self.mode!r}")
        _check(min(self.eval_tokens, self.eval_max_len, self.geometry_tokens, self.batch_size,
                   self.profiles, self.lens_windows, self.bootstrap, self.scale_layers,
                   self.batch_tokens, self.min_eval_tokens) > 0,
               f"report sizes must be positive: {self}")
        _check(self.seq_len >= 8, f"seq_len must be at least 8 tokens, got {self.seq_len}")
        _check(self.geometry_tokens >= 2 * self.seq_len,
               "geometry_tokens must hold at least two windows of seq_len")
        _check(all(a > 0 for a in self.alphas) and self.alphas, f"bad alphas {self.alphas}")
        _check(all(a > 0 for a in self.ridge_alphas) and self.ridge_alphas,
               f"bad ridge_alphas {self.ridge_alphas}")

    def shrunk(self) -> "ReportSettings":
        return self.replace(mode="custom", eval_tokens=300, geometry_tokens=256, seq_len=32,
                            batch_size=4, profiles=200, lens_windows=2, bootstrap=50,
                            alphas=(0.9, 1.1), scale_layers=2, batch_tokens=512,
                            min_eval_tokens=64)


REPORT_QUICK = ReportSettings(
    mode="quick", eval_tokens=2048, eval_max_len=96, geometry_tokens=4096, seq_len=256,
    batch_size=4, profiles=4000, lens_windows=4, bootstrap=1000,
    alphas=(0.8, 0.9, 0.95, 1.05, 1.1), scale_layers=5, ridge_alphas=(1.0, 1e2, 1e4))
REPORT_FULL = REPORT_QUICK.replace(
    mode="full", eval_tokens=20_000, geometry_tokens=65_536, seq_len=512, batch_size=8,
    profiles=20_000, lens_windows=16, scale_layers=10)


@dataclass(frozen=True)
class ReportsSettings(_Settings):
    """Chapter 12: `layerlab report` on a few models, side by side. A model is a zoo name, a hub
    id, a local folder, or `family:<depth>:<seed>` (a member of this profile's depth family,
    saved with save_pretrained first)."""

    models: tuple[str, ...]
    report: ReportSettings

    profile_field = "reports"

    def validate(self) -> None:
        _check(len(self.models) > 0 and all(isinstance(m, str) and m for m in self.models),
               f"reports.models must name at least one model: {self.models!r}")

    def shrunk(self) -> "ReportsSettings":
        return self.replace(models=("tiny-llama", "tiny-gemma3"), report=self.report.shrunk())


EXPERIMENT_SETTINGS = (DepthScalingSettings, FamilySettings, GeometrySettings, TracingSettings,
                       ToySettings, AnatomySettings, GrowthSettings, ReportsSettings)
