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
# # 11. The verdict: every claim, the paper's number beside ours
#
# The answer first — the tally by paper, counted per claim and per finding (claims read from one
# experiment count once) — then every claim on one line; click *details* for its band, control and
# the step that decided it, or a claim to open its chapter.

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
    sys.path.insert(0, f"{repo}/src")
    os.chdir(f"{repo}/notebooks")

# %% tags=["remove-input"]
from IPython.display import HTML

from layerlab import profiles
from layerlab.book import findings, verdicts

profile = profiles.setup(seed=0)
table = verdicts.table(profile.name)
HTML(findings.tally_html(table) + verdicts.compact_html(table))

# %% [markdown]
# ## How to read it
#
# This chapter reads the claims register that every chapter writes (`layerlab.claims`) and puts
# all of it in one place: for each claim of the two papers, what the paper reported, what we
# measured and on what, the tolerance the verdict used, and the verdict. Nothing here is typed:
# a claim whose chapter has not been run on this profile still gets a row, marked *not testable
# at this budget*. Click a claim to open its chapter.
#
# Every verdict is made by one procedure from a declaration written before the numbers were
# read ([How the verdicts are decided](../decisions.md) lists each claim's band, control and
# reason): a failed precondition, or an interval that straddles the band's edge, is **not testable
# at this budget**; an interval outside the band is **not reproduced**; a presence signature
# that the negative control (an untrained twin, a shuffled or i.i.d. null) shows as well is **not
# diagnostic**; an interval inside the band is **reproduced**, or **partly reproduced** where one
# of the claim's other stated parts fails. Claims computed from one experiment share a *finding*:
# the first count below is per finding, the second per claim, with claims that quote only a
# secondary summary of the paper counted apart.
#
# **Which result.** A claim measured on both this profile and a stronger one (`gpu` beside `cpu`:
# its settings are at least as large in every size that sets power, checked by
# `layerlab.book.beside.dominates`) shows the stronger profile's verdict, the better-powered one;
# the column *from* names the profile and keeps the weaker one's verdict beside it, so a verdict
# that changed with the budget stays visible. The count below says how many rows each profile
# supplied.

# %% [markdown]
# **Tiers.** The committed pages ran on the `cpu` tier; on a GPU the same notebook picks `colab`
# or `gpu` from the GPU's memory (`LAYERLAB_PROFILE` overrides). What each tier runs here:

# %%
from layerlab.book import tiers

tiers.table("11")

# %%
from layerlab import provenance
from layerlab.anatomy import importance
from layerlab.anatomy.lab import Lab
from layerlab.book import plots
from layerlab.depth import family, geometry

print(f"profile {profile.name}: {len(table)} claims in {table['finding'].nunique()} findings")
verdicts.finding_counts(table)

# %%
verdicts.counts(table)

# %%
verdicts.sources(table)

# %%
plots.verdict_chart(table)

# %%
# the same claims with every column, folded
HTML("<details class='ll-folded'><summary>Every column of every claim (click to open)</summary>"
     + verdicts.html_table(table) + "</details>")

# %% [markdown]
# ## How precise is the 4-bit stand-in?
#
# Every P2 verdict and every P1 verdict on an offline LLM rests on SmolLM2-135M-Instruct stored
# as 4-bit Q4_1 weights, each within half a quantisation step of the weights it rounds.
# Re-quantising them changes nothing (the grid is its own fixed point), so each copy below adds
# uniform noise of ± half a block's step to every 4-bit weight: a model as far from the stand-in
# as the stand-in is from the original weights, drawn independently (three seeds).
# Each claim's statistic, on its cheapest set (chapter 05's named layers and chapter 06's ×0.9 on
# E0, chapter 07's ridge R² and chapter 08's delta correlations on the weights, chapter 02's
# angles and lens on a few windows), on the stand-in and on the copies:

# %%
from layerlab.report import precision

lab = Lab(profile)
stand_in = precision.run(lab)  # the stand-in and three dithered copies (cached)
print(precision.describe(stand_in["errors"]) + ".")
precision.margins(stand_in["values"]).round(4)

# %% [markdown]
# "Movement" is the largest change of the statistic over the copies: the stand-in's own
# resolution. "Resolved" means the statistic lies farther from its band's nearest edge than that,
# so the stand-in's rounding cannot move the verdict; a claim it does not resolve is *not
# testable at this budget (stand-in precision)* whatever its chapter's interval says. The full
# table of every statistic and its copies:

# %%
precision.movement(stand_in["values"]).round(4)

# %% [markdown]
# ## Do the two papers agree about SmolLM2, layer by layer?
#
# P1 says most layers of a trained model make small, similar, weakly correlated updates; P2 says
# a few layers are critical and some are "anti-layers". On the same model both views can be
# measured layer by layer: P1's angle θ(h_l, h_{l+1}) and relative update size (chapter 02),
# P2's neighbour-average and removal damage (chapter 05) and ShortGPT's Block Influence.
# Spearman ρ over layers 1–28:

# %%
geo = geometry.run(profile, only=[lab.model_name], progress=False)[lab.model_name]  # chapter 02
imap = importance.run(lab)  # cached by chapter 05
layers = verdicts.per_layer(geo, imap.table, imap.similarity)
verdicts.spearman_matrix(layers)

# %%
(plots.cross_paper_scatter(layers, "theta", "skip deg %", "Removal damage vs P1's layer angle")
 & plots.cross_paper_scatter(layers, "rel_update", "neighbour-average deg %",
                             "Neighbour-average damage vs update size"))

# %% [markdown]
# ## Does the depth family trained here show inverse depth scaling?
#
# Chapter 02 trained byte-level models of several depths on the same tokens. Fitting
# loss = c/ℓ^α + L∞ to their final validation losses:

# %%
fam = family.train_family(family.config_for(profile), profile.name, progress=False)
losses = geometry.family_losses(fam)
losses.pivot_table(index="depth", columns="seed", values="val_loss").round(4)

# %%
verdicts.family_scaling_table(losses)

# %% [markdown]
# The fit uses the seed means. With a handful of depths the exponent and the floor trade off;
# where the seed-mean loss stops falling beyond some depth (`monotone` above is False), α is
# uninformative: the family's budget is then the limit, not evidence against P1, and chapter 02
# does not judge the 1/ℓ law on it.

# %% [markdown]
# ## Provenance

# %%
provenance.table(provenance.collect(profile.name, claims=len(table), seed=0))
