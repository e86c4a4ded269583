"""The report's summary: does *this* model show each of the papers' signatures?

Each row asks a book claim's question of one model, with the book's declaration
(`layerlab.depth.declarations`, `layerlab.anatomy.declarations`) restated for one model: the same
band where the statistic is the same (or its model-agnostic form where the book's names
SmolLM2's layers), one unit (this model), and always a control — the untrained twin (the same
configuration at initialisation, the same text) for presence signatures, the book's positive
control for absence ones. `claims.decide` decides; the row words its verdict as a signature
("signature present / absent"), since one model neither reproduces nor refutes a paper, and
names the book claim it restates. Each function takes small plain data, so each is tested with
a synthetic input that passes, one that fails and one whose control passes too.

Used by `layerlab report` and chapter 12.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from layerlab import claims, paper
from layerlab.anatomy import importance
from layerlab.anatomy.declarations import DECLARATIONS as P2
from layerlab.claims import Declaration, Estimate, Unit, Verdict
from layerlab.depth import geometry, lens
from layerlab.depth.declarations import DECLARATIONS as P1

__all__ = ["SIGNATURE", "DECLARATIONS", "row", "edges", "weak_correlation", "no_early_stopping",
           "bulk_fraction", "critical_core", "anti_layers", "delta_correlation", "ridge",
           "scaling", "core_rank"]

# one model shows a signature or not; the book's verdict words are about papers
SIGNATURE = {
    Verdict.REPRODUCED: "signature present",
    Verdict.PARTLY: "signature partly present",
    Verdict.NOT_REPRODUCED: "signature absent",
    Verdict.NOT_DIAGNOSTIC: "not diagnostic",
    Verdict.NOT_TESTABLE: "not testable at this budget",
}
ONE_MODEL = "this model: one unit (the report runs on one model at a time)"
TWIN = ("negative: the untrained twin (the same configuration at initialisation, the same text) "
        "through the same band; passing too → not diagnostic")


def _for_model(book_id: str, **changes: Any) -> Declaration:
    """The book claim's declaration restated for one model (scope: this model)."""
    book = {**P1, **P2}[book_id]
    return dataclasses.replace(book, scope=ONE_MODEL, **changes)


CORE_SHARE = len(paper.P2_CRITICAL_CORE.value) - 1  # the book's third-largest of four named layers
DECLARATIONS: dict[str, Declaration] = claims.index([
    _for_model("P1-A1-edges-rotate"),
    _for_model("P1-A3-weak-update-correlation"),
    _for_model("P1-A4-no-early-stopping"),
    _for_model(
        "P1-B1-bulk-fraction",
        unit="tokens: a binomial (Wilson) 95 % interval (the report keeps the pooled share, not "
             "window ids, so it is narrower than the book's window-level interval)",
        control=TWIN + " (the book's layer-order shuffle needs the token arrays the report "
                       "does not keep)",
        secondary=tuple(dataclasses.replace(s, statistic=s.statistic.replace(
            ", 95 % interval over windows", " (exact: the report keeps the median only)"))
            for s in P1["P1-B1-bulk-fraction"].secondary)),
    _for_model(
        "P2-C1-core",
        primary="the k-th largest neighbour-average degradation % among the middle half of the "
                "stack (k = 3 of every 30 blocks, at least 1: the book's 'three of L8–11' scaled "
                "to this depth), its bootstrap interval over the evaluation sentences",
        unit="evaluation sentences (bootstrap)",
        precondition="the model has at least 4 blocks (a middle half exists)",
        control=TWIN,
        secondary=tuple(s for s in P2["P2-C1-core"].secondary if s.name == "under removal")),
    _for_model(
        "P2-C1-anti-layers",
        primary="the lowest neighbour-average degradation % among the inner layers (both "
                "neighbours exist), its bootstrap interval over the evaluation sentences: an "
                "anti-layer exists when a whole interval lies below 0 %",
        unit="evaluation sentences (bootstrap)",
        precondition="the model has at least 3 blocks (an inner layer exists)",
        control=TWIN, secondary=()),
    _for_model(
        "P2-C3-oscillation",
        primary="corr(Δ_l, Δ_{l+1}) element-wise, mean over layer pairs, per matrix type: the "
                "mean over types with the range over types as its interval (every type in band)",
        unit="matrix types (each type's value exact; the range spans them)",
        precondition="at least 3 blocks per matrix group (two consecutive deltas)",
        control="negative: i.i.d. Gaussian layers of each layer's mean and std (layers with no "
                "cross-layer structure) through the same band; the shuffled order and the "
                "untrained twin are shown beside"),
    _for_model(
        "P2-C2-ridge-r2",
        kind=claims.Kind.PRESENCE,
        primary="leave-one-out R² of each layer's matrix from the layer below (ridge, the best "
                "penalty of the grid), mean over matrix types with their range as the interval",
        unit="matrix types (each type's value exact; the range spans them)",
        precondition="at least 4 blocks per matrix group",
        control="negative: the same layers in shuffled order through the same band (what any "
                "stack of matrices of this shape predicts without depth order)"),
    _for_model(
        "P2-C4-only-scaling",
        primary="×0.9's degradation % with the report's least important inner layers scaled "
                "at once, its bootstrap interval over the evaluation sentences",
        unit="evaluation sentences (bootstrap)",
        precondition="α = 0.9 is in the sweep",
        control=TWIN + " (the same layers scaled in the twin)", secondary=()),
])


