"""Chapter 02's geometry verdicts: one function per claim (P1-A1 edges rotate, P1-A2 update ∝
1/ℓ, P1-A3 weak update correlation), each deciding its units with `claims.decide` against its
declaration (`layerlab.depth.declarations`) from `display.control_table` and the family's
slopes; the units (`edge_units`, `inverse_depth_unit`, `weak_correlation_units`), their scopes
(`EDGE_MIN_LAYERS`, `DH_MIN_LAYERS`), whether the family's loss falls with depth
(`family_monotone`) and the family's precondition on the depths a claim uses
(`depth_buys_loss`, also P1-A4's in `lens`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

import numpy as np
import pandas as pd

from layerlab import claims
from layerlab.claims import Estimate, Unit
from layerlab.depth.declarations import DECLARATIONS
from layerlab.depth.geometry.fits import positive_estimate
from layerlab.depth.geometry.measurement import FAMILY_PREFIX, _member

__all__ = ["CHAPTER", "EDGE_MIN_LAYERS", "DH_MIN_LAYERS", "EDGE_PAPER", "EDGE_BLOCK",
           "edge_units", "assess_edges", "family_monotone", "depth_buys_loss", "family_depths",
           "with_family_precondition", "one_family_unit",
           "inverse_depth_unit", "assess_inverse_depth", "weak_correlation_units",
           "assess_weak_correlation", "assess"]


CHAPTER = "02_hidden_state_geometry"
EDGE_MIN_LAYERS = 8  # P1-A1's scope: fewer blocks leave "the middle" a handful of blocks
DH_MIN_LAYERS = 4  # P1-A3's scope: a pair of middle updates exists
# P1-A1's edge ratio (`display.EDGE_RATIOS`): the primary in P1's convention, the last angle on
# the state Hugging Face returns (after the final norm); the block-only reading (the last
# block's own output) is shown beside, not deciding
EDGE_PAPER, EDGE_BLOCK = "edge_ratio_paper", "edge_ratio"


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


def family_depths(names: Iterable[str]) -> list[int]:
    """The depths of the family members among `names` (`family-d8`, `family-d8-s1`, …)."""
    return sorted({_member(str(n))[0] for n in names if str(n).startswith(FAMILY_PREFIX)})


def _envelope(estimates: list[Estimate | None]) -> Estimate | None:
    """The members' estimates as one: the median point, the lowest lower and highest upper end
    (their spread is the interval); None if any member was not measured."""
    if not estimates or any(e is None for e in estimates):
        return None
    return Estimate(float(np.median([e.point for e in estimates])),
                    min(e.lo for e in estimates), max(e.hi for e in estimates))


def one_family_unit(units: list) -> list:
    """The family's members as one unit (VERDICTS.md §2 [rev]: seeds and depths of one tiny
    family are one unit, their spread its interval, not several votes): primary, control and
    each secondary the envelope of the members'; a member's failed precondition fails it."""
    members = [u for u in units if u.name.startswith(FAMILY_PREFIX)]
    if len(members) < 2:
        return units
    pre = "; ".join(sorted({f"{u.name}: {u.precondition}" for u in members if u.precondition}))
    names = [n for n in members[0].secondary if all(n in u.secondary for u in members)]
    family = Unit(
        name=f"family ({', '.join(u.name.split('-', 1)[1] for u in members)})",
        primary=_envelope([u.primary for u in members]), precondition=pre or None,
        control=_envelope([u.control for u in members]) if all(
            u.control is not None for u in members) else None,
        secondary={n: _envelope([u.secondary[n] for u in members]) for n in names})
    others = [u for u in units if not u.name.startswith(FAMILY_PREFIX)]
    return [*others, family]


def with_family_precondition(units: list, losses: pd.DataFrame | None) -> list:
    """The family's precondition (`depth_buys_loss`, on the depths these units use) on the
    family's unit (`one_family_unit`: its members are one unit, not several votes): a
    precondition on a kind of unit holds for every claim that uses it."""
    depths = family_depths(u.name for u in units)
    pre = depth_buys_loss(losses, depths) if depths else None
    if pre is None:
        return one_family_unit(units)
    members = [u for u in units if u.name.startswith(FAMILY_PREFIX)]
    if len(members) == 1:  # the family's reason first: it holds whatever this member measured
        return [replace(u, precondition=pre + (f"; and {u.precondition}" if u.precondition
                                                else "")) if u in members else u for u in units]
    # several members make one unit: the family's reason is its only one
    merged = one_family_unit([replace(u, precondition=None) if u in members else u
                              for u in units])
    return [*merged[:-1], replace(merged[-1], precondition=pre)]


def _edge_row(table: pd.DataFrame, stat: str, model: str):
    rows = table[(table["statistic"] == stat) & (table["model"] == model)]
    return next(rows.itertuples(), None)


def edge_units(table: pd.DataFrame, losses: pd.DataFrame | None = None) -> list:
    """P1-A1: one unit per model with at least `EDGE_MIN_LAYERS` blocks. The primary is the edge
    ratio in P1's convention (`EDGE_PAPER`: the last angle after the final norm), its 95 %
    interval less the upper end of the untrained twin's (its excess over the negative control's
    range, which must be above 0); the ratio itself is the secondary "edges above the middle"
    (above 1). The control, the twin's own excess over its range, is at most 0 by construction:
    the calibrated threshold is the control. The family's units also need a family where depth
    buys loss over the depths in scope (`depth_buys_loss` on `losses`)."""
    rows = table[(table["statistic"] == EDGE_BLOCK) & (table["layers"] >= EDGE_MIN_LAYERS)]
    if rows.empty:
        return [Unit(name="no model", primary=None,
                     precondition=f"no model with at least {EDGE_MIN_LAYERS} blocks")]
    units = []
    for model in rows["model"]:
        r = _edge_row(table, EDGE_PAPER, model)
        t, u = (_iv(r, "trained"), _iv(r, "untrained")) if r is not None else ([np.nan] * 3,) * 2
        if not _finite(*t):
            units.append(Unit(name=model, primary=None,
                              precondition="the last angle after the final norm (P1's "
                                           "convention) was not measured"))
            continue
        if not _finite(*u):
            units.append(Unit(name=model, primary=None,
                              precondition="no untrained twin measured on the same windows"))
            continue
        top = u[2]
        units.append(Unit(name=model, primary=Estimate(t[0] - top, t[1] - top, t[2] - top),
                          control=Estimate(u[0] - top, u[1] - top, 0.0),
                          secondary={"edges above the middle": Estimate(*t)}))
    return with_family_precondition(units, losses)


def _edge_words(table: pd.DataFrame, model: str) -> str:
    """One model's edge ratio in both conventions, in words; where the block-only ratio lies
    below 1 and P1's above it, the last rotation is the final norm's, and the words say so."""
    paper, block = _edge_row(table, EDGE_PAPER, model), _edge_row(table, EDGE_BLOCK, model)
    p = _iv(paper, "trained") if paper is not None else [np.nan] * 3
    pu = _iv(paper, "untrained") if paper is not None else [np.nan] * 3
    b, bu = _iv(block, "trained"), _iv(block, "untrained")
    words = (f"{model}: min(first, last)/middle after the final norm (P1's convention) "
             f"{_text(p)}, untrained {_text(pu)}; block-only {_text(b)}, untrained {_text(bu)}")
    if _finite(*p, *b) and b[2] < 1.0 < p[1]:
        words += " (the last block's own rotation is small: its last-layer rotation is its final norm)"
    return words


def assess_edges(table: pd.DataFrame, setting: str, losses: pd.DataFrame | None = None):
    """P1-A1: only the first and last blocks rotate strongly — per model (≥ 8 blocks), the edge
    ratio in P1's convention (after the final norm) with its interval above the untrained twin's
    95 % range and above 1; the family's units only where depth buys loss over d ≥ 8. The
    block-only ratio (the last block's own output) is shown beside, not deciding."""
    rows = table[(table["statistic"] == EDGE_BLOCK) & (table["layers"] >= EDGE_MIN_LAYERS)]
    models = list(rows["model"])
    units = edge_units(table, losses)
    pre = {u.name: u.precondition for u in units if u.precondition}
    ours = "; ".join(_edge_words(table, m) for m in models) or "no model with ≥ 8 blocks"
    family = next((p for n, p in pre.items() if n.startswith("family")), None)
    if family:
        ours += f"; the family's units: {family}"

    def both(stat: str) -> dict:
        out = {}
        for m in models:
            r = _edge_row(table, stat, m)
            out[m] = {"trained": _iv(r, "trained") if r is not None else [np.nan] * 3,
                      "untrained": _iv(r, "untrained") if r is not None else [np.nan] * 3}
        return out

    return _decided("P1-A1-edges-rotate", units, ours=ours, setting=setting,
                    numbers={"edge_ratio_paper": both(EDGE_PAPER),
                             "edge_ratio_block": both(EDGE_BLOCK)})


def family_monotone(losses: pd.DataFrame, depths: Iterable[int] | None = None) -> dict[str, Any]:
    """Whether the seed-mean validation loss falls with depth, over `depths` (every depth of
    `losses` by default). `strict`: every added depth lowers the mean. `monotone` (what the
    verdict reads): no added depth raises the mean by more than the standard error of that
    difference (pooled seed SD over the same depths), and the deepest member beats the shallowest
    by more than two standard errors — a strict ordering of means that differ by less than the
    seed noise is a coin toss, not evidence either way. `gain`, `gain_se`: the shallowest
    depth's mean less the deepest's, and its standard error."""
    if depths is not None:
        losses = losses[losses["depth"].isin(list(depths))]
    by = losses.groupby("depth")["val_loss"].agg(["mean", "std", "size"]).sort_index()
    means, n = by["mean"].to_numpy(), by["size"].to_numpy()
    steps = np.diff(means)
    pooled = float(np.sqrt(np.nanmean(by["std"].to_numpy() ** 2))) if (n > 1).any() else np.nan
    se = pooled * np.sqrt(1 / n[1:] + 1 / n[:-1]) if np.isfinite(pooled) else np.zeros_like(steps)
    overall_se = pooled * np.sqrt(1 / n[0] + 1 / n[-1]) if np.isfinite(pooled) else 0.0
    within = bool((steps <= se).all() and means[-1] < means[0] - 2 * overall_se)
    return {"monotone": within, "strict": bool((steps < 0).all()),
            "largest_step": float(steps.max()) if steps.size else float("nan"),
            "seed_sd": pooled, "gain": float(means[0] - means[-1]), "gain_se": float(overall_se),
            "depths": [int(d) for d in by.index],
            "by_depth": {int(d): {"mean": float(r["mean"]), "sd": float(r["std"])
                                  if r["size"] > 1 else float("nan"), "seeds": int(r["size"])}
                         for d, r in by.iterrows()}}


def depth_buys_loss(losses: pd.DataFrame | None, depths: Iterable[int]) -> str | None:
    """The family's precondition (VERDICTS.md §2 [rev], per kind): over the depths a statistic
    actually uses, the family shows what depth buys beyond seed noise (`family_monotone` on those
    depths, every seed trained at them). None when it holds, else why not, in words. A family
    whose deeper members are no better models cannot show how depth is used, whichever claim
    reads it (P1-A1–A4's family units)."""
    depths = sorted({int(d) for d in depths})
    span = f"d{depths[0]}–d{depths[-1]}" if depths else "none"
    if losses is None or losses.empty:
        return (f"the family's validation losses were not given: whether depth buys loss over "
                f"{span} is unknown")
    have = sorted(set(depths) & {int(d) for d in losses["depth"]})
    if len(have) < 2:
        return f"fewer than two family depths with a loss among those used ({span}): no comparison"
    m = family_monotone(losses, have)
    if not np.isfinite(m["seed_sd"]):
        return f"one seed per depth over {span}: the seed noise is unknown"
    if m["monotone"]:
        return None
    step = max(zip(have[:-1], have[1:]), key=lambda p: m["by_depth"][p[1]]["mean"]
               - m["by_depth"][p[0]]["mean"])
    rise = m["by_depth"][step[1]]["mean"] - m["by_depth"][step[0]]["mean"]
    counts = {v["seeds"] for v in m["by_depth"].values()}
    seeds = f"{counts.pop()} seeds" if len(counts) == 1 else f"≥ {min(counts)} seeds"
    head = (f"over the family members it uses (d{have[0]}–d{have[-1]}, {seeds} each) "
            "depth does not buy loss beyond seed noise: ")
    if m["gain"] <= 2 * m["gain_se"]:
        return head + (f"d{have[0]} → d{have[-1]} lowers the seed-mean validation loss by "
                       f"{m['gain']:.3f} nats/byte, under two standard errors "
                       f"({2 * m['gain_se']:.3f})")
    return head + (f"d{step[0]} → d{step[1]} raises the seed-mean validation loss by {rise:.3f} "
                   "nats/byte, more than the standard error of that step")


def inverse_depth_unit(slopes: dict[str, dict], losses: pd.DataFrame | None):
    """P1-A2: one unit, the depth family: its trained slope with the untrained twins' slope as
    the negative control through the same band (the claim is about the models' updates, so a
    random stack that shows the same shrinking makes it no evidence: not diagnostic); not
    testable where no slope could be fitted, where the family does not show what depth buys
    beyond seed noise over the depths the slope uses (`depth_buys_loss`), or where the slope's
    interval is wider than the band."""
    t, u = slopes["trained"], slopes["untrained"]
    if not _finite(t["slope"], t["lo"], t["hi"]):
        return Unit(name="depth family", primary=None,
                    precondition="fewer than 3 family depths with a middle: no slope")
    est = Estimate(t["slope"], t["lo"], t["hi"])
    band = DECLARATIONS["P1-A2-update-inverse-depth"].band
    pre = depth_buys_loss(losses, t.get("depths") or [])
    if pre is None and t["hi"] - t["lo"] > band.hi - band.lo and band.test(est) != "fail":
        pre = (f"the slope's 95 % interval [{t['lo']:.2f}, {t['hi']:.2f}] is wider than the band "
               f"{band.text('.3g')}")
    control = Estimate(u["slope"], u["lo"], u["hi"]) if _finite(u["slope"], u["lo"], u["hi"]) \
        else None
    return Unit(name="depth family", primary=est, precondition=pre, control=control)


def _control_words(control: Estimate | None, claim_id: str) -> str:
    """How a presence claim's negative control fares through the claim's own band, in words."""
    if control is None:
        return "not measured"
    state = DECLARATIONS[claim_id].band.test(control)
    return {"pass": "inside the band: a random stack shows it too",
            "fail": "outside the band: a random stack does not show it",
            "undecided": "straddling the band's edge"}[state]


def assess_inverse_depth(slopes: dict[str, dict], losses: pd.DataFrame | None, setting: str):
    """P1-A2: the middle-layer update ∝ 1/ℓ — the family's log–log slope against −1 (band
    [−1.5, −0.5]), judged only on a family that shows what depth buys beyond seed noise over
    the depths the slope uses, with its untrained twins through the same band as the negative
    control; trained − untrained is shown beside."""
    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    unit = inverse_depth_unit(slopes, losses)
    pre = depth_buys_loss(losses, t.get("depths") or [])  # the family's precondition alone
    ours = (f"slope {t['slope']:.2f} (95 % CI [{t['lo']:.2f}, {t['hi']:.2f}], {t['n']} members"
            + (f", d{t['depths'][0]}–d{t['depths'][-1]}" if t.get("depths") else "") + "); "
            f"untrained twins (negative control) {u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}], "
            f"{_control_words(unit.control, 'P1-A2-update-inverse-depth')}; trained − untrained "
            f"{d['slope']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}] (shown beside)")
    if unit.precondition:
        ours += f"; not testable: {unit.precondition}"
    gain = (family_monotone(losses, t["depths"]) if losses is not None and not losses.empty
            and len(t.get("depths") or []) >= 2 else {})
    return _decided(
        "P1-A2-update-inverse-depth", [unit], ours=ours, setting=setting,
        numbers={"slope": t, "untrained": u, "difference": d, "depth_buys_loss": pre is None,
                 "loss_gain": {k: gain[k] for k in ("depths", "gain", "gain_se", "seed_sd")
                               if k in gain}})


def weak_correlation_units(table: pd.DataFrame, positive=None,
                           losses: pd.DataFrame | None = None) -> list:
    """P1-A3: one unit per model with at least `DH_MIN_LAYERS` blocks, its middle θ(Δh) with the
    smooth stream of the same depth as the positive control (or `positive` for every unit); the
    family's units also need a family where depth buys loss over the depths in scope
    (`depth_buys_loss` on `losses`)."""
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
    return with_family_precondition(units, losses)


def assess_weak_correlation(table: pd.DataFrame, slopes: dict[str, dict], setting: str, *,
                            positive=None, losses: pd.DataFrame | None = None):
    """P1-A3 (an absence claim): consecutive updates weakly correlated — per model (≥ 4 blocks)
    the middle θ(Δh) inside [π/4, 3π/4], where a smooth residual stream (the positive control,
    `smooth_stream`; `positive` overrides it for every unit) must fall outside; the family's
    units only where depth buys loss over d ≥ 4. The untrained twins and the family's slope of
    θ(Δh) on depth are shown beside, not deciding."""
    rows = table[(table["statistic"] == "middle_theta_dh") & (table["layers"] >= DH_MIN_LAYERS)]
    units = weak_correlation_units(table, positive, losses)
    pos = {u.name: u.control for u in units if u.control is not None}
    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    ours = "; ".join(f"{r.model}: {_text(_iv(r, 'trained'))} rad (untrained "
                     f"{_iv(r, 'untrained')[0]:.2f}"
                     + (f"; smooth stream {pos[r.model].point:.2f})" if r.model in pos else ")")
                     for r in rows.itertuples())
    ours += (f"; family slope of θ(Δh) on ℓ {t['slope']:.2f} [{t['lo']:.2f}, {t['hi']:.2f}], "
             f"untrained {u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}] (procedural: −1)")
    family = next((x.precondition for x in units
                   if x.name.startswith("family") and x.precondition), None)
    if family:
        ours += f"; the family's units: {family}"
    return _decided(
        "P1-A3-weak-update-correlation", units, ours=ours.lstrip("; "), setting=setting,
        numbers={"middle_theta_dh": {r.model: _iv(r, "trained") for r in rows.itertuples()},
                 "untrained": {r.model: _iv(r, "untrained") for r in rows.itertuples()},
                 "positive_control": {n: [e.point, e.lo, e.hi] for n, e in pos.items()},
                 "slope": t, "untrained_slope": u, "difference": d})


def assess(table: pd.DataFrame, slopes: dict[str, dict], dh_slopes: dict[str, dict],
           losses: pd.DataFrame | None, setting: str) -> list:
    """Chapter 02's geometry claims, each from its own function and decided by `claims.decide`
    against its declaration (`layerlab.depth.declarations`); `losses` (the family's final
    validation losses, `display.family_losses`) decide the family's precondition in each."""
    return [assess_edges(table, setting, losses), assess_inverse_depth(slopes, losses, setting),
            assess_weak_correlation(table, dh_slopes, setting, losses=losses)]
