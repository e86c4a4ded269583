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
    Estimate,
)
from layerlab.depth import clusters, geometry, lens, scaling, toy, tracing


# --- shared helpers -----------------------------------------------------------------------------
# --- chapter 01 -------------------------------------------------------------------------------
def _boot(center: float, sd: float, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"alpha_l": rng.normal(center, sd, n), "converged": True})


@pytest.mark.parametrize("center,sd,verdict", [
    (1.2, 0.05, REPRODUCED),
    (1.2, 0.4, REPRODUCED),  # same data, a spread as wide as theirs: the estimates still agree
    (1.6, 0.4, NOT_TESTABLE),  # our point outside 1.2 ± 0.3, our interval reaching into it
    (2.5, 0.05, NOT_REPRODUCED)])
def test_c4_headline_compares_estimates(center, sd, verdict):
    fit = type("F", (), {"alpha_l": center})()
    scan = pd.DataFrame({"recipe": "converged", "cut": [40], "alpha_l": [center]})
    c = scaling.assess_headline(fit, _boot(center, sd), _boot(center, sd), scan, fit, "t")
    assert c.verdict == verdict


@pytest.mark.parametrize("center,sd,below", [(1.2, 0.3, "pass"), (1.9, 0.3, "undecided")])
def test_c5_is_also_reported_one_sided(center, sd, below):
    """α_ℓ ≈ 1 rather than ≥ 2: beside the contrast's band, is α_ℓ below 2 (one-sided 95 %)?"""
    fit = type("F", (), {"alpha_l": center})()
    c = scaling.assess_ensemble(_boot(center, sd), _boot(center, sd), "t", fit)
    upper = c.numbers["one_sided_upper"]
    assert (upper < 2.0) == (below == "pass")
    assert "α_ℓ < 2 in" in c.ours and 0 <= c.numbers["share_below_2"] <= 1


# --- chapter 02 -------------------------------------------------------------------------------
def _table(stat: str, trained: float, untrained: float, width: float, layers: int = 12):
    return pd.DataFrame([{"model": "m", "statistic": stat, "layers": layers, "family": False,
                          "trained": trained, "trained_lo": trained - width,
                          "trained_hi": trained + width, "untrained": untrained,
                          "untrained_lo": untrained - width, "untrained_hi": untrained + width,
                          "difference": trained - untrained,
                          "diff_lo": trained - untrained - 2 * width,
                          "diff_hi": trained - untrained + 2 * width}])


def test_a1_edges_threshold_is_the_untrained_twins_range():
    assert geometry.assess_edges(_table("edge_ratio", 3.0, 0.8, 0.1), "t").verdict == REPRODUCED
    # no round 1.5: 1.2 [1.1, 1.3] lies above the twin's range [0.7, 0.9] and above 1
    assert geometry.assess_edges(_table("edge_ratio", 1.2, 0.8, 0.1), "t").verdict == REPRODUCED
    # below the twin's range: training made the edges rotate less than a random stack's
    assert geometry.assess_edges(_table("edge_ratio", 0.5, 0.8, 0.1), "t").verdict == NOT_REPRODUCED
    # the trained interval reaches into the twin's range: the threshold straddles it
    # (VERDICTS.md §2 [rev]: its decided part, edges above the middle, still speaks)
    c = geometry.assess_edges(_table("edge_ratio", 3.0, 2.9, 0.1), "t")
    assert c.verdict == PARTLY and "straddles" in c.decided_by
    assert "decided parts pass" in c.decided_by
    # above the twin's range but edges not clearly above the middle: the secondary is open
    c = geometry.assess_edges(_table("edge_ratio", 0.95, 0.5, 0.1), "t")
    assert c.verdict == PARTLY and "edges above the middle" in c.decided_by
    # fewer than 8 blocks: out of scope, nothing to decide
    assert geometry.assess_edges(_table("edge_ratio", 3.0, 0.8, 0.1, layers=6),
                                 "t").verdict == NOT_TESTABLE
    c = geometry.assess_edges(_table("edge_ratio", 3.0, 0.8, 0.1), "t")
    assert c.band == "≥ 0" and c.units["m"]["verdict"] == REPRODUCED


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
    # the band is [−1.5, −0.5] (half the claimed effect, halfway to slope 0): −0.78 ± 0.1 passes
    assert geometry.assess_inverse_depth(_slopes(-0.78, -0.35), mono, "t").verdict == REPRODUCED
    assert geometry.assess_inverse_depth(_slopes(-0.55, -0.3), mono, "t").verdict == NOT_TESTABLE
    # an interval wider than the band cannot place the slope inside it
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.3, 0.3), mono, "t").verdict == NOT_TESTABLE
    # a family whose loss does not fall with depth cannot show what depth buys
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.3), {"monotone": False},
                                         "t").verdict == NOT_TESTABLE


