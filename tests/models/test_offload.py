"""Models larger than memory (issue 16): a tiny model saved in shards and forced onto disk by
`max_memory` gives the same hidden-state statistics, weights, edits and perplexities as the
same model in memory; offloaded weights are read and written through the offload store, never
silently left unchanged; `LoadedModel.device` is where inputs go, not `meta`."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from layerlab import hidden, models, offload
from layerlab.anatomy import edits, weights
from layerlab.anatomy.evalsets import EvalSet
from layerlab.anatomy.evaluator import Evaluator

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sharded")
    tiny = models.load_tiny("tiny-llama", layers=4, width=64)
    tiny.model.save_pretrained(folder, max_shard_size="100KB")
    tiny.tokenizer.save_pretrained(folder)
    assert len(list(folder.glob("*.safetensors"))) > 4
    in_memory = models.load(str(folder))
    split = models.load(str(folder), device_map="auto", max_memory={"cpu": "150KB"})
    return in_memory, split


def _ids(n: int = 3, t: int = 24) -> torch.Tensor:
    return torch.randint(3, 250, (n, t), generator=torch.Generator().manual_seed(0))


def _logits(lm) -> torch.Tensor:
    with torch.no_grad():
        return lm.model(input_ids=_ids().to(lm.device), use_cache=False).logits.float().cpu()


def test_the_split_model_is_really_offloaded_and_runs_where_its_hooks_say(pair):
    mem, split = pair
    names = [n for n, _ in split.blocks[1].named_parameters()]
    assert all(offload.is_offloaded(split.blocks[1], n) for n in names)
    assert not any(offload.is_offloaded(mem.blocks[1], n) for n in names)
    assert split.device == torch.device("cpu") and split.embed.weight.is_meta
    torch.testing.assert_close(_logits(split), _logits(mem))


def test_hidden_statistics_are_equal(pair):
    mem, split = pair
    batches = hidden.block_batches(_ids(), 2)
    for layer_by_layer in (False, True):
        a = hidden.collect(mem, batches, progress=False, layer_by_layer=layer_by_layer)
        b = hidden.collect(split, batches, progress=False, layer_by_layer=layer_by_layer)
        for conv in ("hf", "raw"):
            for key, value in a["conventions"][conv].items():
                if isinstance(value, (list, np.ndarray)):
                    np.testing.assert_allclose(np.asarray(b["conventions"][conv][key], dtype=float),
                                               np.asarray(value, dtype=float), rtol=1e-5, atol=1e-6)


def test_weights_read_through_the_offload_store(pair):
    mem, split = pair
    name = "mlp.gate_proj.weight"
    np.testing.assert_array_equal(weights.stack(split, name), weights.stack(mem, name))


@pytest.mark.parametrize("e", [edits.edit("scale", [1, 2], alpha=0.5), edits.edit("zero", 2),
                               edits.edit("neighbour_average", 1),
                               edits.edit("noise", 1, sigma=0.5, seed=3), edits.edit("skip", 2)],
                         ids=lambda e: e.kind)
def test_edits_write_through_and_restore_exactly(pair, e):
    mem, split = pair
    before = _logits(split)
    with edits.applied(mem, e):
        want = _logits(mem)
    with edits.applied(split, e):
        got = _logits(split)
    assert not torch.allclose(want, before)  # the edit does something...
    torch.testing.assert_close(got, want)  # ...and the same on the offloaded model
    torch.testing.assert_close(_logits(split), before, rtol=0, atol=0)  # restored exactly


def test_perplexity_under_an_edit_is_equal(pair):
    mem, split = pair
    ids = [list(map(int, row)) for row in _ids(4, 20)]
    sets = [EvalSet("t", ["x"] * 4, ids, "test") for _ in range(2)]
    ev_mem, ev_split = Evaluator(mem, sets[0]), Evaluator(split, sets[1])
    assert ev_split.base().ppl == pytest.approx(ev_mem.base().ppl, rel=1e-6)
    e = edits.edit("scale", 1, alpha=0.3)
    assert ev_split.evaluate(e).ppl == pytest.approx(ev_mem.evaluate(e).ppl, rel=1e-6)


def test_a_store_it_cannot_write_through_is_refused(pair):
    _, split = pair
    leaf = split.blocks[0].mlp.up_proj
    hook = leaf._hf_hook
    saved = hook.weights_map
    hook.weights_map = {"weight": saved["weight"]}  # readable, but no loader state_dict
    try:
        with pytest.raises(offload.OffloadError, match="cannot write through"):
            with edits.applied(split, edits.edit("scale", 0, alpha=0.5)):
                pass
    finally:
        hook.weights_map = saved
    torch.testing.assert_close(_logits(split), _logits(pair[0]))
