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
from layerlab.depth.declarations import DECLARATIONS


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


def _edges(paper: float, untrained: float, width: float, layers: int = 12, *,
           block: float | None = None, model: str = "m"):
    """A control table's two edge-ratio rows: P1's convention (after the final norm) and the
    block-only one (`block`, the paper's value unless given; the same untrained twin)."""
    rows = [_table(stat, value, untrained, width, layers).assign(model=model)
            for stat, value in ((geometry.EDGE_PAPER, paper),
                                (geometry.EDGE_BLOCK, paper if block is None else block))]
    return pd.concat(rows, ignore_index=True)


def test_a1_edges_threshold_is_the_untrained_twins_range():
    assert geometry.assess_edges(_edges(3.0, 0.8, 0.1), "t").verdict == REPRODUCED
    # no round 1.5: 1.2 [1.1, 1.3] lies above the twin's range [0.7, 0.9] and above 1
    assert geometry.assess_edges(_edges(1.2, 0.8, 0.1), "t").verdict == REPRODUCED
    # below the twin's range: training made the edges rotate less than a random stack's
    assert geometry.assess_edges(_edges(0.5, 0.8, 0.1), "t").verdict == NOT_REPRODUCED
    # the trained interval reaches into the twin's range: the threshold straddles it
    # (VERDICTS.md §2 [rev]: its decided part, edges above the middle, still speaks)
    c = geometry.assess_edges(_edges(3.0, 2.9, 0.1), "t")
    assert c.verdict == PARTLY and "straddles" in c.decided_by
    assert "decided parts pass" in c.decided_by
    # above the twin's range but edges not clearly above the middle: the secondary is open
    c = geometry.assess_edges(_edges(0.95, 0.5, 0.1), "t")
    assert c.verdict == PARTLY and "edges above the middle" in c.decided_by
    # fewer than 8 blocks: out of scope, nothing to decide
    assert geometry.assess_edges(_edges(3.0, 0.8, 0.1, layers=6), "t").verdict == NOT_TESTABLE
    c = geometry.assess_edges(_edges(3.0, 0.8, 0.1), "t")
    assert c.band == "≥ 0" and c.units["m"]["verdict"] == REPRODUCED


def test_a1_reads_the_papers_convention_and_shows_the_block_only_ratio_beside():
    # Gemma's case: the last block's own rotation is small (block-only 0.54), the state after
    # the final norm turns a lot (P1's convention 1.8): P1's convention decides
    c = geometry.assess_edges(_edges(1.8, 0.6, 0.05, block=0.54), "t")
    assert c.verdict == REPRODUCED
    assert "final norm" in c.ours and "block-only 0.54" in c.ours
    assert c.numbers["edge_ratio_block"]["m"]["trained"][0] == pytest.approx(0.54)
    # the reverse: the blocks rotate at the edges but the paper's state does not → it fails
    c = geometry.assess_edges(_edges(0.5, 0.8, 0.05, block=2.4), "t")
    assert c.verdict == NOT_REPRODUCED and "its final norm" not in c.ours
    # only the block-only ratio measured (an older record): not testable, and it says why
    block_only = _edges(3.0, 0.8, 0.1)
    block_only = block_only[block_only["statistic"] == geometry.EDGE_BLOCK]
    c = geometry.assess_edges(block_only, "t")
    assert c.verdict == NOT_TESTABLE and "after the final norm" in c.decided_by


def _losses(means: dict[int, float], sd: float = 0.01, seeds: int = 2) -> pd.DataFrame:
    """A family's final losses: per depth, `seeds` seeds spread ± sd around the mean."""
    offsets = np.linspace(-sd, sd, seeds) if seeds > 1 else np.zeros(1)
    return pd.DataFrame([{"depth": d, "seed": i, "val_loss": m + o}
                         for d, m in means.items() for i, o in enumerate(offsets)])


# the cpu family's shape: d2 is much worse, d4 → d16 gains less than two standard errors
LEFT_OUT_GAIN = _losses({2: 2.06, 4: 1.958, 6: 1.96, 8: 1.953, 12: 1.949, 16: 1.940}, sd=0.018)
DEPTH_BUYS = _losses({2: 2.06, 4: 1.96, 6: 1.92, 8: 1.88, 12: 1.84, 16: 1.80}, sd=0.018)


