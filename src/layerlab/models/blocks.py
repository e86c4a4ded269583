"""Finding the block stack of any causal LM: the decoder blocks, the final norm, the
embedding and the unembedding by generic discovery, with per-family exceptions (chapters
00–03, 05–10 and the report, through `wrap`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from layerlab.models.errors import UnsupportedArchitecture

# --- finding the block stack ---------------------------------------------------------------
# Most causal LMs are read from their own structure (research/gpu-bigmodels.md §4, a rule
# tested on 24 classes): the decoder's ModuleList with num_hidden_layers entries (the one with
# the most parameters, so a vision tower of equal depth loses), the norm that sits beside it,
# and the model's own input/output embeddings. A table covers only the exceptions.
NORM_NAMES = ("norm", "final_layer_norm", "final_layernorm", "ln_f", "norm_f", "final_norm")


@dataclass(frozen=True)
class ArchSpec:
    """Explicit attribute paths for a model type the structural rule cannot read."""
    blocks: tuple[str, ...]
    final_norm: tuple[str, ...]
    unembed: tuple[str, ...]
    embed: tuple[str, ...]
    family: str


# model_type -> explicit paths. Empty today: every tested stack is found by the rule. Add an
# entry when a model's decoder layers are not a ModuleList of num_hidden_layers blocks.
EXCEPTIONS: dict[str, ArchSpec] = {}


# short family names the book has always used for these model types
FAMILY_ALIASES = {"gemma3_text": "gemma3"}


# families checked end to end in tests (tiny models from config, saved with save_pretrained)
TESTED_FAMILIES = ("gpt2", "gpt_neox", "llama", "mistral", "qwen2", "qwen3", "phi3", "opt",
                   "gemma2", "gemma3", "granite")


def _get_path(root: nn.Module, dotted: str) -> Any:
    obj: Any = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _resolve(model: nn.Module, candidates: tuple[str, ...]) -> Any:
    for dotted in candidates:
        found = _get_path(model, dotted)
        if found is not None:
            return found
    return None


def _n_layers(config: Any) -> int | None:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for attr in ("num_hidden_layers", "n_layer", "num_layers"):
        n = getattr(text, attr, None)
        if isinstance(n, int):
            return n
    return None


def find_parts(model: nn.Module) -> tuple[nn.ModuleList, nn.Module | None, nn.Module, nn.Module]:
    """(blocks, final norm or None, unembedding, embedding) read from the model's structure.

    Raises UnsupportedArchitecture with what was found when the rule does not apply."""
    n = _n_layers(model.config)
    try:
        decoder = model.get_decoder()
    except (AttributeError, NotImplementedError):
        decoder = None
    decoder = decoder if isinstance(decoder, nn.Module) else model
    lists = [(path, m) for path, m in decoder.named_modules()
             if isinstance(m, nn.ModuleList) and len(m) == n and path]
    if n is None or not lists:
        raise UnsupportedArchitecture(
            f"no list of {n} decoder layers found in {type(model).__name__} "
            f"(config num_hidden_layers = {n})")
    path, blocks = max(lists, key=lambda pm: sum(p.numel() for p in pm[1].parameters()))
    owner = decoder.get_submodule(path.rpartition(".")[0])
    norm = next((getattr(owner, a) for a in NORM_NAMES
                 if isinstance(getattr(owner, a, None), nn.Module)), None)
    unembed, embed = model.get_output_embeddings(), model.get_input_embeddings()
    if unembed is None or embed is None:
        raise UnsupportedArchitecture(
            f"{type(model).__name__} has no output or input embedding (is it a causal LM?)")
    return blocks, norm, unembed, embed
