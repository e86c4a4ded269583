"""Altair chart builders with one look. Charts are Vega-Lite specs rendered client-side, so
tooltips, legends and selections work in the static HTML with no kernel. Keep data aggregated:
every row is inlined into the page.

Used by every chapter (00–11). One module per family of charts, all re-exported here:
`_style` (palette, legends, log axes, axis titles; registers and enables the `layerlab` theme
on import), `scaling_law` (chapter 01), `geometry` (chapters 00, 02, 03), `toy` (the depth
family's training, chapter 04), `anatomy` (chapters 05-10), `verdicts` (chapter 11).
"""

from layerlab.book.plots._style import (
    ABS_LOG_TITLES,
    CATEGORY,
    COLUMN_TITLES,
    HEIGHT,
    PALETTE,
    POWER_OF_TEN_LABELS,
    WIDTH,
    log_axis,
    scale_for,
)
from layerlab.book.plots.anatomy import (
    SIGN_COLORS,
    alpha_sweep,
    anchor_scatter,
    delta_lines,
    delta_summary_dots,
    growth_curves,
    importance_bars,
    method_lines,
    paradox_chart,
    r2_vs_alpha,
    recovery_curves,
    removal_curve,
    single_layer_heatmap,
    strategy_bars,
)
from layerlab.book.plots.geometry import (
    bulk_vs_context,
    control_chart,
    depth_scaling_points,
    layer_profiles,
    lens_chart,
    norm_lines,
    perplexity_bars,
    progress_profiles,
    slope_chart,
    token_scatter,
    tracing_heatmap,
)
from layerlab.book.plots.scaling_law import (
    adam_path_chart,
    aspect_chart,
    bootstrap_histogram,
    cut_scan_chart,
    depth_part_slider,
    other_parts,
    profile_chart,
)
from layerlab.book.plots.toy import (
    alpha_vs_steps,
    alpha_vs_temperature,
    family_final_chart,
    family_loss_chart,
    local_slope_chart,
    signature_chart,
    toy_loss_chart,
    warmup_chart,
)
from layerlab.book.plots.verdicts import VERDICT_COLORS, cross_paper_scatter, verdict_chart

__all__ = [
    "WIDTH", "HEIGHT", "CATEGORY", "PALETTE", "scale_for", "POWER_OF_TEN_LABELS", "log_axis",
    "COLUMN_TITLES", "ABS_LOG_TITLES", "depth_part_slider", "other_parts", "bootstrap_histogram",
    "cut_scan_chart", "profile_chart", "adam_path_chart", "aspect_chart", "perplexity_bars",
    "norm_lines", "layer_profiles", "depth_scaling_points", "control_chart", "slope_chart",
    "lens_chart", "tracing_heatmap", "bulk_vs_context", "token_scatter", "progress_profiles",
    "family_loss_chart", "family_final_chart", "warmup_chart", "toy_loss_chart",
    "local_slope_chart", "alpha_vs_temperature", "alpha_vs_steps", "signature_chart",
    "SIGN_COLORS", "importance_bars", "method_lines", "anchor_scatter", "strategy_bars",
    "single_layer_heatmap", "alpha_sweep", "removal_curve", "r2_vs_alpha", "paradox_chart",
    "delta_lines", "delta_summary_dots", "recovery_curves", "growth_curves", "VERDICT_COLORS",
    "verdict_chart", "cross_paper_scatter",
]
