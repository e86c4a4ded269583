"""The page "What we found": the tally of verdicts per paper, per finding and per claim, and the
findings the papers do not state, each computed from the claims register and the records.

Nothing here is typed about a result: every sentence is chosen and filled from the numbers the
chapters registered (`claims.collect`), so a re-executed chapter that measures something else
changes the sentence, or drops the finding when its evidence no longer holds (`unstated` lists
only the findings whose test passes, and says which did not).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import altair as alt
import pandas as pd

from layerlab import claims, paper
from layerlab.book import verdicts

__all__ = ["Finding", "register", "tally", "tally_html", "unstated", "card", "answer_sentences",
           "chapter_table", "render_answer", "main"]

WIDTH = 420  # narrow enough that a phone scales it by no more than about 0.8


@dataclass
class Finding:
    """One thing the book found that the papers do not state."""

    key: str
    title: str
    evidence: list[str]  # two sentences, filled from the numbers
    claims: tuple[str, ...]  # the registered claims whose numbers carry it
    chapter: str  # notebook stem
    section: str  # the section's anchor on the chapter page
    command: str  # one command that reproduces it
    chart: alt.TopLevelMixin | None = field(default=None, repr=False)

    @property
    def link(self) -> str:
        return f"{self.chapter}.html#{self.section}"


def register(profile: str = "cpu") -> pd.DataFrame:
    """The verdict table of chapter 11 (one row per claim of both papers)."""
    return verdicts.table(profile)


def _numbers(profile: str) -> dict[str, dict[str, Any]]:
    t = claims.collect(profile)
    return {r["id"]: (r["numbers"] if isinstance(r["numbers"], dict) else {})
            for _, r in t.iterrows()}


# -- the tally ---------------------------------------------------------------------------------
def tally(t: pd.DataFrame) -> pd.DataFrame:
    """Per paper: claims and findings, and how many of each carry each verdict."""
    f = verdicts.findings(t)
    rows = []
    for paper_id in sorted(t["paper"].unique()):
        for unit, frame in (("claims", t[t["paper"] == paper_id]),
                            ("findings", f[f["paper"] == paper_id])):
            counts = frame["verdict"].value_counts()
            rows.append({"paper": paper_id, "counted": unit, "total": len(frame),
                         **{str(v): int(counts.get(str(v), 0)) for v in claims.VERDICTS}})
    return pd.DataFrame(rows)


def tally_html(t: pd.DataFrame) -> str:
    """The tally as HTML: one line per paper and count (claims, findings), each verdict a coloured
    chip with its count; the chips wrap, so the whole tally reads at 390 px too."""
    tl = tally(t)
    rows = []
    for _, r in tl.iterrows():
        chips = " ".join(f'<span class="ll-chip">{claims.badge(str(v))}&nbsp;{r[str(v)]}</span>'
                         for v in claims.VERDICTS)
        rows.append(f"<tr><th>{r['paper']} · {r['counted']} ({r['total']})</th>"
                    f"<td>{chips}</td></tr>")
    return f'<table class="ll-tally"><tbody>{"".join(rows)}</tbody></table>'


# how a finding's verdict reads in the headline (VERDICTS.md §5 [rev]): what was re-run, what was
# replicated, and what was not decided are kept apart
KINDS = (
    ("re-run", "Re-run (the authors' code on the authors' data gives their numbers)"),
    ("reanalysed", "Reanalysed (our own fit to the authors' data agrees)"),
    ("reanalysed in part", "Reanalysed, agreeing in part"),
    ("replicated", "Replicated (our own measurement, on other models, data or training runs, "
                   "agrees)"),
    ("partly", "Replicated in part"),
    ("not replicated", "Not replicated"),
    ("not diagnostic", "Not diagnostic (an untrained or structure-free control shows the same)"),
    ("not decided", "Not decided at this budget"),
)


def _kind(finding: str, verdict: str) -> str:
    """A finding's headline kind: its verdict, with a re-run of the authors' own recipe on their
    own data kept apart from a replication."""
    v = claims.Verdict(verdict)
    if finding in REANALYSED and v in (claims.REPRODUCED, claims.PARTLY):
        return "reanalysed" if v is claims.REPRODUCED else "reanalysed in part"
    if v is claims.REPRODUCED:
        return "re-run" if "re-run" in finding else "replicated"
    return {claims.PARTLY: "partly", claims.NOT_REPRODUCED: "not replicated",
            claims.NOT_DIAGNOSTIC: "not diagnostic", claims.NOT_TESTABLE: "not decided"}[v]


# findings whose evidence is our own fit to the authors' data: neither a re-run nor a replication
REANALYSED = {"P1-C depth exponent"}


def _words(finding: str) -> str:
    """A finding's label without its id ("P2-F1 layer importance map" → "layer importance map")."""
    head, _, rest = finding.partition(" ")
    return rest if rest and head[:2] in ("P1", "P2") and "-" in head else finding


