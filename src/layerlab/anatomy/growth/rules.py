"""Chapter 10's four C6 claims (one finding), decided by `claims.decide` on the curves, each on
the arm its words describe (`CLAIM_ARMS`): the loss ratio and "13 % faster" on GTT at uniform's
optimizer steps (the summary's "identical training steps"), the half budget on both readings
of "50 % budget" (each a unit), and the cost reduction "without sacrificing quality" on the
paper's own 50 %-budget arm (416 of uniform's 656 steps), its quality clause a secondary.
Time is CPU-seconds and FLOPs, never the shared machine's wall-clock. The claims are judged in
the paper's regime only, on the arm's seeds paired with uniform's, with t-intervals over seeds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from layerlab import claims
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.growth.arms import IDENTICAL_ARM, PAPER_ARM, PAPER_STEP_SHARE
from layerlab.anatomy.growth.display import comparison
from layerlab.anatomy.growth.experiment import TUNED

if TYPE_CHECKING:
    import pandas as pd


CHAPTER = "10_growth_training"
HALF_BUDGET = 0.5  # P2-C6-half-budget's "50 % budget", read as a share of uniform's layer-steps
BUDGET_ROUNDING = 0.05  # phase lengths are whole steps: GTT's share lands within 5 points of it

# The arm each claim's words describe. "4.7× lower loss" and "13 % faster" come with the
# summary's "identical training steps"; "~54 % cost reduction without sacrificing quality" is
# the paper's arm that spends less ("50 % budget (416 steps)"; "the same quality in 63 % of
# the time"); "50 % budget" is read both ways (`assess_half_budget`), "gtt" the layer-steps one.
CLAIM_ARMS = {"P2-C6-loss-ratio": IDENTICAL_ARM, "P2-C6-faster": IDENTICAL_ARM,
              "P2-C6-half-budget": "gtt", "P2-C6-cost": PAPER_ARM}
# each arm's budget, as (measure, share of uniform's) it must spend to the rounding of phases
ARM_BUDGETS = {"gtt": ("layer_steps", HALF_BUDGET), PAPER_ARM: ("step", PAPER_STEP_SHARE),
               IDENTICAL_ARM: ("step", 1.0)}
ARM_UNITS = {"gtt": "50 % of layer-steps",
             PAPER_ARM: f"paper's arm: {PAPER_STEP_SHARE:.0%} of optimizer steps",
             IDENTICAL_ARM: "GTT at uniform's optimizer steps"}
QUALITY = "without sacrificing quality"  # P2-C6-cost's primary, in words
SAVING = "~54 % cheaper"  # P2-C6-cost's secondary: by construction of the paper's arm


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


def _shares(p: "pd.DataFrame") -> dict[str, float]:
    """Each budget measure of the arm as a share of uniform's, mean over paired seeds (NaN
    where a measure was not counted, e.g. CPU-seconds of an untimed run)."""
    out = {}
    for m in ("step", "layer_steps", "flops", "cpu_seconds"):
        if m in p and f"{m}_uniform" in p:
            out[f"{m}_share"] = float((p[m].astype(float) / p[f"{m}_uniform"].astype(float)).mean())
    return out


def _budget_problem(arm: str, shares: dict[str, float]) -> str | None:
    """Why the arm did not spend the budget its reading names (None when it did)."""
    if arm not in ARM_BUDGETS:
        return None
    measure, target = ARM_BUDGETS[arm]
    share = shares[f"{measure}_share"]
    if abs(share - target) <= BUDGET_ROUNDING:
        return None
    if measure == "layer_steps":
        return f"GTT spent {share:.0%} of uniform's layer-steps, not {target:.0%}"
    return f"the arm took {share:.0%} of uniform's steps, not {target:.0%}"


def _ratio(p: "pd.DataFrame") -> claims.Estimate:
    """uniform / GTT final loss: geometric mean over paired seeds, t-interval on the log scale."""
    m, lo, hi = t_interval(np.log(p["val_loss_uniform"] / p["val_loss"]))
    return claims.Estimate(float(np.exp(m)), float(np.exp(lo)), float(np.exp(hi)))


def _saving(p: "pd.DataFrame", measure: str) -> claims.Estimate:
    """1 − GTT / uniform of a budget measure: mean over paired seeds and its t-interval."""
    return claims.Estimate(*t_interval(1 - p[measure] / p[f"{measure}_uniform"]))


def _per_seed(p: "pd.DataFrame", values) -> dict[str, float]:
    return {str(int(s)): float(v) for s, v in zip(p.index, values)}


def _timed(p: "pd.DataFrame") -> "pd.DataFrame":
    """The paired seeds whose arm and uniform run were both timed in CPU-seconds."""
    return p.dropna(subset=["cpu_seconds", "cpu_seconds_uniform"]) if "cpu_seconds" in p else p[:0]


def unit_for(cv: "pd.DataFrame", claim_id: str,
             arm: str | None = None) -> tuple[claims.Unit, dict[str, Any]]:
    """One C6 claim's evidence on one arm (`CLAIM_ARMS`' unless given): a unit of the paper
    regime, and the numbers it rests on."""
    if claim_id not in CLAIM_ARMS:
        raise ValueError(f"not a C6 claim: {claim_id}")
    arm = arm or CLAIM_ARMS[claim_id]
    label = "GTT" if arm == "gtt" else f"'{arm}'"
    # the cost saving is fixed by the program: one seed measures it
    regime, p, problems = _judged(cv, seeds_needed=2, arm=arm, label=label)
    info: dict[str, Any] = {"regime": regime, "arm": arm, "seeds": [int(s) for s in p.index]}
    if len(p):
        info |= _shares(p)
        if (why := _budget_problem(arm, info)) is not None:
            problems.append(why)
    if claim_id == "P2-C6-faster" and len(p) >= 2:
        p = _timed(p)
        if len(p) < 2:
            problems.append(f"{len(p)} paired seed(s) of {label} and uniform timed in "
                            "CPU-seconds: an interval needs 2")
    name = f"{regime}, {ARM_UNITS.get(arm, arm)}"
    if problems:
        return claims.Unit(name=name, primary=None, precondition="; ".join(problems)), info
    secondary: dict[str, claims.Estimate] = {}
    if claim_id in ("P2-C6-loss-ratio", "P2-C6-half-budget"):
        est = _ratio(p)
        info["per_seed"] = _per_seed(p, p["val_loss_uniform"] / p["val_loss"])
        if claim_id == "P2-C6-half-budget":
            secondary = {"2.1× lower loss": est}
    elif claim_id == "P2-C6-faster":
        est = _saving(p, "cpu_seconds")
        info["per_seed"] = _per_seed(p, 1 - p["cpu_seconds"] / p["cpu_seconds_uniform"])
        info["flops_saving"] = float((1 - p["flops"] / p["flops_uniform"]).mean())  # shown
    else:  # P2-C6-cost: the quality clause decides; the saving, fixed by the program, is beside
        saved = 1 - p["flops"] / p["flops_uniform"]
        est = _ratio(p)
        info["per_seed"] = _per_seed(p, p["val_loss_uniform"] / p["val_loss"])
        secondary = {SAVING: claims.Estimate.exact(float(saved.mean()))}
        info["quality"] = [est.point, est.lo, est.hi]
        info["flops_saving"] = float(saved.mean())
        timed = _timed(p)
        if len(timed):
            info["cpu_saving"] = float((1 - timed["cpu_seconds"]
                                        / timed["cpu_seconds_uniform"]).mean())
    info["estimate"] = [est.point, est.lo, est.hi]
    return claims.Unit(name=name, primary=est, secondary=secondary), info


def paper_arm_unit(cv: "pd.DataFrame") -> tuple[claims.Unit, dict[str, Any]]:
    """P2-C6-half-budget read as the paper's own arm: GTT at 416 of uniform's 656 optimizer
    steps (63 %), paired by seed with uniform at full budget."""
    return unit_for(cv, "P2-C6-half-budget", arm=PAPER_ARM)


def _claim(claim_id: str, cv: "pd.DataFrame", setting: str, ours: str) -> claims.Claim:
    decl = DECLARATIONS[claim_id]
    unit, info = unit_for(cv, claim_id)
    return claims.make(decl, claims.decide(decl, [unit]), ours=ours, setting=setting,
                       numbers=info)


def _arm_text(c: "pd.DataFrame", arm: str, fmt) -> str:
    """`fmt(arm's row, uniform's row)` for each regime of `comparison`'s table `c` (indexed by
    regime and arm) that ran the arm; "not run" when none did."""
    regimes = [r for r in c.index.get_level_values(0).unique()
               if (r, arm) in c.index and (r, "uniform") in c.index]
    return "; ".join(f"{r}: {fmt(c.loc[(r, arm)], c.loc[(r, 'uniform')])}"
                     for r in regimes) or "not run"


def _pct(x: float) -> str:
    return "not timed" if np.isnan(x) else f"{x:.0%}"


def _fewer(share: float) -> str:
    """A share of uniform's budget as a saving: "46 % fewer", "4 % more"; NaN: not counted."""
    if np.isnan(share):
        return "not timed in"
    return f"{1 - share:.0%} fewer" if share <= 1 else f"{share - 1:.0%} more"


