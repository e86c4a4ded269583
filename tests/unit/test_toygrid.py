"""The batched toy grid (`layerlab.depth.toy.grid`) ends where the sweeps end one by one, and a
grid stopped at a deadline resumes from its checkpoint to the same place."""

from __future__ import annotations

import pytest
import torch

from layerlab.depth import toy
from layerlab.depth.toy.stack import stack_blocks
from layerlab.settings import ToyConfig

torch.set_num_threads(1)

BASE = dict(teacher_depth=6, batch_size=16, steps=6, eval_every=3, eval_batches=2)


def _grid_configs(**over) -> dict[str, ToyConfig]:
    """Three sweeps that differ in teacher type, temperature, seed and student depths."""
    shared = {**BASE, **over}
    return {
        "a": ToyConfig(**shared, teacher="independent", temperature=0.5, seed=0,
                       student_depths=(1, 2, 4)),
        "b": ToyConfig(**shared, teacher="tied", temperature=2.0, seed=1, student_depths=(2, 3)),
        "c": ToyConfig(**shared, teacher="tied", temperature=1.0, seed=2, student_depths=(1, 4)),
    }


CASES = {
    "kl-fixed-decay": {},
    "kl-learned-constant": {"head": "learned", "schedule": "constant"},
    "mse": {"objective": "mse"},
    "mse-rk2": {"objective": "mse", "student_block": "rk2"},
}


@pytest.mark.parametrize("over", CASES.values(), ids=CASES.keys())
def test_grid_equals_the_sweeps_one_by_one(over):
    configs = _grid_configs(**over)
    grid = toy.Grid(configs)
    grid.train(progress=False)
    got = grid.results()
    for name, cfg in configs.items():
        sweep = toy.Sweep(cfg)
        alone = sweep.run(progress=False)
        assert [c["step"] for c in got[name]["curve"]] == [c["step"] for c in alone["curve"]]
        for mine, theirs in zip(got[name]["curve"], alone["curve"]):
            torch.testing.assert_close(torch.tensor(mine["test_loss"]),
                                       torch.tensor(theirs["test_loss"]), rtol=1e-4, atol=1e-6)
        for d, student in zip(cfg.student_depths, sweep.students):
            stacked = grid.student(name, d)
            ref = stack_blocks(student["net"].blocks)
            for k, v in ref.items():
                torch.testing.assert_close(stacked[k], v.detach(), rtol=1e-4, atol=1e-6)


def test_the_loss_actually_falls():
    grid = toy.Grid(_grid_configs(steps=40, eval_every=40))
    before = grid.test_loss()
    grid.train(progress=False)
    after = grid.curves[-1]["test_loss"]
    assert all(a < b for d in before for a, b in zip(after[d], before[d]))


def test_a_grid_stopped_at_a_deadline_resumes_to_the_same_place(tmp_path):
    configs = _grid_configs()
    whole = toy.Grid(configs)
    whole.train(progress=False)
    first = toy.Grid(configs)
    assert first.train(deadline=0.0, checkpoint=tmp_path / "g.pt", progress=False) is False
    assert first.step_count == 0
    first.train_step(), first.train_step()
    first.save(tmp_path / "g.pt")
    again = toy.Grid(configs)
    assert again.load(tmp_path / "g.pt") and again.step_count == 2
    assert again.train(progress=False)
    assert again.results() == whole.results()


def test_a_checkpoint_of_other_sweeps_is_not_loaded(tmp_path):
    toy.Grid(_grid_configs()).save(tmp_path / "g.pt")
    assert not toy.Grid(_grid_configs(base_lr=1e-3)).load(tmp_path / "g.pt")


def test_groups_split_what_cannot_share_a_step():
    configs = {**_grid_configs(), "m": ToyConfig(**BASE, objective="mse")}
    parts = toy.groups(configs)
    assert [sorted(p) for p in parts] == [["a", "b", "c"], ["m"]]
    with pytest.raises(ValueError, match="must agree"):
        toy.Grid(configs)
    with pytest.raises(ValueError, match="at least one"):
        toy.Grid({})


def test_run_grid_stores_every_student_and_resumes_after_a_deadline(tmp_path, monkeypatch):
    from layerlab import results

    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "cache"))
    cache = results.Cache("smoke", tmp_path / "results")
    configs = {**_grid_configs(), "m": ToyConfig(**BASE, objective="mse")}  # two groups
    assert toy.run_grid("smoke", configs, cache, deadline=0.0, progress=False) is False
    assert not list((tmp_path / "results").rglob("*.json"))  # nothing half-done stored
    assert toy.run_grid("smoke", configs, cache, progress=False) is True
    assert not list((tmp_path / "cache").rglob("*.pt"))  # finished groups drop their checkpoint
    for name, cfg in configs.items():
        # what run_sweep reads back is what the sweep alone gives, and it trains nothing more
        with monkeypatch.context() as m:
            m.setattr(toy.Sweep, "run", lambda self, **kw: pytest.fail("retrained"))
            stored = toy.run_sweep(name, cfg, cache, progress=False)
        alone = toy.Sweep(cfg).run(progress=False)
        assert stored["final"] == pytest.approx(alone["final"], rel=1e-4)


def test_groups_are_cut_into_parts_that_keep_a_teacher_and_seed_together():
    configs = {f"T{t}-{teacher}-s{s}": ToyConfig(**BASE, temperature=t, teacher=teacher, seed=s)
               for s in (0, 1) for teacher in ("independent", "tied") for t in (0.5, 1.0, 2.0)}
    parts = toy.groups(configs, max_size=3)
    assert len(parts) == 4 and sum(len(p) for p in parts) == len(configs)
    for part in parts:
        assert len({(c.teacher, c.seed) for c in part.values()}) == 1
    assert toy.groups(configs) == [configs]


def test_a_cuda_graph_is_only_captured_on_cuda():
    grid = toy.Grid(_grid_configs())
    assert grid.use_cuda_graph() is False  # CPU: eager steps, nothing changed
    grid.train(progress=False)
    assert grid.done
