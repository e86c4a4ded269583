"""Chapter 05's five C1 claims, each decided by `claims.decide` from its declaration
(`layerlab.anatomy.declarations`): the "10^7 range" (`range_units`, `assess_range`), the
critical core (`core_units`, `assess_core`), the peak's size (`peak_size_units`,
`assess_peak_size`), the anti-layers (`anti_units`, `assess_anti`) and the I/O layers
(`io_units`, `assess_io`); `assess` decides them all, `not_testable` on a model without
SmolLM2's 30 layers. Also the paper's named layers (`PAPER_CORE`, `PAPER_PEAK`, `PAPER_ANTI`)
and the estimates the units are built from (`layer_estimate`, `kth_largest`, `log10_estimate`,
the last also read by chapter 06).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
import pandas as pd

from layerlab import claims, paper
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.importance.measurement import CONNECTIVE_MAX, inner

if TYPE_CHECKING:
    from layerlab.anatomy.importance.experiment import ImportanceResult

__all__ = ["CHAPTER", "PAPER_CORE", "PAPER_PEAK", "PAPER_ANTI", "PAPER_LAYERS", "LAYER_CLAIMS",
           "CORE_OPERATIONS", "ESTIMATE_COLUMNS", "layer_estimate", "kth_largest",
           "log10_estimate", "range_units", "assess_range", "core_estimate", "peak_margin",
           "outside_core", "core_units", "assess_core", "peak_size_units", "assess_peak_size",
           "anti_estimate", "anti_units", "assess_anti", "io_layers", "io_estimate", "the_rest",
           "io_units", "assess_io", "assess", "not_testable", "precision_units", "copies_of"]


CHAPTER = "05_importance_map"
PAPER_CORE = paper.P2_CRITICAL_CORE.value
PAPER_PEAK = paper.P2_PEAK_LAYER.value
PAPER_ANTI = paper.P2_ANTI_LAYERS.value
PAPER_LAYERS = paper.P2_N_LAYERS.value
LAYER_CLAIMS = ("P2-C1-core", "P2-C1-peak-size", "P2-C1-anti-layers", "P2-C1-io-layers")
CORE_OPERATIONS = ("neighbour_average", "skip")  # the paper's operation, and removal
ESTIMATE_COLUMNS = ("deg", "lo", "hi")  # point and 95 % interval of each row


def _rows(table: pd.DataFrame, set_name: str, method: str, layers) -> pd.DataFrame:
    df = table[(table["set"] == set_name) & (table["method"] == method)]
    return df[df["layer"].isin(list(layers))]


def layer_estimate(rows: pd.DataFrame, stat, need: int = 1) -> claims.Estimate | None:
    """`stat` (a function of the layers' degradations, non-decreasing in each) at the point and
    at the layers' lower and upper interval ends; None with fewer than `need` layers."""
    if len(rows) < need:
        return None
    return claims.Estimate(*(float(stat(rows[c].to_numpy(dtype=float))) for c in ESTIMATE_COLUMNS))


def kth_largest(k: int):
    """A `layer_estimate` statistic: the k-th largest value (k = 3 of L8–11 reads "at least
    three of four layers"); non-decreasing in each value, as `layer_estimate` needs."""
    return lambda x: np.sort(x)[-k]


def _log10_or_minus_inf(v: float) -> float:
    return math.log10(v) if v > 0 else -math.inf


def log10_estimate(e: claims.Estimate | None) -> claims.Estimate | None:
    """An estimate of positive degradations on the log10 scale (a non-positive end gives −∞);
    None when even the upper end is not positive."""
    if e is None or not e.hi > 0:
        return None
    return claims.Estimate(*(_log10_or_minus_inf(v) for v in (e.point, e.lo, e.hi)))


def _sets(table: pd.DataFrame) -> list[str]:
    return sorted(set(table.loc[table["method"] == "neighbour_average", "set"]))


def _text(e: claims.Estimate | None, fmt: str = "+,.0f", unit: str = " %") -> str:
    return "n/a" if e is None else f"{e.point:{fmt}}{unit} [{e.lo:{fmt}}, {e.hi:{fmt}}]"


def _interval(e: claims.Estimate | None) -> list[float] | None:
    return None if e is None else [e.point, e.lo, e.hi]


Copies = Mapping[str, tuple[pd.DataFrame, pd.DataFrame]]  # name → (degradation table, ranges)


def precision_units(claim_id: str, units: list[claims.Unit],
                    copy_units: Mapping[str, list[claims.Unit]]
                    ) -> tuple[list[claims.Unit], dict[str, dict[str, list[float] | None]]]:
    """VERDICTS.md §4 [rev], directional: a unit whose primary, measured the same way on a
    dithered copy of the stand-in, lands across the band's edge from the stand-in's (or then
    straddles it) fails its precondition (stand-in precision); copies that move away from the
    edge, however far, threaten nothing. Returns the units and each unit's copies' estimates."""
    decl = DECLARATIONS[claim_id]
    band = decl.band
    out, moved = [], {}
    for u in units:
        u = _secondary_precision(decl, u, copy_units)
        per = {c: next((x.primary for x in us if x.name == u.name), None)
               for c, us in copy_units.items()}
        moved[u.name] = {c: _interval(e) for c, e in per.items()}
        threat = claims.stand_in_threat(band, u.primary, per)
        if threat:
            shown = ", ".join(f"{c} {_text(per[c], '+,.3g', '')}" for c in threat)
            measured = sum(e is not None for e in per.values())
            note = (f"stand-in precision: on {len(threat)} of the {measured} dithered copies "
                    f"measured here the primary lands across the band's edge {band.text('.3g')} "
                    f"or its interval straddles it, from the stand-in's "
                    f"{_text(u.primary, '+,.3g', '')} ({shown})")
            u = dataclasses.replace(u, precondition=u.precondition or note)
        out.append(u)
    return out, moved


def _secondary_precision(decl: claims.Declaration, u: claims.Unit,
                         copy_units: Mapping[str, list[claims.Unit]]) -> claims.Unit:
    """The directional check on each of the unit's secondaries: one that some copy carries across
    its own band's edge is left undecided, saying why."""
    why = dict(u.undecided)
    for sec in decl.secondary:
        est = u.secondary.get(sec.name)
        per = {c: next((x.secondary.get(sec.name) for x in us if x.name == u.name), None)
               for c, us in copy_units.items()}
        threat = claims.stand_in_threat(sec.band, est, per) if est is not None else []
        if threat:
            why[sec.name] = (f"stand-in precision: {', '.join(threat)} carry it across "
                             f"{sec.band.text('.3g')}")
    return dataclasses.replace(u, undecided=why) if why != dict(u.undecided) else u


def _decided(claim_id: str, units: list[claims.Unit], *, ours: str, setting: str,
             numbers: dict[str, Any] | None = None,
             copy_units: Mapping[str, list[claims.Unit]] | None = None) -> claims.Claim:
    """The one decision procedure (`claims.decide`) on the claim's declaration and units; with
    `copy_units` (the same units on each dithered copy, `copies_of`), the directional stand-in
    check first (`precision_units`), its copies' estimates stored with the numbers."""
    decl = DECLARATIONS[claim_id]
    numbers = dict(numbers or {})
    if copy_units:
        units, moved = precision_units(claim_id, units, copy_units)
        numbers["stand-in copies"] = moved
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


def stand_in_distance(table: pd.DataFrame, copies: Copies) -> dict[str, dict[str, Any]]:
    """Per set: the stand-in's perplexity and the range over its dithered copies' — how far apart
    models are that the 4-bit rounding cannot tell apart (VERDICTS.md §5 [rev])."""
    def base(t: pd.DataFrame, s: str) -> float | None:
        rows = t.loc[t["set"] == s, "base_ppl"]
        return float(rows.iloc[0]) if len(rows) else None

    out = {}
    for s in sorted(set(table["set"])):
        per = [b for t, _ in copies.values() if (b := base(t, s)) is not None]
        if per and base(table, s) is not None:
            out[s] = {"stand-in": base(table, s), "copies": [min(per), max(per)]}
    return out


def copies_of(copies: Copies | None, build) -> dict[str, list[claims.Unit]] | None:
    """`build(table, ranges)` → units, on every copy (None without copies)."""
    if not copies:
        return None
    return {name: build(table, ranges) for name, (table, ranges) in copies.items()}


# -- P2-C1-range --------------------------------------------------------------------------------
def range_units(ranges: pd.DataFrame) -> list[claims.Unit]:
    """One unit per set: log10(max |deg| / min |deg|) with its bootstrap interval over sentences
    (the whole map resampled at once)."""
    units = []
    for _, r in ranges.sort_values("set").iterrows():
        point, (lo, hi) = float(r["log10_range"]), (float(v) for v in r["log10_range_ci"])
        ok = all(math.isfinite(v) for v in (point, lo, hi))
        units.append(claims.Unit(
            name=str(r["set"]), primary=claims.Estimate(point, lo, hi) if ok else None,
            precondition=None if ok else "an inner layer at exactly 0 %: the ratio is undefined"))
    return units


def assess_range(ranges: pd.DataFrame, setting: str, *, copies: Copies | None = None
                 ) -> claims.Claim:
    """P2-C1-range (the "10^7 range") decided on `range_units`; `ranges` is `run`'s table, and
    the wording adds the two well-posed summaries when it has them. `copies` as in `assess`."""
    r = ranges.set_index("set")
    return _decided(
        "P2-C1-range", range_units(ranges),
        ours="; ".join(f"{s}: 10^{r.loc[s, 'log10_range']:.1f} (bootstrap 95 % "
                       f"10^{r.loc[s, 'log10_range_ci'][0]:.1f}–10^{r.loc[s, 'log10_range_ci'][1]:.1f}"
                       + (f"; log10 PPL span {r.loc[s, 'log10_ppl_span']:.2f}, largest / median "
                          f"{r.loc[s, 'max_over_median_deg']:,.0f}×" if "log10_ppl_span" in r
                          else "") + ")" for s in r.index),
        setting=setting,
        numbers={"log10_range": {s: float(r.loc[s, "log10_range"]) for s in r.index},
                 "log10_range_ci": {s: [float(v) for v in r.loc[s, "log10_range_ci"]]
                                    for s in r.index}},
        copy_units=copies_of(copies, lambda t, rg: range_units(rg)))


# -- P2-C1-core ---------------------------------------------------------------------------------
def core_estimate(table: pd.DataFrame, set_name: str, method: str) -> claims.Estimate | None:
    """The third-largest degradation among L8–11 under one operation (≥ 3 of 4 critical)."""
    return layer_estimate(_rows(table, set_name, method, PAPER_CORE), kth_largest(3),
                          need=len(PAPER_CORE))


def peak_margin(table: pd.DataFrame, set_name: str, n_layers: int) -> claims.Estimate | None:
    """L11's neighbour-average degradation minus the largest other inner layer's, in %."""
    one = inner(table[(table["set"] == set_name) & (table["method"] == "neighbour_average")],
                n_layers).set_index("layer")
    if PAPER_PEAK not in one.index or len(one) < 2:
        return None
    peak, others = one.loc[PAPER_PEAK], one.drop(index=PAPER_PEAK)
    return claims.Estimate(float(peak["deg"] - others["deg"].max()),
                           float(peak["lo"] - others["hi"].max()),
                           float(peak["hi"] - others["lo"].max()))


def outside_core(n_layers: int) -> list[int]:
    """The middle half's layers (where the class rule can call a layer core) outside L7–12."""
    lo, hi = min(PAPER_CORE) - 1, max(PAPER_CORE) + 1
    return [l for l in range(n_layers) if n_layers / 4 <= l < 3 * n_layers / 4
            and not lo <= l <= hi]


def core_units(table: pd.DataFrame, n_layers: int,
               control: pd.DataFrame | None = None) -> list[claims.Unit]:
    """P2-C1-core, one unit per set: the third-largest neighbour-average degradation of L8–11,
    the untrained twin's through the same band (None: not measured), and the secondaries (peak
    at L11, no core elsewhere in the middle half, the core under removal)."""
    units = []
    for s in _sets(table):
        est = core_estimate(table, s, "neighbour_average")
        sec = {"peak at L11": peak_margin(table, s, n_layers),
               "no core elsewhere": layer_estimate(
                   _rows(table, s, "neighbour_average", outside_core(n_layers)), np.max),
               "under removal": core_estimate(table, s, "skip")}
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else "L8–11 are not all in the map",
            control=None if control is None else core_estimate(control, s, "neighbour_average"),
            secondary={k: v for k, v in sec.items() if v is not None}))
    return units


