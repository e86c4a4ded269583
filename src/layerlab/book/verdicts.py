"""Chapter 11: every claim of both papers in one table, read from the claims register, and the
cross-paper comparison on SmolLM2 (P1's geometry against P2's importance map).

`SPEC_CLAIMS` lists every claim the two method specs name; a claim with no registered result
still gets a row ("not testable at this budget: not measured in this profile"), so nothing can silently
drop out of the verdict table.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import pandas as pd

from layerlab import claims

if TYPE_CHECKING:
    from layerlab.depth.geometry import ModelGeometry

# id -> (paper, chapter notebook)
SPEC_CLAIMS: dict[str, tuple[str, str]] = {
    "P1-A1-edges-rotate": ("P1", "02_hidden_state_geometry"),
    "P1-A2-update-inverse-depth": ("P1", "02_hidden_state_geometry"),
    "P1-A3-weak-update-correlation": ("P1", "02_hidden_state_geometry"),
    "P1-A4-no-early-stopping": ("P1", "02_hidden_state_geometry"),
    "P1-E1-causal-trace": ("P1", "02_hidden_state_geometry"),
    "P1-B1-bulk-fraction": ("P1", "03_token_clusters"),
    "P1-C1-outlier-cut": ("P1", "01_depth_scaling_law"),
    "P1-C2-alpha-l-paper-recipe": ("P1", "01_depth_scaling_law"),
    "P1-C3-other-exponents": ("P1", "01_depth_scaling_law"),
    "P1-C4-headline": ("P1", "01_depth_scaling_law"),
    "P1-C5-ensemble-not-procedural": ("P1", "01_depth_scaling_law"),
    "P1-C6-minus-two-variant": ("P1", "01_depth_scaling_law"),
    "P1-C7-size-exponent": ("P1", "01_depth_scaling_law"),
    "P1-D1-independent-teacher": ("P1", "04_toy_depth_mechanisms"),
    "P1-D2-tied-teacher-steep": ("P1", "04_toy_depth_mechanisms"),
    "P1-D3-tied-cold": ("P1", "04_toy_depth_mechanisms"),
    "P1-D4-mse-ordering": ("P1", "04_toy_depth_mechanisms"),
    "P1-D5-student-signatures": ("P1", "04_toy_depth_mechanisms"),
    "P2-C1-core": ("P2", "05_importance_map"),
    "P2-C1-peak-size": ("P2", "05_importance_map"),
    "P2-C1-anti-layers": ("P2", "05_importance_map"),
    "P2-C1-io-layers": ("P2", "05_importance_map"),
    "P2-C1-range": ("P2", "05_importance_map"),
    "P2-C2-ridge-r2": ("P2", "07_weight_predictability"),
    "P2-C2-paradox": ("P2", "07_weight_predictability"),
    "P2-C3-delta-value": ("P2", "08_delta_oscillation"),
    "P2-C3-oscillation": ("P2", "08_delta_oscillation"),
    "P2-C4-only-scaling": ("P2", "06_manipulation_strategies"),
    "P2-C4-magnitudes": ("P2", "06_manipulation_strategies"),
    "P2-C5-recovery-steps": ("P2", "09_recovery_speed"),
    "P2-C5-recovery-importance": ("P2", "09_recovery_speed"),
    "P2-C6-loss-ratio": ("P2", "10_growth_training"),
    "P2-C6-half-budget": ("P2", "10_growth_training"),
    "P2-C6-faster": ("P2", "10_growth_training"),
    "P2-C6-cost": ("P2", "10_growth_training"),
}
CLAIM_COLUMNS = ["id", "paper", "chapter", "statement", "paper_value", "ours", "rule", "verdict",
                 "setting", "decided_by", "finding", "source_from"]
# `source`: the profile whose verdict the row shows; `other`: the weaker profile's verdict
# where both measured the claim
COLUMNS = [*CLAIM_COLUMNS, "source", "other"]


def table(profile: str) -> pd.DataFrame:
    """One row per spec claim (and per any other registered claim), from the register.

    Where a stronger profile (`beside.stronger`: `gpu` beside `cpu`) registered the same claim,
    its verdict is the one shown — it is the better-powered result (`beside.dominates`) — and
    the weaker profile's verdict stays visible in `other`."""
    from layerlab.book import beside

    rows: dict[str, dict[str, Any]] = {}
    for source in sorted([profile, *beside.stronger(profile)], key=beside.rank):  # weakest first: stronger ones replace
        for _, r in claims.collect(source).iterrows():
            prev = rows.get(r["id"])
            other = f"{prev['source']}: {prev['verdict']}" if prev is not None else ""
            rows[r["id"]] = {**{c: r[c] for c in CLAIM_COLUMNS}, "source": source, "other": other}
    from layerlab.book.decisions import declarations

    declared = {d.id: d for d in declarations()}
    for cid, (paper_id, chapter) in SPEC_CLAIMS.items():
        d = declared.get(cid)
        rows.setdefault(cid, {"id": cid, "paper": paper_id, "chapter": chapter,
                              "statement": d.statement if d else "(not measured)",
                              "paper_value": d.paper_value if d else "", "ours": "",
                              "rule": "", "verdict": str(claims.NOT_TESTABLE),
                              "setting": f"not measured in the {profile} profile",
                              "decided_by": "precondition: not measured in this profile",
                              "finding": d.finding if d else cid,
                              "source_from": d.source_from if d else "",
                              "source": profile, "other": ""})
    out = pd.DataFrame(rows.values(), columns=COLUMNS)
    # a claim without a declared finding is its own finding
    out["finding"] = [f if isinstance(f, str) and f else cid
                      for f, cid in zip(out["finding"], out["id"])]
    out[["decided_by", "source_from"]] = out[["decided_by", "source_from"]].fillna("")
    return out.sort_values(["paper", "chapter", "id"]).reset_index(drop=True)


