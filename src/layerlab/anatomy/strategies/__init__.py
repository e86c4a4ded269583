"""Chapter 06: P2's five weight-manipulation strategies (research/paper2.md §7).

Each strategy is applied to a target set S (by default the connective layers of chapter 05's
map, jointly) and to each layer of S alone; scaling is swept over α; greedy generations for fixed
prompts show what the perplexity numbers mean as text.

One module per role, all re-exported here: `measurement` (the strategies as edits, the target
set, the size controls' settings and numerics, greedy generation and its repetition scores),
`experiment` (the cached runs: the joint, single-layer and α evaluations, the matched controls,
the generations), `display` (the matched summary, the α sweep's conclusion, the generations as
text) and `rules` (the two C4 claims). Imports run measurement <- experiment, display, rules.
"""

from layerlab.anatomy.strategies.display import (
    alpha_conclusion,
    generation_summary,
    generation_texts,
    matched_summary,
    shown_text,
)
from layerlab.anatomy.strategies.experiment import (
    MatchedResult,
    StrategiesResult,
    generations,
    matched,
    plan,
    run,
)
from layerlab.anatomy.strategies.measurement import (
    BENIGN,
    DIRECTIONS,
    MATCHED_DAMAGE,
    MATCHED_SIZE,
    PROMPTS,
    STRATEGIES,
    SUBSET_TOKENS,
    VARIANTS,
    distinct_2,
    full_sizes,
    generation_conditions,
    greedy,
    least_important,
    repeated_3,
    target_set,
)
from layerlab.anatomy.strategies.rules import (
    CHAPTER,
    MATCHED_SET,
    OTHERS,
    assess,
    assess_magnitudes,
    assess_only_scaling,
    coherence,
    magnitudes_units,
    only_scaling_units,
    strategies_estimate,
)

__all__ = [
    # measurement
    "STRATEGIES", "VARIANTS", "BENIGN", "PROMPTS", "target_set", "MATCHED_SIZE", "MATCHED_DAMAGE",
    "DIRECTIONS", "SUBSET_TOKENS", "full_sizes", "least_important", "distinct_2", "repeated_3",
    "greedy", "generation_conditions",
    # experiment
    "plan", "StrategiesResult", "MatchedResult", "run", "matched", "generations",
    # display
    "matched_summary", "alpha_conclusion", "shown_text", "generation_texts", "generation_summary",
    # rules
    "CHAPTER", "OTHERS", "MATCHED_SET", "strategies_estimate", "coherence", "only_scaling_units",
    "assess_only_scaling", "magnitudes_units", "assess_magnitudes", "assess",
]
