from __future__ import annotations

import math

import pytest
import torch

from layerlab import corpus, evaluate, profiles, results
from layerlab.book import survey


def test_random_model_perplexity_is_near_uniform(tiny_models):
    lm = tiny_models["tiny-llama"]
    blocks = corpus.token_blocks(lm.tokenizer, "wikipedia", n_tokens=256, seq_len=64)
    out = evaluate.perplexity(lm, blocks, batch_size=2)
    assert out["predicted_tokens"] == 4 * 63
    assert 0.8 * 257 < out["ppl"] < 1.25 * 257
    assert math.isclose(math.log(out["ppl"]), out["nll_per_token"])


def test_batch_size_does_not_change_the_result(tiny_models):
    lm = tiny_models["tiny-opt"]
    blocks = corpus.token_blocks(lm.tokenizer, "kjv", n_tokens=300, seq_len=50)
    a = evaluate.block_nll(lm, blocks, batch_size=1)
    b = evaluate.block_nll(lm, blocks, batch_size=6)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-4)


def test_perplexity_matches_a_hand_computation(tiny_models):
    lm = tiny_models["tiny-gptneox"]
    ids = torch.tensor([[3, 7, 11, 13, 17]])
    with torch.no_grad():
        logp = lm.model(ids).logits.log_softmax(-1)[0]
    manual = -sum(float(logp[t, ids[0, t + 1]]) for t in range(4)) / 4
    assert math.isclose(evaluate.perplexity(lm, ids)["nll_per_token"], manual, rel_tol=1e-5)


def test_nan_weights_are_reported(tiny_models):
    lm = tiny_models["tiny-qwen2"]
    weight = lm.blocks[0].mlp.up_proj.weight
    saved = weight.detach().clone()
    with torch.no_grad():
        weight.fill_(float("nan"))
    try:
        with pytest.raises(FloatingPointError, match="non-finite"):
            evaluate.perplexity(lm, torch.tensor([[1, 2, 3, 4]]))
    finally:
        with torch.no_grad():
            weight.copy_(saved)


def test_survey_runs_every_smoke_model_and_passes_its_sanity_rule(tmp_path):
    profile = profiles.get("smoke")
    out = survey.run(profile, results.Cache("smoke", root=tmp_path))
    assert list(out) == list(profile.models)
    assert (survey.sanity_table(out)["verdict"] == "pass").all()
    norms = survey.norm_table(out)
    assert set(norms["state"]) == {"residual stream", "after final norm"}
    # cached: a second run reads the files
    again = survey.run(profile, results.Cache("smoke", root=tmp_path))
    assert again == out