def test_depth_buys_loss_is_judged_on_the_depths_used():
    # every depth: d2 → d16 gains far beyond the noise, so the whole family passes …
    assert geometry.depth_buys_loss(LEFT_OUT_GAIN, [2, 4, 6, 8, 12, 16]) is None
    # … but over the members a slope with a middle uses (d ≥ 4) depth buys nothing beyond it
    why = geometry.depth_buys_loss(LEFT_OUT_GAIN, [4, 6, 8, 12, 16])
    assert why and "d4 → d16" in why and "two standard errors" in why
    assert geometry.depth_buys_loss(DEPTH_BUYS, [4, 6, 8, 12, 16]) is None
    assert geometry.depth_buys_loss(DEPTH_BUYS, [8, 12, 16]) is None
    # a step up beyond its standard error fails even when the ends differ
    up = _losses({4: 1.96, 8: 1.80, 12: 1.90, 16: 1.70}, sd=0.01)
    assert "raises" in geometry.depth_buys_loss(up, [4, 8, 12, 16])
    # what cannot be judged fails: no losses, one depth, one seed (no seed noise)
    assert "not given" in geometry.depth_buys_loss(None, [4, 8])
    assert "fewer than two" in geometry.depth_buys_loss(DEPTH_BUYS, [8, 32])
    assert "seed noise is unknown" in geometry.depth_buys_loss(
        _losses({4: 2.0, 8: 1.8}, seeds=1), [4, 8])
    assert geometry.family_depths(["m", "family-d8", "family-d8-s1", "family-d16"]) == [8, 16]


def _slopes(t: float, u: float, se: float = 0.05, depths=(4, 6, 8, 12, 16)):
    d = t - u
    return {"trained": {"slope": t, "lo": t - 2 * se, "hi": t + 2 * se, "se": se, "n": 10,
                        "depths": list(depths)},
            "untrained": {"slope": u, "lo": u - 2 * se, "hi": u + 2 * se, "se": se, "n": 10,
                          "depths": list(depths)},
            "difference": {"slope": d, "lo": d - 3 * se, "hi": d + 3 * se, "se": se}}


def test_a2_inverse_depth_rules():
    ok = DEPTH_BUYS
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.3), ok, "t").verdict == REPRODUCED
    assert geometry.assess_inverse_depth(_slopes(-0.2, -0.3, 0.01), ok, "t").verdict == NOT_REPRODUCED
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.95), ok, "t").verdict == NOT_DIAGNOSTIC
    # the band is [−1.5, −0.5] (half the claimed effect, halfway to slope 0): −0.78 ± 0.1 passes
    assert geometry.assess_inverse_depth(_slopes(-0.78, -0.35), ok, "t").verdict == REPRODUCED
    assert geometry.assess_inverse_depth(_slopes(-0.55, -0.3), ok, "t").verdict == NOT_TESTABLE
    # an interval wider than the band cannot place the slope inside it
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.3, 0.3), ok, "t").verdict == NOT_TESTABLE
    # a family whose loss does not fall with depth cannot show what depth buys
    flat = _losses({4: 1.96, 6: 1.96, 8: 1.96, 12: 1.96, 16: 1.96})
    assert geometry.assess_inverse_depth(_slopes(-1.0, -0.3), flat, "t").verdict == NOT_TESTABLE


def test_a2_precondition_is_judged_on_the_members_the_slope_fits():
    # d2 makes the family's loss fall, but the slope leaves d2 out and d4 → d16 gains less than
    # two standard errors: not testable, naming why
    c = geometry.assess_inverse_depth(_slopes(-0.78, -0.35), LEFT_OUT_GAIN, "t")
    assert c.verdict == NOT_TESTABLE and "d4 → d16" in c.decided_by
    assert c.numbers["depth_buys_loss"] is False
    # the same slope on a family whose used members do gain: decided (the control enters)
    c = geometry.assess_inverse_depth(_slopes(-0.78, -0.35), DEPTH_BUYS, "t")
    assert c.verdict == REPRODUCED and c.numbers["depth_buys_loss"] is True
    assert "outside the band: a random stack does not show it" in c.ours
    # a slope that names no members cannot be judged on them
    no_depths = _slopes(-0.78, -0.35, depths=())
    assert geometry.assess_inverse_depth(no_depths, DEPTH_BUYS, "t").verdict == NOT_TESTABLE


