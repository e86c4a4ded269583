"""Chapter 09: recovery speed after noise (P2 C5, research/paper2.md §8).

Damage one layer with Gaussian noise (σ × each matrix's std), fine-tune on held-out Wikipedia
text (disjoint from E0 and E1), evaluate every few steps, and record the steps to recover
(PPL ≤ (1 + τ) × base; right-censored at the step limit) and the area under the recovery curve.
The equal-damage control calibrates σ per layer so that every layer starts at the same damaged
perplexity, which removes the circularity of "a layer that hurts more takes longer to heal".
The model is restored exactly afterwards.

The two C5 claims are decided by `claims.decide` from their declarations. Their control is the
same fine-tuning of each layer undamaged (`run_no_damage`, records `no-damage-…`): passed to
`correlate` and `assess`, "recovered" and the area are judged against it; absent, the control is
not measured.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch

from layerlab import claims, corpus, paper, training
from layerlab.anatomy import edits
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.lab import Lab
from layerlab.settings import RecoveryConfig

__all__ = ["anti_layer_noise", "anti_layer_summary", "area", "assess", "assess_importance",
           "assess_steps", "calibrate_sigma", "censored", "censored_rank_value", "CHAPTER",
           "CONDITIONS", "config_for", "control_table", "correlate", "DAMAGE_TOLERANCE",
           "describe", "display_table", "evaluator", "importance_unit", "items", "NO_DAMAGE",
           "no_damage_items", "PAPER_SIGMA", "recover", "run", "run_no_damage", "spearman_ci",
           "steps_interval", "steps_unit", "summarise", "training_windows"]


def config_for(lab: Lab) -> RecoveryConfig:
    """The recovery settings of the lab's profile (layers, σ, steps, τs, seeds, control runs)."""
    return lab.cfg.recovery


def training_windows(tokenizer: Any, cfg: RecoveryConfig, seed: int | None = None) -> torch.Tensor:
    """[steps, batch, seq_len] windows of Wikipedia's train split, shuffled by the seed."""
    blocks = corpus.token_blocks(tokenizer, "wikipedia", n_tokens=10**9, seq_len=cfg.seq_len,
                                 split="train", allow_fewer=True)
    return training.shuffled_batches(blocks, cfg.steps, cfg.batch_size,
                                     cfg.seed if seed is None else seed)


def evaluator(lab: Lab, cfg: RecoveryConfig):
    """The evaluation set of the recovery runs: E1's held-out text in order up to `eval_tokens`
    tokens (`Lab.evalset`'s passage: a curve, not an interval, is read from it), or E0."""
    return lab.evaluator(cfg.eval_set, cfg.eval_tokens, passage=True)


def _trainable(lab: Lab, layer: int, cfg: RecoveryConfig) -> list[torch.nn.Parameter]:
    if cfg.trainable == "layer":
        return list(lab.lm.blocks[layer].parameters())
    if cfg.trainable == "model":
        return list(lab.lm.model.parameters())
    raise ValueError(f"trainable must be 'layer' or 'model', got {cfg.trainable!r}")


def recover(lab: Lab, layer: int, sigma: float, cfg: RecoveryConfig, *,
            windows: torch.Tensor | None = None, seed: int | None = None,
            damage: bool = True) -> dict[str, Any]:
    """Noise `layer`, fine-tune, and return the recovery curve; the model is restored after.

    `damage=False` is the no-damage control: the same fine-tuning of the same layer on the same
    batches with no noise, run to the step limit (it has nothing to recover, so no early stop):
    what fine-tuning alone does to the perplexity, against which "recovered" is judged."""
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
        noise = edits.edit("noise", layer, sigma=sigma, seed=seed) if damage else None
        with edits.applied(lm, noise):
            curve.append({"step": 0, "ppl": ev.current(start).ppl})
            # fine-tuning a pretrained layer: AdamW's default betas, no decay, no schedule, no
            # clipping (the paper's recovery loop)
            opt = training.adamw(params, cfg.lr, 0.0, betas=(0.9, 0.999))
            step = 0
            while step < cfg.steps and (not damage or curve[-1]["ppl"] > (1 + threshold) * base):
                for _ in range(cfg.eval_every):
                    loss = training.step(lm.model, opt, windows[step].to(lm.device), clip=None,
                                         upcast=True)
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


def no_damage_items(cfg: RecoveryConfig) -> dict[str, dict[str, Any]]:
    """The control's runs, records named `no-damage-L<layer>-s<seed>`: one per fixed-σ run (same
    layer, same seed, so the same batches) among `cfg.control_layers` and `cfg.control_seeds`
    (None: all), the paper's named layers first."""
    out = {}
    for item in items(cfg).values():
        if item["condition"] == "fixed σ" and (
                cfg.control_layers is None or item["layer"] in cfg.control_layers) and (
                cfg.control_seeds is None or item["seed"] in cfg.control_seeds):
            out[f"no-damage-L{item['layer']:02d}-s{item['seed']}"] = {
                "condition": NO_DAMAGE, "layer": item["layer"], "seed": item["seed"]}
    return out