def stand_in_distance(num: dict[str, dict[str, Any]]) -> str | None:
    """How far the 4-bit stand-in is from models it cannot be told apart from: its E0 perplexity
    and the range over its dithered copies (chapter 05's copies, stored with P2-C1-core)."""
    d = num.get("P2-C1-core", {}).get("stand-in distance", {}).get("E0")
    if not d:
        return None
    lo, hi = d["copies"]
    return (f"measured on the 4-bit stand-in, whose own rounding is not small: its E0 perplexity "
            f"is {d['stand-in']:.1f}, and copies perturbed by as much again give {lo:.0f}–{hi:.0f}, "
            "so a magnitude measured on it (a percent degradation, a perplexity) is uncertain "
            "by about that much; the verdicts apply the copies where measured")


def answer_sentences(t: pd.DataFrame, distance: str | None = None) -> list[str]:
    """The book's answer, one line per paper: its findings in words, grouped by what kind of
    evidence carries them (re-run, replicated, in part, not replicated, not diagnostic, not
    decided), each measured on the 4-bit stand-in marked, and `distance` (`stand_in_distance`)
    in the same line; then what most often stopped a decision."""
    out = []
    f = verdicts.findings(t)
    on_stand_in = {fd for fd, g in t.groupby("finding")
                   if g["setting"].fillna("").str.contains("q4").any()}
    for paper_id, name in (("P1", "inverse depth scaling"), ("P2", "anatomical heterogeneity")):
        ff = f[f["paper"] == paper_id]
        groups: dict[str, list[str]] = {}
        for _, r in ff.iterrows():
            mark = "†" if r["finding"] in on_stand_in else ""
            groups.setdefault(_kind(r["finding"], r["verdict"]), []).append(
                _words(r["finding"]) + mark)
        parts = [f"{label}: {', '.join(groups[k])}" for k, label in KINDS if k in groups]
        note = (f" († {distance})" if distance and any(r["finding"] in on_stand_in
                                                        for _, r in ff.iterrows()) else "")
        out.append(f"**{paper_id} ({name})**, {len(ff)} findings. " + "; ".join(parts) + "." + note)
    reasons = (t.loc[t["verdict"] == "not testable at this budget", "decided_by"].fillna("")
               .map(_reason).value_counts())
    if len(reasons):
        out.append("What most often stopped a decision: " + "; ".join(
            f"{why} ({n} claim{'s' if n > 1 else ''})" for why, n in reasons.items()) + ".")
    summary = t["source_from"].fillna("").str.contains("summary", case=False)
    if summary.any():
        out.append(f"{int(summary.sum())} claims quote only a secondary summary of the paper, "
                   "not its own text; their rows say so.")
    return out


REASONS = (  # what a "not testable" verdict's deciding step names, in words
    ("stand-in precision", "the 4-bit stand-in's own rounding moves the statistic more than the "
                           "effect"),
    ("positive control", "the measure misses the property in a system known to have it"),
    ("not measured", "not measured in this profile"),
    ("converge", "training did not converge"),
    ("straddles", "the interval straddles the band's edge"),
    ("wider than the band", "the interval is wider than the band"),
)


def _reason(decided_by: str) -> str:
    low = decided_by.lower()
    return next((words for key, words in REASONS if key in low), "another precondition")


