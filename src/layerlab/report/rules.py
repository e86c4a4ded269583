"""The report's summary: each paper finding judged on one model by a stated rule, in the book's
verdict vocabulary ("reproduced" = this model shows the paper's finding). Intervals decide, not
points; a signature the untrained twin shows too is "not diagnostic". Each function takes small
plain data, so each is tested with a synthetic input that passes and one that fails.

Used by `layerlab report` and chapter 12.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from layerlab import claims, paper
from layerlab.anatomy import importance
from layerlab.depth import clusters, geometry, lens

BENIGN = 10.0  # % degradation: "keeps quality" (the book's chapter 06 threshold for "benign")
DELTA_TARGET, DELTA_MARGIN = paper.P2_DELTA_CORRELATION.value, 0.05
NULL_CLOSE = 0.05  # a delta correlation within this of a structure-free null is what nulls give
NULLS = ("delta_shuffled", "delta_iid", "delta_untrained")
PREDICTABLE = 0.5  # leave-one-out R² above this: layers are predictable from their neighbour


def row(pid: str, finding: str, paper_value: str, this_model: str, rule: str,
        verdict: str) -> dict[str, str]:
    if verdict not in claims.VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}")
    return {"id": pid, "finding": finding, "paper": paper_value, "this model": this_model,
            "rule": rule, "verdict": verdict}


def _stat(control: pd.DataFrame, name: str) -> Any:
    return control[control["statistic"] == name].iloc[0]


def edges(control: pd.DataFrame, n_layers: int) -> dict[str, str]:
    """P1: only the first and last blocks rotate strongly (the book's P1-A1 rule)."""
    r = _stat(control, "edge_ratio")
    verdict = (claims.NOT_TESTABLE if n_layers < 8 else claims.against_control(
        geometry.edge_rule(r["trained_lo"]), geometry.edge_rule(r["untrained_lo"]),
        r["diff_lo"], r["diff_hi"]))
    return row("P1-edges", "Only the first and last blocks rotate the hidden state strongly",
               "qualitative (Fig. 2a–b)",
               f"min(first, last)/middle θ = {r['trained']:.2f} [{r['trained_lo']:.2f}, "
               f"{r['trained_hi']:.2f}]; untrained {r['untrained']:.2f}",
               f"95 % interval above {geometry.EDGE_RATIO} (≥ 8 blocks); not diagnostic where the "
               "untrained twin passes or trained − untrained contains 0", verdict)


def weak_correlation(control: pd.DataFrame) -> dict[str, str]:
    """P1: consecutive updates weakly correlated — middle θ(Δh_l, Δh_{l+1}) large."""
    r = _stat(control, "middle_theta_dh")
    if not math.isfinite(r["trained_lo"]):
        verdict = claims.NOT_TESTABLE
    else:
        rule = lambda lo: claims.REPRODUCED if lo >= geometry.LARGE_ANGLE else claims.NOT_REPRODUCED  # noqa: E731
        verdict = claims.against_control(rule(r["trained_lo"]), rule(r["untrained_lo"]),
                                         r["diff_lo"], r["diff_hi"])
    return row("P1-weak-update-correlation",
               "Consecutive updates are only weakly correlated (θ(Δh_l, Δh_{l+1}) large)",
               "large, near π/2",
               f"middle θ(Δh) = {r['trained']:.2f} rad [{r['trained_lo']:.2f}, "
               f"{r['trained_hi']:.2f}]; untrained {r['untrained']:.2f}",
               f"95 % interval ≥ {geometry.LARGE_ANGLE} rad; not diagnostic where the untrained "
               "twin passes or the difference contains 0", verdict)


def _share(x: float) -> str:
    """A share of the CE drop; undefined (NaN) where the lens's CE does not fall at all, as in
    an untrained twin."""
    return "no drop" if not math.isfinite(x) else f"{x:.2f}"


def no_early_stopping(trained: dict[str, Any], untrained: dict[str, Any]) -> dict[str, str]:
    """P1: the last-block CE lens falls gradually; few tokens are done by mid-depth."""
    t = lens.lens_rule(trained["early_share"], trained["drop_by_middle"])
    u = lens.lens_rule(untrained["early_share"], untrained["drop_by_middle"])
    verdict = claims.NOT_DIAGNOSTIC if u in (claims.REPRODUCED, claims.PARTLY) and t == u else t
    return row("P1-no-early-stopping",
               "Almost no token stops early: the last-block CE lens improves gradually",
               "gradual CE decrease (§2.5)",
               f"{100 * trained['early_share']:.1f} % early, {_share(trained['drop_by_middle'])} of "
               f"the CE drop by mid-depth (untrained {100 * untrained['early_share']:.1f} % early, "
               f"{_share(untrained['drop_by_middle'])})",
               f"≤ {100 * lens.EARLY_MAX:.0f} % within {lens.MARGIN} nats of the final CE at mid-depth "
               f"and {lens.GRADUAL[0]}–{lens.GRADUAL[1]} of the drop done by then (one → partly); "
               "not diagnostic where the twin gives the same", verdict)


def bulk_fraction(trained: dict[str, Any], untrained: dict[str, Any]) -> dict[str, str]:
    """P1: one bulk cluster holds ≈ 99.6 % of the token profiles; the position-0 control says
    whether the minority is anything but the first position."""
    if "all" not in trained:
        return row("P1-bulk-fraction", "One bulk cluster holds ≈99.6 % of tokens", "99.6 %",
                   "fewer than 4 blocks", "needs ≥ 4 blocks", claims.NOT_TESTABLE)

    def verdict_of(b: dict[str, Any]) -> str:
        f, n = b["bulk_fraction"], b["tokens"]
        return clusters.number_rule(f, math.sqrt(f * (1 - f) / n))

    t, u = verdict_of(trained["all"]), verdict_of(untrained["all"])
    verdict = claims.NOT_DIAGNOSTIC if u in (claims.REPRODUCED, claims.PARTLY) else t
    a, w0 = trained["all"], trained.get("without_position0", {})
    return row("P1-bulk-fraction", "One bulk cluster holds ≈99.6 % of the token profiles",
               f"{100 * paper.P1_BULK_FRACTION.value:.1f} %",
               f"{100 * a['bulk_fraction']:.2f} % of {a['tokens']} tokens "
               f"({100 * a['share_at_position_0']:.0f} % of the minority at position 0; without "
               f"position 0: {100 * w0.get('bulk_fraction', float('nan')):.2f} %); untrained "
               f"{100 * untrained['all']['bulk_fraction']:.2f} %",
               f"the fraction's 95 % interval within {100 * clusters.PAPER_BULK:.1f} ± "
               f"{100 * clusters.TOLERANCE:.1f} % (progress features, 2-means); not diagnostic where "
               "the untrained twin passes too", verdict)


def critical_core(table: pd.DataFrame, n_layers: int) -> dict[str, str]:
    """P2: a critical core in the middle of the stack — layers whose replacement costs ≥ 100 %
    by the lower end of the interval, under neighbour averaging and under removal."""
    lo_mid, hi_mid = n_layers / 4, 3 * n_layers / 4
    cores = {}
    for method in ("neighbour_average", "skip"):
        g = table[(table["method"] == method) & (table["layer"] >= lo_mid)
                  & (table["layer"] < hi_mid)]
        cores[method] = sorted(int(l) for l in g[g["lo"] >= importance.CORE_MIN]["layer"])
    both = sorted(set(cores["neighbour_average"]) & set(cores["skip"]))
    verdict = (claims.REPRODUCED if both else claims.PARTLY
               if cores["neighbour_average"] or cores["skip"] else claims.NOT_REPRODUCED)
    return row("P2-critical-core", "A critical core of middle layers (SmolLM2: L8–11)",
               "L8–11, ≥ 100 %",
               f"averaging: {cores['neighbour_average'] or 'none'}; removal: "
               f"{cores['skip'] or 'none'} (middle half L{math.ceil(lo_mid)}–L{math.ceil(hi_mid) - 1})",
               f"layers in the middle half whose degradation interval lies ≥ {importance.CORE_MIN:.0f} %: "
               "under both operations → reproduced; one only → partly", verdict)


def anti_layers(table: pd.DataFrame, n_layers: int) -> dict[str, str]:
    """P2: anti-layers exist — layers whose replacement by the neighbours' average helps."""
    na = importance.inner(table[table["method"] == "neighbour_average"], n_layers)
    anti = sorted(int(l) for l in na[na["hi"] < 0]["layer"])
    return row("P2-anti-layers", "Anti-layers: replacing them lowers perplexity (SmolLM2: L14, L17)",
               "L14, L17 below 0 %", f"{anti or 'none'}",
               "an inner layer whose neighbour-average interval lies below 0 %",
               claims.REPRODUCED if anti else claims.NOT_REPRODUCED)


def _skipped_note(short: list[dict[str, Any]], need: int) -> str:
    """What a verdict over the groups of a stack whose blocks differ left out (empty if none)."""
    if not short:
        return ""
    return (f" ({len(short)} matrix group{'s' if len(short) != 1 else ''} of fewer than {need} "
            f"blocks left out: {', '.join(r['type'] for r in short)})")


def delta_correlation(weights: list[dict[str, Any]]) -> dict[str, str]:
    """P2: consecutive weight deltas correlate at −0.50 — against the i.i.d. null, which gives
    −0.5 by construction for layers with no cross-layer structure."""
    mats = [r for r in weights if not r["is_norm"]]
    if not mats:
        return row("P2-delta-correlation", "Consecutive weight deltas correlate at −0.50", "−0.50",
                   "no matrices", "needs weight matrices", claims.NOT_TESTABLE)
    # groups of too few blocks (a stack whose blocks differ) carry no delta correlation
    short = [r for r in mats if "delta" in r.get("skipped", {})]
    mats = [r for r in mats if "delta" not in r.get("skipped", {})]
    if not mats:
        return row("P2-delta-correlation", "Consecutive weight deltas correlate at −0.50", "−0.50",
                   "fewer than 3 layers", "needs ≥ 3 layers", claims.NOT_TESTABLE)
    real = np.array([r["delta_real"] for r in mats])
    iid = np.array([r["delta_iid"] for r in mats])
    if not (np.isfinite(real).all() and np.isfinite(iid).all()):
        return row("P2-delta-correlation", "Consecutive weight deltas correlate at −0.50", "−0.50",
                   "fewer than 3 layers", "needs ≥ 3 layers", claims.NOT_TESTABLE)
    # the distance to the nearest structure-free null (shuffled layers, i.i.d. layers, the
    # untrained twin): each is one draw, so a trained value within noise of any one of them is
    # not told apart from "no cross-layer structure"
    nulls = np.array([[r[k] for k in NULLS if k in r and np.isfinite(r[k])] or [np.nan]
                      for r in mats], dtype=object)
    gap = np.array([np.min(np.abs(np.asarray(n, dtype=float) - x)) for n, x in zip(nulls, real)])
    near = bool(np.all(np.abs(real - DELTA_TARGET) <= DELTA_MARGIN))
    at_null = bool(np.all(gap <= NULL_CLOSE))
    verdict = (claims.NOT_DIAGNOSTIC if near and at_null
               else claims.REPRODUCED if near else claims.NOT_REPRODUCED)
    return row("P2-delta-correlation", "Consecutive weight deltas correlate at −0.50 (oscillation)",
               f"{DELTA_TARGET:+.2f}",
               f"matrices {real.min():+.3f} … {real.max():+.3f}; i.i.d. null {iid.min():+.3f} … "
               f"{iid.max():+.3f}" + _skipped_note(short, 3),
               f"every matrix type within {DELTA_TARGET} ± {DELTA_MARGIN}; not diagnostic where each "
               f"is within {NULL_CLOSE} of a structure-free null (shuffled layers, i.i.d. layers or "
               "the untrained twin; independent layers give −0.5)", verdict)


def ridge(weights: list[dict[str, Any]], alphas: tuple[float, ...]) -> dict[str, str]:
    """P2: a layer's weights are predictable from the previous layer's (paper: high R²) — in-sample
    against leave-one-out, at the penalty best for each."""
    mats = [r for r in weights if not r["is_norm"] and any(k.startswith("ridge_") for k in r)]
    short = [r for r in weights if not r["is_norm"] and "ridge" in r.get("skipped", {})]
    if not mats:
        return row("P2-ridge", "Weights predictable from the previous layer (ridge R²)",
                   f"R² {paper.P2_RIDGE_R2.value}",
                   "fewer than 4 layers", "needs ≥ 4 layers", claims.NOT_TESTABLE)
    best = lambda r, p: max(r[f"ridge_{p}_real_{a:g}"] for a in alphas)  # noqa: E731
    ins = float(np.mean([best(r, "in_sample") for r in mats]))
    loo = float(np.mean([best(r, "loo") for r in mats]))
    verdict = claims.REPRODUCED if loo >= PREDICTABLE else claims.NOT_REPRODUCED
    return row("P2-ridge", "A layer's weights are predictable from the previous layer's",
               f"R² {paper.P2_RIDGE_R2.value}",
               f"mean over matrix types: in-sample R² {ins:.3f}, leave-one-out {loo:.3f}"
               + _skipped_note(short, 4),
               f"leave-one-out R² (best penalty) ≥ {PREDICTABLE}; in-sample R² alone measures fit, "
               "not prediction", verdict)


def scaling(sweep: pd.DataFrame, layers: list[int]) -> dict[str, str]:
    """P2: ×0.9 keeps quality — the degradation interval at α = 0.9 on the least important layers
    below `BENIGN` % (above it → not reproduced; across it → not testable at this budget)."""
    r = sweep[np.isclose(sweep["alpha"].astype(float), paper.P2_SCALE_ALPHA.value)]
    if r.empty:
        return row("P2-scale-0.9", "Scaling weights by 0.9 keeps quality", "benign",
                   "α = 0.9 not in the sweep", "needs α = 0.9", claims.NOT_TESTABLE)
    r = r.iloc[0]
    verdict = claims.interval_rule(r["lo"], r["hi"], -math.inf, BENIGN)
    return row("P2-scale-0.9", "Scaling the weights by ×0.9 keeps quality",
               "benign (the only benign edit)",
               f"×0.9 on L{', L'.join(map(str, layers))}: {r['deg']:+.1f} % [{r['lo']:+.1f}, "
               f"{r['hi']:+.1f}]",
               f"the degradation interval below +{BENIGN:.0f} % (above → not reproduced)", verdict)
