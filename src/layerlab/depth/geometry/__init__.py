"""Chapters 02 and 03: hidden-state geometry of every model of a profile (the pretrained LLMs and
the depth family trained here), cached model by model, and the tables and fits built on it.

Every signature has an untrained control: the same statistics, sequence by sequence, on a model
of the same configuration at initialisation (`controls`), so a verdict can ask what training
changed rather than what any residual stack does. Each claim is decided by `claims.decide`
against its declaration in `layerlab.depth.declarations`.

Used by chapters 02 and 03 (and by `clusters`, `lens` and the report). One module per role, all
re-exported here: `measurement` (the models of a profile, their loading and text, `measure`,
`sequence_stats` and the smooth stream), `fits` (depth slopes, the procedural reference, the
loss fit, the bootstrap, the positive control's estimate), `experiment` (the cached runs: `run`,
`token_profiles`, `controls`, and the key they share), `display` (tables) and `rules` (the
P1-A1–A3 verdicts and the family's precondition, `depth_buys_loss`). Imports run measurement <-
fits <- display, rules; measurement <- experiment.
"""

from layerlab.depth.geometry.display import (
    EDGE_RATIOS,
    control_table,
    family_curves,
    family_losses,
    family_points,
    layer_table,
    middle_summary,
    profile_table,
    slope_summary,
)
from layerlab.depth.geometry.experiment import (
    CONTROLS,
    EXPERIMENT,
    PAPER_LAST_EXPERIMENT,
    ModelGeometry,
    condition,
    controls,
    model_context,
    run,
    token_profiles,
)
from layerlab.depth.geometry.fits import (
    bootstrap_mean,
    control_slopes,
    depth_slope,
    loss_depth_fit,
    positive_estimate,
    procedural_curve,
    procedural_reference,
)
from layerlab.depth.geometry.measurement import (
    FAMILY_PREFIX,
    PAPER_LAST,
    POSITIVE_SEED,
    POSITIVE_SEQUENCES,
    POSITIVE_TOKENS,
    POSITIVE_WIDTH,
    SEQUENCE_STATS,
    config_for,
    control_llms,
    control_names,
    family_control_names,
    measure,
    model_names,
    paper_last_angles,
    primary_model,
    sequence_stats,
    smooth_stream,
)
from layerlab.depth.geometry.rules import (
    CHAPTER,
    DH_MIN_LAYERS,
    EDGE_BLOCK,
    EDGE_MIN_LAYERS,
    EDGE_PAPER,
    assess,
    assess_edges,
    assess_inverse_depth,
    assess_weak_correlation,
    depth_buys_loss,
    edge_units,
    family_depths,
    family_monotone,
    inverse_depth_unit,
    one_family_unit,
    weak_correlation_units,
    with_family_precondition,
)

__all__ = [
    # measurement
    "FAMILY_PREFIX", "config_for", "model_names", "primary_model", "measure", "SEQUENCE_STATS",
    "PAPER_LAST", "sequence_stats", "paper_last_angles", "control_llms", "control_names", "family_control_names", "POSITIVE_WIDTH",
    "POSITIVE_SEQUENCES", "POSITIVE_TOKENS", "POSITIVE_SEED", "smooth_stream",
    # fits
    "depth_slope", "procedural_curve", "procedural_reference", "loss_depth_fit",
    "bootstrap_mean", "control_slopes", "positive_estimate",
    # experiment
    "EXPERIMENT", "CONTROLS", "PAPER_LAST_EXPERIMENT", "ModelGeometry", "model_context", "condition", "run", "token_profiles", "controls",
    # display
    "layer_table", "middle_summary", "profile_table", "family_losses", "family_curves",
    "EDGE_RATIOS", "control_table", "family_points", "slope_summary",
    # rules
    "CHAPTER", "EDGE_MIN_LAYERS", "DH_MIN_LAYERS", "EDGE_PAPER", "EDGE_BLOCK", "edge_units",
    "assess_edges", "family_monotone", "depth_buys_loss", "family_depths",
    "with_family_precondition", "one_family_unit", "inverse_depth_unit", "assess_inverse_depth", "weak_correlation_units",
    "assess_weak_correlation", "assess",
]