# -- the answer on the intro page --------------------------------------------------------------
CHAPTERS = {  # notebook stem -> (title, paper, what it tests); numbers come from `paper`
    "00_models_and_data": ("0. Models and data", "both", "what runs offline and how well"),
    "01_depth_scaling_law": ("1. The depth exponent α_ℓ", "P1",
                             f"α_ℓ = {paper.P1_ALPHA_L.value} ± {paper.P1_ALPHA_L_PM.value} on "
                             "Chinchilla data"),
    "02_hidden_state_geometry": ("2. Hidden-state geometry", "P1",
                                 "angles between states and updates"),
    "03_token_clusters": ("3. Token clusters", "P1",
                          f"≈ {100 * paper.P1_BULK_FRACTION.value:.1f} % of tokens update evenly"),
    "04_toy_depth_mechanisms": ("4. Toy teacher–student networks", "P1",
                                "independent vs tied teachers"),
    "05_importance_map": ("5. The importance map", "P2", "a critical core and anti-layers"),
    "06_manipulation_strategies": ("6. Manipulation strategies", "P2",
                                   f"only ×{paper.P2_SCALE_ALPHA.value} scaling is benign"),
    "07_weight_predictability": ("7. Weight predictability", "P2",
                                 f"ridge R² {paper.P2_RIDGE_R2.value} and its paradox"),
    "08_delta_oscillation": ("8. The delta correlation", "P2",
                             f"a \"universal oscillatory\" {paper.P2_DELTA_CORRELATION.value:+.2f}".replace("-", "−")),
    "09_recovery_speed": ("9. Recovery speed", "P2", "important layers heal slowly"),
    "10_growth_training": ("10. Growth training", "P2",
                           f"val loss {paper.P2_GROWTH.value['gtt']} vs "
                           f"{paper.P2_GROWTH.value['uniform']} uniform"),
    "11_verdicts": ("11. The verdict", "both", "every claim in one table"),
    "12_your_model": ("12. Your model", "both", "both papers' diagnostics on any causal LM"),
}


def chapter_table(t: pd.DataFrame, prefix: str = "notebooks/") -> str:
    """The chapters with a coloured verdict column: how many of each chapter's claims carry each
    verdict (HTML, in a scroll wrapper for narrow screens)."""
    rows = []
    for stem, (title, paper_id, what) in CHAPTERS.items():
        c = t[t["chapter"] == stem]["verdict"].value_counts()
        badges = " ".join(f"{claims.badge(str(v))}&nbsp;×{int(c[str(v)])}"
                          for v in claims.VERDICTS if int(c.get(str(v), 0)))
        rows.append(f'<tr><td><a href="{prefix}{stem}.html">{html.escape(title)}</a></td>'
                    f"<td>{paper_id}</td><td>{html.escape(what)}</td><td>{badges or '—'}</td></tr>")
    return ('<div class="ll-scroll"><table class="ll-chapters"><thead><tr><th>chapter</th>'
            "<th>paper</th><th>tests</th><th>verdicts</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>")


def render_answer(profile: str = "cpu") -> str:
    """The intro's opening: what the book found, in sentences and a tally, then the chapters."""
    t = register(profile)
    found, _ = unstated(profile)
    n_claims, n_findings = len(t), len(verdicts.findings(t))
    lines = [
        f"We tested {n_claims} claims of the two papers — {n_findings} findings, counting claims "
        f"read from one experiment once — on the `{profile}` profile (a 4-bit SmolLM2 stand-in, "
        "small models trained here, offline text). Each claim's band was derived from the "
        "paper's words by the rules of [How the verdicts are decided](decisions.md); the bands "
        "fixed after their data had been seen are named, with the reason, on "
        "[the deviations page](deviations.md). The headline counts findings; a finding whose "
        "claims disagree is *in part* when any of them holds, *not replicated* when none holds "
        "and one fails.",
        *answer_sentences(t, stand_in_distance(_numbers(profile))),
    ]
    if found:
        lines.append(f"The controls turned up {len(found)} things the papers do not say: "
                     + "; ".join(f.title[0].lower() + f.title[1:] for f in found) + ".")
    body = "\n".join(f"- {x}" for x in lines)
    return (f"{HEADER_NOTE}\n\n{tally_html(t)}\n\n{body}\n\n"
            "Read next: [What we found](notebooks/13_what_we_found.ipynb) (each finding with its "
            "evidence) or [the verdict](notebooks/11_verdicts.ipynb) (every claim, both papers' "
            "numbers beside ours).\n\n"
            f"### The chapters\n\n{chapter_table(t)}\n")


HEADER_NOTE = ("<!-- Generated by `python -m layerlab.book.findings` from the claims register; a "
               "test checks it. Do not edit. -->")


