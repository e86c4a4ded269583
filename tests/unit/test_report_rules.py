"""One rulebook: each row of `layerlab report` that asks a book claim with the book chapter's own
unit-building function must give the book's answer on the same evidence. For every such row, a
synthetic input is decided both ways (the chapter's function and `claims.decide` on the book's
declaration; the report's row from the same numbers as report.json stores them) and the two
must agree — on an input that passes, one that fails and one whose control passes too. The rows
whose stored evidence predates the book's control get their own tests (they cannot decide a
passing primary)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from layerlab import claims
from layerlab.anatomy import deltas, importance, strategies
from layerlab.anatomy.declarations import DECLARATIONS as P2
from layerlab.depth import clusters
from layerlab.report import diagnostics, rules
from layerlab.report.build import finite_or_null

R, P, N = (rules.SIGNATURE[v] for v in (claims.REPRODUCED, claims.PARTLY, claims.NOT_REPRODUCED))
T, D = rules.SIGNATURE[claims.NOT_TESTABLE], rules.SIGNATURE[claims.NOT_DIAGNOSTIC]


def _as_stored(obj):
    """What report.json gives back: plain JSON, NaN as null."""
    return json.loads(json.dumps(finite_or_null(obj)))


def _word(verdict: str) -> str:
    return rules.SIGNATURE[claims.Verdict(verdict)]


# -- P1-B1: chapter 03's unit (`clusters.primary_unit`) -------------------------------------------
L = 12  # blocks


def _profiles(minority: str, windows: int = 40, per_window: int = 250,
              minority_per_window: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """A token-profile sample as `hidden.collect` keeps it: the bulk's progress rises evenly
    (s_l = l/L), the minority per window either stops early (s = 1 from block 2 on: the depth
    order tells it apart) or is the bulk's profile scaled 50× (like SmolLM2's position-0 tokens:
    its values tell it apart whatever their order)."""
    rng = np.random.default_rng(seed)
    n = windows * per_window
    depth = np.arange(L + 1) / L
    progress = np.tile(depth, (n, 1)) + rng.normal(0, 0.005, (n, L + 1))
    sequence = np.repeat(np.arange(windows), per_window)
    position = np.tile(np.arange(per_window), windows)
    odd = position < minority_per_window
    if minority == "early":
        progress[odd] = np.minimum(1.0, depth / (2 / L)) + rng.normal(0, 0.005, (odd.sum(), L + 1))
    elif minority == "scaled":
        progress[odd] = 50 * progress[odd]
    theta = np.abs(np.diff(progress, axis=1)) + 0.1
    return {"progress": progress, "theta": theta, "norms": np.ones((n, L + 1)),
            "position": position, "token_id": np.zeros(n, dtype=int),
            "token_text": np.array(["x"] * n), "sequence": sequence, "rel_update": theta}


def _book_b1(arrays) -> str:
    table = clusters.fractions({"m": arrays})
    return clusters.assess(table, "m", "synthetic")[0].verdict


def _report_b1(arrays) -> str:
    trained = _as_stored(diagnostics.bulk_evidence(arrays, seed=0))
    twin = _as_stored(diagnostics.bulk_evidence(_profiles("none", seed=1), seed=0))
    return rules.bulk_fraction(trained, twin)["verdict"]


@pytest.mark.parametrize("minority, share, expected", [
    ("early", 1, claims.REPRODUCED),  # ≈ 0.4 % that stop early, an even bulk
    ("scaled", 1, claims.NOT_DIAGNOSTIC),  # the shuffled layers separate it too
    ("early", 50, claims.NOT_REPRODUCED),  # a fifth of the tokens: no 99.6 % bulk
])
def test_the_bulk_fraction_row_is_chapter_03s_rule(minority, share, expected):
    arrays = _profiles(minority, minority_per_window=share)
    assert _book_b1(arrays) == expected
    assert _report_b1(arrays) == _word(expected)


def _stored_before_windows(frac: float) -> dict:
    """A bulk record as reports stored it before they kept chapter 03's evidence."""
    return {"all": {"bulk_fraction": frac, "tokens": 4000, "share_at_position_0": 1.0,
                    "median_progress_at_quarter_depth_minority": 1.0,
                    "median_progress_at_quarter_depth_bulk": 0.25},
            "without_position0": {"bulk_fraction": frac}}


def test_a_bulk_fraction_stored_without_the_books_control_decides_only_outside_the_band():
    twin = _stored_before_windows(0.5)
    inside = rules.bulk_fraction(_stored_before_windows(0.996), twin)
    assert inside["verdict"] == T and inside["decided by"] == "control: not measured"
    assert "Not the book's rule" in inside[rules.VS_BOOK]
    assert rules.bulk_fraction(_stored_before_windows(0.80), twin)["verdict"] == N
    # the twin is shown, never deciding: a twin in band changes nothing
    assert rules.bulk_fraction(_stored_before_windows(0.996), _stored_before_windows(0.996))[
        "verdict"] == T


