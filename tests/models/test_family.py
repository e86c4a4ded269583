from __future__ import annotations

import pytest
import torch

from layerlab.depth import family

CFG = family.FamilyConfig(depths=(1, 2), width=32, seq_len=32, batch_size=4, steps=24,
                          eval_every=8, eval_blocks=4, checkpoint_every=8, warmup=4)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "cache"))


def test_members_share_one_token_budget_and_order():
    tok = family.build(1, CFG).tokenizer
    a = family._train_blocks(CFG, tok)
    assert a.shape == (CFG.steps, CFG.batch_size, CFG.seq_len)
    assert torch.equal(a, family._train_blocks(CFG, tok))  # every depth sees the same batches
    assert CFG.tokens_per_model == CFG.steps * CFG.batch_size * CFG.seq_len


def test_depth_sets_the_number_of_blocks_and_nothing_else():
    small, big = family.build(1, CFG), family.build(2, CFG)
    assert (small.n_layers, big.n_layers) == (1, 2)
    assert small.d_model == big.d_model == CFG.width


def test_training_lowers_the_validation_loss():
    out = family.train(2, CFG, progress=False)
    curve = [p["val_loss"] for p in out["curve"]]
    assert out["finished"] and len(curve) == 3
    assert curve[-1] < curve[0]
    assert curve[-1] < 5.55  # below the uniform guess over 257 bytes (ln 257 = 5.55)


def test_resume_after_interruption_gives_the_same_model():
    interrupted = family.train(2, CFG, progress=False, stop_after=10)
    assert not interrupted["finished"] and interrupted["steps_done"] == 8  # last checkpoint
    resumed = family.train(2, CFG, progress=False)
    resumed_weights = family.load_member(2, CFG).model.state_dict()

    other = CFG.replace()  # same config, fresh folder
    import shutil
    shutil.rmtree(family.folder(CFG))
    straight = family.train(2, other, progress=False)
    straight_weights = family.load_member(2, other).model.state_dict()
    assert [p["val_loss"] for p in resumed["curve"]] == pytest.approx(
        [p["val_loss"] for p in straight["curve"]], rel=1e-6)
    for name, tensor in straight_weights.items():
        torch.testing.assert_close(resumed_weights[name], tensor, rtol=1e-6, atol=1e-7)


def test_load_member_retrains_when_weights_are_missing():
    lm = family.load_member(1, CFG)
    assert lm.n_layers == 1
    assert family.checkpoint(1, CFG).is_file()


def test_seeds_give_different_members_and_batches():
    cfg = CFG.replace(seeds=(0, 1))
    tok = family.build(1, cfg).tokenizer
    assert not torch.equal(family._train_blocks(cfg, tok, 0), family._train_blocks(cfg, tok, 1))
    a, b = family.build(2, cfg, 0).model.state_dict(), family.build(2, cfg, 1).model.state_dict()
    assert any(not torch.equal(a[k], b[k]) for k in a)
    assert family.checkpoint(2, cfg, 0) != family.checkpoint(2, cfg, 1)


def test_train_family_runs_every_depth_for_every_seed(tmp_path):
    from layerlab import results

    cfg = CFG.replace(seeds=(0, 1), steps=8, eval_every=8, checkpoint_every=8, warmup=2)
    out = family.train_family(cfg, "smoke", results.Cache("smoke", tmp_path), progress=False)
    assert sorted(out) == ["depth-1-s0", "depth-1-s1", "depth-2-s0", "depth-2-s1"]
    assert {r["seed"] for r in out.values()} == {0, 1}