def test_a3_weak_correlation_is_an_absence_claim_with_a_positive_control():
    assert geometry.assess_weak_correlation(_table("middle_theta_dh", 1.5, 0.5, 0.05),
                                            _slopes(0.0, -1.0), "t").verdict == REPRODUCED
    assert geometry.assess_weak_correlation(_table("middle_theta_dh", 0.4, 0.2, 0.05),
                                            _slopes(-1.0, -1.0), "t").verdict == NOT_REPRODUCED
    # untrained stacks have θ(Δh) ≈ 1.55 rad too; they are shown beside, but an untrained
    # network's lack of structure does not make an absence claim undiagnostic
    c = geometry.assess_weak_correlation(_table("middle_theta_dh", 1.3, 1.55, 0.05),
                                         _slopes(0.0, 0.0), "t")
    assert c.verdict == REPRODUCED and c.numbers["positive_control"]["m"][1] < 0.5
    # a positive control the band does not reject: the measure cannot see correlation
    blind = Estimate(1.5, 1.4, 1.6)
    c = geometry.assess_weak_correlation(_table("middle_theta_dh", 1.3, 1.55, 0.05),
                                         _slopes(0.0, 0.0), "t", positive=blind)
    assert c.verdict == NOT_TESTABLE and "positive control" in c.decided_by
    # an angle near π is a (negative) correlation too
    assert geometry.assess_weak_correlation(_table("middle_theta_dh", 2.8, 1.55, 0.05),
                                            _slopes(0.0, 0.0), "t").verdict == NOT_REPRODUCED


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


def test_a4_no_early_stopping_is_an_absence_claim_with_a_positive_control():
    row = dict(model="m", layers=12, tokens=4000, early_share=0.01, drop_by_middle=0.5,
               untrained_early_share=0.9, untrained_drop_by_middle=float("nan"))
    c = lens.assess(pd.DataFrame([row]), "t")
    assert c.verdict == REPRODUCED and c.numbers["positive_control"]["m"][1] > 0.04
    # an untrained twin that looks the same is shown beside; it does not decide an absence claim
    same = {**row, "untrained_early_share": 0.01, "untrained_drop_by_middle": 0.5}
    assert lens.assess(pd.DataFrame([same]), "t").verdict == REPRODUCED
    # many early stoppers → not reproduced; few, but the drop not gradual → partly
    assert lens.assess(pd.DataFrame([{**row, "early_share": 0.4}]), "t").verdict == NOT_REPRODUCED
    c = lens.assess(pd.DataFrame([{**row, "drop_by_middle": 0.95}]), "t")
    assert c.verdict == PARTLY and "gradual" in c.decided_by
    # 3.5 % of 1,000 tokens: the interval reaches past the 4 % band; the gradual drop, decided,
    # is named (VERDICTS.md §2 [rev])
    c = lens.assess(pd.DataFrame([{**row, "tokens": 1000, "early_share": 0.035}]), "t")
    assert c.verdict == PARTLY and "straddles" in c.decided_by
    # a CE that does not fall, or no token count: not testable
    assert lens.assess(pd.DataFrame([{**row, "drop_by_middle": float("nan")}]),
                       "t").verdict == NOT_TESTABLE
    assert lens.assess(pd.DataFrame([{k: v for k, v in row.items() if k != "tokens"}]),
                       "t").verdict == NOT_TESTABLE
    # a positive control the band does not reject: the rule cannot see early stopping
    blind = Estimate(0.01, 0.0, 0.02)
    c = lens.assess(pd.DataFrame([row]), "t", positive=blind)
    assert c.verdict == NOT_TESTABLE and "positive control" in c.decided_by


