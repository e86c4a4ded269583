"""Chapter 04's verdicts: one function per claim (P1-D1 … P1-D5), each deciding its units with
`claims.decide` against its declaration (`layerlab.depth.declarations`), from the α_ℓ table
(`display.alpha_table`) and the signatures; plus the intervals and the convergence test they
share."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from layerlab import claims
from layerlab.claims import Estimate, Unit
from layerlab.depth.declarations import DECLARATIONS
from layerlab.depth.toy.display import final_alphas

if TYPE_CHECKING:
    import pandas as pd

CHAPTER = "04_toy_depth_mechanisms"
MOVING = 0.01  # the least change of a statistic between the last two evaluations that counts as moving


def _distance(value: float, band: tuple[float, float]) -> float:
    lo, hi = band
    return max(lo - value, 0.0, value - hi)


def converging(history: list[float], band: tuple[float, float]) -> bool:
    """Whether a statistic outside `band` is still moving toward it: its distance to the band
    shrank by at least `MOVING` between the last two evaluations. Such a unit has not converged
    as far as the verdict goes (more training could bring it in); one moving away, or standing
    still, is taken as it stands."""
    if len(history) < 2 or _distance(history[-1], band) == 0:
        return False
    return _distance(history[-2], band) - _distance(history[-1], band) >= MOVING


def t_interval(point: float, se: float, df: float) -> Estimate | None:
    """`point` ± the 97.5 % t quantile × `se` (None without a finite SE or a degree of freedom)."""
    from scipy import stats

    if not (np.isfinite(point) and np.isfinite(se) and df >= 1):
        return None
    half = float(stats.t.ppf(0.975, df)) * float(se)
    return Estimate(float(point), float(point) - half, float(point) + half)


def mean_interval(values) -> Estimate | None:
    """The mean with its t interval over independent values (None below two)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return None
    return t_interval(float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))), len(v) - 1)


def _alpha(r, *, common: bool = False) -> Estimate | None:
    """A sweep's final α_ℓ (over its own depths, or the shared ones) with its t interval."""
    if common:
        return t_interval(r.alpha_common, r.alpha_common_se, r.n_common - 2)
    return t_interval(r.alpha, r.alpha_se, r.n_depths - 2)


def _difference(a, b) -> Estimate | None:
    """α_ℓ(a) − α_ℓ(b) over the shared depths; the t interval of the difference of two
    independent fits with the fewer degrees of freedom of the two."""
    return t_interval(a.alpha_common - b.alpha_common,
                      math.hypot(a.alpha_common_se, b.alpha_common_se),
                      min(a.n_common, b.n_common) - 2)


def _history(alphas: "pd.DataFrame", sweep: str, column: str = "alpha") -> "pd.Series":
    return alphas[alphas["sweep"] == sweep].sort_values("step").set_index("step")[column]


def _select(final: "pd.DataFrame", **kw) -> "pd.DataFrame":
    sel = final[final["block"] == "euler"]
    for k, v in kw.items():
        sel = sel[np.isclose(sel[k], v)] if isinstance(v, float) else sel[sel[k] == v]
    return sel


def _unconverged(history, band: claims.Band, what: str) -> str | None:
    """The failed precondition of a unit whose statistic still moves toward the band."""
    h = [float(x) for x in history]
    if converging(h, (band.lo, band.hi)):
        return (f"not converged: {what} {h[-2]:.2f} → {h[-1]:.2f} between the last two "
                f"evaluations, still moving toward the band {band.text('.3g')}")
    return None


def _no_interval(est: Estimate | None, what: str) -> str | None:
    return None if est is not None else f"{what}: fewer than 3 student depths, no interval"


def _sweep_unit(alphas: "pd.DataFrame", name: str, r, decl: claims.Declaration,
                secondary: dict[str, Estimate] | None = None) -> Unit:
    """One sweep as a unit: its final α_ℓ over its own depths, converged or not."""
    est = _alpha(r)
    pre = (_unconverged(_history(alphas, name), decl.band, "α_ℓ")
           or _no_interval(est, "α_ℓ"))
    return Unit(name=name, primary=est, precondition=pre, secondary=secondary or {})


def _placeholder(what: str) -> Unit:
    return Unit(name="no sweep", primary=None, precondition=f"no {what} in this grid")


def _est(e: Estimate | None) -> str:
    return "undefined" if e is None else f"{e.point:.2f} [{e.lo:.2f}, {e.hi:.2f}]"


