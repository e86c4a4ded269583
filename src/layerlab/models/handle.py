"""The loaded-model handle (`LoadedModel`): uniform access to the block stack, running from
a block on, the untrained twin, and the hidden states of a forward pass (chapters 00–03 and
05–10, the report).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch import nn

from layerlab.models.blocks import (
    EXCEPTIONS,
    FAMILY_ALIASES,
    TESTED_FAMILIES,
    _resolve,
    find_parts,
)
from layerlab.models.errors import UnsupportedArchitecture


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