def _trace(name: str, p: float) -> tracing.Trace:
    return tracing.Trace(prompt="", subject="The Space Needle", target="", tokens=[],
                         subject_span=[0, 0], p_clean=p, p_corrupt=0.01, restored=[], layers=0,
                         noise_std=0.0)


def test_e1_tracing_rule():
    good = {"EleutherAI/pythia-12b": [_trace("12b", 0.36)], "EleutherAI/pythia-70m": [_trace("", 0.01)]}
    assert tracing.assess(good, "t").verdict == REPRODUCED
    bad = {**good, "EleutherAI/pythia-12b": [_trace("12b", 0.05)]}
    assert tracing.assess(bad, "t").verdict == NOT_REPRODUCED
    assert tracing.assess({"smollm2": [_trace("", 0.2)]}, "t").verdict == NOT_TESTABLE
    # the band ends halfway between 0.36 and the smaller Pythias' 0.021
    assert tracing.assess({**good, "EleutherAI/pythia-12b": [_trace("12b", 0.25)]},
                          "t").verdict == REPRODUCED
    # a smaller Pythia that knows the fact too: only the secondary fails
    both = {**good, "EleutherAI/pythia-2.8b": [_trace("", 0.3)]}
    c = tracing.assess(both, "t")
    assert c.verdict == PARTLY and "smaller Pythias" in c.decided_by
    # Pythia-12b alone: nothing to contrast it with
    assert tracing.assess({"EleutherAI/pythia-12b": [_trace("12b", 0.36)]},
                          "t").verdict == NOT_TESTABLE


# --- chapter 03 -------------------------------------------------------------------------------
def _bulk(frac: float, half: float = 0.001, control: float = 0.55, minority: float = 0.9,
          bulk: float = 0.2, windows: int = 40) -> pd.DataFrame:
    """One `fractions` row of the primary rule with its window intervals."""
    return pd.DataFrame([{"model": "m", "features": "progress", "rule": "kmeans",
                          "bulk_fraction": frac, "tokens": 8000, "windows": windows,
                          "bulk_lo": frac - half, "bulk_hi": frac + half,
                          "control_fraction": control, "control_lo": control - half,
                          "control_hi": control + half, "minority_quarter": minority,
                          "minority_quarter_lo": minority - 0.05,
                          "minority_quarter_hi": minority + 0.05, "bulk_quarter": bulk,
                          "bulk_quarter_lo": bulk - 0.01, "bulk_quarter_hi": bulk + 0.01}])


def test_b1_band_control_and_secondaries():
    early = {"share_at_position_0": 0.1, "position_0_share_of_all": 0.002}
    assert clusters.assess(_bulk(0.99), "m", "t", early)[0].verdict == REPRODUCED
    # the minority overshoots its final state (the cpu SmolLM2's sinks): not early stoppers
    c = clusters.assess(_bulk(0.99, minority=4.7), "m", "t", early)[0]
    assert c.verdict == PARTLY and "minority stops early" in c.decided_by
    assert clusters.assess(_bulk(0.90), "m", "t", early)[0].verdict == NOT_REPRODUCED
    # straddling the band, its decided parts named (VERDICTS.md §2 [rev])
    c = clusters.assess(_bulk(0.9598, half=0.001), "m", "t")[0]
    assert c.verdict == PARTLY and "straddles" in c.decided_by
    # the layer-shuffled control keeps the bulk: the fraction is not about the profile's shape
    c = clusters.assess(_bulk(0.998, control=0.998), "m", "t", early)[0]
    assert c.verdict == NOT_DIAGNOSTIC and c.decided_by.startswith("control")
    # no window ids: no interval over the resampling unit
    c = clusters.assess(_bulk(0.99, half=float("nan"), windows=0), "m", "t")[0]
    assert c.verdict == NOT_TESTABLE and "window" in c.decided_by
    assert c.numbers["minority_position0_share"] != c.numbers["minority_position0_share"]  # NaN


