"""Chapter 06: P2's five weight-manipulation strategies (research/paper2.md §7).

Each strategy is applied to a target set S (by default the connective layers of chapter 05's
map, jointly) and to each layer of S alone; scaling is swept over α; greedy generations for fixed
prompts show what the perplexity numbers mean as text.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd
import torch

from layerlab import claims, paper
from layerlab.anatomy import edits
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.evaluator import Scores
from layerlab.anatomy.importance import degradation_table, log10_estimate
from layerlab.anatomy.lab import Lab

__all__ = ["BENIGN", "CHAPTER", "DIRECTIONS", "MATCHED_DAMAGE", "MATCHED_SET", "MATCHED_SIZE",
           "OTHERS", "PROMPTS", "STRATEGIES", "SUBSET_TOKENS", "VARIANTS", "alpha_conclusion",
           "assess", "assess_magnitudes", "assess_only_scaling", "coherence", "distinct_2",
           "full_sizes", "generation_conditions", "generation_summary", "generation_texts",
           "generations", "greedy", "least_important", "magnitudes_units", "matched",
           "matched_summary", "only_scaling_units", "plan", "repeated_3", "run", "shown_text",
           "strategies_estimate", "target_set"]

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


def run(lab: Lab, target: list[int]) -> dict[str, Any]:
    """Degradation tables of the three parts, each evaluation cached as it finishes."""
    if not target:
        raise ValueError("the target set is empty: chapter 05's map found no connective layers")
    items = plan(lab, target)
    stored = lab.cache.for_each(
        "manipulation", lab.key(target=target), items,
        lambda _n, item: lab.evaluator(item["set"]).evaluate(_item_edit(item)).to_dict(),
        progress=lab.progress)
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
    out["target"] = target
    return out


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


def matched(lab: Lab, target: list[int], importance_table: pd.DataFrame, *,
            k_max: int = 15) -> dict[str, Any]:
    """Chapter 06's controls for size: (1) every strategy at the relative weight change of
    scale ×0.9, per layer; (2) every strategy at the same single-layer damage (E0), found by
    bisection, then applied to S jointly; (3) each strategy on the k least important layers,
    k = 1 … k_max. Joint edits are scored on E0 and on an E1 subset of SUBSET_TOKENS
    tokens (every article, fewer sentences of each)."""
    sizes = full_sizes(lab, target)
    size_frac = {name: {int(r["layer"]): min(1.0, MATCHED_SIZE / r["relative change"])
                        for _, r in sizes[sizes["strategy"] == name].iterrows()}
                 for name in DIRECTIONS}
    order = least_important(importance_table, lab.n_layers, k_max)
    sets = {"E0": ("E0", 0), "E1 subset": ("E1", SUBSET_TOKENS)}
    key = lab.key(target=target, size=MATCHED_SIZE, damage=MATCHED_DAMAGE, subset=SUBSET_TOKENS,
                  order=order)

    def ev(set_label: str):
        return lab.evaluator(*sets[set_label])

    items: dict[str, dict[str, Any]] = {}
    for name in DIRECTIONS:
        for l in target:
            items[f"damage-{name}-L{l:02d}"] = {"part": "damage", "strategy": name, "layer": l}
    for s in sets:
        items[f"base-{s}"] = {"part": "base", "set": s}
        for name in DIRECTIONS:
            items[f"size-{s}-{name}"] = {"part": "size joint", "set": s, "strategy": name}
            items[f"damagejoint-{s}-{name}"] = {"part": "damage joint", "set": s, "strategy": name}
        for name in STRATEGIES:
            for k in range(1, len(order) + 1):
                items[f"k-{s}-{name}-{k:02d}"] = {"part": "k", "set": s, "strategy": name, "k": k}
    done: dict[str, Any] = {}

    def damage_fractions(name: str) -> dict[int, float]:
        return {l: done[f"damage-{name}-L{l:02d}"]["fraction"] for l in target}

    def compute(item_name: str, item: dict[str, Any]) -> Any:
        part = item["part"]
        if part == "damage":
            e0 = lab.evaluator("E0")
            return _bisect_fraction(e0, item["strategy"], item["layer"], e0.base().ppl,
                                    MATCHED_DAMAGE)
        if part == "base":
            return ev(item["set"]).base().to_dict()
        if part == "size joint":
            e = _partial(item["strategy"], target, size_frac[item["strategy"]])
        elif part == "damage joint":
            e = _partial(item["strategy"], target, damage_fractions(item["strategy"]))
        else:
            e = _edit(item["strategy"], order[: item["k"]])
        return ev(item["set"]).evaluate(e).to_dict()

    # damage items first: the joint runs at matched damage read their fractions
    first = {k: v for k, v in items.items() if v["part"] == "damage"}
    done.update(lab.cache.for_each("manipulation_matched", key, first, compute,
                                   progress=lab.progress))
    done.update(lab.cache.for_each("manipulation_matched", key, items, compute,
                                   progress=lab.progress))
    return _matched_tables(done, items, sizes, size_frac, target, order, lab.cfg.bootstrap)


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
    return {"joint": joint_table, "damage": damage, "sizes": sizes, "k": kcurve,
            "size_fractions": size_frac, "order": order, "target": target}


def matched_summary(m: dict[str, Any]) -> pd.DataFrame:
    """Per strategy: median relative change at full strength, the median fraction and relative
    change that cost MATCHED_DAMAGE % on one layer, and the joint degradations at matched size and
    matched damage (zero at matched size is scale ×0.9 exactly)."""
    sizes = m["sizes"].groupby("strategy")["relative change"].median()
    dmg = m["damage"].groupby("strategy")[["fraction", "relative change"]].median()
    j = m["joint"].pivot_table(index="strategy", columns=["matched", "set"], values="deg")
    rows = []
    for name in DIRECTIONS:
        rows.append({"strategy": name, "full-strength ‖ΔW‖/‖W‖ (median)": sizes[name],
                     f"‖ΔW‖/‖W‖ for +{MATCHED_DAMAGE:g} % on one layer (median)":
                         dmg.loc[name, "relative change"],
                     **{f"joint deg % at {p.split()[0]} — {s}": j.loc[name, (p, s)]
                        for p in ("size joint", "damage joint") for s in ("E0", "E1 subset")}})
    return pd.DataFrame(rows).set_index("strategy").round(3)


def alpha_conclusion(alpha: pd.DataFrame) -> str:
    """What the α sweep says, from its CIs: for each scope and set, the α values whose whole CI
    lies below 0 (the model improves), and the α of the lowest perplexity."""
    parts = []
    for (scope, s), df in alpha.groupby(["scope", "set"], sort=False):
        better = [f"{a:g}" for a, hi in zip(df["alpha"], df["hi"]) if hi < 0]
        best = df.loc[df["deg"].idxmin()]
        parts.append(f"{scope}, {s}: lowest PPL at α = {best['alpha']:g} ({best['deg']:+.1f} %); "
                     + (f"CI below 0 at α = {', '.join(better)}" if better
                        else "no α improves perplexity beyond its CI"))
    return "; ".join(parts)


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


def generations(lab: Lab, target: list[int]) -> pd.DataFrame:
    """Greedy continuations of the fixed prompts under each condition, with repetition scores."""
    n_new = lab.cfg.generate_tokens
    conds = generation_conditions(target, lab.n_layers)

    def compute(name: str, _item: Any) -> list[dict[str, Any]]:
        rows = []
        with edits.applied(lab.lm, conds[name]):
            for prompt in PROMPTS:
                tokens = greedy(lab.lm, prompt, n_new)
                rows.append({"prompt": prompt, "text": lab.lm.tokenizer.decode(tokens),
                             "distinct_2": distinct_2(tokens), "repeated_3": repeated_3(tokens),
                             "tokens": len(tokens)})
        return rows

    stored = lab.cache.for_each("generations", lab.key(reads_e1=False, target=target, new_tokens=n_new,
                                                       prompts=list(PROMPTS)),
                                {c: c for c in conds}, compute, progress=lab.progress)
    return pd.DataFrame([{"condition": c, **row} for c, rows in stored.items() for row in rows])


_SPECIAL = re.compile(r"<\|[^|>]{1,40}\|>")


def shown_text(text: str) -> str:
    """A generation as a page shows it: line breaks as ↵, special tokens (<|im_end|>) as ⟨end⟩,
    other control characters dropped. The stored text stays exact."""
    text = _SPECIAL.sub(" ⟨end⟩ ", text).replace("\r\n", "\n").replace("\n", " ↵ ")
    text = "".join(ch for ch in text if ch.isprintable())
    return " ".join(text.split())


def generation_texts(gens: pd.DataFrame) -> pd.DataFrame:
    """Condition × prompt table of the generations, as shown text (`shown_text`)."""
    return gens.assign(text=gens["text"].map(shown_text)).pivot(
        index="condition", columns="prompt", values="text")


def generation_summary(gens: pd.DataFrame) -> pd.DataFrame:
    """Mean distinct-2 and repeated-3 per condition over the prompts (conditions in run
    order): the repetition scores beside which the texts are read."""
    return gens.groupby("condition", sort=False)[["distinct_2", "repeated_3"]].mean().round(3)


CHAPTER = "06_manipulation_strategies"
OTHERS = [name for name in STRATEGIES if name != BENIGN]
MATCHED_SET = {"E0": "E0", "E1": "E1 subset"}  # each set's matched-size runs (the control)


def _decided(claim_id: str, units: list[claims.Unit], *, ours: str, setting: str,
             numbers: dict[str, Any] | None = None) -> claims.Claim:
    """The one decision procedure (`claims.decide`) on the claim's declaration and units."""
    decl = DECLARATIONS[claim_id]
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


