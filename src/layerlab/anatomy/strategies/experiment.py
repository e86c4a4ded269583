"""Chapter 06's cached runs: `plan` and `run` (every strategy jointly on S, each on one layer of
S at a time, and the α sweep; records `manipulation`), `matched` (the controls for size: matched
relative weight change, matched single-layer damage, the k least important layers; records
`manipulation_matched`, the bisections first) and `generations` (greedy texts under each
condition; records `generations`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from layerlab import paper
from layerlab.anatomy import edits
from layerlab.anatomy.evaluator import Scores
from layerlab.anatomy.importance import degradation_table
from layerlab.anatomy.lab import Lab, ProfileOrLab, recorded
from layerlab.anatomy.strategies.measurement import (
    DIRECTIONS,
    MATCHED_DAMAGE,
    MATCHED_SIZE,
    PROMPTS,
    STRATEGIES,
    SUBSET_TOKENS,
    VARIANTS,
    _bisect_fraction,
    _edit,
    _partial,
    distinct_2,
    full_sizes,
    generation_conditions,
    greedy,
    least_important,
    repeated_3,
)

__all__ = ["plan", "StrategiesResult", "MatchedResult", "run", "matched", "generations"]


def plan(lab: Lab, target: list[int]) -> dict[str, dict[str, Any]]:
    """Every evaluation of the chapter: joint, one layer at a time, and the α sweep."""
    cfg = lab.cfg
    L = lab.n_layers
    peak = min(paper.P2_PEAK_LAYER.value, L - 1)
    scopes = {"target set": target, "all layers": list(range(L)), f"L{peak} alone": [peak]}
    items: dict[str, dict[str, Any]] = {}
    for s in ("E0", "E1"):
        for name in (*STRATEGIES, *VARIANTS):
            items[f"{s}-joint-{name}"] = {"set": s, "part": "joint", "strategy": name,
                                         "layers": target}
        for name in STRATEGIES if s in cfg.single_sets else ():
            for l in target:
                items[f"{s}-single-{name}-L{l:02d}"] = {"set": s, "part": "single",
                                                        "strategy": name, "layers": [l]}
        for scope, layers in scopes.items():
            for alpha in cfg.alphas:
                items[f"{s}-alpha-{scope}-{alpha:g}"] = {
                    "set": s, "part": "alpha", "strategy": f"scale ×{alpha:g}", "scope": scope,
                    "alpha": alpha, "layers": layers}
    return items


def _item_edit(item: dict[str, Any]) -> edits.Edit:
    if item["part"] == "alpha":
        return edits.edit("scale", item["layers"], alpha=item["alpha"])
    return _edit(item["strategy"], item["layers"])


@dataclass(frozen=True, eq=False)  # tables: compared field by field, not with ==
class StrategiesResult:
    """Chapter 06's three parts (`run`), degradation % and 95 % interval per row."""

    joint: pd.DataFrame  # every strategy and variant on S jointly, per set
    single: pd.DataFrame  # every strategy on each layer of S alone
    alpha: pd.DataFrame  # scaling's α sweep on S, on all layers and on the peak layer
    target: list[int]  # S


@dataclass(frozen=True, eq=False)
class MatchedResult:
    """Chapter 06's controls for size (`matched`)."""

    joint: pd.DataFrame  # every strategy on S at matched size and at matched damage, per set
    damage: pd.DataFrame  # per strategy and layer: the fraction costing MATCHED_DAMAGE % on E0
    sizes: pd.DataFrame  # per strategy and layer: the relative weight change at full strength
    k: pd.DataFrame  # each strategy on the k least important layers
    size_fractions: dict[str, dict[int, float]]  # per strategy and layer: the matched-size fraction
    order: list[int]  # the layers from least important on
    target: list[int]  # S


