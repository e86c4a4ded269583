from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest
import torch

from layerlab import results
from layerlab.depth import toy

SMALL = dict(teacher_depth=8, student_depths=(1, 2, 4), batch_size=32, steps=40, eval_every=20,
             eval_batches=2)


def test_tied_teacher_shares_one_set_of_tensors():
    net, _ = toy.make_teacher(16, tied=True, seed=0)
    assert all(b is net.blocks[0] for b in net.blocks)
    assert sum(p.numel() for p in net.parameters()) == sum(p.numel() for p in toy.Block().parameters())
    with torch.no_grad():
        net.blocks[0].w1.bias.add_(1.0)
    assert torch.equal(net.blocks[5].w1.bias, net.blocks[0].w1.bias)


def test_independent_teacher_has_distinct_blocks_scaled_by_one_over_sqrt_depth():
    depth = 16
    net, _ = toy.make_teacher(depth, tied=False, seed=0)
    assert len({id(b) for b in net.blocks}) == depth
    bound = 1 / math.sqrt(4 * toy.WIDTH)  # PyTorch's default init for W2 is U(±1/√fan_in)
    w2 = torch.cat([b.w2.weight.flatten() for b in net.blocks])
    assert w2.abs().max() <= bound / math.sqrt(depth) + 1e-7
    assert w2.abs().max() > 0.9 * bound / math.sqrt(depth)


def test_teachers_are_seeded():
    a, _ = toy.make_teacher(4, tied=False, seed=3)
    b, _ = toy.make_teacher(4, tied=False, seed=3)
    x = torch.randn(5, toy.WIDTH)
    assert torch.equal(a(x), b(x))


def test_student_starts_as_the_identity_with_a_uniform_output():
    student = toy.make_student(6, seed=0)
    x = torch.randn(10, toy.WIDTH)
    torch.testing.assert_close(student["net"](x), toy.rms(x))
    logits = student["head"](student["net"](x))
    assert torch.count_nonzero(logits) == 0


@pytest.mark.parametrize("objective,teacher", [("mse", "independent"), ("kl", "tied")])
def test_training_lowers_every_students_test_loss(objective, teacher):
    sweep = toy.Sweep(toy.ToyConfig(objective=objective, teacher=teacher, **SMALL))
    before = sweep.test_loss()
    out = sweep.run(progress=False)
    assert all(a < b for a, b in zip(out["final"], before))


