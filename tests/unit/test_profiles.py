from __future__ import annotations

import pytest
import torch

from layerlab import profiles


def test_environment_selects_the_profile(monkeypatch):
    monkeypatch.setenv("LAYERLAB_PROFILE", "smoke")
    assert profiles.active().name == "smoke"
    monkeypatch.setenv("LAYERLAB_PROFILE", "gpu")
    assert profiles.active().name == "gpu"


def _gpus(monkeypatch, *gib: float) -> None:
    class Props:
        def __init__(self, g):
            self.total_memory = int(g * 2**30)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: bool(gib))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(gib))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Props(gib[i]))


@pytest.mark.parametrize("gib, tier", [((), "cpu"), ((15,), "colab"), ((24,), "colab"),
                                       ((40, 40), "gpu"), ((80,), "gpu"), ((139,), "gpu")])
def test_the_default_tier_follows_gpu_memory(monkeypatch, gib, tier):
    monkeypatch.delenv("LAYERLAB_PROFILE", raising=False)
    _gpus(monkeypatch, *gib)
    assert profiles.active().name == tier
    monkeypatch.setenv("LAYERLAB_PROFILE", "cpu")  # the environment overrides
    assert profiles.active().name == "cpu"


def test_the_colab_tier_fits_one_small_gpu():
    colab, gpu = profiles.get("colab"), profiles.get("gpu")
    assert set(colab.geometry.models) < set(gpu.geometry.models)
    assert not {"EleutherAI/pythia-6.9b", "EleutherAI/pythia-12b"} & set(colab.geometry.models)
    assert len(colab.toy.sweeps) < len(gpu.toy.sweeps)
    assert max(c.steps for c in colab.toy.sweep_configs().values()) < gpu.toy.step_range()[1]
    assert colab.geometry.documents < gpu.geometry.documents


def test_bfloat16_becomes_float16_on_a_gpu_without_native_bf16(monkeypatch):
    from layerlab import models

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # T4's emulation
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (7, 5))
    assert models.resolve_dtype("bfloat16") is torch.float16
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert models.resolve_dtype("bfloat16") is torch.bfloat16
    assert models.resolve_dtype(None) is torch.float32


def test_unknown_profile_lists_the_choices(monkeypatch):
    monkeypatch.setenv("LAYERLAB_PROFILE", "huge")
    with pytest.raises(ValueError, match="smoke, cpu, gpu, colab"):
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
