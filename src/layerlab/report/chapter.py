"""Chapter 12 ("Your model"): the profile's reports side by side. Each report is
`layerlab report` on one model, stored in `results/<profile>/reports/<model>/` (report.json and
report.html are committed; the step cache beside them is not)."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from layerlab import paths, results
from layerlab.profiles import Profile
from layerlab.report import rules

FAMILY = "family:"


def label(entry: str) -> str:
    """The name a report goes by: a family member's depth and seed, or the model name."""
    if entry.startswith(FAMILY):
        depth, seed = entry[len(FAMILY):].split(":")
        return f"family-d{depth}-s{seed}"
    return entry


def folder(profile: Profile, entry: str) -> Path:
    return paths.results_dir() / profile.name / "reports" / results.slug(label(entry))


def model_argument(profile: Profile, entry: str) -> str:
    """What `build` loads: the entry itself, or a family member saved with save_pretrained."""
    if not entry.startswith(FAMILY):
        return entry
    from layerlab.depth import family

    depth, seed = (int(x) for x in entry[len(FAMILY):].split(":"))
    cfg = family.config_for(profile)
    target = paths.cache_dir() / "report-models" / results.config_hash(cfg.key()) / label(entry)
    if not (target / "config.json").is_file():
        lm = family.load_member(depth, cfg, seed)  # trains it first if it is not in the cache
        tmp = target.with_name(target.name + ".tmp")
        lm.model.save_pretrained(tmp)
        lm.tokenizer.save_pretrained(tmp)
        tmp.rename(target)
    return str(target)


def _current(report: dict[str, Any], profile: Profile, entry: str) -> bool:
    return (report.get("settings") == json.loads(results.dumps(profile.reports.report.key()))
            and report["model"]["name"] == label(entry))


def collect(profile: Profile, *, progress: bool = True) -> dict[str, dict[str, Any]]:
    """Every report of the profile: read from report.json when it matches the settings,
    otherwise built (refused with LAYERLAB_CACHE_ONLY=1, as every chapter's cache is)."""
    from layerlab.report import build

    out = {}
    for entry in profile.reports.models:
        path = folder(profile, entry) / "report.json"
        report = json.loads(path.read_text()) if path.is_file() else None
        if report is not None and _current(report, profile, entry) and "untrained" in report["p2"]:
            report = _resummarised(report, path)
        if report is None or not _current(report, profile, entry) or "untrained" not in report["p2"]:
            if os.environ.get("LAYERLAB_CACHE_ONLY") == "1":
                raise LookupError(f"{path} is missing or stale and LAYERLAB_CACHE_ONLY=1")
            report = build(model_argument(profile, entry), folder(profile, entry),
                           settings=profile.reports.report, progress=progress,
                           label=label(entry))
        out[label(entry)] = report
    return out


def _resummarised(report: dict[str, Any], path: Path) -> dict[str, Any]:
    """A stored report whose verdicts today's rules would word differently gets its summary (and
    page) rewritten from its own numbers -- no model needed; with LAYERLAB_CACHE_ONLY=1 that is
    refused like any stale result."""
    from layerlab.report import page
    from layerlab.report.build import strict_dumps, summarise

    fresh = summarise(report)
    if fresh == report["summary"]:
        return report
    if os.environ.get("LAYERLAB_CACHE_ONLY") == "1":
        raise LookupError(f"{path}: its summary is stale under today's rules and "
                          "LAYERLAB_CACHE_ONLY=1 (rerun chapter 12)")
    report = {**report, "summary": fresh}
    results.atomic_write_text(path.with_name("report.html"), page.render(report))
    results.atomic_write_text(path, strict_dumps(report))
    return report


def _num(v: Any) -> float:
    """A number from report.json, NaN where it holds null (undefined for that model)."""
    return np.nan if v is None else v


