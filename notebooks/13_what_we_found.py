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
# # What we found
#
# The answer first: how many of each paper's claims hold, counted by claim and by finding
# (claims read from one experiment count once), then what the controls showed that neither paper
# says. Everything on this page is computed from the claims the chapters registered
# (`layerlab.book.findings`); nothing is typed.

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
from layerlab.book import findings

profile = profiles.setup(seed=0)
register = findings.register(profile.name)
HTML(findings.tally_html(register))

# %% [markdown]
# Each verdict is decided by one procedure from a declaration written before the numbers were
# read ([how the verdicts are decided](../decisions.md)). By finding:

# %% tags=["remove-input"]
HTML(findings.findings_html(register))

# %% [markdown]
# ## What the papers do not say
#
# Each of these comes out of a control or a second reading that a chapter runs beside the
# paper's own test. Each says what the numbers show, links to the chapter section with the
# evidence, and gives the one command that reproduces it.

# %% tags=["remove-input"]
found, untested = findings.unstated(profile.name)
HTML(findings.unstated_note(found, untested))

# %% tags=["remove-input"]
findings.show_all(found)

# %% [markdown]
# ## Every claim
#
# One line per claim: the paper's number, ours in brief, and the verdict; click a row for the
# band, the control and the step that decided it. [The verdict chapter](11_verdicts.ipynb) has
# the same table with every column.

# %% tags=["remove-input"]
HTML(findings.claims_html(register))

# %% [markdown]
# ## Provenance

# %% tags=["remove-input"]
from layerlab import provenance

provenance.table(provenance.collect(profile.name, claims=len(register), seed=0))
