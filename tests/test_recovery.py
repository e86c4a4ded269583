"""Recovery after noise (chapter 09): damage, fine-tuning only the chosen parameters, exact
restore, censoring, the area under the curve and the equal-damage calibration."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import torch

from layerlab import claims, profiles
from layerlab.anatomy import recovery
from layerlab.anatomy.lab import Lab


@pytest.fixture
def lab():
    return Lab(profiles.get("smoke"), progress=False)


def _state(lm):
    return {k: v.detach().clone() for k, v in lm.model.state_dict().items()}


def test_recover_trains_only_the_damaged_layer_and_restores_everything(lab, monkeypatch):
    cfg = dataclasses.replace(recovery.config_for(lab), steps=4, eval_every=2, lr=1e-2)
    before = _state(lab.lm)
    flags = [p.requires_grad for p in lab.lm.model.parameters()]
    seen = {}
    real_step = torch.optim.AdamW.step

    def spy(self, *a, **k):  # what the optimizer holds, and which parameters have gradients
        seen["n_opt"] = sum(p.numel() for g in self.param_groups for p in g["params"])
        seen["with_grad"] = {n for n, p in lab.lm.model.named_parameters() if p.grad is not None}
        return real_step(self, *a, **k)

    monkeypatch.setattr(torch.optim.AdamW, "step", spy)
    out = recovery.recover(lab, 2, 3.0, dataclasses.replace(cfg, taus=(-0.99,)))
    assert seen["n_opt"] == sum(p.numel() for p in lab.lm.blocks[2].parameters())
    assert seen["with_grad"] and all(".layers.2." in n for n in seen["with_grad"])
    assert [c["step"] for c in out["curve"]] == [0, 2, 4]  # never "recovered": runs to the limit
    assert out["steps_tau-0.99"] is None
    after = _state(lab.lm)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert flags == [p.requires_grad for p in lab.lm.model.parameters()]


def test_noise_damages_and_recovery_stops_once_recovered(lab):
    cfg = dataclasses.replace(recovery.config_for(lab), steps=6, eval_every=2, taus=(10.0,))
    out = recovery.recover(lab, 1, 0.5, cfg)
    assert out["steps_tau10"] == 0 and len(out["curve"]) == 1  # within 11x base at once
    big = recovery.recover(lab, 1, 8.0, dataclasses.replace(cfg, taus=(-0.5,)))
    assert big["damaged_ppl"] != big["base_ppl"]


def test_summary_censoring_and_area():
    cfg = recovery.RecoveryConfig(steps=40, eval_every=10, taus=(0.05, 0.10))
    curve = [{"step": 0, "ppl": 20.0}, {"step": 10, "ppl": 12.0}, {"step": 20, "ppl": 10.4}]
    s = recovery.summarise(curve, 10.0, cfg)
    assert s["steps_tau0.05"] == 20 and s["steps_tau0.1"] == 20
    import math
    expected = (math.log(2.0) + math.log(1.2) + math.log(1.04) * 3) / 5  # carried forward
    assert s["auc"] == pytest.approx(expected)
    never = recovery.summarise([{"step": 0, "ppl": 20.0}, {"step": 40, "ppl": 15.0}], 10.0, cfg)
    assert never["steps_tau0.05"] is None
    assert recovery.censored_rank_value(None, 40, 10) == 50.0
    assert recovery.censored_rank_value(30, 40, 10) == 30.0


def test_calibrated_sigma_reaches_the_target_damage(lab):
    cfg = dataclasses.replace(recovery.config_for(lab), equal_damage=1.02)
    sigma = recovery.calibrate_sigma(lab, 2, cfg)
    ev = lab.evaluator(cfg.eval_set)
    from layerlab.anatomy import edits
    got = ev.evaluate(edits.edit("noise", 2, sigma=sigma, seed=cfg.seed)).ppl / ev.base().ppl
    assert sigma == 8.0 or got == pytest.approx(1.02, abs=0.005)


def test_correlation_ranks_censored_layers_last():
    cfg = recovery.RecoveryConfig(steps=100, eval_every=10, taus=(0.05,), eval_set="E0")
    table = pd.DataFrame({"condition": "fixed σ", "layer": [1, 2, 3, 4], "seed": 0,
                          "steps τ=0.05": [0, 10, None, 50], "auc": [0.0, 0.1, 0.9, 0.3]})
    imp = pd.DataFrame({"set": "E1", "method": "neighbour_average", "layer": [1, 2, 3, 4],
                        "deg": [1.0, 5.0, 900.0, 40.0]})
    c = recovery.correlate(table, imp, cfg).set_index("recovery measure")
    assert c.loc["steps τ=0.05", "spearman_rho"] == pytest.approx(1.0)
    assert c.loc["area under the curve", "spearman_rho"] == pytest.approx(1.0)
    assert not c["counts"].any()  # fixed σ is the confounded condition


CFG = recovery.RecoveryConfig(steps=300, eval_every=20, taus=(0.05,), eval_set="E1")


def _steps_table(fast: float | None, slow: float | None, seeds=(0, 1), fast_seed1=None):
    rows = []
    for seed in seeds:
        for layer in (14, 17):
            v = fast_seed1 if (seed == 1 and fast_seed1 is not None) else fast
            rows.append({"condition": "fixed σ", "layer": layer, "seed": seed, "steps τ=0.05": v})
        for layer in (8, 11):
            rows.append({"condition": "fixed σ", "layer": layer, "seed": seed, "steps τ=0.05": slow})
    return pd.DataFrame(rows)


def test_steps_rule_passes_fails_and_abstains():
    assert recovery.steps_rule(_steps_table(0, None), CFG)[0] == claims.REPRODUCED  # censored = slow
    assert recovery.steps_rule(_steps_table(0, 200), CFG)[0] == claims.REPRODUCED
    assert recovery.steps_rule(_steps_table(None, None), CFG)[0] == claims.NOT_REPRODUCED
    assert recovery.steps_rule(_steps_table(0, 20), CFG)[0] == claims.NOT_REPRODUCED
    # the fast layers recover at once in one seed only: the seeds disagree
    assert recovery.steps_rule(_steps_table(0, 200, fast_seed1=40), CFG)[0] == claims.NOT_TESTABLE
    missing = _steps_table(0, 200)
    assert recovery.steps_rule(missing[missing["layer"] != 8], CFG)[0] == claims.NOT_TESTABLE


def _noise_table(damaged: float, seeds=(0, 1)):
    return pd.DataFrame([{"condition": "fixed σ", "layer": l, "seed": s, "base_ppl": 50.0,
                          "damaged_ppl": damaged * (1 + s)} for s in seeds for l in (14, 17)])


def test_anti_layer_summary_is_worded_from_the_ratios():
    hurt = recovery.anti_layer_summary(_noise_table(80.0))
    assert "L14 ×1.60" in hurt and "hurts" in hurt  # first seed only: seed 1 would read ×3.20
    assert "lowers perplexity" in recovery.anti_layer_summary(_noise_table(45.0))
    assert "within the threshold" in recovery.anti_layer_summary(_noise_table(51.0))


def _corr(rho_auc, lo, hi, steps_rho=0.5, recovered=10):
    rows = [{"condition": c, "recovery measure": m, "spearman_rho": r, "ci_low": a, "ci_high": b,
             "layers": 14, "recovered": recovered, "counts": c == "equal damage"}
            for c in ("fixed σ", "equal damage")
            for m, r, a, b in (("steps τ=0.05", steps_rho, -1, 1),
                               ("area under the curve", rho_auc, lo, hi))]
    return pd.DataFrame(rows)


def test_importance_rule_uses_equal_damage_and_its_interval():
    assert recovery.importance_rule(_corr(0.7, 0.3, 0.9), CFG) == claims.REPRODUCED
    assert recovery.importance_rule(_corr(-0.2, -0.6, 0.2), CFG) == claims.NOT_REPRODUCED
    assert recovery.importance_rule(_corr(0.3, -0.2, 0.7), CFG) == claims.NOT_TESTABLE
    # steps valid (most layers recovered) and negative: the area alone does not carry it
    assert recovery.importance_rule(_corr(0.7, 0.3, 0.9, steps_rho=-0.4), CFG) == claims.NOT_REPRODUCED
    # steps mostly censored: their sign does not count
    assert recovery.importance_rule(_corr(0.7, 0.3, 0.9, steps_rho=-0.4, recovered=3),
                                    CFG) == claims.REPRODUCED
    assert recovery.importance_rule(_corr(float("nan"), float("nan"), float("nan")),
                                    CFG) == claims.NOT_TESTABLE


def test_smoke_chapter_runs_and_judges(lab):
    r = recovery.run(lab)
    cfg = recovery.config_for(lab)
    assert set(r["table"]["condition"]) == {"fixed σ", "equal damage"}
    assert len(r["table"]) == len(recovery.items(cfg)) == 2 * len(cfg.layers)
    from layerlab.anatomy import importance
    corr = recovery.correlate(r["table"], importance.run(lab)["table"], cfg)
    found = recovery.assess(r, corr, cfg, "smoke")
    assert [c.id for c in found] == ["P2-C5-recovery-importance"]  # tiny model: no L8/L11
