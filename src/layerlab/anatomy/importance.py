"""Chapter 05: P2's layer importance map (research/paper2.md §4), its controls and anchors.

Every method replaces or removes one layer at a time and measures the perplexity of E0 and E1;
degradation % = (PPL_edited / PPL_base − 1) × 100, with a paired bootstrap over sentences.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch

from layerlab import claims, models, paper
from layerlab.anatomy import edits
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.anatomy.lab import Lab

__all__ = ["CHAPTER", "CONNECTIVE_MAX", "CORE_MIN", "CORE_OPERATIONS", "ESTIMATE_COLUMNS",
           "LAYER_CLAIMS", "METHODS", "PAPER_ANTI", "PAPER_CORE", "PAPER_LAYERS", "PAPER_PEAK",
           "UNTRAINED_METHODS", "anchor_points", "anchors", "anti_estimate", "anti_units",
           "assess", "assess_anti", "assess_core", "assess_io", "assess_peak_size", "assess_range",
           "base_line", "bootstrap_weights", "classify", "core_by_operation", "core_estimate",
           "core_units", "degradation_table", "describe_sets", "headline", "inner", "io_estimate",
           "io_layers", "io_units", "kth_largest", "layer_estimate", "layer_similarity",
           "log10_estimate", "method_edit", "not_testable", "outside_core", "peak_margin",
           "peak_size_units", "range_statistic", "range_units", "run", "run_map", "sign_agreement",
           "similarity", "the_rest", "untrained_map", "with_classes"]

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
PAPER_PEAK = paper.P2_PEAK_LAYER.value
PAPER_ANTI = paper.P2_ANTI_LAYERS.value
PAPER_LAYERS = paper.P2_N_LAYERS.value
LAYER_CLAIMS = ("P2-C1-core", "P2-C1-peak-size", "P2-C1-anti-layers", "P2-C1-io-layers")
# degradation % thresholds of the class rules, the same numbers as the claims' bands
# (`layerlab.anatomy.declarations`): connective below the summary's 30 %, critical core ≥ 100 %
CONNECTIVE_MAX = DECLARATIONS["P2-C1-io-layers"].band.lo
CORE_MIN = DECLARATIONS["P2-C1-core"].band.lo


def method_edit(method: str, layer: int) -> edits.Edit:
    """The edit one map method (a key of `METHODS`) makes at `layer`: its edit kind on its
    tensor group, e.g. `neighbour_average_mlp` averages only the MLP's linear weights."""
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
def bootstrap_weights(n: int, resamples: int, seed: int = 0,
                      units: np.ndarray | None = None) -> np.ndarray:
    """[resamples, n] counts of each sentence in a resample: sentences drawn with replacement,
    or, given each sentence's document (`units`), documents drawn with replacement and every
    sentence of a drawn document counted as often as its document (a cluster bootstrap: the
    sentences of one article are not independent)."""
    rng = np.random.default_rng(seed)
    if units is None:
        return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
    units = np.asarray(units)
    if len(units) != n:
        raise ValueError(f"{len(units)} units for {n} sentences")
    labels, index = np.unique(units, return_inverse=True)
    m = len(labels)
    counts = rng.multinomial(m, np.full(m, 1.0 / m), size=resamples).astype(np.float64)
    return counts[:, index]


