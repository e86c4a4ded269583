"""Chapter 06's two C4 claims, decided by `claims.decide` from their declarations: only scaling
preserves quality (`only_scaling_units`, `assess_only_scaling`, with the generation check
calibrated on the unedited model, `coherence`) and the sizes of the damage
(`magnitudes_units`, `assess_magnitudes`, on chapter 05's log scale); `assess` decides both.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
import pandas as pd

from layerlab import claims
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.importance import log10_estimate
from layerlab.anatomy.strategies.measurement import BENIGN, DIRECTIONS, MATCHED_SIZE, STRATEGIES

if TYPE_CHECKING:
    from layerlab.anatomy.strategies.experiment import MatchedResult, StrategiesResult

__all__ = ["CHAPTER", "OTHERS", "MATCHED_SET", "strategies_estimate", "coherence",
           "only_scaling_units", "assess_only_scaling", "magnitudes_units", "assess_magnitudes",
           "assess"]


CHAPTER = "06_manipulation_strategies"
OTHERS = [name for name in STRATEGIES if name != BENIGN]
MATCHED_SET = {"E0": "E0", "E1": "E1 subset"}  # each set's matched-size runs (the control)


def _decided(claim_id: str, units: list[claims.Unit], *, ours: str, setting: str,
             numbers: dict[str, Any] | None = None) -> claims.Claim:
    """The one decision procedure (`claims.decide`) on the claim's declaration and units."""
    decl = DECLARATIONS[claim_id]
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


def strategies_estimate(df: pd.DataFrame, names, stat) -> claims.Estimate | None:
    """`stat` (np.min or np.max) over the named strategies' degradations, at the point and at
    their lower and upper interval ends; None unless every named strategy is there."""
    rows = df[df["strategy"].isin(list(names))]
    if rows["strategy"].nunique() < len(set(names)):
        return None
    return claims.Estimate(*(float(stat(rows[c].to_numpy(dtype=float)))
                             for c in ("deg", "lo", "hi")))


def _triple(e: claims.Estimate | None) -> list[float] | None:
    return None if e is None else [e.point, e.lo, e.hi]


def coherence(gens: pd.DataFrame) -> dict[str, Any]:
    """The generation check calibrated on the unedited model (VERDICTS.md §3): per prompt the
    change in distinct-2 from the unedited text to scale ×0.9 on S, its mean with a 95 %
    t-interval over prompts, in units of the unedited model's own variation across prompts
    (1.96 × the standard deviation of its distinct-2). `estimate` is None with fewer than two
    prompts or an unedited model whose distinct-2 does not vary (no scale to calibrate on)."""
    from scipy.stats import t as student_t

    wide = gens.pivot_table(index="prompt", columns="condition", values="distinct_2",
                            aggfunc="first")
    scaled = f"{BENIGN} on S"
    if "unedited" not in wide or scaled not in wide:
        return {"estimate": None, "prompts": 0}
    pair = wide[["unedited", scaled]].dropna()
    n = len(pair)
    out: dict[str, Any] = {"estimate": None, "prompts": n,
                           "unedited_mean": float(pair["unedited"].mean()) if n else math.nan,
                           "scaled_mean": float(pair[scaled].mean()) if n else math.nan}
    if n < 2:
        return out
    sd = float(pair["unedited"].std(ddof=1))
    diff = pair[scaled] - pair["unedited"]
    mean, half = float(diff.mean()), float(student_t.ppf(0.975, n - 1) * diff.std(ddof=1)
                                           / math.sqrt(n))
    out.update(unedited_sd=sd, change=mean, change_ci=[mean - half, mean + half])
    if sd > 0:
        scale = 1.96 * sd
        out["estimate"] = claims.Estimate(mean / scale, (mean - half) / scale,
                                          (mean + half) / scale)
    return out


def only_scaling_units(joint: pd.DataFrame, gens: pd.DataFrame,
                       matched_joint: pd.DataFrame | None) -> list[claims.Unit]:
    """P2-C4-only-scaling, one unit per set: scale ×0.9 on S (primary); control, the most
    damaging of clone, mix and low-rank mix at ×0.9's relative weight change (None without the
    matched runs); secondaries, the least damaging other strategy at full strength and the
    calibrated generation check."""
    text = coherence(gens)["estimate"]
    units = []
    for s in sorted(set(joint["set"])):
        one = joint[joint["set"] == s]
        scale = strategies_estimate(one, [BENIGN], np.max)
        control = None
        if matched_joint is not None:
            m = matched_joint[(matched_joint["matched"] == "size joint")
                              & (matched_joint["set"] == MATCHED_SET.get(s, s))]
            control = strategies_estimate(m, [d for d in DIRECTIONS if d != "zero"], np.max)
        sec = {"others harmful": strategies_estimate(one, OTHERS, np.min), "coherent text": text}
        units.append(claims.Unit(
            name=s, primary=scale,
            precondition=None if scale is not None else "scale ×0.9 on S was not run",
            control=control, secondary={k: v for k, v in sec.items() if v is not None}))
    return units


