"""Chapter 04's verdicts: one function per claim (P1-D1 … P1-D5), each deciding its units with
`claims.decide` against its declaration (`layerlab.depth.declarations`), from the α_ℓ table
(`display.alpha_table`) and the signatures; plus the convergence test they share.

The replication unit is the teacher seed (VERDICTS.md §1): a unit is a setting
(`display.Setting`, the sweeps that differ only by teacher seed), each seed gives one estimate
(α_ℓ over its students of at least `display.DEEP` blocks, `display.seed_alphas`; for D5 the
mean angle of its students), and the 95 % interval is the t interval over seeds. A setting
with one teacher seed has no interval: not testable at this budget (`ONE_SEED`). The t interval
of one sweep's fit over its 4–5 student depths measures how the curve bends, not how another
teacher would answer: it is not a verdict's interval."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import numpy as np

from layerlab import claims
from layerlab.claims import Estimate, Unit
from layerlab.depth.declarations import DECLARATIONS
from layerlab.depth.toy.display import DEEP, Setting, final_alphas, seed_alphas, settings
from layerlab.depth.toy.fits import mean_interval

if TYPE_CHECKING:
    import pandas as pd

CHAPTER = "04_toy_depth_mechanisms"
MOVING = 0.01  # the least change of a statistic between the last two evaluations that counts as moving
ONE_SEED = "one teacher seed: no interval over seeds"


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


def _unconverged(history, band: claims.Band, what: str) -> str | None:
    """The failed precondition of a unit whose statistic still moves toward the band."""
    h = [float(x) for x in history]
    if converging(h, (band.lo, band.hi)):
        return (f"not converged: {what} {h[-2]:.2f} → {h[-1]:.2f} between the last two "
                f"evaluations, still moving toward the band {band.text('.3g')}")
    return None


def _preconditions(*failed: str | None) -> str | None:
    """Every failed precondition of a unit in one line (None when all hold): a unit with one
    seed that is also still moving says both, so the reader sees what each would take."""
    return "; ".join(f for f in failed if f) or None


def _replicates(seeds: int) -> str | None:
    """Two teacher seeds at least: the interval is over seeds, and one seed has none."""
    if seeds >= 2:
        return None
    return ONE_SEED if seeds == 1 else "no teacher seed"


def _deep_enough(depths: tuple[int, ...]) -> str | None:
    if len(depths) >= 2:
        return None
    return (f"fewer than 2 student depths of at least {DEEP} blocks shared by every teacher "
            "seed: no α_ℓ")


def _select(final: "pd.DataFrame", **kw) -> "pd.DataFrame":
    sel = final[final["block"] == "euler"]
    for k, v in kw.items():
        sel = sel[np.isclose(sel[k], v)] if isinstance(v, float) else sel[sel[k] == v]
    return sel


def _twin(s: Setting, among: list[Setting], teacher: str) -> Setting | None:
    """The setting of `among` that is `s` with the other teacher type (same everything else)."""
    want = {**s.config, "teacher": teacher}
    return next((o for o in among if o.config == want), None)


def _seed_unit(alphas: "pd.DataFrame", s: Setting, band: claims.Band,
               secondary: dict[str, Estimate] | None = None) -> tuple[Unit, "pd.DataFrame"]:
    """One setting as a unit: the mean over its teacher seeds of each seed's final α_ℓ over the
    deep students, with its t interval over seeds; not testable with one seed, or while the
    seed mean, outside the band, still moves toward it. Also each seed's α_ℓ history."""
    hist = seed_alphas(alphas, s).dropna()
    est = mean_interval(hist.iloc[-1]) if len(hist) else None
    pre = _preconditions(_deep_enough(s.depths), _replicates(len(s.sweeps)),
                         _unconverged(hist.mean(axis=1), band, "α_ℓ (mean over seeds)")
                         if len(hist) else None)
    return Unit(name=s.name, primary=est, precondition=pre, secondary=secondary or {}), hist


def _gap(alphas: "pd.DataFrame", tied: Setting, ind: Setting) -> tuple["pd.DataFrame", tuple]:
    """α_ℓ(tied) − α_ℓ(independent) per teacher seed both settings have, at every evaluation,
    both fitted over the deep depths they share; and those depths."""
    depths = tuple(sorted(set(tied.depths) & set(ind.depths)))
    seeds = sorted(set(tied.sweeps) & set(ind.sweeps))

    def only(s: Setting) -> Setting:
        return dataclasses.replace(s, sweeps={k: s.sweeps[k] for k in seeds}, depths=depths)

    return (seed_alphas(alphas, only(tied)) - seed_alphas(alphas, only(ind))).dropna(), depths


