from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from layerlab import profiles, results
from layerlab.depth import geometry


@pytest.fixture
def smoke(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "cache"))
    return profiles.get("smoke"), results.Cache("smoke", root=tmp_path / "results")


def test_run_measures_every_model_and_resumes(smoke, monkeypatch):
    profile, cache = smoke
    names = geometry.model_names(profile)
    real = geometry.measure
    seen = []

    def flaky(name, prof):
        seen.append(name)
        if name == names[2] and seen.count(name) == 1:
            raise KeyboardInterrupt  # a disconnect in the middle of the third model
        return real(name, prof)

    monkeypatch.setattr(geometry.experiment, "measure", flaky)  # where run looks it up
    with pytest.raises(KeyboardInterrupt):
        geometry.run(profile, cache, progress=False)
    stats = geometry.run(profile, cache, progress=False)
    assert list(stats) == names
    assert seen == names[:3] + names[2:]  # the first two were not measured again
    summary = geometry.middle_summary(stats)
    assert set(summary.index) == set(names)
    arrays = geometry.token_profiles(profile, names[0], cache)
    assert arrays["theta"].shape[1] == stats[names[0]].n_layers
    table = geometry.profile_table(stats, "theta")
    assert set(table["convention"]) == {"last block's output", "after final norm (HF)"}
    assert np.isfinite(table["mean"]).all()


def test_hub_path_on_a_local_save_pretrained_folder(smoke, tmp_path, tiny_models):
    """The gpu profile's path (hub id -> from_pretrained, device_map="auto", layer-by-layer
    capture), exercised on a GPT-NeoX folder written by save_pretrained."""
    import dataclasses

    profile, cache = smoke
    folder = tmp_path / "pythia-like"
    lm = tiny_models["tiny-gptneox"]
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    geo = profile.geometry.replace(models=(str(folder),), device_map="auto", dtype="float32")
    gpu_like = dataclasses.replace(profile, geometry=geo)
    stats = geometry.run(gpu_like, cache, progress=False, only=[str(folder)])
    s = stats[str(folder)]
    assert s.n_layers == 4 and s.summary["arch"] == "gpt_neox"
    direct = geometry.run(profile, cache, progress=False, only=["tiny-gptneox"])["tiny-gptneox"]
    np.testing.assert_allclose(s.group("raw", "all")["theta"]["mean"],
                               direct.group("raw", "all")["theta"]["mean"], rtol=1e-4)


def test_untrained_twin_has_the_same_config_and_fresh_weights():
    from layerlab import models

    lm = models.load("tiny-llama")
    with torch.no_grad():
        for p in lm.model.parameters():
            p.add_(0.5)  # stands in for training
    twin = models.untrained_twin(lm, seed=0)
    assert twin.model.config.to_dict() == lm.model.config.to_dict()
    assert twin.n_layers == lm.n_layers and twin.tokenizer is lm.tokenizer
    a, b = lm.model.state_dict(), twin.model.state_dict()
    assert any(not torch.equal(a[k], b[k]) for k in a)
    again = models.untrained_twin(lm, seed=0).model.state_dict()
    assert all(torch.equal(b[k], again[k]) for k in b)  # seeded


def test_sequence_stats_skip_position_zero_and_match_the_streaming_means():
    from layerlab import hidden, models

    lm = models.load("tiny-gptneox")
    ids = torch.randint(0, 200, (3, 16), generator=torch.Generator().manual_seed(0))
    rows = geometry.sequence_stats(lm, [{"input_ids": ids}])
    assert len(rows) == 3 and all(r["tokens"] == 14 for r in rows)  # positions 1..14 kept
    out = hidden.collect(lm, [{"input_ids": ids}], progress=False)
    stream = out["conventions"]["raw"]["pos_ge_1"]["theta"]["mean"]
    mid = np.mean(stream[hidden.middle_layers(lm.n_layers)])
    assert np.mean([r["middle_theta"] for r in rows]) == pytest.approx(mid, rel=1e-4)


