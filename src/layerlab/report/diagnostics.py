"""The report's measurements, one function per step; each returns plain JSON-able data and is
stored by `build` as soon as it finishes. Every statistic is the book's own code (hidden,
geometry, lens, clusters, importance, strategies, weights), run on one model and its
untrained twin.

Used by `layerlab report` and chapter 12.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from layerlab import hidden, models, results
from layerlab.anatomy import edits, importance, strategies
from layerlab.anatomy import weights as w
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.depth import clusters, geometry, lens
from layerlab.report.text import ReportError
from layerlab.settings import ReportSettings

PER_LAYER = ("theta", "theta_dh", "rel_update")


def _check_finite(out: dict[str, Any], lm: models.LoadedModel) -> None:
    bad = sum(m["nonfinite"] for conv in out["conventions"].values()
              for group in conv.values() if isinstance(group, dict)
              for m in group.values() if isinstance(m, dict) and "nonfinite" in m)
    if bad:
        raise ReportError(
            f"{lm.name}: the hidden states hold {bad} NaN/inf values (an overflow in a low "
            "precision dtype, or broken weights). Rerun with --dtype float32, or check the model.")


def _token_text(tokenizer: Any, ids: np.ndarray) -> np.ndarray:
    return np.asarray(tokenizer.convert_ids_to_tokens([int(i) for i in ids]), dtype=object)


def geometry_of(lm: models.LoadedModel, blocks: torch.Tensor, cfg: ReportSettings, *,
                progress: bool) -> dict[str, Any]:
    """Per-layer means of θ, θ(Δh) and the relative update (both last-state conventions; tokens
    at positions ≥ 1), per-sequence statistics for the intervals, and the bulk fraction of the
    token profiles with and without position 0."""
    batches = hidden.block_batches(blocks, cfg.batch_size)
    out = hidden.collect(lm, batches, profiles=cfg.profiles, seed=cfg.seed, progress=progress,
                         total=len(batches))
    _check_finite(out, lm)
    per_layer = {conv: {m: out["conventions"][conv]["pos_ge_1"][m]["mean"] for m in PER_LAYER}
                 for conv in ("hf", "raw")}
    arrays = dict(out["profiles"])
    arrays["token_text"] = _token_text(lm.tokenizer, arrays["token_id"])
    bulk = bulk_evidence(arrays, cfg.seed) if lm.n_layers >= clusters.MIN_LAYERS else {}
    # P1-A1's last angle after the final norm (P1's convention) on the same windows
    sequences = [{**r, geometry.PAPER_LAST: p[geometry.PAPER_LAST]} for r, p in
                 zip(geometry.sequence_stats(lm, batches), geometry.paper_last_angles(lm, batches),
                     strict=True)]
    return {"per_layer": per_layer, "sequences": sequences,
            "bulk": bulk, "tokens": int(out["conventions"]["hf"]["pos_ge_1"]["tokens"])}


def bulk_evidence(arrays: dict[str, np.ndarray], seed: int) -> dict[str, dict[str, Any]]:
    """The token-profile bulk fraction (progress features, 2-means: chapter 03's primary rule)
    with who the minority are, on the whole sample ("all") and without position 0. The whole
    sample also carries chapter 03's evidence for P1-B1 (`clusters.window_stats`: the
    fraction's interval over windows, the layer-shuffled control, the secondaries' intervals),
    so the report decides it by the book's own unit (`rules.bulk_fraction`)."""
    bulk = {}
    for label, arr in (("all", arrays), ("without_position0", clusters.without_position0(arrays))):
        df, summary = clusters.cluster(arr, "progress", "kmeans", seed=seed)
        bulk[label] = {**summary, **{k: v for k, v in clusters.minority_report(df).items()
                                     if k != "top_strings"}}
        if label == "all":
            bulk[label] |= clusters.window_stats(arr, df, "progress", "kmeans", seed)
    return bulk


