"""P1's claims as declared before their numbers are read (`../shared/VERDICTS.md` §1).

One `Declaration` per claim: the paper's words and where they come from, the kind of claim, the
primary statistic and its resampling unit, the band and the reason for it (§3), the precondition,
the control, the secondaries, the scope and the finding. Chapters measure the evidence and call
`claims.decide(DECLARATIONS[id], units)`; a band changed after results were read is listed on the
deviations page with its reason.
"""

from __future__ import annotations

import math

from layerlab import paper
from layerlab.claims import Band, Declaration, Kind, Secondary, index

__all__ = ["DECLARATIONS"]

INF = math.inf
_FIT = paper.P1_FIT.value  # the authors' notebook outputs
_ALPHA, _PM = paper.P1_ALPHA_L.value, paper.P1_ALPHA_L_PM.value


def _agree(key: str, reason: str) -> Band:
    """Agreement with the authors' notebook output `key` to within 0.05 (half the printed
    decimal)."""
    return Band(lo=round(_FIT[key] - 0.05, 4), hi=round(_FIT[key] + 0.05, 4), reason=reason)

# --- chapter 01: the depth exponent on Chinchilla data (P1-C*) --------------------------------
# Two findings. "P1-C recipe re-run": the authors' own fit (their 203 points, units, start,
# float32 Adam for 50,000 steps) re-run on the same data, so it has no sampling error and is
# judged as agreement to the precision the paper prints: the paper rounds this fit to one decimal
# (α_ℓ = 1.2 ± 0.3, α_m ≈ 1, α_D ≈ 0.3), so each number must lie within half a unit of that
# decimal (0.05) of the authors' own output. "P1-C depth exponent": what the data say about α_ℓ,
# from the converged fit of the same objective with a 95 % interval over model shapes (every run
# of a resampled (width, depth) shape; runs of one shape share its depth and are not independent).
_C01_RERUN_UNIT = ("none: the authors' own 203 points refitted by their own recipe, a deterministic "
               "recomputation with no sampling error")
_C01_SHAPE_UNIT = ("model shapes: the (width, depth) configurations behind the 203 kept runs, "
               "resampled with all their runs (bootstrap over shapes)")
_C01_SCOPE = ("Chinchilla's training runs as extracted by Epoch AI with the authors' width and depth "
          "per run (Scaling/get_fitting_data_chinchilla.csv): one data set, one unit")
_C01_RERUN_PRE = ("the outlier cut is the paper's (40 excluded) and keeps the paper's 203 points, so "
              "the fit sees the authors' data")
_C01_SHAPE_PRE = ("the shape bootstrap has converged resamples, and its 95 % interval is narrower than "
              "the band (a wider one can only straddle it)")
_C01_HALF_DECIMAL = ("a refit of the paper's own points has no sampling error: agreement to the "
                 "precision the paper prints, one decimal (it rounds this fit to α_ℓ = 1.2 ± 0.3, "
                 "α_m ≈ 1, α_D ≈ 0.3), i.e. within 0.05 of the authors' output; their fourth "
                 "decimal is below what a float32 Adam re-run reproduces")
