"""Chapter 06's strategies and what they measure: the paper's five strategies and the variants
as edits (`STRATEGIES`, `VARIANTS`, `BENIGN`), the target set S read from chapter 05's map
(`target_set`), the size controls' settings and numerics (`MATCHED_SIZE`, `MATCHED_DAMAGE`,
`DIRECTIONS`, `SUBSET_TOKENS`, `full_sizes`, the bisection on the fraction, `least_important`)
and greedy generation with its repetition scores (`PROMPTS`, `greedy`, `generation_conditions`,
`distinct_2`, `repeated_3`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch

from layerlab.anatomy import edits
from layerlab.anatomy.lab import Lab

__all__ = ["STRATEGIES", "VARIANTS", "BENIGN", "PROMPTS", "target_set", "MATCHED_SIZE",
           "MATCHED_DAMAGE", "DIRECTIONS", "SUBSET_TOKENS", "full_sizes", "least_important",
           "distinct_2", "repeated_3", "greedy", "generation_conditions"]


# name -> (edit kind, options); the first five are the paper's strategies
STRATEGIES: dict[str, tuple[str, dict[str, Any]]] = {
    "zero": ("zero", {}),
    "clone": ("clone", {}),
    "mix": ("mix", {}),
    "low-rank mix r=64": ("low_rank_mix", {"rank": 64}),
    "scale ×0.9": ("scale", {"alpha": 0.9}),
}
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "low-rank mix r=16": ("low_rank_mix", {"rank": 16}),
    "low-rank mix r=128": ("low_rank_mix", {"rank": 128}),
    "neighbour average (C1)": ("neighbour_average", {}),
}
BENIGN = "scale ×0.9"
PROMPTS = (
    "The capital of France is",
    "Once upon a time, in a small village,",
    "The main reason why the sky is blue is",
    "To make a good cup of tea, you first",
    "The most important discovery in the history of science was",
)


def target_set(table: pd.DataFrame, set_name: str = "E1") -> list[int]:
    """Chapter 05's connective tissue (and anti-layers): the paper's "redundant layers"."""
    nb = table[(table["method"] == "neighbour_average") & (table["set"] == set_name)]
    return sorted(int(l) for l in nb.loc[nb["class"].isin(["connective", "anti-layer"]), "layer"])


def _edit(name: str, layers: list[int] | tuple[int, ...]) -> edits.Edit:
    kind, opts = {**STRATEGIES, **VARIANTS}[name]
    return edits.edit(kind, list(layers), **opts)


# -- matched perturbations: is scaling benign, or only small? ------------------------------------
MATCHED_SIZE = 0.1  # ‖ΔW‖ / ‖W‖ of scale ×0.9: every strategy moved this far toward its target
MATCHED_DAMAGE = 10.0  # single-layer degradation % (E0) every strategy is tuned to
DIRECTIONS = ("zero", "clone", "mix", "low-rank mix r=64")  # zero at fraction f is scale × (1 − f)
# a smaller E1 -- the same articles, fewer sentences of each -- held out for the matched runs
# and the k curve
SUBSET_TOKENS = 2048


def _partial(name: str, layers: list[int], fraction: dict[int, float]) -> edits.Edit:
    kind, opts = STRATEGIES[name]
    return edits.edit(kind, layers, fraction={l: float(fraction[l]) for l in layers}, **opts)


def full_sizes(lab: Lab, target: list[int]) -> pd.DataFrame:
    """‖ΔW‖ / ‖W‖ of each strategy at full strength on each layer of S (weights only)."""
    rows = []
    for name in STRATEGIES:
        for l, r in edits.relative_change(lab.lm, _edit(name, target)).items():
            rows.append({"strategy": name, "layer": l, "relative change": r})
    return pd.DataFrame(rows)


def _bisect_fraction(ev, name: str, layer: int, base_ppl: float, target_pct: float,
                     iters: int = 8) -> dict[str, float]:
    """Fraction f at which moving `layer` toward the strategy's target costs `target_pct` %
    on the evaluator's set (bisection on f in [0, 1]; f = 1 when even the full edit costs less)."""
    def deg(f: float) -> float:
        return 100 * (ev.evaluate(_partial(name, [layer], {layer: f})).ppl / base_ppl - 1)

    full = deg(1.0)
    if full < target_pct:
        return {"fraction": 1.0, "deg": full, "reached": False}
    a, b, hit = 0.0, 1.0, full
    for _ in range(iters):
        mid = (a + b) / 2
        d = deg(mid)
        if d < target_pct:
            a = mid
        else:
            b, hit = mid, d
    return {"fraction": b, "deg": hit, "reached": True}


def least_important(table: pd.DataFrame, n_layers: int, k_max: int) -> list[int]:
    """Layers 1 … L−2 in order of chapter 05's neighbour-average degradation on E1 (least first)."""
    nb = table[(table["method"] == "neighbour_average") & (table["set"] == "E1")]
    nb = nb[(nb["layer"] >= 1) & (nb["layer"] <= n_layers - 2)].sort_values("deg")
    return [int(l) for l in nb["layer"]][:k_max]


# -- generations ---------------------------------------------------------------------------------
def distinct_2(tokens: list[int]) -> float:
    """Unique bigrams / bigrams (1 = no bigram repeats; low values mean loops)."""
    pairs = list(zip(tokens, tokens[1:]))
    return len(set(pairs)) / len(pairs) if pairs else float("nan")


def repeated_3(tokens: list[int]) -> float:
    """Share of trigrams that already occurred earlier in the same text."""
    tri = list(zip(tokens, tokens[1:], tokens[2:]))
    return 1 - len(set(tri)) / len(tri) if tri else float("nan")


@torch.no_grad()
def greedy(lm, prompt: str, max_new_tokens: int) -> list[int]:
    """Greedy continuation token ids (no sampling, no BOS beyond the tokenizer's default)."""
    ids = torch.tensor([lm.tokenizer(prompt)["input_ids"]], device=lm.device)
    out = lm.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                            max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                            pad_token_id=lm.tokenizer.eos_token_id or 0)
    return out[0, ids.shape[1]:].tolist()


def generation_conditions(target: list[int], n_layers: int) -> dict[str, edits.Edit | None]:
    """The edits the generations compare, by name: none (the unedited model), each of the five
    strategies jointly on the target set S, and scale ×0.9 on every layer."""
    conds: dict[str, edits.Edit | None] = {"unedited": None}
    conds.update({f"{name} on S": _edit(name, target) for name in STRATEGIES})
    conds["scale ×0.9 on all layers"] = edits.edit("scale", list(range(n_layers)), alpha=0.9)
    return conds