def _stored(lab: Lab, todo: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every run `todo` names (fixed σ, equal damage or no damage), each cached as it finishes
    under the recovery key; the training windows are built once per seed."""
    cfg = config_for(lab)
    windows: dict[int, torch.Tensor] = {}

    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        seed = item["seed"]
        if seed not in windows:
            windows[seed] = training_windows(lab.lm.tokenizer, cfg, seed)
        if item["condition"] == NO_DAMAGE:
            return recover(lab, item["layer"], 0.0, cfg, windows=windows[seed], seed=seed,
                           damage=False)
        sigma = (cfg.sigma if item["condition"] == "fixed σ"
                 else calibrate_sigma(lab, item["layer"], cfg, seed=seed))
        return recover(lab, item["layer"], sigma, cfg, windows=windows[seed], seed=seed)

    return lab.cache.for_each("recovery", lab.key(reads_e1=False, recovery=cfg.key()), todo, compute,
                              progress=lab.progress)


def run_no_damage(lab: Lab) -> pd.DataFrame:
    """The no-damage control (VERDICTS.md: "recovered" is judged against it): each fixed-σ run's
    layer fine-tuned on the same batches with no noise, to the step limit. Cached per run beside
    the damaged runs (same key, items `no-damage-…`). Its curves: layer, seed, step, ppl."""
    todo = no_damage_items(config_for(lab))
    stored = _stored(lab, todo)
    return pd.DataFrame([{"layer": item["layer"], "seed": item["seed"], **c}
                         for name, item in todo.items() for c in stored[name]["curve"]])


def run(lab: Lab) -> dict[str, pd.DataFrame]:
    """Both conditions (fixed σ, equal damage) for every configured layer, cached per run: an
    interrupted sweep resumes at the first run it had not finished."""
    cfg = config_for(lab)
    todo = items(cfg)
    stored = _stored(lab, todo)
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


CHAPTER = "09_recovery_speed"
STEPS_ID, IMPORTANCE_ID = "P2-C5-recovery-steps", "P2-C5-recovery-importance"
NO_DAMAGE = "no damage"  # the control: the same fine-tuning of an undamaged layer
PAPER_SIGMA = 0.5  # the summary's "50 % noise" (research/paper2.md §8.1)
DAMAGE_TOLERANCE = 0.01  # an equal-damage run within 1 % of its target counts as at the target


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


def control_table(result: dict[str, pd.DataFrame], no_damage: pd.DataFrame,
                  cfg: RecoveryConfig) -> pd.DataFrame:
    """Each controlled fixed-σ run beside its no-damage run: what the same fine-tuning does to
    the undamaged layer (perplexity at the step limit over base) and the damaged run's steps to
    recover against base and against the no-damage run (`steps_interval`)."""
    t = result["table"]
    fixed = t[t["condition"] == "fixed σ"]
    rows = []
    for layer, seed in sorted(set(zip(no_damage["layer"], no_damage["seed"]))):
        r = fixed[(fixed["layer"] == layer) & (fixed["seed"] == seed)]
        if not len(r):
            continue
        base = float(r["base_ppl"].iloc[0])
        own = _curve(no_damage, int(layer), int(seed))
        damaged = _curve(result["curves"], int(layer), int(seed), "fixed σ")
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


def steps_unit(result: dict[str, pd.DataFrame], cfg: RecoveryConfig,
               no_damage: pd.DataFrame | None = None) -> tuple[claims.Unit, dict[str, Any]]:
    """P2-C5-recovery-steps' evidence at fixed σ: per seed, the steps to recover of the earlier
    of the paper's slow layers minus those of the later of its fast layers (the primary), and
    each group's steps (the secondaries); the interval is the range over the seeds in which all
    four layers ran. Judged against the no-damage runs of the same layer and seed when
    `no_damage` holds every one of them (their own contrast against base is then the control),
    against base otherwise (control not measured)."""
    decl = DECLARATIONS[STEPS_ID]
    t = result["table"]
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
    curves = result.get("curves")
    damaged: dict[tuple[int, int], list[tuple[int, float]]] = {}
    refs: dict[tuple[int, int], dict[int, float] | None] = {}
    if no_damage is not None and curves is not None:
        damaged = {r: _curve(curves, *r, "fixed σ") for r in runs}
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


def assess_steps(result: dict[str, pd.DataFrame], cfg: RecoveryConfig, setting: str,
                 no_damage: pd.DataFrame | None = None) -> claims.Claim:
    """P2-C5's recovery-speed claim (anti-layers recover at once, the core slowly), decided from
    the fixed-σ runs against the no-damage runs when given (else the unedited model)."""
    decl = DECLARATIONS[STEPS_ID]
    unit, info = steps_unit(result, cfg, no_damage)
    ratio = anti_layer_noise(result["table"])
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


def assess(result: dict[str, pd.DataFrame], corr: pd.DataFrame, cfg: RecoveryConfig,
           setting: str, no_damage: pd.DataFrame | None = None) -> list[claims.Claim]:
    """Both C5 claims; the steps claim only when the paper's named layers were run. `no_damage`
    (the control's curves; see `correlate`, which must get the same runs for the importance
    claim) is optional: without it both controls are not measured."""
    layers = set(result["table"]["layer"])
    named = {*paper.P2_SLOW_RECOVERY.value, *paper.P2_FAST_RECOVERY.value}
    found = [assess_steps(result, cfg, setting, no_damage)] if named <= layers else []
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
