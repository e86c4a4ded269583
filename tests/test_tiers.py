"""Every chapter states what each tier runs (`layerlab.book.tiers`), read from the settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from layerlab import profiles
from layerlab.book import tiers

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[01][0-9]_*.py"))


@pytest.mark.parametrize("py", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chapter_shows_its_own_tier_table(py):
    assert f'tiers.table("{py.stem[:2]}")' in py.read_text(encoding="utf-8")


def test_one_row_per_tier_and_the_tiers_differ_where_the_settings_do():
    for chapter in tiers.WHAT:
        t = tiers.table(chapter)
        assert list(t.index) == list(tiers.TIERS)
    for chapter in ("02", "04", "09", "10"):
        what = tiers.table(chapter)["what it runs"]
        assert what["cpu"] != what["gpu"] and what["colab"] != what["gpu"]


def test_the_table_is_read_from_the_settings(monkeypatch):
    gpu = profiles.PROFILES["gpu"]
    fewer = dict(list(gpu.toy.sweeps.items())[:5])
    monkeypatch.setitem(profiles.PROFILES, "gpu",
                        dataclasses.replace(gpu, toy=gpu.toy.replace(sweeps=fewer)))
    assert tiers.table("04").loc["gpu", "what it runs"].startswith("5 sweeps")
    with pytest.raises(KeyError, match="unknown chapter"):
        tiers.table("13")
