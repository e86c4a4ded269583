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

One module per role, all re-exported here: `train` (the numerics: training windows, the
evaluation set, one damaged or undamaged recovery run, its summary and the equal-damage σ),
`experiment` (the cached runs: both conditions per layer and seed, and the no-damage control),
`stats` (censoring, steps to recover as an interval, the area, Spearman ρ with chapter 05's
importance), `display` (the tables, the anti-layers' damage, the settings line) and `rules`
(the two C5 claims).
"""

from layerlab.anatomy.recovery.display import (
    anti_layer_noise,
    anti_layer_summary,
    control_table,
    describe,
    display_table,
)
from layerlab.anatomy.recovery.experiment import (
    CONDITIONS,
    NO_DAMAGE,
    RecoveryResult,
    config_for,
    items,
    no_damage_items,
    run,
    run_no_damage,
)
from layerlab.anatomy.recovery.rules import (
    CHAPTER,
    IMPORTANCE_ID,
    PAPER_SIGMA,
    STEPS_ID,
    assess,
    assess_importance,
    assess_steps,
    importance_unit,
    steps_unit,
)
from layerlab.anatomy.recovery.stats import (
    DAMAGE_TOLERANCE,
    area,
    censored,
    censored_rank_value,
    correlate,
    spearman_ci,
    steps_interval,
)
from layerlab.anatomy.recovery.train import (
    calibrate_sigma,
    evaluator,
    recover,
    summarise,
    training_windows,
)
from layerlab.settings import RecoveryConfig

__all__ = [
    # train
    "RecoveryConfig", "training_windows", "evaluator", "recover", "summarise", "calibrate_sigma",
    # experiment
    "CONDITIONS", "NO_DAMAGE", "RecoveryResult", "config_for", "items", "no_damage_items", "run", "run_no_damage",
    # stats
    "DAMAGE_TOLERANCE", "censored", "censored_rank_value", "spearman_ci", "steps_interval", "area",
    "correlate",
    # display
    "control_table", "display_table", "anti_layer_noise", "anti_layer_summary", "describe",
    # rules
    "CHAPTER", "STEPS_ID", "IMPORTANCE_ID", "PAPER_SIGMA", "steps_unit", "assess_steps",
    "importance_unit", "assess_importance", "assess",
]
