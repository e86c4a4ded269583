"""The report's summary: does *this* model show each of the papers' signatures?

Each row asks a book claim's question of one model with the book's own rule wherever the
report's data allow it: the chapter's unit-building function (`geometry.edge_units`,
`geometry.weak_correlation_units`, `lens.units`, `clusters.primary_unit`, the importance map's
`layer_estimate`, `strategies.only_scaling_units`) on this model's numbers, its declaration
(`layerlab.depth.declarations`, `layerlab.anatomy.declarations`) restated for one model, and
`claims.decide`. Where the report's question differs — a form for any depth where the book's
names SmolLM2's layers, a statistic the report does not store, a control it did not measure —
the row says so in words (`WHY`, the "vs the book" column): why its answer can differ from the
book's verdict on the same model. The row words its verdict as a signature ("signature present
/ absent"), since one model neither reproduces nor refutes a paper, and names the book claim it
restates. Each function takes small plain data, so each is tested with a synthetic input that
passes, one that fails, one whose control passes too, and one on which the book's rule and the
report's must agree.

Used by `layerlab report` and chapter 12.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from layerlab import claims, paper
from layerlab.anatomy import importance, strategies
from layerlab.anatomy.declarations import DECLARATIONS as P2
from layerlab.anatomy.deltas import CONSTANT
from layerlab.claims import Declaration, Estimate, Unit, Verdict
from layerlab.depth import clusters, geometry, lens
from layerlab.depth.declarations import DECLARATIONS as P1

__all__ = ["SIGNATURE", "DECLARATIONS", "WHY", "VS_BOOK", "row", "edges", "weak_correlation",
           "no_early_stopping", "bulk_fraction", "critical_core", "anti_layers",
           "delta_correlation", "ridge", "scaling", "core_rank"]

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
VS_BOOK = "vs the book"  # the row's column: why its answer can differ from the book's claim
SET = "text"  # the report's one evaluation set, as its importance table names it


def _for_model(book_id: str, **changes: Any) -> Declaration:
    """The book claim's declaration restated for one model (scope: this model)."""
    book = {**P1, **P2}[book_id]
    return dataclasses.replace(book, scope=ONE_MODEL, **changes)


CORE_SHARE = len(paper.P2_CRITICAL_CORE.value) - 1  # the book's third-largest of four named layers
MIDDLE = "the middle half of the stack (L/4 ≤ l < 3L/4)"
DECLARATIONS: dict[str, Declaration] = claims.index([
    _for_model("P1-A1-edges-rotate"),
    _for_model("P1-A3-weak-update-correlation"),
    _for_model("P1-A4-no-early-stopping"),
    _for_model("P1-B1-bulk-fraction"),  # chapter 03's own rule (`clusters.primary_unit`)
    _for_model(
        "P2-C1-core",
        primary=f"the k-th largest neighbour-average degradation % among {MIDDLE} (k = 3 of "
                "every 30 blocks, at least 1: the book's 'three of L8–11' scaled to this depth)",
        unit="evaluation sentences (paired bootstrap); a statistic of several layers takes the "
             "statistic of the layers' lower ends to that of their upper ends (the book's)",
        precondition="the model has at least 4 blocks (a middle half exists)",
        control=TWIN,
        secondary=(dataclasses.replace(
            next(s for s in P2["P2-C1-core"].secondary if s.name == "under removal"),
            statistic=f"the same statistic under removal (skip): the k-th largest removal "
                      f"degradation % among {MIDDLE}"),)),
    _for_model(
        "P2-C1-anti-layers",
        primary="the smallest neighbour-average degradation % among the inner layers (both "
                "neighbours exist): an anti-layer exists when a whole interval lies below 0 %",
        unit="evaluation sentences (paired bootstrap); a statistic of several layers takes the "
             "statistic of the layers' lower ends to that of their upper ends (the book's)",
        precondition="the model has at least 3 blocks (an inner layer exists)",
        control=TWIN,
        secondary=(dataclasses.replace(
            P2["P2-C1-anti-layers"].secondary[0],
            statistic="the same statistic under removal (skip): the smallest removal "
                      "degradation % among the inner layers"),)),
    _for_model(
        "P2-C3-oscillation",
        primary="corr(Δ_l, Δ_{l+1}) element-wise, mean over layer pairs, per tensor type "
                "(matrices and norms; each type one unit, the book's cross-unit rule)",
        unit="tensor types, each type's mean over its layer pairs taken exact (the report keeps "
             "no per-pair values)",
        precondition="at least 3 blocks per tensor group (two consecutive deltas); the tensor "
                     "varies across layers",
        control="negative: i.i.d. Gaussian layers of each real layer's mean and std (layers "
                "with no cross-layer structure, exactly −1/2) through the same band; the "
                "shuffled order and the untrained twin are shown beside"),
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
        primary="scale ×0.9's degradation % with S, the report's least important inner layers, "
                "scaled at once",
        unit="evaluation sentences (paired bootstrap)",
        precondition="α = 0.9 is in the sweep",
        control=f"matched size (chapter 06's control): clone, mix and low-rank mix moved toward "
                f"their targets only as far as ×0.9 moves the weights (‖ΔW‖/‖W‖ = "
                f"{strategies.MATCHED_SIZE:g} per layer of S), through the same band on the "
                "report's text: if even the most damaging of them is benign too, 'benign' "
                "measures the edit's size, not scaling → not diagnostic. The untrained twin is "
                "shown beside, not deciding: any small edit keeps a random model's (absent) "
                "quality",
        secondary=tuple(s for s in P2["P2-C4-only-scaling"].secondary
                        if s.name == "others harmful")),
])