def test_paper_last_angle_is_taken_after_the_final_norm_on_the_same_windows():
    """P1-A1's convention: the last angle on the state Hugging Face returns (after the final
    norm), per window of `sequence_stats`; it matches the streaming hf mean, not the raw one."""
    from layerlab import hidden, models

    lm = models.load("tiny-gptneox")
    ids = torch.randint(0, 200, (3, 16), generator=torch.Generator().manual_seed(0))
    rows = geometry.sequence_stats(lm, [{"input_ids": ids}])
    last = geometry.paper_last_angles(lm, [{"input_ids": ids}])
    assert [r["tokens"] for r in last] == [r["tokens"] for r in rows]
    out = hidden.collect(lm, [{"input_ids": ids}], progress=False)
    hf = out["conventions"]["hf"]["pos_ge_1"]["theta"]["mean"][-1]
    raw = out["conventions"]["raw"]["pos_ge_1"]["theta"]["mean"][-1]
    assert abs(hf - raw) > 1e-3  # the final norm turns the last state: the test can tell them apart
    assert np.mean([r[geometry.PAPER_LAST] for r in last]) == pytest.approx(hf, rel=1e-4)
    assert np.mean([r["last_theta"] for r in rows]) == pytest.approx(raw, rel=1e-4)
    assert len(geometry.paper_last_angles(lm, [{"input_ids": ids}], limit=2)) == 2


def test_controls_pair_each_window_with_its_paper_last_angle(smoke):
    profile, cache = smoke
    name = geometry.family_control_names(profile)[-1]
    seq = geometry.controls(profile, cache, only=[name], progress=False)
    assert seq[geometry.PAPER_LAST].notna().all() and set(seq["trained"]) == {True, False}
    table = geometry.control_table(seq, n=200)
    assert {geometry.EDGE_PAPER, geometry.EDGE_BLOCK} <= set(table["statistic"])
    plain = geometry.controls(profile, cache, only=[name], progress=False, paper_last=False)
    assert geometry.PAPER_LAST not in plain.columns


def test_control_table_interval_contains_its_mean_and_difference_is_trained_minus_untrained():
    rng = np.random.default_rng(0)
    rows = []
    for trained, centre in ((True, 1.0), (False, 1.5)):
        for _ in range(30):
            v = centre + 0.05 * rng.standard_normal()
            rows.append({"model": "m", "trained": trained, "layers": 8, "family": False,
                         "first_theta": 2 * v, "last_theta": 2 * v, "middle_theta": v,
                         "middle_rel_update": v, "middle_theta_dh": v})
    t = geometry.control_table(pd.DataFrame(rows), n=500)
    r = t[t["statistic"] == "middle_theta"].iloc[0]
    assert r.trained_lo < r.trained < r.trained_hi
    assert r.difference == pytest.approx(r.trained - r.untrained, abs=1e-3)
    assert r.diff_hi < 0  # clearly below the untrained value
    assert t[t["statistic"] == "edge_ratio"].iloc[0].trained == pytest.approx(2.0, rel=1e-6)
    assert geometry.EDGE_PAPER not in set(t["statistic"])  # no paper-convention column: no row
    paper = geometry.control_table(pd.DataFrame(rows).assign(
        **{geometry.PAPER_LAST: lambda f: 3 * f["middle_theta"]}), n=500)
    r = paper.set_index("statistic")
    # min(first 2v, last 3v)/middle v = 2 after the final norm; the block-only ratio is unchanged
    assert r.loc[geometry.EDGE_PAPER, "trained"] == pytest.approx(2.0, rel=1e-6)
    assert r.loc["edge_ratio", "trained"] == pytest.approx(t.set_index("statistic").loc[
        "edge_ratio", "trained"])


def test_the_smooth_stream_is_aligned_and_the_a3_band_rejects_it():
    from layerlab.depth.declarations import DECLARATIONS

    band = DECLARATIONS["P1-A3-weak-update-correlation"].band
    angles = {L: geometry.smooth_stream(L).mean() for L in (4, 8, 16)}
    # Euler steps of one smooth field: consecutive updates nearly aligned, more so with depth
    assert angles[4] > angles[8] > angles[16] and angles[4] < np.pi / 8
    for L in (4, 8, 16):
        assert band.test(geometry.positive_estimate(L, n=200)) == "fail"
    # the same metric on independent updates (a random walk) gives ≈ π/2, inside the band
    gen = torch.Generator().manual_seed(0)
    walk = torch.cumsum(torch.randn(9, 32, 64, generator=gen), 0)
    from layerlab import hidden

    dh = hidden.token_metrics(walk)["theta_dh"][hidden.middle_pairs(8)].mean()
    assert abs(float(dh) - np.pi / 2) < 0.1
    np.testing.assert_array_equal(geometry.smooth_stream(8), geometry.smooth_stream(8))  # seeded
