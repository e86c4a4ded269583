"""P2 chapters 05-06: evaluation sets, statistics, class rules, verdicts and the smoke pipeline."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from layerlab import claims, corpus, models, profiles
from layerlab.anatomy import edits, evalsets, importance, strategies
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.anatomy.lab import Lab


def test_sentences_are_split_per_line_and_at_sentence_ends():
    text = "Title line\nFirst one. Second one! Third? yes, lower case stays.\n\nNext para."
    assert evalsets.split_sentences(text) == [
        "Title line", "First one.", "Second one!", "Third? yes, lower case stays.", "Next para."]


def test_e0_is_the_ten_published_sentences():
    tok = models.byte_tokenizer()
    es = evalsets.e0(tok)
    assert len(es.sentences) == 10 and es.sentences == evalsets.e0_sentences()
    assert es.predicted_tokens == sum(len(s.encode()) - 1 for s in es.sentences)


def test_e1_reaches_the_token_floor_with_clean_sentences_deterministically():
    tok = models.byte_tokenizer()
    a = evalsets.e1(tok, "wikipedia", min_tokens=2000, max_len=300)
    b = evalsets.e1(tok, "wikipedia", min_tokens=2000, max_len=300)
    assert a.sentences == b.sentences and a.predicted_tokens >= 2000
    assert a.predicted_tokens - max(len(s) for s in a.ids) < 2000  # stops as soon as it is enough
    assert all(len(s.split()) >= 6 and "()" not in s for s in a.sentences)
    with pytest.raises(corpus.CorpusError, match="fewer than"):
        evalsets.e1(tok, "wikipedia", min_tokens=10**9)
    with pytest.raises(corpus.CorpusError, match="no sentences"):
        evalsets.EvalSet("x", [], [], source="none")


def test_e1_by_document_gives_each_document_an_equal_share_and_tags_its_sentences():
    tok = models.byte_tokenizer()
    es = evalsets.e1(tok, "wikipedia", min_tokens=4000, max_len=300, documents=8)
    again = evalsets.e1(tok, "wikipedia", min_tokens=4000, max_len=300, documents=8)
    assert es.sentences == again.sentences and es.units == again.units
    assert sorted(set(es.units)) == list(range(8)) and len(set(es.unit_names)) == 8
    assert es.units == sorted(es.units)  # each document's sentences together, in order
    share = 4000 // 8
    for u in range(8):
        tokens = [len(i) - 1 for i, v in zip(es.ids, es.units) if v == u]
        # its share, passed by less than one sentence
        assert share <= sum(tokens) < share + max(tokens)
    # the documents are spread over the corpus, not its first articles
    every = [t for t, _ in evalsets.documents_of("wikipedia")]
    positions = [every.index(t) for t in es.unit_names]
    assert positions == sorted(positions) and positions[-1] > len(every) // 2
    row = es.describe()
    assert (row["resampled by"], row["resampling units"]) == ("document", 8)
    assert evalsets.e0(tok).describe()["resampled by"] == "sentence"
    with pytest.raises(corpus.CorpusError, match="documents"):
        evalsets.e1(tok, "wikipedia", min_tokens=10**7, documents=50)
    with pytest.raises(ValueError, match="at least 2"):
        evalsets.e1(tok, "wikipedia", documents=1)


def _scores(nll, tokens):
    return Scores(np.asarray(nll, float), np.asarray(tokens))


def test_bootstrap_by_document_draws_whole_documents():
    units = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])
    w = importance.bootstrap_weights(len(units), 500, seed=2, units=units)
    assert w.shape == (500, 10)
    for u in range(4):  # the sentences of one document are drawn together
        cols = w[:, units == u]
        assert (cols == cols[:, :1]).all()
    # four documents drawn per resample, so the weights of documents sum to four
    first = w[:, [0, 3, 5, 6]]
    assert (first.sum(1) == 4).all() and (first == 0).any()
    # one document per sentence is the sentence bootstrap
    assert np.array_equal(importance.bootstrap_weights(10, 50, seed=3, units=np.arange(10)),
                          importance.bootstrap_weights(10, 50, seed=3))
    with pytest.raises(ValueError, match="units"):
        importance.bootstrap_weights(5, 10, units=units)


def test_a_document_bootstrap_is_wider_when_documents_differ():
    # two kinds of documents: an edit hurts one kind only. Resampling sentences treats 40
    # sentences as independent; resampling the 4 documents sees that only two carry the effect
    units = np.repeat(np.arange(4), 10)
    base = _scores(np.full(40, 10.0), np.full(40, 5))
    hurt = _scores(base.nll + np.where(units % 2 == 0, 4.0, 0.0), base.tokens)
    by_doc = Scores(base.nll, base.tokens, units)
    wide = importance.degradation_table({("E1", "m", 1): hurt}, {"E1": by_doc}, resamples=400)
    narrow = importance.degradation_table({("E1", "m", 1): hurt}, {"E1": base}, resamples=400)
    assert (wide["hi"] - wide["lo"]).iloc[0] > 2 * (narrow["hi"] - narrow["lo"]).iloc[0]
    assert Scores.from_dict(by_doc.to_dict()).units.tolist() == units.tolist()
    assert "units" not in base.to_dict()


def test_bootstrap_weights_resample_every_sentence_count():
    w = importance.bootstrap_weights(7, 100, seed=1)
    assert w.shape == (100, 7) and (w.sum(1) == 7).all()
    assert np.array_equal(w, importance.bootstrap_weights(7, 100, seed=1))


def test_degradation_and_paired_ci():
    base = _scores([10.0, 20.0, 30.0, 15.0], [5, 10, 15, 5])
    same = _scores(base.nll, base.tokens)
    worse = _scores(base.nll + np.array([5, 5, 5, 5]), base.tokens)  # every sentence worse
    t = importance.degradation_table({("E0", "m", 1): same, ("E0", "m", 2): worse},
                                     {"E0": base}, resamples=200)
    row1, row2 = t.iloc[0], t.iloc[1]
    assert row1["deg"] == pytest.approx(0) and row1["lo"] == pytest.approx(0)
    expected = 100 * (np.exp(95 / 35) / np.exp(75 / 35) - 1)
    assert row2["deg"] == pytest.approx(expected)
    assert 0 < row2["lo"] <= row2["deg"] <= row2["hi"]


def _fake_map(deg: dict[int, float], n=30, ci=1.0):
    return pd.DataFrame([{"layer": l, "deg": d, "lo": d - ci, "hi": d + ci} for l, d in deg.items()])


def test_class_rules():
    deg = {l: 10.0 for l in range(30)}
    deg.update({1: 500, 2: 40, 9: 150, 11: 5000, 12: 60, 14: -3, 17: -0.5, 25: 45})
    cls = importance.classify(_fake_map(deg), 30)
    assert cls[0] == cls[29] == "edge"
    assert cls[1] == cls[2] == cls[25] == "I/O"
    assert cls[9] == cls[11] == "critical core"
    assert cls[12] == "moderate"
    assert cls[14] == "anti-layer"  # CI [-4, -2]
    assert cls[17] == "connective"  # CI [-1.5, 0.5] crosses zero
    assert cls[5] == "connective"


def _paper_like_result(anti_hi=-0.1):
    rows, twin = [], []
    for s in ("E0", "E1"):
        deg = {l: 10.0 for l in range(30)}
        deg.update({1: 3000, 2: 200, 8: 400, 9: 150, 10: 5000, 11: 63_000, 14: -0.6, 17: -0.6})
        deg.update({l: 80 for l in range(23, 29)})
        for m in ("neighbour_average", "skip"):  # removal agrees with averaging here
            for l, d in deg.items():
                hi = anti_hi if l in (14, 17) else d + 1
                rows.append({"set": s, "method": m, "layer": l, "deg": d, "lo": d - 1, "hi": hi})
                # the untrained twin: every layer within ±1 % of 0 (no core, I/O or anti-layer)
                twin.append({"set": s, "method": m, "layer": l, "deg": 0.0, "lo": -1.0, "hi": 1.0})
    ranges = pd.DataFrame([{"set": s, "log10_range": 7.0, "log10_range_ci": [6.5, 7.5]}
                           for s in ("E0", "E1")])
    # the fields `assess` reads
    return SimpleNamespace(table=importance.with_classes(pd.DataFrame(rows), 30), ranges=ranges,
                           untrained=importance.with_classes(pd.DataFrame(twin), 30))


def test_assess_reproduces_a_paper_like_map_and_rejects_a_different_one():
    found = {c.id: c for c in importance.assess(_paper_like_result(), "synthetic", 30)}
    assert all(c.verdict == claims.REPRODUCED for c in found.values()), {
        k: c.decided_by for k, c in found.items() if c.verdict != claims.REPRODUCED}
    assert {c.finding for c in found.values()} == {"P2-F1 layer importance map"}
    found = {c.id: c for c in importance.assess(_paper_like_result(anti_hi=0.4), "synthetic", 30)}
    assert found["P2-C1-anti-layers"].verdict == claims.NOT_TESTABLE  # CI across 0
    moved = _paper_like_result()
    t = moved.table
    t.loc[t["layer"] == 20, ["deg", "hi"]] = 90_000.0  # a new peak outside the core
    t.loc[t["layer"] == 20, "class"] = "critical core"
    core = {c.id: c for c in importance.assess(moved, "synthetic", 30)}["P2-C1-core"]
    assert core.verdict == claims.PARTLY  # L8-11 still core; the peak and the class moved
    assert "peak at L11" in core.decided_by and "no core elsewhere" in core.decided_by
    # without the untrained twin, the presence claims whose primary passes are not testable
    bare = {c.id: c for c in importance.assess(SimpleNamespace(**{**vars(_paper_like_result()), "untrained": None}),
                                               "synthetic", 30)}
    assert {bare[c].decided_by for c in ("P2-C1-core", "P2-C1-anti-layers", "P2-C1-io-layers")
            } == {"every unit: control: not measured"}
    small = importance.assess(_paper_like_result(), "synthetic", 6)
    assert {c.verdict for c in small if c.id != "P2-C1-range"} == {claims.NOT_TESTABLE}
    assert all("6 layers" in c.decided_by for c in small if c.id != "P2-C1-range")


def test_range_statistic_is_driven_by_the_smallest_degradation():
    base = _scores([10.0] * 4, [5] * 4)
    runs = {("E0", "neighbour_average", l): _scores(np.full(4, 10.0 + d), [5] * 4)
            for l, d in {1: 5.0, 2: 0.001, 3: 1.0}.items()}
    r = importance.range_statistic(runs, base, "E0", 5, resamples=20)
    deg = {l: 100 * (np.exp(4 * d / 20) - 1) for l, d in {1: 5.0, 2: 0.001, 3: 1.0}.items()}
    assert r["min_abs_layer"] == 2
    assert r["log10_range"] == pytest.approx(np.log10(deg[1] / deg[2]))


def test_block_influence_and_angular_distance_vanish_for_a_skipped_layer():
    lm = models.load_tiny("tiny-llama", layers=4)
    es = evalsets.e0(lm.tokenizer)
    ev = Evaluator(lm, es, batch_tokens=512)
    with edits.applied(lm, edits.edit("skip", 2)):
        sim = importance.layer_similarity(lm, ev)
    assert sim.loc[2, "block_influence"] == pytest.approx(0, abs=1e-6)
    assert sim.loc[2, "angular_distance"] == pytest.approx(0, abs=2e-3)
    assert (sim.drop(index=2)["block_influence"] > 1e-4).all()


def test_repetition_scores():
    assert strategies.distinct_2([1, 2, 3, 4]) == 1.0
    assert strategies.distinct_2([1, 2, 1, 2, 1, 2]) == pytest.approx(2 / 5)
    assert strategies.repeated_3([1, 2, 3, 1, 2, 3]) == pytest.approx(1 / 4)
    assert strategies.repeated_3([5, 5, 5, 5]) == pytest.approx(1 / 2)


def test_target_set_is_the_connective_tissue():
    t = pd.DataFrame({"set": "E1", "method": "neighbour_average", "layer": range(5),
                      "class": ["edge", "connective", "I/O", "anti-layer", "edge"]})
    assert strategies.target_set(t) == [1, 3]


@pytest.fixture
def smoke_lab():
    torch.manual_seed(0)
    return Lab(profiles.get("smoke"), progress=False)


def test_smoke_pipeline_runs_caches_and_resumes(smoke_lab, monkeypatch):
    res = importance.run(smoke_lab)
    t = res.table
    cfg = smoke_lab.cfg
    expected = sum(len(m) for m in cfg.map_methods.values()) * cfg.n_layers
    assert len(t) == expected and t["class"].notna().all()
    assert set(res.anchors["compared with"]) >= {"ShortGPT Block Influence"}
    S = strategies.target_set(t) or [1, 2]
    out = strategies.run(smoke_lab, S)
    assert set(out.joint["strategy"]) == {*strategies.STRATEGIES, *strategies.VARIANTS}
    gens = strategies.generations(smoke_lab, S)
    assert len(gens) == len(strategies.PROMPTS) * 7
    m = strategies.matched(smoke_lab, S, t, k_max=2)
    assert set(m.joint["matched"]) == {"size joint", "damage joint"}
    assert len(m.k) == 2 * len(strategies.STRATEGIES) * 2
    # zero moved 10 % of the way is scale ×0.9 exactly
    mj = m.joint.set_index(["set", "matched", "strategy"])
    assert m.size_fractions["zero"] == {l: pytest.approx(0.1) for l in S}
    found = strategies.assess(out, gens, m, "smoke")
    assert {c.id for c in found} == {"P2-C4-only-scaling", "P2-C4-magnitudes"}
    assert np.isfinite(mj["deg"]).all()

    # a fresh lab over the same results computes nothing: no model is even loaded
    again = Lab(profiles.get("smoke"), progress=False)
    monkeypatch.setattr(Lab, "evaluator", lambda *a, **k: pytest.fail("recomputed a cached result"))
    pd.testing.assert_frame_equal(importance.run(again).table, t)
    pd.testing.assert_frame_equal(strategies.run(again, S).joint, out.joint)


def test_untrained_twin_map_is_the_layer_claims_control(smoke_lab, monkeypatch):
    res = importance.run(smoke_lab, untrained=True)
    twin, cfg = res.untrained, smoke_lab.cfg
    # every set: both operations where per-layer sweeps are cheap, neighbour averaging elsewhere
    assert len(twin) == sum(len(importance.untrained_methods(smoke_lab, s))
                            for s in cfg.map_methods) * cfg.n_layers
    assert set(twin["set"]) == set(cfg.map_methods)
    assert set(twin["method"]) <= set(importance.UNTRAINED_METHODS) and twin["class"].notna().all()
    assert not twin[["deg", "lo", "hi"]].equals(res.table[["deg", "lo", "hi"]].iloc[:len(twin)])
    # cached like the map: a fresh lab computes nothing
    again = Lab(profiles.get("smoke"), progress=False)
    monkeypatch.setattr(importance.experiment.models, "untrained_twin",
                        lambda *a, **k: pytest.fail("recomputed the untrained map"))
    pd.testing.assert_frame_equal(pd.concat([importance.untrained_map(again, sets=(s,))
                                             for s in cfg.map_methods], ignore_index=True), twin)


def test_only_experiments_that_read_e1_key_its_documents(smoke_lab):
    cfg = smoke_lab.cfg
    assert cfg.e1_documents == 5
    legacy = {k: getattr(cfg, k) for k in ("model", "e1_source", "e1_tokens", "e1_max_len",
                                            "batch_tokens", "dtype")}
    assert smoke_lab.key(reads_e1=False, x=1) == {**legacy, "x": 1}  # committed keys unchanged
    assert smoke_lab.key(x=1) == {**legacy, "e1_documents": 5, "x": 1}
    smoke = profiles.get("smoke")
    in_order = Lab(dataclasses.replace(smoke, anatomy=smoke.anatomy.replace(e1_documents=0)),
                   progress=False)
    assert in_order.key(x=1) == {**legacy, "x": 1}
    # E1 is drawn by document; the recovery curve reads the held-out text in order
    assert smoke_lab.evalset("E1").units is not None
    assert smoke_lab.evalset("E1", 200, passage=True).units is None
    from layerlab.anatomy import recovery
    assert recovery.evaluator(smoke_lab, cfg.recovery).evalset.units is None
    assert smoke_lab.base("E1").units is not None and smoke_lab.base("E0").units is None


def test_map_resumes_after_an_interruption(smoke_lab, monkeypatch):
    calls = {"n": 0}
    real = Evaluator.evaluate

    def flaky(self, e=None):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(self, e)

    monkeypatch.setattr(Evaluator, "evaluate", flaky)
    with pytest.raises(KeyboardInterrupt):
        importance.run_map(smoke_lab)
    monkeypatch.setattr(Evaluator, "evaluate", real)
    done = calls["n"] - 1
    counted = {"n": 0}

    def counting(self, e=None):
        counted["n"] += 1
        return real(self, e)

    monkeypatch.setattr(Evaluator, "evaluate", counting)
    runs = importance.run_map(smoke_lab)
    assert counted["n"] == len(runs) - done