def sources(t: pd.DataFrame) -> pd.DataFrame:
    """How many verdicts each profile supplied, and how many of those replaced a weaker one."""
    return (t.assign(replaced=t["other"] != "").groupby("source")
            .agg(claims=("id", "count"), replaced=("replaced", "sum")).reset_index())


def counts(t: pd.DataFrame) -> pd.DataFrame:
    """Claims per paper and verdict; claims quoting only a secondary summary of the paper are
    counted apart (their row says so)."""
    t = t.assign(paper=[f"{p} (secondary summary only)" if "summary" in str(s).lower() else p
                        for p, s in zip(t["paper"], t["source_from"])])
    c = t.pivot_table(index="paper", columns="verdict", values="id", aggfunc="count", fill_value=0)
    return c.reindex(columns=[str(v) for v in claims.VERDICTS if str(v) in c.columns])


def findings(t: pd.DataFrame) -> pd.DataFrame:
    """One row per finding (claims computed from the same experiment share one): its claims and
    one verdict for it that never upgrades its claims by majority (`claims.finding`), each
    claim's verdict listed."""
    rows = []
    for (paper_id, finding), g in t.groupby(["paper", "finding"], sort=True):
        verdict, _ = claims.finding(dict(zip(g["id"], g["verdict"])))
        rows.append({"paper": paper_id, "finding": finding, "claims": ", ".join(g["id"]),
                     "verdict": str(verdict),
                     "claim verdicts": "; ".join(f"{c}: {v}" for c, v in zip(g["id"], g["verdict"]))})
    return pd.DataFrame(rows, columns=["paper", "finding", "claims", "verdict", "claim verdicts"])


def finding_counts(t: pd.DataFrame) -> pd.DataFrame:
    """Findings per paper and verdict: the headline count, one per independent experiment."""
    f = findings(t)
    c = f.pivot_table(index="paper", columns="verdict", values="finding", aggfunc="count",
                      fill_value=0)
    return c.reindex(columns=[str(v) for v in claims.VERDICTS if str(v) in c.columns])


