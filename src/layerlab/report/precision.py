"""The stand-in's own precision (VERDICTS.md §4; experiment `stand_in_precision`).

Both papers' statistics on one model, so it sits beside the report, which may use both wings.

Every P2 claim and every P1 claim on an offline LLM is measured on SmolLM2-135M-Instruct as a
4-bit GGUF: each block matrix is Q4_1 (llama.cpp: blocks of 32 weights along a row, each stored
as a minimum m and a step d = (max − min)/15 in float16 and 4-bit codes, x ≈ m + q·d). How much
of what the chapters measure is that rounding? The true (bf16) weights lie within half a step of
the stand-in's, so the stand-in's error is uniform, RMS d/√12 per block. Each copy adds an
independent error of exactly that size — uniform noise of ± half its block's step — to every
Q4_1 weight: a model as far from the stand-in as the stand-in is from the weights it rounds.
(Re-quantising the copy would add a second rounding and put it √2 times as far away; and
re-quantising the stand-in itself changes nothing, its grid being its own fixed point, `q4_1`.)
Each primary statistic is measured on the stand-in and on a few seeded copies; its movement (the
largest change over the copies) is the resolution of the stand-in. A claim whose effect — the
distance from its value to the nearest edge of its band — is smaller than that movement cannot
be decided on this stand-in.

The statistics are the claims' own, on their cheapest set: chapter 05's neighbour averaging of
the layers its claims name and chapter 06's ×0.9 on E0 (10 sentences), chapter 07's ridge R²
and chapter 08's delta correlations on the weights themselves, and chapter 02's geometry and
lens on a few windows of the Wikipedia test text.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator

import numpy as np
import pandas as pd
import torch

from layerlab import corpus, hidden, paper
from layerlab.anatomy import edits, importance, strategies
from layerlab.anatomy import weights as w
from layerlab.anatomy.declarations import DECLARATIONS as P2
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.anatomy.importance.measurement import map_tables
from layerlab.anatomy.lab import Lab, recorded
from layerlab.anatomy.predictability import ALPHA_GRID
from layerlab.depth import geometry, lens
from layerlab.depth.declarations import DECLARATIONS as P1

__all__ = ["EXPERIMENT", "BLOCK", "LEVELS", "SEEDS", "q4_1", "steps", "dithered", "quantised",
           "dithered_copy", "error_share", "measure", "run", "movement", "margins", "describe",
           "COPY_METHODS", "COPY_SEEDS", "copy_maps", "unresolved"]

EXPERIMENT = "stand_in_precision"
BLOCK, LEVELS = 32, 15  # Q4_1: 32 weights per block, codes 0..15
SEEDS = (0, 1, 2)
WINDOWS, WINDOW_LEN = 8, 256  # chapter 02's statistics on a few windows of the test text
LENS_WINDOWS = 2


def _blocks(x: torch.Tensor) -> torch.Tensor:
    return x.detach().float().reshape(-1, BLOCK)


def q4_1(x: torch.Tensor) -> torch.Tensor:
    """Quantise to Q4_1 and back (llama.cpp's scheme, float16 minimum and step)."""
    b = _blocks(x)
    lo, hi = b.min(1, keepdim=True).values, b.max(1, keepdim=True).values
    d = ((hi - lo) / LEVELS).half().float()
    m = lo.half().float()
    q = torch.where(d > 0, ((b - m) / torch.where(d > 0, d, 1.0)).round().clamp(0, LEVELS), 0.0)
    return (m + q * d).reshape(x.shape).to(x.dtype)


def steps(x: torch.Tensor) -> torch.Tensor:
    """Each block's Q4_1 step d = (max − min)/15, one per block."""
    b = _blocks(x)
    return (b.max(1).values - b.min(1).values) / LEVELS


def dithered(x: torch.Tensor, seed: int) -> torch.Tensor:
    """`x` plus uniform noise of ± half its block's step: an error independent of the rounding
    `x` already carries, of the same distribution (RMS d/√12 per block)."""
    b = _blocks(x)
    gen = torch.Generator().manual_seed(seed)
    noise = (torch.rand(b.shape, generator=gen) - 0.5) * steps(x)[:, None]
    return (b + noise).reshape(x.shape).to(x.dtype)


def quantised(lm) -> list[tuple[int, str, torch.nn.Parameter]]:
    """The block matrices the GGUF stores as Q4_1: 2-D weights whose rows split into blocks."""
    out = []
    for i, block in enumerate(lm.blocks):
        for name, p in block.named_parameters():
            if p.ndim == 2 and p.shape[-1] % BLOCK == 0:
                out.append((i, name, p))
    return out


@contextlib.contextmanager
def dithered_copy(lm, seed: int | None) -> Iterator[Any]:
    """The model with every Q4_1 matrix replaced by its perturbed copy (`dithered`; None:
    unchanged), restored exactly afterwards."""
    if seed is None:
        yield lm
        return
    saved = []
    try:
        with torch.no_grad():
            for k, (_, _, p) in enumerate(quantised(lm)):
                saved.append((p, p.detach().clone()))
                p.copy_(dithered(p, seed * 10_000 + k))
        yield lm
    finally:
        with torch.no_grad():
            for p, original in saved:
                p.copy_(original)


# Chapter 05's map on every copy, every layer: neighbour averaging (every layer claim's primary)
# on E0 and E1, removal (a secondary) on E0 only -- removal on E1 would double the copies' ~70
# CPU minutes on two cores
COPY_METHODS: dict[str, tuple[str, ...]] = {"E0": ("neighbour_average", "skip"),
                                            "E1": ("neighbour_average",)}
# the copies per set: all three on E0; one on E1, whose 30 evaluations per copy take about an
# hour on two busy cores (a GPU runs all three)
COPY_SEEDS: dict[str, tuple[int, ...]] = {"E0": SEEDS, "E1": SEEDS[:1]}


def copy_maps(lab: Lab) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Chapter 05's degradation map on each dithered copy (VERDICTS.md §4 [rev]: the copies cover
    every layer the layer claims read, on E0 and E1): per copy `dithered-s<seed>`, its
    degradation table with classes and its range statistic per set, with the chapter's
    bootstrap over sentences (E0) or articles (E1). Each (copy, set, method, layer) is a record
    stored as it finishes; a rerun resumes."""
    sets = [s for s in COPY_METHODS if s in lab.cfg.map_methods]
    plan: dict[str, dict[str, Any]] = {}
    for seed in SEEDS:  # one seed's items together: each copy is made once
        for s in [s for s in sets if seed in COPY_SEEDS[s]]:
            plan[f"s{seed}-{s}-base"] = {"seed": seed, "set": s, "method": None, "layer": None}
            plan.update({f"s{seed}-{s}-{m}-L{l:02d}": {"seed": seed, "set": s, "method": m,
                                                        "layer": l}
                         for m in COPY_METHODS[s] for l in range(lab.n_layers)})
    held: dict[str, Any] = {}
    try:
        stored = _copy_map_item.each(plan, lab, sets=sets, held=held, progress=lab.progress)
    finally:
        _release(held)
    out = {}
    for seed in SEEDS:
        sets_ = [s for s in sets if seed in COPY_SEEDS[s]]
        bases = {s: Scores.from_dict(stored[f"s{seed}-{s}-base"]) for s in sets_}
        runs = {(it["set"], it["method"], it["layer"]): Scores.from_dict(stored[k])
                for k, it in plan.items() if it["seed"] == seed and it["method"] is not None}
        out[f"dithered-s{seed}"] = map_tables(runs, bases, lab.n_layers,
                                              resamples=lab.cfg.bootstrap)
    return out


def _release(held: dict[str, Any]) -> None:
    """Restore the model from the copy `held` holds (nothing if none is held)."""
    if "copy" in held:
        held.pop("copy").__exit__(None, None, None)
    held.clear()


# `held` keeps the current copy (the model perturbed in place, restored by `_release`) and its
# evaluators; the seed and set are in each item (`sets` only says whether E1 is read)
@recorded(f"{EXPERIMENT}_map", reads_e1="sets", ignore=("sets", "held"))
def _copy_map_item(lab: Lab, item: dict[str, Any], *, sets: list[str],
                   held: dict[str, Any]) -> dict[str, Any]:
    if held.get("seed") != item["seed"]:
        _release(held)
        held["copy"] = dithered_copy(lab.lm, item["seed"])
        held["copy"].__enter__()
        held["seed"] = item["seed"]
    if item["set"] not in held:
        held[item["set"]] = Evaluator(lab.lm, lab.evalset(item["set"]),
                                      batch_tokens=lab.cfg.batch_tokens, progress=False)
    ev = held[item["set"]]
    if item["method"] is None:
        return ev.base().to_dict()
    return ev.evaluate(importance.method_edit(item["method"], item["layer"])).to_dict()


def error_share(lm) -> pd.DataFrame:
    """Per Q4_1 matrix: the rounding's RMS error d/√12 (uniform within ± half a step) as a share
    of the matrix's std, and whether the stand-in lies on its own grid (`q4_1` changes it by at
    most a float32 rounding)."""
    rows = []
    for layer, name, p in quantised(lm):
        d = steps(p)
        rows.append({"layer": layer, "tensor": name,
                     "error / std": float(torch.sqrt((d ** 2).mean() / 12) / p.detach().float().std()),
                     "on its grid": bool(torch.allclose(q4_1(p), p, atol=1e-6, rtol=0))})
    return pd.DataFrame(rows)


# -- the statistics ------------------------------------------------------------------------------
NAMED = (*paper.P2_CRITICAL_CORE.value, *paper.P2_ANTI_LAYERS.value)


def _degradations(lab: Lab, lm, layers: list[int]) -> dict[str, float]:
    ev = Evaluator(lm, lab.evalset("E0"), batch_tokens=lab.cfg.batch_tokens, progress=False)
    base = ev.base().ppl

    def deg(edit) -> float:
        return 100.0 * (ev.evaluate(edit).ppl / base - 1.0)

    out = {"base PPL (E0)": base}
    # the layers P2 names, where the model has them (a smaller stand-in has none of its claims)
    out |= {f"L{l} neighbour average % (E0)": deg(importance.method_edit("neighbour_average", l))
            for l in NAMED if 0 < l < lm.n_layers - 1}
    if layers:
        out[f"×{paper.P2_SCALE_ALPHA.value:g} on S % (E0)"] = deg(
            edits.edit("scale", layers, alpha=paper.P2_SCALE_ALPHA.value))
    return out


def _weights(lm) -> dict[str, float]:
    out = {}
    types = w.tensor_types(lm)
    for label, name in types.items():
        s = w.stack(lm, name)
        if w.value(lm.blocks[0], name).ndim != 2:
            continue
        out[f"delta correlation {label}"] = float(np.nanmean(w.delta_correlation(s)))
        if label == "gate":
            gram = w.Gram.of(s)
            out["ridge R² gate (forward, best α)"] = max(
                float(np.mean([r["r2"] for r in w.ridge_scores(gram, a, "forward")]))
                for a in ALPHA_GRID)
    return out


def _geometry(lm, blocks: torch.Tensor) -> dict[str, float]:
    seq = pd.DataFrame(geometry.sequence_stats(lm, hidden.block_batches(blocks, 2)))
    edge = min(seq["first_theta"].mean(), seq["last_theta"].mean()) / seq["middle_theta"].mean()
    ls = lens.lens_stats(lm, blocks[:LENS_WINDOWS], batch_size=1)
    return {"edge ratio": float(edge), "middle θ(Δh) rad": float(seq["middle_theta_dh"].mean()),
            "early-stopper share": float(ls["early_share"])}


def measure(lab: Lab, seed: int | None, layers: list[int]) -> dict[str, float]:
    """Every statistic on the stand-in (`seed` None) or on its dithered copy `seed`."""
    lm = lab.lm
    blocks = corpus.token_blocks(lm.tokenizer, "wikipedia", n_tokens=WINDOWS * WINDOW_LEN,
                                 seq_len=WINDOW_LEN, split="test")
    with dithered_copy(lm, seed):
        return {**_degradations(lab, lm, layers), **_weights(lm), **_geometry(lm, blocks)}


def run(lab: Lab) -> dict[str, Any]:
    """The stand-in and its dithered copies, each cached as it finishes; the quantiser's error
    per matrix; S (chapter 06's target set, from chapter 05's map)."""
    layers = strategies.target_set(importance.run(lab).table)
    items = {"stand-in": {"seed": None}} | {f"dithered-s{s}": {"seed": s} for s in SEEDS}
    stored = _copy.each(items, lab, precision=_settings(layers), progress=lab.progress)
    errors = _error(lab, precision=_settings(layers))
    return {"values": pd.DataFrame(stored).rename_axis("statistic"),
            "errors": pd.DataFrame(errors), "layers": layers}


def _settings(layers: list[int]) -> dict[str, Any]:
    """What the records depend on besides the model: how the copies are made and measured."""
    return {"copy": "stand-in + U(± d/2)", "seeds": list(SEEDS), "windows": WINDOWS,
            "window_len": WINDOW_LEN, "lens_windows": LENS_WINDOWS, "layers": layers}


@recorded(EXPERIMENT, reads_e1=False)
def _copy(lab: Lab, item: dict[str, Any], *, precision: dict[str, Any]) -> dict[str, float]:
    return measure(lab, item["seed"], precision["layers"])


@recorded(f"{EXPERIMENT}_error", reads_e1=False)
def _error(lab: Lab, *, precision: dict[str, Any]) -> list[dict[str, Any]]:
    return error_share(lab.lm).to_dict("records")


def movement(values: pd.DataFrame) -> pd.DataFrame:
    """Per statistic: the stand-in's value, the copies' range and the movement (the largest
    |copy − stand-in|)."""
    copies = values.drop(columns="stand-in")
    out = pd.DataFrame({"stand-in": values["stand-in"], "copies min": copies.min(axis=1),
                        "copies max": copies.max(axis=1)})
    out["movement"] = copies.sub(values["stand-in"], axis=0).abs().max(axis=1)
    return out


def _peak(v: dict[str, float]) -> float:
    top = max(v[f"L{l} neighbour average % (E0)"] for l in paper.P2_CRITICAL_CORE.value)
    return math.log10(top) if top > 0 else math.nan


# each claim's primary as the statistic measured here (in the band's units); `BOUNDS` names a
# statistic's natural limits (a share cannot fall below 0, an R² cannot exceed 1): a band edge at
# such a limit cannot be crossed and is no margin
BOUNDS: dict[str, tuple[float, float]] = {"P1-A4-no-early-stopping": (0.0, 1.0),
                                          "P2-C2-ridge-r2": (-math.inf, 1.0)}
CLAIM_STATISTICS: dict[str, tuple[str, Any]] = {
    "P2-C1-peak-size": ("log10 of the largest of L8–L11", _peak),
    "P2-C1-core": ("third-largest of L8–L11", lambda v: sorted(
        (v[f"L{l} neighbour average % (E0)"] for l in paper.P2_CRITICAL_CORE.value),
        reverse=True)[2]),
    "P2-C1-anti-layers": ("larger of L14, L17", lambda v: max(
        v[f"L{l} neighbour average % (E0)"] for l in paper.P2_ANTI_LAYERS.value)),
    "P2-C4-only-scaling": ("×0.9 on S", lambda v: v[
        f"×{paper.P2_SCALE_ALPHA.value:g} on S % (E0)"]),
    "P2-C2-ridge-r2": ("ridge R² gate", lambda v: v["ridge R² gate (forward, best α)"]),
    "P2-C3-delta-value": ("mean delta correlation of the matrices", lambda v: float(np.mean(
        [x for k, x in v.items() if k.startswith("delta correlation")]))),
    "P1-A3-weak-update-correlation": ("middle θ(Δh)", lambda v: v["middle θ(Δh) rad"]),
    "P1-A4-no-early-stopping": ("early-stopper share", lambda v: v["early-stopper share"]),
}


def _side(value: float, edge: float) -> int:
    return (value > edge) - (value < edge)


def margins(values: pd.DataFrame) -> pd.DataFrame:
    """Per claim measured here: its primary on the stand-in, the copies' movement, the distance to
    the nearest edge of its band, and whether the stand-in resolves it: directional (VERDICTS.md
    §4 [rev]), no copy lands on the other side of an edge from the stand-in (`crossing` names
    those that do); a copy moving away from the edge, however far, threatens nothing.
    P2-C1-peak-size is on the log10 scale."""
    decl = {**P1, **P2}
    rows = []
    def value(stat: Any, column: str) -> float:
        try:
            return float(stat(values[column].dropna().to_dict()))
        except KeyError:  # a statistic this model has no layers for
            return math.nan

    for cid, (what, stat) in CLAIM_STATISTICS.items():
        per = {c: value(stat, c) for c in values.columns}
        v = per.pop("stand-in")
        band = decl[cid].band
        move = max((abs(x - v) for x in per.values()), default=math.nan)
        limits = BOUNDS.get(cid, (math.nan, math.nan))
        edges_ = [e for e in (band.lo, band.hi) if math.isfinite(e) and e not in limits]
        distance = min(abs(v - e) for e in edges_) if edges_ and math.isfinite(v) else math.nan
        crossing = [c for c, x in per.items() if math.isfinite(x) and math.isfinite(v)
                    and any(_side(x, e) != _side(v, e) for e in edges_)]
        rows.append({"claim": cid, "statistic": what, "stand-in": v, "movement": move,
                     "band": band.text(".3g"), "distance to the band's edge": distance,
                     "crossing": ", ".join(crossing),
                     "resolved": bool(math.isfinite(distance) and not crossing)})
    return pd.DataFrame(rows).set_index("claim")


def unresolved(m: pd.DataFrame) -> dict[str, str]:
    """Per claim `margins` does not resolve: the failed precondition its verdict names
    (VERDICTS.md §4 [rev]: some copy carries the statistic across its band's edge)."""
    return {cid: (f"stand-in precision: on dithered copies {r['crossing']} its {r['statistic']} "
                  f"lands across the band's edge {r['band']} from the stand-in's "
                  f"{r['stand-in']:.3g}") for cid, r in m.iterrows()
            if not r["resolved"] and r["crossing"]}


def describe(errors: pd.DataFrame) -> str:
    """The quantiser's rounding error as a share of each matrix's std, in one sentence."""
    s = errors["error / std"]
    on_grid = int(errors["on its grid"].sum())
    return (f"Q4_1's rounding error (d/√12 per block) is {100 * s.median():.1f} % of a matrix's "
            f"std at the median over the {len(errors)} quantised matrices "
            f"({100 * s.min():.1f}–{100 * s.max():.1f} %); {on_grid} of them lie exactly on "
            "their own Q4_1 grid (re-quantising changes nothing, hence the added noise)")