# Why each row's answer can differ from the book's verdict on the same model, in a reader's words
# (shown in the "vs the book" column; a row whose stored evidence falls short says so itself).
_SAME = ("The book's own rule ({how}) on this report's text, of the model as loaded: its "
         "text and budget (a --quick report reads about 2,000 tokens) can make it differ; so "
         "can the book's stand-in precision check, where the book reads a 4-bit stand-in for "
         "the paper's model (a row about the loaded model itself does not need it), and, for a "
         "member of the depth family, the family's precondition (depth buys loss), which is "
         "about the family, not one member.")
WHY: dict[str, str] = {
    "P1-A1-edges-rotate": _SAME.format(how="chapter 02's units: the edge ratio with the last "
                                           "state after the final norm, as P1 takes it (the "
                                           "block-only ratio shown beside), the untrained "
                                           "twin's range as threshold, at least 8 blocks"),
    "P1-A3-weak-update-correlation": _SAME.format(
        how="chapter 02's units: the middle θ(Δh), the smooth stream as positive control, at "
            "least 4 blocks"),
    "P1-A4-no-early-stopping": _SAME.format(
        how="chapter 02's lens units: the early-stopper share over tokens, the synthetic early "
            "stoppers as positive control, 'gradual' as secondary"),
    "P1-B1-bulk-fraction": _SAME.format(
        how="chapter 03's unit: the interval over windows, each token's layers shuffled as the "
            "control, both secondaries; the untrained twin is shown beside, not deciding"),
    "P2-C1-core": (
        "Asked in a form for any depth, of the model as loaded, on this report's text: the k-th "
        "largest of the middle half, and the same under removal. The book asks it of SmolLM2's "
        "named L8–11 on E0 and E1, adds 'peak at L11' and 'no core elsewhere', and, reading "
        "SmolLM2-135M through its 4-bit stand-in, also requires that the stand-in's own rounding "
        "cannot carry the statistic across the band's edge (chapter 05). This row is about the "
        "model it loaded, rounding included, so it has no such precondition: on the stand-in "
        "the two can differ there."),
    "P2-C1-anti-layers": (
        "Asked in a form for any depth, of the model as loaded, on this report's text: does any "
        "inner layer improve perplexity (and the same under removal)? The book asks it of "
        "SmolLM2's named L14 and L17 on E0 and E1, with chapter 05's stand-in precision "
        "check, which a row about the loaded model itself does not need."),
    "P2-C3-oscillation": (
        "The book's rule (chapter 08: each tensor type one unit, i.i.d. layers as the control, "
        "the cross-unit rule) with each type's mean taken exact, since the report keeps no "
        "per-pair values for the book's bootstrap, and without the book's neuron-aligned and "
        "permutation-invariant measures; the band's power against structured stacks does not "
        "depend on the model and is chapter 08's check."),
    "P2-C2-ridge-r2": (
        "A different question: the book judges the paper's number — gate_proj's forward-split "
        "R² (fit on the lower two thirds, scored on the rest) at its best α, with the nulls "
        "beside it. The report stores no forward split: it asks whether depth order predicts "
        "this model's weights at all (leave-one-out, every matrix type) beyond the same layers "
        "shuffled, so the shuffled order decides as a negative control."),
    "P2-C4-only-scaling": (
        "The book's rule (chapter 06's units: clone, mix and low-rank mix moved only as far as "
        "×0.9 moves the weights as the control, the other strategies at full strength as "
        "'others harmful') on the report's S, its 5 least important inner layers (the book's S "
        "is chapter 05's connective and anti-layers), without the book's generation check."),
}
_A1_OLD = (
    "Not the book's rule: this report.json predates the report's measuring the last angle on the "
    "state after the final norm, the convention P1 and the book's verdict use, so the row cannot "
    "decide (rebuild the report). The block-only ratio shown (the last block's own output) can "
    "differ from it wherever the final norm turns the last state, as Gemma-3's does.")