def degradation_table(runs: dict[tuple[str, str, Any], Scores], bases: dict[str, Scores], *,
                      resamples: int, seed: int = 0,
                      names: tuple[str, str] = ("method", "layer")) -> pd.DataFrame:
    """One row per (set, method, layer) key: PPL, degradation % and its paired bootstrap 95 % CI
    (`names` renames the last two key columns)."""
    rows = []
    for set_name, base in bases.items():
        w = bootstrap_weights(len(base.nll), resamples, seed, base.units)
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
    w = bootstrap_weights(len(base.nll), resamples, seed, base.units)
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
    """`layer_similarity` on E1, cached: the removal-based metrics (Block Influence, angular
    distance) that `anchors` ranks the map against."""
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
def with_classes(table: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """The degradation table with each (set, method) map's classes (`classify`) merged in."""
    classes = []
    for (s, m), df in table.groupby(["set", "method"]):
        c = classify(df, n_layers)
        classes.append(pd.DataFrame({"set": s, "method": m, "layer": c.index, "class": c.values}))
    return table.merge(pd.concat(classes), on=["set", "method", "layer"])


def run(lab: Lab, *, untrained: bool = False) -> dict[str, Any]:
    """Everything chapter 05 shows: the degradation table with classes, range statistics and
    the anchors; with `untrained`, also the untrained twin's map (the layer claims' negative
    control, `untrained_map`). Cached item by item; a rerun after an interruption resumes."""
    runs = run_map(lab)
    bases = {s: lab.base(s) for s in lab.cfg.map_methods}
    table = with_classes(degradation_table(runs, bases, resamples=lab.cfg.bootstrap), lab.n_layers)
    ranges = pd.DataFrame([range_statistic(runs, bases[s], s, lab.n_layers,
                                           resamples=lab.cfg.bootstrap) for s in bases])
    sim = similarity(lab)
    out = {"table": table, "ranges": ranges, "similarity": sim,
           "anchors": anchors(table, sim, lab.n_layers), "bases": bases,
           "sets": pd.DataFrame(lab.describe_sets())}
    if untrained:
        # on the sets cheap enough for per-layer sweeps (`single_sets`: E0 on two cores, both
        # on a GPU); a set without the twin's map leaves its units' control not measured
        out["untrained"] = untrained_map(lab, sets=tuple(lab.cfg.single_sets))
    return out


UNTRAINED_METHODS = ("neighbour_average", "skip")  # the operations the layer claims read


def untrained_map(lab: Lab, *, seed: int = 0, force: bool = False,
                  sets: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The negative control of the layer claims: the same map (neighbour averaging and removal,
    every layer) on the untrained twin (`models.untrained_twin`: the same config at random
    initialisation) on `sets` (default: the map's sets), as a degradation table with classes.
    Cached item by item."""
    sets = list(sets or lab.cfg.map_methods)
    held: dict[str, Any] = {}

    def evaluator(name: str):
        if name not in held:
            if "twin" not in held:
                held["twin"] = models.untrained_twin(lab.lm, seed=seed)
            held[name] = Evaluator(held["twin"], lab.evalset(name),
                                   batch_tokens=lab.cfg.batch_tokens, progress=lab.progress)
        return held[name]

    plan: dict[str, dict[str, Any]] = {f"{s}-base": {"set": s, "method": None, "layer": None}
                                       for s in sets}
    plan.update({f"{s}-{m}-L{l:02d}": {"set": s, "method": m, "layer": l}
                 for s in sets for m in UNTRAINED_METHODS for l in range(lab.n_layers)})

    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        ev = evaluator(item["set"])
        if item["method"] is None:
            return ev.base().to_dict()
        return ev.evaluate(method_edit(item["method"], item["layer"])).to_dict()

    stored = lab.cache.for_each("importance_map", lab.key(reads_e1="E1" in sets, twin="untrained", seed=seed), plan,
                                compute, force=force, progress=lab.progress)
    bases = {s: Scores.from_dict(stored[f"{s}-base"]) for s in sets}
    runs = {(it["set"], it["method"], it["layer"]): Scores.from_dict(stored[k])
            for k, it in plan.items() if it["method"] is not None}
    return with_classes(degradation_table(runs, bases, resamples=lab.cfg.bootstrap), lab.n_layers)


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
ESTIMATE_COLUMNS = ("deg", "lo", "hi")  # point and 95 % interval of each row


def _rows(table: pd.DataFrame, set_name: str, method: str, layers) -> pd.DataFrame:
    df = table[(table["set"] == set_name) & (table["method"] == method)]
    return df[df["layer"].isin(list(layers))]


def layer_estimate(rows: pd.DataFrame, stat, need: int = 1) -> claims.Estimate | None:
    """`stat` (a function of the layers' degradations, non-decreasing in each) at the point and
    at the layers' lower and upper interval ends; None with fewer than `need` layers."""
    if len(rows) < need:
        return None
    return claims.Estimate(*(float(stat(rows[c].to_numpy(dtype=float))) for c in ESTIMATE_COLUMNS))


def kth_largest(k: int):
    """A `layer_estimate` statistic: the k-th largest value (k = 3 of L8–11 reads "at least
    three of four layers"); non-decreasing in each value, as `layer_estimate` needs."""
    return lambda x: np.sort(x)[-k]


def _log10_or_minus_inf(v: float) -> float:
    return math.log10(v) if v > 0 else -math.inf


def log10_estimate(e: claims.Estimate | None) -> claims.Estimate | None:
    """An estimate of positive degradations on the log10 scale (a non-positive end gives −∞);
    None when even the upper end is not positive."""
    if e is None or not e.hi > 0:
        return None
    return claims.Estimate(*(_log10_or_minus_inf(v) for v in (e.point, e.lo, e.hi)))


def _sets(table: pd.DataFrame) -> list[str]:
    return sorted(set(table.loc[table["method"] == "neighbour_average", "set"]))


def _text(e: claims.Estimate | None, fmt: str = "+,.0f", unit: str = " %") -> str:
    return "n/a" if e is None else f"{e.point:{fmt}}{unit} [{e.lo:{fmt}}, {e.hi:{fmt}}]"


def _interval(e: claims.Estimate | None) -> list[float] | None:
    return None if e is None else [e.point, e.lo, e.hi]


def _decided(claim_id: str, units: list[claims.Unit], *, ours: str, setting: str,
             numbers: dict[str, Any] | None = None,
             stand_in: pd.DataFrame | None = None) -> claims.Claim:
    """The one decision procedure (`claims.decide`) on the claim's declaration and units; with
    `stand_in` (`precision.margins`), a claim the 4-bit stand-in cannot resolve fails its
    precondition in every unit (VERDICTS.md §4)."""
    decl = DECLARATIONS[claim_id]
    if stand_in is not None and claim_id in stand_in.index and not stand_in.loc[claim_id, "resolved"]:
        r = stand_in.loc[claim_id]
        distance = float(r["distance to the band's edge"])
        note = (f"stand-in precision: its own rounding moves {r['statistic']} by "
                f"{r['movement']:.3g}, more than its distance to the band's edge "
                f"({distance:.3g})")
        units = [dataclasses.replace(u, precondition=u.precondition or note) for u in units]
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


# -- P2-C1-range --------------------------------------------------------------------------------
def range_units(ranges: pd.DataFrame) -> list[claims.Unit]:
    """One unit per set: log10(max |deg| / min |deg|) with its bootstrap interval over sentences
    (the whole map resampled at once)."""
    units = []
    for _, r in ranges.sort_values("set").iterrows():
        point, (lo, hi) = float(r["log10_range"]), (float(v) for v in r["log10_range_ci"])
        ok = all(math.isfinite(v) for v in (point, lo, hi))
        units.append(claims.Unit(
            name=str(r["set"]), primary=claims.Estimate(point, lo, hi) if ok else None,
            precondition=None if ok else "an inner layer at exactly 0 %: the ratio is undefined"))
    return units


def assess_range(ranges: pd.DataFrame, setting: str) -> claims.Claim:
    """P2-C1-range (the "10^7 range") decided on `range_units`; `ranges` is `run`'s table, and
    the wording adds the two well-posed summaries when it has them."""
    r = ranges.set_index("set")
    return _decided(
        "P2-C1-range", range_units(ranges),
        ours="; ".join(f"{s}: 10^{r.loc[s, 'log10_range']:.1f} (bootstrap 95 % "
                       f"10^{r.loc[s, 'log10_range_ci'][0]:.1f}–10^{r.loc[s, 'log10_range_ci'][1]:.1f}"
                       + (f"; log10 PPL span {r.loc[s, 'log10_ppl_span']:.2f}, largest / median "
                          f"{r.loc[s, 'max_over_median_deg']:,.0f}×" if "log10_ppl_span" in r
                          else "") + ")" for s in r.index),
        setting=setting,
        numbers={"log10_range": {s: float(r.loc[s, "log10_range"]) for s in r.index},
                 "log10_range_ci": {s: [float(v) for v in r.loc[s, "log10_range_ci"]]
                                    for s in r.index}})


# -- P2-C1-core ---------------------------------------------------------------------------------
def core_estimate(table: pd.DataFrame, set_name: str, method: str) -> claims.Estimate | None:
    """The third-largest degradation among L8–11 under one operation (≥ 3 of 4 critical)."""
    return layer_estimate(_rows(table, set_name, method, PAPER_CORE), kth_largest(3),
                          need=len(PAPER_CORE))


def peak_margin(table: pd.DataFrame, set_name: str, n_layers: int) -> claims.Estimate | None:
    """L11's neighbour-average degradation minus the largest other inner layer's, in %."""
    one = inner(table[(table["set"] == set_name) & (table["method"] == "neighbour_average")],
                n_layers).set_index("layer")
    if PAPER_PEAK not in one.index or len(one) < 2:
        return None
    peak, others = one.loc[PAPER_PEAK], one.drop(index=PAPER_PEAK)
    return claims.Estimate(float(peak["deg"] - others["deg"].max()),
                           float(peak["lo"] - others["hi"].max()),
                           float(peak["hi"] - others["lo"].max()))


def outside_core(n_layers: int) -> list[int]:
    """The middle half's layers (where the class rule can call a layer core) outside L7–12."""
    lo, hi = min(PAPER_CORE) - 1, max(PAPER_CORE) + 1
    return [l for l in range(n_layers) if n_layers / 4 <= l < 3 * n_layers / 4
            and not lo <= l <= hi]


def core_units(table: pd.DataFrame, n_layers: int,
               control: pd.DataFrame | None = None) -> list[claims.Unit]:
    """P2-C1-core, one unit per set: the third-largest neighbour-average degradation of L8–11,
    the untrained twin's through the same band (None: not measured), and the secondaries (peak
    at L11, no core elsewhere in the middle half, the core under removal)."""
    units = []
    for s in _sets(table):
        est = core_estimate(table, s, "neighbour_average")
        sec = {"peak at L11": peak_margin(table, s, n_layers),
               "no core elsewhere": layer_estimate(
                   _rows(table, s, "neighbour_average", outside_core(n_layers)), np.max),
               "under removal": core_estimate(table, s, "skip")}
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else "L8–11 are not all in the map",
            control=None if control is None else core_estimate(control, s, "neighbour_average"),
            secondary={k: v for k, v in sec.items() if v is not None}))
    return units


def assess_core(table: pd.DataFrame, setting: str, n_layers: int,
                control: pd.DataFrame | None = None, *,
                stand_in: pd.DataFrame | None = None) -> claims.Claim:
    """P2-C1-core decided on `core_units`; the wording gives each operation's peak, core layers
    and L8–11's degradations per set. `control` (`untrained_map`) and `stand_in` as in
    `assess`."""
    units = core_units(table, n_layers, control)
    shown = []
    for m in [m for m in CORE_OPERATIONS if m in set(table["method"])]:
        for s, df in inner(table[table["method"] == m], n_layers).groupby("set"):
            peak = int(df.loc[df["deg"].idxmax(), "layer"])
            core = sorted(df.loc[df["class"] == "critical core", "layer"].astype(int))
            deg = {l: float(df.loc[df["layer"] == l, "deg"].iloc[0]) for l in PAPER_CORE}
            shown.append(f"{m.replace('_', ' ')} {s}: peak L{peak}, core {core or 'none'} ("
                         + ", ".join(f"L{l} {v:+,.0f} %" for l, v in deg.items()) + ")")
    third = "; ".join(f"{u.name} {_text(u.primary)}" + (
        f", untrained twin {_text(u.control)}" if u.control is not None else "") for u in units)
    return _decided(
        "P2-C1-core", units,
        ours="; ".join(shown) + f" — third-largest of L8–11 (neighbour average): {third}",
        setting=setting,
        numbers={u.name: {"primary": _interval(u.primary), "control": _interval(u.control),
                          **{k: _interval(v) for k, v in u.secondary.items()}} for u in units},
        stand_in=stand_in)


# -- P2-C1-peak-size ----------------------------------------------------------------------------
def peak_size_units(table: pd.DataFrame) -> list[claims.Unit]:
    """One unit per set: log10 of the largest neighbour-average degradation among L8–11."""
    units = []
    for s in _sets(table):
        rows = _rows(table, s, "neighbour_average", PAPER_CORE)
        est = log10_estimate(layer_estimate(rows, np.max, need=len(PAPER_CORE)))
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else
            "L8–11 not all in the map, or none of them degrades perplexity (no logarithm)"))
    return units