_CH01: tuple[Declaration, ...] = (
    Declaration(
        id="P1-C1-outlier-cut", paper="P1", chapter="01_depth_scaling_law",
        statement="The outlier cut keeps 203 of the 245 Chinchilla runs",
        source="nr_of_models_excluded = 40 # 40 is good … indices = [i for i in range(len(m)) if "
               "losses[i] < sorted_losses[-nr_of_models_excluded]]",
        source_from="paper's code (Scaling/fit-5.ipynb)",
        paper_value="203 of 245 points", kind=Kind.NUMBER,
        primary="number of runs kept by the paper's cut (loss below the 40th-largest loss)",
        unit=_C01_RERUN_UNIT,
        band=Band(lo=202.5, hi=203.5, reason="a count on the paper's own 245 runs: agreement to "
                  "the precision printed, an integer, so exactly 203"),
        precondition="the data are the authors' 245-run file (checked on load: 245 rows, "
                     "D = C / 6N) and the cut excludes the paper's 40",
        control="", scope=_C01_SCOPE, finding="P1-C recipe re-run"),
    Declaration(
        id="P1-C2-alpha-l-paper-recipe", paper="P1", chapter="01_depth_scaling_law",
        statement="The authors' fit (their units, start, learning rates, float32 Adam for 50,000 "
                  "steps) gives α_ℓ = 1.2014 ± 0.2685 (Jacobian SE) on the 203 kept runs",
        source="α_ℓ = 1.2014 ± 0.2685",
        source_from="paper's code (Scaling/fit-5.ipynb output); the paper prints it as 1.2 ± 0.3",
        paper_value="1.2014 ± 0.2685 (printed 1.2 ± 0.3)", kind=Kind.NUMBER,
        primary="α_ℓ of the authors' recipe re-run on the same 203 points",
        unit=_C01_RERUN_UNIT,
        band=_agree('alpha_l', reason=_C01_HALF_DECIMAL),
        precondition=_C01_RERUN_PRE, control="",
        secondary=(Secondary(name="standard error", statistic="the Jacobian standard error of α_ℓ "
                             "(linear-space residuals, s²(JᵀJ)⁻¹), as the authors compute it",
                             band=_agree('alpha_l_se', reason="printed as ± 0.3: within 0.05 of the code's standard error")),),
        scope=_C01_SCOPE, finding="P1-C recipe re-run"),
    Declaration(
        id="P1-C3-other-exponents", paper="P1", chapter="01_depth_scaling_law",
        statement="The same fit gives α_m ≈ 1 (0.9769), α_D ≈ 0.3 (0.2991) and L0 = 1.7503",
        source="c_m = 333.38, α_m = 0.9769 ± 0.0833 … α_D = 0.2991 ± 0.0139; L0 = 1.7503 ± 0.0256",
        source_from="paper's code (Scaling/fit-5.ipynb output); the paper prints α_m ≈ 1, "
                    "α_D ≈ 0.3",
        paper_value="α_m 0.9769, α_D 0.2991, L0 1.7503", kind=Kind.NUMBER,
        primary="α_m of the authors' recipe re-run on the same 203 points",
        unit=_C01_RERUN_UNIT,
        band=_agree('alpha_m', reason=_C01_HALF_DECIMAL),
        precondition=_C01_RERUN_PRE, control="",
        secondary=(Secondary(name="alpha_D", statistic="α_D of the same re-run",
                             band=_agree('alpha_D', reason="printed as α_D ≈ 0.3: within 0.05 of 0.2991")),
                   Secondary(name="L0", statistic="L0 of the same re-run",
                             band=_agree('L0', reason="the same one-decimal precision as the exponents: "
                                              "within 0.05 of 1.7503"))),
        scope=_C01_SCOPE, finding="P1-C recipe re-run"),
    Declaration(
        id="P1-C4-headline", paper="P1", chapter="01_depth_scaling_law",
        statement="Depth exponent α_ℓ = 1.2 ± 0.3 in Chinchilla data",
        source="α_ℓ = 1.2 ± 0.3",
        source_from="paper's code (Scaling/fit-5.ipynb: 1.2014 ± 0.2685, a Jacobian standard "
                    "error); the rounded 1.2 ± 0.3 of Fig. 2f is known from third-party notes",
        paper_value="1.2 ± 0.3", kind=Kind.NUMBER,
        primary="α_ℓ of the converged least-squares fit (the optimum of the authors' objective)",
        unit=_C01_SHAPE_UNIT,
        band=Band(lo=round(_ALPHA - 1.96 * _PM, 9), hi=round(_ALPHA + 1.96 * _PM, 9),
                  reason="the paper's ± 0.3 is a standard error (fit-5.ipynb: Jacobian SE "
                         "s²(JᵀJ)⁻¹), so its own 95 % interval is 1.2 ± 1.96 × 0.3"),
        precondition=_C01_SHAPE_PRE, control="", scope=_C01_SCOPE, finding="P1-C depth exponent"),
    Declaration(
        id="P1-C5-ensemble-not-procedural", paper="P1", chapter="01_depth_scaling_law",
        statement="α_ℓ ≈ 1, as ensemble averaging predicts, not ≥ 2 as Euler-like procedural "
                  "assembly would",
        source="We find loss scales inversely proportional to depth in LLMs, probably due to "
               "functionally similar layers reducing error through ensemble averaging rather "
               "than compositional learning or discretizing smooth dynamics.",
        source_from="abstract",
        paper_value="α_ℓ ≈ 1 (ensemble averaging) vs ≥ 2 (procedural, Euler)", kind=Kind.NUMBER,
        primary="α_ℓ of the converged least-squares fit", unit=_C01_SHAPE_UNIT,
        band=Band(lo=0.5, hi=1.5,
                  reason="a contrast: the band ends halfway from ensemble averaging's 1 to the "
                         "least exponent of the procedural alternative, 2 (Euler steps), and "
                         "lies symmetric about 1 below"),
        precondition=_C01_SHAPE_PRE, control="", scope=_C01_SCOPE, finding="P1-C depth exponent"),
    Declaration(
        id="P1-C6-minus-two-variant", paper="P1", chapter="01_depth_scaling_law",
        statement="Not counting the first and last block (ℓ − 2) the authors' recipe gives "
                  "α_ℓ = 1.066 ± 0.242",
        source="α_ℓ = 1.0661 ± 0.2423",
        source_from="paper's code (Scaling/fit-8.ipynb output, App. B.3)",
        paper_value="1.0661 ± 0.2423", kind=Kind.NUMBER,
        primary="α_ℓ of the authors' recipe re-run with depth ℓ − 2 on the same 203 points",
        unit=_C01_RERUN_UNIT,
        band=_agree('alpha_l_minus2', reason=_C01_HALF_DECIMAL),
        precondition=_C01_RERUN_PRE, control="",
        secondary=(Secondary(name="standard error", statistic="the Jacobian standard error of "
                             "α_ℓ in the ℓ − 2 fit",
                             band=_agree('alpha_l_minus2_se', reason="the same one-decimal precision: within 0.05 of "
                                              "0.2423")),),
        scope=_C01_SCOPE, finding="P1-C recipe re-run"),
    Declaration(
        id="P1-C7-size-exponent", paper="P1", chapter="01_depth_scaling_law",
        statement="With α_m ≈ α_ℓ ≈ 1 the optimal shape has m ∝ ℓ and a model-size term "
                  "∝ N^(−1/3), matching Chinchilla's α_N ≈ 0.34",
        source="(i) and (ii) together lead to the loss scaling N^{-1/3} under the optimal shape, "
               "where N≈12m²ℓ is the number of parameters asymptotically.",
        source_from="secondary summary (the first author's blog, liuyz0.github.io/blog/2026/NSLT; "
                    "the seed summary says the same)",
        paper_value="N^(−1/3) (Chinchilla: α_N ≈ 0.34)", kind=Kind.NUMBER,
        primary="the size exponent α_m α_ℓ / (α_m + 2 α_ℓ) of the converged fit",
        unit=_C01_SHAPE_UNIT,
        band=Band(lo=0.3, hi=11 / 30,
                  reason="a contrast: ensemble averaging (α_m = α_ℓ = 1) gives 1/3, procedural "
                         "assembly (α_ℓ = 2) 2/5; the band ends halfway, at 11/30, and lies "
                         "symmetric about 1/3 below"),
        precondition=_C01_SHAPE_PRE, control="",
        secondary=(Secondary(name="m ∝ ℓ", statistic="the exponent of N in the optimal m/ℓ, "
                             "(α_ℓ − α_m) / (α_m + 2 α_ℓ), 0 when m ∝ ℓ",
                             band=Band(lo=-0.1, hi=0.1,
                                       reason="a contrast: 0 for α_m = α_ℓ, 1/5 for the "
                                              "procedural α_ℓ = 2; the band ends halfway, "
                                              "symmetric about 0")),),
        scope=_C01_SCOPE, finding="P1-C depth exponent"),
)

# --- chapters 02 and 03: hidden-state geometry, lens, trace, token clusters (P1-A*, P1-E1, P1-B1)
_CH02_03: tuple[Declaration, ...] = ()

# --- chapter 04: the toy teacher-student networks (P1-D*) --------------------------------------
_CH04: tuple[Declaration, ...] = ()

DECLARATIONS: dict[str, Declaration] = index((*_CH01, *_CH02_03, *_CH04))
