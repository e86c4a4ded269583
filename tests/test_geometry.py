from __future__ import annotations

import numpy as np
import pytest

from layerlab import geometry, profiles, results


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