def strategies_estimate(df: pd.DataFrame, names, stat) -> claims.Estimate | None:
    """`stat` (np.min or np.max) over the named strategies' degradations, at the point and at
    their lower and upper interval ends; None unless every named strategy is there."""
    rows = df[df["strategy"].isin(list(names))]
    if rows["strategy"].nunique() < len(set(names)):
        return None
    return claims.Estimate(*(float(stat(rows[c].to_numpy(dtype=float)))
                             for c in ("deg", "lo", "hi")))


def _triple(e: claims.Estimate | None) -> list[float] | None:
    return None if e is None else [e.point, e.lo, e.hi]


def coherence(gens: pd.DataFrame) -> dict[str, Any]:
    """The generation check calibrated on the unedited model (VERDICTS.md §3): per prompt the
    change in distinct-2 from the unedited text to scale ×0.9 on S, its mean with a 95 %
    t-interval over prompts, in units of the unedited model's own variation across prompts
    (1.96 × the standard deviation of its distinct-2). `estimate` is None with fewer than two
    prompts or an unedited model whose distinct-2 does not vary (no scale to calibrate on)."""
    from scipy.stats import t as student_t

    wide = gens.pivot_table(index="prompt", columns="condition", values="distinct_2",
                            aggfunc="first")
    scaled = f"{BENIGN} on S"
    if "unedited" not in wide or scaled not in wide:
        return {"estimate": None, "prompts": 0}
    pair = wide[["unedited", scaled]].dropna()
    n = len(pair)
    out: dict[str, Any] = {"estimate": None, "prompts": n,
                           "unedited_mean": float(pair["unedited"].mean()) if n else math.nan,
                           "scaled_mean": float(pair[scaled].mean()) if n else math.nan}
    if n < 2:
        return out
    sd = float(pair["unedited"].std(ddof=1))
    diff = pair[scaled] - pair["unedited"]
    mean, half = float(diff.mean()), float(student_t.ppf(0.975, n - 1) * diff.std(ddof=1)
                                           / math.sqrt(n))
    out.update(unedited_sd=sd, change=mean, change_ci=[mean - half, mean + half])
    if sd > 0:
        scale = 1.96 * sd
        out["estimate"] = claims.Estimate(mean / scale, (mean - half) / scale,
                                          (mean + half) / scale)
    return out