def _loss(g, u) -> str:
    return (f"{g['final val loss']:.3f} ± {g['sd']:.3f} vs uniform {u['final val loss']:.3f} "
            f"({g['uniform / arm loss']:.2f}×)")


def _table(cv: "pd.DataFrame", c: "pd.DataFrame | None") -> "pd.DataFrame":
    return comparison(cv).set_index(["regime", "arm"]) if c is None else c


def assess_ratio(cv: "pd.DataFrame", setting: str,
                 c: "pd.DataFrame | None" = None) -> claims.Claim:
    """P2-C6-loss-ratio (4.7× lower loss than uniform in identical steps) decided on GTT at
    uniform's optimizer steps; the wording also gives the layer-steps arm's losses per regime.
    `c` is `comparison`'s table, indexed by regime and arm (computed when not given)."""
    c = _table(cv, c)
    return _claim("P2-C6-loss-ratio", cv, setting,
                  f"GTT at uniform's optimizer steps: {_arm_text(c, IDENTICAL_ARM, _loss)}. "
                  f"GTT at 50 % of layer-steps (more steps than uniform): "
                  f"{_arm_text(c, 'gtt', _loss)}")


def assess_half_budget(cv: "pd.DataFrame", setting: str,
                       c: "pd.DataFrame | None" = None) -> claims.Claim:
    """Two readings of "50 % budget", each a unit: GTT at half of uniform's layer-steps (our
    `gtt` arm) and the paper's own arm at 63 % of uniform's optimizer steps; the cross-unit
    rule gives the verdict."""
    c = _table(cv, c)
    decl = DECLARATIONS["P2-C6-half-budget"]
    unit, info = unit_for(cv, "P2-C6-half-budget")
    paper_unit, paper_info = paper_arm_unit(cv)
    ours = _arm_text(
        c, "gtt", lambda g, u: f"GTT {g['final val loss']:.3f} at {g['layer_steps share']:.0%} "
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
    """P2-C6-faster decided on GTT at uniform's optimizer steps (the CPU-seconds saved against
    uniform); the wording gives its shares of uniform's CPU-seconds and FLOPs, and the
    layer-steps arm's beside. `c` as in `assess_ratio`."""
    c = _table(cv, c)

    def took(g, u) -> str:
        return (f"took {_pct(g['cpu_seconds share'])} of uniform's CPU-seconds and "
                f"{g['flops share']:.0%} of its FLOPs")

    def steps(g, u) -> str:
        return f"{g['step share']:.0%} of uniform's steps, {took(g, u)}"

    return _claim("P2-C6-faster", cv, setting,
                  f"GTT at uniform's optimizer steps, {_arm_text(c, IDENTICAL_ARM, took)}. "
                  f"GTT at 50 % of layer-steps, {_arm_text(c, 'gtt', steps)}")


def assess_cost(cv: "pd.DataFrame", setting: str,
                c: "pd.DataFrame | None" = None) -> claims.Claim:
    """P2-C6-cost decided on the paper's arm (416 of uniform's 656 steps) by its quality clause
    (uniform / GTT final loss: the saving of an arm that runs fewer steps holds by construction),
    with the FLOPs saved (fixed by the program, no interval) as its secondary; the wording gives
    the CPU-seconds and layer-steps saved, and the layer-steps arm's FLOP saving beside. `c` as
    in `assess_ratio`."""
    c = _table(cv, c)

    def cost(g, u) -> str:
        return (f"{_fewer(g['flops share'])} FLOPs ({_fewer(g['cpu_seconds share'])} "
                f"CPU-seconds, {_fewer(g['layer_steps share'])} layer-steps) at a final loss of "
                f"{_loss(g, u)}")

    def flops(g, u) -> str:
        return f"{_fewer(g['flops share'])} FLOPs at a final loss of {_loss(g, u)}"

    return _claim("P2-C6-cost", cv, setting,
                  "the saving holds by construction of the arm (it runs fewer steps); its "
                  f"quality decides. The paper's arm ({PAPER_STEP_SHARE:.0%} of uniform's steps): "
                  f"{_arm_text(c, PAPER_ARM, cost)}. GTT at 50 % of layer-steps: "
                  f"{_arm_text(c, 'gtt', flops)}")


def assess(cv: "pd.DataFrame", setting: str) -> list:
    """The four C6 claims (one finding), judged in the paper's regime."""
    c = comparison(cv).set_index(["regime", "arm"])  # once for all four claims
    return [assess_ratio(cv, setting, c), assess_half_budget(cv, setting, c),
            assess_faster(cv, setting, c), assess_cost(cv, setting, c)]