def test_a2_untrained_twins_are_the_negative_control_through_the_same_band():
    c = geometry.assess_inverse_depth(_slopes(-1.0, -0.95), DEPTH_BUYS, "t")
    assert c.verdict == NOT_DIAGNOSTIC and "inside the band" in c.ours
    assert "trained − untrained" in c.ours  # shown beside


def test_the_familys_units_in_a1_a3_a4_need_depth_to_buy_loss():
    fam = pd.concat([_edges(2.0, 0.7, 0.05, model=n) for n in ("family-d8", "family-d16")]
                    + [_edges(2.4, 0.6, 0.05, model="llm")], ignore_index=True)
    c = geometry.assess_edges(fam, "t", LEFT_OUT_GAIN)
    # the family's members are one unit, not a vote each (VERDICTS.md §2 [rev])
    assert set(c.units) == {"llm", "family (d8, d16)"}
    assert c.units["family (d8, d16)"]["verdict"] == NOT_TESTABLE
    assert "d8 → d16" in c.units["family (d8, d16)"]["decided_by"]
    assert c.units["llm"]["verdict"] == REPRODUCED  # a pretrained model is not the family
    c = geometry.assess_edges(fam, "t", DEPTH_BUYS)
    assert c.verdict == REPRODUCED and "family (d8, d16)" in c.units
    # no losses given: the family's precondition cannot be judged, so its unit is not testable
    assert geometry.assess_edges(fam, "t").units["family (d8, d16)"]["verdict"] == NOT_TESTABLE
    dh = pd.concat([_table("middle_theta_dh", 1.4, 1.55, 0.02).assign(model=n)
                    for n in ("family-d4", "family-d8-s1")], ignore_index=True)
    assert geometry.assess_weak_correlation(dh, _slopes(0.0, 0.0), "t",
                                            losses=LEFT_OUT_GAIN).verdict == NOT_TESTABLE
    assert geometry.assess_weak_correlation(dh, _slopes(0.0, 0.0), "t",
                                            losses=DEPTH_BUYS).verdict == REPRODUCED
    row = dict(layers=12, tokens=4000, early_share=0.01, drop_by_middle=0.5,
               untrained_early_share=0.9, untrained_drop_by_middle=float("nan"))
    table = pd.DataFrame([{**row, "model": "family-d4"}, {**row, "model": "family-d16"}])
    c = lens.assess(table, "t", losses=LEFT_OUT_GAIN)
    assert c.verdict == NOT_TESTABLE and "depth does not buy loss" in c.ours
    assert lens.assess(table, "t", losses=DEPTH_BUYS).verdict == REPRODUCED


def test_the_familys_members_make_one_unit_whose_interval_is_their_spread():
    from layerlab.claims import Unit

    members = [Unit(name="family-d8", primary=Estimate(1.0, 0.8, 1.2)),
               Unit(name="family-d8-s1", primary=Estimate(2.0, 1.9, 2.1)),
               Unit(name="llm", primary=Estimate(5.0, 4.0, 6.0))]
    out = geometry.one_family_unit(members)
    assert [u.name for u in out] == ["llm", "family (d8, d8-s1)"]
    assert out[-1].primary == Estimate(1.5, 0.8, 2.1)
    one = [Unit(name="family-d8", primary=Estimate(1.0, 0.8, 1.2))]
    assert geometry.one_family_unit(one) == one  # a single member stays itself


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


# --- chapter 04: every toy unit is a setting over teacher seeds ------------------------------------
DEPTHS = (2, 4, 8, 16)


def _config(teacher: str, objective: str, T: float, seed: int, steps: int) -> dict:
    return {"teacher": teacher, "objective": objective, "temperature": T, "seed": seed,
            "steps": steps, "student_block": "euler"}