def assess_peak_size(table: pd.DataFrame, setting: str, *,
                     stand_in: pd.DataFrame | None = None) -> claims.Claim:
    """P2-C1-peak-size (+63,419 % at L11) decided on `peak_size_units`; the wording names the
    layer of L8–11 that degrades most in each set. `stand_in` as in `assess`."""
    shown = {}
    for s in _sets(table):
        rows = _rows(table, s, "neighbour_average", PAPER_CORE)
        if len(rows):
            top = rows.loc[rows["deg"].idxmax()]
            shown[s] = (int(top["layer"]), layer_estimate(rows, np.max))
    return _decided(
        "P2-C1-peak-size", peak_size_units(table),
        ours="; ".join(f"{s}: L{l} {_text(e)}" for s, (l, e) in shown.items()),
        setting=setting,
        numbers={s: {"layer": l, "deg": _interval(e)} for s, (l, e) in shown.items()},
        stand_in=stand_in)


# -- P2-C1-anti-layers --------------------------------------------------------------------------
def anti_estimate(table: pd.DataFrame, set_name: str, method: str) -> claims.Estimate | None:
    """The larger of L14's and L17's degradation under one operation (both must be below 0)."""
    return layer_estimate(_rows(table, set_name, method, PAPER_ANTI), np.max,
                          need=len(PAPER_ANTI))