_B1_OLD = (
    "Not the book's rule: this report.json predates the report's storing chapter 03's evidence. "
    "The fraction carries a Wilson interval over tokens (narrower than the book's over windows) "
    "and the book's control — each token's layers shuffled — is missing, so the row cannot "
    "decide once the fraction is in band (rebuild the report to apply chapter 03's rule). The "
    "untrained twin shown beside cannot stand in for it: it has no bulk to find, so it cannot "
    "show whether a bulk reads the depth order of the profiles at all.")
_C4_OLD = (
    "Not the book's rule: this report.json predates the report's measuring chapter 06's control "
    "(clone, mix and low-rank mix moved only as far as ×0.9 moves the weights), so the row "
    "cannot tell 'benign because it is scaling' from 'benign because it is small' and cannot "
    "decide once ×0.9 is benign (rebuild the report). The untrained twin shown beside is no "
    "control for this claim: any small edit keeps a random model's (absent) quality.")


def row(claim_id: str, this_model: str, control: str, decision: claims.Decision,
        vs_book: str | None = None) -> dict[str, str]:
    """One summary row: the finding (the book claim's statement), the paper's value, this
    model's measurement and its control's, the band, the verdict worded as a signature, and why
    its answer can differ from the book's on the same model (`vs_book`, else `WHY`)."""
    decl = DECLARATIONS[claim_id]
    return {"id": claim_id, "finding": decl.statement, "paper": decl.paper_value,
            "this model": this_model, "control": control, "rule": claims.rule_text(decl),
            "verdict": SIGNATURE[Verdict(decision.verdict)], "decided by": decision.decided_by,
            VS_BOOK: vs_book or WHY[claim_id], "book claim": claim_id}


def _decide(claim_id: str, unit: Unit | list[Unit]) -> claims.Decision:
    """`claims.decide` on the report's declaration; one unit is named "this model" (a list, the
    book's several units of one model, keeps its names)."""
    units = unit if isinstance(unit, list) else [dataclasses.replace(unit, name="this model")]
    return claims.decide(DECLARATIONS[claim_id], units)


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

    measured = (control["statistic"] == geometry.EDGE_PAPER).any()
    return row(cid, f"min(first, last)/middle θ = {both('trained')}",
               f"untrained twin {both('untrained')}", _decide(cid, unit),
               None if measured else _A1_OLD)


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


# -- P1-B1 ---------------------------------------------------------------------------------------
def _series(stored: dict[str, Any]) -> pd.Series:
    """A stored sample's evidence as the row `clusters.primary_unit` reads (null → NaN)."""
    return pd.Series({k: (np.nan if v is None else v) for k, v in stored.items()}, dtype=object)


def _wilson(share: float, n: int) -> Estimate:
    return Estimate(share, *lens.wilson(share, n))


def _stored_before_windows(a: dict[str, Any]) -> Unit:
    """A report.json written before the report kept chapter 03's evidence: the fraction with a
    Wilson interval over tokens, the secondaries' medians taken exact, and no control — the
    book's (each token's layers shuffled) was not measured, and `claims.decide` then decides
    only a fraction outside the band."""
    secondary = {}
    for name, key in (("minority stops early", "median_progress_at_quarter_depth_minority"),
                      ("bulk updates evenly", "median_progress_at_quarter_depth_bulk")):
        v = a.get(key)
        if v is not None and math.isfinite(v):
            secondary[name] = Estimate.exact(float(v))
    return Unit(name="this model", primary=_wilson(float(a["bulk_fraction"]), int(a["tokens"])),
                secondary=secondary)


