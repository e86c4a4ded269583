from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from layerlab import claims
from layerlab.depth import clusters, geometry


def synthetic_profiles(n=2000, minority=0.01, L=12, seed=0):
    """Bulk tokens progress evenly (s_l ≈ l/L); a minority jumps to ≈1 after two layers."""
    rng = np.random.default_rng(seed)
    l = np.arange(L + 1) / L
    early = rng.random(n) < minority
    s = np.where(early[:, None], np.minimum(1.0, np.arange(L + 1) / 2.0), l[None])
    s = s + 0.02 * rng.standard_normal((n, L + 1))
    s[:, 0], s[:, -1] = 0.0, 1.0
    theta = np.abs(rng.normal(0.3, 0.05, (n, L)))
    theta[early, 2:] *= 0.05
    return {"progress": s, "theta": theta, "rel_update": theta, "norms": np.ones((n, L + 1)) * 50,
            "position": np.where(early, 0, rng.integers(1, 500, n)),
            "token_text": np.where(early, "<s>", "word"), "token_id": np.zeros(n, int),
            "sequence": rng.integers(0, 40, n)}, early


@pytest.mark.parametrize("kind", clusters.FEATURES)
@pytest.mark.parametrize("rule", clusters.RULES)
def test_two_clusters_are_found(kind, rule):
    arrays, early = synthetic_profiles()
    df, info = clusters.cluster(arrays, kind, rule)
    assert info["bulk_fraction"] == pytest.approx(1 - early.mean(), abs=0.003)
    assert (df["bulk"].to_numpy() == ~early).mean() > 0.997


def test_a_single_peak_is_one_cluster_for_the_valley_rule():
    assert clusters.valley_split(np.zeros(10)).sum() == 0
    x = np.concatenate([np.full(90, 0.0), np.full(10, 5.0)])
    assert clusters.valley_split(x, bins=10).sum() == 10


def test_kmeans_is_seeded():
    Y = np.random.default_rng(1).normal(size=(300, 2))
    assert np.array_equal(clusters.kmeans2(Y, seed=3), clusters.kmeans2(Y, seed=3))


def test_minority_report_names_the_minority():
    arrays, early = synthetic_profiles()
    df, _ = clusters.cluster(arrays, "progress", "kmeans")
    report = clusters.minority_report(df)
    assert report["minority_tokens"] == early.sum()
    assert report["share_at_position_0"] == pytest.approx(1.0)
    assert report["top_strings"][0][0] == repr("<s>")


def test_fractions_skip_models_too_shallow_for_a_pca():
    deep, _ = synthetic_profiles(L=12)
    shallow, _ = synthetic_profiles(L=2)
    table = clusters.fractions({"deep": deep, "shallow": shallow})
    assert set(table["model"]) == {"deep"} and len(table) == 4


def test_assess_uses_the_primary_model_and_rule():
    arrays, _ = synthetic_profiles(n=4000)
    table = clusters.fractions({"a": arrays})
    primary = table[(table["features"] == "progress") & (table["rule"] == "kmeans")].iloc[0]
    assert primary["windows"] == 40 and primary["bulk_lo"] < primary["bulk_fraction"] < primary["bulk_hi"]
    # early stoppers at s = 1 a quarter in, an even bulk near 1/4, a shuffled control near 1/2
    assert primary["minority_quarter"] == pytest.approx(1.0, abs=0.05)
    assert primary["bulk_quarter"] == pytest.approx(0.25, abs=0.05)
    assert primary["control_hi"] < 0.9
    c = clusters.assess(table, "a", "t")[0]
    assert c.verdict == claims.REPRODUCED and c.units == {"a": {"verdict": "reproduced",
                                                               "decided_by": c.decided_by}}
    # the other rule's number does not rescue a primary outside the band
    moved = table.copy()
    main = (moved["features"] == "progress") & (moved["rule"] == "kmeans")
    moved.loc[main, ["bulk_fraction", "bulk_lo", "bulk_hi"]] = [0.95, 0.94, 0.955]
    moved.loc[~main, "bulk_fraction"] = 0.996
    assert clusters.assess(moved, "a", "t")[0].verdict == claims.NOT_REPRODUCED
    with pytest.raises(ValueError, match="no clustering result"):
        clusters.assess(table, "b", "t")


def test_the_interval_counts_whole_windows():
    # one minority token in each of 10 windows of 100 tokens: 1 % minority, window by window
    window = np.repeat(np.arange(10), 100)
    member = np.ones(1000, bool)
    member[::100] = False
    counts = clusters._resample_counts(10, seed=0, n_boot=500)
    lo, hi = clusters.fraction_interval(member, window, counts)
    assert lo == pytest.approx(0.99) and hi == pytest.approx(0.99)  # every window alike
    member[:100] = False  # one window all minority: the windows now differ
    lo, hi = clusters.fraction_interval(member, window, counts)
    assert lo < 1 - 0.109 < hi
    values = np.concatenate([np.zeros(500), np.ones(500)])
    mlo, mhi = clusters.median_interval(values, window, counts)
    assert 0.0 <= mlo <= mhi <= 1.0


def test_the_shuffled_control_keeps_each_tokens_values():
    X = np.arange(12.0).reshape(3, 4)
    Y = clusters.shuffle_layers(X, seed=1)
    assert np.array_equal(np.sort(Y, 1), X) and not np.array_equal(Y, X)
    assert np.array_equal(Y, clusters.shuffle_layers(X, seed=1))


def test_without_window_ids_there_is_no_interval():
    arrays, _ = synthetic_profiles()
    del arrays["sequence"]
    row = clusters.fractions({"a": arrays}).iloc[0]
    assert row["windows"] == 0 and np.isnan(row["bulk_lo"])
    assert clusters.assess(clusters.fractions({"a": arrays}), "a", "t")[0].verdict == \
        claims.NOT_TESTABLE


def test_depth_slope_recovers_inverse_depth():
    layers = np.array([4, 8, 16, 32])
    summary = pd.DataFrame({"layers": layers, "family": True, "middle_theta": 2.0 / layers},
                           index=[f"family-d{d}" for d in layers])
    fit = geometry.depth_slope(summary)
    assert fit["slope"] == pytest.approx(-1.0, abs=1e-9) and fit["n"] == 4
    assert np.isnan(geometry.depth_slope(summary.iloc[:2])["slope"])  # too few depths


def test_procedural_reference_falls_as_one_over_depth():
    ref = geometry.procedural_reference(np.array([4, 8, 16]), 4, 0.8)
    np.testing.assert_allclose(ref, [0.8, 0.4, 0.2])


def test_excluding_position_zero_removes_a_sink_minority():
    arrays, early = synthetic_profiles()  # the early tokens sit at position 0 here
    with_sink = clusters.fractions({"m": arrays})
    without = clusters.fractions({"m": arrays}, exclude_position0=True)
    assert (with_sink["bulk_fraction"] < 0.995).all()
    assert without["tokens"].iloc[0] == (~early).sum()
