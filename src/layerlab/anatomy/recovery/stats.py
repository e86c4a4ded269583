"""Chapter 09's statistics on the runs: censoring (a layer that did not recover within the step
limit ranks above every recovered one), steps to recover as an interval and the area under the
curve, each judged against the unedited model or the no-damage run of the same layer and seed,
and `correlate`: Spearman ρ (bootstrap interval over layers) of both with chapter 05's
neighbour-average degradation, the table the importance claim reads.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from layerlab.anatomy.recovery.experiment import NO_DAMAGE
from layerlab.settings import RecoveryConfig

__all__ = ["DAMAGE_TOLERANCE", "censored", "censored_rank_value", "spearman_ci", "steps_interval",
           "area", "correlate"]

DAMAGE_TOLERANCE = 0.01  # an equal-damage run within 1 % of its target counts as at the target


def censored(steps: float | None) -> bool:
    """True for a layer that did not recover within the step limit (stored as None, read as NaN)."""
    return steps is None or (isinstance(steps, float) and math.isnan(steps))


def censored_rank_value(steps: float | None, limit: int, every: int) -> float:
    """Steps for ranking: a censored layer ranks above every recovered one."""
    return float(limit + every) if censored(steps) else float(steps)


def _first_seed(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["seed"] == table["seed"].min()]


def spearman_ci(x: np.ndarray, y: np.ndarray, *, n: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Spearman ρ and its 95 % bootstrap interval over layers (resampled with replacement;
    resamples with a constant column are dropped). NaN when x or y is constant."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with warnings.catch_warnings():  # a constant column (every layer censored alike): NaN
        warnings.simplefilter("ignore")
        rho = float(spearmanr(x, y)[0])
        if not math.isfinite(rho):
            return rho, math.nan, math.nan
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(n):
            i = rng.integers(0, len(x), len(x))
            if np.ptp(x[i]) > 0 and np.ptp(y[i]) > 0:
                draws.append(spearmanr(x[i], y[i])[0])
    lo, hi = np.nanpercentile(draws, [2.5, 97.5])
    return rho, float(lo), float(hi)


def _curve(curves: pd.DataFrame, layer: int, seed: int,
           condition: str | None = None) -> list[tuple[int, float]]:
    """(step, perplexity) of one run, in step order."""
    c = curves[(curves["layer"] == layer) & (curves["seed"] == seed)]
    if condition is not None and "condition" in c:
        c = c[c["condition"] == condition]
    c = c.sort_values("step")
    return [(int(s), float(p)) for s, p in zip(c["step"], c["ppl"])]


def _reference(no_damage: pd.DataFrame | None, layer: int, seed: int,
               steps: list[int]) -> dict[int, float] | None:
    """The no-damage run's perplexity at each of `steps`; None where the run or a step is missing."""
    if no_damage is None or not steps:
        return None
    ref = dict(_curve(no_damage, layer, seed))
    return ref if all(s in ref for s in steps) else None


def steps_interval(curve: list[tuple[int, float]], base: float, cfg: RecoveryConfig,
                   ref: dict[int, float] | None = None) -> tuple[float, float]:
    """Steps to recover of one run, as an interval: the first evaluation from which perplexity
    stays within 1 + τ (the smallest τ) of the reference -- the no-damage run's perplexity at the
    same step (`ref`), or the unedited model's `base`. A run still outside at the step limit is
    censored: limit + one evaluation interval (`censored_rank_value`'s rank). A run that stopped
    early (recovered against base) while still outside `ref` lies between its next evaluation and
    censored. For a damaged run, which stops at its first recovery, this is that step."""
    tau = min(cfg.taus)
    out = float(cfg.steps + cfg.eval_every)
    within = [p <= (1 + tau) * (ref[s] if ref is not None else base) for s, p in curve]
    if not within[-1]:
        last = curve[-1][0]
        return (out, out) if last >= cfg.steps else (float(last + cfg.eval_every), out)
    i = len(within) - 1
    while i > 0 and within[i - 1]:
        i -= 1
    return float(curve[i][0]), float(curve[i][0])


def area(curve: list[tuple[int, float]], base: float, cfg: RecoveryConfig,
         ref: dict[int, float] | None = None) -> float:
    """The area under log(PPL / reference) over the evaluation grid 0 … steps, negative parts
    counted as 0 and the last ratio carried forward after an early stop (`summarise`'s area when
    the reference is `base`)."""
    by_step = dict(curve)

    def log_ratio(s: int) -> float:
        return math.log(by_step[s] / (ref[s] if ref is not None else base))

    last, values = log_ratio(curve[0][0]), []
    for s in range(0, cfg.steps + 1, cfg.eval_every):
        if s in by_step:
            last = log_ratio(s)
        values.append(max(0.0, last))
    return float(np.mean(values))


