"""Chapter 02's geometry verdicts: one function per claim (P1-A1 edges rotate, P1-A2 update ∝
1/ℓ, P1-A3 weak update correlation), each deciding its units with `claims.decide` against its
declaration (`layerlab.depth.declarations`) from `display.control_table` and the family's
slopes; the units (`edge_units`, `inverse_depth_unit`, `weak_correlation_units`), their scopes
(`EDGE_MIN_LAYERS`, `DH_MIN_LAYERS`) and whether the family's loss falls with depth
(`family_monotone`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from layerlab import claims
from layerlab.claims import Estimate, Unit
from layerlab.depth.declarations import DECLARATIONS
from layerlab.depth.geometry.fits import positive_estimate

__all__ = ["CHAPTER", "EDGE_MIN_LAYERS", "DH_MIN_LAYERS", "edge_units", "assess_edges",
           "family_monotone", "inverse_depth_unit", "assess_inverse_depth",
           "weak_correlation_units", "assess_weak_correlation", "assess"]


CHAPTER = "02_hidden_state_geometry"
EDGE_MIN_LAYERS = 8  # P1-A1's scope: fewer blocks leave "the middle" a handful of blocks
DH_MIN_LAYERS = 4  # P1-A3's scope: a pair of middle updates exists


def _decided(claim_id: str, units: list, *, ours: str, setting: str, numbers: dict | None = None):
    """The one decision procedure (`claims.decide`) on the claim's declaration and units."""
    decl = DECLARATIONS[claim_id]
    decision = claims.decide(decl, units)
    numbers = {**(numbers or {}),
               "per_model": {n: str(v) for n, (v, _) in decision.units.items()}}
    return claims.make(decl, decision, ours=ours, setting=setting, numbers=numbers)


def _finite(*values: float) -> bool:
    return all(v is not None and np.isfinite(v) for v in values)


def _iv(row, label: str) -> list[float]:
    """[value, lo, hi] of `label` ("trained" or "untrained") in a `control_table` row (NaN where
    the condition was not measured)."""
    return [float(getattr(row, f"{label}{s}", np.nan)) for s in ("", "_lo", "_hi")]


def _text(v: list[float]) -> str:
    return f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" if _finite(*v) else "not measured"


def edge_units(table: pd.DataFrame) -> list:
    """P1-A1: one unit per model with at least `EDGE_MIN_LAYERS` blocks. The primary is the edge
    ratio's 95 % interval less the upper end of the untrained twin's (its excess over the
    negative control's range, which must be above 0); the ratio itself is the secondary "edges
    above the middle" (above 1). The control, the twin's own excess over its range, is at most 0
    by construction: the calibrated threshold is the control."""
    rows = table[(table["statistic"] == "edge_ratio") & (table["layers"] >= EDGE_MIN_LAYERS)]
    if rows.empty:
        return [Unit(name="no model", primary=None,
                     precondition=f"no model with at least {EDGE_MIN_LAYERS} blocks")]
    units = []
    for r in rows.itertuples():
        t, u = _iv(r, "trained"), _iv(r, "untrained")
        if not _finite(*t):
            units.append(Unit(name=r.model, primary=None,
                              precondition="the edge ratio could not be measured"))
            continue
        if not _finite(*u):
            units.append(Unit(name=r.model, primary=None,
                              precondition="no untrained twin measured on the same windows"))
            continue
        top = u[2]
        units.append(Unit(name=r.model, primary=Estimate(t[0] - top, t[1] - top, t[2] - top),
                          control=Estimate(u[0] - top, u[1] - top, 0.0),
                          secondary={"edges above the middle": Estimate(*t)}))
    return units


def assess_edges(table: pd.DataFrame, setting: str):
    """P1-A1: only the first and last blocks rotate strongly — per model (≥ 8 blocks), the edge
    ratio's interval above the untrained twin's 95 % range and above 1."""
    rows = table[(table["statistic"] == "edge_ratio") & (table["layers"] >= EDGE_MIN_LAYERS)]
    ours = "; ".join(
        f"{r.model}: min(first, last)/middle {_text(_iv(r, 'trained'))}, untrained "
        f"{_text(_iv(r, 'untrained'))}" for r in rows.itertuples()) or "no model with ≥ 8 blocks"
    return _decided(
        "P1-A1-edges-rotate", edge_units(table), ours=ours, setting=setting,
        numbers={"edge_ratio": {r.model: {"trained": _iv(r, "trained"),
                                          "untrained": _iv(r, "untrained")}
                                for r in rows.itertuples()}})


def family_monotone(losses: pd.DataFrame) -> dict[str, Any]:
    """Whether the seed-mean validation loss falls with depth. `strict`: every added depth
    lowers the mean. `monotone` (what the verdict reads): no added depth raises the mean by more
    than the standard error of that difference (pooled seed SD), and the deepest member beats the
    shallowest by more than two standard errors — a strict ordering of means that differ by less
    than the seed noise is a coin toss, not evidence either way."""
    by = losses.groupby("depth")["val_loss"].agg(["mean", "std", "size"]).sort_index()
    means, n = by["mean"].to_numpy(), by["size"].to_numpy()
    steps = np.diff(means)
    pooled = float(np.sqrt(np.nanmean(by["std"].to_numpy() ** 2))) if (n > 1).any() else np.nan
    se = pooled * np.sqrt(1 / n[1:] + 1 / n[:-1]) if np.isfinite(pooled) else np.zeros_like(steps)
    overall_se = pooled * np.sqrt(1 / n[0] + 1 / n[-1]) if np.isfinite(pooled) else 0.0
    within = bool((steps <= se).all() and means[-1] < means[0] - 2 * overall_se)
    return {"monotone": within, "strict": bool((steps < 0).all()),
            "largest_step": float(steps.max()), "seed_sd": pooled,
            "by_depth": {int(d): {"mean": float(r["mean"]), "sd": float(r["std"])
                                  if r["size"] > 1 else float("nan"), "seeds": int(r["size"])}
                         for d, r in by.iterrows()}}


