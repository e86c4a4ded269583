"""Every P1 verdict rule with a synthetic input that passes and one that fails (issue 14), and
one producing function per claim id."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from layerlab.claims import (
    NOT_DIAGNOSTIC,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
)
from layerlab.depth import clusters, geometry, lens, scaling, toy, tracing


# --- shared helpers -----------------------------------------------------------------------------
# --- chapter 01 -------------------------------------------------------------------------------
def _boot(center: float, sd: float, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"alpha_l": rng.normal(center, sd, n), "converged": True})


@pytest.mark.parametrize("center,sd,verdict", [(1.2, 0.05, REPRODUCED), (1.2, 0.4, NOT_TESTABLE),
                                               (2.5, 0.05, NOT_REPRODUCED)])
def test_c4_headline_equivalence(center, sd, verdict):
    fit = type("F", (), {"alpha_l": center})()
    scan = pd.DataFrame({"recipe": "converged", "cut": [40], "alpha_l": [center]})
    c = scaling.assess_headline(fit, _boot(center, sd), _boot(center, sd), scan, fit, "t")
    assert c.verdict == verdict


# --- chapter 02 -------------------------------------------------------------------------------
def _table(stat: str, trained: float, untrained: float, width: float, layers: int = 12):
    return pd.DataFrame([{"model": "m", "statistic": stat, "layers": layers, "family": False,
                          "trained": trained, "trained_lo": trained - width,
                          "trained_hi": trained + width, "untrained": untrained,
                          "untrained_lo": untrained - width, "untrained_hi": untrained + width,
                          "difference": trained - untrained,
                          "diff_lo": trained - untrained - 2 * width,
                          "diff_hi": trained - untrained + 2 * width}])


def test_a1_edges_pass_fail_and_not_diagnostic():
    assert geometry.assess_edges(_table("edge_ratio", 3.0, 0.8, 0.1), "t").verdict == REPRODUCED
    assert geometry.assess_edges(_table("edge_ratio", 1.2, 0.8, 0.1), "t").verdict == NOT_REPRODUCED
    assert geometry.assess_edges(_table("edge_ratio", 3.0, 2.9, 0.1), "t").verdict == NOT_DIAGNOSTIC


def _slopes(t: float, u: float, se: float = 0.05):
    d = t - u
    return {"trained": {"slope": t, "lo": t - 2 * se, "hi": t + 2 * se, "se": se, "n": 10},
            "untrained": {"slope": u, "lo": u - 2 * se, "hi": u + 2 * se, "se": se, "n": 10},
            "difference": {"slope": d, "lo": d - 3 * se, "hi": d + 3 * se, "se": se}}


def test_a2_inverse_depth_rules():
    mono = {"monotone": True}
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.3), mono, "t").verdict == REPRODUCED
    assert geometry.assess_inverse_depth(_slopes(-0.2, -0.3, 0.01), mono, "t").verdict == NOT_REPRODUCED
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.95), mono, "t").verdict == NOT_DIAGNOSTIC
    # a family whose loss does not fall with depth cannot show what depth buys
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.3), {"monotone": False},
                                         "t").verdict == NOT_TESTABLE


def test_a3_weak_correlation_rules():
    assert geometry.assess_weak_correlation(_table("middle_theta_dh", 1.5, 0.5, 0.05),
                                            _slopes(0.0, -1.0), "t").verdict == REPRODUCED
    assert geometry.assess_weak_correlation(_table("middle_theta_dh", 0.4, 0.2, 0.05),
                                            _slopes(-1.0, -1.0), "t").verdict == NOT_REPRODUCED
    # the issue's finding: untrained stacks have θ(Δh) ≈ 1.55 rad and a flat slope
    assert geometry.assess_weak_correlation(_table("middle_theta_dh", 1.3, 1.55, 0.05),
                                            _slopes(0.0, 0.0), "t").verdict == NOT_DIAGNOSTIC


def test_family_monotone():
    ok = pd.DataFrame({"depth": [2, 2, 4, 4, 8, 8], "val_loss": [2.0, 2.02, 1.9, 1.92, 1.8, 1.82]})
    bad = ok.assign(val_loss=[2.0, 2.02, 1.9, 1.92, 1.97, 1.99])  # a step up beyond the noise
    noisy = ok.assign(val_loss=[2.0, 2.02, 1.9, 1.92, 1.905, 1.925])  # a step up within it
    flat = ok.assign(val_loss=[2.0, 2.02, 1.99, 2.01, 1.98, 2.0])  # deepest not clearly better
    assert geometry.family_monotone(ok)["monotone"] and geometry.family_monotone(ok)["strict"]
    assert not geometry.family_monotone(bad)["monotone"]
    m = geometry.family_monotone(noisy)
    assert m["monotone"] and not m["strict"]
    assert not geometry.family_monotone(flat)["monotone"]


def test_a4_lens_rule():
    assert lens.lens_rule(0.01, 0.5) == REPRODUCED
    assert lens.lens_rule(0.01, 0.95) == PARTLY
    assert lens.lens_rule(0.4, 0.95) == NOT_REPRODUCED
    row = dict(model="m", layers=12, early_share=0.01, drop_by_middle=0.5,
               untrained_early_share=0.9, untrained_drop_by_middle=float("nan"))
    assert lens.assess(pd.DataFrame([row]), "t").verdict == REPRODUCED
    same = {**row, "untrained_early_share": 0.01, "untrained_drop_by_middle": 0.5}
    assert lens.assess(pd.DataFrame([same]), "t").verdict == NOT_DIAGNOSTIC


def _trace(name: str, p: float) -> dict:
    return {"subject": "The Space Needle", "p_clean": p, "p_corrupt": 0.01}


def test_e1_tracing_rule():
    good = {"EleutherAI/pythia-12b": [_trace("12b", 0.36)], "EleutherAI/pythia-70m": [_trace("", 0.01)]}
    assert tracing.assess(good, "t").verdict == REPRODUCED
    bad = {**good, "EleutherAI/pythia-12b": [_trace("12b", 0.05)]}
    assert tracing.assess(bad, "t").verdict == NOT_REPRODUCED
    assert tracing.assess({"smollm2": [_trace("", 0.2)]}, "t").verdict == NOT_TESTABLE


# --- chapter 03 -------------------------------------------------------------------------------
def _bulk(frac: float, n: int = 100_000) -> pd.DataFrame:
    return pd.DataFrame([{"model": "m", "features": "progress", "rule": "kmeans",
                          "bulk_fraction": frac, "tokens": n}])


def _report(share0: float, minority: float, bulk: float) -> dict:
    return {"share_at_position_0": share0, "median_progress_at_quarter_depth_minority": minority,
            "median_progress_at_quarter_depth_bulk": bulk}


def test_b1_number_and_meaning():
    early = _report(0.1, 0.9, 0.2)
    sinks = _report(0.94, 0.2, 0.2)
    overshoot = _report(0.1, 4.7, 0.1)  # far past the final state: not an early stopper
    assert clusters.assess(_bulk(0.996), "m", "t", overshoot)[0].verdict == PARTLY
    assert clusters.assess(_bulk(0.996), "m", "t", early)[0].verdict == REPRODUCED
    assert clusters.assess(_bulk(0.996), "m", "t", sinks)[0].verdict == PARTLY
    assert clusters.assess(_bulk(0.90), "m", "t", sinks)[0].verdict == NOT_REPRODUCED
    c = clusters.assess(_bulk(0.996), "m", "t", sinks)[0]
    assert c.numbers["minority_position0_share"] == pytest.approx(0.94)


# --- chapter 04 -------------------------------------------------------------------------------
def _alphas(rows: list[tuple]) -> pd.DataFrame:
    """(sweep, teacher, objective, T, alpha history, deep slope)."""
    out = []
    for sweep, teacher, objective, T, history, deep in rows:
        for i, a in enumerate(history):
            out.append({"sweep": sweep, "teacher": teacher, "objective": objective,
                        "temperature": T, "seed": 0, "block": "euler", "step": i + 1,
                        "alpha": a, "alpha_se": 0.0, "alpha_common": a, "deep_slope": deep})
    return pd.DataFrame(out)


def test_d1_independent_teacher_rules():
    ok = _alphas([("a", "independent", "kl", 1.0, [0.9, 1.0], 1.0)])
    assert toy.assess_independent(ok, "t").verdict == REPRODUCED
    still = _alphas([("a", "independent", "kl", 1.0, [0.4, 0.5], 0.6)])  # moving up to the band
    assert toy.assess_independent(still, "t").verdict == NOT_TESTABLE
    stuck = _alphas([("a", "independent", "kl", 1.0, [0.5, 0.5], 0.6)])
    assert toy.assess_independent(stuck, "t").verdict == NOT_REPRODUCED
    away = _alphas([("a", "independent", "kl", 1.0, [0.6, 0.5], 0.6)])  # moving away
    assert toy.assess_independent(away, "t").verdict == NOT_REPRODUCED
    mixed = _alphas([("a", "independent", "kl", 1.0, [0.9, 1.0], 1.0),
                     ("b", "independent", "kl", 0.1, [0.4, 0.5], 0.6)])
    c = toy.assess_independent(mixed, "t")
    assert c.verdict == PARTLY and c.numbers["excused"] == ["b"]


def test_convergence_excuses_only_the_failing_sweep():
    # sweep b rises, but it is the passing one: a's failure stands
    rows = _alphas([("a", "independent", "kl", 1.0, [0.5, 0.5], 0.5),
                    ("b", "independent", "kl", 0.1, [0.8, 1.0], 1.0)])
    assert toy.assess_independent(rows, "t").verdict == PARTLY
    assert toy.assess_independent(rows, "t").numbers["excused"] == []


def test_d2_tied_steep_rules():
    ind = ("i", "independent", "kl", 1.0, [1.0, 1.0], 1.0)
    assert toy.assess_tied_steep(_alphas([ind, ("t", "tied", "kl", 1.0, [2.8, 3.0], 2.5)]),
                                 "t").verdict == REPRODUCED
    assert toy.assess_tied_steep(_alphas([ind, ("t", "tied", "kl", 1.0, [1.3, 1.2], 1.0)]),
                                 "t").verdict == NOT_REPRODUCED
    assert toy.assess_tied_steep(_alphas([ind, ("t", "tied", "kl", 1.0, [1.0, 1.3], 1.0)]),
                                 "t").verdict == NOT_TESTABLE


def test_d3_and_d4_rules():
    assert toy.assess_tied_cold(_alphas([("t", "tied", "kl", 0.01, [1.0, 1.0], 1.0)]),
                                "t").verdict == REPRODUCED
    assert toy.assess_tied_cold(_alphas([("t", "tied", "kl", 0.01, [2.2, 2.2], 2.0)]),
                                "t").verdict == NOT_REPRODUCED
    good = _alphas([("i", "independent", "mse", 1.0, [1.0, 1.0], 1.0),
                    ("t", "tied", "mse", 1.0, [2.0, 2.0], 2.0)])
    assert toy.assess_mse(good, "t").verdict == REPRODUCED
    flipped = _alphas([("i", "independent", "mse", 1.0, [2.0, 2.0], 1.0),
                       ("t", "tied", "mse", 1.0, [1.0, 1.0], 1.0)])
    assert toy.assess_mse(flipped, "t").verdict == NOT_REPRODUCED


def _sig(ind: float, tied: float) -> pd.DataFrame:
    return pd.DataFrame([{"network": "student ℓ=8", "teacher": "independent", "middle_theta_dh": ind},
                         {"network": "student ℓ=8", "teacher": "tied", "middle_theta_dh": tied}])


def test_d5_signature_rules():
    low_init = pd.DataFrame({"middle_theta_dh": [0.5]})
    high_init = pd.DataFrame({"middle_theta_dh": [1.56]})
    assert toy.assess_signatures(_sig(1.5, 0.4), low_init, "t").verdict == REPRODUCED
    assert toy.assess_signatures(_sig(0.8, 0.4), low_init, "t").verdict == NOT_REPRODUCED
    assert toy.assess_signatures(_sig(1.5, 0.4), high_init, "t").verdict == NOT_DIAGNOSTIC
    # the positive control fails: tied students as uncorrelated as independent ones
    assert toy.assess_signatures(_sig(1.5, 1.41), high_init, "t").verdict == NOT_TESTABLE


def test_local_slopes_and_converging():
    s = toy.local_slopes([2, 4, 8], [1.0, 0.5, 0.125])
    assert [round(x["slope"], 6) for x in s] == [1.0, 2.0]
    assert toy.converging([0.4, 0.5], (0.7, 1.3)) and not toy.converging([0.5, 0.4], (0.7, 1.3))
    assert not toy.converging([0.9, 1.0], (0.7, 1.3))  # inside the band: nothing to excuse


# --- one declaration per claim id -----------------------------------------------------------
def test_each_claim_id_is_declared_once():
    from layerlab import claims as c

    with pytest.raises(ValueError, match="declared twice"):
        c.index([_decl("P1-X"), _decl("P1-X")])
    assert list(c.index([_decl("P1-X"), _decl("P1-Y")])) == ["P1-X", "P1-Y"]


def _decl(cid: str):
    from layerlab.claims import Band, Declaration, Kind

    return Declaration(id=cid, paper="P1", chapter="01_depth_scaling_law", statement="s",
                       source="q", source_from="abstract", paper_value="v", kind=Kind.NUMBER,
                       primary="p", unit="u", band=Band(lo=0, hi=1, reason="r"),
                       precondition="c", control="", scope="s", finding="f")
