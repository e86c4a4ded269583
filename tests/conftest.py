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
BROWSER_NODE = Path(__file__).parent / "browser" / "node_modules"


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole run. Playwright's sync API runs an event loop in
    this thread, so a second `sync_playwright()` beside a live one fails: every browser test
    shares this one."""
    if not (Path(CHROMIUM).exists() and (BROWSER_NODE / "vega").is_dir()):
        message = "needs Debian chromium and `npm ci --prefix tests/browser` (make test does the npm part)"
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