def bulk_fraction(trained: dict[str, Any], untrained: dict[str, Any]) -> dict[str, str]:
    """P1-B1 on this model by chapter 03's rule (`clusters.primary_unit`: the bulk fraction's
    interval over windows in the book's band, each token's layers shuffled as the negative
    control, the minority's and the bulk's progress at a quarter of the depth as the
    secondaries); the untrained twin's fraction is shown beside. A report.json stored before the
    report kept that evidence is decided on what it has, and its row says so."""
    cid = "P1-B1-bulk-fraction"
    if "all" not in trained:
        unit = Unit(name="this model", primary=None,
                    precondition=f"fewer than {clusters.MIN_LAYERS} blocks: too few profile "
                                 "features")
        return row(cid, "fewer than 4 blocks", "—", _decide(cid, unit))
    a, w0 = trained["all"], trained.get("without_position0", {})
    book = "windows" in a  # stored by reports built since the report kept chapter 03's evidence
    unit = clusters.primary_unit(_series(a), "this model") if book else _stored_before_windows(a)
    twin = untrained.get("all")
    beside = (f"untrained twin {100 * twin['bulk_fraction']:.2f} % (shown, not deciding)"
              if twin else "untrained twin not measured")
    control = (f"layers shuffled {_pct(unit.control)}; {beside}" if book
               else f"layers shuffled: not in this report.json; {beside}")
    without = w0.get("bulk_fraction")
    interval = (f" over {a['windows']} windows" if book else " (Wilson over tokens)")
    return row(cid, f"{_pct(unit.primary)}{interval}, {a['tokens']} tokens "
                    f"({100 * a['share_at_position_0']:.0f} % of the minority at position 0"
                    + (f"; without position 0: {100 * without:.2f} %" if without is not None
                       else "") + ")",
               control, _decide(cid, unit), None if book else _B1_OLD)


def _pct(e: Estimate | None) -> str:
    return "not measured" if e is None else (
        f"{100 * e.point:.2f} %" if e.lo == e.hi else
        f"{100 * e.point:.2f} % [{100 * e.lo:.2f}, {100 * e.hi:.2f}]")


# -- P2-C1: the importance map, by the book's estimates (`importance.layer_estimate`) ------------
def core_rank(n_layers: int) -> int:
    """How many middle-half layers must be critical: the book's three of SmolLM2's 30, scaled."""
    return max(1, round(CORE_SHARE * n_layers / paper.P2_N_LAYERS.value))


def _middle(table: pd.DataFrame | None, method: str, n_layers: int) -> pd.DataFrame:
    if table is None or table.empty:
        return pd.DataFrame()
    return table[(table["method"] == method) & (table["layer"] >= n_layers / 4)
                 & (table["layer"] < 3 * n_layers / 4)]


def _kth_middle(table: pd.DataFrame | None, method: str, n_layers: int) -> Estimate | None:
    """The k-th largest degradation among the middle half's layers under `method` (k =
    `core_rank`), by the book's `layer_estimate` (the k-th largest point, lower and upper end)."""
    rows = _middle(table, method, n_layers)
    k = core_rank(n_layers)
    return importance.layer_estimate(rows, importance.kth_largest(k), need=k) if len(rows) else None


def _ordinal(k: int) -> str:
    return f"{k}{'st' if k == 1 else 'nd' if k == 2 else 'rd' if k == 3 else 'th'}"