# -- P2-C1: chapter 05's estimates on a 30-layer map, where both questions coincide -------------
def _map(values: dict[str, dict[int, float]], width: float = 0.2) -> pd.DataFrame:
    """An importance table (set "text") from point degradations, each interval ± width × |deg|
    (at least ± 1 point)."""
    return pd.DataFrame([{"set": rules.SET, "method": m, "layer": l, "deg": d,
                          "lo": d - max(1.0, width * abs(d)), "hi": d + max(1.0, width * abs(d))}
                         for m, layers in values.items() for l, d in layers.items()])


def _layers(**named: float) -> dict[int, float]:
    """30 layers at 10 % (L1 and L28, I/O, at 50 %), some set by name: _layers(L11=500)."""
    out = {l: 10.0 for l in range(30)} | {1: 50.0, 28: 50.0}
    return out | {int(k[1:]): v for k, v in named.items()}


CORE = {"L8": 300.0, "L9": 300.0, "L10": 300.0, "L11": 500.0}
ANTI = {"L14": -5.0, "L17": -5.0}


def _book_decision(claim_id: str, units) -> str:
    return claims.decide(P2[claim_id], units).verdict


@pytest.mark.parametrize("averaging, removal, twin, expected", [
    (CORE, CORE, {}, claims.REPRODUCED),
    (CORE, {}, {}, claims.PARTLY),  # not critical under removal
    ({}, {}, {}, claims.NOT_REPRODUCED),
    (CORE, CORE, CORE, claims.NOT_DIAGNOSTIC),  # the untrained twin has the core too
])
def test_the_core_row_agrees_with_chapter_05_on_a_30_layer_map(averaging, removal, twin,
                                                              expected):
    table = _map({"neighbour_average": _layers(**averaging), "skip": _layers(**removal)})
    control = _map({"neighbour_average": _layers(**twin), "skip": _layers(**twin)})
    book = _book_decision("P2-C1-core", importance.core_units(table, 30, control))
    assert book == expected
    assert rules.critical_core(table, 30, control)["verdict"] == _word(book)


@pytest.mark.parametrize("averaging, removal, twin, expected", [
    (ANTI, ANTI, {}, claims.REPRODUCED),
    (ANTI, {}, {}, claims.PARTLY),  # removing them costs perplexity
    ({}, {}, {}, claims.NOT_REPRODUCED),
    (ANTI, ANTI, ANTI, claims.NOT_DIAGNOSTIC),
])
def test_the_anti_layer_row_agrees_with_chapter_05_on_a_30_layer_map(averaging, removal, twin,
                                                                    expected):
    table = _map({"neighbour_average": _layers(**averaging), "skip": _layers(**removal)})
    control = _map({"neighbour_average": _layers(**twin)})
    book = _book_decision("P2-C1-anti-layers", importance.anti_units(table, control))
    assert book == expected
    assert rules.anti_layers(table, 30, control)["verdict"] == _word(book)


def test_a_statistic_of_several_layers_spans_their_ends_as_the_book_takes_it():
    """The report's k-th largest (and smallest) are chapter 05's `layer_estimate`: the statistic
    of the layers' lower ends to that of their upper ends, not one layer's interval. Here the
    lowest layer's own interval lies above 0 but another layer's reaches below: undecided."""
    table = pd.DataFrame([
        {"set": rules.SET, "method": m, "layer": l, "deg": d, "lo": lo, "hi": hi}
        for m in ("neighbour_average", "skip")
        for l, (d, lo, hi) in {0: (9, 8, 10), 1: (1.0, 0.5, 1.5), 2: (3.0, -1.0, 7.0),
                               3: (9, 8, 10)}.items()])
    row = rules.anti_layers(table, 4, table.assign(lo=-5.0, hi=-1.0))
    assert row["verdict"] == T and "straddles" in row["decided by"]


# -- P2-C3: chapter 08's element-wise units -------------------------------------------------------
STRUCTURED = {"AR(1) ρ = 0.9": -0.05, "random walk": 0.0, "smooth drift": 0.8}


def _per_pair(real: dict[str, float], iid: dict[str, float], pairs: int = 8) -> pd.DataFrame:
    """Chapter 08's per-pair table: every pair of a type at its mean, the structured positive
    controls at their closed forms."""
    rows = [{"type": t, "stack": stack, "pair": i, "delta_corr": v}
            for stack, values in (("real", real), (deltas.IID, iid))
            for t, v in values.items() for i in range(pairs)]
    rows += [{"type": "synthetic", "stack": s, "pair": i, "delta_corr": v}
             for s, v in STRUCTURED.items() for i in range(pairs)]
    return pd.DataFrame(rows)


def _weights(real: dict[str, float], iid: dict[str, float]) -> list[dict]:
    """The report's stored weight rows (means only) for the same types."""
    return _as_stored([{"type": t, "is_norm": t.endswith("norm"), "delta_real": real[t],
                        "delta_iid": iid[t], "delta_shuffled": real[t], "delta_untrained": -0.5}
                       for t in real])


NO_INVARIANT = pd.DataFrame(columns=["measure", "type", "real", "shuffled order"])