def _alphas(rows: list[tuple], bend: float = 1.0) -> pd.DataFrame:
    """(sweep, teacher, objective, T, seed, α history[, depths]) → the α_ℓ table of sweeps whose
    test loss at evaluation i is d^(−α_i) at every depth d ≥ 4, so each seed's fit over them
    is exactly its α; depth 2's loss is multiplied by `bend` (a bent curve). Sweeps with the
    same name but for a '-sN' suffix, and the same config but for the seed, are one setting."""
    runs = {}
    for sweep, teacher, objective, T, seed, history, *depths in rows:
        ds = depths[0] if depths else DEPTHS
        curve = [{"step": 1000 * (i + 1),
                  "test_loss": [d ** -a * (bend if d < toy.DEEP else 1.0) for d in ds]}
                 for i, a in enumerate(history)]
        runs[sweep] = {"config": _config(teacher, objective, T, seed, 1000 * len(history)),
                       "depths": list(ds), "curve": curve}
    return toy.alpha_table(runs)


def _seeds(name: str, teacher: str, objective: str, T: float, histories: list[list[float]],
           depths=DEPTHS) -> list[tuple]:
    """One setting's sweeps, one per teacher seed (named as the profiles name them)."""
    return [(name if s == 0 else f"{name}-s{s}", teacher, objective, T, s, h, depths)
            for s, h in enumerate(histories)]


def test_toy_sweeps_differing_only_by_seed_are_one_setting():
    rows = (_seeds("kl-T1-independent", "independent", "kl", 1.0, [[1.0], [1.1]])
            + _seeds("mse-independent", "independent", "mse", 1.0, [[1.0], [1.0]])
            + [("mse-independent-s1b", "independent", "mse", 1.0, 2, [1.0, 1.0])])  # longer
    found = {s.name: s for s in toy.settings(toy.final_alphas(_alphas(rows)))}
    assert set(found) == {"kl-T1-independent", "mse-independent", "mse-independent-s1b"}
    assert dict(found["kl-T1-independent"].sweeps) == {0: "kl-T1-independent",
                                                       1: "kl-T1-independent-s1"}
    assert found["kl-T1-independent"].depths == (4, 8, 16)  # depth 2 left out
    # seeds with different students share only the deep depths both trained
    mixed = _alphas([("m", "tied", "mse", 1.0, 0, [1.0], (2, 4, 8, 16, 32)),
                     ("m-s1", "tied", "mse", 1.0, 1, [1.0], (2, 4, 8, 16))])
    assert toy.settings(toy.final_alphas(mixed))[0].depths == (4, 8, 16)


def test_seed_summary_gives_each_seed_and_the_interval_over_seeds():
    rows = (_seeds("a", "independent", "kl", 1.0, [[1.0], [1.02]])
            + _seeds("b", "tied", "kl", 1.0, [[2.0]]))
    out = toy.seed_summary(_alphas(rows, bend=3.0)).set_index("setting")
    a, b = out.loc["a"], out.loc["b"]
    assert (a.seeds, a.depths, a.alpha_per_seed) == (2, "4–16", "1.000, 1.020")
    assert a.lo < a.alpha_mean < a.hi and a.alpha_mean == pytest.approx(1.01)
    assert b.seeds == 1 and np.isnan(b.lo) and np.isnan(b.hi)


def test_d1_interval_is_over_teacher_seeds():
    passes = _seeds("pass", "independent", "kl", 1.0, [[0.95], [1.0], [1.05]])
    fails = _seeds("fail", "independent", "kl", 0.1, [[0.2, 0.2], [0.22, 0.22]])
    single = _seeds("single", "independent", "kl", 0.01, [[1.0, 1.0]])
    c = toy.assess_independent(_alphas(passes + fails + single), "t")
    assert c.units["pass"]["verdict"] == REPRODUCED
    assert c.numbers["pass"]["primary"][1] == pytest.approx(1.0 - 4.303 * 0.05 / 3 ** 0.5, rel=1e-3)  # t(2): mean ± 4.30·SE
    assert c.units["fail"]["verdict"] == NOT_REPRODUCED
    assert c.units["single"]["verdict"] == NOT_TESTABLE
    assert toy.ONE_SEED in c.units["single"]["decided_by"]
    assert c.verdict == PARTLY  # reproduced and not reproduced across units
    assert toy.assess_independent(_alphas(single), "t").verdict == NOT_TESTABLE
    assert toy.assess_independent(_alphas(passes), "t").verdict == REPRODUCED


