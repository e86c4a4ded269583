"""Chart defaults: a chart must open on a view that has data (chapter 05's first chart once
opened on E1 × mean_of_others, which E1 was never ablated with, and drew nothing)."""

import pandas as pd

from layerlab.book import plots


def _table(rows):
    return pd.DataFrame([{"set": s, "method": m, "layer": l, "class": "x", "ppl": 10.0,
                          "deg": 5.0, "lo": 1.0, "hi": 9.0} for s, m, l in rows])


def _defaults(chart):
    spec = chart.to_dict()
    return {p["name"]: p.get("value") for p in spec["params"]}


def test_importance_bars_open_on_a_method_the_default_set_has():
    table = _table([("E0", "mean_of_others", 0), ("E0", "neighbour_average", 0),
                    ("E1", "skip", 0), ("E1", "neighbour_average", 0)])
    d = _defaults(plots.importance_bars(table))
    assert d["evalset"] == "E1" and d["method"] == "neighbour_average"
    only_skip = _table([("E0", "mean_of_others", 0), ("E1", "skip", 0)])
    d = _defaults(plots.importance_bars(only_skip))
    shown = only_skip[(only_skip["set"] == d["evalset"]) & (only_skip["method"] == d["method"])]
    assert len(shown) > 0