def assess_core(table: pd.DataFrame, setting: str, n_layers: int,
                control: pd.DataFrame | None = None, *,
                copies: Copies | None = None) -> claims.Claim:
    """P2-C1-core decided on `core_units`; the wording gives each operation's peak, core layers
    and L8–11's degradations per set. `control` (`untrained_map`) and `copies` as in
    `assess`."""
    units = core_units(table, n_layers, control)
    shown = []
    for m in [m for m in CORE_OPERATIONS if m in set(table["method"])]:
        for s, df in inner(table[table["method"] == m], n_layers).groupby("set"):
            peak = int(df.loc[df["deg"].idxmax(), "layer"])
            core = sorted(df.loc[df["class"] == "critical core", "layer"].astype(int))
            deg = {l: float(df.loc[df["layer"] == l, "deg"].iloc[0]) for l in PAPER_CORE}
            shown.append(f"{m.replace('_', ' ')} {s}: peak L{peak}, core {core or 'none'} ("
                         + ", ".join(f"L{l} {v:+,.0f} %" for l, v in deg.items()) + ")")
    third = "; ".join(f"{u.name} {_text(u.primary)}" + (
        f", untrained twin {_text(u.control)}" if u.control is not None else "") for u in units)
    return _decided(
        "P2-C1-core", units,
        ours="; ".join(shown) + f" — third-largest of L8–11 (neighbour average): {third}",
        setting=setting,
        numbers={**{u.name: {"primary": _interval(u.primary), "control": _interval(u.control),
                             **{k: _interval(v) for k, v in u.secondary.items()}} for u in units},
                 **({"stand-in distance": stand_in_distance(table, copies)} if copies else {})},
        copy_units=copies_of(copies, lambda t, rg: core_units(t, n_layers)))


