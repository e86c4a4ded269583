"""What each tier runs, chapter by chapter: the table under every chapter's introduction.

Three tiers: `cpu` (2 CPU cores, offline: the committed pages), `colab` (one 15-24 GB GPU, each
chapter within ~30 minutes) and `gpu` (the papers' settings: an 80 GB-class GPU or several).
`layerlab.profiles.default_name()` picks the tier from the machine; `LAYERLAB_PROFILE`
overrides. What a tier runs is read from its settings objects here, so the table cannot drift
from the code; how long it takes is rough (CPU) or not yet timed (GPU tiers), and says so.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from layerlab import profiles
from layerlab.folded import fold
from layerlab.profiles import Profile
from layerlab.settings import AnatomySettings, GrowthSettings, ToySettings

TIERS = ("cpu", "colab", "gpu")
MACHINES = {"cpu": "2 CPU cores, offline", "colab": "one 15-24 GB GPU (Colab T4/L4)",
            "gpu": "one 80 GB GPU (H100/H200/A100-80) or several"}


def _short(name: str) -> str:
    return name.split("/")[-1]


def _models(names) -> str:
    names = list(names)
    return f"{len(names)} models ({', '.join(_short(n) for n in names[:3])}{', …' if len(names) > 3 else ''})"


def _anatomy_model(p: Profile) -> str:
    a = AnatomySettings.from_profile(p)
    return f"{_short(a.model)}, E1 {a.e1_tokens:,} tokens ({a.e1_source})"


def _ch00(p: Profile) -> str:
    return f"{_models(p.models)}; {p.eval_tokens:,} evaluation tokens"


def _ch01(p: Profile) -> str:
    return f"Chinchilla fit, {p.depth_scaling.bootstrap:,} bootstrap resamples"


def _ch02(p: Profile) -> str:
    g, f = p.geometry, p.family
    size = (f"{g.documents:,} documents x {g.seq_len:,} tokens" if g.documents
            else f"{g.tokens:,} tokens")
    return (f"{_models(g.models or p.models)}, {size}; depth family {f.depths[0]}–{f.depths[-1]} "
            f"blocks x {len(f.seeds)} seeds, {f.steps:,} steps; tracing on "
            f"{len(p.tracing.models or p.models)} models")


def _ch03(p: Profile) -> str:
    g = p.geometry
    return (f"{g.profiles:,} token profiles; context lengths {g.context_lengths[0]}–"
            f"{g.context_lengths[-1]}, {g.context_tokens:,} tokens each")


def _ch04(p: Profile) -> str:
    t = ToySettings.from_profile(p)
    lo, hi = t.step_range()
    steps = f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
    return (f"{len(t.sweeps)} sweeps, students {t.student_depths[0]}–{t.student_depths[-1]} "
            f"blocks, teacher {t.teacher_depth}, {steps} steps of {t.batch_size:,}")


def _ch05(p: Profile) -> str:
    a = AnatomySettings.from_profile(p)
    methods = {m for ms in a.map_methods.values() for m in ms}
    return f"{_anatomy_model(p)}; {len(methods)} ablation methods, {a.bootstrap:,} resamples"


def _ch06(p: Profile) -> str:
    a = AnatomySettings.from_profile(p)
    return f"{_anatomy_model(p)}; single-layer edits on {', '.join(a.single_sets)}"


def _ch07(p: Profile) -> str:
    return f"{_anatomy_model(p)}; ridge, descriptors and their nulls"


def _ch08(p: Profile) -> str:
    return f"{_short(AnatomySettings.from_profile(p).model)} weights; element-wise and invariant deltas"


def _ch09(p: Profile) -> str:
    r = AnatomySettings.from_profile(p).recovery
    return (f"{len(r.layers)} layers x {r.steps} steps of {r.batch_size} x {r.seq_len} tokens, "
            f"{len(r.seeds)} seeds for L{', '.join(map(str, r.seeded_layers)) or '–'}; "
            f"PPL on {r.eval_set}" + (f" ({r.eval_tokens:,} tokens)" if r.eval_tokens else ""))


def _ch10(p: Profile) -> str:
    g = GrowthSettings.from_profile(p)
    c = g.config
    tuned = f"; search over {len(g.tuning.sizes)} set sizes" if g.tuning else ""
    return (f"{c.layers} x {c.width} model, {c.tokenizer} vocabulary; {len(g.regimes)} regimes x "
            f"{len(g.seeds)} seeds x 5 arms, {c.uniform_steps:,} steps{tuned}")


def _ch11(p: Profile) -> str:
    return "reads the results of chapters 00–10 (nothing new is computed)"


def _ch12(p: Profile) -> str:
    r = p.reports.report
    return (f"`layerlab report --{r.mode if r.mode != 'custom' else 'quick'}` on "
            f"{_models(p.reports.models)}: {r.eval_tokens:,} evaluation tokens, "
            f"{r.geometry_tokens:,} tokens of windows, each model beside its untrained twin")


WHAT: dict[str, Callable[[Profile], str]] = {
    "00": _ch00, "01": _ch01, "02": _ch02, "03": _ch03, "04": _ch04, "05": _ch05, "06": _ch06,
    "07": _ch07, "08": _ch08, "09": _ch09, "10": _ch10, "11": _ch11, "12": _ch12}

# Rough wall-clock time on 2 CPU cores from an empty results cache, as the committed pages were
# computed (sessions' logs; a re-run with the committed cache takes seconds to minutes). The GPU
# tiers have not been timed yet: the colab tier is sized for ~30 minutes per chapter, and the
# `make gpu-run` summaries (results/gpu) will give the paper tier's times.
ROUGH_CPU = {"00": "minutes", "01": "minutes", "02": "~3 h", "03": "~1 h", "04": "~6 h",
             "05": "~1 h", "06": "~3 h", "07": "~30 min", "08": "~15 min", "09": "~4 h",
             "10": "~5 h", "11": "minutes", "12": "~40 min (three reports)"}
UNTIMED = {"colab": "sized for ≤ 30 min; not yet timed", "gpu": "not yet timed"}


def table(chapter: str) -> pd.DataFrame:
    """For one chapter ("04"): per tier, the machine, what it runs (from its settings) and a
    rough wall-clock estimate from an empty cache."""
    pd.set_option("display.max_colwidth", 300)  # whole descriptions, as profiles.setup does
    if chapter not in WHAT:
        raise KeyError(f"unknown chapter {chapter!r}; chapters are {sorted(WHAT)}")
    rows = []
    for tier in TIERS:
        p = profiles.PROFILES[tier]
        rough = ROUGH_CPU[chapter] if tier == "cpu" else UNTIMED[tier]
        rows.append({"tier (profile)": tier, "machine": MACHINES[tier],
                     "what it runs": WHAT[chapter](p), "time from an empty cache": rough})
    return fold(pd.DataFrame(rows).set_index("tier (profile)"),
                "What each tier runs in this chapter (click to open)")