def row(claim_id: str, this_model: str, control: str, decision: claims.Decision) -> dict[str, str]:
    """One summary row: the finding (the book claim's statement), the paper's value, this
    model's measurement and its control's, the band, and the verdict worded as a signature."""
    decl = DECLARATIONS[claim_id]
    return {"id": claim_id, "finding": decl.statement, "paper": decl.paper_value,
            "this model": this_model, "control": control, "rule": claims.rule_text(decl),
            "verdict": SIGNATURE[Verdict(decision.verdict)], "decided by": decision.decided_by,
            "book claim": claim_id}


def _decide(claim_id: str, unit: Unit) -> claims.Decision:
    return claims.decide(DECLARATIONS[claim_id], [dataclasses.replace(unit, name="this model")])


def _iv(e: Estimate | None, fmt: str = ".2f") -> str:
    if e is None:
        return "not measured"
    if e.lo == e.hi:
        return f"{e.point:{fmt}}"
    return f"{e.point:{fmt}} [{e.lo:{fmt}}, {e.hi:{fmt}}]"


def _stat(control: pd.DataFrame, name: str) -> Any:
    return control[control["statistic"] == name].iloc[0]


def edges(control: pd.DataFrame, n_layers: int) -> dict[str, str]:
    """P1-A1 on this model (`geometry.edge_units`: the edge ratio's interval above the untrained
    twin's 95 % range and above 1; ≥ 8 blocks)."""
    cid = "P1-A1-edges-rotate"
    unit = geometry.edge_units(control)[0]
    if n_layers < geometry.EDGE_MIN_LAYERS:
        unit = Unit(name="this model", primary=None,
                    precondition=f"{n_layers} blocks: 'the middle' needs at least "
                                 f"{geometry.EDGE_MIN_LAYERS}")

    def both(label: str) -> str:
        """P1's convention (after the final norm; a report made before it was measured has
        none), then the block-only reading shown beside."""
        out = []
        for stat, words in ((geometry.EDGE_PAPER, "after the final norm"),
                            (geometry.EDGE_BLOCK, "block-only")):
            rows = control[control["statistic"] == stat]
            e = (Estimate(*(float(rows.iloc[0][f"{label}{s}"]) for s in ("", "_lo", "_hi")))
                 if len(rows) else None)
            out.append(f"{_iv(e)} {words}")
        return "; ".join(out)

    return row(cid, f"min(first, last)/middle θ = {both('trained')}",
               f"untrained twin {both('untrained')}", _decide(cid, unit))


def weak_correlation(control: pd.DataFrame) -> dict[str, str]:
    """P1-A3 on this model (an absence: the middle θ(Δh) in the band, the smooth residual stream
    of the same depth as the positive control that the band must reject)."""
    cid = "P1-A3-weak-update-correlation"
    r = _stat(control, "middle_theta_dh")
    t = Estimate(r["trained"], r["trained_lo"], r["trained_hi"])
    unit = geometry.weak_correlation_units(control)[0]
    if not all(math.isfinite(v) for v in (t.lo, t.hi)):
        unit = Unit(name="this model", primary=None,
                    precondition="no pair of middle updates (fewer than 4 blocks)")
    return row(cid, f"middle θ(Δh) = {_iv(t)} rad",
               f"smooth stream (positive) {_iv(unit.control)} rad; untrained twin "
               f"{r['untrained']:.2f} rad", _decide(cid, unit))


