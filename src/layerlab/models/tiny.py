"""Tiny random models built from config with a byte-level tokenizer: no download, for the
tests and the `smoke` profile of every chapter.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from layerlab.models.errors import UnknownModel
from layerlab.models.handle import LoadedModel, wrap


# --- tiny random models ---------------------------------------------------------------------
def byte_tokenizer() -> Any:
    """A byte-level tokenizer (256 byte symbols + `<|endoftext|>`), built offline, lossless."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: i for i, symbol in enumerate(alphabet)}
    vocab["<|endoftext|>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = "<|endoftext|>"
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=special, bos_token=special, pad_token=special
    )


def tiny_config(arch: str, *, vocab_size: int = 257, layers: int = 4, width: int = 64) -> Any:
    """A small config of the given family (`gptneox`, `llama`, `opt`, `qwen2`, `gemma3`, `gpt2`,
    `mistral`, `qwen3`, `phi3`, `gemma2`, `granite`)."""
    import transformers as tf

    common = dict(
        vocab_size=vocab_size,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=4,
        max_position_embeddings=1024,
    )
    builders: dict[str, Callable[[], Any]] = {
        "gptneox": lambda: tf.GPTNeoXConfig(**common, intermediate_size=4 * width),
        "llama": lambda: tf.LlamaConfig(
            **common, num_key_value_heads=2, intermediate_size=2 * width
        ),
        "opt": lambda: tf.OPTConfig(**common, ffn_dim=4 * width, word_embed_proj_dim=width),
        "qwen2": lambda: tf.Qwen2Config(
            **common, num_key_value_heads=2, intermediate_size=2 * width
        ),
        "gemma3": lambda: tf.Gemma3TextConfig(
            **common,
            num_key_value_heads=1,
            head_dim=width // 4,
            intermediate_size=2 * width,
            sliding_window=32,
        ),
    }
    # families found by the structural rule only (no table entry): built here so tests load
    # every tested block stack from a save_pretrained folder
    builders |= {
        "gpt2": lambda: tf.GPT2Config(vocab_size=vocab_size, n_embd=width, n_layer=layers,
                                      n_head=4, n_positions=1024, bos_token_id=vocab_size - 1,
                                      eos_token_id=vocab_size - 1),
        "mistral": lambda: tf.MistralConfig(**common, num_key_value_heads=2,
                                            intermediate_size=2 * width, sliding_window=32),
        "qwen3": lambda: tf.Qwen3Config(**common, num_key_value_heads=2, head_dim=width // 4,
                                        intermediate_size=2 * width),
        "phi3": lambda: tf.Phi3Config(**common, num_key_value_heads=2,
                                      intermediate_size=2 * width, pad_token_id=0,
                                      bos_token_id=0, eos_token_id=0),
        "gemma2": lambda: tf.Gemma2Config(**common, num_key_value_heads=1, head_dim=width // 4,
                                          intermediate_size=2 * width, sliding_window=32,
                                          final_logit_softcapping=30.0),
        # Granite scales its embeddings, residual branches, attention and logits (÷ 4 here)
        "granite": lambda: tf.GraniteConfig(**common, num_key_value_heads=2,
                                            intermediate_size=2 * width, logits_scaling=4.0,
                                            embedding_multiplier=12.0, residual_multiplier=0.22,
                                            attention_multiplier=1 / 16),
    }
    if arch not in builders:
        raise UnknownModel(f"no tiny config for {arch!r}; choose one of {sorted(builders)}")
    return builders[arch]()


TINY = ("tiny-gptneox", "tiny-llama", "tiny-opt", "tiny-qwen2", "tiny-gemma3", "tiny-gpt2",
        "tiny-mistral", "tiny-qwen3", "tiny-phi3", "tiny-gemma2", "tiny-granite")


def load_tiny(name: str, *, seed: int = 0, layers: int = 4, width: int = 64) -> LoadedModel:
    """A random model from config; same seed, same weights."""
    from transformers import AutoModelForCausalLM

    tokenizer = byte_tokenizer()
    config = tiny_config(name.removeprefix("tiny-"), vocab_size=len(tokenizer), layers=layers,
                         width=width)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
    lm = wrap(name, model, tokenizer, source=f"random init from config (seed {seed})")
    lm.info["seed"] = seed
    return lm
