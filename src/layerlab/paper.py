"""What the two papers report: every number and layer index the book compares with, each with
where it comes from. Nothing else in the package types a paper's number; claims, plots,
profiles and the deviations page read them from here, and the book shows them only as
"paper reported".

P1: Liu, Kangaslahti, Liu, Gore, "Inverse Depth Scaling From Most Layers Being Similar"
(arXiv 2602.05970); its fit outputs from the authors' notebooks (liuyz0/DepthScaling,
Scaling/fit-5.ipynb and fit-8.ipynb at commit 07360e3). P2: Wietrzykowski, "Anatomical
Heterogeneity in Transformer Language Models" (arXiv 2603.19348), on SmolLM2-135M (30 layers).
Section and figure numbers follow `research/paper1.md` and `research/paper2.md`.

Used by chapters 01, 03, 04, 05–10 (claims and charts) and the deviations page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reported:
    """One reported value and where in the paper (or its code) it is stated."""

    value: Any
    source: str

    def __iter__(self):  # layer tuples unpack and iterate like the tuple itself
        return iter(self.value)


# --- P1 ------------------------------------------------------------------------------------------
P1_FIT = Reported({
    "n_points": 203,
    "alpha_l": 1.2014, "alpha_l_se": 0.2685,
    "alpha_m": 0.9769, "alpha_m_se": 0.0833,
    "alpha_D": 0.2991, "alpha_D_se": 0.0139,
    "L0": 1.7503, "L0_se": 0.0256,
    "c_m": 333.38, "c_l": 1284.37, "c_D": 8.4867,
    "objective": 0.0030681, "mae": 0.0101, "rel_mae": 0.0040,
    "alpha_l_minus2": 1.0661, "alpha_l_minus2_se": 0.2423,
}, "Fig. 2f, App. B: outputs of the authors' Scaling/fit-5.ipynb and fit-8.ipynb (commit 07360e3)")
P1_ALPHA_L = Reported(1.2, "abstract and Fig. 2f: α_ℓ = 1.2 ± 0.3")
P1_ALPHA_L_PM = Reported(0.3, "abstract and Fig. 2f: α_ℓ = 1.2 ± 0.3")
P1_CHINCHILLA_ALPHA_N = Reported(0.34, "Fig. 2f discussion: Chinchilla's parameter exponent (Hoffmann et al. 2022)")
P1_BULK_FRACTION = Reported(0.996, "token clustering (paper1 spec §3): ≈99.6 % of tokens update evenly")
P1_TOY_INDEPENDENT_ALPHA = Reported(1.0, "Fig. 3b/4c, App. C (exp-9): independent teacher, α_ℓ ≈ 1")
P1_TOY_TIED_ALPHA = Reported(3.0, "Fig. 4a,b, App. C (exp-9-1/9-3): tied teacher, converged, α_ℓ ≈ 3")
P1_TRACE_P_CLEAN = Reported(
    {"EleutherAI/pythia-70m": 0.0106, "EleutherAI/pythia-160m": 0.0124,
     "EleutherAI/pythia-1b": 0.0114, "EleutherAI/pythia-1.4b": 0.0160,
     "EleutherAI/pythia-2.8b": 0.0210, "EleutherAI/pythia-12b": 0.3607},
    "Fig. 6, causal-trace/causal_trace.ipynb output: p(' Seattle') of the clean run")

# --- P2 (no full text or code is public: [ABS] = the arXiv abstract, [SUM] = third-party
# summaries of the paper; research/paper2.md §0-§1 and the section named) ---------------------------
P2_N_LAYERS = Reported(30, "SmolLM2-135M config.json (paper2 spec §2.1)")
P2_BASE_PPL = Reported(22.60, "[SUM] base perplexity on the paper's ten sentences (spec §1)")
P2_CRITICAL_CORE = Reported((8, 9, 10, 11), "[ABS] critical core L8–11 (spec §4.2)")
P2_PEAK_LAYER = Reported(11, "[ABS] L11 is the maximum (spec §4.2)")
P2_PEAK_DEGRADATION = Reported(63_419.0, "[ABS] L11 up to +63,419 % perplexity (spec §1, C1)")
P2_ANTI_LAYERS = Reported((14, 17), "[ABS] anti-layers L14, L17 (spec §4.2)")
P2_IO_LAYERS = Reported((1, 2, *range(23, 29)), "[SUM] input L1–2 and output L23–28 layers (spec §4.2)")
P2_RIDGE_R2 = Reported(0.91, "[ABS] R² = 0.91; gate_proj per [SUM] (spec §5.1)")
P2_PARADOX_K1_PPL = Reported(26.22, "[SUM] one predicted layer: PPL 26.22 (spec §5.4)")
P2_PARADOX_K9_PPL = Reported(1e5, "[SUM] ≥ 9 predicted layers: PPL > 100,000 (spec §5.4)")
P2_DELTA_CORRELATION = Reported(-0.50, "[ABS] consecutive-delta correlation ≈ −0.50 (spec §6.1)")
P2_SCALE_ALPHA = Reported(0.9, "[ABS]/[SUM] only scaling by α = 0.9 keeps quality (spec §1, C4)")
P2_SLOW_RECOVERY = Reported((8, 11), "[ABS]/[SUM] L8, L11 need 200 steps after 50 % noise (spec §1, C5)")
P2_SLOW_RECOVERY_STEPS = Reported(200, "[ABS]/[SUM] 200 steps for L8, L11 (spec §1, C5)")
P2_FAST_RECOVERY = Reported((14, 17), "[ABS]/[SUM] L14, L17 improve at once, 0 steps (spec §1, C5)")
P2_GROWTH = Reported({"gtt": 0.127, "uniform": 0.599, "ratio": 4.7, "faster": 0.13,
                      "cost": 0.54}, "[ABS] 4.7×, 13 %, 54 %; [SUM] 0.127 vs 0.599 (spec §1, C6)")
P2_GROWTH_STEPS = Reported({"gtt": 416, "uniform": 656},
                           "[SUM] GTT at 50 % budget (416 steps) vs uniform at full budget "
                           "(656 steps) (spec §9)")
