"""Every chapter states what each tier runs (`layerlab.book.tiers`), read from the settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from layerlab import profiles
from layerlab.book import tiers

# "What we found" (13) computes nothing of its own: it reads the claims the chapters registered
NOTEBOOKS = [p for p in sorted((Path(__file__).resolve().parents[2] / "notebooks")
                               .glob("[01][0-9]_*.py")) if not p.stem.startswith("13")]


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
        tiers.table("99")


def test_the_tier_table_shows_folded_and_stays_a_frame():
    t = tiers.table("05")
    assert isinstance(t, pd.DataFrame) and list(t.index) == list(tiers.TIERS)
    shown = t._repr_html_()
    assert shown.startswith('<details class="ll-folded"><summary>') and "<table" in shown
    assert t.loc[["cpu"]]._repr_html_().startswith("<details")  # slices keep the fold


def test_a_page_shows_a_missing_number_as_a_dash_with_a_note():
    from layerlab import folded

    shown = folded.frame_html(pd.DataFrame({"a": [1.0, float("nan")]}))
    assert "NaN" not in shown and "—" in shown and folded.NA_NOTE.split(":")[0] in shown
    assert shown.startswith('<div class="ll-scroll">')
    assert folded.NA_NOTE not in folded.frame_html(pd.DataFrame({"a": [1.0, 2.0]}))
