from __future__ import annotations

import numpy as np
import pytest
import torch

from layerlab import models
from layerlab.depth import clusters, lens, tracing


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return {name: models.load(name) for name in ("tiny-llama", "tiny-gptneox", "tiny-opt")}


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gptneox", "tiny-opt"])
def test_lens_last_row_is_the_model_and_first_row_is_the_last_block_alone(tiny, name):
    lm = tiny[name]
    ids = torch.randint(0, 200, (2, 10), generator=torch.Generator().manual_seed(1))
    ce = lens.token_ce(lm, ids)
    assert ce.shape == (lm.n_layers, 2, 9)
    with torch.no_grad():
        logits = lm.model(input_ids=ids).logits
    full = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:],
                                             reduction="none")
    torch.testing.assert_close(ce[-1], full)
    # l = 0: the embedding straight into the last block = a model whose only block is the last
    with lens.skipped(lm, [lm.n_layers - 1]):
        assert lm.n_layers == 1
        with torch.no_grad():
            only_last = lm.model(input_ids=ids, use_cache=False).logits
    assert lm.n_layers == len(tiny[name].blocks) == 4  # restored
    torch.testing.assert_close(ce[0], torch.nn.functional.cross_entropy(
        only_last[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none"))


def test_drop_by_middle():
    assert lens.drop_by_middle([4.0, 3.0, 2.0, 1.0, 0.0], 2) == pytest.approx(0.5)
    assert np.isnan(lens.drop_by_middle([4.0, 4.0, 4.0], 1))
    assert np.isnan(lens.drop_by_middle([4.0, 4.03, 3.99], 1))  # a flat curve is no drop


def test_tracing_restoring_the_last_state_recovers_the_clean_probability(tiny):
    lm = tiny["tiny-llama"]
    fact = tracing.Fact("ab cd ef gh", "cd ef", " ij")
    out = tracing.trace(lm, fact, noise=3.0, samples=2, seed=0)
    R = np.asarray(out["restored"])
    L, T = R.shape
    assert (L, T) == (lm.n_layers, len(out["tokens"]))
    # the last block's clean output at the last position is everything the prediction reads
    assert R[-1, -1] == pytest.approx(out["p_clean"], rel=1e-5)
    lo, hi = out["subject_span"]
    assert "".join(out["tokens"][lo:hi]).strip() == "cd ef"
    # positions before the subject carry no noise: restoring them changes nothing
    assert R[:, 0] == pytest.approx([out["p_corrupt"]] * L, rel=1e-5)
    assert out["p_corrupt"] != pytest.approx(out["p_clean"])


def test_tracing_is_seeded(tiny):
    lm = tiny["tiny-gptneox"]
    fact = tracing.FACTS[1]
    a = tracing.trace(lm, fact, noise=3.0, samples=1, seed=5)
    b = tracing.trace(lm, fact, noise=3.0, samples=1, seed=5)
    assert a["restored"] == b["restored"] and a["p_corrupt"] == b["p_corrupt"]


def test_the_book_has_at_least_twenty_facts_and_each_subject_is_in_its_prompt():
    assert len(tracing.FACTS) >= 20
    assert all(f.subject in f.prompt for f in tracing.FACTS)


def test_context_blocks_put_the_bos_token_first(tiny):
    tok = tiny["tiny-llama"].tokenizer
    plain = clusters.context_blocks(tok, "wikipedia", n_tokens=64, seq_len=16, bos=None)
    with_bos = clusters.context_blocks(tok, "wikipedia", n_tokens=64, seq_len=16, bos=7)
    assert plain.shape == with_bos.shape == (4, 16)
    assert (with_bos[:, 0] == 7).all() and not (plain[:, 0] == 7).all()


def test_early_share_counts_tokens_done_by_mid_depth():
    ce = np.array([[5.0, 5.0, 5.0, 5.0], [3.0, 2.05, 4.0, 1.0], [2.0, 2.0, 2.0, 1.0]])
    # mid-depth is row 1: tokens 1 (within 0.1 of its final 2.0) and 3 are done
    assert lens.early_share(ce) == pytest.approx(0.5)
    assert lens.early_share(ce, margin=1.0) == pytest.approx(0.75)


def test_the_synthetic_early_stoppers_are_found_and_rejected_by_the_a4_band():
    from layerlab.depth.declarations import DECLARATIONS

    band = DECLARATIONS["P1-A4-no-early-stopping"].band
    for layers in (4, 12, 30):
        share = lens.early_share(lens.early_stopping_curves(layers, 4000))
        assert 0.18 < share < 0.27  # the quarter that stops early, less the noise's misses
        assert band.test(lens.positive_estimate(layers, 4000)) == "fail"
    none = lens.early_share(lens.early_stopping_curves(12, 4000, early=0.0))
    assert none < 0.01


def test_wilson_interval():
    lo, hi = lens.wilson(0.1, 1000)
    assert lo < 0.1 < hi and hi - lo < 0.04
    assert lens.wilson(0.0, 500)[0] == pytest.approx(0.0, abs=1e-12)
    assert 0 < lens.wilson(0.0, 500)[1] < 0.01
    assert np.diff(lens.wilson(0.1, 100))[0] > np.diff(lens.wilson(0.1, 10_000))[0]