def assess_only_scaling(result: StrategiesResult, gens: pd.DataFrame,
                        matched_result: MatchedResult | None, setting: str, *,
                        stand_in: str | None = None) -> claims.Claim:
    """P2-C4-only-scaling decided on `only_scaling_units`; the wording gives each strategy's
    joint degradation on S, the matched-size runs (`matched_result`; None: not run) and the
    calibrated generation check on `gens`. `stand_in`: the failed stand-in precision
    precondition, if the copies carry ×0.9's degradation across the band's edge."""
    joint = result.joint.set_index(["set", "strategy"])
    mj = matched_result.joint if matched_result is not None else None
    sets = sorted(set(result.joint["set"]))
    text = coherence(gens)
    shown = ""
    if mj is not None:
        size = mj[mj["matched"] == "size joint"].set_index(["set", "strategy"])
        shown = (f" — at the relative weight change of ×0.9 ({MATCHED_SIZE:g}): " + "; ".join(
            f"{s} " + ", ".join(f"{n} {size.loc[(s, n), 'deg']:+,.1f} % [{size.loc[(s, n), 'lo']:+,.1f}, "
                                f"{size.loc[(s, n), 'hi']:+,.1f}]" for n in DIRECTIONS)
            for s in sorted(set(mj["set"]))) + " (zero at this size is ×0.9 itself)")
    gen = (f"; greedy text distinct-2 over {text['prompts']} prompts: unedited "
           f"{text['unedited_mean']:.2f}, scale ×0.9 on S {text['scaled_mean']:.2f}"
           if text["prompts"] else "; no paired generations")
    if "change" in text:
        e = text["estimate"]
        gen += (f" (change {text['change']:+.3f} [{text['change_ci'][0]:+.3f}, "
                f"{text['change_ci'][1]:+.3f}]; unedited spread across prompts sd "
                f"{text['unedited_sd']:.3f}" + (f", calibrated {e.point:+.2f} [{e.lo:+.2f}, {e.hi:+.2f}]"
                                                 if e is not None else ", no spread to calibrate on")
                + ")")
    units = claims.flagged(only_scaling_units(result.joint, gens, mj), stand_in)
    return _decided(
        "P2-C4-only-scaling", units,
        ours="; ".join(f"{s}: " + ", ".join(
            f"{n} {joint.loc[(s, n), 'deg']:+,.0f} % [{joint.loc[(s, n), 'lo']:+,.0f}, "
            f"{joint.loc[(s, n), 'hi']:+,.0f}]" for n in STRATEGIES) for s in sets) + shown + gen,
        setting=f"{setting}; S = {result.target}",
        numbers={"coherence": {**text, "estimate": _triple(text["estimate"])},
                 **{u.name: {"primary": _triple(u.primary), "control": _triple(u.control),
                             **{k: _triple(v) for k, v in u.secondary.items()}}
                    for u in units}})


def magnitudes_units(joint: pd.DataFrame) -> list[claims.Unit]:
    """P2-C4-magnitudes, one unit per set: log10 of the most damaging other strategy on S
    (primary) and scale ×0.9's degradation (secondary)."""
    units = []
    for s in sorted(set(joint["set"])):
        one = joint[joint["set"] == s]
        worst = log10_estimate(strategies_estimate(one, OTHERS, np.max))
        scale = strategies_estimate(one, [BENIGN], np.max)
        units.append(claims.Unit(
            name=s, primary=worst,
            precondition=None if worst is not None else
            "the other strategies were not all run, or none degrades perplexity (no logarithm)",
            secondary={} if scale is None else {"scaling +19 %": scale}))
    return units


def assess_magnitudes(result: StrategiesResult, setting: str) -> claims.Claim:
    """P2-C4-magnitudes (+19 % against millions of %) decided on `magnitudes_units`; the
    wording gives scale ×0.9's degradation and the worst other strategy's in each set."""
    joint = result.joint.set_index(["set", "strategy"])
    sets = sorted(set(result.joint["set"]))
    worst = {s: max(OTHERS, key=lambda o, s=s: joint.loc[(s, o), "deg"]) for s in sets}
    units = magnitudes_units(result.joint)
    return _decided(
        "P2-C4-magnitudes", units,
        ours="; ".join(f"{s}: scale {joint.loc[(s, BENIGN), 'deg']:+.1f} % "
                       f"[{joint.loc[(s, BENIGN), 'lo']:+.1f}, {joint.loc[(s, BENIGN), 'hi']:+.1f}], "
                       f"worst other ({worst[s]}) {joint.loc[(s, worst[s]), 'deg']:+,.0f} % "
                       f"[{joint.loc[(s, worst[s]), 'lo']:+,.0f}, {joint.loc[(s, worst[s]), 'hi']:+,.0f}]"
                       for s in sets),
        setting=f"{setting}; S = {result.target}",
        numbers={u.name: {"log10_worst_other": _triple(u.primary),
                          **{k: _triple(v) for k, v in u.secondary.items()}} for u in units})


def assess(result: StrategiesResult, gens: pd.DataFrame, matched_result: MatchedResult | None,
           setting: str, *, stand_in: Mapping[str, str] | None = None) -> list[claims.Claim]:
    """Chapter 06's two claims: only scaling preserves quality, and the sizes of the damage.
    `stand_in` (`precision.unresolved`): the claims the 4-bit stand-in's copies cannot resolve."""
    stand_in = stand_in or {}
    return [assess_only_scaling(result, gens, matched_result, setting,
                                stand_in=stand_in.get("P2-C4-only-scaling")),
            assess_magnitudes(result, setting)]