def test_d1_seeds_not_depths_make_the_interval():
    # every sweep is an exact power law (a zero-width interval over its depths), but the
    # teacher seeds disagree: the interval over seeds straddles the band
    spread = _seeds("a", "independent", "kl", 1.0, [[0.6], [1.4], [1.0]])
    c = toy.assess_independent(_alphas(spread), "t")
    assert c.verdict == NOT_TESTABLE and "straddles" in c.decided_by
    # each curve bends at depth 2 (a wide interval over depths): the seeds agree, and depth 2
    # is left out of the per-seed fit
    bent = _seeds("a", "independent", "kl", 1.0, [[1.0], [1.02]])
    c = toy.assess_independent(_alphas(bent, bend=3.0), "t")
    assert c.verdict == REPRODUCED and c.numbers["a"]["per_seed"] == pytest.approx([1.0, 1.02])
    # too few deep students: no α_ℓ
    shallow = _seeds("a", "independent", "kl", 1.0, [[1.0], [1.0]], depths=(2, 4))
    assert "fewer than 2 student depths" in toy.assess_independent(_alphas(shallow),
                                                                   "t").decided_by


def test_d1_convergence_is_judged_on_the_seed_mean():
    rising = _seeds("a", "independent", "kl", 1.0, [[0.2, 0.3], [0.22, 0.32]])
    c = toy.assess_independent(_alphas(rising), "t")
    assert c.verdict == NOT_TESTABLE and "not converged" in c.decided_by
    away = _seeds("a", "independent", "kl", 1.0, [[0.3, 0.2], [0.32, 0.22]])
    assert toy.assess_independent(_alphas(away), "t").verdict == NOT_REPRODUCED
    # one seed and still moving: both preconditions named
    c = toy.assess_independent(_alphas(_seeds("a", "independent", "kl", 1.0, [[0.2, 0.3]])), "t")
    assert toy.ONE_SEED in c.decided_by and "not converged" in c.decided_by
    assert toy.assess_independent(_alphas(_seeds("t", "tied", "kl", 1.0, [[1.0], [1.0]])),
                                  "t").verdict == NOT_TESTABLE  # no independent sweep at all


def test_d2_tied_steep_over_seeds():
    ind = _seeds("kl-T1-independent", "independent", "kl", 1.0, [[1.0, 1.0], [1.0, 1.0]])
    steep = _seeds("kl-T1-tied", "tied", "kl", 1.0, [[3.0, 3.0], [3.1, 3.1]])
    c = toy.assess_tied_steep(_alphas(ind + steep), "t")
    assert c.verdict == REPRODUCED
    assert c.numbers["kl-T1-tied"]["steeper than independent"][0] == pytest.approx(2.05)
    shallow = _seeds("kl-T1-tied", "tied", "kl", 1.0, [[1.3, 1.2], [1.2, 1.1]])
    assert toy.assess_tied_steep(_alphas(ind + shallow), "t").verdict == NOT_REPRODUCED
    rising = _seeds("kl-T1-tied", "tied", "kl", 1.0, [[1.0, 1.3], [1.0, 1.3]])
    c = toy.assess_tied_steep(_alphas(ind + rising), "t")
    assert c.verdict == NOT_TESTABLE and "not converged" in c.decided_by
    one = _seeds("kl-T1-tied", "tied", "kl", 1.0, [[3.0, 3.0]])
    assert toy.ONE_SEED in toy.assess_tied_steep(_alphas(ind + one), "t").decided_by
    # steep, but not clearly above the independent teacher of its seeds: the secondary fails
    steep_ind = _seeds("kl-T1-independent", "independent", "kl", 1.0, [[2.9, 2.9], [3.0, 3.0]])
    c = toy.assess_tied_steep(_alphas(steep_ind + steep), "t")
    assert c.verdict == PARTLY and "steeper than independent" in c.decided_by