def run(lab: ProfileOrLab, target: list[int]) -> StrategiesResult:
    """Degradation tables of the three parts, each evaluation cached as it finishes."""
    lab = Lab.of(lab)
    if not target:
        raise ValueError("the target set is empty: chapter 05's map found no connective layers")
    items = plan(lab, target)
    stored = _manipulation.each(items, lab, target=target, progress=lab.progress)
    bases = {s: lab.base(s) for s in ("E0", "E1")}
    out = {}
    for part in ("joint", "single", "alpha"):
        keys = [k for k, it in items.items() if it["part"] == part]
        if part == "single":
            runs = {(items[k]["set"], items[k]["strategy"], items[k]["layers"][0]):
                    Scores.from_dict(stored[k]) for k in keys}
            names = ("strategy", "layer")
        elif part == "alpha":
            runs = {(items[k]["set"], items[k]["scope"], items[k]["alpha"]):
                    Scores.from_dict(stored[k]) for k in keys}
            names = ("scope", "alpha")
        else:
            runs = {(items[k]["set"], items[k]["strategy"], "S"): Scores.from_dict(stored[k])
                    for k in keys}
            names = ("strategy", "target")
        out[part] = degradation_table(runs, bases, resamples=lab.cfg.bootstrap, names=names)
    out["joint"] = out["joint"].drop(columns="target")
    out["joint"]["paper's five"] = out["joint"]["strategy"].isin(list(STRATEGIES))
    return StrategiesResult(joint=out["joint"], single=out["single"], alpha=out["alpha"],
                            target=target)


# the item holds its layers; the target set names the plan they come from
@recorded("manipulation")
def _manipulation(lab: Lab, item: dict[str, Any], *, target: list[int]) -> dict[str, Any]:
    return lab.evaluator(item["set"]).evaluate(_item_edit(item)).to_dict()


def matched(lab: ProfileOrLab, target: list[int], importance_table: pd.DataFrame, *,
            k_max: int = 15) -> MatchedResult:
    """Chapter 06's controls for size: (1) every strategy at the relative weight change of
    scale ×0.9, per layer; (2) every strategy at the same single-layer damage (E0), found by
    bisection, then applied to S jointly; (3) each strategy on the k least important layers,
    k = 1 … k_max. Joint edits are scored on E0 and on an E1 subset of SUBSET_TOKENS
    tokens (every article, fewer sentences of each)."""
    lab = Lab.of(lab)
    sizes = full_sizes(lab, target)
    size_frac = {name: {int(r["layer"]): min(1.0, MATCHED_SIZE / r["relative change"])
                        for _, r in sizes[sizes["strategy"] == name].iterrows()}
                 for name in DIRECTIONS}
    order = least_important(importance_table, lab.n_layers, k_max)
    items: dict[str, dict[str, Any]] = {}
    for name in DIRECTIONS:
        for l in target:
            items[f"damage-{name}-L{l:02d}"] = {"part": "damage", "strategy": name, "layer": l}
    for s in _MATCHED_SETS:
        items[f"base-{s}"] = {"part": "base", "set": s}
        for name in DIRECTIONS:
            items[f"size-{s}-{name}"] = {"part": "size joint", "set": s, "strategy": name}
            items[f"damagejoint-{s}-{name}"] = {"part": "damage joint", "set": s, "strategy": name}
        for name in STRATEGIES:
            for k in range(1, len(order) + 1):
                items[f"k-{s}-{name}-{k:02d}"] = {"part": "k", "set": s, "strategy": name, "k": k}
    done: dict[str, Any] = {}
    settings = {"target": target, "size": MATCHED_SIZE, "damage": MATCHED_DAMAGE,
                "subset": SUBSET_TOKENS, "order": order, "size_frac": size_frac, "done": done}
    # damage items first: the joint runs at matched damage read their fractions
    first = {k: v for k, v in items.items() if v["part"] == "damage"}
    done.update(_matched_item.each(first, lab, **settings, progress=lab.progress))
    done.update(_matched_item.each(items, lab, **settings, progress=lab.progress))
    return _matched_tables(done, items, sizes, size_frac, target, order, lab.cfg.bootstrap)


