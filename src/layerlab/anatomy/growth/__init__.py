"""P2's Growth Transformer Training (GTT, research/paper2.md §9) against uniform training,
G_stack depth stacking and random phase schedules, under one budget accounting.

Every arm is a *program*: a list of segments, each training a set of layers of a Llama-style
model for some optimizer steps (the embedding and final norm train in every segment). Segments
may start with an operation: `clone` (GTT's growth: layers initialised from trained core layers
plus noise) or `stack` (G_stack: a 3-layer model repeated four times). GTT ends by scaling its
never-trained anti-layers by 0.9.

Budgets are counted per optimizer step in layer-steps (trainable layers), tokens, FLOPs (forward
through every layer; backward activation gradients from the lowest trainable layer up; weight
gradients only for trainable layers; attention-score FLOPs ignored), wall-clock and, on a CPU,
CPU-seconds (process time of the optimizer steps). The claims read time as CPU-seconds and
FLOPs; the verdict's runs recorded before CPU-seconds were counted are trained again to time
them. Training checkpoints atomically; an interrupted arm resumes and ends with the same
weights as an uninterrupted one.

Used by chapter 10 (and the deviations page). One module per role, all re-exported here:
`model` (the model, its tokenizer, the operations and FLOPs), `arms` (the anatomy and every
arm's program), `train` (data and the training of one arm), `experiment` (the cached runs:
every regime × seed × arm, the paper's regime by search and lr grid, and the timing reruns),
`display` (curves, bands, finals, the comparison with uniform, time and FLOPs, program table,
vocabulary cost) and `rules` (the four C6 claims, each on the arm its words describe).
"""

from layerlab.anatomy.growth.arms import (
    GTT_PHASES,
    IDENTICAL_ARM,
    PAPER_ARM,
    PAPER_STEP_SHARE,
    Anatomy,
    Program,
    Segment,
    gstack_program,
    gtt_program,
    program_flops,
    programs,
    proportional_anatomy,
    random_program,
    uniform_program,
)
from layerlab.anatomy.growth.display import (
    MEASURES,
    PAPER,
    bands,
    comparison,
    curves,
    describe,
    finals,
    program_table,
    seeds,
    timing,
    vocab_cost,
)
from layerlab.anatomy.growth.experiment import (
    ARMS,
    TIMED,
    TUNED,
    TunedResult,
    best_lrs,
    chosen_size,
    config_for,
    lr_grid,
    run,
    search,
    timed,
    timed_items,
    tuned,
    verdict_items,
    with_cpu_seconds,
)
from layerlab.anatomy.growth.model import (
    TOKENIZER_ENV,
    build,
    clone_layers,
    layer_params,
    n_params,
    save_tokenizer,
    scale_layers,
    set_trainable,
    stack_model,
    step_flops,
    tokenizer_for,
)
from layerlab.anatomy.growth.rules import (
    ARM_BUDGETS,
    BUDGET_ROUNDING,
    CHAPTER,
    CLAIM_ARMS,
    HALF_BUDGET,
    QUALITY,
    SAVING,
    assess,
    assess_cost,
    assess_faster,
    assess_half_budget,
    assess_ratio,
    paired,
    paper_arm_unit,
    t_interval,
    unit_for,
)
from layerlab.anatomy.growth.train import data, final_weights, folder, train_arm
from layerlab.settings import GrowthConfig

__all__ = [
    # model
    "GrowthConfig", "TOKENIZER_ENV", "tokenizer_for", "save_tokenizer", "build", "layer_params",
    "n_params", "clone_layers", "stack_model", "scale_layers", "set_trainable", "step_flops",
    # arms
    "Anatomy", "proportional_anatomy", "Segment", "Program", "GTT_PHASES", "gtt_program",
    "random_program", "uniform_program", "gstack_program", "PAPER_ARM", "PAPER_STEP_SHARE",
    "IDENTICAL_ARM", "programs", "program_flops",
    # train
    "data", "folder", "train_arm", "final_weights",
    # experiment
    "config_for", "run", "ARMS", "TUNED", "search", "chosen_size", "lr_grid", "best_lrs", "tuned",
    "TunedResult", "verdict_items", "TIMED", "timed", "timed_items", "with_cpu_seconds",
    # display
    "MEASURES", "PAPER", "curves", "bands", "finals", "comparison", "program_table", "vocab_cost",
    "seeds", "describe", "timing",
    # rules
    "CHAPTER", "HALF_BUDGET", "BUDGET_ROUNDING", "CLAIM_ARMS", "ARM_BUDGETS", "QUALITY", "SAVING", "paired", "t_interval", "unit_for",
    "paper_arm_unit", "assess_ratio", "assess_half_budget", "assess_faster", "assess_cost",
    "assess",
]