def _share(x: float) -> str:
    """A share of the CE drop; undefined (NaN) where the lens's CE does not fall at all, as in
    an untrained twin."""
    return "no drop" if x is None or not math.isfinite(x) else f"{x:.2f}"


def _lens_row(stats: dict[str, Any], name: str) -> dict[str, Any]:
    drop = stats.get("drop_by_middle")
    return {"model": name, "layers": stats.get("layers", len(stats.get("mean", []))),
            "early_share": stats["early_share"], "tokens": stats.get("tokens", np.nan),
            "drop_by_middle": np.nan if drop is None else drop}


def no_early_stopping(trained: dict[str, Any], untrained: dict[str, Any]) -> dict[str, str]:
    """P1-A4 on this model (`lens.units`: the early-stopper share with a Wilson interval over
    tokens, the share of the CE drop done by mid-depth as the secondary, the synthetic early
    stoppers as the positive control); the untrained twin is shown beside."""
    cid = "P1-A4-no-early-stopping"
    unit = lens.units(pd.DataFrame([_lens_row(trained, "this model")]))[0]
    return row(cid, f"{100 * trained['early_share']:.1f} % early, "
                    f"{_share(trained.get('drop_by_middle'))} of the CE drop by mid-depth",
               f"synthetic early stoppers (positive) "
               f"{100 * unit.control.point if unit.control else float('nan'):.1f} %; untrained "
               f"twin {100 * untrained['early_share']:.1f} % early, "
               f"{_share(untrained.get('drop_by_middle'))}", _decide(cid, unit))


def _bulk_estimate(b: dict[str, Any]) -> Estimate:
    f, n = float(b["bulk_fraction"]), int(b["tokens"])
    return Estimate(f, *lens.wilson(f, n))


def bulk_fraction(trained: dict[str, Any], untrained: dict[str, Any]) -> dict[str, str]:
    """P1-B1 on this model: the bulk fraction's Wilson interval in the book's band, the
    minority's and the bulk's progress at a quarter of the depth as the secondaries, the
    untrained twin's fraction as the negative control."""
    cid = "P1-B1-bulk-fraction"
    if "all" not in trained:
        unit = Unit(name="this model", primary=None,
                    precondition="fewer than 4 blocks: too few profile features")
        return row(cid, "fewer than 4 blocks", "—", _decide(cid, unit))
    a, w0 = trained["all"], trained.get("without_position0", {})
    secondary = {}
    for name, key in (("minority stops early", "median_progress_at_quarter_depth_minority"),
                      ("bulk updates evenly", "median_progress_at_quarter_depth_bulk")):
        v = a.get(key)
        if v is not None and math.isfinite(v):
            secondary[name] = Estimate.exact(float(v))
    control = _bulk_estimate(untrained["all"]) if "all" in untrained else None
    unit = Unit(name="this model", primary=_bulk_estimate(a), control=control,
                secondary=secondary)
    without = w0.get("bulk_fraction")
    return row(cid, f"{100 * a['bulk_fraction']:.2f} % of {a['tokens']} tokens "
                    f"({100 * a['share_at_position_0']:.0f} % of the minority at position 0"
                    + (f"; without position 0: {100 * without:.2f} %" if without is not None
                       else "") + ")",
               f"untrained twin {_iv(control, '.4f')}", _decide(cid, unit))


def core_rank(n_layers: int) -> int:
    """How many middle-half layers must be critical: the book's three of SmolLM2's 30, scaled."""
    return max(1, round(CORE_SHARE * n_layers / paper.P2_N_LAYERS.value))


