"""Chapter 09: recovery speed after noise (P2 C5, research/paper2.md §8).

Damage one layer with Gaussian noise (σ × each matrix's std), fine-tune on held-out Wikipedia
text (disjoint from E0 and E1), evaluate every few steps, and record the steps to recover
(PPL ≤ (1 + τ) × base; right-censored at the step limit) and the area under the recovery curve.
The equal-damage control calibrates σ per layer so that every layer starts at the same damaged
perplexity, which removes the circularity of "a layer that hurts more takes longer to heal".
The model is restored exactly afterwards.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from layerlab import claims, corpus, paper, training
from layerlab.anatomy import edits
from layerlab.anatomy.lab import Lab
from layerlab.settings import RecoveryConfig


def config_for(lab: Lab) -> RecoveryConfig:
    return lab.cfg.recovery


def training_windows(tokenizer: Any, cfg: RecoveryConfig, seed: int | None = None) -> torch.Tensor:
    """[steps, batch, seq_len] windows of Wikipedia's train split, shuffled by the seed."""
    blocks = corpus.token_blocks(tokenizer, "wikipedia", n_tokens=10**9, seq_len=cfg.seq_len,
                                 split="train", allow_fewer=True)
    return training.shuffled_batches(blocks, cfg.steps, cfg.batch_size,
                                     cfg.seed if seed is None else seed)


def evaluator(lab: Lab, cfg: RecoveryConfig):
    """The evaluation set of the recovery runs (E1's first `eval_tokens` tokens, or a whole set)."""
    return lab.evaluator(cfg.eval_set, cfg.eval_tokens)


def _trainable(lab: Lab, layer: int, cfg: RecoveryConfig) -> list[torch.nn.Parameter]:
    if cfg.trainable == "layer":
        return list(lab.lm.blocks[layer].parameters())
    if cfg.trainable == "model":
        return list(lab.lm.model.parameters())
    raise ValueError(f"trainable must be 'layer' or 'model', got {cfg.trainable!r}")


def recover(lab: Lab, layer: int, sigma: float, cfg: RecoveryConfig, *,
            windows: torch.Tensor | None = None, seed: int | None = None) -> dict[str, Any]:
    """Noise `layer`, fine-tune, and return the recovery curve; the model is restored after."""
    lm = lab.lm
    seed = cfg.seed if seed is None else seed
    ev = evaluator(lab, cfg)
    base = ev.base().ppl
    windows = training_windows(lm.tokenizer, cfg, seed) if windows is None else windows
    params = _trainable(lab, layer, cfg)
    start = layer if cfg.trainable == "layer" else 0
    all_params = list(lm.model.parameters())
    flags = [p.requires_grad for p in all_params]
    snapshot = [p.detach().clone() for p in params]
    threshold = min(cfg.taus)
    curve = []
    try:
        for p in all_params:
            p.requires_grad_(False)
        for p in params:
            p.requires_grad_(True)
        with edits.applied(lm, edits.edit("noise", layer, sigma=sigma, seed=seed)):
            curve.append({"step": 0, "ppl": ev.current(start).ppl})
            opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
            step = 0
            while curve[-1]["ppl"] > (1 + threshold) * base and step < cfg.steps:
                for _ in range(cfg.eval_every):
                    ids = windows[step].to(lm.device)
                    with torch.enable_grad():
                        logits = lm.model(input_ids=ids, use_cache=False).logits
                        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(),
                                               ids[:, 1:].flatten())
                        opt.zero_grad(set_to_none=True)
                        loss.backward()
                    opt.step()
                    step += 1
                curve.append({"step": step, "ppl": ev.current(start).ppl,
                              "train_loss": float(loss.detach())})
    finally:
        with torch.no_grad():
            for p, saved in zip(params, snapshot):
                p.copy_(saved)
        for p, flag in zip(all_params, flags):
            p.requires_grad_(flag)
    return summarise(curve, base, cfg) | {"layer": layer, "sigma": sigma, "seed": seed}