def critical_core(table: pd.DataFrame, n_layers: int,
                  untrained: pd.DataFrame | None = None) -> dict[str, str]:
    """P2-C1-core on this model: the k-th largest neighbour-average degradation of the middle
    half (k = 3 per 30 blocks) at or above the book's 100 %, the same statistic under removal as
    the secondary; the untrained twin's same statistic is the negative control."""
    cid = "P2-C1-core"
    if n_layers < 4:
        unit = Unit(name="this model", primary=None, precondition=f"{n_layers} blocks")
        return row(cid, "fewer than 4 blocks", "—", _decide(cid, unit))
    na = _kth_middle(table, "neighbour_average", n_layers)
    skip = _kth_middle(table, "skip", n_layers)
    control = _kth_middle(untrained, "neighbour_average", n_layers)
    unit = Unit(name="this model", primary=na, control=control,
                secondary={"under removal": skip} if skip is not None else {})
    return row(cid, f"{_ordinal(core_rank(n_layers))} largest of the middle half "
                    f"(L{math.ceil(n_layers / 4)}–L{math.ceil(3 * n_layers / 4) - 1}): averaging "
                    f"{_iv(na, '+.0f')} %, removal {_iv(skip, '+.0f')} %",
               f"untrained twin {_iv(control, '+.0f')} %", _decide(cid, unit))


def _lowest_inner(table: pd.DataFrame | None, method: str,
                  n_layers: int) -> tuple[int, Estimate] | None:
    """The smallest degradation among the inner layers under `method` by the book's
    `layer_estimate` (the smallest point, lower and upper end), with the layer whose interval
    reaches lowest at its top (the one that decides whether some interval lies below 0)."""
    if table is None or table.empty:
        return None
    rows = importance.inner(table[table["method"] == method], n_layers)
    if rows.empty:
        return None
    low = int(rows.sort_values("hi").iloc[0]["layer"])
    return low, importance.layer_estimate(rows, np.min)


def anti_layers(table: pd.DataFrame, n_layers: int,
                untrained: pd.DataFrame | None = None) -> dict[str, str]:
    """P2-C1-anti-layers on this model: an inner layer whose neighbour-average degradation
    interval lies below 0 % (the smallest over the inner layers), the same statistic under
    removal as the secondary; the untrained twin's same statistic is the negative control."""
    cid = "P2-C1-anti-layers"
    low = _lowest_inner(table, "neighbour_average", n_layers)
    ctl = _lowest_inner(untrained, "neighbour_average", n_layers)
    skip = _lowest_inner(table, "skip", n_layers)
    if low is None:
        unit = Unit(name="this model", primary=None, precondition="no inner layer")
        return row(cid, "no inner layer", "—", _decide(cid, unit))
    unit = Unit(name="this model", primary=low[1], control=ctl[1] if ctl else None,
                secondary={"under removal": skip[1]} if skip else {})
    na = importance.inner(table[table["method"] == "neighbour_average"], n_layers)
    below = sorted(int(l) for l in na[na["hi"] < 0]["layer"])
    return row(cid, f"smallest of the inner layers {_iv(low[1], '+.1f')} % (lowest interval: "
                    f"L{low[0]}); layers below 0 %: {below or 'none'}; removal "
                    f"{_iv(skip[1] if skip else None, '+.1f')} %",
               f"untrained twin {_iv(ctl[1], '+.1f')} %" if ctl else "not measured",
               _decide(cid, unit))


# -- P2-C3, P2-C2: the weights ------------------------------------------------------------------
def _skipped_note(short: list[dict[str, Any]], need: int, what: str = "tensor") -> str:
    """What a verdict over the groups of a stack whose blocks differ left out (empty if none)."""
    if not short:
        return ""
    return (f" ({len(short)} {what} group{'s' if len(short) != 1 else ''} of fewer than {need} "
            f"blocks left out: {', '.join(r['type'] for r in short)})")


def _spread(values: np.ndarray) -> Estimate:
    return Estimate(float(np.mean(values)), float(np.min(values)), float(np.max(values)))


def _exact(v: Any) -> Estimate | None:
    return Estimate.exact(float(v)) if v is not None and math.isfinite(v) else None


def _range(rows: list[dict[str, Any]], key: str) -> str:
    vals = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]
    return f"{min(vals):+.3f} … {max(vals):+.3f}" if vals else "undefined"


