"""book/deviations.md is rendered from the committed cpu results, never typed."""

from __future__ import annotations

import pytest

from layerlab import paths
from layerlab.book import deviations


def test_committed_page_matches_a_fresh_rendering(monkeypatch):
    monkeypatch.setenv("LAYERLAB_RESULTS", str(paths.REPO_ROOT / "results"))
    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")  # never start a computation here
    from layerlab.book import outputs

    committed = deviations.page_path().read_text(encoding="utf-8")
    # numbers within the freshness gate's tolerance (float64 last bits differ between CPUs)
    assert outputs.same(deviations.render("cpu"), committed), (
        "book/deviations.md is stale: regenerate it with `python -m layerlab.book.deviations`")


def test_page_is_in_the_toc():
    import yaml

    toc = yaml.safe_load((paths.REPO_ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert "deviations" in files


@pytest.mark.parametrize("text", ["Deviations", "## P2 — the evaluation sentences"])
def test_page_has_its_sections(text):
    assert text in deviations.page_path().read_text(encoding="utf-8")