# -- P2-C1-peak-size ----------------------------------------------------------------------------
def peak_size_units(table: pd.DataFrame) -> list[claims.Unit]:
    """One unit per set: log10 of the largest neighbour-average degradation among L8–11."""
    units = []
    for s in _sets(table):
        rows = _rows(table, s, "neighbour_average", PAPER_CORE)
        est = log10_estimate(layer_estimate(rows, np.max, need=len(PAPER_CORE)))
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else
            "L8–11 not all in the map, or none of them degrades perplexity (no logarithm)"))
    return units


def assess_peak_size(table: pd.DataFrame, setting: str, *,
                     copies: Copies | None = None) -> claims.Claim:
    """P2-C1-peak-size (+63,419 % at L11) decided on `peak_size_units`; the wording names the
    layer of L8–11 that degrades most in each set. `copies` as in `assess`."""
    shown = {}
    for s in _sets(table):
        rows = _rows(table, s, "neighbour_average", PAPER_CORE)
        if len(rows):
            top = rows.loc[rows["deg"].idxmax()]
            shown[s] = (int(top["layer"]), layer_estimate(rows, np.max))
    return _decided(
        "P2-C1-peak-size", peak_size_units(table),
        ours="; ".join(f"{s}: L{l} {_text(e)}" for s, (l, e) in shown.items()),
        setting=setting,
        numbers={s: {"layer": l, "deg": _interval(e)} for s, (l, e) in shown.items()},
        copy_units=copies_of(copies, lambda t, rg: peak_size_units(t)))