def _row(name: str, r: dict[str, Any]) -> dict[str, Any]:
    iv = pd.DataFrame(r["p1"]["intervals"])
    trained = lambda s: iv[iv["statistic"] == s].iloc[0]  # noqa: E731
    imp = pd.DataFrame(r["p2"]["importance"])
    na = imp[imp["method"] == "neighbour_average"]
    inner = na[(na["layer"] >= 1) & (na["layer"] <= r["model"]["layers"] - 2)]
    peak = inner.loc[inner["deg"].idxmax()] if len(inner) else None
    mats = [w for w in r["p2"]["weights"] if not w["is_norm"]]
    bulk = r["p1"]["bulk"]["trained"].get("all", {})
    sweep = pd.DataFrame(r["p2"]["scaling"])
    x09 = sweep[np.isclose(sweep["alpha"], 0.9)]
    loo = [max(_num(v) for k, v in w.items() if k.startswith("ridge_loo_real_")) for w in mats
           if any(k.startswith("ridge_loo_real_") for k in w)]
    return {
        "model": name, "blocks": r["model"]["layers"], "parameters": r["model"]["params"],
        "base PPL": _num(r["p2"]["base_ppl"]),
        "middle θ (rad)": _num(trained("middle_theta")["trained"]),
        "middle θ untrained": _num(trained("middle_theta")["untrained"]),
        "middle θ(Δh) (rad)": _num(trained("middle_theta_dh")["trained"]),
        "edge ratio": _num(trained("edge_ratio")["trained"]),
        "bulk fraction": _num(bulk.get("bulk_fraction", np.nan)),
        "CE drop by mid-depth": _num(r["p1"]["lens"]["trained"]["drop_by_middle"]),
        "peak layer": int(peak["layer"]) if peak is not None else None,
        "peak Δ PPL (%)": float(_num(peak["deg"])) if peak is not None else np.nan,
        "anti-layers": int((inner["hi"] < 0).sum()),
        "Δ-corr (matrices)": float(np.mean([_num(w["delta_real"]) for w in mats])) if mats else np.nan,
        "Δ-corr i.i.d. null": float(np.mean([_num(w["delta_iid"]) for w in mats])) if mats else np.nan,
        "ridge R² LOO": float(np.mean(loo)) if loo else np.nan,
        "×0.9 Δ PPL (%)": float(x09["deg"].iloc[0]) if len(x09) else np.nan,
    }


