"""What chapter 09 shows of its runs: the per-layer table with censored steps written out, each
controlled run beside its no-damage run (`control_table`), what noise does to the paper's
anti-layers (`anti_layer_noise`, and `anti_layer_summary`, a sentence worded from the measured
ratios) and the settings line for provenance.
"""

from __future__ import annotations

import pandas as pd

from layerlab import paper
from layerlab.anatomy.recovery.experiment import RecoveryResult
from layerlab.anatomy.recovery.stats import (
    _curve,
    _first_seed,
    _reference,
    censored,
    steps_interval,
)
from layerlab.settings import RecoveryConfig

__all__ = ["control_table", "anti_layer_noise", "anti_layer_summary", "display_table", "describe"]


def control_table(result: RecoveryResult, no_damage: pd.DataFrame,
                  cfg: RecoveryConfig) -> pd.DataFrame:
    """Each controlled fixed-σ run beside its no-damage run: what the same fine-tuning does to
    the undamaged layer (perplexity at the step limit over base) and the damaged run's steps to
    recover against base and against the no-damage run (`steps_interval`)."""
    t = result.table
    fixed = t[t["condition"] == "fixed σ"]
    rows = []
    for layer, seed in sorted(set(zip(no_damage["layer"], no_damage["seed"]))):
        r = fixed[(fixed["layer"] == layer) & (fixed["seed"] == seed)]
        if not len(r):
            continue
        base = float(r["base_ppl"].iloc[0])
        own = _curve(no_damage, int(layer), int(seed))
        damaged = _curve(result.curves, int(layer), int(seed), "fixed σ")
        ref = _reference(no_damage, int(layer), int(seed), [s for s, _ in damaged])
        rows.append({
            "layer": int(layer), "seed": int(seed),
            "no damage: PPL at the limit / base": own[-1][1] / base,
            "no damage: lowest PPL / base": min(p for _, p in own) / base,
            "damaged: steps vs base": _fmt_steps(steps_interval(damaged, base, cfg), cfg),
            "damaged: steps vs no-damage run": (_fmt_steps(steps_interval(damaged, base, cfg, ref),
                                                           cfg) if ref is not None else "—")})
    return pd.DataFrame(rows)


def anti_layer_noise(table: pd.DataFrame) -> dict[str, float]:
    """What noise at fixed σ does to the paper's fast layers: damaged / base PPL (first seed)."""
    fixed = _first_seed(table[table["condition"] == "fixed σ"]).set_index("layer")
    return {f"L{l}": float(fixed.loc[l, "damaged_ppl"] / fixed.loc[l, "base_ppl"])
            for l in paper.P2_FAST_RECOVERY.value if l in fixed.index}


def anti_layer_summary(table: pd.DataFrame, tau: float = 0.05) -> str:
    """One sentence on what fixed-σ noise does to the paper's anti-layers, worded from the
    measured ratios (so the prose cannot drift from the numbers)."""
    ratios = anti_layer_noise(table)
    if not ratios:
        return "None of the paper's anti-layers is in this run."
    listed = ", ".join(f"{name} ×{r:.2f}" for name, r in ratios.items())
    if all(r > 1 + tau for r in ratios.values()):
        what = ("noise hurts the paper's anti-layers like any other layer: perplexity rises "
                "beyond the recovery threshold, so there is something to heal, not an "
                "immediate improvement")
    elif all(r < 1 for r in ratios.values()):
        what = "noise on the paper's anti-layers lowers perplexity, as the paper says"
    else:
        what = "noise on the paper's anti-layers leaves perplexity within the threshold or mixed"
    return f"Damaged / base perplexity at σ fixed: {listed}; {what}."


def _fmt_steps(span: tuple[float, float], cfg: RecoveryConfig) -> str:
    lo, hi = span
    out = float(cfg.steps + cfg.eval_every)
    if lo >= out:
        return f"> {cfg.steps}"
    return f"{int(lo)}" if lo == hi else f"≥ {int(lo)}"


def display_table(table: pd.DataFrame, cfg: RecoveryConfig) -> pd.DataFrame:
    """The per-layer table with censored steps written as "> limit"."""
    out = table.copy()
    for t in cfg.taus:
        col = f"steps τ={t:g}"
        out[col] = [f"> {cfg.steps}" if censored(v) else f"{int(v)}" for v in out[col]]
    return out.round(3)


def describe(cfg: RecoveryConfig) -> str:
    """The configuration on one line, for provenance blocks."""
    return ", ".join(f"{k}={v}" for k, v in cfg.__dict__.items())