def geometry_intervals(trained: dict[str, Any], untrained: dict[str, Any], n: int) -> pd.DataFrame:
    """The book's control table (bootstrap over sequences) for the model and its twin."""
    rows = [{**r, "model": "model", "trained": t, "family": False}
            for t, g in ((True, trained), (False, untrained)) for r in g["sequences"]]
    return geometry.control_table(pd.DataFrame(rows), n=n)


def lens_of(lm: models.LoadedModel, blocks: torch.Tensor, cfg: ReportSettings) -> dict[str, Any]:
    return lens.lens_stats(lm, blocks[: cfg.lens_windows], batch_size=max(1, cfg.batch_size // 2))


def importance_items(n_layers: int) -> dict[str, dict[str, Any]]:
    return {f"{m}-L{l}": {"method": m, "layer": l}
            for m in ("neighbour_average", "skip") for l in range(n_layers)}


def importance_map(ev: Evaluator, items: dict[str, dict[str, Any]], cache: results.Cache,
                   key: dict[str, Any], progress: bool, *,
                   experiment: str = "report_importance") -> dict[tuple[str, str, int], Scores]:
    """Every layer under neighbour averaging and under removal, each stored as it finishes."""
    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        return ev.evaluate(importance.method_edit(item["method"], item["layer"])).to_dict()

    stored = cache.for_each(experiment, key, items, compute, progress=progress)
    return {("text", items[k]["method"], items[k]["layer"]): Scores.from_dict(v)
            for k, v in stored.items()}


def importance_table(runs: dict, base: Scores, n_layers: int, cfg: ReportSettings) -> pd.DataFrame:
    table = importance.degradation_table(runs, {"text": base}, resamples=cfg.bootstrap,
                                         seed=cfg.seed)
    classes = []
    for _method, g in table.groupby("method"):
        cls = importance.classify(g, n_layers)
        classes.append(g.assign(**{"class": g["layer"].map(cls)}))
    return pd.concat(classes).sort_values(["method", "layer"]).reset_index(drop=True)


def least_important(table: pd.DataFrame, n_layers: int, k: int) -> list[int]:
    """The k inner layers (both neighbours exist) whose neighbour averaging costs least."""
    na = importance.inner(table[table["method"] == "neighbour_average"], n_layers)
    return sorted(int(l) for l in na.nsmallest(min(k, len(na)), "deg")["layer"])


def scaling_sweep(ev: Evaluator, base: Scores, layers: list[int], cfg: ReportSettings,
                  cache: results.Cache, key: dict[str, Any], progress: bool, *,
                  experiment: str = "report_scaling") -> pd.DataFrame:
    items = {f"x{a:g}": {"alpha": a, "layers": layers} for a in cfg.alphas}

    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        return ev.evaluate(edits.edit("scale", item["layers"], alpha=item["alpha"])).to_dict()

    stored = cache.for_each(experiment, key, items, compute, progress=progress)
    runs = {("text", "scale", items[k]["alpha"]): Scores.from_dict(v) for k, v in stored.items()}
    return importance.degradation_table(runs, {"text": base}, resamples=cfg.bootstrap,
                                        seed=cfg.seed, names=("method", "alpha"))


def strategy_runs(ev: Evaluator, lm: models.LoadedModel, base: Scores, layers: list[int],
                  cfg: ReportSettings, cache: results.Cache, key: dict[str, Any],
                  progress: bool) -> pd.DataFrame:
    """P2-C4's evidence as chapter 06 measures it, on the report's S (`layers`, edited at once):
    zero, clone, mix and low-rank mix at full strength (matched "full": the secondary "others
    harmful") and clone, mix and low-rank mix moved toward their targets only as far as ×0.9
    moves the weights, ‖ΔW‖/‖W‖ = `MATCHED_SIZE` per layer (matched "size joint": the control;
    zero at that size is ×0.9 itself). Each run is stored as it finishes."""
    items: dict[str, dict[str, Any]] = {}
    for name in strategies.OTHERS:
        items[f"full-{name}"] = {"strategy": name, "matched": "full", "layers": layers}
    for name in strategies.DIRECTIONS:
        if name == "zero":
            continue
        kind, opts = strategies.STRATEGIES[name]
        sizes = edits.relative_change(lm, edits.edit(kind, layers, **opts))
        fraction = {str(l): min(1.0, strategies.MATCHED_SIZE / r) if r > 0 else 1.0
                    for l, r in sizes.items()}
        items[f"size-{name}"] = {"strategy": name, "matched": "size joint", "layers": layers,
                                 "fraction": fraction}

    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        kind, opts = strategies.STRATEGIES[item["strategy"]]
        if "fraction" in item:
            opts = {**opts, "fraction": {int(l): f for l, f in item["fraction"].items()}}
        return ev.evaluate(edits.edit(kind, item["layers"], **opts)).to_dict()

    stored = cache.for_each("report_strategies", key, items, compute, progress=progress)
    runs = {("text", items[k]["strategy"], items[k]["matched"]): Scores.from_dict(v)
            for k, v in stored.items()}
    return importance.degradation_table(runs, {"text": base}, resamples=cfg.bootstrap,
                                        seed=cfg.seed, names=("strategy", "matched"))


def _nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")


# blocks a statistic needs: two consecutive deltas; a ridge fit on ≥ 2 pairs besides its target
DELTA_MIN_BLOCKS, RIDGE_MIN_BLOCKS = 3, 4


def _too_few(n: int, blocks: tuple[int, ...], what: str, need: int) -> str:
    return f"{n} block{'s' if n != 1 else ''} ({w.span(blocks)}): {what} needs ≥ {need}"


def weight_statistics(lm: models.LoadedModel, twin: models.LoadedModel,
                      cfg: ReportSettings) -> list[dict[str, Any]]:
    """Per tensor type: the mean consecutive-delta correlation of the real stack, the same layers
    shuffled, i.i.d. layers with each layer's mean and std, and the untrained twin's; ridge R²
    (layer t−1 → t) in-sample and leave-one-out at each penalty, real and shuffled.

    A type is stacked over the blocks that hold it (`weights.tensor_groups`): in a stack whose
    blocks differ (a dense first block, then mixture-of-experts blocks) each group is compared
    like with like and its row says which `blocks` it covers (absent: every block). A statistic
    the group has too few blocks for is left out (NaN delta correlations, no ridge keys) and
    `skipped` says why."""
    rows = []
    for g in w.tensor_groups(lm):
        name, n = g.tensor, len(g.blocks)
        real = w.stack(lm, name, g.blocks)
        stacks: dict[str, Callable[[], np.ndarray]] = {
            "real": lambda real=real: real,
            "shuffled": lambda real=real: w.shuffled(real, cfg.seed),
            "iid": lambda real=real: w.matched_gaussian(real, cfg.seed),
            "untrained": lambda g=g: w.stack(twin, g.tensor, g.blocks)}
        row: dict[str, Any] = {"type": g.label, "tensor": name, "elements": int(real.shape[1]),
                               "is_norm": w.value(lm.blocks[g.blocks[0]], name).ndim == 1}
        if n < lm.n_layers:
            row["blocks"] = list(g.blocks)
        skipped = {}
        if n < DELTA_MIN_BLOCKS:
            skipped["delta"] = _too_few(n, g.blocks, "the consecutive-delta correlation",
                                        DELTA_MIN_BLOCKS)
        if n < RIDGE_MIN_BLOCKS:
            skipped["ridge"] = _too_few(n, g.blocks, "ridge (layer t−1 → t, leave-one-out)",
                                        RIDGE_MIN_BLOCKS)
        for kind, make in stacks.items():
            if "delta" in skipped:
                row[f"delta_{kind}"] = float("nan")
                continue
            s = make()
            row[f"delta_{kind}"] = _nanmean(w.delta_correlation(s))
            if kind in ("real", "shuffled") and "ridge" not in skipped:
                gram = w.Gram.of(s)
                for protocol in ("in_sample", "loo"):
                    for a in cfg.ridge_alphas:
                        r2 = [r["r2"] for r in w.ridge_scores(gram, a, protocol)]
                        row[f"ridge_{protocol}_{kind}_{a:g}"] = _nanmean(r2)
        if skipped:
            row["skipped"] = skipped
        rows.append(row)
    return rows
