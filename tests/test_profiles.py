from __future__ import annotations

import pytest
import torch

from layerlab import profiles


def test_environment_selects_the_profile(monkeypatch):
    monkeypatch.setenv("LAYERLAB_PROFILE", "smoke")
    assert profiles.active().name == "smoke"
    monkeypatch.setenv("LAYERLAB_PROFILE", "gpu")
    assert profiles.active().name == "gpu"


def test_default_depends_on_cuda(monkeypatch):
    monkeypatch.delenv("LAYERLAB_PROFILE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert profiles.active().name == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert profiles.active().name == "gpu"


def test_unknown_profile_lists_the_choices(monkeypatch):
    monkeypatch.setenv("LAYERLAB_PROFILE", "huge")
    with pytest.raises(ValueError, match="smoke, cpu, gpu"):
        profiles.active()


def test_profiles_grow_in_size():
    smoke, cpu, gpu = (profiles.get(n) for n in ("smoke", "cpu", "gpu"))
    assert smoke.eval_tokens < cpu.eval_tokens < gpu.eval_tokens
    assert all(m.startswith("tiny-") for m in smoke.models)
    assert "smollm2-135m-instruct-q4" in cpu.models


def test_setup_seeds_everything(monkeypatch):
    monkeypatch.setenv("LAYERLAB_PROFILE", "smoke")
    profiles.setup(seed=3)
    a = torch.rand(3)
    profiles.setup(seed=3)
    assert torch.equal(a, torch.rand(3))
