"""Chapter 05's numerics (also used by chapter 06's strategies, chapter 07's predictability and
the report's page): the map's methods as edits (`METHODS`, `method_edit`), degradation % with a
paired bootstrap over sentences, or over documents (`bootstrap_weights`, `degradation_table`),
the class rules (`classify`, `with_classes`; thresholds `CONNECTIVE_MAX`, `CORE_MIN`), the
inner layers (`inner`), the "10^7 range" (`range_statistic`) and the removal-based anchors
(`layer_similarity`, `anchors`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch

from layerlab import models
from layerlab.anatomy import edits
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.evaluator import Scores

__all__ = ["METHODS", "CONNECTIVE_MAX", "CORE_MIN", "method_edit", "bootstrap_weights",
           "degradation_table", "classify", "inner", "range_statistic", "layer_similarity",
           "anchors", "with_classes", "map_tables"]


# method -> (edit kind, tensor group); "neighbour_average" is the paper's operation
METHODS: dict[str, tuple[str, str | None]] = {
    "neighbour_average": ("neighbour_average", "all"),
    "neighbour_average_linear": ("neighbour_average", "linear"),
    "skip": ("skip", None),
    "mean_of_others": ("mean_of_others", "all"),
    "neighbour_average_attention": ("neighbour_average", "attention"),
    "neighbour_average_mlp": ("neighbour_average", "mlp"),
}
# degradation % thresholds of the class rules, the same numbers as the claims' bands
# (`layerlab.anatomy.declarations`): connective below the summary's 30 %, critical core ≥ 100 %
CONNECTIVE_MAX = DECLARATIONS["P2-C1-io-layers"].band.lo
CORE_MIN = DECLARATIONS["P2-C1-core"].band.lo


def method_edit(method: str, layer: int) -> edits.Edit:
    """The edit one map method (a key of `METHODS`) makes at `layer`: its edit kind on its
    tensor group, e.g. `neighbour_average_mlp` averages only the MLP's linear weights."""
    kind, group = METHODS[method]
    return edits.edit(kind, layer, group=group)


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


# -- the classes of every map ---------------------------------------------------------------------
def with_classes(table: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """The degradation table with each (set, method) map's classes (`classify`) merged in."""
    classes = []
    for (s, m), df in table.groupby(["set", "method"]):
        c = classify(df, n_layers)
        classes.append(pd.DataFrame({"set": s, "method": m, "layer": c.index, "class": c.values}))
    return table.merge(pd.concat(classes), on=["set", "method", "layer"])


def map_tables(runs: dict[tuple[str, str, int], Scores], bases: dict[str, Scores], n_layers: int,
               *, resamples: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A map's degradation table with classes, and its range statistic per set (`bases`' sets):
    what chapter 05 reads from the stand-in and from each of its dithered copies."""
    table = with_classes(degradation_table(runs, bases, resamples=resamples), n_layers)
    ranges = pd.DataFrame([range_statistic(runs, bases[s], s, n_layers, resamples=resamples)
                           for s in bases])
    return table, ranges