def test_training_together_equals_training_alone():
    together = toy.Sweep(toy.ToyConfig(**{**SMALL, "steps": 5}))
    alone = toy.Sweep(toy.ToyConfig(**{**SMALL, "steps": 5, "student_depths": (2,)}))
    for _ in range(5):
        together.train_step()
        alone.train_step()
    for p, q in zip(together.students[1].parameters(), alone.students[0].parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


def test_learning_rate_schedule_decays_to_a_tenth():
    cfg = toy.ToyConfig(steps=100)
    assert cfg.factor(0) == cfg.factor(79) == 1.0
    assert cfg.factor(100) == pytest.approx(0.1)
    assert cfg.lr(16) == pytest.approx(6e-4 * 4 / 4)
    assert toy.ToyConfig(objective="mse").lr(4) == pytest.approx(6e-4 * 2 / 2)
    assert toy.ToyConfig(schedule="constant").factor(99) == 1.0


def test_fit_alpha_recovers_a_power_law():
    depths = np.array([6, 12, 24, 48])
    for alpha in (1.0, 3.0):
        est, se = toy.fit_alpha(depths, 2.0 * depths ** -alpha)
        assert est == pytest.approx(alpha) and se == pytest.approx(0.0, abs=1e-9)
    rng = np.random.default_rng(0)
    est, se = toy.fit_alpha(depths, 2.0 * depths ** -1.5 * np.exp(0.05 * rng.standard_normal(4)))
    assert abs(est - 1.5) < 4 * se + 0.05


def test_analytic_warm_up_has_the_textbook_exponents():
    depths = [8, 16, 32, 64, 128]
    euler, _ = toy.fit_alpha(depths, toy.euler_error(depths))
    average, _ = toy.fit_alpha(depths, toy.averaging_error(depths))
    assert euler == pytest.approx(2.0, abs=0.15)
    assert average == pytest.approx(1.0, abs=0.1)


def test_student_angles_use_the_llm_statistics():
    sweep = toy.Sweep(toy.ToyConfig(**{**SMALL, "student_depths": (4,)}))
    rows = toy.student_angles(sweep, n=64)
    assert {r["network"] for r in rows} == {"student ℓ=4", "teacher (independent, 8)"}
    assert all(0 <= r["middle_theta_dh"] <= math.pi for r in rows)


def test_bad_config_is_rejected():
    with pytest.raises(ValueError):
        toy.Sweep(toy.ToyConfig(teacher="smooth"))


def test_a_sweep_extended_by_one_depth_trains_only_that_student(tmp_path, monkeypatch):
    from layerlab import results

    cache = results.Cache("smoke", tmp_path)
    cfg = toy.ToyConfig(**{**SMALL, "student_depths": (1, 2), "steps": 6, "eval_every": 3})
    first = toy.run_sweep("s", cfg, cache, progress=False)
    trained = []
    real = toy.Sweep.run
    monkeypatch.setattr(toy.Sweep, "run", lambda self, **kw: trained.append(
        self.cfg.student_depths) or real(self, **kw))
    wider = toy.run_sweep("s", cfg.replace(student_depths=(1, 2, 4)), cache, progress=False)
    assert trained == [(4,)]
    assert wider["final"][:2] == first["final"]
    joint = toy.Sweep(cfg.replace(student_depths=(1, 2, 4))).run(progress=False)
    assert wider["final"] == pytest.approx(joint["final"], rel=1e-6)


def test_rk2_student_is_two_midpoint_mlps_per_block_and_starts_as_identity():
    student = toy.make_student(3, seed=0, block="rk2", head=False)
    assert all(isinstance(b, toy.RK2Block) for b in student["net"].blocks)
    x = torch.randn(7, toy.WIDTH)
    torch.testing.assert_close(student["net"](x), toy.rms(x))
    block = toy.RK2Block()
    h = torch.randn(5, toy.WIDTH)
    k1 = block.first.w2(torch.relu(block.first.w1(toy.rms(h))) ** 2)
    mid = h + 0.5 * k1
    expected = h + block.second.w2(torch.relu(block.second.w1(toy.rms(mid))) ** 2)
    torch.testing.assert_close(block(h), expected)


def test_untrained_control_student_keeps_its_default_initialisation():
    student = toy.make_student(4, seed=0, head=False, identity=False)
    x = torch.randn(6, toy.WIDTH)
    assert not torch.allclose(student["net"](x), toy.rms(x))


def test_gpu_toy_grid_has_the_papers_sixteen_temperatures():
    from layerlab import profiles

    temps = sorted({c.temperature for c in toy.sweep_configs(profiles.get("gpu")).values()
                    if c.objective == "kl"})
    assert len(temps) == 16
    np.testing.assert_allclose(temps, [10 ** (-2 + 2 * k / 15) for k in range(16)])


def test_the_seed_scheme_and_the_student_key_are_those_of_the_stored_results():
    # the committed toy records were made with these offsets and this key: changing either
    # orphans them (the key) or changes every number (the seeds)
    assert [toy.teacher_seed(5), toy.data_seed(5), toy.head_seed(5), toy.eval_seed(5),
            toy.student_seed(5, 16), toy.probe_seed(5)] == [5, 6, 12, 12350, 5016, 1004]
    cfg = toy.ToyConfig(**SMALL)
    assert toy.student_key(cfg) == {k: v for k, v in asdict(cfg).items() if k != "student_depths"}
    assert results.SCHEMAS[toy.STUDENTS][0] == 2  # 2: one record per student


def test_both_trainers_draw_from_the_seed_scheme():
    cfg = toy.ToyConfig(**{**SMALL, "seed": 3})
    sweep, grid = toy.Sweep(cfg), toy.Grid({"s": cfg})
    assert torch.equal(sweep.data.get_state(), torch.Generator().manual_seed(4).get_state())
    assert torch.equal(grid.data[0].get_state(), sweep.data.get_state())
    assert torch.equal(grid.fixed_head[0], sweep.fixed_head)
    assert torch.equal(sweep.fixed_head, toy.fixed_head(3))


def test_signature_rows_name_their_run_so_d5_finds_its_sweeps(tmp_path):
    import json

    from layerlab import profiles

    smoke = profiles.get("smoke")
    sig = toy.signatures(smoke, results.Cache("smoke", tmp_path), progress=False)
    row = sig[sig["teacher"] == "independent"].iloc[0]
    assert (row.seed, row.train_steps) == (0, smoke.toy.signature_steps)
    sweep = smoke.toy.sweep_configs()["mse-independent"]  # the same setting, another length

    def unlimited(key: str) -> dict:
        return {k: v for k, v in json.loads(key).items() if k != "steps"}

    assert unlimited(row.setting_key) == unlimited(toy.setting_key(asdict(sweep)))
    assert sweep.steps != smoke.toy.signature_steps
