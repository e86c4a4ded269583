"""P1's decomposed scaling law fitted to Chinchilla's training runs (Fig. 2f, App. B):

    L(m, ℓ, D) = c_m / m^α_m + c_ℓ / ℓ^α_ℓ + c_D / D^α_D + L0

Two recipes solve the same objective, 100 × mean (ln L − ln L̂)² over the points kept after the
outlier cut:

- `paper`: the authors' procedure exactly (`liuyz0/DepthScaling`, `Scaling/fit-5.ipynb`): their
  units (ℓ' = 100 ℓ, D' = D / 10^6), Adam for 50,000 full-batch steps from their fixed start with
  their per-parameter learning rates, Jacobian standard errors from linear-space residuals.
- `converged`: Levenberg–Marquardt run to convergence from several starts.

All solvers are batched: B fits at once, each with its own weight per point (weights 0/1 select
subsets, multinomial counts make bootstrap resamples), so a 1000-resample bootstrap, an outlier-
cut scan or a set of held-out splits is one vectorised solve.

Used by chapters 01 and 11. One module per role, all re-exported here: `law` (constants, the
Chinchilla runs and the outlier cut, the model and its derivatives), `solvers` (Adam,
Levenberg–Marquardt, starts), `fits` (`Fit`, standard errors, `fit` by either recipe, the scipy
and Huber fits), `uncertainty` (bootstraps, cut scan, held-out splits, identifiability, profile,
Adam path), `implications` (Fig. 2f's parts, the size exponent, optimal shapes), `rules` (the
chapter's claims and the paper's reported numbers), `display` (tables) and `experiment` (the
results cache: the chapter's steps, keyed by their arguments, and `Experiment`, which
supplies a profile's).
"""

from layerlab.depth.declarations import DECLARATIONS
from layerlab.depth.scaling.display import compare_with_paper, held_out_summary, recipes_table
from layerlab.depth.scaling.experiment import Experiment
from layerlab.depth.scaling.fits import Fit, fit, fit_huber, fit_scipy, standard_errors, summarise
from layerlab.depth.scaling.implications import (
    chinchilla_shapes,
    optimal_shape,
    parts,
    parts_by_cut,
    size_exponent,
)
from layerlab.depth.scaling.law import (
    ALL_FREE,
    DEPTH_UNIT,
    NO_DEPTH_TERM,
    PAPER_EXCLUDED,
    PAPER_LR,
    PAPER_START,
    PAPER_STEPS,
    PARAMS,
    TOKEN_UNIT,
    Design,
    design,
    jacobian,
    kept,
    load_chinchilla,
    objective,
    outlier_mask,
    predict,
    terms,
)
from layerlab.depth.scaling.rules import (
    CHAPTER,
    HEADLINE_BAND,
    PAPER_REPORTED,
    UNIT,
    assess,
    assess_ensemble,
    assess_headline,
    assess_minus_two,
    assess_other_exponents,
    assess_outlier_cut,
    assess_paper_recipe,
    assess_size_exponent,
)
from layerlab.depth.scaling.solvers import adam, levenberg_marquardt, multi_start
from layerlab.depth.scaling.uncertainty import (
    adam_path,
    bootstrap,
    cut_scan,
    held_out,
    identifiability,
    percentile_interval,
    profile_alpha_l,
    profile_interval,
    shape_bootstrap,
)

__all__ = [
    # law
    "PARAMS", "DEPTH_UNIT", "TOKEN_UNIT", "PAPER_START", "PAPER_LR", "PAPER_STEPS",
    "PAPER_EXCLUDED", "ALL_FREE", "NO_DEPTH_TERM", "load_chinchilla", "outlier_mask", "Design",
    "design", "kept", "terms", "predict", "jacobian", "objective",
    # solvers
    "adam", "levenberg_marquardt", "multi_start",
    # fits
    "Fit", "standard_errors", "summarise", "fit", "fit_scipy", "fit_huber",
    # uncertainty
    "bootstrap", "shape_bootstrap", "percentile_interval", "cut_scan", "held_out",
    "identifiability", "adam_path", "profile_alpha_l", "profile_interval",
    # implications
    "parts", "size_exponent", "optimal_shape", "chinchilla_shapes", "parts_by_cut",
    # rules
    "DECLARATIONS", "PAPER_REPORTED", "HEADLINE_BAND", "CHAPTER", "UNIT", "assess_outlier_cut",
    "assess_paper_recipe", "assess_other_exponents", "assess_headline", "assess_ensemble",
    "assess_minus_two", "assess_size_exponent", "assess",
    # display
    "compare_with_paper", "recipes_table", "held_out_summary",
    # experiment
    "Experiment",
]