def answer_path():
    from layerlab import paths

    return paths.REPO_ROOT / "book" / "_generated" / "answer.md"


def main() -> None:
    path = answer_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_answer(), encoding="utf-8")
    print(f"wrote {path}")


# -- findings the papers do not state ----------------------------------------------------------
def _delta_null(num: dict[str, dict[str, Any]]) -> Finding | None:
    e = num.get("P2-C3-oscillation", {}).get("element-wise", {})
    pos = num.get("P2-C3-oscillation", {}).get("positive controls", {})
    rows = [{"tensor": k, "stack": s, "corr": v[s]} for k, v in e.items()
            for s in ("real", "i.i.d. Gaussian, matched std", "shuffled order")
            if isinstance(v.get(s), (int, float)) and math.isfinite(v[s])]
    if not rows:
        return None
    df = pd.DataFrame(rows)
    real = df[df["stack"] == "real"].set_index("tensor")["corr"]
    iid = df[df["stack"] == "i.i.d. Gaussian, matched std"].set_index("tensor")["corr"]
    matrices = [k for k in real.index if not k.endswith("norm") and k in iid.index]
    gap = float((real[matrices] - iid[matrices]).abs().max()) if matrices else float("inf")
    if not matrices or gap > 0.05:
        return None
    walk = pos.get("random walk")
    drift = pos.get("smooth drift")
    chart = (alt.Chart(df, title="Mean corr(Δ_l, Δ_{l+1}) per tensor: real weights and nulls")
             .mark_point(filled=True, size=70)
             .encode(y=alt.Y("tensor:N", title=None),
                     x=alt.X("corr:Q", title="mean correlation of consecutive deltas",
                             scale=alt.Scale(domain=[-1, 1])),
                     color=alt.Color("stack:N", title=None, legend=alt.Legend(orient="bottom")),
                     tooltip=["tensor", "stack", alt.Tooltip("corr:Q", format=".3f")])
             .properties(width=WIDTH, height=alt.Step(22)))
    return Finding(
        "delta-null", "The −0.50 delta correlation is what any uncorrelated layers give",
        [f"For each of the {len(matrices)} weight matrices, the real stack's mean correlation of "
         f"consecutive deltas lies within {gap:.3f} of a stack of independent Gaussian layers "
         "with the same spread (−1/2 for any layers that are uncorrelated with each other).",
         "The statistic can see structure — " + (
             f"a random walk gives {walk:+.2f} and a smooth drift {drift:+.2f} — "
             if walk is not None and drift is not None else "") +
         "so the '−0.50' says adjacent layers are unrelated, not that they oscillate."],
        ("P2-C3-delta-value", "P2-C3-oscillation"), "08_delta_oscillation",
        "per-type-the-real-weights-the-controls-and-the-predictions",
        "layerlab execute --profile cpu 08", chart)


def _bulk_context(num: dict[str, dict[str, Any]]) -> Finding | None:
    b = num.get("P1-B1-bulk-fraction", {})
    ctx = b.get("by_context", {})
    if not ctx:
        return None
    df = pd.DataFrame([{"T": int(T), "bulk": v["bulk"], "1 − 1/T": v["one_minus_1_over_T"],
                        "position 0 share": v["minority_position0_share"]}
                       for T, v in ctx.items()]).sort_values("T")
    worst = float((df["bulk"] - df["1 − 1/T"]).abs().max())
    pos0 = b.get("minority_position0_share")
    if worst > 0.01 or pos0 is None or pos0 < 0.5:
        return None
    long = df.melt(id_vars="T", value_vars=["bulk", "1 − 1/T"], var_name="series")
    chart = (alt.Chart(long, title="Bulk fraction against context length T")
             .mark_line(point=True)
             .encode(x=alt.X("T:Q", scale=alt.Scale(type="log", base=2),
                             title="context length T (tokens)"),
                     y=alt.Y("value:Q", title="share of tokens", scale=alt.Scale(zero=False)),
                     color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom")),
                     tooltip=["T", "series", alt.Tooltip("value:Q", format=".4f")])
             .properties(width=WIDTH, height=240))
    paper_pct = 100 * paper.P1_BULK_FRACTION.value
    t_min, t_max = int(df["T"].min()), int(df["T"].max())
    # the context length at which 1 − 1/T equals the paper's share, and P1's own documents'
    t_paper = 1 / (1 - paper.P1_BULK_FRACTION.value)
    return Finding(
        "bulk-context",
        f"The ≈{paper_pct:.1f} % bulk follows 1 − 1/T on windows of {t_min}–{t_max} tokens: "
        "the minority is position 0",
        [f"{100 * pos0:.0f} % of the minority tokens sit at the first position of their window, "
         f"and across context lengths {t_min}–{t_max} (the range measured) the bulk fraction "
         f"stays within {100 * worst:.2f} points of 1 − 1/T.",
         f"In that range the fraction tracks the context length: 1 − 1/T equals the paper's "
         f"{paper_pct:.1f} % at T ≈ {t_paper:.0f}; P1's own 1,024-token documents would give "
         f"{100 * (1 - 1 / 1024):.1f} %, so its number is not this effect alone unless its windows "
         "were shorter."],
        ("P1-B1-bulk-fraction",), "03_token_clusters", "is-the-99-6-the-first-position",
        "layerlab execute --profile cpu 03", chart)


