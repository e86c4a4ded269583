"""Chapter 10's model and the numerics of growth training: the seeded Llama-style model (tied
embeddings, SwiGLU) and its tokenizer, parameter counts, the operations the programs apply
(`clone_layers`, `stack_model`, `scale_layers`, `set_trainable`) and the FLOPs of one step.

FLOPs are counted per optimizer step: forward through every layer; backward activation
gradients from the lowest trainable layer up; weight gradients only for trainable layers
(the tied embedding/unembedding trains in every step); attention-score FLOPs ignored.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from layerlab import models
from layerlab.settings import GrowthConfig

TOKENIZER_ENV = "LAYERLAB_TOKENIZER_SMOLLM2"


def tokenizer_for(cfg: GrowthConfig):
    """The growth model's tokenizer: bytes, or SmolLM2's -- from the folder named by
    $LAYERLAB_TOKENIZER_SMOLLM2 when set (what `make gpu-run` carries to a GPU machine, which
    has no GGUF), else from the offline model's GGUF."""
    if cfg.tokenizer == "byte":
        return models.byte_tokenizer()
    if cfg.tokenizer == "smollm2":
        folder = os.environ.get(TOKENIZER_ENV)
        if folder:
            from transformers import AutoTokenizer

            if not Path(folder, "tokenizer.json").is_file():
                raise FileNotFoundError(f"${TOKENIZER_ENV}={folder} holds no tokenizer.json; "
                                        "write one with `make gpu-prepare`")
            return AutoTokenizer.from_pretrained(folder)
        return models.load("smollm2-135m-instruct-q4").tokenizer
    raise ValueError(f"unknown tokenizer {cfg.tokenizer!r}: 'smollm2' or 'byte'")


def save_tokenizer(folder: Path) -> Path:
    """SmolLM2's tokenizer files (from the offline GGUF) into `folder`, for a machine without it."""
    tok = models.load("smollm2-135m-instruct-q4").tokenizer
    tok.save_pretrained(str(folder))
    return Path(folder)


def build(cfg: GrowthConfig, vocab: int, layers: int | None = None, seed_offset: int = 0):
    """A seeded Llama-style model (tied embeddings, SwiGLU) of `layers` blocks."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=vocab, hidden_size=cfg.width, intermediate_size=cfg.ffn,
                         num_hidden_layers=layers or cfg.layers, num_attention_heads=cfg.heads,
                         num_key_value_heads=cfg.heads, max_position_embeddings=cfg.seq_len,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                         pad_token_id=None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed * 1000 + seed_offset)
        return AutoModelForCausalLM.from_config(config)


def layer_params(cfg: GrowthConfig) -> int:
    """Parameters of one block: attention 4·d², SwiGLU 3·d·ffn, two norms."""
    return 4 * cfg.width**2 + 3 * cfg.width * cfg.ffn + 2 * cfg.width


def n_params(cfg: GrowthConfig, vocab: int) -> int:
    """Parameters of the whole model: `cfg.layers` blocks, the tied embedding of `vocab` rows
    and the final norm (the count `build` gives, checked in the tests)."""
    return cfg.layers * layer_params(cfg) + vocab * cfg.width + cfg.width


@torch.no_grad()
def clone_layers(model, pairs: tuple[tuple[int, int], ...], noise: float, seed: int) -> None:
    """Layer t ← layer s + noise · std(tensor) · N(0, 1), for each (t, s)."""
    layers = model.model.layers
    gen = torch.Generator().manual_seed(seed)
    for t, s in pairs:
        src = dict(layers[s].named_parameters())
        for name, p in layers[t].named_parameters():
            w = src[name].detach()
            std = w.std() if w.numel() > 1 else w.abs().mean()
            # drawn on the CPU: the same noise whatever device the model is on
            p.copy_(w + noise * std * torch.randn(w.shape, generator=gen).to(w.device))


@torch.no_grad()
def stack_model(small, big, times: int) -> None:
    """G_stack: copy the small model into the big one, its block stack repeated `times` times."""
    big.model.embed_tokens.weight.copy_(small.model.embed_tokens.weight)
    big.model.norm.weight.copy_(small.model.norm.weight)
    n = len(small.model.layers)
    for i, layer in enumerate(big.model.layers):
        layer.load_state_dict(small.model.layers[i % n].state_dict())
    if len(big.model.layers) != n * times:
        raise ValueError("stacked model has the wrong depth")


@torch.no_grad()
def scale_layers(model, layers: tuple[int, ...], alpha: float) -> None:
    """Multiply the matrices (not the norms) of these blocks by `alpha`, in place: GTT's last
    operation, which scales its never-trained anti-layers by 0.9."""
    for l in layers:
        for p in model.model.layers[l].parameters():
            if p.ndim == 2:
                p.mul_(alpha)


def set_trainable(model, layers: tuple[int, ...]) -> None:
    """Only these blocks (plus the embedding and final norm) receive gradients."""
    for i, layer in enumerate(model.model.layers):
        for p in layer.parameters():
            p.requires_grad_(i in layers)
    model.model.embed_tokens.weight.requires_grad_(True)
    model.model.norm.weight.requires_grad_(True)


def step_flops(cfg: GrowthConfig, vocab: int, model_layers: int, trainable: tuple[int, ...]) -> float:
    """FLOPs of one optimizer step (counted as the module docstring says)."""
    tokens = cfg.batch_size * cfg.seq_len
    per_layer = 2 * tokens * layer_params(cfg)
    head = 2 * tokens * vocab * cfg.width
    forward = model_layers * per_layer + head
    act_grad = (model_layers - min(trainable)) * per_layer + head
    weight_grad = len(trainable) * per_layer + head  # the tied embedding/unembedding trains
    return float(forward + act_grad + weight_grad)