def anti_units(table: pd.DataFrame, control: pd.DataFrame | None = None) -> list[claims.Unit]:
    """P2-C1-anti-layers, one unit per set: `anti_estimate` under neighbour averaging, the
    untrained twin's as control (None: not measured), and the same under removal as a secondary."""
    units = []
    for s in _sets(table):
        est = anti_estimate(table, s, "neighbour_average")
        removal = anti_estimate(table, s, "skip")
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else "L14 and L17 are not both in the map",
            control=None if control is None else anti_estimate(control, s, "neighbour_average"),
            secondary={} if removal is None else {"under removal": removal}))
    return units


def assess_anti(table: pd.DataFrame, setting: str,
                control: pd.DataFrame | None = None, *,
                stand_in: pd.DataFrame | None = None) -> claims.Claim:
    """P2-C1-anti-layers decided on `anti_units`; the wording gives L14's and L17's degradation
    and CI under both operations in every set. `control` and `stand_in` as in `assess`."""
    df = table[table["method"].isin(CORE_OPERATIONS) & table["layer"].isin(PAPER_ANTI)]
    units = anti_units(table, control)
    return _decided(
        "P2-C1-anti-layers", units,
        ours="; ".join(f"L{int(r['layer'])} {r['set']} {r['method'].replace('_', ' ')} "
                       f"{r['deg']:+.1f} % [{r['lo']:+.1f}, {r['hi']:+.1f}]"
                       for _, r in df.sort_values(["method", "layer", "set"]).iterrows())
             + "".join(f"; untrained twin {u.name} {_text(u.control, '+.1f')}"
                       for u in units if u.control is not None),
        setting=setting,
        numbers={u.name: {"primary": _interval(u.primary), "control": _interval(u.control),
                          **{k: _interval(v) for k, v in u.secondary.items()}} for u in units},
        stand_in=stand_in)


