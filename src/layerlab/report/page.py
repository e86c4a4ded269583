"""The report as one self-contained HTML file: the summary table in the book's verdict style,
interactive Altair charts (Vega, Vega-Lite and Vega-Embed embedded, so nothing is fetched),
the tables behind them and the provenance.

Used by `layerlab report` and chapter 12.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from layerlab import provenance
from layerlab.report import rules

VENDOR = Path(__file__).parent / "vendor"
SCRIPTS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
VERDICT_COLOURS = {"reproduced": "#d9f2d9", "partly reproduced": "#fff3cd",
                   "not reproduced": "#f8d7da", "not testable at this budget": "#e2e3e5",
                   "not diagnostic": "#dbe4ff"}
# the report's words for one model (`rules.SIGNATURE`), coloured as the verdicts they restate
VERDICT_COLOURS |= {words: VERDICT_COLOURS[str(v)] for v, words in rules.SIGNATURE.items()}
# where the site serves a report (`reports/<profile>/<model>.html`) the book's decisions page is
# two folders up; each claim's section there is named by its id
BOOK_CLAIM = "../../decisions.html#{anchor}"
STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}
td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top;text-align:left}
th{background:#f4f4f4}.chart{margin:.5em 0 .3em}.note{color:#555;font-size:.9em}
h2{margin-top:2em;border-bottom:1px solid #ddd}code{background:#f4f4f4;padding:0 .2em}"""
MISSING = "—"  # a number that is undefined for this model: null in report.json
MISSING_NOTE = (f"{MISSING} (null in report.json): a number that is undefined for this model, "
                "such as the correlation of a tensor type whose layers are all equal (the untrained "
                "twin's norms start at one) or a lens drop where the cross-entropy never falls; "
                "the charts leave such points out.")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and not math.isfinite(v))


def _fmt(v: Any, spec: str) -> str:
    return MISSING if _missing(v) else format(v, spec)


