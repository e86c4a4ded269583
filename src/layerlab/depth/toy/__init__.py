"""P1's toy teacher–student residual networks (§5, App. C), chapter 04: does a student's loss
fall as 1/ℓ (ensemble averaging) or faster (procedural assembly)?

One implementation in layers, each importing only those before it: `net` (the blocks, teachers
and students, the seed scheme, the fixed head, batches, loss reductions and schedule that both
trainers share), `sweep` (`Sweep`: one sweep's students trained together as nn.Modules), `stack`
and `grid` (`Grid`: the students of many sweeps as one batched program, checkpointed; `groups`
says which sweeps can share it), `angles` (consecutive-update angles of trained and untrained
students), `experiment` (the named sweeps of a profile, one cached record per student, the
cached signatures), `fits` (α_ℓ and the analytic warm-up), `display` (tables) and `rules` (the
verdicts). Every public name is re-exported here.
"""

from layerlab.depth.toy.angles import PROBES, middle_angles, student_angles, untrained_angles
from layerlab.depth.toy.display import (
    DEEP,
    Setting,
    alpha_table,
    final_alphas,
    loss_table,
    seed_alphas,
    seed_summary,
    setting_key,
    settings,
    slope_table,
)
from layerlab.depth.toy.experiment import (
    SIGNATURES,
    STUDENTS,
    grid_checkpoint,
    run_grid,
    run_sweep,
    run_sweeps,
    signatures,
    stored_sweeps,
    student_key,
    sweep_configs,
    untrained_signatures,
)
from layerlab.depth.toy.fits import (
    averaging_error,
    euler_error,
    fit_alpha,
    local_slopes,
    mean_interval,
    t_interval,
)
from layerlab.depth.toy.grid import GROUP_FIELDS, Grid, group_key, groups
from layerlab.depth.toy.net import (
    BLOCKS,
    VOCAB,
    WIDTH,
    Block,
    ResidualMLP,
    RK2Block,
    data_seed,
    eval_seed,
    fixed_head,
    head_seed,
    make_student,
    make_teacher,
    probe_seed,
    rms,
    student_seed,
    teacher_seed,
)
from layerlab.depth.toy.rules import (
    CHAPTER,
    MOVING,
    ONE_SEED,
    assess,
    assess_independent,
    assess_mse,
    assess_signatures,
    assess_tied_cold,
    assess_tied_steep,
    converging,
    signature_convergence,
)
from layerlab.depth.toy.sweep import Sweep
from layerlab.settings import ToyConfig, ToySettings

__all__ = [
    # net: networks and the seed scheme
    "WIDTH", "VOCAB", "BLOCKS", "Block", "RK2Block", "ResidualMLP", "rms", "make_teacher",
    "make_student", "teacher_seed", "data_seed", "head_seed", "eval_seed", "student_seed",
    "probe_seed", "fixed_head",
    # the two trainers
    "Sweep", "Grid", "groups", "group_key", "GROUP_FIELDS",
    # angles
    "PROBES", "middle_angles", "student_angles", "untrained_angles",
    # the cached experiment
    "STUDENTS", "SIGNATURES", "sweep_configs",
    "student_key", "stored_sweeps", "run_sweep", "grid_checkpoint", "run_grid", "run_sweeps",
    "signatures", "untrained_signatures",
    # fits and tables
    "fit_alpha", "local_slopes", "euler_error", "averaging_error", "t_interval",
    "mean_interval", "alpha_table", "final_alphas", "slope_table", "loss_table",
    "DEEP", "Setting", "setting_key", "settings", "seed_alphas",
    "seed_summary",
    # verdicts
    "CHAPTER", "MOVING", "ONE_SEED", "converging", "signature_convergence", "assess",
    "assess_independent", "assess_tied_steep", "assess_tied_cold", "assess_mse",
    "assess_signatures",
    # settings
    "ToyConfig", "ToySettings",
]