def _kth_middle(table: pd.DataFrame | None, method: str, n_layers: int) -> Estimate | None:
    """The k-th largest degradation among the middle half's layers under `method` (k =
    `core_rank`), with that layer's interval."""
    if table is None or table.empty:
        return None
    g = table[(table["method"] == method) & (table["layer"] >= n_layers / 4)
              & (table["layer"] < 3 * n_layers / 4)].sort_values("deg", ascending=False)
    k = core_rank(n_layers)
    if len(g) < k:
        return None
    r = g.iloc[k - 1]
    return Estimate(float(r["deg"]), float(r["lo"]), float(r["hi"]))


def critical_core(table: pd.DataFrame, n_layers: int,
                  untrained: pd.DataFrame | None = None) -> dict[str, str]:
    """P2-C1-core on this model: the k-th largest neighbour-average degradation of the middle
    half (k = 3 per 30 blocks) at or above the book's 100 %, under removal too (secondary); the
    untrained twin's same statistic is the negative control."""
    cid = "P2-C1-core"
    if n_layers < 4:
        unit = Unit(name="this model", primary=None, precondition=f"{n_layers} blocks")
        return row(cid, "fewer than 4 blocks", "—", _decide(cid, unit))
    na = _kth_middle(table, "neighbour_average", n_layers)
    skip = _kth_middle(table, "skip", n_layers)
    control = _kth_middle(untrained, "neighbour_average", n_layers)
    unit = Unit(name="this model", primary=na, control=control,
                secondary={"under removal": skip} if skip is not None else {})
    k = core_rank(n_layers)
    return row(cid, f"{k}{'st' if k == 1 else 'nd' if k == 2 else 'rd' if k == 3 else 'th'} "
                    f"largest of the middle half (L{math.ceil(n_layers / 4)}–"
                    f"L{math.ceil(3 * n_layers / 4) - 1}): averaging {_iv(na, '+.0f')} %, removal "
                    f"{_iv(skip, '+.0f')} %",
               f"untrained twin {_iv(control, '+.0f')} %", _decide(cid, unit))


def _lowest_inner(table: pd.DataFrame | None, n_layers: int) -> tuple[int, Estimate] | None:
    if table is None or table.empty:
        return None
    na = importance.inner(table[table["method"] == "neighbour_average"], n_layers)
    if na.empty:
        return None
    r = na.sort_values("hi").iloc[0]  # the one whose interval reaches lowest at its top
    return int(r["layer"]), Estimate(float(r["deg"]), float(r["lo"]), float(r["hi"]))


def anti_layers(table: pd.DataFrame, n_layers: int,
                untrained: pd.DataFrame | None = None) -> dict[str, str]:
    """P2-C1-anti-layers on this model: an inner layer whose neighbour-average degradation
    interval lies below 0 % (the one whose interval's top is lowest); the untrained twin's
    same statistic is the negative control."""
    cid = "P2-C1-anti-layers"
    low, ctl = _lowest_inner(table, n_layers), _lowest_inner(untrained, n_layers)
    if low is None:
        unit = Unit(name="this model", primary=None, precondition="no inner layer")
        return row(cid, "no inner layer", "—", _decide(cid, unit))
    unit = Unit(name="this model", primary=low[1], control=ctl[1] if ctl else None)
    na = importance.inner(table[table["method"] == "neighbour_average"], n_layers)
    below = sorted(int(l) for l in na[na["hi"] < 0]["layer"])
    return row(cid, f"lowest: L{low[0]} {_iv(low[1], '+.1f')} %; layers below 0 %: "
                    f"{below or 'none'}",
               f"untrained twin: L{ctl[0]} {_iv(ctl[1], '+.1f')} %" if ctl else "not measured",
               _decide(cid, unit))


def _skipped_note(short: list[dict[str, Any]], need: int) -> str:
    """What a verdict over the groups of a stack whose blocks differ left out (empty if none)."""
    if not short:
        return ""
    return (f" ({len(short)} matrix group{'s' if len(short) != 1 else ''} of fewer than {need} "
            f"blocks left out: {', '.join(r['type'] for r in short)})")


def _spread(values: np.ndarray) -> Estimate:
    return Estimate(float(np.mean(values)), float(np.min(values)), float(np.max(values)))