def headline(reports: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The headline diagnostics of every report, one row per model, rounded for reading
    (report.json keeps every digit)."""
    table = pd.DataFrame([_row(n, r) for n, r in reports.items()]).set_index("model")
    table["peak Δ PPL (%)"] = table["peak Δ PPL (%)"].round().astype("Int64")  # spans 10^1–10^6
    digits = {c: 3 for c in table.columns} | {"base PPL": 2, "bulk fraction": 4, "×0.9 Δ PPL (%)": 1}
    return table.round(digits)


def verdicts(reports: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Finding × model: each report's verdict on each of the papers' findings."""
    rows = {}
    for name, r in reports.items():
        for s in r["summary"]:
            rows.setdefault((s["id"], s["finding"]), {})[name] = s["verdict"]
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index = pd.MultiIndex.from_tuples(df.index, names=["id", "finding"])
    return df


def against_book(reports: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Per finding: why the report's answer can differ from the book's verdict on the same model
    (each row's "vs the book"), once per distinct sentence, with the models it applies to."""
    rows: dict[tuple[str, str], list[str]] = {}
    for name, r in reports.items():
        for s in r["summary"]:
            rows.setdefault((s["id"], s.get(rules.VS_BOOK, "")), []).append(name)
    df = pd.DataFrame([{"id": cid, rules.VS_BOOK: why, "models": ", ".join(models)}
                       for (cid, why), models in rows.items()])
    return df.set_index("id")


def depth_profile(reports: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """θ(h_l, h_{l+1}) (final-normed convention) and the neighbour-average degradation per
    block, against relative depth l / L, for every model and its untrained twin."""
    rows = []
    for name, r in reports.items():
        L = r["model"]["layers"]
        for kind, conv in r["p1"]["per_layer"].items():
            for l, v in enumerate(conv["hf"]["theta"]):
                rows.append({"model": name, "weights": kind, "depth": (l + 0.5) / L,
                             "layer": l, "statistic": "θ(h_l, h_l+1) (rad)", "value": v})
        for x in r["p2"]["importance"]:
            if x["method"] == "neighbour_average":
                rows.append({"model": name, "weights": "trained", "depth": (x["layer"] + 0.5) / L,
                             "layer": x["layer"], "statistic": "Δ PPL, neighbour average (%)",
                             "value": x["deg"]})
    return pd.DataFrame(rows)


def _depth_chart(reports: dict[str, dict[str, Any]], statistic: str, title: str, y: alt.Y,
                 tooltip: list, **encodings: Any) -> alt.Chart:
    """One line per model of the depth profiles whose statistic starts with `statistic`,
    against relative depth; a click on a model in the legend highlights it."""
    df = depth_profile(reports)
    df = df[df["statistic"].str.startswith(statistic)]
    pick = alt.selection_point(fields=["model"], bind="legend")
    return alt.Chart(df, title=title).mark_line(point=True).encode(
        x=alt.X("depth:Q", title="relative depth (l + ½) / L"), y=y, color=alt.Color("model:N"),
        **encodings, opacity=alt.condition(pick, alt.value(1), alt.value(0.15)), tooltip=tooltip,
    ).add_params(pick).properties(width=560, height=260)


def theta_chart(reports: dict[str, dict[str, Any]]) -> alt.Chart:
    return _depth_chart(
        reports, "θ", "θ(h_l, h_{l+1}) against relative depth", alt.Y("value:Q", title="θ (rad)"),
        ["model", "weights", "layer", alt.Tooltip("value:Q", format=".3f")],
        strokeDash=alt.StrokeDash("weights:N", title="weights"))


def importance_chart(reports: dict[str, dict[str, Any]]) -> alt.Chart:
    return _depth_chart(
        reports, "Δ", "Importance map against relative depth",
        alt.Y("value:Q", title="Δ perplexity (%)", scale=alt.Scale(type="symlog")),
        ["model", "layer", alt.Tooltip("value:Q", format="+.1f")])


def links(profile: Profile, reports: dict[str, dict[str, Any]]) -> str:
    """HTML links to the full pages, as the site serves them (`reports/<profile>/<model>.html`;
    book/_ext/report_pages.py copies them into the build)."""
    items = "".join(
        f"<li><a href='../reports/{profile.name}/{results.slug(n)}.html'>{html.escape(n)}</a> "
        f"({r['model']['layers']} blocks, {r['model']['params']:,} parameters)</li>"
        for n, r in reports.items())
    return f"<ul>{items}</ul>"


def provenance_table(reports: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per report: the commit, date, device and library versions it was computed with."""
    fields = ("git_commit", "date_utc", "device", "torch", "transformers")
    return pd.DataFrame([{"model": n, **{f: r["provenance"].get(f) for f in fields}}
                         for n, r in reports.items()]).set_index("model")


def reading(table: pd.DataFrame) -> str:
    """One sentence per model from the verdict table: how many of the papers' findings it shows,
    which ones, and how many the untrained twin or a null shows too."""
    from layerlab import claims

    out = []
    for model in table.columns:
        col = table[model]
        shown = [i for i, v in col.items() if v == rules.SIGNATURE[claims.REPRODUCED]]
        nd = int((col == rules.SIGNATURE[claims.NOT_DIAGNOSTIC]).sum())
        nt = int((col == rules.SIGNATURE[claims.NOT_TESTABLE]).sum())
        out.append(f"{model}: shows {len(shown)} of {len(col)} findings"
                   + (f" ({', '.join(i[0] for i in shown)})" if shown else "")
                   + f"; {nd} not diagnostic (the book's control — an untrained twin, a null, "
                     "the layers shuffled, an edit of the same size — shows them too)"
                   + (f"; {nt} not testable at this budget" if nt else "") + ".")
    return "\n".join(out)