# -- P2-C1-io-layers ----------------------------------------------------------------------------
def io_layers(n_layers: int) -> tuple[list[int], list[int]]:
    """The summary's input (L1–2) and output (L23–28) layers."""
    named = [int(l) for l in paper.P2_IO_LAYERS.value]
    return [l for l in named if l < n_layers / 2], [l for l in named if l >= n_layers / 2]


def io_estimate(table: pd.DataFrame, set_name: str, n_layers: int) -> claims.Estimate | None:
    """min(both input layers, the fourth-largest output layer) under neighbour averaging."""
    inputs, outputs = io_layers(n_layers)
    a = layer_estimate(_rows(table, set_name, "neighbour_average", inputs), np.min,
                       need=len(inputs))
    b = layer_estimate(_rows(table, set_name, "neighbour_average", outputs), kth_largest(4),
                       need=len(outputs))
    if a is None or b is None:
        return None
    return claims.Estimate(min(a.point, b.point), min(a.lo, b.lo), min(a.hi, b.hi))


def the_rest(n_layers: int) -> list[int]:
    """Inner layers that are neither the named core nor the named I/O layers."""
    inputs, outputs = io_layers(n_layers)
    return [l for l in range(1, n_layers - 1) if l not in {*PAPER_CORE, *inputs, *outputs}]