def _averaging(num: dict[str, dict[str, Any]]) -> Finding | None:
    core = num.get("P2-C1-core", {})
    rows = []
    for s in ("E0", "E1"):
        u = core.get(s, {})
        if isinstance(u.get("primary"), list) and isinstance(u.get("under removal"), list):
            rows += [{"set": s, "operation": "neighbour average", "deg": u["primary"][0],
                      "lo": u["primary"][1], "hi": u["primary"][2]},
                     {"set": s, "operation": "removal (skip)", "deg": u["under removal"][0],
                      "lo": u["under removal"][1], "hi": u["under removal"][2]}]
    delta = num.get("P2-C3-oscillation", {}).get("element-wise", {})
    iid_like = [v.get("real") for k, v in delta.items() if not k.endswith("norm")]
    if not rows or not iid_like:
        return None
    df = pd.DataFrame(rows)
    ratio = {s: float(g.loc[g["operation"] == "neighbour average", "deg"].iloc[0]
                      / g.loc[g["operation"] == "removal (skip)", "deg"].iloc[0])
             for s, g in df.groupby("set")}
    if min(ratio.values()) <= 1.5:
        return None
    base = alt.Chart(df, title="Third-largest degradation of L8–L11: averaging vs removing")
    bars = base.mark_bar().encode(
        y=alt.Y("operation:N", title=None), x=alt.X("deg:Q", title="perplexity degradation (%)"),
        color=alt.Color("operation:N", legend=None), row=alt.Row("set:N", title=None),
        tooltip=["set", "operation", alt.Tooltip("deg:Q", format=",.0f"),
                 alt.Tooltip("lo:Q", format=",.0f"), alt.Tooltip("hi:Q", format=",.0f")])
    return Finding(
        "averaging-inserts", "Neighbour averaging inserts a new matrix; it does not remove a layer",
        ["Adjacent layers' weights are uncorrelated (their delta correlation is the −1/2 of "
         "independent layers), so the average of two neighbours is a new matrix with about "
         "1/√2 of a real layer's norm, unrelated to the layer it replaces.",
         "Removing the layer instead costs far less: for the core layers the neighbour average "
         "degrades perplexity " + " and ".join(f"{r:.1f}× as much as removal on {s}"
                                               for s, r in sorted(ratio.items())) + "."],
        ("P2-C1-core",), "05_importance_map", "do-the-ablation-methods-agree",
        "layerlab execute --profile cpu 05", bars.properties(width=WIDTH))