def summarise(curve: list[dict[str, Any]], base: float, cfg: RecoveryConfig) -> dict[str, Any]:
    """Steps to recover per τ (None = censored: not within the step limit) and the area under
    log(PPL / base) over the evaluation grid 0 … steps (the last value carried forward after an
    early stop at recovery)."""
    out: dict[str, Any] = {"base_ppl": base, "damaged_ppl": curve[0]["ppl"], "curve": curve}
    for tau in cfg.taus:
        hit = [c["step"] for c in curve if c["ppl"] <= (1 + tau) * base]
        out[f"steps_tau{tau:g}"] = hit[0] if hit else None
    grid = range(0, cfg.steps + 1, cfg.eval_every)
    by_step = {c["step"]: c["ppl"] for c in curve}
    last, area = curve[0]["ppl"], []
    for s in grid:
        last = by_step.get(s, last)
        area.append(max(0.0, math.log(last / base)))
    out["auc"] = float(np.mean(area))
    return out


def calibrate_sigma(lab: Lab, layer: int, cfg: RecoveryConfig, *, lo: float = 1e-3,
                    hi: float = 8.0, iters: int = 12, seed: int | None = None) -> float:
    """σ at which the noised layer gives `equal_damage` × base PPL (bisection on log σ)."""
    ev = evaluator(lab, cfg)
    target = cfg.equal_damage * ev.base().ppl
    seed = cfg.seed if seed is None else seed

    def damaged(sigma: float) -> float:
        return ev.evaluate(edits.edit("noise", layer, sigma=sigma, seed=seed)).ppl

    if damaged(hi) < target:
        return hi  # even the largest σ does not reach the target: reported as such
    a, b = math.log(lo), math.log(hi)
    for _ in range(iters):
        mid = (a + b) / 2
        if damaged(math.exp(mid)) < target:
            a = mid
        else:
            b = mid
    return float(math.exp(b))


def items(cfg: RecoveryConfig) -> dict[str, dict[str, Any]]:
    """Every run: both conditions for every layer with the first seed, and the fixed-σ run of
    `seeded_layers` again for every further seed (the layers the paper's claim names)."""
    out = {}
    # the named layers first, so that an interrupted sweep already answers the paper's claim
    order = [*cfg.seeded_layers, *(l for l in cfg.layers if l not in cfg.seeded_layers)]
    for layer in order:
        for cond in CONDITIONS:
            seeds = cfg.seeds if (cond == "fixed σ" and layer in cfg.seeded_layers) else cfg.seeds[:1]
            for seed in seeds:
                out[f"{cond}-L{layer:02d}-s{seed}"] = {"condition": cond, "layer": layer,
                                                       "seed": seed}
    return out


CONDITIONS = ("fixed σ", "equal damage")


def run(lab: Lab) -> dict[str, pd.DataFrame]:
    """Both conditions (fixed σ, equal damage) for every configured layer, cached per run: an
    interrupted sweep resumes at the first run it had not finished."""
    cfg = config_for(lab)
    key = lab.key(recovery=cfg.key())
    windows: dict[int, torch.Tensor] = {}

    def compute(name: str, item: dict[str, Any]) -> dict[str, Any]:
        seed = item["seed"]
        if seed not in windows:
            windows[seed] = training_windows(lab.lm.tokenizer, cfg, seed)
        sigma = (cfg.sigma if item["condition"] == "fixed σ"
                 else calibrate_sigma(lab, item["layer"], cfg, seed=seed))
        return recover(lab, item["layer"], sigma, cfg, windows=windows[seed], seed=seed)

    todo = items(cfg)
    stored = lab.cache.for_each("recovery", key, todo, compute, progress=lab.progress)
    rows, curves = [], []
    for name, item in todo.items():
        r = stored[name]
        rows.append({"condition": item["condition"], "layer": item["layer"], "seed": item["seed"],
                     "sigma": r["sigma"], "base_ppl": r["base_ppl"],
                     "damaged_ppl": r["damaged_ppl"],
                     **{f"steps τ={t:g}": r[f"steps_tau{t:g}"] for t in cfg.taus},
                     "auc": r["auc"]})
        curves += [{"condition": item["condition"], "layer": item["layer"], "seed": item["seed"],
                    **c} for c in r["curve"]]
    table = pd.DataFrame(rows).sort_values(["condition", "layer", "seed"], ascending=[False, True, True],
                                           ignore_index=True)
    return {"table": table, "curves": pd.DataFrame(curves)}