def _placeholder(what: str) -> Unit:
    return Unit(name="no sweep", primary=None, precondition=f"no {what} in this grid")


def _est(e: Estimate | None) -> str:
    return "undefined" if e is None else f"{e.point:.2f} [{e.lo:.2f}, {e.hi:.2f}]"


def _span(depths) -> str:
    return f"{depths[0]}–{depths[-1]}" if len(depths) else "none"


def _last(hist: "pd.DataFrame") -> list[float]:
    return [float(v) for v in hist.iloc[-1]] if len(hist) else []


def _describe(s: Setting, unit: Unit, hist: "pd.DataFrame", final: "pd.DataFrame") -> str:
    """A setting's α_ℓ over seeds, each seed's, and (shown beside, not deciding) each sweep's
    fit over all its depths and its deepest pair's local slope."""
    sweeps = list(s.sweeps.values())
    beside = (", ".join(f"{final.loc[w, 'alpha']:.2f}" for w in sweeps),
              ", ".join(f"{final.loc[w, 'deep_slope']:.2f}" for w in sweeps))
    text = (f"{s.name} (teacher seeds {', '.join(map(str, s.sweeps))}): α {_est(unit.primary)} "
            f"over seeds, per seed {', '.join(f'{v:.2f}' for v in _last(hist))} over depths "
            f"{_span(s.depths)} (beside: all depths {beside[0]}; deepest pair {beside[1]})")
    return text + (f" — {unit.precondition}" if unit.precondition else "")


def _beside(alphas: "pd.DataFrame", s: Setting, final: "pd.DataFrame") -> str:
    """A setting shown beside a claim's units (a twin, a pair's member): its α_ℓ, not judged."""
    unit, hist = _seed_unit(alphas, s, DECLARATIONS["P1-D1-independent-teacher"].band)
    return _describe(s, dataclasses.replace(unit, precondition=None), hist, final)


