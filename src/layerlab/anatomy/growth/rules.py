"""Chapter 10's four C6 claims (one finding), decided by `claims.decide` on the curves: the
loss ratio against uniform, the half budget (two readings, each a unit), wall-clock and FLOP
savings. They are judged in the paper's regime only, on `arm`'s seeds paired with uniform's,
with t-intervals over seeds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from layerlab import claims
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.growth.arms import PAPER_ARM, PAPER_STEP_SHARE
from layerlab.anatomy.growth.display import comparison
from layerlab.anatomy.growth.experiment import TUNED

if TYPE_CHECKING:
    import pandas as pd


CHAPTER = "10_growth_training"
HALF_BUDGET = 0.5  # P2-C6-half-budget's "50 % budget", read as a share of uniform's layer-steps
BUDGET_ROUNDING = 0.05  # phase lengths are whole steps: GTT's share lands within 5 points of it


def paired(cv: "pd.DataFrame", arm: str = "gtt", regime: str | None = None) -> "pd.DataFrame":
    """Final row of `arm` and of uniform per seed (one regime: the given one, or the only one)."""
    regime = regime or (TUNED if TUNED in set(cv["regime"]) else cv["regime"].iloc[0])
    last = cv[cv["regime"] == regime].sort_values("step").groupby(["seed", "arm"]).tail(1)
    a = last[last["arm"] == arm].set_index("seed")
    u = last[last["arm"] == "uniform"].set_index("seed")
    return a.join(u, lsuffix="", rsuffix="_uniform", how="inner")


def t_interval(x: "np.ndarray") -> tuple[float, float, float]:
    """Mean and 95 % t-interval over seeds (NaN bounds with fewer than two seeds)."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - half, m + half


def _judged(cv: "pd.DataFrame", *, seeds_needed: int = 2, arm: str = "gtt",
            label: str = "GTT") -> tuple[str, "pd.DataFrame", list[str]]:
    """The regime the claims are judged in (the paper regime), `arm`'s seeds paired with
    uniform's and the failed preconditions common to the C6 claims."""
    regime = TUNED if TUNED in set(cv["regime"]) else str(cv["regime"].iloc[0])
    p = paired(cv, arm=arm, regime=regime)
    problems = []
    if regime != TUNED:
        problems.append(f"not the paper's regime: no '{TUNED}' runs (the tuned memorised set)")
    if len(p) < seeds_needed:
        problems.append(f"{len(p)} paired seed(s) of {label} and uniform: an interval needs "
                        f"{seeds_needed}")
    return regime, p, problems


def _ratio(p: "pd.DataFrame") -> claims.Estimate:
    """uniform / GTT final loss: geometric mean over paired seeds, t-interval on the log scale."""
    m, lo, hi = t_interval(np.log(p["val_loss_uniform"] / p["val_loss"]))
    return claims.Estimate(float(np.exp(m)), float(np.exp(lo)), float(np.exp(hi)))


def _saving(p: "pd.DataFrame", measure: str) -> claims.Estimate:
    """1 − GTT / uniform of a budget measure: mean over paired seeds and its t-interval."""
    return claims.Estimate(*t_interval(1 - p[measure] / p[f"{measure}_uniform"]))


def _per_seed(p: "pd.DataFrame", values) -> dict[str, float]:
    return {str(int(s)): float(v) for s, v in zip(p.index, values)}


def unit_for(cv: "pd.DataFrame", claim_id: str) -> tuple[claims.Unit, dict[str, Any]]:
    """One C6 claim's evidence (a unit: the paper regime) and the numbers it rests on."""
    regime, p, problems = _judged(cv, seeds_needed=1 if claim_id == "P2-C6-cost" else 2)
    info: dict[str, Any] = {"regime": regime, "seeds": [int(s) for s in p.index]}
    if len(p):
        info["layer_steps_share"] = float((p["layer_steps"] / p["layer_steps_uniform"]).mean())
        info["step_share"] = float((p["step"] / p["step_uniform"]).mean())
    if claim_id == "P2-C6-half-budget" and len(p):
        share = info["layer_steps_share"]
        if abs(share - HALF_BUDGET) > BUDGET_ROUNDING:
            problems.append(f"GTT spent {share:.0%} of uniform's layer-steps, not "
                            f"{HALF_BUDGET:.0%}")
    name = f"{regime}, 50 % of layer-steps" if claim_id == "P2-C6-half-budget" else regime
    if problems:
        return claims.Unit(name=name, primary=None, precondition="; ".join(problems)), info
    if claim_id in ("P2-C6-loss-ratio", "P2-C6-half-budget"):
        est = _ratio(p)
        info["per_seed"] = _per_seed(p, p["val_loss_uniform"] / p["val_loss"])
        secondary = {"2.1× lower loss": est} if claim_id == "P2-C6-half-budget" else {}
    elif claim_id == "P2-C6-faster":
        est, secondary = _saving(p, "seconds"), {}
        info["per_seed"] = _per_seed(p, 1 - p["seconds"] / p["seconds_uniform"])
    elif claim_id == "P2-C6-cost":
        saved = 1 - p["flops"] / p["flops_uniform"]
        est, secondary = claims.Estimate.exact(float(saved.mean())), {}  # fixed by the program
        info["per_seed"] = _per_seed(p, saved)
    else:
        raise ValueError(f"not a C6 claim: {claim_id}")
    info["estimate"] = [est.point, est.lo, est.hi]
    return claims.Unit(name=name, primary=est, secondary=secondary), info


