from __future__ import annotations

import json

import numpy as np
import pytest

from layerlab import results


@pytest.fixture
def cache(tmp_path):
    return results.Cache("smoke", root=tmp_path)


def test_cached_computes_once_per_config(cache):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.float32(1.5), "v": np.arange(3)}

    first = cache.cached("exp", {"a": 1}, compute)
    second = cache.cached("exp", {"a": 1}, compute)
    assert first == second == {"x": 1.5, "v": [0, 1, 2]}
    assert len(calls) == 1
    cache.cached("exp", {"a": 2}, compute)
    assert len(calls) == 2
    cache.cached("exp", {"a": 1}, compute, force=True)
    assert len(calls) == 3


def test_config_hash_ignores_key_order():
    assert results.config_hash({"a": 1, "b": [1, 2]}) == results.config_hash({"b": [1, 2], "a": 1})
    assert results.config_hash({"a": 1}) != results.config_hash({"a": 2})


def test_record_carries_provenance(cache):
    cache.put("exp", {"a": 1}, 42)
    record = json.loads(cache.path("exp", {"a": 1}).read_text())
    assert record["value"] == 42 and record["config"] == {"a": 1}
    prov = record["provenance"]
    for field in ("profile", "device", "torch", "transformers", "git_commit", "date_utc"):
        assert prov[field]
    assert prov["profile"] == "smoke"
    assert cache.provenance_of("exp", {"a": 1}) == prov


def test_failed_write_keeps_the_old_file(cache, monkeypatch):
    cache.put("exp", {"a": 1}, "old")
    path = cache.path("exp", {"a": 1})

    def crash(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(results.os, "replace", crash)
    with pytest.raises(OSError):
        cache.put("exp", {"a": 1}, "new")
    assert cache.get("exp", {"a": 1}) == "old"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # temporary file removed


def test_unserialisable_value_writes_nothing(cache):
    with pytest.raises(TypeError):
        cache.put("exp", {"a": 1}, {"bad": object()})
    assert cache.get("exp", {"a": 1}) is None
    assert not cache.path("exp", {"a": 1}).exists()


def test_for_each_resumes_after_interruption(cache):
    done = []

    def compute(name, item):
        if name == "c" and len(done) < 10:
            done.append("crash")
            raise KeyboardInterrupt  # e.g. a Colab disconnect
        done.append(name)
        return item * 10

    items = {"a": 1, "b": 2, "c": 3, "d": 4}
    with pytest.raises(KeyboardInterrupt):
        cache.for_each("sweep", {"k": 0}, items, compute, progress=False)
    assert done == ["a", "b", "crash"]
    done.extend(["x"] * 10)  # the next run does not crash
    out = cache.for_each("sweep", {"k": 0}, items, compute, progress=False)
    assert out == {"a": 10, "b": 20, "c": 30, "d": 40}
    assert done[-2:] == ["c", "d"]  # a and b were not recomputed


def test_item_names_with_slashes_are_safe(cache):
    out = cache.for_each("m", {}, {"EleutherAI/pythia-410m": 1}, lambda n, i: i, progress=False)
    assert out == {"EleutherAI/pythia-410m": 1}
    files = list((cache.folder / "m").iterdir())
    assert len(files) == 1 and "/" not in files[0].name and files[0].name.startswith("EleutherAI")


def test_arrays_round_trip_beside_the_record(cache):
    arrays = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "ids": np.array([3, 1])}
    assert cache.get_arrays("exp", {"a": 1}, "m") is None
    cache.put_arrays("exp", {"a": 1}, arrays, item="m")
    back = cache.get_arrays("exp", {"a": 1}, "m")
    assert back["x"].dtype == np.float32
    np.testing.assert_array_equal(back["x"], arrays["x"])
    np.testing.assert_array_equal(back["ids"], arrays["ids"])


def test_cache_only_mode_refuses_to_compute(tmp_path, monkeypatch):
    from layerlab import results

    cache = results.Cache("smoke", root=tmp_path)
    cache.put("exp", {"a": 1}, 5)
    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")
    assert cache.cached("exp", {"a": 1}, lambda: 6) == 5
    with pytest.raises(LookupError, match="LAYERLAB_CACHE_ONLY"):
        cache.cached("exp", {"a": 2}, lambda: 6)
    with pytest.raises(LookupError, match="exp/x"):
        cache.for_each("exp", {"a": 1}, {"x": 1}, lambda n, i: 1, progress=False)


def test_cache_only_mode_also_guards_the_geometry_runner(tmp_path, monkeypatch):
    from layerlab import geometry, profiles, results

    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")
    with pytest.raises(LookupError, match="hidden_geometry/tiny-llama"):
        geometry.run(profiles.get("smoke"), results.Cache("smoke", root=tmp_path),
                     progress=False, only=["tiny-llama"])
