"""Chapter 09's experiment, each run cached under the recovery key as soon as it finishes: `items`
(both conditions, fixed σ and equal damage, for every layer; the paper's named layers again for
every further seed), `no_damage_items` (the control: the same fine-tuning of each undamaged
layer, records `no-damage-…`), `run` and `run_no_damage` (their tables and curves).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from layerlab.anatomy.lab import Lab, ProfileOrLab, recorded
from layerlab.anatomy.recovery.train import calibrate_sigma, recover, training_windows
from layerlab.settings import RecoveryConfig

__all__ = ["CONDITIONS", "NO_DAMAGE", "RecoveryResult", "config_for", "items", "no_damage_items",
           "run_no_damage",
           "run"]

CONDITIONS = ("fixed σ", "equal damage")
NO_DAMAGE = "no damage"  # the control: the same fine-tuning of an undamaged layer


def config_for(lab: Lab) -> RecoveryConfig:
    """The recovery settings of the lab's profile (layers, σ, steps, τs, seeds, control runs)."""
    return lab.cfg.recovery


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
    under the recovery settings; the training windows are built once per seed."""
    return _run_item.each(todo, lab, recovery=config_for(lab), windows={}, progress=lab.progress)


# `windows` keeps each seed's training windows (drawn from the recovery settings) across runs
@recorded("recovery", reads_e1=False, ignore=("windows",))
def _run_item(lab: Lab, item: dict[str, Any], *, recovery: RecoveryConfig,
              windows: dict[int, torch.Tensor]) -> dict[str, Any]:
    seed, cfg = item["seed"], recovery
    if seed not in windows:
        windows[seed] = training_windows(lab.lm.tokenizer, cfg, seed)
    if item["condition"] == NO_DAMAGE:
        return recover(lab, item["layer"], 0.0, cfg, windows=windows[seed], seed=seed, damage=False)
    sigma = (cfg.sigma if item["condition"] == "fixed σ"
             else calibrate_sigma(lab, item["layer"], cfg, seed=seed))
    return recover(lab, item["layer"], sigma, cfg, windows=windows[seed], seed=seed)


def run_no_damage(lab: ProfileOrLab) -> pd.DataFrame:
    """The no-damage control (VERDICTS.md: "recovered" is judged against it): each fixed-σ run's
    layer fine-tuned on the same batches with no noise, to the step limit. Cached per run beside
    the damaged runs (same key, items `no-damage-…`). Its curves: layer, seed, step, ppl."""
    lab = Lab.of(lab)
    todo = no_damage_items(config_for(lab))
    stored = _stored(lab, todo)
    return pd.DataFrame([{"layer": item["layer"], "seed": item["seed"], **c}
                         for name, item in todo.items() for c in stored[name]["curve"]])


@dataclass(frozen=True, eq=False)  # tables: compared field by field, not with ==
class RecoveryResult:
    """Chapter 09's runs (`run`)."""

    table: pd.DataFrame  # one row per condition, layer and seed: σ, perplexities, steps, area
    curves: pd.DataFrame  # the evaluation perplexity of every run at every evaluated step


def run(lab: ProfileOrLab) -> RecoveryResult:
    """Both conditions (fixed σ, equal damage) for every configured layer, cached per run: an
    interrupted sweep resumes at the first run it had not finished."""
    lab = Lab.of(lab)
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
    return RecoveryResult(table=table, curves=pd.DataFrame(curves))
