"""Recovery after noise (chapter 09): damage, fine-tuning only the chosen parameters, exact
restore, censoring, the area under the curve and the equal-damage calibration."""

from __future__ import annotations

import dataclasses
import math

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


def test_the_no_damage_control_trains_the_same_layer_undamaged_to_the_step_limit(lab):
    cfg = dataclasses.replace(recovery.config_for(lab), steps=4, eval_every=2, lr=1e-2,
                              taus=(10.0,))
    before = _state(lab.lm)
    base = recovery.evaluator(lab, cfg).base().ppl
    out = recovery.recover(lab, 1, 8.0, cfg, damage=False)
    # no noise: it starts at the base perplexity exactly; a damaged run within 11x base would
    # stop at step 0, the control runs every step
    assert out["damaged_ppl"] == pytest.approx(base, rel=1e-6)
    assert [c["step"] for c in out["curve"]] == [0, 2, 4]
    assert out["curve"][-1]["ppl"] != out["curve"][0]["ppl"]  # fine-tuning moved it
    assert all(torch.equal(before[k], v) for k, v in _state(lab.lm).items())


def test_no_damage_runs_pair_every_fixed_sigma_run():
    cfg = recovery.RecoveryConfig(layers=(1, 8, 14), seeds=(0, 1), seeded_layers=(8, 14))
    nd = recovery.no_damage_items(cfg)
    fixed = {(i["layer"], i["seed"]) for i in recovery.items(cfg).values()
             if i["condition"] == "fixed σ"}
    assert {(i["layer"], i["seed"]) for i in nd.values()} == fixed
    assert list(nd)[:2] == ["no-damage-L08-s0", "no-damage-L08-s1"]  # the named layers first
    assert all(i["condition"] == recovery.NO_DAMAGE for i in nd.values())


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
BASE = 50.0


def _run(steps: float | None, cfg=CFG, base=BASE) -> list[tuple[int, float]]:
    """A damaged run that first recovers (≤ 1.05 × base) at `steps` (None: never) and stops."""
    end = cfg.steps if steps is None else int(steps)
    out = [(s, base * 1.5) for s in range(0, end + 1, cfg.eval_every)]
    if steps is not None:
        out[-1] = (end, base)
    return out


def _steps_result(fast, slow, seeds=(0, 1), fast_seed1=None, layers=(8, 11, 14, 17)):
    """Fixed-σ runs of the named layers: table and curves consistent with each other."""
    rows, curves = [], []
    for seed in seeds:
        for layer in layers:
            v = slow if layer in (8, 11) else (
                fast_seed1 if (seed == 1 and fast_seed1 is not None) else fast)
            run = _run(v)
            rows.append({"condition": "fixed σ", "layer": layer, "seed": seed, "steps τ=0.05": v,
                         "base_ppl": BASE, "damaged_ppl": run[0][1]})
            curves += [{"condition": "fixed σ", "layer": layer, "seed": seed, "step": s, "ppl": p}
                       for s, p in run]
    return recovery.RecoveryResult(table=pd.DataFrame(rows), curves=pd.DataFrame(curves))


def _no_damage(layers=(8, 11, 14, 17), seeds=(0, 1), drift: dict[int, float] | None = None):
    """No-damage runs to the step limit: flat at base, or rising to `drift[layer]` × base."""
    rows = []
    for layer in layers:
        for seed in seeds:
            for s in range(0, CFG.steps + 1, CFG.eval_every):
                up = (drift or {}).get(layer, 1.0)
                rows.append({"layer": layer, "seed": seed, "step": s,
                             "ppl": BASE * (1 + (up - 1) * min(1.0, s / 100))})
    return pd.DataFrame(rows)


def _steps(result, no_damage=None, cfg=CFG):
    return recovery.assess_steps(result, cfg, "test", no_damage)