def censored(steps: float | None) -> bool:
    """True for a layer that did not recover within the step limit (stored as None, read as NaN)."""
    return steps is None or (isinstance(steps, float) and math.isnan(steps))


def censored_rank_value(steps: float | None, limit: int, every: int) -> float:
    """Steps for ranking: a censored layer ranks above every recovered one."""
    return float(limit + every) if censored(steps) else float(steps)


SLOW_STEPS = paper.P2_SLOW_RECOVERY_STEPS.value // 2  # "slow": at least half the paper's 200
NO_CORRELATION = 0.3  # ρ whose upper bound stays below this: at most a weak link


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


def correlate(table: pd.DataFrame, importance: pd.DataFrame, cfg: RecoveryConfig) -> pd.DataFrame:
    """Spearman ρ (95 % bootstrap CI over layers) of steps-to-recover (censored ranked last) and
    of the area under the curve with chapter 05's neighbour-average degradation, per condition
    (first seed: one run per layer). Only the equal-damage rows count for the verdict: with σ
    fixed, the initial damage is itself chapter 05's sensitivity (the confound)."""
    tau = f"steps τ={min(cfg.taus):g}"
    imp = importance[(importance["method"] == "neighbour_average")
                     & (importance["set"] == "E1")].set_index("layer")["deg"]
    rows = []
    for cond, df in _first_seed(table).groupby("condition", sort=False):
        steps = [censored_rank_value(s, cfg.steps, cfg.eval_every) for s in df[tau]]
        recovered = int(sum(not censored(s) for s in df[tau]))
        deg = imp.loc[df["layer"]].to_numpy()
        for label, values in ((tau, steps), ("area under the curve", df["auc"].to_numpy())):
            rho, lo, hi = spearman_ci(np.asarray(values), deg)
            rows.append({"condition": cond, "recovery measure": label, "spearman_rho": rho,
                         "ci_low": lo, "ci_high": hi, "layers": len(df), "recovered": recovered,
                         "counts": cond == "equal damage"})
    return pd.DataFrame(rows)


def _slow(steps: float | None) -> bool:
    return censored(steps) or steps >= SLOW_STEPS


def steps_rule(table: pd.DataFrame, cfg: RecoveryConfig) -> tuple[str, dict[str, Any]]:
    """P2-C5's first half at fixed σ, per seed: the paper's fast layers need 0 steps (their noised
    PPL already within 1 + τ of base) and its slow layers ≥ SLOW_STEPS (censored counts as slow).
    A layer that passes in every seed agrees, one that fails in every seed contradicts; any
    contradiction → not reproduced; every layer agreeing → reproduced; seeds that disagree, or a
    named layer not run → not testable at this budget."""
    tau = f"steps τ={min(cfg.taus):g}"
    fixed = table[table["condition"] == "fixed σ"]
    tests = {**{l: (lambda v: not censored(v) and v == 0) for l in paper.P2_FAST_RECOVERY.value},
             **{l: _slow for l in paper.P2_SLOW_RECOVERY.value}}
    per_layer: dict[str, Any] = {}
    for layer, test in tests.items():
        runs = fixed[fixed["layer"] == layer][tau].tolist()
        per_layer[f"L{layer}"] = [bool(test(v)) for v in runs]
    if any(not v for v in per_layer.values()):
        return claims.NOT_TESTABLE, per_layer
    if any(not any(v) for v in per_layer.values()):
        return claims.NOT_REPRODUCED, per_layer
    if all(all(v) for v in per_layer.values()):
        return claims.REPRODUCED, per_layer
    return claims.NOT_TESTABLE, per_layer


def importance_rule(corr: pd.DataFrame, cfg: RecoveryConfig) -> str:
    """P2-C5's second half under equal initial damage. The area under the curve (never censored)
    decides: its ρ interval above 0 → reproduced, unless steps-to-recover (valid when at least half
    the layers recovered) has a negative ρ; its upper bound below NO_CORRELATION → not reproduced;
    otherwise, or when every run is alike, not testable at this budget."""
    tau = f"steps τ={min(cfg.taus):g}"
    eq = corr[corr["condition"] == "equal damage"].set_index("recovery measure")
    auc = eq.loc["area under the curve"]
    lo, hi = float(auc["ci_low"]), float(auc["ci_high"])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return claims.NOT_TESTABLE
    steps = eq.loc[tau]
    steps_valid = steps["recovered"] >= steps["layers"] / 2 and math.isfinite(steps["spearman_rho"])
    if lo > 0:
        return claims.NOT_REPRODUCED if steps_valid and steps["spearman_rho"] < 0 else claims.REPRODUCED
    if hi < NO_CORRELATION:
        return claims.NOT_REPRODUCED
    return claims.NOT_TESTABLE


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


