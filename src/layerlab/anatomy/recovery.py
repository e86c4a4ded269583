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


def training_windows(tokenizer: Any, cfg: RecoveryConfig) -> torch.Tensor:
    """[steps, batch, seq_len] windows of Wikipedia's train split, shuffled by the seed."""
    blocks = corpus.token_blocks(tokenizer, "wikipedia", n_tokens=10**9, seq_len=cfg.seq_len,
                                 split="train", allow_fewer=True)
    return training.shuffled_batches(blocks, cfg.steps, cfg.batch_size, cfg.seed)


def _trainable(lab: Lab, layer: int, cfg: RecoveryConfig) -> list[torch.nn.Parameter]:
    if cfg.trainable == "layer":
        return list(lab.lm.blocks[layer].parameters())
    if cfg.trainable == "model":
        return list(lab.lm.model.parameters())
    raise ValueError(f"trainable must be 'layer' or 'model', got {cfg.trainable!r}")


def recover(lab: Lab, layer: int, sigma: float, cfg: RecoveryConfig, *,
            windows: torch.Tensor | None = None) -> dict[str, Any]:
    """Noise `layer`, fine-tune, and return the recovery curve; the model is restored after."""
    lm = lab.lm
    ev = lab.evaluator(cfg.eval_set)
    base = ev.base().ppl
    windows = training_windows(lm.tokenizer, cfg) if windows is None else windows
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
        with edits.applied(lm, edits.edit("noise", layer, sigma=sigma, seed=cfg.seed)):
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
    return summarise(curve, base, cfg) | {"layer": layer, "sigma": sigma}


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
                    hi: float = 8.0, iters: int = 12) -> float:
    """σ at which the noised layer gives `equal_damage` × base PPL (bisection on log σ)."""
    ev = lab.evaluator(cfg.eval_set)
    target = cfg.equal_damage * ev.base().ppl

    def damaged(sigma: float) -> float:
        return ev.evaluate(edits.edit("noise", layer, sigma=sigma, seed=cfg.seed)).ppl

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


def run(lab: Lab) -> dict[str, pd.DataFrame]:
    """Both conditions (fixed σ, equal damage) for every configured layer, cached per layer."""
    cfg = config_for(lab)
    key = lab.key(recovery=cfg.key())
    windows: dict[str, torch.Tensor] = {}

    def compute(name: str, item: dict[str, Any]) -> dict[str, Any]:
        if "w" not in windows:
            windows["w"] = training_windows(lab.lm.tokenizer, cfg)
        sigma = (cfg.sigma if item["condition"] == "fixed σ"
                 else calibrate_sigma(lab, item["layer"], cfg))
        return recover(lab, item["layer"], sigma, cfg, windows=windows["w"])

    items = {f"{cond}-L{l:02d}": {"condition": cond, "layer": l}
             for cond in ("fixed σ", "equal damage") for l in cfg.layers}
    stored = lab.cache.for_each("recovery", key, items, compute, progress=lab.progress)
    rows, curves = [], []
    for name, item in items.items():
        r = stored[name]
        rows.append({"condition": item["condition"], "layer": item["layer"], "sigma": r["sigma"],
                     "base_ppl": r["base_ppl"], "damaged_ppl": r["damaged_ppl"],
                     **{f"steps τ={t:g}": r[f"steps_tau{t:g}"] for t in cfg.taus},
                     "auc": r["auc"]})
        curves += [{"condition": item["condition"], "layer": item["layer"], **c} for c in r["curve"]]
    return {"table": pd.DataFrame(rows), "curves": pd.DataFrame(curves)}


def censored(steps: float | None) -> bool:
    """True for a layer that did not recover within the step limit (stored as None, read as NaN)."""
    return steps is None or (isinstance(steps, float) and math.isnan(steps))


def censored_rank_value(steps: float | None, limit: int, every: int) -> float:
    """Steps for ranking: a censored layer ranks above every recovered one."""
    return float(limit + every) if censored(steps) else float(steps)