def _ridge_mean(num: dict[str, dict[str, Any]]) -> Finding | None:
    p = num.get("P2-C2-paradox", {})
    rows = [{"case": k, "ridge": v["ridge ppl"], "mean": v["mean ppl"]} for k, v in p.items()
            if isinstance(v, dict) and "ridge ppl" in v and "mean ppl" in v]
    if not rows:
        return None
    df = pd.DataFrame(rows)
    df["log10 ratio"] = (df["ridge"] / df["mean"]).map(math.log10)
    worst = float(df["log10 ratio"].abs().max())
    r2 = num.get("P2-C2-ridge-r2", {})
    fwd, mean_base = r2.get("forward_best"), r2.get("baselines", {}).get("mean baseline")
    if worst > 0.1:
        return None
    span = [min(df["ridge"].min(), df["mean"].min()), max(df["ridge"].max(), df["mean"].max())]
    diag = alt.Chart(pd.DataFrame({"x": span, "y": span})).mark_line(
        strokeDash=[4, 4], color="gray").encode(x="x:Q", y="y:Q")
    pts = (alt.Chart(df, title="Perplexity: ridge 'predictions' against the training layers' mean")
           .mark_point(filled=True, size=70)
           .encode(x=alt.X("mean:Q", scale=alt.Scale(type="log"), title="PPL, mean of training layers",
                           axis=alt.Axis(format="~e")),
                   y=alt.Y("ridge:Q", scale=alt.Scale(type="log"), title="PPL, ridge prediction",
                           axis=alt.Axis(format="~e")),
                   tooltip=["case", alt.Tooltip("ridge:Q", format=".3~g"),
                            alt.Tooltip("mean:Q", format=".3~g")]))
    second = ("Held out, ridge predicts a layer no better than that mean (forward-split R² "
              f"{fwd:.3f} against the mean's {mean_base:.3f}): the high in-sample R² is the fit, "
              "not a regularity across depth." if fwd is not None and mean_base is not None
              else "The high in-sample R² is the fit, not a regularity across depth.")
    return Finding(
        "ridge-mean", "Ridge 'predictions' of layer weights are the mean of the training layers",
        [f"In all {len(df)} substitutions the perplexity of the ridge prediction is within a "
         f"factor {10 ** worst:.2f} of substituting the plain mean of the training layers.", second],
        ("P2-C2-paradox", "P2-C2-ridge-r2"), "07_weight_predictability", "the-paradox",
        "layerlab execute --profile cpu 07", (diag + pts).properties(width=WIDTH, height=260))


def _growth(profile: str) -> Finding | None:
    from layerlab import profiles
    from layerlab.anatomy import growth

    p = profiles.get(profile)  # shrunk under LAYERLAB_DRY, as the chapters see it
    runs, tuned = growth.run(p, progress=False), growth.tuned(p, progress=False)
    c = growth.comparison(growth.curves({**runs, **tuned.runs}))
    c = c[c["arm"].isin(["uniform", "gtt", "G_stack", "random schedule"])]
    if c.empty:
        return None
    # pivot, not pivot_table: a column of NaN (one seed: no spread) must stay
    piv = c.pivot(index="regime", columns="arm", values="final val loss")
    sd = c.pivot(index="regime", columns="arm", values="sd").fillna(0.0)
    need = {"uniform", "gtt", "G_stack", "random schedule"}
    if not need <= set(piv.columns) or piv[list(need)].isna().any().any():
        return None
    stack_wins = piv["G_stack"] < piv["uniform"]
    # "does not beat": GTT's loss is not below the random schedule's by more than their spread
    no_edge = piv["gtt"] > piv["random schedule"] - (sd["gtt"] + sd["random schedule"])
    if not (stack_wins.all() and no_edge.all()):
        return None
    chart = (alt.Chart(c, title="Final validation loss by arm and regime")
             .mark_point(filled=True, size=80)
             .encode(y=alt.Y("arm:N", title=None, sort=["uniform", "G_stack", "gtt", "random schedule"]),
                     x=alt.X("final val loss:Q", title="final validation loss (nats/token)",
                             scale=alt.Scale(zero=False)),
                     color=alt.Color("arm:N", legend=None),
                     row=alt.Row("regime:N", title=None),
                     tooltip=["regime", "arm", alt.Tooltip("final val loss:Q", format=".3f"),
                              alt.Tooltip("sd:Q", format=".3f")])
             .properties(width=WIDTH)
             .resolve_scale(x="independent"))
    return Finding(
        "growth-stacking",
        "Plain depth stacking beats uniform training; the anatomy-aware schedule does not beat a "
        "random one",
        ["In every regime (" + ", ".join(piv.index) + ") depth stacking (G_stack) ends below "
         "uniform training: " + "; ".join(f"{r} {piv.loc[r, 'G_stack']:.3f} vs "
                                          f"{piv.loc[r, 'uniform']:.3f}" for r in piv.index) + ".",
         "The paper's anatomy-aware schedule ends no better than the same schedule with its layer "
         "labels shuffled: " + "; ".join(f"{r} {piv.loc[r, 'gtt']:.3f} vs "
                                         f"{piv.loc[r, 'random schedule']:.3f}" for r in piv.index)
         + "."],
        ("P2-C6-loss-ratio",), "10_growth_training", "final-losses-and-what-each-arm-spent",
        "layerlab execute --profile cpu 10", chart)


