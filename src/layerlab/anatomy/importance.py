"""Chapter 05: P2's layer importance map (research/paper2.md §4), its controls and anchors.

Every method replaces or removes one layer at a time and measures the perplexity of E0 and E1;
degradation % = (PPL_edited / PPL_base − 1) × 100, with a paired bootstrap over sentences.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch

from layerlab import claims, models, paper
from layerlab.anatomy import edits
from layerlab.anatomy.evaluator import Scores
from layerlab.anatomy.lab import Lab

# method -> (edit kind, tensor group); "neighbour_average" is the paper's operation
METHODS: dict[str, tuple[str, str | None]] = {
    "neighbour_average": ("neighbour_average", "all"),
    "neighbour_average_linear": ("neighbour_average", "linear"),
    "skip": ("skip", None),
    "mean_of_others": ("mean_of_others", "all"),
    "neighbour_average_attention": ("neighbour_average", "attention"),
    "neighbour_average_mlp": ("neighbour_average", "mlp"),
}
PAPER_CORE = paper.P2_CRITICAL_CORE.value
PAPER_PEAK, PAPER_PEAK_DEG = paper.P2_PEAK_LAYER.value, paper.P2_PEAK_DEGRADATION.value
PAPER_ANTI = paper.P2_ANTI_LAYERS.value
PAPER_LAYERS = paper.P2_N_LAYERS.value
LAYER_CLAIMS = {
    "P2-C1-core": "Neighbour-average ablation finds a critical core at L8–11 with the peak at L11",
    "P2-C1-peak-size": "Averaging L11's neighbours into it raises perplexity by +63,419 %",
    "P2-C1-anti-layers": "L14 and L17 are anti-layers: ablating them improves perplexity",
    "P2-C1-io-layers": "I/O layers are L1–2 and L23–28; the rest is connective tissue (< 30 %) "
                       "(seed summary only)",
}
RANGE_CLAIM = "Layer importance spans a 10^7 range (read as max |deg| / min |deg|)"
CONNECTIVE_MAX, CORE_MIN = 30.0, 100.0  # degradation % thresholds of the class rules


def method_edit(method: str, layer: int) -> edits.Edit:
    kind, group = METHODS[method]
    return edits.edit(kind, layer, group=group)


def run_map(lab: Lab, *, force: bool = False) -> dict[tuple[str, str, int], Scores]:
    """Scores of every (set, method, layer) the profile asks for; each cached as it finishes."""
    plan = {f"{s}-{m}-L{l:02d}": {"set": s, "method": m, "layer": l}
            for s, methods in lab.cfg.map_methods.items() for m in methods
            for l in range(lab.n_layers)}

    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        ev = lab.evaluator(item["set"])
        return ev.evaluate(method_edit(item["method"], item["layer"])).to_dict()

    stored = lab.cache.for_each("importance_map", lab.key(), plan, compute, force=force,
                                progress=lab.progress)
    return {(plan[k]["set"], plan[k]["method"], plan[k]["layer"]): Scores.from_dict(v)
            for k, v in stored.items()}


# -- statistics --------------------------------------------------------------------------------
def bootstrap_weights(n: int, resamples: int, seed: int = 0) -> np.ndarray:
    """[resamples, n] counts of each sentence in a resample (sentences drawn with replacement)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)


def degradation_table(runs: dict[tuple[str, str, Any], Scores], bases: dict[str, Scores], *,
                      resamples: int, seed: int = 0,
                      names: tuple[str, str] = ("method", "layer")) -> pd.DataFrame:
    """One row per (set, method, layer) key: PPL, degradation % and its paired bootstrap 95 % CI
    (`names` renames the last two key columns)."""
    rows = []
    for set_name, base in bases.items():
        w = bootstrap_weights(len(base.nll), resamples, seed)
        tokens = w @ base.tokens
        base_b = np.exp(w @ base.nll / tokens)
        for (s, method, layer), sc in runs.items():
            if s != set_name:
                continue
            deg_b = 100 * (np.exp(w @ sc.nll / tokens) / base_b - 1)
            rows.append({
                "set": s, names[0]: method, names[1]: layer, "ppl": sc.ppl,
                "log10_ppl": math.log10(sc.ppl), "deg": 100 * (sc.ppl / base.ppl - 1),
                "lo": float(np.percentile(deg_b, 2.5)), "hi": float(np.percentile(deg_b, 97.5)),
                "deg_sentence_mean": 100 * (sc.mean_sentence_ppl / base.mean_sentence_ppl - 1),
                "base_ppl": base.ppl,
            })
    return pd.DataFrame(rows).sort_values(["set", *names]).reset_index(drop=True)