def test_steps_claim_reproduced_only_with_its_control():
    r = _steps_result(0, None)  # fast layers at once, slow ones censored (> 300)
    assert _steps(r, _no_damage()).verdict == claims.REPRODUCED
    c = _steps(r, _no_damage(layers=(8, 11, 14)))  # L17's no-damage runs missing
    assert c.verdict == claims.NOT_TESTABLE and c.decided_by == "control: not measured"
    assert c.numbers["reference"].startswith("base (no-damage runs incomplete")
    c = _steps(r)
    assert c.verdict == claims.NOT_TESTABLE and c.decided_by == "control: not measured"
    assert c.finding == _steps(_steps_result(0, 200), _no_damage()).finding
    assert _steps(_steps_result(0, 200), _no_damage()).verdict == claims.REPRODUCED


def test_steps_claim_fails_partly_and_abstains():
    # the anti-layers need as long as the core: the contrast fails, control or not
    c = _steps(_steps_result(140, 120))
    assert c.verdict == claims.NOT_REPRODUCED and c.decided_by.startswith("primary")
    assert c.numbers["per_layer"]["L14"] == [False, False]
    # a clear contrast, but the anti-layers are not healed at once
    c = _steps(_steps_result(20, 200), _no_damage())
    assert c.verdict == claims.PARTLY and "anti-layers at once" in c.decided_by
    # the seeds disagree: one contrast passes, the other fails
    # (VERDICTS.md §2 [rev]: the straddling contrast names the decided parts instead of hiding
    # them: the core is slow on both seeds)
    c = _steps(_steps_result(0, 120, fast_seed1=60), _no_damage())
    assert c.verdict == claims.PARTLY and "straddles" in c.decided_by
    assert "decided parts pass: core slow" in c.decided_by
    # a named layer missing, or another noise level: preconditions
    r = _steps_result(0, 200)
    r = dataclasses.replace(r, table=r.table[r.table["layer"] != 8])
    assert "common seed" in _steps(r, _no_damage()).decided_by
    c = _steps(_steps_result(0, 200), _no_damage(), dataclasses.replace(CFG, sigma=1.0))
    assert c.verdict == claims.NOT_TESTABLE and "50 % noise" in c.decided_by


def test_steps_control_that_shows_the_contrast_is_not_diagnostic():
    # fine-tuning alone pushes the undamaged core layers 30 % above base and keeps them there
    c = _steps(_steps_result(0, None), _no_damage(drift={8: 1.3, 11: 1.3}))
    assert c.verdict == claims.NOT_DIAGNOSTIC
    assert c.numbers["control"][1] >= 100


def test_recovered_is_judged_against_the_no_damage_run():
    # the damaged run reaches 1.05 × base at 100, but fine-tuning alone reaches 0.8 × base:
    # against the no-damage run it has not recovered when it stopped
    run = _run(100)
    ref = {s: BASE * 0.8 for s in range(0, CFG.steps + 1, CFG.eval_every)}
    assert recovery.steps_interval(run, BASE, CFG) == (100.0, 100.0)
    assert recovery.steps_interval(run, BASE, CFG, ref) == (120.0, 320.0)
    assert recovery.steps_interval(_run(None), BASE, CFG) == (320.0, 320.0)  # censored
    # fine-tuning alone leaves base behind: the damaged run is within 1.05 × it sooner
    ref = {s: BASE * 1.5 for s in range(0, CFG.steps + 1, CFG.eval_every)}
    assert recovery.steps_interval(run, BASE, CFG, ref) == (0.0, 0.0)
    # the area against base is the chapter's own (summarise) area
    cfg = recovery.RecoveryConfig(steps=40, eval_every=10, taus=(0.05,))
    curve = [{"step": 0, "ppl": 20.0}, {"step": 10, "ppl": 12.0}, {"step": 20, "ppl": 10.4}]
    assert recovery.area([(c["step"], c["ppl"]) for c in curve], 10.0, cfg) == pytest.approx(
        recovery.summarise(curve, 10.0, cfg)["auc"])


def _noise_table(damaged: float, seeds=(0, 1)):
    return pd.DataFrame([{"condition": "fixed σ", "layer": l, "seed": s, "base_ppl": 50.0,
                          "damaged_ppl": damaged * (1 + s)} for s in seeds for l in (14, 17)])