def _long(per_layer: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for model, convs in per_layer.items():
        for conv, metrics in convs.items():
            for metric, values in metrics.items():
                rows += [{"model": model, "convention": "final-normed h_L" if conv == "hf"
                          else "raw last block", "metric": metric, "layer": i, "value": v}
                         for i, v in enumerate(values)]
    return pd.DataFrame(rows)


def geometry_chart(report: dict[str, Any], metric: str, title: str) -> alt.Chart:
    df = _long(report["p1"]["per_layer"])
    df = df[df["metric"] == metric]
    return alt.Chart(df, title=title).mark_line(point=True).encode(
        x=alt.X("layer:Q", title="l"), y=alt.Y("value:Q", title=metric),
        color=alt.Color("model:N", title=None), strokeDash=alt.StrokeDash("convention:N"),
        tooltip=["model", "convention", "layer", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=480, height=220).interactive()


def lens_chart(report: dict[str, Any]) -> alt.Chart:
    rows = [{"model": m, "blocks": i, "ce": v} for m, s in report["p1"]["lens"].items()
            for i, v in enumerate(s["mean"])]
    return alt.Chart(pd.DataFrame(rows), title="Last-block CE lens").mark_line(point=True).encode(
        x=alt.X("blocks:Q", title="blocks applied before the last one"),
        y=alt.Y("ce:Q", title="mean cross-entropy (nats)"), color=alt.Color("model:N", title=None),
        tooltip=["model", "blocks", alt.Tooltip("ce:Q", format=".3f")],
    ).properties(width=480, height=220)


def importance_chart(report: dict[str, Any]) -> alt.Chart:
    df = pd.DataFrame(report["p2"]["importance"])
    pick = alt.selection_point(fields=["method"], bind="legend")
    base = alt.Chart(df, title="Importance map: perplexity change when a layer is replaced")
    enc = {"x": alt.X("layer:O"), "color": alt.Color("method:N"),
           "opacity": alt.condition(pick, alt.value(1), alt.value(0.15))}
    y = alt.Y("deg:Q", title="Δ perplexity (%)", scale=alt.Scale(type="symlog"))
    points = base.mark_point(filled=True).encode(
        y=y, **enc, tooltip=["method", "layer", "class", alt.Tooltip("deg:Q", format="+.1f"),
                             alt.Tooltip("lo:Q", format="+.1f"), alt.Tooltip("hi:Q", format="+.1f")])
    bars = base.mark_rule().encode(y=alt.Y("lo:Q", scale=alt.Scale(type="symlog")), y2="hi:Q", **enc)
    return (bars + points).add_params(pick).properties(width=720, height=260)


def delta_chart(report: dict[str, Any]) -> alt.Chart:
    rows = [{"type": r["type"], "stack": k, "corr": r[f"delta_{k}"]}
            for r in report["p2"]["weights"] for k in ("real", "shuffled", "iid", "untrained")]
    return alt.Chart(pd.DataFrame(rows), title="Consecutive-delta correlation per tensor type").mark_bar().encode(
        x=alt.X("stack:N", title=None), y=alt.Y("corr:Q", title="mean correlation"),
        color="stack:N", column=alt.Column("type:N", title=None),
        tooltip=["type", "stack", alt.Tooltip("corr:Q", format="+.3f")],
    ).properties(width=60, height=180)


def sweep_chart(report: dict[str, Any]) -> alt.Chart:
    df = pd.DataFrame(report["p2"]["scaling"])
    base = alt.Chart(df, title="×α scaling of the least important layers")
    return (base.mark_rule().encode(x="alpha:Q", y="lo:Q", y2="hi:Q")
            + base.mark_line(point=True).encode(
                x=alt.X("alpha:Q", title="α", scale=alt.Scale(zero=False)),
                y=alt.Y("deg:Q", title="Δ perplexity (%)"),
                tooltip=[alt.Tooltip("alpha:Q"), alt.Tooltip("deg:Q", format="+.2f"),
                         alt.Tooltip("lo:Q", format="+.2f"), alt.Tooltip("hi:Q", format="+.2f")])
            ).properties(width=480, height=220)


def weight_table(report: dict[str, Any]) -> pd.DataFrame:
    """Per tensor type: the delta correlations beside their nulls, and ridge R² at the best
    penalty in-sample and leave-one-out (real layers, and the same layers shuffled)."""
    rows = []
    for r in report["p2"]["weights"]:
        row = {"type": r["type"], "tensor": r["tensor"], "elements": r["elements"]}
        row |= {f"Δ-corr {k}": r[f"delta_{k}"] for k in ("real", "shuffled", "iid", "untrained")}
        for protocol in ("in_sample", "loo"):
            for kind in ("real", "shuffled"):
                vals = [v for k, v in r.items() if k.startswith(f"ridge_{protocol}_{kind}_")
                        and v is not None]
                if vals:
                    row[f"R² {protocol.replace('_', '-')} {kind}"] = max(vals)
        rows.append(row)
    return pd.DataFrame(rows)


def _table(df: pd.DataFrame, verdict_col: str | None = None, link_col: str | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for c in df.columns:
            style = (f' style="background:{VERDICT_COLOURS.get(r[c], "#fff")}"'
                     if c == verdict_col else "")
            v = r[c]
            text = _fmt(v, ".4g") if v is None or isinstance(v, float) else str(v)
            if c == link_col and v:
                href = BOOK_CLAIM.format(anchor=html.escape(str(v).lower()))
                cells.append(f"<td{style}><a href='{href}'>{html.escape(text)}</a></td>")
                continue
            cells.append(f"<td{style}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _stable_names(spec_json: str) -> str:
    """Altair names a layered chart's views from a process-wide counter, so the same report
    rendered in another process (after other charts) would differ: number them by order of
    appearance instead, and a page depends only on its report.json."""
    names: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        return names.setdefault(m.group(0), f"view_{len(names) + 1}")

    return re.sub(r"view_[0-9a-f]+_\d+|view_\d+", rename, spec_json)


def _script_safe(text: str) -> str:
    """Text that cannot close the <script> element holding it (JSON and JS alike read `<\\/`
    as `</` inside strings and regular expressions)."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE)


def render(report: dict[str, Any]) -> str:
    """The whole page as a string."""
    m = report["model"]
    charts = [
        ("theta", geometry_chart(report, "theta", "θ(h_l, h_{l+1}) per block (radians)"),
         "How far each block turns the residual stream, for the model and its untrained twin; "
         "solid: the last state after the final norm (HF's convention), dashed: the last "
         "block's raw output."),
        ("theta_dh", geometry_chart(report, "theta_dh", "θ(Δh_l, Δh_{l+1}) per pair of blocks"),
         "The angle between consecutive updates: π/2 means uncorrelated updates (P1's "
         "ensemble picture); small angles would mean procedural assembly."),
        ("rel_update", geometry_chart(report, "rel_update", "Relative update ‖Δh_l‖ / ‖h_l‖"),
         "The size of each block's update relative to the state it updates."),
        ("lens", lens_chart(report),
         "Cross-entropy when the last block reads the state after l blocks: a gradual fall "
         "means tokens keep improving through the middle layers."),
        ("importance", importance_chart(report),
         "Each layer replaced by the average of its neighbours or removed; bars are 95 % "
         "bootstrap intervals over sentences (click the legend to highlight a method)."),
        ("deltas", delta_chart(report),
         "Mean correlation of consecutive weight deltas per tensor type beside three nulls: "
         "the layers shuffled, i.i.d. layers with each layer's mean and std, and the untrained "
         "twin. Independent layers give −0.5 by construction."),
        ("sweep", sweep_chart(report),
         "All matrices of the least important layers scaled by α; bars are 95 % intervals."),
    ]
    # Altair's default theme, whatever is enabled globally: importing the book's plots enables
    # its theme process-wide, and a page must not depend on what was imported before it
    with alt.theme.enable("default"):
        specs = {name: chart.to_dict() for name, chart, _ in charts}
    summary = pd.DataFrame(report["summary"]).reindex(
        columns=["finding", "paper", "this model", "control", "verdict", "decided by",
                 rules.VS_BOOK, "book claim"]).fillna(MISSING)  # a summary older than a column
    imp = pd.DataFrame(report["p2"]["importance"])
    classes = imp.pivot(index="layer", columns="method", values="class").reset_index()
    weights = weight_table(report)
    prov = report["provenance"]
    parts = [
        f"<h1>layerlab report: {html.escape(m['name'])}</h1>",
        f"<p>{m['arch']} · {m['layers']} blocks · d = {m['d_model']} · {m['params']:,} parameters "
        f"· {m['dtype']} · source {html.escape(str(m['source']))}</p>",
        f"<p>Text: {html.escape(report['text']['source'])} "
        f"({report['text']['evaluation']['predicted_tokens']} predicted tokens for P2, "
        f"{report['text']['windows'][0]} windows of {report['text']['windows'][1]} tokens for P1). "
        f"Base perplexity {_fmt(report['p2']['base_ppl'], '.2f')}.</p>",
        "<h2>This model against the papers' findings</h2>",
        "<p class='note'>Each row asks one of the book's claims of this model alone, with the "
        "claim's own band (linked: the book's page on how the verdicts are decided) and a "
        "control. “signature present”: this model shows the paper's finding and its control "
        "does not; “not diagnostic”: the control — the book chapter's: the untrained twin (same "
        "configuration, fresh initialisation), a structure-free null, the layers shuffled, or "
        "an edit of the same size — shows it too, so the signature does not tell this model "
        "from its control. One model neither reproduces nor refutes a paper. “vs the book”: where "
        "the row's rule is the book chapter's own and where it is not, that is, why its answer "
        "can differ from the book's verdict on the same model.</p>",
        _table(summary, "verdict", "book claim"),
        "<h2>P1: how the hidden state moves through the blocks</h2>",
    ]
    for name, _chart, sentence in charts:
        if name == "importance":
            parts.append("<h2>P2: anatomy of the stack</h2>")
        parts.append(f"<div class='chart' id='chart-{name}'></div><p>{html.escape(sentence)}</p>")
    parts += ["<h3>Classes by the book's rules</h3>", _table(classes),
              "<h3>Weight statistics per tensor type</h3>", _table(weights),
              "<h2>Provenance</h2>",
              _table(pd.DataFrame([{"key": k, "value": provenance.shown(v)} for k, v in prov.items()])),
              "<p class='note'>Every number is in report.json beside this page. "
              f"{html.escape(MISSING_NOTE)} Charts: Vega/Vega-Lite/Vega-Embed (BSD-3-Clause), "
              "embedded.</p>"]
    scripts = "".join(f"<script>{_script_safe((VENDOR / s).read_text(encoding='utf-8'))}</script>"
                      for s in SCRIPTS)
    embed = _script_safe(_stable_names(json.dumps(specs)))
    boot = (f"<script>const SPECS = {embed};for (const [k, s] of Object.entries(SPECS))"
            "{vegaEmbed('#chart-' + k, s, {actions: false, renderer: 'svg'})"
            ".catch(e => {document.getElementById('chart-' + k).textContent = 'chart error: ' + e;});}"
            "</script>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>layerlab report: {html.escape(m['name'])}</title><style>{STYLE}</style>"
            f"{scripts}</head><body>{''.join(parts)}{boot}</body></html>")
