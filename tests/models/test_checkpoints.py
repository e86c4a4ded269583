"""The training checkpoints (depth family, toy grid, growth arms) hold tensors and plain types
only, and every loader reads them with `torch.load(..., weights_only=True)`: a checkpoint that
holds anything else (an arbitrary pickled object) is refused, never executed."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
import torch

from layerlab import models, results
from layerlab.anatomy import growth
from layerlab.depth import family, toy
from layerlab.settings import ToyConfig

SRC = Path(__file__).resolve().parents[2] / "src" / "layerlab"

FAMILY = family.FamilyConfig(depths=(1,), width=16, seq_len=16, batch_size=2, steps=6,
                             eval_every=3, eval_blocks=2, checkpoint_every=3, warmup=1)
GROWTH = growth.GrowthConfig(width=16, heads=2, ffn=32, seq_len=16, batch_size=2, uniform_steps=12,
                             warmup=2, eval_every=6, eval_blocks=2, checkpoint_every=3,
                             tokenizer="byte", regime="memorise", memorise_tokens=256)
TOY = dict(teacher_depth=4, batch_size=8, steps=4, eval_every=2, eval_batches=1, seed=0,
           student_depths=(1, 2))
TOY_CASES = {"kl-fixed": {}, "kl-learned": {"head": "learned", "schedule": "constant"},
             "mse-rk2": {"objective": "mse", "student_block": "rk2"}}


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "cache"))


# --- what the savers write -----------------------------------------------------------------------
PLAIN = (torch.Tensor, int, float, str, bool, type(None))


def _plain(obj, where="checkpoint") -> None:
    """Tensors, dicts, lists, tuples, numbers, strings, booleans and None, nothing else."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            assert isinstance(k, (int, str)), f"{where}: key {k!r}"
            _plain(v, f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _plain(v, f"{where}[{i}]")
    else:
        assert isinstance(obj, PLAIN), f"{where}: {type(obj).__name__}"


def _family_checkpoint() -> Path:
    family.train(1, FAMILY, progress=False, stop_after=3)
    return family.checkpoint(1, FAMILY)


def _growth_checkpoint(arm: str) -> tuple[growth.Program, Path]:
    prog = growth.programs(GROWTH, 0)[arm]
    # inside the second segment: after the stack for G_stack, after the clone for gtt
    growth.train_arm(prog, GROWTH, models.byte_tokenizer(), progress=False,
                     stop_after=prog.segments[0].steps + 1)
    return prog, growth.folder(GROWTH) / f"{results.slug(prog.arm)}.ckpt"


def _toy_grid(**over) -> toy.Grid:
    return toy.Grid({"a": ToyConfig(**TOY, **over, teacher="independent"),
                         "b": ToyConfig(**{**TOY, "seed": 1}, **over, teacher="tied")})


def test_the_family_checkpoint_is_plain():
    saved = torch.load(_family_checkpoint(), weights_only=True)
    _plain(saved)
    assert saved["state"]["step"] == 3


@pytest.mark.parametrize("arm", ["gtt", "G_stack"])
def test_a_growth_checkpoint_is_plain(arm):
    _, path = _growth_checkpoint(arm)
    saved = torch.load(path, weights_only=True)
    _plain(saved)
    assert not saved["state"]["finished"]


@pytest.mark.parametrize("over", TOY_CASES.values(), ids=TOY_CASES.keys())
def test_a_toy_grid_checkpoint_is_plain(over, tmp_path):
    grid = _toy_grid(**over)
    grid.train_step()
    grid.save(tmp_path / "g.pt")
    saved = torch.load(tmp_path / "g.pt", weights_only=True)
    _plain(saved)
    assert saved["step"] == 1 and all(s.dtype == torch.uint8 for s in saved["data"])


# --- what the loaders accept ---------------------------------------------------------------------
UNPICKLED: list[str] = []


def _unpickled() -> str:
    UNPICKLED.append("ran")
    return "ran"


class _Payload:
    """Pickles to a call of `_unpickled`: loading it with weights_only=False runs it."""

    def __reduce__(self):
        return (_unpickled, ())


def _tamper(path: Path) -> None:
    saved = torch.load(path, weights_only=True)
    saved["payload"] = _Payload()
    torch.save(saved, path)


@pytest.fixture
def _watch():
    UNPICKLED.clear()
    yield
    assert not UNPICKLED, "a loader unpickled an arbitrary object"


def test_family_loaders_refuse_a_pickled_object(_watch):
    _tamper(_family_checkpoint())
    with pytest.raises(pickle.UnpicklingError):
        family.train(1, FAMILY, progress=False)
    with pytest.raises(pickle.UnpicklingError):
        family.load_member(1, FAMILY)


def test_growth_loaders_refuse_a_pickled_object(_watch):
    prog, path = _growth_checkpoint("G_stack")
    _tamper(path)
    with pytest.raises(pickle.UnpicklingError):
        growth.train_arm(prog, GROWTH, models.byte_tokenizer(), progress=False)
    with pytest.raises(pickle.UnpicklingError):
        growth.final_weights(prog, GROWTH)


def test_the_toy_grid_loader_refuses_a_pickled_object(_watch, tmp_path):
    grid = _toy_grid()
    grid.save(tmp_path / "g.pt")
    _tamper(tmp_path / "g.pt")
    with pytest.raises(pickle.UnpicklingError):
        _toy_grid().load(tmp_path / "g.pt")


def test_every_torch_load_in_src_is_weights_only():
    calls = {}
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        assert "weights_only=False" not in text, path
        for m in re.finditer(r"torch\.load\(", text):
            depth, end = 1, m.end()
            while depth:  # to the closing parenthesis of this call
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            calls[f"{path.relative_to(SRC)}:{text.count(chr(10), 0, m.start()) + 1}"] = \
                text[m.start():end]
    assert calls, "no torch.load found: the search is broken"
    for where, call in calls.items():
        assert "weights_only=True" in call, f"{where}: {call}"