def inverse_depth_unit(slopes: dict[str, dict], monotone: dict[str, Any]):
    """P1-A2: one unit, the depth family: its trained slope with the untrained twins' slope as
    the negative control; not testable where the family's loss does not fall with depth, where
    no slope could be fitted, or where the slope's interval is wider than the band."""
    t, u = slopes["trained"], slopes["untrained"]
    if not _finite(t["slope"], t["lo"], t["hi"]):
        return Unit(name="depth family", primary=None,
                    precondition="fewer than 3 family depths with a middle: no slope")
    est = Estimate(t["slope"], t["lo"], t["hi"])
    band = DECLARATIONS["P1-A2-update-inverse-depth"].band
    pre = None
    if not monotone["monotone"]:
        pre = ("the family's seed-mean validation loss does not fall with depth beyond the seed "
               "noise: depth buys nothing to explain")
    elif t["hi"] - t["lo"] > band.hi - band.lo and band.test(est) != "fail":
        pre = (f"the slope's 95 % interval [{t['lo']:.2f}, {t['hi']:.2f}] is wider than the band "
               f"{band.text('.3g')}")
    control = Estimate(u["slope"], u["lo"], u["hi"]) if _finite(u["slope"], u["lo"], u["hi"]) \
        else None
    return Unit(name="depth family", primary=est, precondition=pre, control=control)


def assess_inverse_depth(slopes: dict[str, dict], monotone: dict[str, Any], setting: str):
    """P1-A2: the middle-layer update ∝ 1/ℓ — the family's log–log slope against −1 (band
    [−1.5, −0.5]), judged only on a family whose loss falls with depth, with its untrained twins
    through the same band as the negative control."""
    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    return _decided(
        "P1-A2-update-inverse-depth", [inverse_depth_unit(slopes, monotone)],
        ours=f"slope {t['slope']:.2f} (95 % CI [{t['lo']:.2f}, {t['hi']:.2f}], {t['n']} members); "
             f"untrained twins {u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}]; trained − "
             f"untrained {d['slope']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}]"
             + ("" if monotone["monotone"] else "; the family's loss does not fall with depth"),
        setting=setting,
        numbers={"slope": t, "untrained": u, "difference": d, "monotone": monotone["monotone"]})


def weak_correlation_units(table: pd.DataFrame, positive=None) -> list:
    """P1-A3: one unit per model with at least `DH_MIN_LAYERS` blocks, its middle θ(Δh) with the
    smooth stream of the same depth as the positive control (or `positive` for every unit)."""
    rows = table[(table["statistic"] == "middle_theta_dh") & (table["layers"] >= DH_MIN_LAYERS)]
    if rows.empty:
        return [Unit(name="no model", primary=None,
                     precondition=f"no model with at least {DH_MIN_LAYERS} blocks")]
    controls: dict[int, Any] = {}
    units = []
    for r in rows.itertuples():
        layers = int(r.layers)
        if positive is None and layers not in controls:
            controls[layers] = positive_estimate(layers)
        t = _iv(r, "trained")
        units.append(Unit(name=r.model, primary=Estimate(*t) if _finite(*t) else None,
                          control=positive if positive is not None else controls[layers]))
    return units


def assess_weak_correlation(table: pd.DataFrame, slopes: dict[str, dict], setting: str, *,
                            positive=None):
    """P1-A3 (an absence claim): consecutive updates weakly correlated — per model (≥ 4 blocks)
    the middle θ(Δh) inside [π/4, 3π/4], where a smooth residual stream (the positive control,
    `smooth_stream`; `positive` overrides it for every unit) must fall outside. The untrained
    twins and the family's slope of θ(Δh) on depth are shown beside, not deciding."""
    rows = table[(table["statistic"] == "middle_theta_dh") & (table["layers"] >= DH_MIN_LAYERS)]
    units = weak_correlation_units(table, positive)
    pos = {u.name: u.control for u in units if u.control is not None}
    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    ours = "; ".join(f"{r.model}: {_text(_iv(r, 'trained'))} rad (untrained "
                     f"{_iv(r, 'untrained')[0]:.2f}; smooth stream {pos[r.model].point:.2f})"
                     for r in rows.itertuples() if r.model in pos)
    ours += (f"; family slope of θ(Δh) on ℓ {t['slope']:.2f} [{t['lo']:.2f}, {t['hi']:.2f}], "
             f"untrained {u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}] (procedural: −1)")
    return _decided(
        "P1-A3-weak-update-correlation", units, ours=ours.lstrip("; "), setting=setting,
        numbers={"middle_theta_dh": {r.model: _iv(r, "trained") for r in rows.itertuples()},
                 "untrained": {r.model: _iv(r, "untrained") for r in rows.itertuples()},
                 "positive_control": {n: [e.point, e.lo, e.hi] for n, e in pos.items()},
                 "slope": t, "untrained_slope": u, "difference": d})


def assess(table: pd.DataFrame, slopes: dict[str, dict], dh_slopes: dict[str, dict],
           monotone: dict[str, Any], setting: str) -> list:
    """Chapter 02's geometry claims, each from its own function and decided by `claims.decide`
    against its declaration (`layerlab.depth.declarations`)."""
    return [assess_edges(table, setting), assess_inverse_depth(slopes, monotone, setting),
            assess_weak_correlation(table, dh_slopes, setting)]