CANDIDATES: dict[str, Callable[..., Finding | None]] = {
    "delta-null": lambda num, profile: _delta_null(num),
    "bulk-context": lambda num, profile: _bulk_context(num),
    "averaging-inserts": lambda num, profile: _averaging(num),
    "ridge-mean": lambda num, profile: _ridge_mean(num),
    "growth-stacking": lambda num, profile: _growth(profile),
}


def unstated(profile: str = "cpu") -> tuple[list[Finding], list[str]]:
    """The findings whose evidence holds in this profile's records, and the keys of those whose
    test did not pass (shown as such, never silently dropped)."""
    num = _numbers(profile)
    found, missing = [], []
    for key, make in CANDIDATES.items():
        f = make(num, profile)
        (found.append(f) if f is not None else missing.append(key))
    return found, missing


def card(f: Finding) -> str:
    """A finding as HTML: title, two sentences, the claims, the link and the command."""
    ids = ", ".join(f"<code>{html.escape(c)}</code>" for c in f.claims)
    return (f'<div class="ll-finding"><p><strong>{html.escape(f.title)}</strong></p>'
            f"<p>{html.escape(' '.join(f.evidence))}</p>"
            f'<p class="ll-small">Evidence: <a href="{f.link}">chapter {int(f.chapter[:2])}, '
            f"this section</a> · claims {ids} · reproduce: <code>{html.escape(f.command)}</code>"
            "</p></div>")


def show(f: Finding) -> None:
    """Display one finding: its card, then its chart."""
    from IPython.display import HTML, display

    display(HTML(card(f)))
    if f.chart is not None:
        display(f.chart)


def show_all(found: list[Finding]) -> None:
    for f in found:
        show(f)


def unstated_note(found: list[Finding], untested: list[str]) -> str:
    """One sentence: how many findings hold in these records, and which candidates did not."""
    text = f"{len(found)} findings hold in these records."
    if untested:
        text += (" Not shown, because their test did not pass on these records: "
                 + ", ".join(html.escape(k) for k in untested) + ".")
    return f"<p>{text}</p>"


def findings_html(t: pd.DataFrame) -> str:
    """One row per finding: paper, finding, its claims and one coloured verdict."""
    f = verdicts.findings(t)
    rows = "".join(
        f"<tr><td>{r['paper']}</td><td>{html.escape(r['finding'])}</td>"
        f"<td>{claims.badge(r['verdict'])}</td><td class='ll-small'>"
        f"{html.escape(r['claims'])}</td></tr>" for _, r in f.iterrows())
    return ('<div class="ll-scroll"><table class="ll-findings"><thead><tr><th>paper</th>'
            "<th>finding</th><th>verdict</th><th>claims</th></tr></thead><tbody>"
            f"{rows}</tbody></table></div>")


def claims_html(t: pd.DataFrame, prefix: str = "") -> str:
    """Every claim on one line (claim, paper reported, ours in brief, coloured verdict); a click
    opens the band, the control and the deciding step."""
    items = []
    for _, r in t.iterrows():
        items.append(
            f'<details class="ll-claim" id="{html.escape(r["id"])}"><summary>'
            f"{claims.badge(r['verdict'])} <strong>{html.escape(r['id'])}</strong> "
            f"{html.escape(r['statement'])}</summary>"
            f"<p><em>paper reported</em>: {html.escape(str(r['paper_value']))}<br>"
            f"<em>ours</em>: {html.escape(claims.brief(r['ours'], 400))}<br>"
            f"<em>band and control</em>: {html.escape(claims.brief(r['rule'], 600))}<br>"
            f"<em>decided by</em>: {html.escape(str(r['decided_by']))}<br>"
            f'<a href="{prefix}{r["chapter"]}.html">chapter {int(r["chapter"][:2])}</a></p>'
            "</details>")
    return "".join(items)


if __name__ == "__main__":
    main()
