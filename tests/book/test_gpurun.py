"""`make gpu-run`'s program (`layerlab.gpurun`) run dry on a CPU: every part of the gpu settings
shrunk, the deadline honoured, the archive packed and imported into results/gpu/; and the
importer's refusals."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from conftest import run_dry_gpu  # the dry run itself is shared with test_beside

from layerlab import results
from layerlab.book import gpurun

pytestmark = pytest.mark.gpu_dry


def test_a_dry_gpu_run_packs_every_part_and_imports(tmp_path, dry_gpu_run):
    summary, out = dry_gpu_run["summary"], dry_gpu_run["out"]
    assert [p["part"] for p in summary["parts"]] == list(gpurun.PARTS)
    assert all(p["status"] == "finished" for p in summary["parts"]), summary
    assert sorted(f.name for f in out.iterdir()) == ["gpu-results.tar.gz", "gpu-run.json",
                                                     "gpu-run.log"]
    with tarfile.open(out / gpurun.ARCHIVE) as tar:
        names = tar.getnames()
    assert summary["records"] == len(names) > 0
    assert {n.split("/")[0] for n in names} >= {"toy_students", "depth_family", "growth"}
    with pytest.raises(ValueError, match="not a GPU"):
        results.import_archive(out / gpurun.ARCHIVE, tmp_path / "imported")
    with pytest.raises(ValueError, match="dry run"):  # shrunk records are never real results
        results.import_archive(out / gpurun.ARCHIVE, tmp_path / "imported", allow_cpu=True)
    written = results.import_archive(out / gpurun.ARCHIVE, tmp_path / "imported", allow_cpu=True,
                                     allow_dry=True)
    assert sorted(written) == sorted(names)
    assert all((tmp_path / "imported" / "gpu" / n).is_file() for n in names)


def test_the_deadline_stops_a_part_and_a_rerun_resumes(tmp_path, smollm2_tokenizer):
    # growth cannot finish in 15 s: it is ended at the deadline, the next part never starts,
    # and nothing half-written is packed; a second run with time finishes what is left
    first, out = run_dry_gpu(tmp_path, "--budget", str(gpurun.PACK_SECONDS + 15),
                             "--parts", "growth,toy", "--tokenizer", str(smollm2_tokenizer))
    assert [p["status"] for p in first["parts"]] == ["stopped at the deadline",
                                                     "not started (budget spent)"]
    with tarfile.open(out / gpurun.ARCHIVE) as tar:
        for m in tar.getmembers():
            json.loads(tar.extractfile(m).read())  # every packed record is whole
    second, _ = run_dry_gpu(tmp_path, "--budget", "300", "--parts", "toy")
    assert second["parts"][0]["status"] == "finished" and second["records"] > 0


def _archive(tmp_path, entries: dict[str, bytes]):
    path = tmp_path / "a.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _record(tmp_path, device="cuda x1 (NVIDIA H200)", profile="gpu") -> tuple[str, bytes]:
    """A record as Cache.put writes it, with the given provenance."""
    from unittest import mock

    prov = {"device": device, "profile": profile, "git_commit": "abc"}
    cache = results.Cache("gpu", root=tmp_path / f"made-{device[:3]}-{profile}")
    with mock.patch("layerlab.provenance.collect", lambda *a, **k: dict(prov)):
        cache.put("toy_students", {"a": 1}, 1, item="x")
    path = cache.path("toy_students", {"a": 1}, item="x")
    return path.relative_to(cache.folder).as_posix(), path.read_bytes()


def test_import_refuses_what_a_gpu_run_does_not_write(tmp_path):
    name, data = _record(tmp_path)
    ok = _archive(tmp_path, {name: data})
    assert results.import_archive(ok, tmp_path / "r") == [name]
    for bad, match in [({"../evil.json": data}, "unexpected entry"),
                       ({"toy_students/x.py": b"print()"}, "unexpected entry"),
                       (dict([_record(tmp_path, device="cpu (1 torch threads)")]), "not a GPU"),
                       (dict([_record(tmp_path, profile="cpu")]), "not a gpu-profile")]:
        with pytest.raises(ValueError, match=match):
            results.import_archive(_archive(tmp_path, bad), tmp_path / "r")