def _fmt(units: list[Unit], final: "pd.DataFrame") -> str:
    """Each sweep's α_ℓ with its interval, deepest local slope and failed precondition."""
    out = []
    for u in units:
        if u.name not in final.index:
            out.append(f"{u.name}: {u.precondition}")
            continue
        text = f"{u.name}: α {_est(u.primary)} (deepest pair {final.loc[u.name, 'deep_slope']:.2f})"
        out.append(text + (f" — {u.precondition}" if u.precondition else ""))
    return "; ".join(out) or "none"


def _numbers(units: list[Unit]) -> dict[str, Any]:
    return {u.name: {"primary": None if u.primary is None else [u.primary.point, u.primary.lo,
                                                                 u.primary.hi],
                     "precondition": u.precondition,
                     **{k: [e.point, e.lo, e.hi] for k, e in u.secondary.items()}}
            for u in units}


def _decided(claim_id: str, units: list[Unit], *, ours: str, setting: str,
             numbers: dict | None = None) -> claims.Claim:
    decl = DECLARATIONS[claim_id]
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


def assess_independent(alphas: "pd.DataFrame", setting: str):
    """P1-D1: every independent-teacher sweep (KL at every T, and MSE), one unit each: its final
    α_ℓ's t interval against the ensemble band; a sweep outside the band still moving toward it
    has not converged (not testable)."""
    decl = DECLARATIONS["P1-D1-independent-teacher"]
    final = final_alphas(alphas)
    ind = _select(final, teacher="independent")
    units = [_sweep_unit(alphas, s, r, decl) for s, r in ind.iterrows()]
    return _decided(decl.id, units or [_placeholder("independent-teacher sweep")],
                    ours=_fmt(units, final), setting=setting, numbers=_numbers(units))


def assess_tied_steep(alphas: "pd.DataFrame", setting: str):
    """P1-D2: every tied KL sweep at the highest temperature, one unit each: α_ℓ against ≥ 2,
    and (secondary) steeper than the independent sweep of the same temperature and seed."""
    decl = DECLARATIONS["P1-D2-tied-teacher-steep"]
    final = final_alphas(alphas)
    kl = _select(final, objective="kl")
    hot = float(kl["temperature"].max()) if len(kl) else np.nan
    tied, ind = (_select(kl, teacher=t, temperature=hot) for t in ("tied", "independent"))
    units = []
    for s, r in tied.iterrows():
        twin = ind[ind["seed"] == r.seed]
        diff = _difference(r, twin.iloc[0]) if len(twin) else None
        units.append(_sweep_unit(alphas, s, r, decl,
                                 {"steeper than independent": diff} if diff else None))
    diffs = "; ".join(f"{u.name} − independent {_est(u.secondary.get('steeper than independent'))}"
                      for u in units)
    return _decided(decl.id, units or [_placeholder(f"tied KL sweep at T = {hot:g}")],
                    ours=f"T = {hot:g}, tied: {_fmt(units, final)}; independent: "
                         + "; ".join(f"{s}: α {_est(_alpha(r))}" for s, r in ind.iterrows())
                         + f"; over the shared depths: {diffs or 'none'}",
                    setting=setting, numbers={"temperature": hot, **_numbers(units)})


def assess_tied_cold(alphas: "pd.DataFrame", setting: str):
    """P1-D3: every tied KL sweep at the lowest temperature, one unit each, against the ensemble
    band."""
    decl = DECLARATIONS["P1-D3-tied-cold"]
    final = final_alphas(alphas)
    kl = _select(final, objective="kl")
    cold = float(kl["temperature"].min()) if len(kl) else np.nan
    tied = _select(kl, teacher="tied", temperature=cold)
    units = [_sweep_unit(alphas, s, r, decl) for s, r in tied.iterrows()]
    return _decided(decl.id, units or [_placeholder(f"tied KL sweep at T = {cold:g}")],
                    ours=f"T = {cold:g}: {_fmt(units, final)}", setting=setting,
                    numbers={"temperature": cold, **_numbers(units)})


