"""Chapter 02's tables: per model and layer (`layer_table`, `profile_table` for the charts with
selectors), per model over the middle blocks (`middle_summary`), the family's losses and
training curves, the untrained controls with bootstrap intervals (`control_table`, the table the
verdicts in `rules` read), the family's points per condition and the fitted slopes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from layerlab import hidden
from layerlab.depth.geometry.fits import _interval, bootstrap_mean
from layerlab.depth.geometry.measurement import FAMILY_PREFIX, PAPER_LAST, SEQUENCE_STATS

if TYPE_CHECKING:
    from layerlab.depth.geometry.experiment import ModelGeometry

__all__ = ["layer_table", "middle_summary", "profile_table", "family_losses", "family_curves",
           "EDGE_RATIOS", "control_table", "family_points", "slope_summary"]


def layer_table(stats: dict[str, ModelGeometry], metric: str, *, convention: str = "raw",
                group: str = "pos_ge_1") -> pd.DataFrame:
    """Per model and layer: mean and quartiles of one metric, with normalised depth."""
    rows = []
    for name, s in stats.items():
        L = s.n_layers
        m = s.group(convention, group)[metric]
        offset = 0.5 if metric in ("theta", "rel_update", "angle_to_end") else (
            1.0 if metric == "theta_dh" else 0.0)
        for i, mean in enumerate(m["mean"]):
            rows.append({"model": name, "layers": L, "index": i, "depth": (i + offset) / L,
                         "mean": mean, "q25": m["q25"][i], "median": m["q50"][i],
                         "q75": m["q75"][i], "family": name.startswith(FAMILY_PREFIX)})
    return pd.DataFrame(rows)


def middle_summary(stats: dict[str, ModelGeometry], *, convention: str = "raw",
                   group: str = "pos_ge_1") -> pd.DataFrame:
    """Per model: means over the middle blocks (all but the first and last) of θ(h_l, h_{l+1}),
    the relative update and θ(Δh_l, Δh_{l+1}) (pairs inside the middle)."""
    rows = []
    for name, s in stats.items():
        L = s.n_layers
        g = s.group(convention, group)
        mid = hidden.middle_layers(L)
        theta = np.array(g["theta"]["mean"])[mid]
        rel = np.array(g["rel_update"]["mean"])[mid]
        tdh = np.array(g["theta_dh"]["mean"])[hidden.middle_pairs(L)]
        rows.append({"model": name, "layers": L, "width": s.summary["d_model"],
                     "family": name.startswith(FAMILY_PREFIX),
                     "middle_theta": float(theta.mean()) if theta.size else np.nan,
                     "middle_cv": float(theta.std() / theta.mean()) if theta.size > 1 else np.nan,
                     "middle_rel_update": float(rel.mean()) if rel.size else np.nan,
                     "middle_theta_dh": float(tdh.mean()) if tdh.size else np.nan,
                     "first_theta": g["theta"]["mean"][0], "last_theta": g["theta"]["mean"][-1],
                     "tokens": g["tokens"]})
    return pd.DataFrame(rows).set_index("model")


def profile_table(stats: dict[str, ModelGeometry], metric: str) -> pd.DataFrame:
    """`layer_table` for both conventions and both token sets, for a chart with selectors."""
    frames = []
    for convention in ("raw", "hf"):
        for group, label in (("pos_ge_1", "positions ≥ 1"), ("all", "all positions")):
            t = layer_table(stats, metric, convention=convention, group=group)
            t["convention"] = {"raw": "last block's output", "hf": "after final norm (HF)"}[convention]
            t["tokens"] = label
            frames.append(t)
    return pd.concat(frames, ignore_index=True)


def family_losses(results_by_member: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Final validation loss (nats per byte) of each family member, with its size and cost."""
    return pd.DataFrame([{"depth": r["depth"], "seed": r["seed"], "params": r["params"],
                          "val_loss": r["val_loss"], "train_seconds": r["seconds"]}
                         for r in results_by_member.values()]
                        ).sort_values(["depth", "seed"]).reset_index(drop=True)


def family_curves(results_by_member: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Training curves of the family, one row per member and evaluation step: depth, seed,
    step, tokens seen, and train and validation loss (nats per byte)."""
    return pd.DataFrame([{"depth": r["depth"], "seed": r["seed"], **p}
                         for r in results_by_member.values() for p in r["curve"]])


# the edge ratio in each last-state convention: (statistic, its last angle's column)
EDGE_RATIOS = (("edge_ratio", "last_theta"),  # the last block's own output (block-only)
               ("edge_ratio_paper", PAPER_LAST))  # after the final norm, as P1 measures it


def control_table(seq: pd.DataFrame, *, n: int = 2000) -> pd.DataFrame:
    """Per model and statistic: the trained and untrained means with 95 % bootstrap intervals
    over sequences, the edge ratio min(first, last)/middle in both last-state conventions
    (`EDGE_RATIOS`; the paper's only where `seq` has its column and the model's values), and
    trained − untrained."""
    stats = [s for s in (*SEQUENCE_STATS, PAPER_LAST) if s in seq.columns]
    ratios = [(r, last) for r, last in EDGE_RATIOS if last in seq.columns]
    rows = []
    for model, g in seq.groupby("model", sort=False):
        draws = {}
        for trained, h in g.groupby("trained"):
            d = {s: bootstrap_mean(h[s].to_numpy(), n=n, seed=1) for s in stats}
            # ratio of means, resampled jointly (the same sequences in numerator and denominator;
            # one set of resamples for both conventions)
            idx = np.random.default_rng(2).integers(0, len(h), size=(n, len(h)))
            middle = h["middle_theta"].to_numpy()[idx].mean(1)
            first = h["first_theta"].to_numpy()[idx].mean(1)
            for ratio, last in ratios:
                d[ratio] = np.minimum(first, h[last].to_numpy()[idx].mean(1)) / middle
            draws[bool(trained)] = d
        for stat in (*stats, *(r for r, _ in ratios)):
            row = {"model": model, "statistic": stat, "layers": g["layers"].iloc[0],
                   "family": bool(g["family"].iloc[0])}
            for trained, label in ((True, "trained"), (False, "untrained")):
                if trained in draws:
                    d = draws[trained][stat]
                    row[label], (row[f"{label}_lo"], row[f"{label}_hi"]) = float(np.mean(d)), _interval(d)
            if True in draws and False in draws:
                diff = draws[True][stat] - draws[False][stat]
                row["difference"], (row["diff_lo"], row["diff_hi"]) = float(diff.mean()), _interval(diff)
            rows.append(row)
    return pd.DataFrame(rows)


def family_points(seq: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per family member (every seed) and condition: the mean of one per-sequence statistic."""
    fam = seq[seq["family"]]
    out = fam.groupby(["model", "trained"]).agg(layers=("layers", "first"),
                                                value=(column, "mean")).reset_index()
    out["condition"] = np.where(out["trained"], "trained", "untrained")
    return out.drop(columns="trained")


def slope_summary(slopes: dict[str, dict[str, dict]]) -> pd.DataFrame:
    """The fitted slopes (trained, untrained, difference) of several statistics, one row each."""
    return pd.DataFrame([{"statistic": stat, "condition": cond, "slope": v["slope"],
                          "lo": v["lo"], "hi": v["hi"]}
                         for stat, by in slopes.items() for cond, v in by.items()])
