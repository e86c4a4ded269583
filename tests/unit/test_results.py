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
    assert record["value"] == 42
    assert record["config"] == {"a": 1, "_schema": 1, "_inputs": {}}
    prov = record["provenance"]
    for field in ("profile", "device", "torch", "transformers", "git_commit", "date_utc"):
        assert prov[field]
    assert prov["profile"] == "smoke"
    assert cache.provenance_of("exp", {"a": 1}) == prov


def test_a_computed_record_says_what_it_cost_and_a_reader_sums_it(cache):
    import time

    cache.cached("exp", {"a": 1}, lambda: time.sleep(0.05) or 1)
    cache.for_each("exp", {"b": 1}, {"x": 1, "y": 2}, lambda _n, v: time.sleep(0.02) or v,
                   progress=False)
    cache.put("exp", {"c": 1}, 3)  # stored without a computation: no cost recorded
    assert cache.provenance_of("exp", {"a": 1})["compute_seconds"] >= 0.05
    assert "compute_seconds" not in cache.provenance_of("exp", {"c": 1})
    assert cache.spent >= 0.09
    reader = results.Cache(cache.profile, cache.root)
    reader.get("exp", {"a": 1})
    reader.for_each("exp", {"b": 1}, {"x": 1, "y": 2}, lambda *_: 1 / 0, progress=False)
    reader.get("exp", {"c": 1})
    assert reader.spent == pytest.approx(cache.spent, abs=1e-6) and reader.untimed == 1


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
    from layerlab import profiles, results
    from layerlab.depth import geometry

    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")
    with pytest.raises(LookupError, match="hidden_geometry/tiny-llama"):
        geometry.run(profiles.get("smoke"), results.Cache("smoke", root=tmp_path),
                     progress=False, only=["tiny-llama"])


# --- freshness and robustness -----------------------------------------------------------------
def test_key_holds_schema_version_and_input_hashes(cache, tmp_path, monkeypatch):
    import shutil

    from layerlab import paths

    data = tmp_path / "data"
    shutil.copytree(paths.data_dir() / "eval", data / "eval")
    (data / "corpora").mkdir()
    (data / "corpora" / "x.txt.xz").write_bytes(b"corpus")
    monkeypatch.setenv("LAYERLAB_DATA", str(data))
    cache.put("anatomy_base", {"set": "E0"}, 1.5)
    assert cache.get("anatomy_base", {"set": "E0"}) == 1.5
    before = cache.path("anatomy_base", {"set": "E0"})
    # one sentence of E0 edited: the old number is no longer found
    e0 = data / "eval" / "e0_sentences.txt"
    e0.write_text(e0.read_text() + "One more sentence.\n")
    assert cache.path("anatomy_base", {"set": "E0"}) != before
    assert cache.get("anatomy_base", {"set": "E0"}) is None
    # a schema bump (the experiment's code changed what it computes) does the same
    cache.put("toy_students", {"a": 1}, 2)
    monkeypatch.setitem(results.SCHEMAS, "toy_students", (results.SCHEMAS["toy_students"][0] + 1, ()))
    assert cache.get("toy_students", {"a": 1}) is None


def test_every_committed_experiment_has_a_schema():
    from layerlab import paths

    names = {p.name for p in (paths.REPO_ROOT / "results").glob("*/*") if p.is_dir()}
    # reports/ holds `layerlab report` folders, not records: each is a page and its report.json
    # (whose steps are keyed by the text's hash in the report's own, uncommitted, step cache)
    names.discard("reports")
    assert names and names <= set(results.SCHEMAS), names - set(results.SCHEMAS)
    for folder in (paths.REPO_ROOT / "results").glob("*/reports/*"):
        committed = {p.name for p in folder.iterdir() if p.name != "cache"}
        assert committed == {"report.json", "report.html"}, folder


def test_a_stored_none_is_a_result(cache):
    calls = []
    compute = lambda: calls.append(1)  # noqa: E731 - returns None
    assert cache.cached("exp", {"a": 1}, compute) is None
    assert cache.cached("exp", {"a": 1}, compute) is None
    assert calls == [1]
    out = cache.for_each("exp", {"b": 1}, {"x": 1}, lambda n, i: calls.append(n), progress=False)
    again = cache.for_each("exp", {"b": 1}, {"x": 1}, lambda n, i: calls.append(n), progress=False)
    assert out == again == {"x": None} and calls == [1, "x"]