def classify(one_map: pd.DataFrame, n_layers: int) -> pd.Series:
    """The paper's classes by stated rules, for one (set, method) map indexed by layer.

    edge: layers 0 and L−1 (single-neighbour copy, a different operation); anti-layer: the
    bootstrap CI lies entirely below 0; connective: degradation < 30 %; critical core: ≥ 100 %
    inside the middle half of the stack [L/4, 3L/4); I/O: ≥ 30 % outside it; moderate: 30–100 %
    inside it (a class the paper does not name).
    """
    lo_mid, hi_mid = n_layers / 4, 3 * n_layers / 4
    out = {}
    for _, r in one_map.iterrows():
        l = int(r["layer"])
        middle = lo_mid <= l < hi_mid
        if l in (0, n_layers - 1):
            out[l] = "edge"
        elif r["hi"] < 0:
            out[l] = "anti-layer"
        elif r["deg"] < CONNECTIVE_MAX:
            out[l] = "connective"
        elif middle and r["deg"] >= CORE_MIN:
            out[l] = "critical core"
        elif middle:
            out[l] = "moderate"
        else:
            out[l] = "I/O"
    return pd.Series(out, name="class")


def inner(df: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """Rows of layers 1 … L−2 (both neighbours exist: the paper's headline range)."""
    return df[(df["layer"] >= 1) & (df["layer"] <= n_layers - 2)]


def range_statistic(runs: dict[tuple[str, str, int], Scores], base: Scores, set_name: str,
                    n_layers: int, *, method: str = "neighbour_average", resamples: int,
                    seed: int = 0) -> dict[str, Any]:
    """The "10^7 range" read as max |deg| / min |deg| over layers 1 … L−2, with its bootstrap
    spread, beside two well-posed summaries (span of log10 PPL, largest / median degradation)."""
    layers = list(range(1, n_layers - 1))
    nll = np.stack([runs[(set_name, method, l)].nll for l in layers])
    w = bootstrap_weights(len(base.nll), resamples, seed)
    tokens = w @ base.tokens
    deg_b = 100 * (np.exp((w @ nll.T) / tokens[:, None]) / np.exp(w @ base.nll / tokens)[:, None] - 1)
    deg = np.array([100 * (runs[(set_name, method, l)].ppl / base.ppl - 1) for l in layers])
    ratio = np.abs(deg).max() / np.abs(deg).min()
    ratio_b = np.abs(deg_b).max(1) / np.abs(deg_b).min(1)
    ppl = np.array([runs[(set_name, method, l)].ppl for l in layers])
    return {
        "set": set_name, "max_abs_deg": float(np.abs(deg).max()),
        "min_abs_deg": float(np.abs(deg).min()),
        "min_abs_layer": layers[int(np.abs(deg).argmin())],
        "log10_range": float(np.log10(ratio)),
        "log10_range_ci": [float(np.percentile(np.log10(ratio_b), q)) for q in (2.5, 97.5)],
        "log10_ppl_span": float(np.log10(ppl.max()) - np.log10(ppl.min())),
        "max_over_median_deg": float(np.abs(deg).max() / np.median(np.abs(deg))),
    }


@torch.no_grad()
def layer_similarity(lm: models.LoadedModel, evaluator) -> pd.DataFrame:
    """Per layer, from one forward pass: ShortGPT Block Influence 1 − E[cos(h_l, h_{l+1})] over
    every token, and Gromov et al.'s angular distance arccos(cos)/π at each sentence's last token
    (n = 1), with h_l the residual stream entering block l."""
    L = lm.n_layers
    cos_sum, tokens = np.zeros(L), 0
    ang_sum, sentences = np.zeros(L), 0
    for batch in evaluator.batches:
        hs, raw_last = models.forward_with_hidden(lm, batch.ids, batch.mask.to(lm.device))
        states = [*hs[:-1], raw_last]  # un-normalised residual stream after every block
        mask = batch.mask.to(lm.device).bool()
        last = batch.mask.sum(1) - 1
        rows = torch.arange(batch.ids.shape[0])
        for l in range(L):
            cos = torch.nn.functional.cosine_similarity(states[l].float(), states[l + 1].float(), dim=-1)
            cos_sum[l] += float(cos[mask].sum())
            ang_sum[l] += float(torch.arccos(cos[rows, last].clamp(-1, 1)).sum() / math.pi)
        tokens += int(mask.sum())
        sentences += len(rows)
    return pd.DataFrame({"layer": range(L), "block_influence": 1 - cos_sum / tokens,
                         "angular_distance": ang_sum / sentences})


def similarity(lab: Lab) -> pd.DataFrame:
    value = lab.cache.cached("layer_similarity", lab.key(set="E1"), lambda: layer_similarity(
        lab.lm, lab.evaluator("E1")).to_dict(orient="list"))
    return pd.DataFrame(value)


def anchors(table: pd.DataFrame, sim: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """Spearman ρ (layers 1 … L−2) of the neighbour-average map against removal-based metrics."""
    from scipy.stats import spearmanr

    rows = []
    for set_name, df in table.groupby("set"):
        wide = inner(df, n_layers).pivot(index="layer", columns="method", values="deg")
        s = sim.set_index("layer").loc[wide.index]
        others = {"skip (removal) degradation": wide.get("skip"),
                  "ShortGPT Block Influence": s["block_influence"],
                  "Gromov angular distance (n = 1)": s["angular_distance"]}
        for label, values in others.items():
            if values is None:
                continue
            with warnings.catch_warnings():  # constant inputs give NaN, not a warning in the book
                warnings.simplefilter("ignore")
                rho, p = spearmanr(wide["neighbour_average"], values)
            rows.append({"set": set_name, "compared with": label, "spearman_rho": float(rho),
                         "p_value": float(p), "layers": len(wide)})
    return pd.DataFrame(rows)


# -- the chapter in one call ------------------------------------------------------------------
def run(lab: Lab) -> dict[str, Any]:
    """Everything chapter 05 shows: the degradation table with classes, range statistics and
    the anchors. Cached item by item; a rerun after an interruption resumes."""
    runs = run_map(lab)
    bases = {s: lab.base(s) for s in lab.cfg.map_methods}
    table = degradation_table(runs, bases, resamples=lab.cfg.bootstrap)
    classes = []
    for (s, m), df in table.groupby(["set", "method"]):
        c = classify(df, lab.n_layers)
        classes.append(pd.DataFrame({"set": s, "method": m, "layer": c.index, "class": c.values}))
    table = table.merge(pd.concat(classes), on=["set", "method", "layer"])
    ranges = pd.DataFrame([range_statistic(runs, bases[s], s, lab.n_layers,
                                           resamples=lab.cfg.bootstrap) for s in bases])
    sim = similarity(lab)
    return {"table": table, "ranges": ranges, "similarity": sim,
            "anchors": anchors(table, sim, lab.n_layers), "bases": bases,
            "sets": pd.DataFrame(lab.describe_sets())}


def headline(table: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """The 30-row table of the spec (§4.4): per layer, both sets, neighbour average and skip."""
    df = table[table["method"].isin(["neighbour_average", "skip"])]
    wide = df.pivot_table(index="layer", columns=["set", "method"], values=["deg", "lo", "hi"])
    out = pd.DataFrame(index=wide.index)
    for s in sorted(df["set"].unique()):
        for m in ("neighbour_average", "skip"):
            out[f"{s} {m} deg %"] = wide[("deg", s, m)].round(1)
            out[f"{s} {m} 95% CI"] = [f"[{a:.1f}, {b:.1f}]" for a, b in
                                      zip(wide[("lo", s, m)], wide[("hi", s, m)])]
    cls = table[table["method"] == "neighbour_average"].pivot(index="layer", columns="set",
                                                             values="class")
    for s in cls.columns:
        out[f"{s} class"] = cls[s]
    return out


CHAPTER = "05_importance_map"
CORE_OPERATIONS = ("neighbour_average", "skip")  # the paper's operation, and removal


def range_rule(ranges: pd.DataFrame) -> str:
    """The range's bootstrap interval (log10) inside 10^6–10^8 on every set (strict)."""
    return claims.strict([claims.interval_rule(*r["log10_range_ci"], 6.0, 8.0)
                          for _, r in ranges.iterrows()])


def assess_range(ranges: pd.DataFrame, setting: str) -> claims.Claim:
    r = ranges.set_index("set")
    return claims.Claim(
        id="P2-C1-range", paper="P2", chapter=CHAPTER, statement=RANGE_CLAIM, paper_value="10^7",
        ours="; ".join(f"{s}: 10^{r.loc[s, 'log10_range']:.1f} (bootstrap 95 % "
                       f"10^{r.loc[s, 'log10_range_ci'][0]:.1f}–10^{r.loc[s, 'log10_range_ci'][1]:.1f})"
                       for s in r.index),
        rule="the bootstrap interval inside 10^6–10^8 on every set → reproduced; outside it on a "
             "set → not reproduced; straddling an edge → not testable (ill-posed: see the text)",
        verdict=range_rule(ranges), setting=setting)


def core_checks(table: pd.DataFrame, method: str, n_layers: int) -> dict[str, bool]:
    """P2-C1-core under one operation, per set: peak at L11, ≥ 3 of L8–11 classed core, no core
    layer outside L7–12."""
    one = inner(table[table["method"] == method], n_layers)
    checks = {}
    for s, df in one.groupby("set"):
        peak = int(df.loc[df["deg"].idxmax(), "layer"])
        members = set(df.loc[df["class"] == "critical core", "layer"].astype(int))
        checks[f"{method} {s}: peak at L11"] = peak == PAPER_PEAK
        checks[f"{method} {s}: ≥ 3 of L8–11 core"] = len(members & set(PAPER_CORE)) >= 3
        checks[f"{method} {s}: no core outside L7–12"] = all(7 <= l <= 12 for l in members)
    return checks


def core_rule(table: pd.DataFrame, n_layers: int) -> tuple[str, dict[str, str]]:
    """Reproduced when neighbour averaging and removal both find the core on every set; partly
    when neighbour averaging (the paper's operation) does and removal does not — the core then
    belongs to the operation, not only to the layers; not reproduced otherwise."""
    per_op = {m: claims.all_hold(core_checks(table, m, n_layers)) for m in CORE_OPERATIONS
              if m in set(table["method"])}
    if per_op.get("neighbour_average") != claims.REPRODUCED:
        return claims.NOT_REPRODUCED, per_op
    if per_op.get("skip") == claims.REPRODUCED:
        return claims.REPRODUCED, per_op
    return claims.PARTLY, per_op


def assess_core(table: pd.DataFrame, setting: str, n_layers: int) -> claims.Claim:
    verdict, per_op = core_rule(table, n_layers)
    shown = []
    for m in per_op:
        one = inner(table[table["method"] == m], n_layers)
        for s, df in one.groupby("set"):
            peak = int(df.loc[df["deg"].idxmax(), "layer"])
            core = sorted(df.loc[df["class"] == "critical core", "layer"].astype(int))
            deg = {l: float(df.loc[df["layer"] == l, "deg"].iloc[0]) for l in PAPER_CORE}
            shown.append(f"{m.replace('_', ' ')} {s}: peak L{peak}, core {core or 'none'} ("
                         + ", ".join(f"L{l} {v:+,.0f} %" for l, v in deg.items()) + ")")
    carried = ("carried by neighbour averaging alone: under removal the core is not found"
               if verdict == claims.PARTLY else "")
    return claims.Claim(
        id="P2-C1-core", paper="P2", chapter=CHAPTER, statement=LAYER_CLAIMS["P2-C1-core"],
        paper_value="core L8–11, peak L11",
        ours="; ".join(shown) + (f" — {carried}" if carried else ""),
        rule="per operation: peak at L11, ≥ 3 of L8–11 classed core (≥ 100 % in the middle half) "
             "and none outside L7–12, on every set; both neighbour averaging and removal → "
             "reproduced; neighbour averaging only → partly; otherwise not reproduced",
        verdict=verdict, setting=setting, numbers={"per_operation": per_op})


def peak_size_rule(table: pd.DataFrame) -> str:
    """L11's neighbour-average degradation: its bootstrap CI within a factor of 10 of the
    paper's on every set (log10 band ±1)."""
    nb = table[(table["method"] == "neighbour_average") & (table["layer"] == PAPER_PEAK)]
    band = (math.log10(PAPER_PEAK_DEG) - 1, math.log10(PAPER_PEAK_DEG) + 1)
    return claims.strict([claims.interval_rule(math.log10(max(r["lo"], 1e-9)),
                                               math.log10(max(r["hi"], 1e-9)), *band)
                          for _, r in nb.iterrows()])


def assess_peak_size(table: pd.DataFrame, setting: str) -> claims.Claim:
    nb = table[(table["method"] == "neighbour_average") & (table["layer"] == PAPER_PEAK)]
    return claims.Claim(
        id="P2-C1-peak-size", paper="P2", chapter=CHAPTER,
        statement=LAYER_CLAIMS["P2-C1-peak-size"], paper_value="+63,419 %",
        ours="; ".join(f"{r['set']}: {r['deg']:+,.0f} % [{r['lo']:+,.0f}, {r['hi']:+,.0f}]"
                       for _, r in nb.iterrows()),
        rule="the bootstrap CI within a factor of 10 of the paper's (|log10(ours / paper)| ≤ 1) "
             "on every set; disjoint from that band → not reproduced; straddling → not testable",
        verdict=peak_size_rule(table), setting=setting)


def anti_rule(table: pd.DataFrame) -> str:
    """Each claimed anti-layer on each set: CI below 0 → holds; CI above 0 → fails; CI across
    0 → not testable (the paper's −0.6 % is within the noise of ten sentences)."""
    nb = table[(table["method"] == "neighbour_average") & table["layer"].isin(PAPER_ANTI)]
    return claims.strict([claims.REPRODUCED if r["hi"] < 0 else
                          claims.NOT_REPRODUCED if r["lo"] > 0 else claims.NOT_TESTABLE
                          for _, r in nb.iterrows()])


def assess_anti(table: pd.DataFrame, setting: str) -> claims.Claim:
    nb = table[(table["method"] == "neighbour_average") & table["layer"].isin(PAPER_ANTI)]
    return claims.Claim(
        id="P2-C1-anti-layers", paper="P2", chapter=CHAPTER,
        statement=LAYER_CLAIMS["P2-C1-anti-layers"], paper_value="L14, L17 at −0.6 %",
        ours="; ".join(f"L{int(r['layer'])} {r['set']} {r['deg']:+.1f} % [{r['lo']:+.1f}, "
                       f"{r['hi']:+.1f}]" for _, r in nb.sort_values(["layer", "set"]).iterrows()),
        rule="for each layer and set: CI entirely below 0 holds, entirely above fails, across 0 is "
             "not testable; all hold → reproduced; any fails → not reproduced",
        verdict=anti_rule(table), setting=setting)


def io_checks(table: pd.DataFrame) -> dict[str, bool]:
    checks = {}
    for s, df in table[table["method"] == "neighbour_average"].groupby("set"):
        cls = df.set_index("layer")["class"]
        checks[f"{s}: L1–2 are I/O"] = all(cls[l] == "I/O" for l in (1, 2))
        checks[f"{s}: ≥ 4 of L23–28 are I/O"] = sum(cls[l] == "I/O" for l in range(23, 29)) >= 4
    return checks


def assess_io(table: pd.DataFrame, setting: str, n_layers: int) -> claims.Claim:
    nb_in = inner(table[table["method"] == "neighbour_average"], n_layers)
    io = {s: sorted(df.loc[df["class"] == "I/O", "layer"].astype(int)) for s, df in nb_in.groupby("set")}
    checks = io_checks(table)
    return claims.Claim(
        id="P2-C1-io-layers", paper="P2", chapter=CHAPTER, statement=LAYER_CLAIMS["P2-C1-io-layers"],
        paper_value="I/O L1–2, L23–28", ours="; ".join(f"{s}: I/O {v}" for s, v in io.items()),
        rule="L1–2 and ≥ 4 of L23–28 classed I/O (≥ 30 % outside the middle half) on every set; "
             "all → reproduced, otherwise not reproduced",
        verdict=claims.all_hold(checks), setting=setting, numbers={"io": io, "checks": checks})


def assess(result: dict[str, Any], setting: str, n_layers: int) -> list[claims.Claim]:
    """Verdicts on C1: the range, core and peak, anti-layers, the I/O and connective classes."""
    found = [assess_range(result["ranges"], setting)]
    if n_layers != PAPER_LAYERS:  # the claims name layers of SmolLM2's 30-layer stack
        return found + [not_testable(cid, setting, n_layers) for cid in LAYER_CLAIMS]
    t = result["table"]
    return found + [assess_core(t, setting, n_layers), assess_peak_size(t, setting),
                    assess_anti(t, setting), assess_io(t, setting, n_layers)]


def core_by_operation(table: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """Degradation % of L7–12 (every inner layer of a smaller model) under neighbour averaging and
    removal, per set, with each operation's rank of the layer among layers 1 … L−2 (1 = most
    damaging)."""
    rows = []
    shown = [l for l in range(7, 13) if 1 <= l <= n_layers - 2] or list(range(1, n_layers - 1))
    for (s, m), df in inner(table[table["method"].isin(CORE_OPERATIONS)], n_layers).groupby(["set", "method"]):
        rank = df.set_index("layer")["deg"].rank(ascending=False).astype(int)
        for l in shown:
            r = df[df["layer"] == l].iloc[0]
            rows.append({"set": s, "operation": m, "layer": l, "deg %": round(float(r["deg"]), 1),
                         "rank": int(rank[l]), "class": r["class"]})
    return pd.DataFrame(rows).pivot_table(index="layer", columns=["set", "operation"],
                                          values=["deg %", "rank"], aggfunc="first")


def base_line(bases: dict[str, Scores]) -> str:
    """The unedited model's perplexity on each set beside the paper's (its ten sentences)."""
    ours = "; ".join(f"{s} {b.ppl:.2f}" for s, b in bases.items())
    return (f"base perplexity: {ours} (paper reported {paper.P2_BASE_PPL.value:.2f} on its own ten "
            "sentences, not published)")


def not_testable(cid: str, setting: str, n_layers: int) -> claims.Claim:
    """A layer-naming claim on a model without SmolLM2's 30 layers (the smoke model)."""
    return claims.Claim(
        id=cid, paper="P2", chapter=CHAPTER, statement=LAYER_CLAIMS[cid],
        paper_value="SmolLM2-135M layers", ours=f"model has {n_layers} layers",
        rule=f"needs a {PAPER_LAYERS}-layer model", verdict=claims.NOT_TESTABLE, setting=setting)


def anchor_points(table: pd.DataFrame, sim: pd.DataFrame, set_name: str, n_layers: int) -> pd.DataFrame:
    """Per inner layer: neighbour-average degradation beside Block Influence and angular distance."""
    nb = inner(table[(table["method"] == "neighbour_average") & (table["set"] == set_name)], n_layers)
    out = nb[["layer", "deg"]].merge(sim, on="layer")
    return out.assign(abs_deg=out["deg"].abs().clip(lower=1e-3))


def sign_agreement(table: pd.DataFrame, layers: tuple[int, ...] = PAPER_ANTI) -> pd.DataFrame:
    """Degradation and CI of the claimed anti-layers under every method and set."""
    df = table[table["layer"].isin(layers)]
    return df[["layer", "set", "method", "deg", "lo", "hi", "class"]].round(2).sort_values(
        ["layer", "set", "method"]).reset_index(drop=True)


def describe_sets(sets: pd.DataFrame) -> str:
    """One line per evaluation set, for provenance blocks."""
    return "; ".join(f"{r['set']}: {r['sentences']} sentences, {r['predicted_tokens']} tokens "
                     f"({r['source']})" for _, r in sets.iterrows())