def paper_arm_unit(cv: "pd.DataFrame") -> tuple[claims.Unit, dict[str, Any]]:
    """P2-C6-half-budget read as the paper's own arm: GTT at 416 of uniform's 656 optimizer
    steps (63 %), paired by seed with uniform at full budget."""
    regime, p, problems = _judged(cv, arm=PAPER_ARM, label="the paper's GTT arm")
    name = f"{regime}, paper's arm: {PAPER_STEP_SHARE:.0%} of optimizer steps"
    info: dict[str, Any] = {"seeds": [int(s) for s in p.index]}
    if len(p):
        info["step_share"] = float((p["step"] / p["step_uniform"]).mean())
        info["layer_steps_share"] = float((p["layer_steps"] / p["layer_steps_uniform"]).mean())
        if abs(info["step_share"] - PAPER_STEP_SHARE) > BUDGET_ROUNDING:
            problems.append(f"the arm took {info['step_share']:.0%} of uniform's steps, not "
                            f"{PAPER_STEP_SHARE:.0%}")
    if problems:
        return claims.Unit(name=name, primary=None, precondition="; ".join(problems)), info
    est = _ratio(p)
    info["per_seed"] = _per_seed(p, p["val_loss_uniform"] / p["val_loss"])
    info["estimate"] = [est.point, est.lo, est.hi]
    return claims.Unit(name=name, primary=est, secondary={"2.1× lower loss": est}), info


def _claim(claim_id: str, cv: "pd.DataFrame", setting: str, ours: str) -> claims.Claim:
    decl = DECLARATIONS[claim_id]
    unit, info = unit_for(cv, claim_id)
    return claims.make(decl, claims.decide(decl, [unit]), ours=ours, setting=setting,
                       numbers=info)


def _regime_text(c: "pd.DataFrame", regimes: list[str], fmt) -> str:
    return "; ".join(f"{r}: {fmt(c.loc[(r, 'gtt')], c.loc[(r, 'uniform')])}" for r in regimes)


def assess_ratio(cv: "pd.DataFrame", setting: str,
                 c: "pd.DataFrame | None" = None) -> claims.Claim:
    """P2-C6-loss-ratio (4.7× lower loss than uniform) decided on `unit_for`; the wording gives
    GTT's and uniform's final losses per regime. `c` is `comparison`'s table, indexed by regime
    and arm (computed when not given)."""
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    return _claim("P2-C6-loss-ratio", cv, setting, _regime_text(
        c, regimes, lambda g, u: f"GTT {g['final val loss']:.3f} ± {g['sd']:.3f} vs uniform "
                                 f"{u['final val loss']:.3f} ({g['uniform / arm loss']:.2f}×)"))


def assess_half_budget(cv: "pd.DataFrame", setting: str,
                       c: "pd.DataFrame | None" = None) -> claims.Claim:
    """Two readings of "50 % budget", each a unit: GTT at half of uniform's layer-steps (our
    `gtt` arm) and the paper's own arm at 63 % of uniform's optimizer steps; the cross-unit
    rule gives the verdict."""
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    decl = DECLARATIONS["P2-C6-half-budget"]
    unit, info = unit_for(cv, "P2-C6-half-budget")
    paper_unit, paper_info = paper_arm_unit(cv)
    ours = _regime_text(
        c, regimes, lambda g, u: f"GTT {g['final val loss']:.3f} at {g['layer_steps share']:.0%} "
                                 f"of uniform's layer-steps ({g['step share']:.0%} of its steps) "
                                 f"vs uniform {u['final val loss']:.3f}")
    if (TUNED, PAPER_ARM) in c.index:
        g, u = c.loc[(TUNED, PAPER_ARM)], c.loc[(TUNED, "uniform")]
        ours += (f"; the paper's arm: GTT {g['final val loss']:.3f} at {g['step share']:.0%} of "
                 f"uniform's steps ({g['layer_steps share']:.0%} of its layer-steps) vs uniform "
                 f"{u['final val loss']:.3f}")
    return claims.make(decl, claims.decide(decl, [unit, paper_unit]), ours=ours,
                       setting=setting, numbers=info | {"paper_arm": paper_info})


def assess_faster(cv: "pd.DataFrame", setting: str,
                  c: "pd.DataFrame | None" = None) -> claims.Claim:
    """P2-C6-faster decided on `unit_for` (the wall-clock saved against uniform); the wording
    gives GTT's shares of uniform's wall-clock and FLOPs per regime. `c` as in
    `assess_ratio`."""
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    return _claim("P2-C6-faster", cv, setting, _regime_text(
        c, regimes, lambda g, u: f"GTT took {g['seconds share']:.0%} of uniform's wall-clock and "
                                 f"{g['flops share']:.0%} of its FLOPs"))


def assess_cost(cv: "pd.DataFrame", setting: str,
                c: "pd.DataFrame | None" = None) -> claims.Claim:
    """P2-C6-cost decided on `unit_for` (the FLOPs saved, fixed by the program: no interval);
    the wording gives the FLOP and layer-step reductions per regime. `c` as in
    `assess_ratio`."""
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    return _claim("P2-C6-cost", cv, setting, _regime_text(
        c, regimes, lambda g, u: f"cost reduction {1 - g['flops share']:.0%} in FLOPs, "
                                 f"{1 - g['layer_steps share']:.0%} in layer-steps (set by "
                                 "construction)"))


def assess(cv: "pd.DataFrame", setting: str) -> list:
    """The four C6 claims (one finding), judged in the paper's regime."""
    c = comparison(cv).set_index(["regime", "arm"])  # once for all four claims
    return [assess_ratio(cv, setting, c), assess_half_budget(cv, setting, c),
            assess_faster(cv, setting, c), assess_cost(cv, setting, c)]