def only_scaling_units(joint: pd.DataFrame, gens: pd.DataFrame,
                       matched_joint: pd.DataFrame | None) -> list[claims.Unit]:
    """P2-C4-only-scaling, one unit per set: scale ×0.9 on S (primary); control, the most
    damaging of clone, mix and low-rank mix at ×0.9's relative weight change (None without the
    matched runs); secondaries, the least damaging other strategy at full strength and the
    calibrated generation check."""
    text = coherence(gens)["estimate"]
    units = []
    for s in sorted(set(joint["set"])):
        one = joint[joint["set"] == s]
        scale = strategies_estimate(one, [BENIGN], np.max)
        control = None
        if matched_joint is not None:
            m = matched_joint[(matched_joint["matched"] == "size joint")
                              & (matched_joint["set"] == MATCHED_SET.get(s, s))]
            control = strategies_estimate(m, [d for d in DIRECTIONS if d != "zero"], np.max)
        sec = {"others harmful": strategies_estimate(one, OTHERS, np.min), "coherent text": text}
        units.append(claims.Unit(
            name=s, primary=scale,
            precondition=None if scale is not None else "scale ×0.9 on S was not run",
            control=control, secondary={k: v for k, v in sec.items() if v is not None}))
    return units


def assess_only_scaling(result: dict[str, Any], gens: pd.DataFrame, matched_result: dict[str, Any],
                        setting: str) -> claims.Claim:
    """P2-C4-only-scaling decided on `only_scaling_units`; the wording gives each strategy's
    joint degradation on S, the matched-size runs (`matched_result`; None: not run) and the
    calibrated generation check on `gens`."""
    joint = result["joint"].set_index(["set", "strategy"])
    mj = matched_result["joint"] if matched_result is not None else None
    sets = sorted(set(result["joint"]["set"]))
    text = coherence(gens)
    shown = ""
    if mj is not None:
        size = mj[mj["matched"] == "size joint"].set_index(["set", "strategy"])
        shown = (f" — at the relative weight change of ×0.9 ({MATCHED_SIZE:g}): " + "; ".join(
            f"{s} " + ", ".join(f"{n} {size.loc[(s, n), 'deg']:+,.1f} % [{size.loc[(s, n), 'lo']:+,.1f}, "
                                f"{size.loc[(s, n), 'hi']:+,.1f}]" for n in DIRECTIONS)
            for s in sorted(set(mj["set"]))) + " (zero at this size is ×0.9 itself)")
    gen = (f"; greedy text distinct-2 over {text['prompts']} prompts: unedited "
           f"{text['unedited_mean']:.2f}, scale ×0.9 on S {text['scaled_mean']:.2f}"
           if text["prompts"] else "; no paired generations")
    if "change" in text:
        e = text["estimate"]
        gen += (f" (change {text['change']:+.3f} [{text['change_ci'][0]:+.3f}, "
                f"{text['change_ci'][1]:+.3f}]; unedited spread across prompts sd "
                f"{text['unedited_sd']:.3f}" + (f", calibrated {e.point:+.2f} [{e.lo:+.2f}, {e.hi:+.2f}]"
                                                 if e is not None else ", no spread to calibrate on")
                + ")")
    units = only_scaling_units(result["joint"], gens, mj)
    return _decided(
        "P2-C4-only-scaling", units,
        ours="; ".join(f"{s}: " + ", ".join(
            f"{n} {joint.loc[(s, n), 'deg']:+,.0f} % [{joint.loc[(s, n), 'lo']:+,.0f}, "
            f"{joint.loc[(s, n), 'hi']:+,.0f}]" for n in STRATEGIES) for s in sets) + shown + gen,
        setting=f"{setting}; S = {result['target']}",
        numbers={"coherence": {**text, "estimate": _triple(text["estimate"])},
                 **{u.name: {"primary": _triple(u.primary), "control": _triple(u.control),
                             **{k: _triple(v) for k, v in u.secondary.items()}}
                    for u in units}})


