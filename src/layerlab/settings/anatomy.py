"""P2's settings, the anatomy wing's (chapters 05–10): one model's anatomy (the importance
map, manipulation strategies, weight predictability and delta oscillation, chapters 05–08),
recovery after noise (chapter 09) and growth training (chapter 10).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from layerlab import paper
from layerlab.settings.base import _check, _Settings


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
    not judged on the run that made it) give the verdict. `timed`: the verdict's runs recorded
    before CPU-seconds were counted are trained once more to time them (on a CPU; a GPU's
    runs have no CPU-seconds to measure)."""

    sizes: tuple[int, ...] = (16_384, 65_536, 262_144)
    target: float = paper.P2_GROWTH.value["uniform"]
    lrs: tuple[float, ...] = (3e-4, 1e-3, 3e-3)
    search_seed: int = 0
    seeds: tuple[int, ...] = (1, 2, 3)
    timed: bool = False

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
