"""What chapter 05 shows of its map: the 30-row table (`headline`), L7–12 under both operations
with their ranks (`core_by_operation`), the base perplexity beside the paper's (`base_line`), the
anchors' points (`anchor_points`), the claimed anti-layers under every method and set
(`sign_agreement`) and the evaluation sets for provenance (`describe_sets`).
"""

from __future__ import annotations

import pandas as pd

from layerlab import paper
from layerlab.anatomy.evaluator import Scores
from layerlab.anatomy.importance.measurement import inner
from layerlab.anatomy.importance.rules import CORE_OPERATIONS, PAPER_ANTI

__all__ = ["headline", "core_by_operation", "base_line", "anchor_points", "sign_agreement",
           "describe_sets"]


def headline(table: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """The 30-row table of the spec (§4.4): per layer, both sets, neighbour average and skip."""
    df = table[table["method"].isin(["neighbour_average", "skip"])]
    wide = df.pivot_table(index="layer", columns=["set", "method"], values=["deg", "lo", "hi"])
    out = pd.DataFrame(index=wide.index)
    for s in sorted(df["set"].unique()):
        for m in ("neighbour_average", "skip"):
            out[f"{s} {m} deg %"] = wide[("deg", s, m)].round(1)
            out[f"{s} {m} 95% CI"] = [f"[{a:.1f}, {b:.1f}]" for a, b in
                                      zip(wide[("lo", s, m)], wide[("hi", s, m)])]
    cls = table[table["method"] == "neighbour_average"].pivot(index="layer", columns="set",
                                                             values="class")
    for s in cls.columns:
        out[f"{s} class"] = cls[s]
    return out


def core_by_operation(table: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """Degradation % of L7–12 (every inner layer of a smaller model) under neighbour averaging and
    removal, per set, with each operation's rank of the layer among layers 1 … L−2 (1 = most
    damaging)."""
    rows = []
    shown = [l for l in range(7, 13) if 1 <= l <= n_layers - 2] or list(range(1, n_layers - 1))
    for (s, m), df in inner(table[table["method"].isin(CORE_OPERATIONS)], n_layers).groupby(["set", "method"]):
        rank = df.set_index("layer")["deg"].rank(ascending=False).astype(int)
        for l in shown:
            r = df[df["layer"] == l].iloc[0]
            rows.append({"set": s, "operation": m, "layer": l, "deg %": round(float(r["deg"]), 1),
                         "rank": int(rank[l]), "class": r["class"]})
    return pd.DataFrame(rows).pivot_table(index="layer", columns=["set", "operation"],
                                          values=["deg %", "rank"], aggfunc="first")


def base_line(bases: dict[str, Scores]) -> str:
    """The unedited model's perplexity on each set beside the paper's (its ten sentences)."""
    ours = "; ".join(f"{s} {b.ppl:.2f}" for s, b in bases.items())
    return (f"base perplexity: {ours} (paper reported {paper.P2_BASE_PPL.value:.2f} on its own ten "
            "sentences, not published)")


def anchor_points(table: pd.DataFrame, sim: pd.DataFrame, set_name: str, n_layers: int) -> pd.DataFrame:
    """Per inner layer: neighbour-average degradation beside Block Influence and angular distance."""
    nb = inner(table[(table["method"] == "neighbour_average") & (table["set"] == set_name)], n_layers)
    out = nb[["layer", "deg"]].merge(sim, on="layer")
    return out.assign(abs_deg=out["deg"].abs().clip(lower=1e-3))


def sign_agreement(table: pd.DataFrame, layers: tuple[int, ...] = PAPER_ANTI) -> pd.DataFrame:
    """Degradation and CI of the claimed anti-layers under every method and set."""
    df = table[table["layer"].isin(layers)]
    return df[["layer", "set", "method", "deg", "lo", "hi", "class"]].round(2).sort_values(
        ["layer", "set", "method"]).reset_index(drop=True)


def describe_sets(sets: pd.DataFrame) -> str:
    """One line per evaluation set, for provenance blocks."""
    return "; ".join(f"{r['set']}: {r['sentences']} sentences, {r['predicted_tokens']} tokens "
                     f"({r['source']})" for _, r in sets.iterrows())