_MATCHED_SETS = ("E0", "E1 subset")  # joint edits are scored on E0 and on a subset of E1


# `size_frac` (from the target's weights and `size`) and `done` (the bisections' records, which
# the joint runs at matched damage read) follow from the key's arguments
@recorded("manipulation_matched", ignore=("size_frac", "done"))
def _matched_item(lab: Lab, item: dict[str, Any], *, target: list[int], size: float,
                  damage: float, subset: int, order: list[int],
                  size_frac: dict[str, dict[int, float]], done: dict[str, Any]) -> Any:
    part = item["part"]
    if part == "damage":
        e0 = lab.evaluator("E0")
        return _bisect_fraction(e0, item["strategy"], item["layer"], e0.base().ppl, damage)
    ev = lab.evaluator(*{"E0": ("E0", 0), "E1 subset": ("E1", subset)}[item["set"]])
    if part == "base":
        return ev.base().to_dict()
    if part == "size joint":
        e = _partial(item["strategy"], target, size_frac[item["strategy"]])
    elif part == "damage joint":
        fractions = {l: done[f"damage-{item['strategy']}-L{l:02d}"]["fraction"] for l in target}
        e = _partial(item["strategy"], target, fractions)
    else:
        e = _edit(item["strategy"], order[: item["k"]])
    return ev.evaluate(e).to_dict()


def _matched_tables(done, items, sizes, size_frac, target, order, resamples) -> dict[str, Any]:
    bases = {s: Scores.from_dict(done[f"base-{s}"]) for s in ("E0", "E1 subset")}
    joint = {}
    for part in ("size joint", "damage joint"):
        runs = {(it["set"], it["strategy"], part): Scores.from_dict(done[k])
                for k, it in items.items() if it["part"] == part}
        joint[part] = degradation_table(runs, bases, resamples=resamples,
                                        names=("strategy", "matched"))
    joint_table = pd.concat(joint.values(), ignore_index=True)
    damage = pd.DataFrame([{"strategy": it["strategy"], "layer": it["layer"], **done[k]}
                           for k, it in items.items() if it["part"] == "damage"])
    full = sizes.set_index(["strategy", "layer"])["relative change"]
    damage["relative change"] = [r["fraction"] * full[(r["strategy"], r["layer"])]
                                 for _, r in damage.iterrows()]
    kruns = {(it["set"], it["strategy"], it["k"]): Scores.from_dict(done[k])
             for k, it in items.items() if it["part"] == "k"}
    kcurve = degradation_table(kruns, bases, resamples=resamples, names=("strategy", "k"))
    kcurve["layers removed"] = [str(order[: int(k)]) for k in kcurve["k"]]
    return MatchedResult(joint=joint_table, damage=damage, sizes=sizes, k=kcurve,
                         size_fractions=size_frac, order=order, target=target)


def generations(lab: ProfileOrLab, target: list[int]) -> pd.DataFrame:
    """Greedy continuations of the fixed prompts under each condition, with repetition scores."""
    lab = Lab.of(lab)
    conds = generation_conditions(target, lab.n_layers)
    stored = _generation.each({c: c for c in conds}, lab, target=target,
                              new_tokens=lab.cfg.generate_tokens, prompts=list(PROMPTS),
                              conds=conds, progress=lab.progress)
    return pd.DataFrame([{"condition": c, **row} for c, rows in stored.items() for row in rows])


# the item is a condition's name; `conds` (its edits) follow from the target set
@recorded("generations", reads_e1=False, ignore=("conds",))
def _generation(lab: Lab, item: str, *, target: list[int], new_tokens: int, prompts: list[str],
                conds: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    with edits.applied(lab.lm, conds[item]):
        for prompt in prompts:
            tokens = greedy(lab.lm, prompt, new_tokens)
            rows.append({"prompt": prompt, "text": lab.lm.tokenizer.decode(tokens),
                         "distinct_2": distinct_2(tokens), "repeated_3": repeated_3(tokens),
                         "tokens": len(tokens)})
    return rows