def io_units(table: pd.DataFrame, n_layers: int,
             control: pd.DataFrame | None = None) -> list[claims.Unit]:
    """P2-C1-io-layers, one unit per set: `io_estimate`, the untrained twin's as control, and
    as a secondary the largest degradation of `the_rest` (connective: below `CONNECTIVE_MAX`)."""
    units = []
    for s in _sets(table):
        est = io_estimate(table, s, n_layers)
        rest = layer_estimate(_rows(table, s, "neighbour_average", the_rest(n_layers)), np.max)
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else "L1–2 and L23–28 are not all in the map",
            control=None if control is None else io_estimate(control, s, n_layers),
            secondary={} if rest is None else {"the rest connective": rest}))
    return units


def assess_io(table: pd.DataFrame, setting: str, n_layers: int,
              control: pd.DataFrame | None = None, *,
              stand_in: pd.DataFrame | None = None) -> claims.Claim:
    """P2-C1-io-layers decided on `io_units`; the wording lists, per set, the layers the class
    rule calls I/O and any other layer at or above `CONNECTIVE_MAX` (30 %). `control` and
    `stand_in` as in `assess`."""
    nb_in = inner(table[table["method"] == "neighbour_average"], n_layers)
    io = {s: sorted(df.loc[df["class"] == "I/O", "layer"].astype(int))
          for s, df in nb_in.groupby("set")}
    rest = set(the_rest(n_layers))
    above = {s: sorted(int(l) for l in df.loc[df["layer"].isin(rest)
                                              & (df["deg"] >= CONNECTIVE_MAX), "layer"])
             for s, df in nb_in.groupby("set")}
    units = io_units(table, n_layers, control)
    return _decided(
        "P2-C1-io-layers", units,
        ours="; ".join(f"{u.name}: I/O {io.get(u.name, [])}, weakest named I/O "
                       f"{_text(u.primary, '+,.1f')}; other layers ≥ {CONNECTIVE_MAX:g} %: "
                       f"{above.get(u.name) or 'none'}"
                       + (f"; untrained twin {_text(u.control, '+,.1f')}"
                          if u.control is not None else "") for u in units),
        setting=setting,
        numbers={"io": io, "rest_above_connective": above,
                 **{u.name: {"primary": _interval(u.primary), "control": _interval(u.control),
                             **{k: _interval(v) for k, v in u.secondary.items()}}
                    for u in units}},
        stand_in=stand_in)


def assess(result: dict[str, Any], setting: str, n_layers: int, *,
           stand_in: pd.DataFrame | None = None) -> list[claims.Claim]:
    """Verdicts on C1: the range, core and peak, anti-layers, the I/O and connective classes.
    The untrained twin's map (`result["untrained"]`, when `run` was asked for it) is the layer
    claims' negative control; without it they read 'control: not measured' where it matters.
    `stand_in` (`precision.margins`): a layer claim the 4-bit stand-in's own rounding can move
    across its band's edge is not testable (stand-in precision)."""
    found = [assess_range(result["ranges"], setting)]
    if n_layers != PAPER_LAYERS:  # the claims name layers of SmolLM2's 30-layer stack
        return found + [not_testable(cid, setting, n_layers) for cid in LAYER_CLAIMS]
    t, control = result["table"], result.get("untrained")
    return found + [assess_core(t, setting, n_layers, control, stand_in=stand_in),
                    assess_peak_size(t, setting, stand_in=stand_in),
                    assess_anti(t, setting, control, stand_in=stand_in),
                    assess_io(t, setting, n_layers, control, stand_in=stand_in)]


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
    """A layer-naming claim on a model without SmolLM2's 30 layers (the smoke model): its
    precondition fails."""
    unit = claims.Unit(name="model", primary=None,
                       precondition=f"the model has {n_layers} layers; the claim names layers of "
                                    f"SmolLM2-135M's {PAPER_LAYERS}")
    return _decided(cid, [unit], ours=f"model has {n_layers} layers", setting=setting)


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
