"""What chapter 06 shows of its runs: the size controls per strategy (`matched_summary`), what
the α sweep says (`alpha_conclusion`) and the generations as text and repetition scores
(`shown_text`, `generation_texts`, `generation_summary`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd

from layerlab.anatomy.strategies.measurement import DIRECTIONS, MATCHED_DAMAGE

if TYPE_CHECKING:
    from layerlab.anatomy.strategies.experiment import MatchedResult

__all__ = ["matched_summary", "alpha_conclusion", "shown_text", "generation_texts",
           "generation_summary"]


def matched_summary(m: MatchedResult) -> pd.DataFrame:
    """Per strategy: median relative change at full strength, the median fraction and relative
    change that cost MATCHED_DAMAGE % on one layer, and the joint degradations at matched size and
    matched damage (zero at matched size is scale ×0.9 exactly)."""
    sizes = m.sizes.groupby("strategy")["relative change"].median()
    dmg = m.damage.groupby("strategy")[["fraction", "relative change"]].median()
    j = m.joint.pivot_table(index="strategy", columns=["matched", "set"], values="deg")
    rows = []
    for name in DIRECTIONS:
        rows.append({"strategy": name, "full-strength ‖ΔW‖/‖W‖ (median)": sizes[name],
                     f"‖ΔW‖/‖W‖ for +{MATCHED_DAMAGE:g} % on one layer (median)":
                         dmg.loc[name, "relative change"],
                     **{f"joint deg % at {p.split()[0]} — {s}": j.loc[name, (p, s)]
                        for p in ("size joint", "damage joint") for s in ("E0", "E1 subset")}})
    return pd.DataFrame(rows).set_index("strategy").round(3)


def alpha_conclusion(alpha: pd.DataFrame) -> str:
    """What the α sweep says, from its CIs: for each scope and set, the α values whose whole CI
    lies below 0 (the model improves), and the α of the lowest perplexity."""
    parts = []
    for (scope, s), df in alpha.groupby(["scope", "set"], sort=False):
        better = [f"{a:g}" for a, hi in zip(df["alpha"], df["hi"]) if hi < 0]
        best = df.loc[df["deg"].idxmin()]
        parts.append(f"{scope}, {s}: lowest PPL at α = {best['alpha']:g} ({best['deg']:+.1f} %); "
                     + (f"CI below 0 at α = {', '.join(better)}" if better
                        else "no α improves perplexity beyond its CI"))
    return "; ".join(parts)


_SPECIAL = re.compile(r"<\|[^|>]{1,40}\|>")


def shown_text(text: str) -> str:
    """A generation as a page shows it: line breaks as ↵, special tokens (<|im_end|>) as ⟨end⟩,
    other control characters dropped. The stored text stays exact."""
    text = _SPECIAL.sub(" ⟨end⟩ ", text).replace("\r\n", "\n").replace("\n", " ↵ ")
    text = "".join(ch for ch in text if ch.isprintable())
    return " ".join(text.split())


def generation_texts(gens: pd.DataFrame) -> pd.DataFrame:
    """Condition × prompt table of the generations, as shown text (`shown_text`)."""
    return gens.assign(text=gens["text"].map(shown_text)).pivot(
        index="condition", columns="prompt", values="text")


def generation_summary(gens: pd.DataFrame) -> pd.DataFrame:
    """Mean distinct-2 and repeated-3 per condition over the prompts (conditions in run
    order): the repetition scores beside which the texts are read."""
    return gens.groupby("condition", sort=False)[["distinct_2", "repeated_3"]].mean().round(3)