# -- P2-C1-anti-layers --------------------------------------------------------------------------
def anti_estimate(table: pd.DataFrame, set_name: str, method: str) -> claims.Estimate | None:
    """The larger of L14's and L17's degradation under one operation (both must be below 0)."""
    return layer_estimate(_rows(table, set_name, method, PAPER_ANTI), np.max,
                          need=len(PAPER_ANTI))


def anti_units(table: pd.DataFrame, control: pd.DataFrame | None = None) -> list[claims.Unit]:
    """P2-C1-anti-layers, one unit per set: `anti_estimate` under neighbour averaging, the
    untrained twin's as control (None: not measured), and the same under removal as a secondary."""
    units = []
    for s in _sets(table):
        est = anti_estimate(table, s, "neighbour_average")
        removal = anti_estimate(table, s, "skip")
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else "L14 and L17 are not both in the map",
            control=None if control is None else anti_estimate(control, s, "neighbour_average"),
            secondary={} if removal is None else {"under removal": removal}))
    return units


def assess_anti(table: pd.DataFrame, setting: str,
                control: pd.DataFrame | None = None, *,
                copies: Copies | None = None) -> claims.Claim:
    """P2-C1-anti-layers decided on `anti_units`; the wording gives L14's and L17's degradation
    and CI under both operations in every set. `control` and `copies` as in `assess`."""
    df = table[table["method"].isin(CORE_OPERATIONS) & table["layer"].isin(PAPER_ANTI)]
    units = anti_units(table, control)
    return _decided(
        "P2-C1-anti-layers", units,
        ours="; ".join(f"L{int(r['layer'])} {r['set']} {r['method'].replace('_', ' ')} "
                       f"{r['deg']:+.1f} % [{r['lo']:+.1f}, {r['hi']:+.1f}]"
                       for _, r in df.sort_values(["method", "layer", "set"]).iterrows())
             + "".join(f"; untrained twin {u.name} {_text(u.control, '+.1f')}"
                       for u in units if u.control is not None),
        setting=setting,
        numbers={u.name: {"primary": _interval(u.primary), "control": _interval(u.control),
                          **{k: _interval(v) for k, v in u.secondary.items()}} for u in units},
        copy_units=copies_of(copies, lambda t, rg: anti_units(t)))


