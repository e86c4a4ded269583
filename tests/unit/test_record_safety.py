"""Issue 25, results and import: a record cannot be served under another's name, a damaged one
is one line naming its file, a code change that alters a stored number fails the gate, an
unchanged record keeps its provenance, and `layerlab results import` is all or nothing."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from layerlab import cli, paths, provenance, results, verify
from layerlab.book import outputs


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "git_commit", lambda: "abcdef123456")
    return results.Cache("smoke", root=tmp_path)


def _recovery(cache) -> dict[str, Path]:
    for layer, auc in (("L08", 122.75), ("L14", 113.85)):
        cache.put("recovery", {"k": 1}, {"auc": auc, "layer": layer}, item=layer)
    return {layer: cache.path("recovery", {"k": 1}, item=layer) for layer in ("L08", "L14")}


# 1. a record under another record's name
def test_a_record_copied_over_another_is_refused_and_counted(cache, capsys, monkeypatch):
    files = _recovery(cache)
    shutil.copy(files["L14"], files["L08"])
    with pytest.raises(results.CacheError, match=files["L08"].name) as err:
        cache.get("recovery", {"k": 1}, item="L08")
    assert "'L14'" in str(err.value) and "\n" not in str(err.value)
    assert cache.get("recovery", {"k": 1}, item="L14")["auc"] == 113.85
    rows = results.status("smoke", cache.root)
    assert [r["file"] for r in rows if r["invalid"]] == [str(files["L08"].relative_to(cache.folder))]
    monkeypatch.setattr(paths, "results_dir", lambda: cache.root)
    assert cli.main(["cache", "status", "--profile", "smoke"]) == 1
    out = capsys.readouterr().out
    assert "1 invalid" in out and f"invalid {files['L08'].relative_to(cache.folder)}" in out


# 2. right shape, wrong content
@pytest.mark.parametrize("damage", [
    lambda r: r.update(value=[r["value"]["auc"]]),          # the value retyped
    lambda r: r["value"].pop("auc"),                          # a field gone
    lambda r: r.update(provenance="cpu"),                     # provenance not a dict
    lambda r: r.pop("config"),                                # the key gone
    lambda r: r.update(config_hash=5),                        # a field of the wrong type
    lambda r: r["value"].update(auc=245.5),                   # a number edited
], ids=["retyped", "missing-field", "provenance", "no-config", "hash-type", "edited"])
def test_a_damaged_record_is_one_line_naming_its_file(cache, damage):
    path = _recovery(cache)["L08"]
    record = json.loads(path.read_text())
    damage(record)
    path.write_text(json.dumps(record))
    with pytest.raises(results.CacheError, match=path.name) as err:
        cache.get("recovery", {"k": 1}, item="L08")
    assert "\n" not in str(err.value)
    rows = results.status("smoke", cache.root)  # never a KeyError
    assert sum(bool(r["invalid"]) for r in rows) == 1


# 3. the gate recomputes stored records from today's code
def _gate(monkeypatch, tmp_path, mode: str, **extra: str) -> Path:
    log = tmp_path / "verify.jsonl"
    monkeypatch.setenv("LAYERLAB_VERIFY", mode)
    monkeypatch.setenv("LAYERLAB_VERIFY_LOG", str(log))
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    return log


def test_a_derived_record_that_todays_code_changes_fails_the_gate(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(verify, "DERIVED", verify.DERIVED | {"a_summary"})
    cache.cached("a_summary", {"fit": 1}, lambda: {"alpha": 1.25, "rows": [1.0, 2.0]})
    log = _gate(monkeypatch, tmp_path, "derived")
    assert cache.cached("a_summary", {"fit": 1}, lambda: {"alpha": 1.25 + 1e-13,
                                                              "rows": [1.0, 2.0]})["alpha"] == 1.25
    with pytest.raises(verify.Stale, match=r"a_summary/.*value\.rows\[1\]: 2\.0 stored, 4\.0 now"):
        cache.cached("a_summary", {"fit": 1}, lambda: {"alpha": 1.25, "rows": [1.0, 4.0]})
    assert [e["status"] for e in map(json.loads, log.read_text().splitlines())] == ["same", "differs"]


def test_a_claim_re_decided_differently_fails_the_gate(cache, monkeypatch, tmp_path):
    cache.put("claims", {"id": "P2-x"}, {"verdict": "reproduced"}, item="P2-x")
    _gate(monkeypatch, tmp_path, "derived")
    cache.put("claims", {"id": "P2-x"}, {"verdict": "reproduced"}, item="P2-x")  # unchanged
    with pytest.raises(verify.Stale, match="P2-x"):
        cache.put("claims", {"id": "P2-x"}, {"verdict": "not reproduced"}, item="P2-x")


def test_doubling_recoverys_area_is_caught_by_the_sample(cache, monkeypatch, tmp_path):
    """The issue's case: an expensive experiment's code changed and nobody bumped its schema.
    The sample recomputes one record of every expensive experiment (within the budget)."""
    items = {f"L{i:02d}": i for i in range(8)}
    cache.for_each("recovery", {"k": 2}, items, lambda n, i: {"auc": 100.0 + i}, progress=False)
    log = _gate(monkeypatch, tmp_path, "sample", LAYERLAB_VERIFY_RATE="0")
    calls = []

    def doubled(name, i):
        calls.append(name)
        return {"auc": 2 * (100.0 + i)}

    with pytest.raises(verify.Stale, match=r"recovery/.*auc"):
        cache.for_each("recovery", {"k": 2}, items, doubled, progress=False)
    assert len(calls) == 1  # one seeded pick, not the whole sweep
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["status"] for e in entries] == ["differs"]
    # which item stands for the sweep depends on the seed
    picks = set()
    for seed in ("0", "1", "2", "3", "4"):
        monkeypatch.setenv("LAYERLAB_VERIFY_SEED", seed)
        picks.add(min(items, key=verify.draw))
    assert len(picks) > 1


def test_the_sample_respects_its_budget_and_all_recomputes_everything(cache, monkeypatch, tmp_path):
    items = {f"m{i}": i for i in range(5)}
    cache.for_each("importance_map", {"k": 1}, items, lambda n, i: i, progress=False)
    _gate(monkeypatch, tmp_path, "sample", LAYERLAB_VERIFY_BUDGET="0", LAYERLAB_VERIFY_RATE="1")
    cache.for_each("importance_map", {"k": 1}, items, lambda n, i: pytest.fail("over budget"),
                   progress=False)
    seen = []
    monkeypatch.setenv("LAYERLAB_VERIFY", "all")
    cache.for_each("importance_map", {"k": 1}, items, lambda n, i: seen.append(n) or i,
                   progress=False)
    assert sorted(seen) == sorted(items)
    monkeypatch.delenv("LAYERLAB_VERIFY")  # outside the gate nothing is recomputed
    cache.for_each("importance_map", {"k": 1}, items, lambda n, i: pytest.fail("recomputed"),
                   progress=False)


def test_a_recomputation_over_its_time_is_stopped_not_counted(cache, monkeypatch, tmp_path):
    import time

    cache.cached("toy_students", {"k": 1}, lambda: 1)
    log = _gate(monkeypatch, tmp_path, "sample", LAYERLAB_VERIFY_CAP="0.2")

    def slow():
        time.sleep(5)
        return 2

    started = time.perf_counter()
    assert cache.cached("toy_students", {"k": 1}, slow) == 1
    assert time.perf_counter() - started < 3
    assert json.loads(log.read_text())["status"] == "stopped (over its time)"
    assert verify.summary(log)["expensive"]["records"] == 0


def test_every_committed_experiment_is_classified_by_the_gate():
    # DERIVED must name real experiments; every other one is expensive (sampled), so no
    # experiment can escape recomputation by being forgotten
    assert verify.DERIVED <= set(results.SCHEMAS) and set(verify.TOLERANCE) <= set(results.SCHEMAS)


# 4. committed report pages against their report.json (rendered with the locked Altair: the
# floors run, on another Altair, leaves these to the freshness tier)
@pytest.mark.freshness
def test_a_flipped_verdict_in_a_committed_report_page_is_found(tmp_path):
    src = paths.REPO_ROOT / "results" / "cpu" / "reports"
    folder = next(p for p in sorted(src.iterdir()) if (p / "report.json").is_file())
    copy = tmp_path / "cpu" / "reports" / folder.name
    shutil.copytree(folder, copy)
    assert outputs.reports(tmp_path) == {f"cpu/reports/{folder.name}": []}
    page = (copy / "report.html").read_text()
    flipped = page.replace("signature absent", "signature present", 1)  # the report's words
    assert flipped != page
    (copy / "report.html").write_text(flipped)
    assert outputs.reports(tmp_path)[f"cpu/reports/{folder.name}"]


@pytest.mark.freshness
def test_a_report_page_does_not_depend_on_the_altair_theme_enabled_before_it():
    # importing the book's plots enables its theme process-wide (as inside a pytest run): the
    # committed pages were rendered without it and must still equal a fresh render
    import altair as alt

    from layerlab.report import page as report_page

    folder = next(p for p in sorted((paths.REPO_ROOT / "results" / "cpu" / "reports").iterdir())
                  if (p / "report.json").is_file())
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    with alt.theme.enable("default"):
        first = report_page.render(report)
    import layerlab.book.plots  # noqa: F401  (registers and enables the book's theme)

    with alt.theme.enable("layerlab"):
        assert report_page.render(report) == first


# 5. the gate copies every committed profile
def test_the_gate_copies_every_profiles_results(tmp_path, monkeypatch):
    seen = {}

    def fake_execute(py, profile, timeout, *, out):
        root = Path(__import__("os").environ["LAYERLAB_RESULTS"])
        seen["profiles"] = sorted(p.name for p in root.iterdir())
        raise RuntimeError("stop here")

    monkeypatch.setattr(cli, "execute_notebook", fake_execute)
    (tmp_path / "results" / "gpu" / "toy_students").mkdir(parents=True)
    (tmp_path / "results" / "cpu").mkdir()
    monkeypatch.setattr(paths, "results_dir", lambda: tmp_path / "results")
    outputs.check(["00"], profile="cpu")
    assert seen["profiles"] == ["cpu", "gpu"]


# 6. untracked inputs and trees without .git
def test_an_untracked_file_makes_the_tree_dirty(tmp_path, monkeypatch):
    import subprocess

    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "a.txt").write_text("a")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    monkeypatch.setattr(paths, "REPO_ROOT", repo)
    assert not provenance.git_commit().endswith("+dirty")
    (repo / "data" / "new_corpus.txt").write_text("b")
    assert provenance.git_commit().endswith("+dirty")


def test_without_git_a_committed_profile_refuses_to_write(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)  # no .git there
    assert provenance.git_commit() == "unknown"
    with pytest.raises(results.CacheError, match="no git commit"):
        results.Cache("cpu", root=tmp_path / "results").put("exp", {"a": 1}, 1)
    monkeypatch.delenv("LAYERLAB_RESULTS", raising=False)
    with pytest.raises(SystemExit, match="no git commit"):
        cli.refuse_dirty_results("cpu")
    results.Cache("smoke", root=tmp_path / "results").put("exp", {"a": 1}, 1)  # scratch: fine


# 7. an unchanged record keeps its provenance
def test_an_unchanged_record_keeps_its_provenance(cache, monkeypatch):
    cache.put("claims", {"id": "x"}, {"verdict": "partly", "n": 0.5}, item="x")
    path = cache.path("claims", {"id": "x"}, item="x")
    before = path.read_text()
    monkeypatch.setattr(provenance, "git_commit", lambda: "999999999999")
    cache.put("claims", {"id": "x"}, {"verdict": "partly", "n": 0.5}, item="x")
    assert path.read_text() == before
    cache.put("claims", {"id": "x"}, {"verdict": "reproduced", "n": 0.5}, item="x")
    assert json.loads(path.read_text())["provenance"]["git_commit"] == "999999999999"


# 8–11. layerlab results import
def _real_record(tmp_path, name: str, value, *, device="cuda x1 (NVIDIA H200)", dry=False,
                 monkeypatch=None) -> tuple[str, bytes]:
    """A record exactly as `make gpu-run` writes it (Cache.put), with a GPU device."""
    prov = {"device": device, "profile": "gpu", "git_commit": "abc"} | ({"dry": True} if dry else {})
    monkeypatch.setattr(provenance, "collect", lambda profile=None, **k: dict(prov))
    c = results.Cache("gpu", root=tmp_path / "made")
    c.put("toy_students", {"name": name}, value, item=name)
    path = c.path("toy_students", {"name": name}, item=name)
    return path.relative_to(c.folder).as_posix(), path.read_bytes()


def _tar(path: Path, entries: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _imported(root: Path) -> dict[str, bytes]:
    gpu = root / "gpu"
    return {p.relative_to(gpu).as_posix(): p.read_bytes() for p in gpu.rglob("*.json")} if gpu.is_dir() else {}


def test_import_never_overwrites_unless_replace(tmp_path, monkeypatch, capsys):
    a = _real_record(tmp_path, "s1", {"loss": 1.0}, monkeypatch=monkeypatch)
    b = _real_record(tmp_path, "s1", {"loss": 2.0}, monkeypatch=monkeypatch)
    root = tmp_path / "r"
    first, second = _tar(tmp_path / "1.tar.gz", [a]), _tar(tmp_path / "2.tar.gz", [b])
    assert cli.main(["results", "import", str(first), "--root", str(root)]) == 0
    kept = _imported(root)
    assert cli.main(["results", "import", str(second), "--root", str(root)]) == 2
    assert "--replace" in capsys.readouterr().err and _imported(root) == kept
    assert cli.main(["results", "import", str(first), "--root", str(root)]) == 0  # same: fine
    assert cli.main(["results", "import", str(second), "--root", str(root), "--replace"]) == 0
    assert f"replaced {a[0]}" in capsys.readouterr().out
    assert json.loads(_imported(root)[a[0]])["value"] == {"loss": 2.0}


def test_import_is_all_or_nothing(tmp_path, monkeypatch):
    a = _real_record(tmp_path, "s1", {"loss": 1.0}, monkeypatch=monkeypatch)
    b = _real_record(tmp_path, "s1", {"loss": 2.0}, monkeypatch=monkeypatch)
    c = _real_record(tmp_path, "s2", {"loss": 3.0}, monkeypatch=monkeypatch)
    root = tmp_path / "r"
    with pytest.raises(results.ImportRefused, match="twice"):  # duplicates in one archive
        results.import_archive(_tar(tmp_path / "d.tar.gz", [a, b]), root)
    good = _tar(tmp_path / "good.tar.gz", [c])
    bad = _tar(tmp_path / "bad.tar.gz", [("toy_students/x.py", b"print()")])
    assert cli.main(["results", "import", str(good), str(bad), "--root", str(root)]) == 2
    assert _imported(root) == {}  # the good archive before the failing one is not kept
    conflict = _tar(tmp_path / "c.tar.gz", [b])
    with pytest.raises(results.ImportRefused, match="other content"):
        results.import_archive([_tar(tmp_path / "a.tar.gz", [a]), conflict], root)
    assert _imported(root) == {}


def test_import_verifies_each_record_against_its_name(tmp_path, monkeypatch):
    a = _real_record(tmp_path, "s1", {"loss": 1.0}, monkeypatch=monkeypatch)
    c = _real_record(tmp_path, "s2", {"loss": 3.0}, monkeypatch=monkeypatch)
    swapped = (a[0], c[1])  # s2's content under s1's name
    with pytest.raises(results.ImportRefused, match="belong in"):
        results.import_archive(_tar(tmp_path / "s.tar.gz", [swapped]), tmp_path / "r")
    edited = json.loads(a[1])
    edited["value"]["loss"] = 0.5
    with pytest.raises(results.ImportRefused, match="digest"):
        results.import_archive(_tar(tmp_path / "e.tar.gz", [(a[0], json.dumps(edited).encode())]),
                               tmp_path / "r")


def test_import_refuses_the_shrunk_records_of_a_dry_run(tmp_path, monkeypatch):
    dry = _real_record(tmp_path, "s1", {"loss": 1.0}, dry=True, monkeypatch=monkeypatch)
    with pytest.raises(results.ImportRefused, match="dry run"):
        results.import_archive(_tar(tmp_path / "d.tar.gz", [dry]), tmp_path / "r")
    assert results.import_archive(_tar(tmp_path / "d.tar.gz", [dry]), tmp_path / "r",
                                  allow_dry=True) == [dry[0]]


def test_a_dry_run_marks_its_records(monkeypatch):
    monkeypatch.setenv("LAYERLAB_DRY", "1")
    assert provenance.collect("gpu")["dry"] is True
    monkeypatch.delenv("LAYERLAB_DRY")
    assert "dry" not in provenance.collect("gpu")


def _gz(path: Path, data: bytes) -> Path:
    import gzip

    path.write_bytes(gzip.compress(data))
    return path


@pytest.mark.parametrize("make", [
    lambda t, r: _tar(t / "x.tar.gz", [(r[0], b"\xff\xfe not utf-8")]),
    lambda t, r: _tar(t / "x.tar.gz", [(r[0], b"{not json")]),
    lambda t, r: _tar(t / "x.tar.gz", [(r[0], b"[1, 2]")]),
    lambda t, r: _gz(t / "x.tar.gz", b"plain text, not a tar"),
    lambda t, r: (t / "x.tar.gz").write_bytes(b"not gzip at all") and t / "x.tar.gz",
    lambda t, r: t / "missing.tar.gz",
    lambda t, r: _tar(t / "x.tar.gz", [("toy_students/big.json", b" " * (results.MEMBER_CAP + 1))]),
], ids=["not-utf8", "not-json", "json-list", "gzip-not-tar", "not-gzip", "missing", "too-big"])
def test_a_bad_archive_is_one_line_exit_2_nothing_written(tmp_path, monkeypatch, capsys, make):
    rec = _real_record(tmp_path, "s1", {"loss": 1.0}, monkeypatch=monkeypatch)
    archive = make(tmp_path, rec)
    root = tmp_path / "r"
    assert cli.main(["results", "import", str(archive), "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and str(archive) in err
    assert _imported(root) == {} and not (root / "gpu").exists()


def test_a_huge_member_in_a_small_archive_is_refused_before_reading(tmp_path, monkeypatch):
    import gzip

    big = tmp_path / "big.tar.gz"
    with gzip.open(big, "wb", compresslevel=9) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        info = tarfile.TarInfo("toy_students/big.json")
        info.size = 200 << 20  # 200 MB of spaces compresses to about 200 kB
        tar.addfile(info, io.BytesIO(b" " * info.size))
    assert big.stat().st_size < 1 << 20
    with pytest.raises(results.ImportRefused, match="cap"):
        results.import_archive(big, tmp_path / "r")


def test_import_never_writes_through_a_symlink(tmp_path, monkeypatch):
    rec = _real_record(tmp_path, "s1", {"loss": 1.0}, monkeypatch=monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "r" / "gpu").mkdir(parents=True)
    (tmp_path / "r" / "gpu" / "toy_students").symlink_to(elsewhere)
    with pytest.raises(results.ImportRefused, match="symlink"):
        results.import_archive(_tar(tmp_path / "x.tar.gz", [rec]), tmp_path / "r")
    assert list(elsewhere.iterdir()) == []