@pytest.mark.parametrize("real, iid, expected", [
    ({"q": -0.5, "k": -0.5}, {"q": -0.1, "k": -0.1}, claims.REPRODUCED),
    ({"q": -0.5, "k": -0.5}, {"q": -0.5, "k": -0.5}, claims.NOT_DIAGNOSTIC),
    ({"q": 0.0, "k": 0.1}, {"q": -0.5, "k": -0.5}, claims.NOT_REPRODUCED),
    # a norm constant across layers is not testable; the other units decide by the book's rule
    ({"q": -0.5, "k": -0.5, "attn_norm": float("nan")},
     {"q": -0.5, "k": -0.5, "attn_norm": -0.5}, claims.NOT_DIAGNOSTIC),
])
def test_the_oscillation_row_is_chapter_08s_element_wise_rule(real, iid, expected):
    book = _book_decision("P2-C3-oscillation",
                          deltas.oscillation_units(_per_pair(real, iid), NO_INVARIANT))
    assert book == expected
    assert rules.delta_correlation(_weights(real, iid))["verdict"] == _word(book)


# -- P2-C4: chapter 06's units ----------------------------------------------------------------
def _strategy_rows(full: float, matched: float) -> pd.DataFrame:
    """The report's stored runs on S: the four others at full strength, three at ×0.9's size."""
    rows = [{"set": rules.SET, "strategy": s, "matched": "full", "deg": full, "lo": 0.9 * full,
             "hi": 1.1 * full} for s in strategies.OTHERS]
    rows += [{"set": rules.SET, "strategy": s, "matched": "size joint", "deg": matched,
              "lo": matched - 2, "hi": matched + 2} for s in strategies.DIRECTIONS if s != "zero"]
    return pd.DataFrame(rows)


def _sweep(deg: float) -> pd.DataFrame:
    return pd.DataFrame([{"alpha": 0.9, "deg": deg, "lo": deg - 2, "hi": deg + 2}])


COHERENT = pd.DataFrame([{"prompt": p, "condition": c, "distinct_2": 0.9 + 0.01 * p}
                         for p in range(5) for c in ("unedited", f"{strategies.BENIGN} on S")])


@pytest.mark.parametrize("scale, full, matched, expected", [
    (5.0, 1e5, 500.0, claims.REPRODUCED),
    (5.0, 1e5, 8.0, claims.NOT_DIAGNOSTIC),  # the same size of edit is benign whatever it is
    (60.0, 1e5, 500.0, claims.NOT_REPRODUCED),
    (5.0, 50.0, 500.0, claims.PARTLY),  # the others at full strength are benign too
])
def test_the_scaling_row_is_chapter_06s_rule(scale, full, matched, expected):
    others = _as_stored(_strategy_rows(full, matched).to_dict("records"))
    joint = pd.concat([pd.DataFrame(others).query("matched == 'full'"),
                       pd.DataFrame([{"set": rules.SET, "strategy": strategies.BENIGN,
                                      "deg": scale, "lo": scale - 2, "hi": scale + 2}])])
    book = _book_decision("P2-C4-only-scaling", strategies.only_scaling_units(
        joint, COHERENT, pd.DataFrame(others)))
    assert book == expected
    twin = _sweep(0.0)
    assert rules.scaling(_sweep(scale), [3], twin, pd.DataFrame(others))["verdict"] == _word(book)


def test_a_scaling_row_stored_without_the_books_control_decides_only_a_harmful_scaling():
    benign = rules.scaling(_sweep(5.0), [3], _sweep(0.0))
    assert benign["verdict"] == T and benign["decided by"] == "control: not measured"
    assert "Not the book's rule" in benign[rules.VS_BOOK]
    assert rules.scaling(_sweep(60.0), [3], _sweep(0.0))["verdict"] == N
    # an empty table of runs is no control either
    assert rules.scaling(_sweep(5.0), [3], _sweep(0.0), pd.DataFrame())["verdict"] == T


# -- every row says how it stands to the book ----------------------------------------------------
def test_every_row_says_why_its_answer_can_differ_from_the_books():
    assert set(rules.WHY) == set(rules.DECLARATIONS)
    row = rules.critical_core(_map({"neighbour_average": _layers(**CORE),
                                    "skip": _layers(**CORE)}), 30)
    assert row[rules.VS_BOOK] == rules.WHY["P2-C1-core"]
    assert "stand-in" in row[rules.VS_BOOK]  # the book's precondition this row does not ask


def test_chapter_12_lists_each_reason_once_with_the_models_it_applies_to():
    from layerlab.report import chapter

    def report(bulk: float) -> dict:
        return {"summary": [rules.bulk_fraction(_stored_before_windows(bulk),
                                                _stored_before_windows(0.5)),
                            rules.scaling(_sweep(5.0), [3], _sweep(0.0),
                                          _strategy_rows(1e5, 500.0))]}

    table = chapter.against_book({"a": report(0.996), "b": report(0.8)})
    assert list(table.index) == ["P1-B1-bulk-fraction", "P2-C4-only-scaling"]
    assert table.loc["P1-B1-bulk-fraction", "models"] == "a, b"  # one stored-before reason
    assert table.loc["P2-C4-only-scaling", rules.VS_BOOK] == rules.WHY["P2-C4-only-scaling"]
