"""Chapter 09's two C5 claims, decided by `claims.decide` from their declarations: recovery speed
(`steps_unit`, `assess_steps`: the paper's anti-layers recover at once and its core slowly, at
the paper's fixed σ) and recovery against importance (`importance_unit`, `assess_importance`:
the equal-damage ρ of `correlate`). Each is judged against the no-damage runs when given, else
against the unedited model (control not measured).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from layerlab import claims, paper
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.recovery.display import _fmt_steps, anti_layer_noise
from layerlab.anatomy.recovery.experiment import CONDITIONS, NO_DAMAGE, RecoveryResult
from layerlab.anatomy.recovery.stats import (
    _curve,
    _reference,
    censored_rank_value,
    steps_interval,
)
from layerlab.settings import RecoveryConfig

__all__ = ["CHAPTER", "STEPS_ID", "IMPORTANCE_ID", "PAPER_SIGMA", "steps_unit", "assess_steps",
           "importance_unit", "assess_importance", "assess"]

CHAPTER = "09_recovery_speed"
STEPS_ID, IMPORTANCE_ID = "P2-C5-recovery-steps", "P2-C5-recovery-importance"
PAPER_SIGMA = 0.5  # the summary's "50 % noise" (research/paper2.md §8.1)


def steps_unit(result: RecoveryResult, cfg: RecoveryConfig,
               no_damage: pd.DataFrame | None = None) -> tuple[claims.Unit, dict[str, Any]]:
    """P2-C5-recovery-steps' evidence at fixed σ: per seed, the steps to recover of the earlier
    of the paper's slow layers minus those of the later of its fast layers (the primary), and
    each group's steps (the secondaries); the interval is the range over the seeds in which all
    four layers ran. Judged against the no-damage runs of the same layer and seed when
    `no_damage` holds every one of them (their own contrast against base is then the control),
    against base otherwise (control not measured)."""
    decl = DECLARATIONS[STEPS_ID]
    t = result.table
    fixed = t[t["condition"] == "fixed σ"]
    tau = f"steps τ={min(cfg.taus):g}"
    slow, fast = paper.P2_SLOW_RECOVERY.value, paper.P2_FAST_RECOVERY.value
    need = next(s.band.lo for s in decl.secondary if s.name == "core slow")
    seeds = sorted(set.intersection(*(set(fixed.loc[fixed["layer"] == l, "seed"].astype(int))
                                      for l in (*slow, *fast))))
    name = f"stand-in on {cfg.eval_set}"
    info: dict[str, Any] = {"reference": "base", "seeds": seeds}
    problems = []
    if cfg.sigma != PAPER_SIGMA:
        problems.append(f"σ = {cfg.sigma:g}, not the paper's 50 % noise ({PAPER_SIGMA:g})")
    if not seeds:
        problems.append("L8, L11, L14 and L17 were not run in a common seed")
    if cfg.steps < need:
        problems.append(f"a step limit of {cfg.steps} cannot show {need:g} steps")
    if problems:
        return claims.Unit(name=name, primary=None, precondition="; ".join(problems)), info
    runs = [(l, s) for l in (*slow, *fast) for s in seeds]
    damaged: dict[tuple[int, int], list[tuple[int, float]]] = {}
    refs: dict[tuple[int, int], dict[int, float] | None] = {}
    if no_damage is not None:
        damaged = {r: _curve(result.curves, *r, "fixed σ") for r in runs}
        refs = {r: _reference(no_damage, *r, [s for s, _ in damaged[r]]) for r in runs}
    measured = bool(refs) and all(v is not None for v in refs.values())
    base = ({(int(r["layer"]), int(r["seed"])): float(r["base_ppl"]) for _, r in fixed.iterrows()}
            if measured else {})

    def span(l: int, s: int) -> tuple[float, float]:
        if measured:
            return steps_interval(damaged[(l, s)], base[(l, s)], cfg, refs[(l, s)])
        v = fixed.loc[(fixed["layer"] == l) & (fixed["seed"] == s), tau].iloc[0]
        c = censored_rank_value(v, cfg.steps, cfg.eval_every)
        return c, c

    def contrast(spans: dict[tuple[int, int], tuple[float, float]]):
        """Per seed: the slow group (the earlier layer), the fast group (the later layer) and
        their difference, as intervals; then their ranges over seeds."""
        per = []
        for s in seeds:
            sl = (min(spans[(l, s)][0] for l in slow), min(spans[(l, s)][1] for l in slow))
            fa = (max(spans[(l, s)][0] for l in fast), max(spans[(l, s)][1] for l in fast))
            per.append((sl, fa, (sl[0] - fa[1], sl[1] - fa[0]), sl[0] - fa[0]))

        def est(i: int) -> claims.Estimate:
            return claims.Estimate(float(np.mean([p[i][0] for p in per])),
                                   float(min(p[i][0] for p in per)),
                                   float(max(p[i][1] for p in per)))

        diff = claims.Estimate(float(np.mean([p[3] for p in per])), est(2).lo, est(2).hi)
        return diff, est(0), est(1)

    spans = {r: span(*r) for r in runs}
    primary, slow_est, fast_est = contrast(spans)
    control = None
    if measured:
        own = {r: _curve(no_damage, *r) for r in runs}
        control = contrast({r: steps_interval(own[r], base[r], cfg) for r in runs})[0]
        info["reference"] = "no-damage run"
        info["control"] = [control.point, control.lo, control.hi]
    elif no_damage is not None:
        info["reference"] = "base (no-damage runs incomplete for the named layers and seeds)"
    info["steps"] = {f"L{l}": [list(spans[(l, s)]) for s in seeds] for l in (*slow, *fast)}
    info["per_layer"] = {f"L{l}": [bool(spans[(l, s)][1] <= 0 if l in fast
                                        else spans[(l, s)][0] >= need) for s in seeds]
                         for l in (*slow, *fast)}
    info["text"] = {f"L{l}": "/".join(_fmt_steps(spans[(l, s)], cfg) for s in seeds)
                    for l in (*slow, *fast)}
    unit = claims.Unit(name=name, primary=primary, control=control,
                       secondary={"anti-layers at once": fast_est, "core slow": slow_est})
    return unit, info


def assess_steps(result: RecoveryResult, cfg: RecoveryConfig, setting: str,
                 no_damage: pd.DataFrame | None = None) -> claims.Claim:
    """P2-C5's recovery-speed claim (anti-layers recover at once, the core slowly), decided from
    the fixed-σ runs against the no-damage runs when given (else the unedited model)."""
    decl = DECLARATIONS[STEPS_ID]
    unit, info = steps_unit(result, cfg, no_damage)
    ratio = anti_layer_noise(result.table)
    text = info.get("text", {})
    ours = ("; ".join(f"L{l}: {text.get(f'L{l}', 'not run')}" for l in (8, 11, 14, 17))
            + f" steps (one entry per seed, recovered against {info['reference']})")
    if unit.primary is not None:
        ours += (f"; earlier of L8/L11 − later of L14/L17: {unit.primary.lo:+.0f} to "
                 f"{unit.primary.hi:+.0f} over seeds")
    if ratio:
        ours += "; noise multiplies PPL by " + ", ".join(f"{k}: ×{v:.2f}" for k, v in ratio.items())
    decision = claims.decide(decl, [unit])
    numbers = {k: v for k, v in info.items() if k != "text"} | {"noise_ratio": ratio}
    return claims.make(decl, decision, ours=ours, setting=setting, numbers=numbers)


def importance_unit(corr: pd.DataFrame, cfg: RecoveryConfig) -> claims.Unit:
    """P2-C5-recovery-importance's evidence: the equal-damage area ρ (primary), the equal-damage
    steps ρ (secondary) and, when `correlate` judged against no-damage runs, their own area ρ
    (the control; otherwise not measured)."""
    tau = f"steps τ={min(cfg.taus):g}"
    name = f"stand-in on {cfg.eval_set}"
    c = corr.set_index(["condition", "recovery measure"])
    key = ("equal damage", "area under the curve")
    if key not in c.index:
        return claims.Unit(name=name, primary=None, precondition="no equal-damage runs")
    row = c.loc[key]
    problems = []
    if row.get("short of target"):
        problems.append(f"{row['short of target']} did not reach the equal damage "
                        f"({cfg.equal_damage:g} × base)")
    if not all(math.isfinite(float(row[k])) for k in ("spearman_rho", "ci_low", "ci_high")):
        problems.append("ρ undefined: the recovery measure is alike for every layer")
    if problems:
        return claims.Unit(name=name, primary=None, precondition="; ".join(problems))

    def est(r) -> claims.Estimate:
        return claims.Estimate(float(r["spearman_rho"]), float(r["ci_low"]), float(r["ci_high"]))

    control = None
    if row.get("reference") == "no-damage run" and (NO_DAMAGE, key[1]) in c.index:
        control = est(c.loc[(NO_DAMAGE, key[1])])
    return claims.Unit(name=name, primary=est(row), control=control,
                       secondary={"steps": est(c.loc[("equal damage", tau)])})


def assess_importance(corr: pd.DataFrame, cfg: RecoveryConfig, setting: str) -> claims.Claim:
    """The importance claim; its control comes from `corr` (pass the no-damage runs to
    `correlate`)."""
    decl = DECLARATIONS[IMPORTANCE_ID]
    tau = f"steps τ={min(cfg.taus):g}"
    c = corr.set_index(["condition", "recovery measure"])
    conds = [cond for cond in (*CONDITIONS, NO_DAMAGE) if (cond, tau) in c.index]

    def show(cond: str, m: str) -> str:
        r = c.loc[(cond, m)]
        return (f"{cond}, {'steps' if m == tau else 'area'} {r['spearman_rho']:+.2f} "
                f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]")

    reference = (c.loc[("equal damage", tau), "reference"]
                 if ("equal damage", tau) in c.index and "reference" in c else "base")
    decision = claims.decide(decl, [importance_unit(corr, cfg)])
    return claims.make(
        decl, decision,
        ours="Spearman ρ with the neighbour-average degradation (95 % CI over layers): "
             + "; ".join(show(cond, m) for cond in conds for m in (tau, "area under the curve"))
             + f" — judged against {reference}; the fixed-σ rows are confounded by the initial "
             "damage and do not count",
        setting=setting,
        numbers={"rho": {f"{cond}|{m}": float(c.loc[(cond, m), "spearman_rho"])
                         for cond in conds for m in (tau, "area under the curve")},
                 "reference": str(reference)})


def assess(result: RecoveryResult, corr: pd.DataFrame, cfg: RecoveryConfig,
           setting: str, no_damage: pd.DataFrame | None = None) -> list[claims.Claim]:
    """Both C5 claims; the steps claim only when the paper's named layers were run. `no_damage`
    (the control's curves; see `correlate`, which must get the same runs for the importance
    claim) is optional: without it both controls are not measured."""
    layers = set(result.table["layer"])
    named = {*paper.P2_SLOW_RECOVERY.value, *paper.P2_FAST_RECOVERY.value}
    found = [assess_steps(result, cfg, setting, no_damage)] if named <= layers else []
    return found + [assess_importance(corr, cfg, setting)]