def test_anti_layer_summary_is_worded_from_the_ratios():
    hurt = recovery.anti_layer_summary(_noise_table(80.0))
    assert "L14 ×1.60" in hurt and "hurts" in hurt  # first seed only: seed 1 would read ×3.20
    assert "lowers perplexity" in recovery.anti_layer_summary(_noise_table(45.0))
    assert "within the threshold" in recovery.anti_layer_summary(_noise_table(51.0))


def _corr(rho_auc, lo, hi, steps=(0.5, 0.1, 0.9), control=None, short=""):
    """`correlate`'s table; `control` (ρ, lo, hi) adds no-damage rows and the reference."""
    ref = "no-damage run" if control else "base"
    rows = [{"condition": c, "recovery measure": m, "spearman_rho": r, "ci_low": a, "ci_high": b,
             "layers": 14, "recovered": 10, "counts": c == "equal damage", "reference": ref,
             "short of target": short if c == "equal damage" else ""}
            for c in ("fixed σ", "equal damage")
            for m, r, a, b in (("steps τ=0.05", *steps), ("area under the curve", rho_auc, lo, hi))]
    if control:
        rows += [{"condition": recovery.NO_DAMAGE, "recovery measure": m, "spearman_rho": control[0],
                  "ci_low": control[1], "ci_high": control[2], "layers": 14, "recovered": 14,
                  "counts": False, "reference": "base", "short of target": ""}
                 for m in ("steps τ=0.05", "area under the curve")]
    return pd.DataFrame(rows)


def _importance(corr):
    return recovery.assess_importance(corr, CFG, "test")


NAN = float("nan")


def test_importance_claim_every_branch():
    quiet = (NAN, NAN, NAN)  # fine-tuning alone: the area is 0 everywhere, ρ undefined
    assert _importance(_corr(0.7, 0.3, 0.9, control=quiet)).verdict == claims.REPRODUCED
    c = _importance(_corr(0.7, 0.3, 0.9))
    assert c.verdict == claims.NOT_TESTABLE and c.decided_by == "control: not measured"
    c = _importance(_corr(0.7, 0.3, 0.9, control=(0.6, 0.2, 0.9)))
    assert c.verdict == claims.NOT_DIAGNOSTIC
    c = _importance(_corr(0.7, 0.3, 0.9, steps=(-0.6, -0.9, -0.2), control=quiet))
    assert c.verdict == claims.PARTLY and "steps" in c.decided_by
    assert _importance(_corr(-0.5, -0.8, -0.1)).verdict == claims.NOT_REPRODUCED
    # straddling, with its decided secondary named (VERDICTS.md §2 [rev])
    c = _importance(_corr(0.3, -0.2, 0.7, control=quiet))
    assert c.verdict == claims.PARTLY and "straddles" in c.decided_by
    c = _importance(_corr(0.7, 0.3, 0.9, control=quiet, short="L25"))
    assert c.verdict == claims.NOT_TESTABLE and "L25 did not reach" in c.decided_by
    c = _importance(_corr(NAN, NAN, NAN))
    assert c.verdict == claims.NOT_TESTABLE and "undefined" in c.decided_by


