from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from layerlab import corpus, hidden


def _states(traj: torch.Tensor) -> list[torch.Tensor]:
    """[L+1, N, d] -> L+1 states of shape [1, N, d] (a batch of one sequence)."""
    return [s.unsqueeze(0) for s in traj]


def test_straight_line_has_aligned_updates_and_linear_progress():
    torch.manual_seed(0)
    h0, v = torch.randn(5, 64), torch.randn(5, 64)
    L = 8
    traj = torch.stack([h0 + l * v for l in range(L + 1)])
    out = hidden.layer_angles(_states(traj))
    assert out["theta"].shape == (L,) and out["theta_dh"].shape == (L - 1,)
    np.testing.assert_allclose(out["theta_dh"], 0.0, atol=2e-3)
    m = hidden.token_metrics(traj)
    np.testing.assert_allclose(m["progress"].mean(1).numpy(), np.arange(L + 1) / L, atol=1e-5)


def test_independent_random_updates_are_near_orthogonal():
    torch.manual_seed(1)
    L, d = 12, 2048
    steps = torch.randn(L, 50, d)
    traj = torch.cat([torch.zeros(1, 50, d) + 10.0, 10.0 + steps.cumsum(0)])
    out = hidden.layer_angles(_states(traj))
    np.testing.assert_allclose(out["theta_dh"], math.pi / 2, atol=0.05)


def test_plane_rotation_gives_the_rotation_angle():
    phi, L = 0.3, 6
    angles = torch.arange(L + 1) * phi
    traj = torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)[:, None, :]  # [L+1, 1, 2]
    out = hidden.layer_angles(_states(traj))
    np.testing.assert_allclose(out["theta"], phi, atol=1e-5)
    # chords of a circle turn by phi from one to the next
    np.testing.assert_allclose(out["theta_dh"], phi, atol=1e-5)


def test_layer_angles_needs_two_layers():
    with pytest.raises(ValueError):
        hidden.layer_angles([torch.zeros(1, 2, 3)] * 2)


def test_accumulator_means_and_quantiles_match_direct_computation():
    torch.manual_seed(2)
    traj = torch.randn(5, 400, 32).cumsum(0)
    m = hidden.token_metrics(traj)
    acc = hidden.StatsAccumulator(4)
    positions = torch.arange(400) % 50
    acc.add(m, positions)
    s = acc.summary()
    np.testing.assert_allclose(s["all"]["theta"]["mean"], m["theta"].mean(1).numpy(), rtol=1e-5)
    width = math.pi / hidden.BINS["theta"][2]
    np.testing.assert_allclose(s["all"]["theta"]["q50"], m["theta"].median(1).values.numpy(),
                               atol=2 * width)
    later = positions >= 1
    np.testing.assert_allclose(s["pos_ge_1"]["norms"]["mean"],
                               m["norms"][:, later].mean(1).numpy(), rtol=1e-5)
    assert s["all"]["tokens"] == 400 and s["pos_ge_1"]["tokens"] == int(later.sum())


def test_nan_values_are_counted_not_averaged():
    acc = hidden._Histograms("theta", 1)
    acc.add(torch.tensor([[0.5, float("nan"), 1.5]]))
    out = acc.summary()
    assert out["nonfinite"] == 1 and out["mean"] == [1.0] and out["count"] == [2]


def test_kept_positions_follow_p1s_rule():
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    keep = hidden.kept_positions(mask)
    assert keep.tolist() == [[True, True, False, False, False], [True, True, True, True, False]]


