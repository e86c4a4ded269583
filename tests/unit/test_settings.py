"""Typed run settings: every experiment's settings build and validate for every profile (and
its shrunk dry-run twin), and bad values are refused with a message naming them."""

import dataclasses

import pytest

from layerlab import profiles, settings
from layerlab.settings import SettingsError

ALL = [(name, dry) for name in profiles.PROFILES for dry in (False, True)]


def _profile(name: str, dry: bool) -> profiles.Profile:
    p = profiles.PROFILES[name]
    return p.shrunk() if dry else p


@pytest.mark.parametrize("name,dry", ALL)
def test_every_experiment_has_typed_settings(name, dry):
    p = _profile(name, dry)
    built = p.settings()
    assert set(built) == set(profiles.SETTINGS_FIELDS)
    for field, cls in zip(profiles.SETTINGS_FIELDS, settings.EXPERIMENT_SETTINGS):
        assert isinstance(built[field], cls)
        assert cls.from_profile(p) is built[field]
        assert dataclasses.is_dataclass(built[field])
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(built[field], dataclasses.fields(built[field])[0].name, None)
        built[field].key()  # every key serialises
    # what the chapters read, on every profile (chapter 04 once read a key the gpu lacked)
    lo, hi = p.toy.step_range()
    assert 0 < lo <= hi
    for cfg in p.toy.sweep_configs().values():
        assert cfg.steps > 0 and cfg.eval_every > 0
    assert p.toy.signature_config("tied").steps == p.toy.signature_steps
    for regime in p.growth.regimes:
        assert p.growth.run_config(regime, p.growth.seeds[0]).regime == regime
    assert all(l < p.anatomy.n_layers for l in p.anatomy.recovery.layers)
    assert p.family.warmup < p.family.steps


def test_dry_run_shrinks_every_size_and_keeps_the_names(monkeypatch):
    gpu = profiles.PROFILES["gpu"]
    monkeypatch.setenv("LAYERLAB_DRY", "1")
    dry = profiles.get("gpu")
    assert dry.dry and dry.name == "gpu" and dry.models == gpu.models
    assert dry.geometry.models == gpu.geometry.models  # same hub ids, served by stand-ins
    assert dry.anatomy.model == gpu.anatomy.model
    assert set(dry.toy.sweeps) < set(gpu.toy.sweeps)
    assert dry.toy.step_range()[1] < gpu.toy.step_range()[0]
    assert dry.family.steps < gpu.family.steps and dry.geometry.documents < gpu.geometry.documents
    assert {c.teacher for c in dry.toy.sweep_configs().values()} == {"independent", "tied"}
    assert {c.objective for c in dry.toy.sweep_configs().values()} == {"kl", "mse"}


@pytest.mark.parametrize("build", [
    lambda: settings.ToyConfig(steps=0),
    lambda: settings.ToyConfig(teacher="smooth"),
    lambda: settings.ToyConfig(steps=1.5),
    lambda: profiles.PROFILES["cpu"].toy.replace(sweeps={"x": {"stepz": 3}}),
    lambda: profiles.PROFILES["cpu"].toy.replace(sweeps={}),
    lambda: profiles.PROFILES["cpu"].anatomy.replace(map_methods={"E0": ("average",)}),
    lambda: profiles.PROFILES["cpu"].anatomy.replace(n_layers=10),  # recovery layer 25
    lambda: profiles.PROFILES["cpu"].geometry.replace(documents=10),  # and tokens
    lambda: profiles.PROFILES["cpu"].family.replace(heads=5),
    lambda: profiles.PROFILES["cpu"].growth.replace(regimes=("forget",)),
    lambda: settings.GrowthConfig(tokenizer="bpe"),
    lambda: settings.RecoveryConfig(layers=()),
    lambda: settings.DepthScalingSettings(profile_grid=(2.4, 0.8, 9)),
])
def test_bad_settings_are_refused(build):
    with pytest.raises(SettingsError):
        build()


def test_cpu_keys_are_the_committed_ones():
    """The refactor to typed settings kept every cache key of the committed cpu results."""
    cpu = profiles.PROFILES["cpu"]
    assert cpu.geometry.key() == {"tokens": 32 * 512, "seq_len": 512, "batch_size": 2,
                                  "profiles": 8000, "family_tokens": 64 * 128}
    assert "depths" not in cpu.family.key() and cpu.family.key()["steps"] == 1200
    assert dataclasses.asdict(cpu.toy.sweep_configs()["mse-tied-s1"])["seed"] == 1