@pytest.mark.parametrize("damage", [lambda t: t[: len(t) // 2], lambda t: "{}", lambda t: "\x00"])
def test_a_corrupt_record_names_its_file(cache, damage):
    cache.put("exp", {"a": 1}, {"v": list(range(50))})
    path = cache.path("exp", {"a": 1})
    path.write_text(damage(path.read_text()))
    with pytest.raises(results.CacheError, match=str(path.name)) as err:
        cache.get("exp", {"a": 1})
    assert "Delete it" in str(err.value) and "git checkout" in str(err.value)


def _writer(args):
    root, value = args
    c = results.Cache("smoke", root=root)
    for _ in range(20):
        c.put("exp", {"a": 1}, {"who": value, "pad": "x" * 20000})
    return value


def test_two_processes_writing_one_record_leave_a_valid_one(tmp_path):
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(2) as pool:
        pool.map(_writer, [(tmp_path, "first"), (tmp_path, "second")])
    c = results.Cache("smoke", root=tmp_path)
    assert c.get("exp", {"a": 1})["who"] in ("first", "second")
    assert [p.name for p in c.path("exp", {"a": 1}).parent.iterdir()] == [
        c.path("exp", {"a": 1}).name]  # no temporary files left


def test_dry_run_never_writes_into_the_committed_results(monkeypatch):
    from layerlab import paths

    monkeypatch.setenv("LAYERLAB_DRY", "1")
    with pytest.raises(results.CacheError, match="LAYERLAB_RESULTS"):
        results.Cache("gpu", root=paths.REPO_ROOT / "results").put("exp", {"a": 1}, 1)
    assert not (paths.REPO_ROOT / "results" / "gpu" / "exp").exists()


def test_status_counts_dirty_and_stale_records(cache, monkeypatch):
    from layerlab import provenance

    monkeypatch.setattr(provenance, "git_commit", lambda: "abcdef123456")
    cache.put("toy_students", {"a": 1}, 1)
    monkeypatch.setattr(provenance, "git_commit", lambda: "abcdef123456+dirty")
    cache.put("toy_students", {"a": 2}, 2)
    rows = results.status("smoke", cache.root)
    assert sorted((r["dirty"], r["stale"]) for r in rows) == [(False, False), (True, False)]
    bumped = (results.SCHEMAS["toy_students"][0] + 1, ())  # the code moved on
    monkeypatch.setitem(results.SCHEMAS, "toy_students", bumped)
    assert all(r["stale"] for r in results.status("smoke", cache.root))


def test_a_recorded_step_is_keyed_by_its_bound_arguments(tmp_path):
    import pytest

    cache = results.Cache("smoke", root=tmp_path)
    calls = []

    @results.recorded("toy_students", "square", ignore=("data",))
    def square(data, x, *, shift=1):
        calls.append(x)
        return {"y": x * x + shift + len(data)}

    @results.recorded("toy_students", "twice")
    def twice(start, *, cache):  # asks for the cache: reads another record through it
        return {"y": 2 * start["y"]}

    assert square.key([9, 9], 3) == {"name": "square", "x": 3, "shift": 1}  # defaults bound
    first = square([0], 3, cache=cache)
    assert square([5, 5], x=3, cache=cache) == first == {"y": 11} and calls == [3]  # data: no key
    assert square([0], 3, shift=2, cache=cache) == {"y": 12} and calls == [3, 3]
    assert twice.key(first) == {"name": "twice", "start": square.key([0], 3)}  # by its key
    assert twice(first, cache=cache) == {"y": 22}
    assert twice.key({"y": 11}) == {"name": "twice", "start": {"y": 11}}  # an equal plain value
    with pytest.raises(TypeError, match="cannot enter a record's key"):
        square.key(object(), 1.5, shift=object())
    assert cache.get("toy_students", {"name": "square", "x": 3, "shift": 2}) == {"y": 12}


def test_a_recorded_step_runs_per_item_and_takes_its_context_from_its_first_argument(tmp_path):
    import pytest

    from layerlab.settings import RecoveryConfig

    cache = results.Cache("smoke", root=tmp_path)
    calls = []

    class Source:  # what a Lab is to a P2 step: key fields and a cache, not JSON
        model = "m"

    def context(arguments):
        return {"model": arguments["source"].model}, cache

    @results.recorded("toy_students", context=context, ignore=("scratch",))
    def step(source, item, *, scale, settings, scratch):
        calls.append(item)
        scratch.append(item)
        return {"y": item * scale}

    cfg = RecoveryConfig()
    assert step.key(Source(), None, scale=2, settings=cfg, scratch=[]) == {
        "model": "m", "scale": 2, "settings": results.key_of(cfg.key())}  # no name, item, scratch
    out = step.each({"a": 1, "b": 2}, Source(), scale=2, settings=cfg, scratch=[], progress=False)
    assert out == {"a": {"y": 2}, "b": {"y": 4}} and calls == [1, 2]
    again = step.each({"b": 2, "c": 3}, Source(), scale=2, settings=cfg, scratch=[], progress=False)
    assert again == {"b": {"y": 4}, "c": {"y": 6}} and calls == [1, 2, 3]  # b was stored
    step.each({"b": 2}, Source(), scale=3, settings=cfg, scratch=[], progress=False)
    assert calls == [1, 2, 3, 2]  # another setting, another record

    @results.recorded("toy_students")
    def plain(x):
        return x

    with pytest.raises(TypeError, match="pass cache="):
        plain(1)
    with pytest.raises(TypeError, match="no parameter `item`"):
        plain.each({"a": 1}, cache=cache)


def test_a_recorded_step_may_name_its_record_and_keep_arrays_beside_it(tmp_path):
    """`record`: calls that share a key store one record each (a model's); `arrays`: the
    step's arrays live beside its record, and a record without them is computed again."""
    import numpy as np

    cache = results.Cache("smoke", root=tmp_path)
    calls = []

    @results.recorded("toy_students", "profiles", ignore=("model",), record=lambda a: a["model"],
                      arrays=True)
    def measured(model, *, tokens):
        calls.append(model)
        return {"n": tokens}, {"x": np.arange(tokens)}

    key = measured.key("a", tokens=3)
    assert key == {"name": "profiles", "tokens": 3}  # the model names the record, not the key
    assert measured("a", tokens=3, cache=cache) == {"n": 3}
    assert measured("b", tokens=3, cache=cache) == {"n": 3} and calls == ["a", "b"]
    assert measured("a", tokens=3, cache=cache) == {"n": 3} and calls == ["a", "b"]
    assert list(cache.get_arrays("toy_students", key, "a")["x"]) == [0, 1, 2]
    cache.arrays_path("toy_students", key, "b").unlink()  # interrupted between the two writes
    assert measured("b", tokens=3, cache=cache) == {"n": 3} and calls == ["a", "b", "b"]
    assert cache.get_arrays("toy_students", key, "b") is not None


def test_the_profile_and_settings_contexts_key_records_by_what_they_hold(tmp_path, monkeypatch):
    """`in_profile`: nothing but the step's arguments; `profile_config`: the profile's fields
    that define results too; `settings_first`: a settings object's `key()`. Each in the
    profile's cache; `step.stored` reads what is there and computes nothing."""
    from layerlab import profiles
    from layerlab.settings import RecoveryConfig

    monkeypatch.setenv("LAYERLAB_RESULTS", str(tmp_path))
    smoke = profiles.get("smoke")

    @results.recorded("toy_students", context=results.in_profile)
    def bare(profile, seed):
        return seed

    @results.recorded("toy_students", context=results.profile_config)
    def configured(profile, seed):
        return seed

    @results.recorded("toy_students", context=results.settings_first, ignore=("profile",))
    def trained(cfg, item, *, profile):
        return item * 2

    assert bare.key(smoke, 3) == {"seed": 3}
    assert configured.key(smoke, 3) == {**smoke.config(), "seed": 3}
    cfg = RecoveryConfig()
    assert trained.key(cfg, None, profile=smoke) == cfg.key()
    assert bare(smoke, 3) == 3 and results.Cache("smoke").get("toy_students", {"seed": 3}) == 3
    assert trained.each({"a": 1}, cfg, profile="smoke", progress=False) == {"a": 2}
    assert trained.stored({"a": 1, "b": 2}, cfg, profile=smoke) == {"a": 2}  # b: not computed


def test_a_recorded_step_cannot_take_what_its_callers_give_the_cache():
    import pytest

    with pytest.raises(TypeError, match="cannot take"):
        @results.recorded("toy_students")
        def step(item, *, progress):
            return item


def test_a_step_returning_a_shared_constant_does_not_mark_it(tmp_path):
    """Small ints and strings are shared objects: a step that returns 3 must not make every
    other 3 enter keys as that step's record (CI caught `splits=3` keyed as {"seed": 3})."""
    cache = results.Cache("smoke", root=tmp_path)

    @results.recorded("toy_students", "three")
    def three(seed):
        return 3

    @results.recorded("toy_students", "table")
    def table(seed):
        return {"rows": [seed]}

    assert three(0, cache=cache) == 3
    assert results.key_of(3) == 3 and results.key_of("a") == "a"
    value = table(1, cache=cache)
    assert results.key_of(value) == table.key(1)  # a container is still keyed by its record
