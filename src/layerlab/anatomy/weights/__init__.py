"""Chapters 07-08: the weights of a trained stack as a sequence over depth (research/paper2.md
§5-§6): delta correlations with their closed-form null, adjacent-layer correlations, and ridge
predictability under three protocols, with nulls and positive controls.

Everything element-wise reduces to inner products between layers. For one tensor type the
layers W_0 … W_{L−1} (flattened) and the all-ones vector span a space in which every prediction
we make (ridge, mean, persistence, autoregression) is a linear combination, so one Gram matrix
G = [W; 1][W; 1]ᵀ of size (L+1)² answers every R², cosine and correlation exactly, whatever the
number of elements. The stack is read once per type; kernel-form ridge then takes milliseconds.

Used by chapters 07 and 08 (through `layerlab.anatomy.predictability` and
`layerlab.anatomy.deltas`, which hold their cached runs, tables and verdicts), by chapters 05
and 11's stand-in precision check (`layerlab.report.precision`) and by `layerlab report`'s
weight statistics (chapter 12's page). One module per role, all re-exported here: `tensors`
(reading a stack: the tensor types of a block and the groups of blocks that hold them, `stack`,
`value`, the fused projections' layouts, and `replace_edit`, which writes tensors back),
`correlation` (the delta correlation, the adjacent-layer correlations and the closed-form
predictions for independent and stationary layers), `ridge` (the Gram-space machinery: `Gram`,
kernel ridge under three protocols, the baselines, the autoregression and the descriptors) and
`control_stacks` (synthetic stacks with known answers, and the shuffled, Gaussian and
untrained-init stacks beside a real one). Imports run tensors <- control_stacks; correlation and
ridge read no model.
"""

from layerlab.anatomy.weights.control_stacks import (
    controls,
    matched_gaussian,
    random_init_stack,
    shuffled,
    synthetic,
)
from layerlab.anatomy.weights.correlation import (
    adjacent_correlation,
    delta_correlation,
    independent_prediction,
    stationary_prediction,
)
from layerlab.anatomy.weights.ridge import (
    Gram,
    autoregression,
    baseline_scores,
    default_split,
    descriptor_scores,
    descriptors,
    prediction_tensor,
    ridge_coefficients,
    ridge_scores,
)
from layerlab.anatomy.weights.tensors import (
    FUSED_LAYOUTS,
    LLAMA_TYPES,
    MATRIX_TYPES,
    OTHER_TYPES,
    FusedLayout,
    TensorGroup,
    fused_layout,
    fused_part,
    replace_edit,
    span,
    stack,
    tensor_groups,
    tensor_types,
    value,
)

__all__ = ["FUSED_LAYOUTS", "LLAMA_TYPES", "MATRIX_TYPES", "OTHER_TYPES", "adjacent_correlation",
           "autoregression", "baseline_scores", "controls", "default_split", "delta_correlation",
           "descriptor_scores", "descriptors", "fused_layout", "fused_part", "FusedLayout", "Gram",
           "independent_prediction", "matched_gaussian", "prediction_tensor", "random_init_stack",
           "replace_edit", "ridge_coefficients", "ridge_scores", "shuffled", "span", "stack",
           "stationary_prediction", "synthetic", "tensor_groups", "tensor_types", "TensorGroup",
           "value"]