def _short_of_target(df: pd.DataFrame, cfg: RecoveryConfig) -> str:
    """Equal-damage layers whose damaged perplexity stayed below the target (calibration capped)."""
    if not {"damaged_ppl", "base_ppl"} <= set(df.columns):
        return ""
    ratio = df["damaged_ppl"] / df["base_ppl"]
    short = df.loc[ratio < cfg.equal_damage * (1 - DAMAGE_TOLERANCE), "layer"]
    return ", ".join(f"L{int(l)}" for l in short)


def correlate(table: pd.DataFrame, importance: pd.DataFrame, cfg: RecoveryConfig, *,
              curves: pd.DataFrame | None = None,
              no_damage: pd.DataFrame | None = None) -> pd.DataFrame:
    """Spearman ρ (95 % bootstrap CI over layers) of steps-to-recover (censored ranked last) and
    of the area under the curve with chapter 05's neighbour-average degradation, per condition
    (first seed: one run per layer). Only the equal-damage rows count for the verdict: with σ
    fixed, the initial damage is itself chapter 05's sensitivity (the confound).

    `no_damage` holds the control's curves (layer, seed, step, ppl: the same fine-tuning of each
    undamaged layer, run to the step limit); with it (and the damaged runs' `curves`), each run
    is judged against the no-damage run of its layer and seed (column "reference"; a condition
    with a layer lacking one stays against base), and a "no damage" condition is added: the
    no-damage runs' own steps and area against base, which is the control."""
    if no_damage is not None and curves is None:
        raise ValueError("judging against the no-damage runs needs the damaged runs' curves")
    tau = f"steps τ={min(cfg.taus):g}"
    out = float(cfg.steps + cfg.eval_every)
    imp = importance[(importance["method"] == "neighbour_average")
                     & (importance["set"] == "E1")].set_index("layer")["deg"]
    first = _first_seed(table)
    rows = []

    def add(cond: str, layers, steps, areas, recovered: int, reference: str, short: str) -> None:
        deg = imp.loc[list(layers)].to_numpy()
        for label, values in ((tau, steps), ("area under the curve", areas)):
            rho, lo, hi = spearman_ci(np.asarray(values, dtype=float), deg)
            rows.append({"condition": cond, "recovery measure": label, "spearman_rho": rho,
                         "ci_low": lo, "ci_high": hi, "layers": len(deg), "recovered": recovered,
                         "counts": cond == "equal damage", "reference": reference,
                         "short of target": short})

    for cond, df in first.groupby("condition", sort=False):
        short = _short_of_target(df, cfg) if cond == "equal damage" else ""
        runs = list(zip(df["layer"].astype(int), df["seed"].astype(int)))
        refs = {}
        if no_damage is not None:
            damaged = {r: _curve(curves, *r, cond) for r in runs}
            refs = {r: _reference(no_damage, *r, [s for s, _ in damaged[r]]) for r in runs}
        if refs and all(v is not None for v in refs.values()):
            base = dict(zip(runs, df["base_ppl"].astype(float)))
            spans = [steps_interval(damaged[r], base[r], cfg, refs[r]) for r in runs]
            steps = [hi if lo != hi else lo for lo, hi in spans]  # unknown: ranked as censored
            areas = [area(damaged[r], base[r], cfg, refs[r]) for r in runs]
            add(cond, df["layer"], steps, areas, sum(hi < out for _, hi in spans),
                "no-damage run", short)
        else:
            steps = [censored_rank_value(s, cfg.steps, cfg.eval_every) for s in df[tau]]
            add(cond, df["layer"], steps, df["auc"].to_numpy(),
                int(sum(not censored(s) for s in df[tau])), "base", short)
    if no_damage is not None and len(first):
        runs = list(dict.fromkeys(zip(first["layer"].astype(int), first["seed"].astype(int))))
        own = {r: _curve(no_damage, *r) for r in runs}
        if all(own.values()):
            base = float(first["base_ppl"].iloc[0])
            spans = [steps_interval(own[r], base, cfg) for r in runs]
            add(NO_DAMAGE, [l for l, _ in runs], [lo for lo, _ in spans],
                [area(own[r], base, cfg) for r in runs], sum(hi < out for _, hi in spans),
                "base", "")
    return pd.DataFrame(rows)