def test_correlate_judges_against_the_no_damage_runs_and_adds_the_control():
    layers, deg = [1, 2, 3, 4, 5, 6], [1.0, 5.0, 900.0, 40.0, 10.0, 300.0]
    steps = [0, 20, None, 100, 60, 200]  # slower for the more important layers
    table, curves = [], []
    for l, v in zip(layers, steps):
        run = _run(v)
        table.append({"condition": "equal damage", "layer": l, "seed": 0, "base_ppl": BASE,
                      "damaged_ppl": 2 * BASE, "steps τ=0.05": v,
                      "auc": recovery.area(run, BASE, CFG)})
        curves += [{"condition": "equal damage", "layer": l, "seed": 0, "step": s, "ppl": p}
                   for s, p in run]
    table, curves = pd.DataFrame(table), pd.DataFrame(curves)
    table["damaged_ppl"] = 2 * BASE
    imp = pd.DataFrame({"set": "E1", "method": "neighbour_average", "layer": layers, "deg": deg})
    cfg = dataclasses.replace(CFG, equal_damage=2.0)
    plain = recovery.correlate(table, imp, cfg)
    assert set(plain["reference"]) == {"base"} and recovery.NO_DAMAGE not in set(plain["condition"])
    flat = recovery.correlate(table, imp, cfg, curves=curves,
                              no_damage=_no_damage(layers, (0,)))
    eq = flat.set_index(["condition", "recovery measure"])
    assert eq.loc[("equal damage", "area under the curve"), "reference"] == "no-damage run"
    assert eq.loc[("equal damage", "area under the curve"), "spearman_rho"] == pytest.approx(1.0)
    assert math.isnan(eq.loc[(recovery.NO_DAMAGE, "area under the curve"), "spearman_rho"])
    # fine-tuning alone drifts up with importance: the control tracks importance too
    drift = recovery.correlate(table, imp, cfg, curves=curves, no_damage=_no_damage(
        layers, (0,), drift=dict(zip(layers, [1.0, 1.1, 1.6, 1.3, 1.2, 1.5]))))
    ctrl = drift.set_index(["condition", "recovery measure"]).loc[
        (recovery.NO_DAMAGE, "area under the curve")]
    assert ctrl["spearman_rho"] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        recovery.correlate(table, imp, cfg, no_damage=_no_damage(layers, (0,)))
    short = table.assign(damaged_ppl=[2 * BASE] * 5 + [1.5 * BASE])
    assert recovery.correlate(short, imp, cfg).iloc[0]["short of target"] == "L6"


def test_smoke_chapter_runs_and_judges(lab):
    r = recovery.run(lab)
    cfg = recovery.config_for(lab)
    assert set(r.table["condition"]) == {"fixed σ", "equal damage"}
    assert len(r.table) == len(recovery.items(cfg)) == 2 * len(cfg.layers)
    from layerlab.anatomy import importance
    corr = recovery.correlate(r.table, importance.run(lab).table, cfg)
    found = recovery.assess(r, corr, cfg, "smoke")
    assert [c.id for c in found] == ["P2-C5-recovery-importance"]  # tiny model: no L8/L11
    nd = recovery.run_no_damage(lab)
    assert set(zip(nd["layer"], nd["seed"])) == {(i["layer"], i["seed"]) for i in
                                                 recovery.no_damage_items(cfg).values()}
    assert nd.groupby(["layer", "seed"])["step"].max().eq(cfg.steps).all()
    shown = recovery.control_table(r, nd, cfg)
    assert len(shown) == len(recovery.no_damage_items(cfg))
    assert shown["no damage: lowest PPL / base"].le(1.0 + 1e-9).all()  # step 0 is base itself
    judged = recovery.correlate(r.table, importance.run(lab).table, cfg,
                                curves=r.curves, no_damage=nd)
    assert recovery.NO_DAMAGE in set(judged["condition"])
    assert set(judged.loc[judged["condition"] != recovery.NO_DAMAGE, "reference"]) == {
        "no-damage run"}


def test_the_control_selection_picks_runs_and_leaves_every_key_alone():
    cfg = recovery.RecoveryConfig(layers=(1, 8, 14), seeds=(0, 1), seeded_layers=(8, 14))
    some = cfg.replace(control_layers=(8, 14), control_seeds=(0,))
    assert list(recovery.no_damage_items(some)) == ["no-damage-L08-s0", "no-damage-L14-s0"]
    assert some.key() == cfg.key()  # the damaged runs' records keep their keys
    with pytest.raises(ValueError):
        cfg.replace(control_layers=(9,))
    assert set(recovery.no_damage_items(some.shrunk(4))) <= set(recovery.no_damage_items(
        some.shrunk(4).replace(control_layers=None, control_seeds=None)))