def _numbers(units: list[Unit], seeds: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    seeds = seeds or {}
    return {u.name: {"primary": None if u.primary is None else [u.primary.point, u.primary.lo,
                                                                 u.primary.hi],
                     "precondition": u.precondition, **seeds.get(u.name, {}),
                     **{k: [e.point, e.lo, e.hi] for k, e in u.secondary.items()}}
            for u in units}


def _per_seed(s: Setting, hist: "pd.DataFrame", depths=None) -> dict[str, Any]:
    return {"seeds": [int(c) for c in hist.columns], "per_seed": _last(hist),
            "depths": list(s.depths if depths is None else depths)}


def _decided(claim_id: str, units: list[Unit], *, ours: str, setting: str,
             numbers: dict | None = None) -> claims.Claim:
    decl = DECLARATIONS[claim_id]
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


def _settings_claim(alphas: "pd.DataFrame", claim_id: str, chosen: "pd.DataFrame",
                    final: "pd.DataFrame", what: str, setting: str, *, prefix: str = "",
                    extra: dict[str, Any] | None = None) -> claims.Claim:
    """D1 and D3: every setting of `chosen` one unit, against the claim's band."""
    decl = DECLARATIONS[claim_id]
    units, text, seeds = [], [], {}
    for s in settings(chosen):
        unit, hist = _seed_unit(alphas, s, decl.band)
        units.append(unit)
        text.append(_describe(s, unit, hist, final))
        seeds[s.name] = _per_seed(s, hist)
    return _decided(claim_id, units or [_placeholder(what)],
                    ours=prefix + ("; ".join(text) or "none"), setting=setting,
                    numbers={**(extra or {}), **_numbers(units, seeds)})


def assess_independent(alphas: "pd.DataFrame", setting: str):
    """P1-D1: every independent-teacher setting (KL at every T, and MSE), its teacher seeds one
    unit: their mean final α_ℓ over the deep students with its t interval over seeds against
    the ensemble band; one seed, or a seed mean outside the band still moving toward it, is not
    testable."""
    final = final_alphas(alphas)
    return _settings_claim(alphas, "P1-D1-independent-teacher",
                           _select(final, teacher="independent"), final,
                           "independent-teacher sweep", setting)


def assess_tied_steep(alphas: "pd.DataFrame", setting: str):
    """P1-D2: every tied KL setting at the highest temperature, its teacher seeds one unit:
    their mean α_ℓ against ≥ 2, and (secondary) steeper than the independent setting of the same
    temperature, per teacher seed over the deep depths both share, t interval over seeds."""
    decl = DECLARATIONS["P1-D2-tied-teacher-steep"]
    final = final_alphas(alphas)
    kl = _select(final, objective="kl")
    hot = float(kl["temperature"].max()) if len(kl) else np.nan
    tied, ind = (settings(_select(kl, teacher=t, temperature=hot))
                 for t in ("tied", "independent"))
    units, text, seeds, diffs = [], [], {}, []
    for s in tied:
        twin, secondary = _twin(s, ind, "independent"), {}
        if twin is not None:
            gap, depths = _gap(alphas, s, twin)
            diff = mean_interval(gap.iloc[-1]) if len(gap) else None
            if diff is not None:
                secondary["steeper than independent"] = diff
            diffs.append(f"{s.name} − {twin.name} {_est(diff)} (per seed "
                         f"{', '.join(f'{v:.2f}' for v in _last(gap))}, depths {_span(depths)})")
        unit, hist = _seed_unit(alphas, s, decl.band, secondary)
        units.append(unit)
        text.append(_describe(s, unit, hist, final))
        seeds[s.name] = _per_seed(s, hist)
    twins = [_beside(alphas, s, final) for s in ind]
    return _decided(decl.id, units or [_placeholder(f"tied KL sweep at T = {hot:g}")],
                    ours=f"T = {hot:g}, tied: {'; '.join(text) or 'none'}; independent: "
                         f"{'; '.join(twins) or 'none'}; tied − independent: "
                         f"{'; '.join(diffs) or 'none'}",
                    setting=setting, numbers={"temperature": hot, **_numbers(units, seeds)})


def assess_tied_cold(alphas: "pd.DataFrame", setting: str):
    """P1-D3: every tied KL setting at the lowest temperature, its teacher seeds one unit,
    against the ensemble band."""
    final = final_alphas(alphas)
    kl = _select(final, objective="kl")
    cold = float(kl["temperature"].min()) if len(kl) else np.nan
    return _settings_claim(alphas, "P1-D3-tied-cold",
                           _select(kl, teacher="tied", temperature=cold), final,
                           f"tied KL sweep at T = {cold:g}", setting, prefix=f"T = {cold:g}: ",
                           extra={"temperature": cold})


def _mse_unit(alphas: "pd.DataFrame", tied: Setting, ind: Setting, decl: claims.Declaration,
              ensemble: claims.Band) -> tuple[Unit, str, dict[str, Any]]:
    """P1-D4's unit: a tied MSE setting and its independent twin over their shared seeds."""
    gap, depths = _gap(alphas, tied, ind)
    unit_ind, hist_ind = _seed_unit(alphas, ind, ensemble)
    diff = mean_interval(gap.iloc[-1]) if len(gap) else None
    pre = _preconditions(
        _deep_enough(depths), _replicates(gap.shape[1]),
        _unconverged(gap.mean(axis=1), decl.band, "α_ℓ(tied) − α_ℓ(independent) (mean over "
                                                  "seeds)") if len(gap) else None,
        _unconverged(hist_ind.mean(axis=1), ensemble, f"α_ℓ({ind.name}) (mean over seeds)")
        if len(hist_ind) else None)
    name = f"{tied.name} − {ind.name}"
    unit = Unit(name=name, primary=diff, precondition=pre,
                secondary={"independent ≈ 1": unit_ind.primary} if unit_ind.primary else {})
    text = (f"{name} (teacher seeds {', '.join(map(str, gap.columns))}): {_est(diff)} over "
            f"seeds, per seed {', '.join(f'{v:.2f}' for v in _last(gap))} over depths "
            f"{_span(depths)}; independent α {_est(unit_ind.primary)}"
            + (f" — {pre}" if pre else ""))
    return unit, text, {"seeds": [int(c) for c in gap.columns], "per_seed": _last(gap),
                        "depths": list(depths)}


def assess_mse(alphas: "pd.DataFrame", setting: str):
    """P1-D4: per MSE setting pair (tied and independent, same everything else), the tied minus
    the independent α_ℓ per teacher seed over the deep depths both share, t interval over seeds,
    against the 'steeper' band, with the independent setting's α_ℓ ≈ 1 as secondary; a pair whose
    mean difference or independent α_ℓ still moves toward its band has not converged."""
    decl = DECLARATIONS["P1-D4-mse-ordering"]
    ensemble = decl.secondary[0].band
    final = final_alphas(alphas)
    ind, tied = (settings(_select(final, objective="mse", teacher=t))
                 for t in ("independent", "tied"))
    units, text, seeds = [], [], {}
    for t in tied:
        i = _twin(t, ind, "independent")
        if i is None:
            units.append(Unit(name=t.name, primary=None,
                              precondition="no independent MSE setting to pair with"))
            continue
        unit, line, numbers = _mse_unit(alphas, t, i, decl, ensemble)
        units.append(unit)
        text.append(line)
        seeds[unit.name] = numbers
    units += [Unit(name=i.name, primary=None, precondition="no tied MSE setting to pair with")
              for i in ind if _twin(i, tied, "tied") is None]
    sweeps = [_beside(alphas, s, final) for s in (*ind, *tied)]
    return _decided(decl.id, units or [_placeholder("MSE sweep")],
                    ours=f"{'; '.join(text) or 'none'}; each setting's α_ℓ: {'; '.join(sweeps)}",
                    setting=setting, numbers=_numbers(units, seeds))


# --- P1-D5: the signature runs -------------------------------------------------------------------
def _final_signatures(sig: "pd.DataFrame") -> "pd.DataFrame":
    """The rows of each run's last evaluation (all rows where the record keeps no history)."""
    if "step" not in sig:
        return sig
    last = sig.groupby(["teacher", "seed"])["step"].transform("max")
    return sig[sig["step"] == last]


def _students(sig: "pd.DataFrame", teacher: str) -> "pd.DataFrame":
    return sig[sig["network"].str.startswith("student") & (sig["teacher"] == teacher)]


def _without_length(key: str) -> dict[str, Any]:
    return {k: v for k, v in json.loads(key).items() if k != "steps"}


def _peers_moving(alphas: "pd.DataFrame", run: "pd.DataFrame", teacher: str) -> str | None:
    """The convergence precondition of a signature run whose angle lies outside its band and
    whose record keeps no θ(Δh) history to say whether it still moves toward it: the sweeps of
    its setting (everything but length, teacher seed and students) stand in. Their α_ℓ (mean
    over seeds, deep depths) must have stopped moving (a change under `MOVING`) between their
    last two evaluations at or before the run's length. Either direction counts: where α_ℓ's
    band lies says nothing about where the angle goes. A stand-in only: the sweeps decay their
    learning rate over their own length, so at the run's length they are not the run's state;
    a run that records its angles at each evaluation is judged on them instead."""
    steps = int(run["train_steps"].max())
    head = (f"the {teacher} students' mean middle θ(Δh) lies outside its band and their run "
            f"keeps only its final angles (no history to test whether it still moves toward it) "
            f"after {steps:,} steps")
    setting = _without_length(run["setting_key"].iloc[0])
    peers = [s for s in settings(final_alphas(alphas)) if _without_length(s.key) == setting]
    if not peers:
        return f"{head}, and no sweep shares its setting: convergence cannot be tested"
    for p in peers:
        mean = seed_alphas(alphas, p).dropna().mean(axis=1)
        upto = mean[mean.index <= steps]
        names = f"{', '.join(p.sweeps.values())}, {int(p.config['steps']):,} steps"
        if len(upto) < 2:
            return (f"{head}; the sweeps of its setting ({names}) have fewer than two "
                    f"evaluations by then: convergence cannot be tested")
        (s1, a), (s2, b) = upto.iloc[-2:].items()
        if abs(b - a) >= MOVING:
            later = f", {mean.iloc[-1]:.2f} at {int(mean.index[-1]):,}" if mean.index[-1] > s2 else ""
            return (f"not converged: {head}; the sweeps of its setting ({names}) were still "
                    f"moving at that length: α_ℓ {a:.2f} → {b:.2f} between steps {int(s1):,} "
                    f"and {int(s2):,} (mean over seeds, depths {_span(p.depths)}){later}")
    return None


def signature_convergence(sig: "pd.DataFrame", teacher: str, alphas: "pd.DataFrame",
                          band: claims.Band) -> str | None:
    """D1–D4's convergence precondition for the signature run of one teacher type, on the mean
    θ(Δh) of its students: inside `band` it is taken as it stands (no history needed, as for
    D1–D4); outside, on its history where the record keeps one (`step`), else through the
    sweeps of the same setting (`_peers_moving`). None when it holds."""
    run = sig[sig["teacher"] == teacher]
    students = _students(run, teacher)
    if not len(students):
        return None  # no run: the missing statistic is named elsewhere
    final = float(_students(_final_signatures(run), teacher)["middle_theta_dh"].mean())
    if _distance(final, (band.lo, band.hi)) == 0:
        return None
    if "step" in run and run["step"].nunique() >= 2:
        hist = students.groupby("step")["middle_theta_dh"].mean()
        return _unconverged(hist, band, f"the {teacher} students' mean middle θ(Δh)")
    return _peers_moving(alphas, run, teacher)


def assess_signatures(sig: "pd.DataFrame", control: "pd.DataFrame", alphas: "pd.DataFrame",
                      setting: str):
    """P1-D5, an absence claim (no alignment of consecutive updates): per teacher seed the mean
    middle θ(Δh) of the independent teacher's trained students, the mean over seeds with its t
    interval over seeds against [π/4, 3π/4]; the positive control is the tied teacher itself (a
    smooth flow, aligned updates), which the band must reject; the tied students aligning theirs
    is the secondary. Preconditions: two teacher seeds, and both runs converged
    (`signature_convergence`, against `alphas` where the record keeps no history). `control`
    (students at default initialisation) is shown beside, not deciding."""
    decl = DECLARATIONS["P1-D5-student-signatures"]
    last = _final_signatures(sig)
    per = {t: _students(last, t).groupby("seed")["middle_theta_dh"].mean()
           for t in ("independent", "tied")}
    ind, tied = _students(last, "independent"), _students(last, "tied")
    teacher = last[last["network"].str.startswith("teacher") & (last["teacher"] == "tied")]
    flows = teacher["middle_theta_dh"].to_numpy(dtype=float)
    flow = Estimate.exact(float(flows[0])) if len(flows) == 1 else mean_interval(flows)
    primary, aligned = mean_interval(per["independent"]), mean_interval(per["tied"])
    pre = _preconditions(
        _replicates(len(per["independent"])) if len(per["independent"]) else
        "no trained independent-teacher student with ≥ 4 blocks",
        signature_convergence(sig, "independent", alphas, decl.band),
        signature_convergence(sig, "tied", alphas, decl.secondary[0].band))
    unit = Unit(name="signature runs", primary=primary, precondition=pre, control=flow,
                secondary={"tied students align": aligned} if aligned else {})
    init = control["middle_theta_dh"]

    def span(v) -> str:
        return f"{v.min():.2f}–{v.max():.2f}" if len(v) else "none"

    def seeds(v) -> str:
        return ", ".join(f"seed {int(k)}: {x:.2f}" for k, x in v.items()) or "none"

    return _decided(
        decl.id, [unit],
        ours=f"middle θ(Δh), mean over teacher seeds: independent students {_est(primary)} rad "
             f"({seeds(per['independent'])}; students {span(ind['middle_theta_dh'])}), tied "
             f"students {_est(aligned)} ({seeds(per['tied'])}; students "
             f"{span(tied['middle_theta_dh'])}); positive control, the tied teacher: "
             f"{'not measured' if flow is None else f'{flow.point:.3f}'} rad; untrained "
             f"students (beside) {span(init)} rad",
        setting=setting,
        numbers={"independent": ind["middle_theta_dh"].tolist(),
                 "tied": tied["middle_theta_dh"].tolist(),
                 "independent_per_seed": {int(k): float(v) for k, v in per["independent"].items()},
                 "tied_per_seed": {int(k): float(v) for k, v in per["tied"].items()},
                 "untrained": init.tolist(), "precondition": pre,
                 "tied_teacher": None if flow is None else flow.point})


def assess(alphas: "pd.DataFrame", sig: "pd.DataFrame", control: "pd.DataFrame",
           setting: str) -> list:
    """Chapter 04's claims, each from its own function, decided by `claims.decide` against its
    declaration (`layerlab.depth.declarations`)."""
    return [assess_independent(alphas, setting), assess_tied_steep(alphas, setting),
            assess_tied_cold(alphas, setting), assess_mse(alphas, setting),
            assess_signatures(sig, control, alphas, setting)]