def assess_mse(alphas: "pd.DataFrame", setting: str):
    """P1-D4: per teacher seed, the tied minus the independent MSE sweep's α_ℓ over the shared
    depths against the 'steeper' band, with the independent α_ℓ ≈ 1 as secondary; a pair whose
    difference or independent α_ℓ still moves toward its band has not converged."""
    decl = DECLARATIONS["P1-D4-mse-ordering"]
    ensemble = decl.secondary[0].band
    final = final_alphas(alphas)
    ind, tied = (_select(final, objective="mse", teacher=t) for t in ("independent", "tied"))
    units = []
    for seed in sorted(set(ind["seed"]) | set(tied["seed"])):
        i, t = ind[ind["seed"] == seed], tied[tied["seed"] == seed]
        name = f"seed {seed}"
        if not (len(i) and len(t)):
            units.append(Unit(name=name, primary=None, precondition="no tied and independent "
                                                                    "MSE pair for this seed"))
            continue
        (si, ri), (st, rt) = next(i.iterrows()), next(t.iterrows())
        diff, alpha = _difference(rt, ri), _alpha(ri)
        gap = (_history(alphas, st, "alpha_common") - _history(alphas, si, "alpha_common")).dropna()
        pre = (_unconverged(gap, decl.band, f"α_ℓ({st}) − α_ℓ({si})")
               or _unconverged(_history(alphas, si), ensemble, f"α_ℓ({si})")
               or _no_interval(diff, "the difference"))
        units.append(Unit(name=name, primary=diff, precondition=pre,
                          secondary={"independent ≈ 1": alpha} if alpha else {}))
    ours = "; ".join(
        f"{u.name}: tied − independent {_est(u.primary)}, independent α "
        f"{_est(u.secondary.get('independent ≈ 1'))}"
        + (f" — {u.precondition}" if u.precondition else "") for u in units)
    sweeps = {t: _fmt([Unit(name=s, primary=_alpha(r)) for s, r in sel.iterrows()], final)
              for t, sel in (("independent", ind), ("tied", tied))}
    return _decided(decl.id, units or [_placeholder("MSE sweep")],
                    ours=f"{ours or 'none'}; sweeps over their own depths: independent "
                         f"{sweeps['independent']}; tied {sweeps['tied']}",
                    setting=setting, numbers=_numbers(units))


def assess_signatures(sig: "pd.DataFrame", control: "pd.DataFrame", setting: str):
    """P1-D5, an absence claim (no alignment of consecutive updates): the independent teacher's
    students' mean middle θ(Δh) with its t interval over students against [π/4, 3π/4]; the
    positive control is the tied teacher itself (a smooth flow, aligned updates), which the band
    must reject; the tied students aligning theirs is the secondary. `control` (students at
    default initialisation) is shown beside, not deciding."""
    decl = DECLARATIONS["P1-D5-student-signatures"]
    students = sig[sig["network"].str.startswith("student")]
    ind = students[students["teacher"] == "independent"]["middle_theta_dh"]
    tied = students[students["teacher"] == "tied"]["middle_theta_dh"]
    teacher = sig[sig["network"].str.startswith("teacher") & (sig["teacher"] == "tied")]
    init = control["middle_theta_dh"]
    primary, aligned = mean_interval(ind), mean_interval(tied)
    flow = (Estimate.exact(float(teacher["middle_theta_dh"].iloc[0])) if len(teacher) else None)
    unit = Unit(name="signature runs", primary=primary,
                precondition=None if primary is not None else
                f"{len(ind)} trained independent-teacher student(s) with ≥ 4 blocks: no interval",
                control=flow, secondary={"tied students align": aligned} if aligned else {})

    def span(v) -> str:
        return f"{v.min():.2f}–{v.max():.2f}" if len(v) else "none"

    return _decided(
        decl.id, [unit],
        ours=f"middle θ(Δh): independent students {_est(primary)} rad (range {span(ind)}), tied "
             f"students {_est(aligned)} (range {span(tied)}); positive control, the tied "
             f"teacher: {'not measured' if flow is None else f'{flow.point:.3f}'} rad; untrained "
             f"students (beside) {span(init)} rad",
        setting=setting,
        numbers={"independent": ind.tolist(), "tied": tied.tolist(), "untrained": init.tolist(),
                 "tied_teacher": None if flow is None else flow.point})


def assess(alphas: "pd.DataFrame", sig: "pd.DataFrame", control: "pd.DataFrame",
           setting: str) -> list:
    """Chapter 04's claims, each from its own function, decided by `claims.decide` against its
    declaration (`layerlab.depth.declarations`)."""
    return [assess_independent(alphas, setting), assess_tied_steep(alphas, setting),
            assess_tied_cold(alphas, setting), assess_mse(alphas, setting),
            assess_signatures(sig, control, setting)]