def test_d3_tied_cold_over_seeds():
    cold = [[1.0, 1.0], [1.02, 1.02]]  # t(1): ± 12.7 SE
    assert toy.assess_tied_cold(_alphas(_seeds("c", "tied", "kl", 0.01, cold)),
                                "t").verdict == REPRODUCED
    steep = [[2.2, 2.2], [2.3, 2.3]]
    assert toy.assess_tied_cold(_alphas(_seeds("c", "tied", "kl", 0.01, steep)),
                                "t").verdict == NOT_REPRODUCED
    c = toy.assess_tied_cold(_alphas(_seeds("c", "tied", "kl", 0.01, [[1.0, 1.0]])), "t")
    assert c.verdict == NOT_TESTABLE and c.decided_by == f"precondition: {toy.ONE_SEED}"


def _mse(ind: list[list[float]], tied: list[list[float]]) -> pd.DataFrame:
    return _alphas(_seeds("mse-independent", "independent", "mse", 1.0, ind)
                   + _seeds("mse-tied", "tied", "mse", 1.0, tied))


def test_d4_mse_ordering_over_seeds():
    good = _mse([[1.0, 1.0], [1.0, 1.0]], [[2.0, 2.0], [2.02, 2.02]])
    c = toy.assess_mse(good, "t")
    assert c.verdict == REPRODUCED and set(c.units) == {"mse-tied − mse-independent"}
    flipped = _mse([[2.0, 2.0], [2.1, 2.1]], [[1.0, 1.0], [1.0, 1.0]])
    assert toy.assess_mse(flipped, "t").verdict == NOT_REPRODUCED
    ind_low = _mse([[0.2, 0.2], [0.2, 0.2]], [[2.0, 2.0], [2.02, 2.02]])
    c = toy.assess_mse(ind_low, "t")
    assert c.verdict == PARTLY and "independent ≈ 1" in c.decided_by
    # the seeds disagree on the ordering: the interval over seeds straddles, and the decided
    # part (the independent setting's α_ℓ ≈ 1) is named (VERDICTS.md §2 [rev])
    split = _mse([[1.0, 1.0], [1.0, 1.0]], [[2.0, 2.0], [1.1, 1.1]])
    c = toy.assess_mse(split, "t")
    assert c.verdict == PARTLY and c.decided_by.startswith("primary: the interval straddles")
    assert "decided parts pass: independent ≈ 1" in c.decided_by
    # one seed in common: no interval over seeds
    one = _alphas(_seeds("mse-independent", "independent", "mse", 1.0, [[1.0, 1.0]])
                  + _seeds("mse-tied", "tied", "mse", 1.0, [[2.0, 2.0]]))
    assert toy.ONE_SEED in toy.assess_mse(one, "t").decided_by
    # a setting without its twin is its own untestable unit
    alone = _alphas(_seeds("mse-independent", "independent", "mse", 1.0, [[1.0], [1.0]]))
    c = toy.assess_mse(alone, "t")
    assert c.verdict == NOT_TESTABLE and "no tied MSE setting" in c.decided_by


def _sig(ind: list[list[float]], tied: list[list[float]], teacher: float | None = 0.02,
         steps: int = 4000, history: bool = False) -> pd.DataFrame:
    """Signature rows: per teacher type, one list of student angles per teacher seed (or, with
    `history`, one list per evaluation of seed 0, the last being the final one)."""
    rows = []
    for t, runs in (("independent", ind), ("tied", tied)):
        key = toy.setting_key(_config(t, "mse", 1.0, 0, steps))
        for i, vals in enumerate(runs):
            seed, step = (0, 1000 * (i + 1)) if history else (i, None)
            for j, v in enumerate(vals):
                rows.append({"network": f"student ℓ={4 * 2 ** j}", "teacher": t,
                             "middle_theta_dh": v, "seed": seed, "train_steps": steps,
                             "setting_key": key, **({"step": step} if history else {})})
            if teacher is not None and t == "tied" and (not history or i == len(runs) - 1):
                rows.append({"network": "teacher (tied, 64)", "teacher": "tied",
                             "middle_theta_dh": teacher, "seed": seed, "train_steps": steps,
                             "setting_key": key, **({"step": step} if history else {})})
    return pd.DataFrame(rows)