def _alphas(rows: list[tuple], se: float = 0.05, n: int = 6) -> pd.DataFrame:
    """(sweep, teacher, objective, T, alpha history, deep slope[, seed]); every fit over `n`
    depths with standard error `se` (t interval ± 2.78 se at n = 6)."""
    out = []
    for sweep, teacher, objective, T, history, deep, *seed in rows:
        for i, a in enumerate(history):
            out.append({"sweep": sweep, "teacher": teacher, "objective": objective,
                        "temperature": T, "seed": seed[0] if seed else 0, "block": "euler",
                        "step": i + 1, "alpha": a, "alpha_se": se, "alpha_common": a,
                        "alpha_common_se": se, "n_depths": n, "n_common": n,
                        "deep_slope": deep})
    return pd.DataFrame(out)


def test_d1_each_independent_sweep_is_a_unit_against_the_contrast_band():
    ok = _alphas([("a", "independent", "kl", 1.0, [0.9, 1.0], 1.0)])
    assert toy.assess_independent(ok, "t").verdict == REPRODUCED
    still = _alphas([("a", "independent", "kl", 1.0, [0.2, 0.3], 0.6)])  # rising to the band
    c = toy.assess_independent(still, "t")
    assert c.verdict == NOT_TESTABLE and "not converged" in c.decided_by
    stuck = _alphas([("a", "independent", "kl", 1.0, [0.2, 0.2], 0.6)])
    assert toy.assess_independent(stuck, "t").verdict == NOT_REPRODUCED
    away = _alphas([("a", "independent", "kl", 1.0, [0.25, 0.2], 0.6)])  # moving away
    assert toy.assess_independent(away, "t").verdict == NOT_REPRODUCED
    wide = _alphas([("a", "independent", "kl", 1.0, [1.0, 1.0], 1.0)], se=0.3, n=4)
    assert toy.assess_independent(wide, "t").verdict == NOT_TESTABLE  # t(2) interval straddles
    few = _alphas([("a", "independent", "kl", 1.0, [1.0, 1.0], 1.0)], n=2)
    assert "no interval" in toy.assess_independent(few, "t").decided_by
    # the unconverged sweep is its own unit, not set aside: one each way → the cautious one
    mixed = _alphas([("a", "independent", "kl", 1.0, [0.9, 1.0], 1.0),
                     ("b", "independent", "kl", 0.1, [0.2, 0.3], 0.6)])
    c = toy.assess_independent(mixed, "t")
    assert c.verdict == NOT_TESTABLE and c.units["a"]["verdict"] == REPRODUCED
    assert "not converged" in c.units["b"]["decided_by"]
    assert toy.assess_independent(_alphas([("t", "tied", "kl", 1.0, [1.0], 1.0)]),
                                  "t").verdict == NOT_TESTABLE  # no independent sweep at all


def test_convergence_is_judged_per_sweep():
    # sweep b rises, but it is the passing one: a's failure stands
    rows = _alphas([("a", "independent", "kl", 1.0, [0.2, 0.2], 0.5),
                    ("b", "independent", "kl", 0.1, [0.8, 1.0], 1.0)])
    c = toy.assess_independent(rows, "t")
    assert c.verdict == PARTLY and c.units["a"]["verdict"] == NOT_REPRODUCED