def html_table(t: pd.DataFrame) -> str:
    """The verdict table as HTML, each claim linking to its chapter page."""
    head = ("<th>paper</th><th>claim</th><th>paper reported</th><th>ours</th>"
            "<th>band and control</th><th>verdict (deciding step)</th><th>measured on</th>"
            "<th>from</th>")
    body = []
    for _, r in t.iterrows():
        link = f'<a href="{r["chapter"]}.html">{html.escape(r["statement"])}</a>'
        body.append("<tr>" + "".join(f"<td>{x}</td>" for x in (
            r["paper"], link, html.escape(str(r["paper_value"])), html.escape(str(r["ours"])),
            html.escape(str(r["rule"])),
            f"<b>{html.escape(r['verdict'])}</b><br><small>{html.escape(str(r['decided_by']))}"
            "</small>",
            html.escape(str(r["setting"])), html.escape(_from(r)))) + "</tr>")
    return (f'<table class="dataframe"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table>")


def compact_html(t: pd.DataFrame) -> str:
    """The first-screen table: claim (linking to its chapter), paper, the paper's number, ours in
    brief and the coloured verdict; the band, control and deciding step open on a click."""
    rows = []
    for _, r in t.iterrows():
        ours = str(r["ours"]) or "—"
        measured = f"{html.escape(str(r['setting']))} ({html.escape(_from(r))})"
        rows.append(
            f'<tr id="{html.escape(r["id"])}"><td><a href="{r["chapter"]}.html">'
            f'{html.escape(r["statement"])}</a><br><small>{html.escape(r["id"])}</small></td>'
            f"<td>{r['paper']}</td><td>{html.escape(str(r['paper_value']))}</td>"
            f"<td>{html.escape(claims.brief(ours, 140))}</td><td>{claims.badge(r['verdict'])}"
            f"{claims.details_html(ours, r['rule'], r['decided_by'], ('measured on', measured))}"
            "</td></tr>")
    return ('<div class="ll-scroll"><table class="ll-chapter-verdicts"><thead><tr><th>claim</th>'
            "<th>paper</th><th>paper reported</th><th>ours</th><th>verdict</th></tr></thead>"
            "<tbody>" + "".join(rows) + "</tbody></table></div>")


def family_scaling_table(losses: pd.DataFrame) -> pd.DataFrame:
    """`family_scaling` as one labelled row (no raw dict on the page; a missing fit is a dash)."""
    f = family_scaling(losses)

    def num(x: float, fmt: str) -> str:
        return "—" if x is None or x != x else format(x, fmt)

    return pd.DataFrame([{
        "α (loss = c/ℓ^α + L∞)": f"{num(f['alpha'], '.2f')} ± {num(f['alpha_se'], '.2f')}",
        "c": num(f["c"], ".3f"), "L∞ (nats/byte)": num(f["floor"], ".3f"),
        "loss falls with every added depth": "yes" if f["monotone"] else "no",
        "depths": f["depths"], "seeds": f["seeds"]}]).set_index("depths")


def _from(r: pd.Series) -> str:
    if not r.get("other"):
        return str(r.get("source", ""))
    return f"{r['source']} (better powered; {r['other']})"


# -- cross-paper: P1's geometry and P2's importance, layer by layer -------------------------------
def per_layer(geometry_stats: ModelGeometry, importance_table: pd.DataFrame,
              similarity: pd.DataFrame, set_name: str = "E1") -> pd.DataFrame:
    """Per layer of one model: P1's angle θ(h_l, h_{l+1}) and relative update size (positions ≥ 1,
    un-normalised stream), P2's neighbour-average and skip degradation, and Block Influence."""
    g = geometry_stats.group("raw", "pos_ge_1")
    L = geometry_stats.n_layers
    out = pd.DataFrame({"layer": range(L), "theta": g["theta"]["mean"][:L],
                        "rel_update": g["rel_update"]["mean"][:L]})
    imp = importance_table[importance_table["set"] == set_name]
    for method, col in (("neighbour_average", "neighbour-average deg %"), ("skip", "skip deg %")):
        m = imp[imp["method"] == method].set_index("layer")["deg"]
        out[col] = out["layer"].map(m)
    out = out.merge(similarity[["layer", "block_influence", "angular_distance"]], on="layer")
    return out


def spearman_matrix(layers: pd.DataFrame, inner: bool = True) -> pd.DataFrame:
    """Spearman ρ between every pair of per-layer measures (layers 1 … L−2 by default)."""
    df = layers
    if inner:
        df = df[(df["layer"] >= 1) & (df["layer"] <= df["layer"].max() - 1)]
    return df.drop(columns="layer").corr(method="spearman").round(3)


def family_scaling(losses: pd.DataFrame) -> dict[str, float]:
    """Loss vs depth of the family trained here: the fitted exponent, and whether loss falls
    monotonically with depth."""
    from layerlab.depth.geometry import family_monotone, loss_depth_fit

    fit = loss_depth_fit(losses)
    mono = family_monotone(losses)
    return {**fit, "monotone": mono["monotone"], "depths": int(losses["depth"].nunique()),
            "seeds": int(losses["seed"].nunique())}