def correlate(table: pd.DataFrame, importance: pd.DataFrame, cfg: RecoveryConfig) -> pd.DataFrame:
    """Spearman ρ of steps-to-recover (censored ranked last) and of the area under the curve with
    chapter 05's neighbour-average degradation on the evaluation set, per condition."""
    from scipy.stats import spearmanr

    tau = f"steps τ={min(cfg.taus):g}"
    imp = importance[(importance["method"] == "neighbour_average")
                     & (importance["set"] == cfg.eval_set)].set_index("layer")["deg"]
    rows = []
    for cond, df in table.groupby("condition", sort=False):
        steps = [censored_rank_value(s, cfg.steps, cfg.eval_every) for s in df[tau]]
        deg = imp.loc[df["layer"]].to_numpy()
        for label, values in ((tau, steps), ("area under the curve", df["auc"].to_numpy())):
            with warnings.catch_warnings():  # a constant column (all recovered at once): NaN
                warnings.simplefilter("ignore")
                rho, p = spearmanr(values, deg)
            rows.append({"condition": cond, "recovery measure": label, "spearman_rho": float(rho),
                         "p_value": float(p), "layers": len(df)})
    return pd.DataFrame(rows)


def assess(result: dict[str, pd.DataFrame], corr: pd.DataFrame, cfg: RecoveryConfig,
           setting: str) -> list[claims.Claim]:
    t = result["table"]
    fixed = t[t["condition"] == "fixed σ"].set_index("layer")
    tau = f"steps τ={min(cfg.taus):g}"
    chapter = "09_recovery_speed"

    def steps(l: int) -> str:
        if l not in fixed.index:
            return "not run"
        v = fixed.loc[l, tau]
        return f"> {cfg.steps}" if censored(v) else f"{int(v)}"

    checks = {}
    for l in paper.P2_SLOW_RECOVERY.value:
        if l in fixed.index:
            v = fixed.loc[l, tau]
            checks[f"L{l} not recovered before {cfg.steps // 2} steps"] = (
                censored(v) or v >= cfg.steps // 2)
    for l in paper.P2_FAST_RECOVERY.value:
        if l in fixed.index:
            checks[f"L{l} recovered at once (0 steps)"] = fixed.loc[l, tau] == 0
    found = []
    if checks:
        found.append(claims.Claim(
            id="P2-C5-recovery-steps", paper="P2", chapter=chapter,
            statement="At 50 % noise, L8 and L11 need ~200 steps to recover; L14 and L17 recover "
                      "at once",
            paper_value="L8, L11: 200 steps; L14, L17: 0",
            ours="; ".join(f"L{l}: {steps(l)}" for l in (8, 11, 14, 17)),
            rule=f"recovered = PPL ≤ (1 + {min(cfg.taus):g}) × base on {cfg.eval_set}; L8/L11 "
                 f"need ≥ {cfg.steps // 2} steps (or are censored), L14/L17 need 0",
            verdict=claims.judge(checks), setting=setting, numbers={"checks": checks}))
    c = corr.set_index(["condition", "recovery measure"])
    rhos = {(cond, m): float(c.loc[(cond, m), "spearman_rho"])
            for cond in ("fixed σ", "equal damage") for m in (tau, "area under the curve")}
    checks = {f"{cond}, {m}: ρ > 0.5": bool(r > 0.5) for (cond, m), r in rhos.items()}
    found.append(claims.Claim(
        id="P2-C5-recovery-importance", paper="P2", chapter=chapter,
        statement="Recovery speed correlates with layer importance",
        paper_value="positive correlation (no number given)",
        ours="Spearman ρ with the neighbour-average degradation: " + "; ".join(
            f"{cond}, {'steps' if m == tau else 'area'} {r:+.2f}" for (cond, m), r in rhos.items()),
        rule="ρ > 0.5 for steps-to-recover and for the area under the curve, with σ fixed and "
             "with equal initial damage (NaN when every layer is censored alike)",
        verdict=claims.judge(checks), setting=setting, numbers={"checks": checks}))
    return found


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
