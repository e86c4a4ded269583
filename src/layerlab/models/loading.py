"""`load`: a name (wheel model, tiny model, local folder or hub id) becomes a `LoadedModel`
on the profile's device and dtype; the folder checks and errors that name the fix (every
chapter that loads a model).
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path
from typing import Any

import torch

from layerlab.models.errors import ModelNotAvailable, UnknownModel, UnsupportedArchitecture
from layerlab.models.handle import LoadedModel, wrap
from layerlab.models.tiny import TINY, load_tiny
from layerlab.models.wheel import WHEEL_MODELS, convert_wheel_model


# --- local folders and hub ids --------------------------------------------------------------
def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


def _unavailable(name: str, location: str, err: BaseException) -> ModelNotAvailable:
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    hint = (
        " The hub is disabled here (HF_HUB_OFFLINE=1): use a local folder written by "
        "save_pretrained, or an offline name such as 'smollm2-135m-instruct-q4'."
        if offline
        else " Check the id, your network, and (for gated models) `huggingface-cli login`."
    )
    return ModelNotAvailable(f"could not load {name!r} from {location!r}: {err}.{hint}")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json",
                   "vocab.txt", "spiece.model", "sentencepiece.bpe.model", "merges.txt",
                   "tekken.json")


WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.h5", "*.msgpack")


def _weights_files(folder: Path) -> str:
    if not folder.is_dir():
        return ""
    return ", ".join(sorted(f.name for pattern in WEIGHT_PATTERNS for f in folder.glob(pattern)))


def _check_folder(name: str, folder: Path) -> None:
    """A save_pretrained folder must hold a tokenizer and weights beside its config: say which
    is missing (transformers' own message for a missing tokenizer blames sentencepiece)."""
    if (folder / "config.json").is_file() and not (
            any((folder / f).is_file() for f in TOKENIZER_FILES) or any(folder.glob("*.tiktoken"))):
        raise ModelNotAvailable(
            f"{name}: the folder has no tokenizer ({', '.join(TOKENIZER_FILES[:3])}, …): save it "
            "beside the weights with tokenizer.save_pretrained(folder)")
    if (folder / "config.json").is_file() and not _weights_files(folder):
        raise ModelNotAvailable(
            f"{name}: the folder has no weights (model.safetensors, pytorch_model.bin or their "
            "shards): write them with model.save_pretrained(folder)")


def _config_dict(location: str) -> dict[str, Any]:
    """The checkpoint's config.json as saved (before a model class adjusts its copy: BART's
    causal-LM class turns is_encoder_decoder off), or {} where it cannot be read without
    loading (loading then says what is wrong)."""
    import json

    folder = Path(location)
    try:
        if folder.is_dir():
            return json.loads((folder / "config.json").read_text(encoding="utf-8"))
        from transformers import PretrainedConfig

        return PretrainedConfig.get_config_dict(location)[0]
    except (OSError, ValueError):
        return {}


def _load_pretrained(
    name: str,
    location: str,
    *,
    device: str | None,
    device_map: str | dict | None,
    dtype: torch.dtype,
    max_memory: dict | None = None,
) -> LoadedModel:
    """Load with transformers. An encoder-decoder checkpoint is refused before its weights are
    read (AutoModelForCausalLM would keep its decoder under a fresh head); the weights that
    loading left newly initialised are listed in `info["newly_initialised"]`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"dtype": dtype}
    if device_map is not None:
        kwargs["device_map"] = device_map
        if max_memory is not None:  # what does not fit goes to the next device, then to disk
            kwargs["max_memory"] = max_memory
    if Path(location).is_dir():
        _check_folder(name, Path(location))
    config = _config_dict(location)
    if config.get("is_encoder_decoder"):
        raise UnsupportedArchitecture(
            f"{name!r} is an encoder-decoder model ({config.get('model_type', '?')}): as a "
            "causal LM only its decoder would load, under a freshly initialised head. layerlab "
            "measures decoder-only causal language models.")
    from safetensors import SafetensorError

    try:
        tokenizer = AutoTokenizer.from_pretrained(location)
        loaded = AutoModelForCausalLM.from_pretrained(location, output_loading_info=True, **kwargs)
    except (SafetensorError, EOFError, pickle.UnpicklingError) as err:
        raise ModelNotAvailable(
            f"could not load {name!r}: a weights file in {location!r} is truncated or corrupt "
            f"({_weights_files(Path(location)) or 'its weights files'}: {err}). Write it again "
            "with save_pretrained, or download it again.") from err
    except (OSError, ValueError) as err:
        raise _unavailable(name, location, err) from err
    # (model, loading info); a loader standing in for transformers may give the model alone
    model, loading = loaded if isinstance(loaded, tuple) else (loaded, {})
    if device_map is None and device is not None:
        model = model.to(device)
    lm = wrap(name, model, tokenizer, source=location)
    lm.info["newly_initialised"] = sorted(loading.get("missing_keys") or [])
    lm.info["unused_in_checkpoint"] = len(loading.get("unexpected_keys") or [])
    return lm


def _load_wheel_model(name: str, device: str | None) -> LoadedModel:
    folder = convert_wheel_model(name)
    lm = _load_pretrained(name, str(folder), device=device, device_map=None, dtype=torch.float32)
    entry = WHEEL_MODELS[name]
    lm.source = f"PyPI {entry.pip_spec}: {entry.filename} ({entry.licence}), dequantised to float32"
    return lm


def known_names() -> list[str]:
    return [*WHEEL_MODELS, *TINY]


def load(
    name: str,
    *,
    device: str | None = None,
    dtype: torch.dtype = torch.float32,
    device_map: str | dict | None = None,
    seed: int = 0,
    max_memory: dict | None = None,
) -> LoadedModel:
    """Load a model by zoo name, local folder or hub id (see the module docstring).

    `device_map="auto"` (accelerate) is the path for models larger than one GPU, with
    `max_memory` (e.g. {0: "70GiB", "cpu": "100GiB"}) capping each device; the rest is read
    from the checkpoint's files on disk. `device` moves a model that fits. Geometry wants
    float32, the default.
    """
    if not isinstance(name, str) or not name.strip():
        raise UnknownModel("model name must be a non-empty string")
    from transformers.utils import logging as hf_logging

    started = time.perf_counter()
    hf_logging.disable_progress_bar()  # per-tensor bars would flood notebook outputs
    try:
        lm = _load_by_kind(name, device=device, dtype=dtype, device_map=device_map, seed=seed,
                           max_memory=max_memory)
    finally:
        hf_logging.enable_progress_bar()
    lm.info["load_seconds"] = time.perf_counter() - started
    return lm


def _load_by_kind(name: str, *, device: str | None, dtype: torch.dtype,
                  device_map: str | dict | None, seed: int,
                  max_memory: dict | None = None) -> LoadedModel:
    if name in TINY:
        lm = load_tiny(name, seed=seed)
        if device:
            lm.model.to(device)
        return lm
    if name in WHEEL_MODELS:
        return _load_wheel_model(name, device)
    folder = Path(name).expanduser()
    if folder.is_dir():
        return _load_pretrained(name, str(folder), device=device, device_map=device_map,
                                dtype=dtype, max_memory=max_memory)
    if _looks_like_hub_id(name):
        return _load_pretrained(name, name, device=device, device_map=device_map, dtype=dtype,
                                max_memory=max_memory)
    raise UnknownModel(
        f"unknown model {name!r}: not a layerlab name ({', '.join(known_names())}), not an "
        "existing local folder, and not a hub id of the form 'org/name'."
    )


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(name: str | None) -> torch.dtype:
    """The torch dtype a setting names, with bfloat16 replaced by float16 on a GPU without
    native bfloat16 (compute capability < 8, e.g. Colab's T4). `torch.cuda.is_bf16_supported()`
    says True there, since it counts emulation; capability is the test that holds."""
    dtype = getattr(torch, name or "float32")
    if (dtype is torch.bfloat16 and torch.cuda.is_available()
            and torch.cuda.get_device_capability()[0] < 8):
        return torch.float16
    return dtype