def test_d2_tied_steep_rules():
    ind = ("i", "independent", "kl", 1.0, [1.0, 1.0], 1.0)
    assert toy.assess_tied_steep(_alphas([ind, ("t", "tied", "kl", 1.0, [3.0, 3.0], 2.5)]),
                                 "t").verdict == REPRODUCED
    assert toy.assess_tied_steep(_alphas([ind, ("t", "tied", "kl", 1.0, [1.3, 1.2], 1.0)]),
                                 "t").verdict == NOT_REPRODUCED
    c = toy.assess_tied_steep(_alphas([ind, ("t", "tied", "kl", 1.0, [1.0, 1.3], 1.0)]), "t")
    assert c.verdict == NOT_TESTABLE and "not converged" in c.decided_by
    # steep, but not clearly above the independent teacher of its seed: the secondary fails
    steep_ind = ("i", "independent", "kl", 1.0, [2.9, 2.9], 2.9)
    c = toy.assess_tied_steep(_alphas([steep_ind, ("t", "tied", "kl", 1.0, [3.0, 3.0], 2.5)]),
                              "t")
    assert c.verdict == PARTLY and "steeper than independent" in c.decided_by


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
    steeper_but_ind_low = _alphas([("i", "independent", "mse", 1.0, [0.2, 0.2], 0.2),
                                   ("t", "tied", "mse", 1.0, [2.0, 2.0], 2.0)])
    c = toy.assess_mse(steeper_but_ind_low, "t")
    assert c.verdict == PARTLY and "independent ≈ 1" in c.decided_by
    # one unit per seed; a seed without its pair is not testable
    two = _alphas([("i0", "independent", "mse", 1.0, [1.0, 1.0], 1.0, 0),
                   ("t0", "tied", "mse", 1.0, [2.0, 2.0], 2.0, 0),
                   ("i1", "independent", "mse", 1.0, [1.0, 1.0], 1.0, 1)])
    c = toy.assess_mse(two, "t")
    assert set(c.units) == {"seed 0", "seed 1"} and c.units["seed 0"]["verdict"] == REPRODUCED
    assert c.units["seed 1"]["verdict"] == NOT_TESTABLE


def _sig(ind: list[float], tied: list[float], teacher: float | None = 0.02) -> pd.DataFrame:
    rows = [{"network": f"student ℓ={4 * 2 ** i}", "teacher": t, "middle_theta_dh": v}
            for t, vals in (("independent", ind), ("tied", tied)) for i, v in enumerate(vals)]
    if teacher is not None:
        rows.append({"network": "teacher (tied, 64)", "teacher": "tied", "middle_theta_dh": teacher})
    return pd.DataFrame(rows)


def test_d5_signature_is_an_absence_claim_with_the_tied_teacher_as_positive_control():
    init = pd.DataFrame({"middle_theta_dh": [1.56, 1.57]})
    assert toy.assess_signatures(_sig([1.5, 1.52, 1.55], [0.3, 0.35, 0.4]), init,
                                 "t").verdict == REPRODUCED
    assert toy.assess_signatures(_sig([0.3, 0.32, 0.35], [0.3, 0.35, 0.4]), init,
                                 "t").verdict == NOT_REPRODUCED
    # untrained students at ≈ π/2 too: shown beside, not deciding an absence claim
    c = toy.assess_signatures(_sig([1.5, 1.52, 1.55], [1.2, 1.4, 1.41]), init, "t")
    assert c.verdict == PARTLY and "tied students align" in c.decided_by
    # the measure does not see the tied teacher's own alignment: not testable
    c = toy.assess_signatures(_sig([1.5, 1.52, 1.55], [0.3, 0.35, 0.4], teacher=1.5), init, "t")
    assert c.verdict == NOT_TESTABLE and "positive control" in c.decided_by
    assert toy.assess_signatures(_sig([1.5], [0.3, 0.35]), init, "t").verdict == NOT_TESTABLE


def test_local_slopes_and_converging():
    s = toy.local_slopes([2, 4, 8], [1.0, 0.5, 0.125])
    assert [round(x["slope"], 6) for x in s] == [1.0, 2.0]
    assert toy.converging([0.4, 0.5], (0.7, 1.3)) and not toy.converging([0.5, 0.4], (0.7, 1.3))
    assert not toy.converging([0.9, 1.0], (0.7, 1.3))  # inside the band: nothing to excuse


def test_alpha_table_carries_what_the_intervals_need():
    runs = {"s": {"config": {"teacher": "independent", "objective": "mse", "temperature": 1.0,
                             "seed": 0}, "depths": [2, 4, 8, 16],
                  "curve": [{"step": 1, "test_loss": [1.0, 0.5, 0.26, 0.12]}]}}
    r = toy.alpha_table(runs).iloc[0]
    assert (r.n_depths, r.n_common) == (4, 4) and r.alpha_common_se == pytest.approx(r.alpha_se)
    est = toy.t_interval(r.alpha, r.alpha_se, r.n_depths - 2)
    assert est.lo < r.alpha < est.hi and est.hi - r.alpha == pytest.approx(4.303 * r.alpha_se,
                                                                          rel=1e-3)


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