def delta_correlation(weights: list[dict[str, Any]]) -> dict[str, str]:
    """P2-C3-oscillation on this model by chapter 08's element-wise rule: each tensor type one
    unit (its mean delta correlation, exact), i.i.d. layers of matched mean and std its negative
    control (−1/2 by construction), a type constant across layers not testable, and the book's
    cross-unit rule; the shuffled order and the untrained twin are shown beside."""
    cid = "P2-C3-oscillation"
    short = [r for r in weights if "delta" in r.get("skipped", {})]
    kept = [r for r in weights if "delta" not in r.get("skipped", {})]
    if not kept:
        unit = Unit(name="this model", primary=None,
                    precondition="no tensor group of at least 3 blocks")
        return row(cid, "fewer than 3 layers", "—", _decide(cid, unit))
    units = [Unit(name=r["type"], primary=_exact(r["delta_real"]), control=_exact(r["delta_iid"]),
                  precondition=None if _exact(r["delta_real"]) is not None else CONSTANT)
             for r in kept]
    mats, norms = [r for r in kept if not r["is_norm"]], [r for r in kept if r["is_norm"]]
    ours = (f"matrices {_range(mats, 'delta_real')}" if mats else "no matrices") + "".join(
        f"; {r['type']} {_iv(_exact(r['delta_real']), '+.3f').replace('not measured', 'constant')}"
        for r in norms)
    beside = "; ".join(f"{k} {_range(kept, f'delta_{k}')}" for k in ("shuffled", "untrained"))
    return row(cid, ours + _skipped_note(short, 3),
               f"i.i.d. layers {_range(kept, 'delta_iid')}; {beside}", _decide(cid, units))


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
                    f"{ins.mean():.3f})" + _skipped_note(short, 4, "matrix"),
               f"shuffled order {_iv(unit.control, '.3f')}", _decide(cid, unit))


# -- P2-C4 ----------------------------------------------------------------------------------------
def _at_alpha(sweep: pd.DataFrame | None) -> Estimate | None:
    if sweep is None or sweep.empty:
        return None
    r = sweep[np.isclose(sweep["alpha"].astype(float), paper.P2_SCALE_ALPHA.value)]
    if r.empty:
        return None
    r = r.iloc[0]
    return Estimate(float(r["deg"]), float(r["lo"]), float(r["hi"]))


NO_GENERATIONS = pd.DataFrame(columns=["prompt", "condition", "distinct_2"])  # the report has none


def _scaling_unit(scale: Estimate, others: pd.DataFrame) -> Unit:
    """Chapter 06's unit (`strategies.only_scaling_units`) from the report's runs on S: ×0.9
    (the sweep's), the other strategies at full strength and at ×0.9's size (`others`, as
    `diagnostics.strategy_runs` stores them)."""
    joint = pd.concat([others[others["matched"] == "full"],
                       pd.DataFrame([{"set": SET, "strategy": strategies.BENIGN, "deg": scale.point,
                                      "lo": scale.lo, "hi": scale.hi}])], ignore_index=True)
    return strategies.only_scaling_units(joint, NO_GENERATIONS, others)[0]


def scaling(sweep: pd.DataFrame, layers: list[int], untrained: pd.DataFrame | None = None,
            others: pd.DataFrame | None = None) -> dict[str, str]:
    """P2-C4-only-scaling on this model by chapter 06's rule: ×0.9 on S (the report's least
    important layers) within the book's benign band, clone, mix and low-rank mix moved only as
    far as ×0.9 moves the weights the control (`others`, matched "size joint"), the other
    strategies at full strength (matched "full") harmful as the secondary; the untrained twin's
    ×0.9 shown beside. A report.json stored before the report measured the control has none."""
    cid = "P2-C4-only-scaling"
    est, twin = _at_alpha(sweep), _at_alpha(untrained)
    if est is None:
        unit = Unit(name="this model", primary=None, precondition="α = 0.9 is not in the sweep")
        return row(cid, "α = 0.9 not in the sweep", "—", _decide(cid, unit))
    book = others is not None and not others.empty
    unit = _scaling_unit(est, others) if book else Unit(name="this model", primary=est)
    harmed = unit.secondary.get("others harmful")
    ours = (f"×0.9 on L{', L'.join(map(str, layers))}: {_iv(est, '+.1f')} %"
            + (f"; least damaging other strategy {_iv(harmed, '+,.0f')} %" if harmed else ""))
    beside = f"untrained twin ×0.9 {_iv(twin, '+.1f')} % (shown, not deciding)"
    control = (f"most damaging at ×0.9's size {_iv(unit.control, '+.1f')} %; {beside}" if book
               else f"matched size: not in this report.json; {beside}")
    return row(cid, ours, control, _decide(cid, unit), None if book else _C4_OLD)
