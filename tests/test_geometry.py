from __future__ import annotations

import numpy as np
import pytest

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

    monkeypatch.setattr(geometry, "measure", flaky)
    with pytest.raises(KeyboardInterrupt):
        geometry.run(profile, cache, progress=False)
    stats = geometry.run(profile, cache, progress=False)
    assert list(stats) == names
    assert seen == names[:3] + names[2:]  # the first two were not measured again
    summary = geometry.middle_summary(stats)
    assert set(summary.index) == set(names)
    arrays = geometry.token_profiles(profile, names[0], cache)
    assert arrays["theta"].shape[1] == stats[names[0]]["n_layers"]
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
    assert s["n_layers"] == 4 and s["summary"]["arch"] == "gpt_neox"
    direct = geometry.run(profile, cache, progress=False, only=["tiny-gptneox"])["tiny-gptneox"]
    np.testing.assert_allclose(s["conventions"]["raw"]["all"]["theta"]["mean"],
                               direct["conventions"]["raw"]["all"]["theta"]["mean"], rtol=1e-4)