# -- P2-C1-io-layers ----------------------------------------------------------------------------
def io_layers(n_layers: int) -> tuple[list[int], list[int]]:
    """The summary's input (L1–2) and output (L23–28) layers."""
    named = [int(l) for l in paper.P2_IO_LAYERS.value]
    return [l for l in named if l < n_layers / 2], [l for l in named if l >= n_layers / 2]


def io_estimate(table: pd.DataFrame, set_name: str, n_layers: int) -> claims.Estimate | None:
    """min(both input layers, the fourth-largest output layer) under neighbour averaging."""
    inputs, outputs = io_layers(n_layers)
    a = layer_estimate(_rows(table, set_name, "neighbour_average", inputs), np.min,
                       need=len(inputs))
    b = layer_estimate(_rows(table, set_name, "neighbour_average", outputs), kth_largest(4),
                       need=len(outputs))
    if a is None or b is None:
        return None
    return claims.Estimate(min(a.point, b.point), min(a.lo, b.lo), min(a.hi, b.hi))


def the_rest(n_layers: int) -> list[int]:
    """Inner layers that are neither the named core nor the named I/O layers."""
    inputs, outputs = io_layers(n_layers)
    return [l for l in range(1, n_layers - 1) if l not in {*PAPER_CORE, *inputs, *outputs}]