def delta_correlation(weights: list[dict[str, Any]]) -> dict[str, str]:
    """P2-C3-oscillation on this model: every matrix type's consecutive-delta correlation in the
    book's band; i.i.d. layers (no cross-layer structure, −0.5 by construction) are the negative
    control, the shuffled order and the untrained twin shown beside."""
    cid = "P2-C3-oscillation"
    mats = [r for r in weights if not r["is_norm"]]
    short = [r for r in mats if "delta" in r.get("skipped", {})]
    mats = [r for r in mats if "delta" not in r.get("skipped", {})]
    real = np.array([r["delta_real"] for r in mats], dtype=float)
    iid = np.array([r["delta_iid"] for r in mats], dtype=float)
    if not len(mats) or not (np.isfinite(real).all() and np.isfinite(iid).all()):
        unit = Unit(name="this model", primary=None,
                    precondition="no matrix group of at least 3 blocks")
        return row(cid, "fewer than 3 layers", "—", _decide(cid, unit))
    others = {k: [r[f"delta_{k}"] for r in mats if r.get(f"delta_{k}") is not None
                  and math.isfinite(r[f"delta_{k}"])] for k in ("shuffled", "untrained")}
    unit = Unit(name="this model", primary=_spread(real), control=_spread(iid))
    beside = "; ".join(f"{k} {min(v):+.3f} … {max(v):+.3f}" for k, v in others.items() if v)
    return row(cid, f"matrices {real.min():+.3f} … {real.max():+.3f}" + _skipped_note(short, 3),
               f"i.i.d. layers {iid.min():+.3f} … {iid.max():+.3f}" + (f"; {beside}" if beside
                                                                       else ""),
               _decide(cid, unit))


def ridge(weights: list[dict[str, Any]], alphas: tuple[float, ...]) -> dict[str, str]:
    """P2-C2-ridge-r2 asked of this model: each matrix type predicted from the layer below,
    leave-one-out at its best penalty, in the book's band; the shuffled order the negative
    control (in-sample R² shown beside: it measures fit, not prediction)."""
    cid = "P2-C2-ridge-r2"
    mats = [r for r in weights if not r["is_norm"] and any(k.startswith("ridge_") for k in r)]
    short = [r for r in weights if not r["is_norm"] and "ridge" in r.get("skipped", {})]
    if not mats:
        unit = Unit(name="this model", primary=None,
                    precondition="no matrix group of at least 4 blocks")
        return row(cid, "fewer than 4 layers", "—", _decide(cid, unit))

    def best(kind: str, protocol: str = "loo") -> np.ndarray:
        return np.array([max(r[f"ridge_{protocol}_{kind}_{a:g}"] for a in alphas) for r in mats])

    loo, shuffled, ins = best("real"), best("shuffled"), best("real", "in_sample")
    unit = Unit(name="this model", primary=_spread(loo), control=_spread(shuffled))
    return row(cid, f"leave-one-out R² {_iv(unit.primary, '.3f')} over matrix types (in-sample "
                    f"{ins.mean():.3f})" + _skipped_note(short, 4),
               f"shuffled order {_iv(unit.control, '.3f')}", _decide(cid, unit))


def _at_alpha(sweep: pd.DataFrame | None) -> Estimate | None:
    if sweep is None or sweep.empty:
        return None
    r = sweep[np.isclose(sweep["alpha"].astype(float), paper.P2_SCALE_ALPHA.value)]
    if r.empty:
        return None
    r = r.iloc[0]
    return Estimate(float(r["deg"]), float(r["lo"]), float(r["hi"]))


def scaling(sweep: pd.DataFrame, layers: list[int],
            untrained: pd.DataFrame | None = None) -> dict[str, str]:
    """P2-C4-only-scaling on this model: ×0.9 on the least important layers within the book's
    benign band; the same layers scaled in the untrained twin are the negative control."""
    cid = "P2-C4-only-scaling"
    est, ctl = _at_alpha(sweep), _at_alpha(untrained)
    if est is None:
        unit = Unit(name="this model", primary=None, precondition="α = 0.9 is not in the sweep")
        return row(cid, "α = 0.9 not in the sweep", "—", _decide(cid, unit))
    unit = Unit(name="this model", primary=est, control=ctl)
    return row(cid, f"×0.9 on L{', L'.join(map(str, layers))}: {_iv(est, '+.1f')} %",
               f"untrained twin {_iv(ctl, '+.1f')} %", _decide(cid, unit))