@pytest.fixture(scope="module")
def blocks(tiny_models):
    tok = tiny_models["tiny-llama"].tokenizer
    return corpus.token_blocks(tok, "wikipedia", n_tokens=8 * 32, seq_len=32)


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gptneox", "tiny-opt", "tiny-gemma3"])
def test_layer_by_layer_equals_full_forward(tiny_models, blocks, name):
    lm = tiny_models[name]
    full, raw_full = hidden.trajectories(lm, blocks[:2])
    lbl, raw_lbl = hidden.trajectories(lm, blocks[:2], layer_by_layer=True)
    torch.testing.assert_close(lbl, full, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(raw_lbl, raw_full)
    a = hidden.collect(lm, hidden.block_batches(blocks, 4), progress=False)
    b = hidden.collect(lm, hidden.block_batches(blocks, 4), progress=False, layer_by_layer=True)
    np.testing.assert_allclose(a["conventions"]["hf"]["all"]["theta"]["mean"],
                               b["conventions"]["hf"]["all"]["theta"]["mean"], rtol=1e-4)


def test_statistics_do_not_depend_on_chunking(tiny_models, blocks):
    lm = tiny_models["tiny-gptneox"]
    one = hidden.collect(lm, hidden.block_batches(blocks, 1), profiles=50, progress=False)
    four = hidden.collect(lm, hidden.block_batches(blocks, 4), profiles=50, progress=False)
    for metric in ("theta", "theta_dh", "norms", "progress"):
        np.testing.assert_allclose(one["conventions"]["raw"]["all"][metric]["mean"],
                                   four["conventions"]["raw"]["all"][metric]["mean"], rtol=1e-5)
    assert one["conventions"]["hf"]["all"]["tokens"] == 8 * 31
    assert one["profiles"]["theta"].shape == (50, lm.n_layers)


def test_token_chunks_bound_memory_without_changing_any_statistic(tiny_models, blocks):
    lm = tiny_models["tiny-llama"]
    batches = hidden.block_batches(blocks, 4)
    whole = hidden.collect(lm, batches, profiles=40, progress=False, chunk_tokens=10_000)
    small = hidden.collect(lm, batches, profiles=40, progress=False, chunk_tokens=7)
    for conv in ("hf", "raw"):
        for group, stats in whole["conventions"][conv].items():
            for metric, summary in stats.items():
                if metric == "tokens":
                    assert small["conventions"][conv][group]["tokens"] == summary
                    continue
                for key, value in summary.items():
                    np.testing.assert_allclose(small["conventions"][conv][group][metric][key],
                                               value, rtol=1e-12, atol=0)
    for key, value in whole["profiles"].items():
        np.testing.assert_array_equal(small["profiles"][key], value)


def test_conventions_differ_only_at_the_last_layer(tiny_models, blocks):
    lm = tiny_models["tiny-llama"]
    out = hidden.collect(lm, hidden.block_batches(blocks, 4), progress=False)
    hf, raw = (out["conventions"][c]["all"] for c in ("hf", "raw"))
    np.testing.assert_allclose(hf["theta"]["mean"][:-1], raw["theta"]["mean"][:-1], rtol=1e-6)
    np.testing.assert_allclose(hf["norms"]["mean"][:-1], raw["norms"]["mean"][:-1], rtol=1e-6)
    assert hf["norms"]["mean"][-1] != pytest.approx(raw["norms"]["mean"][-1], rel=0.01)
    # a freshly initialised RMSNorm has unit gain: it rescales but does not rotate, so the last
    # angle agrees here (learned gains in real models rotate it)
    assert hf["theta"]["mean"][-1] == pytest.approx(raw["theta"]["mean"][-1], rel=1e-5)


def _naive(traj: torch.Tensor) -> dict[str, torch.Tensor]:
    """Direct, slow definitions of every metric (float64), to check the streamlined ones."""
    h = traj.double()
    def ang(a, b):
        return torch.arccos(((a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))).clamp(-1, 1))
    dh = h[1:] - h[:-1]
    span = h[-1] - h[0]
    return {"theta": ang(h[:-1], h[1:]), "theta_dh": ang(dh[:-1], dh[1:]),
            "rel_update": dh.norm(dim=-1) / h[:-1].norm(dim=-1), "norms": h.norm(dim=-1),
            "progress": ((h - h[0]) * span).sum(-1) / (span * span).sum(-1),
            "angle_to_end": ang(h[:-1], h[-1].expand_as(h[:-1]))}


@pytest.mark.parametrize("L", [1, 2, 5])
def test_streamlined_metrics_equal_the_definitions(L):
    torch.manual_seed(L)
    traj = (torch.randn(L + 1, 30, 16) * 0.3 + torch.randn(1, 30, 16)).cumsum(0)
    fast, slow = hidden.token_metrics(traj), _naive(traj)
    for name in hidden.METRICS:
        assert fast[name].shape == slow[name].shape, name
        torch.testing.assert_close(fast[name].double(), slow[name], rtol=1e-4, atol=1e-4)