def assess_steps(result: dict[str, pd.DataFrame], cfg: RecoveryConfig,
                 setting: str) -> claims.Claim:
    t = result["table"]
    tau = f"steps τ={min(cfg.taus):g}"
    verdict, per_layer = steps_rule(t, cfg)
    fixed = t[t["condition"] == "fixed σ"]

    def steps(l: int) -> str:
        runs = fixed[fixed["layer"] == l][tau].tolist()
        return "/".join(f"> {cfg.steps}" if censored(v) else f"{int(v)}" for v in runs) or "not run"

    ratio = anti_layer_noise(t)
    return claims.Claim(
        id="P2-C5-recovery-steps", paper="P2", chapter=CHAPTER,
        statement="At 50 % noise, L8 and L11 need ~200 steps to recover; L14 and L17 recover "
                  "at once",
        paper_value="L8, L11: 200 steps; L14, L17: 0",
        ours="; ".join(f"L{l}: {steps(l)}" for l in (8, 11, 14, 17))
             + " (one entry per seed); noise multiplies PPL by "
             + ", ".join(f"{k}: ×{v:.2f}" for k, v in ratio.items()),
        rule=f"recovered = PPL ≤ (1 + {min(cfg.taus):g}) × base on {cfg.eval_set}"
             f"{f' ({cfg.eval_tokens} tokens)' if cfg.eval_tokens else ''}; L14/L17 need 0 steps "
             f"and L8/L11 ≥ {SLOW_STEPS} (or censored at {cfg.steps}) in every seed; a layer failing "
             "in every seed → not reproduced; seeds that disagree → not testable",
        verdict=verdict, setting=setting, numbers={"per_layer": per_layer, "noise_ratio": ratio})


def assess_importance(corr: pd.DataFrame, cfg: RecoveryConfig, setting: str) -> claims.Claim:
    tau = f"steps τ={min(cfg.taus):g}"
    c = corr.set_index(["condition", "recovery measure"])

    def show(cond: str, m: str) -> str:
        r = c.loc[(cond, m)]
        return (f"{cond}, {'steps' if m == tau else 'area'} {r['spearman_rho']:+.2f} "
                f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]")

    return claims.Claim(
        id="P2-C5-recovery-importance", paper="P2", chapter=CHAPTER,
        statement="Recovery speed correlates with layer importance",
        paper_value="positive correlation (no number given)",
        ours="Spearman ρ with the neighbour-average degradation (95 % CI over layers): "
             + "; ".join(show(cond, m) for cond in CONDITIONS for m in (tau, "area under the curve"))
             + " — the fixed-σ rows are confounded by the initial damage and do not count",
        rule=f"equal initial damage ({cfg.equal_damage:g} × base): area-under-curve ρ interval > 0 "
             f"→ reproduced (unless steps, valid when half the layers recover, give ρ < 0); upper "
             f"bound < {NO_CORRELATION} → not reproduced; else not testable at this budget",
        verdict=importance_rule(corr, cfg), setting=setting,
        numbers={"rho": {f"{cond}|{m}": float(c.loc[(cond, m), "spearman_rho"])
                         for cond in CONDITIONS for m in (tau, "area under the curve")}})


CHAPTER = "09_recovery_speed"


def assess(result: dict[str, pd.DataFrame], corr: pd.DataFrame, cfg: RecoveryConfig,
           setting: str) -> list[claims.Claim]:
    """Both C5 claims; the steps claim only when the paper's named layers were run."""
    layers = set(result["table"]["layer"])
    named = {*paper.P2_SLOW_RECOVERY.value, *paper.P2_FAST_RECOVERY.value}
    found = [assess_steps(result, cfg, setting)] if named <= layers else []
    return found + [assess_importance(corr, cfg, setting)]


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