def io_units(table: pd.DataFrame, n_layers: int,
             control: pd.DataFrame | None = None) -> list[claims.Unit]:
    """P2-C1-io-layers, one unit per set: `io_estimate`, the untrained twin's as control, and
    as a secondary the largest degradation of `the_rest` (connective: below `CONNECTIVE_MAX`)."""
    units = []
    for s in _sets(table):
        est = io_estimate(table, s, n_layers)
        rest = layer_estimate(_rows(table, s, "neighbour_average", the_rest(n_layers)), np.max)
        units.append(claims.Unit(
            name=s, primary=est,
            precondition=None if est is not None else "L1–2 and L23–28 are not all in the map",
            control=None if control is None else io_estimate(control, s, n_layers),
            secondary={} if rest is None else {"the rest connective": rest}))
    return units


def assess_io(table: pd.DataFrame, setting: str, n_layers: int,
              control: pd.DataFrame | None = None, *,
              copies: Copies | None = None) -> claims.Claim:
    """P2-C1-io-layers decided on `io_units`; the wording lists, per set, the layers the class
    rule calls I/O and any other layer at or above `CONNECTIVE_MAX` (30 %). `control` and
    `copies` as in `assess`."""
    nb_in = inner(table[table["method"] == "neighbour_average"], n_layers)
    io = {s: sorted(df.loc[df["class"] == "I/O", "layer"].astype(int))
          for s, df in nb_in.groupby("set")}
    rest = set(the_rest(n_layers))
    above = {s: sorted(int(l) for l in df.loc[df["layer"].isin(rest)
                                              & (df["deg"] >= CONNECTIVE_MAX), "layer"])
             for s, df in nb_in.groupby("set")}
    units = io_units(table, n_layers, control)
    return _decided(
        "P2-C1-io-layers", units,
        ours="; ".join(f"{u.name}: I/O {io.get(u.name, [])}, weakest named I/O "
                       f"{_text(u.primary, '+,.1f')}; other layers ≥ {CONNECTIVE_MAX:g} %: "
                       f"{above.get(u.name) or 'none'}"
                       + (f"; untrained twin {_text(u.control, '+,.1f')}"
                          if u.control is not None else "") for u in units),
        setting=setting,
        numbers={"io": io, "rest_above_connective": above,
                 **{u.name: {"primary": _interval(u.primary), "control": _interval(u.control),
                             **{k: _interval(v) for k, v in u.secondary.items()}}
                    for u in units}},
        copy_units=copies_of(copies, lambda t, rg: io_units(t, n_layers)))


def assess(result: ImportanceResult, setting: str, n_layers: int, *,
           copies: Copies | None = None) -> list[claims.Claim]:
    """Verdicts on C1: the range, core and peak, anti-layers, the I/O and connective classes.
    The untrained twin's map (`result.untrained`, when `run` was asked for it) is the layer
    claims' negative control; without it they read 'control: not measured' where it matters.
    `copies` (`precision.copy_maps`: the map on each dithered copy of the 4-bit stand-in): a
    unit whose primary some copy carries across its band's edge is not testable (stand-in
    precision, VERDICTS.md §4 [rev])."""
    found = [assess_range(result.ranges, setting, copies=copies)]
    if n_layers != PAPER_LAYERS:  # the claims name layers of SmolLM2's 30-layer stack
        return found + [not_testable(cid, setting, n_layers) for cid in LAYER_CLAIMS]
    t, control = result.table, result.untrained
    return found + [assess_core(t, setting, n_layers, control, copies=copies),
                    assess_peak_size(t, setting, copies=copies),
                    assess_anti(t, setting, control, copies=copies),
                    assess_io(t, setting, n_layers, control, copies=copies)]


def not_testable(cid: str, setting: str, n_layers: int) -> claims.Claim:
    """A layer-naming claim on a model without SmolLM2's 30 layers (the smoke model): its
    precondition fails."""
    unit = claims.Unit(name="model", primary=None,
                       precondition=f"the model has {n_layers} layers; the claim names layers of "
                                    f"SmolLM2-135M's {PAPER_LAYERS}")
    return _decided(cid, [unit], ours=f"model has {n_layers} layers", setting=setting)
