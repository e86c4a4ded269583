"""Models split by accelerate's `device_map` (several GPUs, CPU or disk offload): where a module
runs, and how to read and edit a weight that is not resident.

An offloaded leaf module keeps `meta` parameters; an `AlignDevicesHook` copies the values from
its `weights_map` before each forward and drops them after. So `param.device` says `meta`,
`param.copy_(...)` changes nothing (silently), and `param.cpu()` raises. Writing into the
loader's `state_dict`, which the loader reads before the disk, reaches the forward pass
(`../shared/research/gpu-bigmodels.md` §3, tested equal to an in-memory edit). Weights resident
on another GPU are ordinary tensors.

Used by `models.LoadedModel.device`, `anatomy.edits` and `anatomy.weights`: chapters 02–03
(statistics) and 05–09 (edits, weights) on a model split by `device_map`.
"""

from __future__ import annotations

import torch
from torch import nn


class OffloadError(RuntimeError):
    """A weight is offloaded in a way layerlab cannot read or write through."""


def execution_device(module: nn.Module) -> torch.device:
    """Where `module` computes: its offload hook's execution device, else its first resident
    parameter's device, else the CPU."""
    dev = getattr(getattr(module, "_hf_hook", None), "execution_device", None)
    if dev is not None:
        return torch.device(f"cuda:{dev}" if isinstance(dev, int) else dev)
    for p in module.parameters():
        if not p.is_meta:
            return p.device
    return torch.device("cpu")


def _leaf(root: nn.Module, name: str) -> tuple[nn.Module, str]:
    path, _, local = name.rpartition(".")
    return (root.get_submodule(path) if path else root), local


def _weights_map(leaf: nn.Module):
    return getattr(getattr(leaf, "_hf_hook", None), "weights_map", None)


def is_offloaded(root: nn.Module, name: str) -> bool:
    """True when parameter `name` of `root` is not resident (a `meta` tensor behind a hook)."""
    leaf, local = _leaf(root, name)
    return getattr(leaf, local).is_meta


def read(root: nn.Module, name: str) -> torch.Tensor:
    """The value of parameter `name` of `root` (a dotted path below it), offloaded or not."""
    leaf, local = _leaf(root, name)
    p = getattr(leaf, local)
    if not p.is_meta:
        return p.detach()
    wm = _weights_map(leaf)
    if wm is None:
        raise OffloadError(f"{name} is on the meta device with no offload hook to read it from")
    return wm[local]


def write(root: nn.Module, name: str, value: torch.Tensor) -> torch.Tensor | None:
    """Set parameter `name` of `root` to `value`; returns what `restore` needs.

    Resident: copied in place (returns None). Offloaded: stored in the loader's `state_dict`,
    which takes priority over the disk (returns the entry it replaced, or a marker)."""
    leaf, local = _leaf(root, name)
    p = getattr(leaf, local)
    if not p.is_meta:
        with torch.no_grad():
            p.copy_(value.to(p.dtype))
        return None
    wm = _weights_map(leaf)
    loader = getattr(wm, "dataset", None)
    state = getattr(loader, "state_dict", None)
    if state is None or not hasattr(wm, "prefix"):
        raise OffloadError(f"{name} is offloaded through {type(wm).__name__}, which layerlab "
                           "cannot write through: load the model without offload to edit it")
    key = wm.prefix + local
    old = state.get(key, _ABSENT)
    dtype = old.dtype if isinstance(old, torch.Tensor) else value.dtype
    state[key] = value.detach().to("cpu", dtype)
    return old


_ABSENT = torch.empty(0)  # "the loader's state_dict had no entry": restore deletes the key


def restore(root: nn.Module, name: str, value: torch.Tensor, token: torch.Tensor | None) -> None:
    """Undo `write`: copy `value` back in place (resident), or put the loader's entry back."""
    leaf, local = _leaf(root, name)
    p = getattr(leaf, local)
    if not p.is_meta:
        with torch.no_grad():
            p.copy_(value)
        return
    wm = _weights_map(leaf)
    state, key = wm.dataset.state_dict, wm.prefix + local
    if token is _ABSENT:
        state.pop(key, None)
    else:
        state[key] = token
