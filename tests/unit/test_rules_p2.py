"""Every P2 verdict rule with a synthetic input that passes and one that fails (issue 15), and one
producing function per P2 claim id. Chapter 08's and 09's rules are tested beside their code
(tests/models/test_anatomy_weights.py, tests/models/test_recovery.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from layerlab import claims
from layerlab.anatomy import importance, predictability, strategies
from layerlab.claims import NOT_DIAGNOSTIC, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


# --- chapter 05 ----------------------------------------------------------------------------------
def _map(core_na: dict[int, float], core_skip: dict[int, float], anti=(-1.0, -2.0, -0.1),
         flat: float = 5.0):
    """A 30-layer map on two sets: every layer `flat` % except the given core degradations."""
    rows = []
    for s in ("E0", "E1"):
        for m, core in (("neighbour_average", core_na), ("skip", core_skip)):
            for l in range(30):
                deg = core.get(l, flat)
                lo, hi = deg - 1, deg + 1
                if l in (14, 17) and m == "neighbour_average":
                    deg, lo, hi = anti
                rows.append({"set": s, "method": m, "layer": l, "deg": deg, "lo": lo, "hi": hi})
    return importance.with_classes(pd.DataFrame(rows), 30)


CORE = {8: 300.0, 9: 150.0, 10: 900.0, 11: 5000.0}
UNTRAINED = _map({}, {}, anti=(0.0, -1.0, 1.0), flat=0.0)  # the untrained twin: every layer ≈ 0 %


def test_core_decides_on_l8_11_with_removal_and_the_peak_as_secondaries():
    both = importance.assess_core(_map(CORE, CORE), "t", 30, control=UNTRAINED)
    assert both.verdict == REPRODUCED and set(both.units) == {"E0", "E1"}
    assert both.band == "≥ 100" and both.finding == "P2-F1 layer importance map"
    only_na = importance.assess_core(_map(CORE, {11: 300.0}), "t", 30, control=UNTRAINED)
    assert only_na.verdict == PARTLY and "under removal" in only_na.decided_by
    shifted = {15: 300.0, 16: 900.0, 17: 5000.0, 18: 200.0}
    assert importance.assess_core(_map(shifted, shifted), "t", 30,
                                  control=UNTRAINED).verdict == NOT_REPRODUCED
    # a core the untrained twin shows too; and no twin at all
    assert importance.assess_core(_map(CORE, CORE), "t", 30,
                                  control=_map(CORE, CORE)).verdict == NOT_DIAGNOSTIC
    none = importance.assess_core(_map(CORE, CORE), "t", 30)
    assert none.verdict == NOT_TESTABLE and none.decided_by == "every unit: control: not measured"


def _set_layer(t, layer, lo, hi, deg=None, method="neighbour_average"):
    t = t.copy()
    at = (t["layer"] == layer) & (t["method"] == method)
    t.loc[at, ["deg", "lo", "hi"]] = [deg if deg is not None else (lo + hi) / 2, lo, hi]
    return t


def test_peak_size_by_interval_on_the_log_scale():
    t = _map({**CORE, 11: 63_000.0}, CORE)
    assert importance.assess_peak_size(_set_layer(t, 11, 50_000, 80_000), "t").verdict == REPRODUCED
    assert importance.assess_peak_size(_set_layer(t, 11, 3_000, 4_000), "t").verdict == NOT_REPRODUCED
    straddle = importance.assess_peak_size(_set_layer(t, 11, 3_000, 9_000), "t")
    assert straddle.verdict == NOT_TESTABLE and "straddles" in straddle.decided_by
    assert straddle.band.startswith("[3.8") and "same order" in straddle.band_reason


def test_anti_layers_by_interval_with_the_untrained_twin():
    ok = importance.assess_anti(_map(CORE, CORE), "t", control=UNTRAINED)  # CI [-2, -0.1]
    assert ok.verdict == PARTLY and "under removal" in ok.decided_by  # removal: L14 +5 %
    assert importance.assess_anti(_map(CORE, CORE, anti=(10.0, 5.0, 15.0)), "t",
                                  control=UNTRAINED).verdict == NOT_REPRODUCED
    # straddling 0, while its decided part (removal: L14 +5 %) fails: not reproduced (VERDICTS.md
    # §2 [rev]: an undecided primary never hides a decided part)
    straddle = importance.assess_anti(_map(CORE, CORE, anti=(-0.5, -2.0, 1.0)), "t",
                                      control=UNTRAINED)
    assert straddle.verdict == NOT_REPRODUCED and "decided parts fail: under removal" in \
        straddle.decided_by
    # a random model whose every layer sits just below 0 passes the rule too: not diagnostic
    random_model = _map({}, {}, anti=(-1.0, -2.0, -0.1), flat=-1.5)
    assert importance.assess_anti(_map(CORE, CORE), "t",
                                  control=random_model).verdict == NOT_DIAGNOSTIC


def test_io_layers_and_the_rest_connective():
    io = {1: 3000.0, 2: 200.0, **{l: 80.0 for l in range(23, 29)}}
    ok = importance.assess_io(_map({**CORE, **io}, CORE), "t", 30, control=UNTRAINED)
    assert ok.verdict == REPRODUCED and ok.source_from == "secondary summary"
    warm = importance.assess_io(_map({**CORE, **io, 21: 60.0}, CORE), "t", 30, control=UNTRAINED)
    assert warm.verdict == PARTLY and "the rest connective" in warm.decided_by
    cold = {**io, 23: 10.0, 24: 10.0, 25: 10.0}  # three of the six output layers connective
    assert importance.assess_io(_map({**CORE, **cold}, CORE), "t", 30,
                                control=UNTRAINED).verdict == NOT_REPRODUCED


def test_range_on_the_bootstrap_interval():
    ok = pd.DataFrame({"set": ["E0", "E1"], "log10_range": [7.0, 7.0],
                       "log10_range_ci": [[6.5, 7.5], [6.2, 7.9]]})
    assert importance.assess_range(ok, "t").verdict == REPRODUCED
    assert importance.assess_range(ok.assign(log10_range_ci=[[2.5, 3.4], [2.2, 2.9]]),
                                   "t").verdict == NOT_REPRODUCED
    mixed = importance.assess_range(ok.assign(log10_range_ci=[[2.5, 3.4], [6.2, 7.9]]), "t")
    assert mixed.verdict == PARTLY and "across units" in mixed.decided_by
    # E0 straddles (not testable), E1 passes: the undecided unit does not outweigh the decided
    one = importance.assess_range(ok.assign(log10_range_ci=[[5.5, 7.0], [6.2, 7.9]]), "t")
    assert one.verdict == PARTLY and "E0: not testable" in one.decided_by
    assert importance.assess_range(ok.assign(log10_range_ci=[[5.5, 7.0], [5.2, 7.9]]),
                                   "t").verdict == NOT_TESTABLE


# --- chapter 06 ----------------------------------------------------------------------------------
def _joint(scale=(1.0, -2.0, 5.0), others=(500.0, 200.0, 900.0)):
    rows = []
    for s in ("E0", "E1"):
        for name in strategies.STRATEGIES:
            deg, lo, hi = scale if name == strategies.BENIGN else others
            rows.append({"set": s, "strategy": name, "deg": deg, "lo": lo, "hi": hi})
    return SimpleNamespace(joint=pd.DataFrame(rows), target=[3, 4])  # what the rules read


UNEDITED_D2 = (0.90, 0.95, 1.00, 0.95, 0.92)  # sd ≈ 0.04 across the prompts


def _gens(change: float | tuple[float, ...] = 0.0):
    changes = change if isinstance(change, tuple) else (change,) * len(UNEDITED_D2)
    rows = []
    for i, (d2, c) in enumerate(zip(UNEDITED_D2, changes)):
        rows.append({"condition": "unedited", "prompt": f"p{i}", "distinct_2": d2, "repeated_3": 0.0})
        rows.append({"condition": f"{strategies.BENIGN} on S", "prompt": f"p{i}",
                     "distinct_2": d2 + c, "repeated_3": 0.0})
    return pd.DataFrame(rows)


def _matched(hi: float):
    return SimpleNamespace(joint=pd.DataFrame([{"set": s, "matched": "size joint", "strategy": n,
                                                "deg": hi - 1, "lo": hi - 2, "hi": hi}
                                               for s in ("E0", "E1 subset")
                                               for n in strategies.DIRECTIONS]))


def test_only_scaling_face_value_against_the_matched_size_control():
    def verdict(*args):
        return strategies.assess_only_scaling(*args, "t")

    assert verdict(_joint(), _gens(), _matched(300.0)).verdict == REPRODUCED
    # at scaling's size every other strategy is benign too: it is the size, not scaling
    size = verdict(_joint(), _gens(), _matched(5.0))
    assert size.verdict == NOT_DIAGNOSTIC and "control" in size.decided_by
    assert verdict(_joint(), _gens(), None).verdict == NOT_TESTABLE  # no matched runs
    # scaling itself harms: the primary fails
    assert verdict(_joint(scale=(60.0, 40.0, 80.0)), _gens(),
                   _matched(300.0)).verdict == NOT_REPRODUCED
    # the others are not harmful, or the scaled text loops: a secondary fails
    mild = verdict(_joint(others=(50.0, 40.0, 60.0)), _gens(), _matched(300.0))
    assert mild.verdict == PARTLY and "others harmful" in mild.decided_by
    loops = verdict(_joint(), _gens(-0.5), _matched(300.0))
    assert loops.verdict == PARTLY and "coherent text" in loops.decided_by


def test_generation_check_is_calibrated_on_the_unedited_models_spread():
    sd = pd.Series(UNEDITED_D2).std()
    same = strategies.coherence(_gens(0.0))
    assert same["estimate"].point == 0 and same["unedited_sd"] == pytest.approx(sd)
    # a drop of one unedited sd on every prompt stays inside its own variation (1.96 sd)
    small = strategies.coherence(_gens(-sd))["estimate"]
    assert small.point == pytest.approx(-1 / 1.96) and small.lo == small.hi
    assert strategies.coherence(_gens(-3 * sd))["estimate"].hi < -1  # beyond it: fails
    noisy = strategies.coherence(_gens((0.05, -0.3, 0.0, -0.2, 0.02)))["estimate"]
    assert noisy.lo < -1 < noisy.hi  # five prompts cannot decide it: the interval straddles
    flat = _gens(0.0).assign(distinct_2=1.0)
    assert strategies.coherence(flat)["estimate"] is None  # no spread to calibrate on


def test_magnitudes_on_the_log_scale_with_scalings_cost_as_secondary():
    big = (2e6, 1e6, 3e6)
    assert strategies.assess_magnitudes(_joint(scale=(19.0, 12.0, 30.0), others=big),
                                        "t").verdict == REPRODUCED
    assert strategies.assess_magnitudes(_joint(scale=(19.0, 12.0, 30.0)),
                                        "t").verdict == NOT_REPRODUCED
    small = strategies.assess_magnitudes(_joint(scale=(1.0, -2.0, 5.0), others=big), "t")
    assert small.verdict == PARTLY and "scaling +19 %" in small.decided_by
    wide = strategies.assess_magnitudes(_joint(scale=(19.0, 12.0, 30.0), others=(2e6, 5e4, 3e6)),
                                        "t")
    # the magnitude straddles its band; scaling's cost, decided, is named (VERDICTS.md §2 [rev])
    assert wide.verdict == PARTLY and "straddles" in wide.decided_by
    assert wide.source_from == "secondary summary"


# --- chapter 07 ----------------------------------------------------------------------------------
def _ridge(forward: list[float], type_: str = "gate"):
    """A ridge table: the real gate_proj's forward-split R² at each α, plus the other protocols
    near 0 (in-sample 0.91 at the operating α), a shuffled null and the two baselines."""
    rows = [{"type": type_, "stack": "real", "protocol": "forward", "alpha": a, "r2": r,
             "cosine": 0.0} for a, r in zip(predictability.ALPHA_GRID, forward)]
    rows += [{"type": type_, "stack": "real", "protocol": "in_sample", "alpha": 1e4, "r2": 0.91,
              "cosine": 0.9},
             {"type": type_, "stack": "real", "protocol": "loo", "alpha": 1e4, "r2": 0.0,
              "cosine": 0.0},
             {"type": type_, "stack": "shuffled order", "protocol": "forward", "alpha": 1e4,
              "r2": 0.0, "cosine": 0.0},
             {"type": type_, "stack": "real", "protocol": "mean baseline", "alpha": None,
              "r2": 0.0, "cosine": 0.0}]
    return SimpleNamespace(ridge=pd.DataFrame(rows), alpha=1e4)  # the fields assess_ridge reads


def test_ridge_claim_decides_on_the_best_forward_r2():
    ok = predictability.assess_ridge(_ridge([0.2, 0.6, 0.7]), "synthetic")
    assert ok.verdict == claims.REPRODUCED and ok.numbers["forward_best"] == 0.7
    assert ok.band == "[0.455, 1]" and "stand-in" in ok.band_reason
    # the in-sample 0.91 (a choice of α) does not count: out of sample it is ≈ 0
    no = predictability.assess_ridge(_ridge([-0.06, 0.0, 0.1]), "synthetic")
    assert no.verdict == claims.NOT_REPRODUCED
    assert no.decided_by == "primary: the interval lies outside the band"
    # a model without a gate matrix: nothing to predict
    none = predictability.assess_ridge(_ridge([0.7], type_="fused"), "synthetic")
    assert none.verdict == claims.NOT_TESTABLE and "no gate" in none.decided_by


def _paradox(ridge_k9: float, mean_k9: float, ridge_k1: float = 16.0, ks=(1, 9)):
    """Degradation % per set, substitute and k, with a ± 10 % (relative) sentence interval."""
    rows = []
    for s in ("E0", "E1"):
        for sub, k1, k9 in (("ridge prediction", ridge_k1, ridge_k9),
                            ("mean of training layers", ridge_k1, mean_k9)):
            for k in ks:
                deg = k1 if k == 1 else k9
                rows.append({"set": s, "substitute": sub, "k": k, "deg": deg, "lo": 0.9 * deg,
                             "hi": 1.1 * deg, "ppl": 22.6 * (1 + deg / 100), "base_ppl": 22.6})
    return SimpleNamespace(paradox=pd.DataFrame(rows))  # the field assess_paradox reads


def test_paradox_claim_every_branch():
    assess = predictability.assess_paradox
    # nine predicted layers: PPL ×10^5; the uninformative mean only ×1.5; one layer +16 %
    ok = assess(_paradox(1e7, 50.0), "synthetic")
    assert ok.verdict == claims.REPRODUCED and set(ok.units) == {"E0", "E1"}
    # the mean of the training layers breaks the model as badly: nothing about prediction
    nd = assess(_paradox(1e7, 1e7), "synthetic")
    assert nd.verdict == NOT_DIAGNOSTIC
    # nine layers cost only ×11 (log10 ratio ≈ 1, below the bound's order)
    no = assess(_paradox(1000.0, 50.0), "synthetic")
    assert no.verdict == claims.NOT_REPRODUCED
    # one layer already catastrophic (+3000 %): the secondary fails
    partly = assess(_paradox(1e7, 50.0, ridge_k1=3000.0), "synthetic")
    assert partly.verdict == claims.PARTLY and "one layer" in partly.decided_by
    # a stack too shallow for k = 9
    short = assess(_paradox(1e7, 50.0, ks=(1, 3)), "synthetic")
    assert short.verdict == claims.NOT_TESTABLE and "k = 9" in short.decided_by


# --- chapter 10 ----------------------------------------------------------------------------------
def _finals(gtt: list[float], uniform: list[float], seconds=(1.0, 0.87)):
    rows = []
    for seed, (g, u) in enumerate(zip(gtt, uniform)):
        rows.append({"regime": "r", "seed": seed, "arm": "uniform", "val_loss": u,
                     "seconds": seconds[0], "flops": 1.0, "layer_steps": 1.0, "step": 10})
        rows.append({"regime": "r", "seed": seed, "arm": "gtt", "val_loss": g,
                     "seconds": seconds[1], "flops": 0.46, "layer_steps": 0.5, "step": 10})
    return pd.DataFrame(rows)
