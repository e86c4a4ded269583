"""Shared test setup: one torch thread (two busy cores thrash), no hub access, and results
written to a temporary folder instead of the committed results/."""

from __future__ import annotations

import os

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
