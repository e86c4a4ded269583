"""Layer 7 of the tests: the gpu settings executed on CPU. Every chapter runs top to bottom with
LAYERLAB_PROFILE=gpu through the gpu code paths (hub ids, FineWeb streaming, device_map, the
paper's toy grid and sweeps), every size shrunk by LAYERLAB_DRY=1; hub ids are served by tiny
random models saved under those ids in a temporary Hugging Face cache, FineWeb by a local
parquet file (layerlab.book.dryrun). Nothing touches the committed notebooks or results."""

import pytest

from layerlab import cli, profiles
from layerlab.book import dryrun

pytestmark = pytest.mark.gpu_dry


def test_every_hub_id_has_a_stand_in():
    gpu = profiles.PROFILES["gpu"]
    ids = dryrun.hub_ids(gpu.shrunk())
    assert "EleutherAI/pythia-12b" in ids and gpu.anatomy.model in ids
    assert {dryrun.architecture_for(i) for i in ids} == {"gptneox", "qwen2", "opt", "llama"}
    with pytest.raises(ValueError, match="no tiny stand-in"):
        dryrun.architecture_for("someone/unknown-model")


def test_stand_ins_load_from_the_hub_cache_offline(tmp_path):
    import os
    import subprocess
    import sys

    dryrun.save_stand_in("Qwen/Qwen2.5-0.5B", tmp_path / "hf", layers=3)
    # a fresh process: huggingface_hub reads HF_HOME when it is imported
    code = ("from layerlab import models; lm = models.load('Qwen/Qwen2.5-0.5B'); "
            "print(lm.n_layers, lm.summary()['arch'])")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split()[-2:] == ["3", "qwen2"]


def test_fineweb_stand_in_streams_through_datasets(tmp_path, monkeypatch):
    from layerlab import corpus

    monkeypatch.setenv("LAYERLAB_FINEWEB_FILES", str(dryrun.write_fineweb(tmp_path / "fw.parquet", 8)))
    docs = list(corpus.fineweb_documents())
    assert len(docs) == 8 and all(len(d) >= 2000 for d in docs)


def test_every_chapter_runs_with_the_shrunk_gpu_settings(tmp_path):
    times = dryrun.run(workdir=tmp_path)
    assert sorted(times) == [py.stem for py in cli._notebooks([])]  # every chapter