# MSE sweeps of the signature runs' setting (12 evaluations, 12k steps): settled by 4k, or not
SETTLED = _mse([[0.8] * 12, [0.8] * 12], [[1.5] * 12, [1.5] * 12])
STILL_MOVING = _mse([[0.1 * i for i in range(12)]] * 2, [[0.2 * i for i in range(12)]] * 2)
INIT = pd.DataFrame({"middle_theta_dh": [1.56, 1.57]})
IND = [[1.5, 1.52, 1.55], [1.48, 1.5, 1.53]]  # two teacher seeds of independent students
ALIGNED = [[0.3, 0.35, 0.4], [0.32, 0.36, 0.41]]
ALIGN = DECLARATIONS["P1-D5-student-signatures"].secondary[0].band


def test_d5_signature_is_an_absence_claim_over_teacher_seeds():
    assert toy.assess_signatures(_sig(IND, ALIGNED), INIT, SETTLED, "t").verdict == REPRODUCED
    low = [[0.3, 0.32, 0.35], [0.31, 0.33, 0.36]]
    assert toy.assess_signatures(_sig(low, ALIGNED), INIT, SETTLED,
                                 "t").verdict == NOT_REPRODUCED
    c = toy.assess_signatures(_sig(IND, [[1.2, 1.4, 1.41], [1.25, 1.38, 1.4]]), INIT, SETTLED, "t")
    assert c.verdict == PARTLY and "tied students align" in c.decided_by
    # the measure does not see the tied teacher's own alignment: not testable
    c = toy.assess_signatures(_sig(IND, ALIGNED, teacher=1.5), INIT, SETTLED, "t")
    assert c.verdict == NOT_TESTABLE and "positive control" in c.decided_by
    # one teacher seed per teacher type: no interval over seeds, however many students
    c = toy.assess_signatures(_sig(IND[:1], ALIGNED[:1]), INIT, SETTLED, "t")
    assert c.verdict == NOT_TESTABLE and toy.ONE_SEED in c.decided_by


def test_d5_convergence_precondition():
    tied_out = [[1.2, 1.3, 1.4], [1.25, 1.3, 1.38]]  # outside 'align' (≤ π/4)
    # outside its band, no θ(Δh) history, and the sweeps of its setting still moving at 4k
    c = toy.assess_signatures(_sig(IND, tied_out), INIT, STILL_MOVING, "t")
    assert c.verdict == NOT_TESTABLE and "not converged" in c.decided_by
    assert "tied students" in c.decided_by and "independent students" not in c.decided_by
    assert "4,000 steps" in c.decided_by and "between steps 3,000 and 4,000" in c.decided_by
    # the same sweeps settled by then: the precondition holds and the secondary decides
    c = toy.assess_signatures(_sig(IND, tied_out), INIT, SETTLED, "t")
    assert c.verdict == PARTLY and "tied students align" in c.decided_by
    # inside their band the angles are taken as they stand, whatever the sweeps do
    assert toy.assess_signatures(_sig(IND, ALIGNED), INIT, STILL_MOVING, "t").verdict == REPRODUCED
    # no sweep of the setting to stand in: convergence cannot be tested
    other = _alphas(_seeds("kl", "tied", "kl", 1.0, [[1.0], [1.0]]))
    c = toy.assess_signatures(_sig(IND, tied_out), INIT, other, "t")
    assert c.verdict == NOT_TESTABLE and "cannot be tested" in c.decided_by
    # a run shorter than the sweeps' second evaluation: nothing to compare
    c = toy.assess_signatures(_sig(IND, tied_out, steps=1000), INIT, SETTLED, "t")
    assert "fewer than two evaluations" in c.decided_by


def test_d5_convergence_on_a_recorded_history():
    # θ(Δh) per evaluation (one seed): still falling toward 'align' → not converged
    falling = toy.signature_convergence(_sig([[1.5]], [[1.3, 1.3], [1.1, 1.1]], history=True),
                                        "tied", STILL_MOVING, ALIGN)
    assert falling is not None and "1.30 → 1.10" in falling
    # standing still (or moving away): taken as it stands, the sweeps are not consulted
    still = _sig([[1.5]], [[1.1, 1.1], [1.1, 1.1]], history=True)
    assert toy.signature_convergence(still, "tied", STILL_MOVING, ALIGN) is None


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
