"""Every P2 verdict rule with a synthetic input that passes and one that fails (issue 15), and one
producing function per P2 claim id. Chapter 08's and 09's rules are tested beside their code
(tests/test_anatomy_weights.py, tests/test_recovery.py)."""

from __future__ import annotations

import pandas as pd

from layerlab import claims
from layerlab.anatomy import importance, predictability, strategies
from layerlab.claims import NOT_DIAGNOSTIC, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def test_interval_and_strict_rules():
    assert claims.interval_rule(1.0, 2.0, 0.5, 3.0) == REPRODUCED
    assert claims.interval_rule(4.0, 5.0, 0.5, 3.0) == NOT_REPRODUCED
    assert claims.interval_rule(2.0, 4.0, 0.5, 3.0) == NOT_TESTABLE
    assert claims.strict([REPRODUCED, REPRODUCED]) == REPRODUCED
    assert claims.strict([REPRODUCED, NOT_TESTABLE]) == NOT_TESTABLE
    assert claims.strict([REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE]) == NOT_REPRODUCED
    assert claims.all_hold({"a": True, "b": False}) == NOT_REPRODUCED  # never "partly"


# --- chapter 05 ----------------------------------------------------------------------------------
def _map(core_na: dict[int, float], core_skip: dict[int, float], anti=(-1.0, -2.0, -0.1)):
    """A 30-layer map on two sets: every layer +5 % except the given core degradations."""
    rows = []
    for s in ("E0", "E1"):
        for m, core in (("neighbour_average", core_na), ("skip", core_skip)):
            for l in range(30):
                deg = core.get(l, 5.0)
                lo, hi = deg - 1, deg + 1
                if l in (14, 17) and m == "neighbour_average":
                    deg, lo, hi = anti
                rows.append({"set": s, "method": m, "layer": l, "deg": deg, "lo": lo, "hi": hi})
    t = pd.DataFrame(rows)
    cls = [importance.classify(df, 30) for _, df in t.groupby(["set", "method"], sort=False)]
    t["class"] = pd.concat(cls).to_numpy()
    return t


CORE = {8: 300.0, 9: 150.0, 10: 900.0, 11: 5000.0}


def test_core_needs_both_operations():
    both = _map(CORE, CORE)
    assert importance.core_rule(both, 30)[0] == REPRODUCED
    only_na = _map(CORE, {11: 300.0})  # removal finds L11 alone
    assert importance.core_rule(only_na, 30)[0] == PARTLY
    shifted = {15: 300.0, 16: 900.0, 17: 5000.0, 18: 200.0}
    assert importance.core_rule(_map(shifted, shifted), 30)[0] == NOT_REPRODUCED


def test_peak_size_and_anti_layers_by_interval():
    t = _map({**CORE, 11: 63_000.0}, CORE)
    t.loc[(t["layer"] == 11) & (t["method"] == "neighbour_average"), ["lo", "hi"]] = [50_000, 80_000]
    assert importance.peak_size_rule(t) == REPRODUCED
    t.loc[(t["layer"] == 11) & (t["method"] == "neighbour_average"), ["lo", "hi"]] = [3_000, 4_000]
    assert importance.peak_size_rule(t) == NOT_REPRODUCED
    t.loc[(t["layer"] == 11) & (t["method"] == "neighbour_average"), ["lo", "hi"]] = [3_000, 9_000]
    assert importance.peak_size_rule(t) == NOT_TESTABLE
    assert importance.anti_rule(_map(CORE, CORE)) == REPRODUCED  # CI [-2, -0.1]
    assert importance.anti_rule(_map(CORE, CORE, anti=(10.0, 5.0, 15.0))) == NOT_REPRODUCED
    assert importance.anti_rule(_map(CORE, CORE, anti=(-0.5, -2.0, 1.0))) == NOT_TESTABLE


def test_range_rule_on_the_bootstrap_interval():
    ok = pd.DataFrame({"set": ["E0", "E1"], "log10_range_ci": [[6.5, 7.5], [6.2, 7.9]]})
    assert importance.range_rule(ok) == REPRODUCED
    assert importance.range_rule(ok.assign(log10_range_ci=[[2.5, 3.4], [6.2, 7.9]])) == NOT_REPRODUCED
    assert importance.range_rule(ok.assign(log10_range_ci=[[5.5, 7.0], [6.2, 7.9]])) == NOT_TESTABLE


# --- chapter 06 ----------------------------------------------------------------------------------
def _joint(scale=(1.0, -2.0, 5.0), others=(500.0, 200.0, 900.0)):
    rows = []
    for s in ("E0", "E1"):
        for name in strategies.STRATEGIES:
            deg, lo, hi = scale if name == strategies.BENIGN else others
            rows.append({"set": s, "strategy": name, "deg": deg, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def _gens(d2_scaled: float):
    return pd.DataFrame({"condition": ["unedited", f"{strategies.BENIGN} on S"],
                         "distinct_2": [0.9, d2_scaled], "repeated_3": [0.0, 0.0]})


def _matched(hi: float):
    return pd.DataFrame([{"set": s, "matched": "size joint", "strategy": n, "deg": hi - 1,
                          "lo": hi - 2, "hi": hi} for s in ("E0", "E1 subset")
                         for n in strategies.DIRECTIONS])


def test_only_scaling_face_value_then_matched_size():
    assert strategies.only_scaling_rule(_joint(), _gens(0.9), _matched(300.0)) == REPRODUCED
    assert strategies.only_scaling_rule(_joint(), _gens(0.9), _matched(5.0)) == PARTLY
    assert strategies.only_scaling_rule(_joint(), _gens(0.9), None) == NOT_TESTABLE
    # face value fails: scaling itself harms, or its text loops
    assert strategies.only_scaling_rule(_joint(scale=(60.0, 40.0, 80.0)), _gens(0.9),
                                        _matched(300.0)) == NOT_REPRODUCED
    assert strategies.only_scaling_rule(_joint(), _gens(0.3), _matched(300.0)) == NOT_REPRODUCED


def test_magnitudes_rule():
    big = (2e6, 1e6, 3e6)
    assert strategies.magnitudes_rule(_joint(scale=(19.0, 10.0, 30.0), others=big)) == REPRODUCED
    assert strategies.magnitudes_rule(_joint(scale=(19.0, 10.0, 30.0))) == NOT_REPRODUCED
    assert strategies.magnitudes_rule(_joint(scale=(30.0, 10.0, 50.0), others=big)) == NOT_TESTABLE


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
    return {"ridge": pd.DataFrame(rows), "alpha": 1e4}


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
    return {"paradox": pd.DataFrame(rows)}


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