def magnitudes_units(joint: pd.DataFrame) -> list[claims.Unit]:
    """P2-C4-magnitudes, one unit per set: log10 of the most damaging other strategy on S
    (primary) and scale ×0.9's degradation (secondary)."""
    units = []
    for s in sorted(set(joint["set"])):
        one = joint[joint["set"] == s]
        worst = log10_estimate(strategies_estimate(one, OTHERS, np.max))
        scale = strategies_estimate(one, [BENIGN], np.max)
        units.append(claims.Unit(
            name=s, primary=worst,
            precondition=None if worst is not None else
            "the other strategies were not all run, or none degrades perplexity (no logarithm)",
            secondary={} if scale is None else {"scaling +19 %": scale}))
    return units


def assess_magnitudes(result: dict[str, Any], setting: str) -> claims.Claim:
    """P2-C4-magnitudes (+19 % against millions of %) decided on `magnitudes_units`; the
    wording gives scale ×0.9's degradation and the worst other strategy's in each set."""
    joint = result["joint"].set_index(["set", "strategy"])
    sets = sorted(set(result["joint"]["set"]))
    worst = {s: max(OTHERS, key=lambda o, s=s: joint.loc[(s, o), "deg"]) for s in sets}
    units = magnitudes_units(result["joint"])
    return _decided(
        "P2-C4-magnitudes", units,
        ours="; ".join(f"{s}: scale {joint.loc[(s, BENIGN), 'deg']:+.1f} % "
                       f"[{joint.loc[(s, BENIGN), 'lo']:+.1f}, {joint.loc[(s, BENIGN), 'hi']:+.1f}], "
                       f"worst other ({worst[s]}) {joint.loc[(s, worst[s]), 'deg']:+,.0f} % "
                       f"[{joint.loc[(s, worst[s]), 'lo']:+,.0f}, {joint.loc[(s, worst[s]), 'hi']:+,.0f}]"
                       for s in sets),
        setting=f"{setting}; S = {result['target']}",
        numbers={u.name: {"log10_worst_other": _triple(u.primary),
                          **{k: _triple(v) for k, v in u.secondary.items()}} for u in units})


def assess(result: dict[str, Any], gens: pd.DataFrame, matched_result: dict[str, Any],
           setting: str) -> list[claims.Claim]:
    """Chapter 06's two claims: only scaling preserves quality, and the sizes of the damage."""
    return [assess_only_scaling(result, gens, matched_result, setting),
            assess_magnitudes(result, setting)]
