"""The stand-in's precision (VERDICTS.md §4): Q4_1 as llama.cpp stores it, its fixed point, the
dithered copy, and the claims' margins against the copies' movement."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from layerlab import profiles
from layerlab.anatomy.lab import Lab
from layerlab.report import precision

torch.set_num_threads(1)


def _weights(rows=8, cols=64, seed=0):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * 0.05


def test_q4_1_is_its_own_fixed_point_and_rounds_within_half_a_step():
    x = _weights()
    q = precision.q4_1(x)
    assert torch.allclose(precision.q4_1(q), q, atol=1e-7, rtol=0)  # re-quantising: nothing
    d = precision.steps(x).repeat_interleave(precision.BLOCK).reshape(x.shape)
    assert ((q - x).abs() <= d / 2 + 1e-4).all()
    # at most 16 distinct values per block of 32
    assert max(len(set(b.tolist())) for b in q.reshape(-1, 32)) <= 16


def test_a_perturbed_copy_is_as_far_from_the_stand_in_as_its_rounding_and_is_seeded():
    q = precision.q4_1(_weights(256, 128))
    a, b = precision.dithered(q, 0), precision.dithered(q, 0)
    assert torch.equal(a, b) and not torch.equal(a, precision.dithered(q, 1))
    d = precision.steps(q).repeat_interleave(precision.BLOCK).reshape(q.shape)
    moved = (a - q) / d
    assert float(moved.abs().max()) <= 0.5 + 1e-6
    # the rounding's own RMS: d/√12 (uniform within ± half a step)
    assert float(moved.pow(2).mean().sqrt()) == pytest.approx(12 ** -0.5, rel=0.05)


def test_the_copy_is_restored_exactly_and_the_error_share_is_measured():
    lab = Lab(profiles.get("smoke"), progress=False)
    lm = lab.lm
    before = {k: v.detach().clone() for k, v in lm.model.state_dict().items()}
    with precision.dithered_copy(lm, 0):
        changed = [n for n, p in lm.model.state_dict().items() if not torch.equal(p, before[n])]
        assert changed and all(".layers." in n for n in changed)
    assert all(torch.equal(v, before[k]) for k, v in lm.model.state_dict().items())
    err = precision.error_share(lm)
    assert len(err) == len(precision.quantised(lm)) and (err["error / std"] > 0).all()
    assert "of a matrix's std" in precision.describe(err)
    # a stand-in without P2's named layers: the run still completes, those claims are undefined
    out = precision.run(lab)
    m = precision.margins(out["values"])
    assert not m.loc["P2-C1-core", "resolved"] and m["stand-in"].isna()["P2-C1-core"]
    assert m.loc["P2-C3-delta-value", "movement"] >= 0


def test_margins_say_which_claims_the_stand_in_resolves():
    stats = {f"L{l} neighbour average % (E0)": v for l, v in
             {8: 500.0, 9: 300.0, 10: 200.0, 11: 900.0, 14: -5.0, 17: -2.0}.items()}
    stats |= {"×0.9 on S % (E0)": 3.0, "ridge R² gate (forward, best α)": 0.2,
              "delta correlation q": -0.5, "delta correlation k": -0.48,
              "middle θ(Δh) rad": 1.5, "early-stopper share": 0.01}
    moved = {k: v + (1.0 if "%" in k else 0.001) for k, v in stats.items()}
    # the copy drops two of the core layers: the third-largest falls from 300 % to 50 %
    moved["L9 neighbour average % (E0)"] = moved["L10 neighbour average % (E0)"] = 50.0
    values = pd.DataFrame({"stand-in": stats, "dithered-s0": moved})
    m = precision.margins(values)
    assert not m.loc["P2-C1-core", "resolved"]  # 300 % is 200 from the edge, the copy moved 250
    assert m.loc["P2-C1-core", "crossing"] == "dithered-s0"
    assert m.loc["P2-C1-anti-layers", "resolved"]  # 2 from 0, moved 1 toward it: same side
    assert m.loc["P1-A4-no-early-stopping", "movement"] == pytest.approx(0.001)
    # a share's lower limit is no edge: 0.01 lies 0.03 from the band's upper edge
    assert m.loc["P1-A4-no-early-stopping", "distance to the band's edge"] == pytest.approx(0.03)
    assert set(precision.movement(values)["movement"].index) == set(stats)


def test_a_copy_threatens_a_layer_claim_only_across_the_band_edge():
    """VERDICTS.md §4 [rev]: the copies' own units, built by the chapter's unit function, and
    the directional check: a copy far above the edge threatens nothing; one across it does."""
    from layerlab import claims
    from layerlab.anatomy.importance import rules

    unit = claims.Unit(name="E0", primary=claims.Estimate(265.0, 227.0, 311.0))
    away = {"dithered-s0": [claims.Unit(name="E0", primary=claims.Estimate(4000.0, 3000.0, 5000.0))]}
    kept = rules._decided("P2-C1-core", [unit], ours="", setting="t", copy_units=away)
    assert "stand-in precision" not in kept.decided_by
    assert kept.numbers["stand-in copies"]["E0"]["dithered-s0"] == [4000.0, 3000.0, 5000.0]
    across = {"dithered-s0": [claims.Unit(name="E0", primary=claims.Estimate(60.0, 40.0, 80.0))]}
    lost = rules._decided("P2-C1-core", [unit], ours="", setting="t", copy_units=across)
    assert lost.verdict == claims.NOT_TESTABLE and "stand-in precision" in lost.decided_by


def test_unresolved_names_only_the_claims_a_copy_carries_across_an_edge():
    stats = {f"L{l} neighbour average % (E0)": v for l, v in
             {8: 500.0, 9: 300.0, 10: 200.0, 11: 900.0, 14: -5.0, 17: -2.0}.items()}
    stats |= {"×0.9 on S % (E0)": 25.0, "ridge R² gate (forward, best α)": 0.2,
              "delta correlation q": -0.5, "middle θ(Δh) rad": 1.5, "early-stopper share": 0.01}
    copy = dict(stats) | {"×0.9 on S % (E0)": 35.0}  # ×0.9 crosses the 30 % edge
    notes = precision.unresolved(precision.margins(
        pd.DataFrame({"stand-in": stats, "dithered-s0": copy})))
    assert set(notes) == {"P2-C4-only-scaling"} and "dithered-s0" in notes["P2-C4-only-scaling"]
    far = dict(stats) | {"×0.9 on S % (E0)": -80.0}  # further from the edge: no threat
    assert precision.unresolved(precision.margins(
        pd.DataFrame({"stand-in": stats, "dithered-s0": far}))) == {}


def test_a_secondary_a_copy_carries_across_its_edge_is_left_undecided_saying_why():
    from layerlab import claims
    from layerlab.anatomy.importance import rules

    rest = claims.Estimate(25.0, 20.0, 29.0)  # "the rest connective": below 30 %
    unit = claims.Unit(name="E0", primary=claims.Estimate(80.0, 60.0, 100.0),
                       control=claims.Estimate(1.0, 0.0, 2.0),  # the untrained twin: no I/O layers
                       secondary={"the rest connective": rest})
    copy = claims.Unit(name="E0", primary=claims.Estimate(85.0, 65.0, 105.0),
                       secondary={"the rest connective": claims.Estimate(45.0, 35.0, 55.0)})
    c = rules._decided("P2-C1-io-layers", [unit], ours="", setting="t",
                       copy_units={"dithered-s0": [copy]})
    assert c.verdict == claims.PARTLY and "the rest connective (stand-in precision" in c.decided_by
    still = dataclasses_replace(copy, secondary={"the rest connective": claims.Estimate(5, 1, 9)})
    kept = rules._decided("P2-C1-io-layers", [unit], ours="", setting="t",
                          copy_units={"dithered-s0": [still]})
    assert kept.verdict == claims.REPRODUCED


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def test_the_copies_redo_chapter_05s_map_on_every_layer_and_restore_the_model():
    """VERDICTS.md §4 [rev]: the copies cover every layer the layer claims read, on E0 with all
    copies and on E1 with the ones `COPY_SEEDS` names; the model is restored afterwards."""
    import torch

    from layerlab.anatomy import importance

    lab = Lab(profiles.get("smoke"), progress=False)
    before = {k: v.clone() for k, v in lab.lm.model.state_dict().items()}
    maps = precision.copy_maps(lab)
    assert set(maps) == {f"dithered-s{s}" for s in precision.SEEDS}
    for name, (table, ranges) in maps.items():
        seed = int(name.removeprefix("dithered-s"))
        sets = {s for s in precision.COPY_METHODS if seed in precision.COPY_SEEDS[s]}
        assert set(table["set"]) == sets == set(ranges["set"])
        e0 = table[(table["set"] == "E0") & (table["method"] == "neighbour_average")]
        assert sorted(e0["layer"]) == list(range(lab.n_layers))
    after = lab.lm.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    # the copies move the map: their base perplexity differs from the stand-in's
    result = importance.run(lab)
    stand_in = float(result.table.loc[result.table["set"] == "E0", "base_ppl"].iloc[0])
    copies = {float(t.loc[t["set"] == "E0", "base_ppl"].iloc[0]) for t, _ in maps.values()}
    assert stand_in not in copies
