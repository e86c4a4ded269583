"""Chapter 05: P2's layer importance map (research/paper2.md §4), its controls and anchors.

Every method replaces or removes one layer at a time and measures the perplexity of E0 and E1;
degradation % = (PPL_edited / PPL_base − 1) × 100, with a paired bootstrap over sentences.

One module per role, all re-exported here: `measurement` (the numerics: the methods as edits,
the bootstrap and the degradation table, the class rules, the range statistic, the
removal-based anchors), `experiment` (the cached runs: the map, the similarity metrics, the
untrained twin's map, and `run`, the chapter in one call), `rules` (the C1 claims: their
estimates, units and verdicts, and the paper's named layers) and `display` (the tables and
lines the page shows). Imports run measurement <- experiment; measurement <- rules <- display.
"""

from layerlab.anatomy.importance.display import (
    anchor_points,
    base_line,
    core_by_operation,
    describe_sets,
    headline,
    sign_agreement,
)
from layerlab.anatomy.importance.experiment import (
    UNTRAINED_METHODS,
    ImportanceResult,
    run,
    run_map,
    similarity,
    untrained_map,
    untrained_methods,
)
from layerlab.anatomy.importance.measurement import (
    CONNECTIVE_MAX,
    CORE_MIN,
    METHODS,
    anchors,
    bootstrap_weights,
    classify,
    degradation_table,
    inner,
    layer_similarity,
    method_edit,
    range_statistic,
    with_classes,
)
from layerlab.anatomy.importance.rules import (
    CHAPTER,
    CORE_OPERATIONS,
    ESTIMATE_COLUMNS,
    LAYER_CLAIMS,
    PAPER_ANTI,
    PAPER_CORE,
    PAPER_LAYERS,
    PAPER_PEAK,
    anti_estimate,
    anti_units,
    assess,
    assess_anti,
    assess_core,
    assess_io,
    assess_peak_size,
    assess_range,
    core_estimate,
    core_units,
    io_estimate,
    io_layers,
    io_units,
    kth_largest,
    layer_estimate,
    log10_estimate,
    not_testable,
    outside_core,
    peak_margin,
    peak_size_units,
    range_units,
    the_rest,
)

__all__ = [
    # measurement
    "METHODS", "CONNECTIVE_MAX", "CORE_MIN", "method_edit", "bootstrap_weights",
    "degradation_table", "classify", "inner", "range_statistic", "layer_similarity", "anchors",
    "with_classes",
    # experiment
    "run_map", "similarity", "ImportanceResult", "run", "UNTRAINED_METHODS", "untrained_map", "untrained_methods",
    # rules
    "CHAPTER", "PAPER_CORE", "PAPER_PEAK", "PAPER_ANTI", "PAPER_LAYERS", "LAYER_CLAIMS",
    "CORE_OPERATIONS", "ESTIMATE_COLUMNS", "layer_estimate", "kth_largest", "log10_estimate",
    "range_units", "assess_range", "core_estimate", "peak_margin", "outside_core", "core_units",
    "assess_core", "peak_size_units", "assess_peak_size", "anti_estimate", "anti_units",
    "assess_anti", "io_layers", "io_estimate", "the_rest", "io_units", "assess_io", "assess",
    "not_testable",
    # display
    "headline", "core_by_operation", "base_line", "anchor_points", "sign_agreement",
    "describe_sets",
]
