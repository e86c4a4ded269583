"""The verdict chapter: a row for every spec claim, links to chapters, cross-paper tables."""

from __future__ import annotations

import pandas as pd

from layerlab import claims
from layerlab.book import verdicts


def _claim(cid, verdict=claims.REPRODUCED):
    paper, chapter = verdicts.SPEC_CLAIMS[cid]
    return claims.Claim(id=cid, paper=paper, chapter=chapter, statement=f"statement {cid}",
                        paper_value="1", ours="2", rule="r", verdict=verdict, setting="s")


def test_every_spec_claim_has_a_row_measured_or_not():
    claims.register(_claim("P2-C1-core"), "smoke")
    claims.register(_claim("P1-C4-headline", claims.PARTLY), "smoke")
    t = verdicts.table("smoke")
    assert set(verdicts.SPEC_CLAIMS) <= set(t["id"])
    row = t.set_index("id")
    assert row.loc["P2-C1-core", "verdict"] == claims.REPRODUCED
    assert row.loc["P1-C4-headline", "verdict"] == claims.PARTLY
    assert row.loc["P2-C6-cost", "verdict"] == claims.NOT_TESTABLE
    assert "not measured" in row.loc["P2-C6-cost", "setting"]
    c = verdicts.counts(t)
    assert int(c.to_numpy().sum()) == len(t)
    f = verdicts.findings(t)
    # every claim in exactly one finding; claims of one experiment share it
    assert sorted(", ".join(f["claims"]).split(", ")) == sorted(t["id"])
    assert int(verdicts.finding_counts(t).to_numpy().sum()) == len(f) < len(t)


def test_a_finding_takes_one_verdict_by_the_cross_unit_rule():
    t = pd.DataFrame([
        {"id": "a", "paper": "P2", "finding": "F", "verdict": claims.REPRODUCED},
        {"id": "b", "paper": "P2", "finding": "F", "verdict": claims.NOT_REPRODUCED},
        {"id": "c", "paper": "P2", "finding": "G", "verdict": claims.NOT_TESTABLE}])
    f = verdicts.findings(t).set_index("finding")
    assert f.loc["F", "verdict"] == claims.PARTLY and f.loc["F", "claims"] == "a, b"
    assert f.loc["G", "verdict"] == claims.NOT_TESTABLE
    assert f.loc["F", "claim verdicts"] == "a: reproduced; b: not reproduced"


def test_a_finding_never_upgrades_its_claims_by_majority():
    t = pd.DataFrame([
        {"id": "a", "paper": "P1", "finding": "A", "verdict": claims.PARTLY},
        {"id": "b", "paper": "P1", "finding": "A", "verdict": claims.REPRODUCED},
        {"id": "c", "paper": "P1", "finding": "A", "verdict": claims.REPRODUCED},
        {"id": "d", "paper": "P2", "finding": "F4", "verdict": claims.NOT_REPRODUCED},
        {"id": "e", "paper": "P2", "finding": "F4", "verdict": claims.NOT_DIAGNOSTIC}])
    f = verdicts.findings(t).set_index("finding")
    assert f.loc["A", "verdict"] == claims.PARTLY
    assert f.loc["F4", "verdict"] == claims.NOT_REPRODUCED


def test_claims_quoting_only_a_secondary_summary_are_counted_apart():
    t = pd.DataFrame([
        {"id": "a", "paper": "P2", "verdict": claims.REPRODUCED, "source_from": "abstract"},
        {"id": "b", "paper": "P2", "verdict": claims.REPRODUCED,
         "source_from": "secondary summary"}])
    c = verdicts.counts(t)
    assert list(c.index) == ["P2", "P2 (secondary summary only)"]


def test_spec_claims_point_at_existing_chapters():
    from pathlib import Path

    nb = Path(__file__).resolve().parents[2] / "notebooks"
    for cid, (paper, chapter) in verdicts.SPEC_CLAIMS.items():
        assert cid.startswith(paper) and (nb / f"{chapter}.py").is_file(), cid


def test_html_table_links_each_claim_to_its_chapter_and_escapes_text():
    t = pd.DataFrame([{"id": "P2-C1-core", "paper": "P2", "chapter": "05_importance_map",
                       "statement": "a < b", "paper_value": "x", "ours": "y", "rule": "z",
                       "verdict": "reproduced", "setting": "s", "decided_by": "step <2>"}])
    out = verdicts.html_table(t)
    assert '<a href="05_importance_map.html">a &lt; b</a>' in out
    assert "step &lt;2&gt;" in out  # the deciding step, escaped


def test_per_layer_joins_geometry_and_importance():
    L = 4
    from layerlab.depth.geometry import ModelGeometry

    geo = ModelGeometry(n_layers=L, summary={}, conventions={"raw": {"pos_ge_1": {
        "theta": {"mean": [0.1, 0.2, 0.3, 0.4]}, "rel_update": {"mean": [1, 2, 3, 4]}}}})
    imp = pd.DataFrame([{"set": "E1", "method": m, "layer": l, "deg": 10.0 * l + (m == "skip")}
                        for m in ("neighbour_average", "skip") for l in range(L)])
    sim = pd.DataFrame({"layer": range(L), "block_influence": [0.4, 0.3, 0.2, 0.1],
                        "angular_distance": [0.1, 0.2, 0.3, 0.4]})
    layers = verdicts.per_layer(geo, imp, sim)
    assert list(layers.columns) == ["layer", "theta", "rel_update", "neighbour-average deg %",
                                    "skip deg %", "block_influence", "angular_distance"]
    rho = verdicts.spearman_matrix(layers, inner=False)
    assert rho.loc["theta", "neighbour-average deg %"] == 1.0
    assert rho.loc["theta", "block_influence"] == -1.0


def test_family_scaling_flags_non_monotone_losses():
    losses = pd.DataFrame({"depth": [2, 4, 8, 16, 32], "seed": 0,
                           "val_loss": [2.0, 1.8, 1.7, 1.75, 1.72]})
    assert verdicts.family_scaling(losses)["monotone"] is False
