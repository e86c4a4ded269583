"""Layer edits: each does what it says on tiny models, and every edit restores bit-identically."""

from __future__ import annotations

import pytest
import torch

from layerlab import models
from layerlab.anatomy import edits
from layerlab.anatomy.evalsets import EvalSet
from layerlab.anatomy.evaluator import Evaluator, make_batches

ARCHS = list(models.TINY)  # every tested block stack, GPT-2 (Conv1D) and Phi-3 (fused) included


@pytest.fixture(scope="module")
def llama():
    return models.load_tiny("tiny-llama", layers=5)


def _state(lm):
    return {k: v.detach().clone() for k, v in lm.model.state_dict().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _logits(lm, ids):
    with torch.no_grad():
        return lm.model(input_ids=ids, use_cache=False).logits


def _ids(n=2, t=12, seed=0):
    return torch.randint(3, 250, (n, t), generator=torch.Generator().manual_seed(seed))


def _param(lm, layer, name):
    return dict(lm.blocks[layer].named_parameters())[name].detach().clone()


ALL_EDITS = [
    ("neighbour_average", {}), ("mean_of_others", {}), ("skip", {}), ("zero", {}),
    ("clone", {}), ("mix", {}), ("low_rank_mix", {"rank": 2}), ("scale", {"alpha": 0.9}),
    ("noise", {"sigma": 0.5, "seed": 3}),
]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kind,opts", ALL_EDITS)
def test_every_edit_changes_the_output_and_restores_bit_identically(arch, kind, opts):
    lm = models.load_tiny(arch, layers=4)
    before, ids = _state(lm), _ids()
    ref = _logits(lm, ids)
    e = edits.edit(kind, [1, 2], **opts)
    with edits.applied(lm, e):
        assert edits.active(lm) == e
        changed = _logits(lm, ids)
    assert not torch.allclose(changed, ref), f"{kind} had no effect on {arch}"
    assert edits.active(lm) is None
    assert _same(before, _state(lm))
    assert torch.equal(_logits(lm, ids), ref)


def test_restore_after_an_exception_inside_the_block(llama):
    before = _state(llama)
    with pytest.raises(KeyError):
        with edits.applied(llama, edits.edit("zero", 2)):
            raise KeyError("boom")
    assert _same(before, _state(llama)) and edits.active(llama) is None


def test_neighbour_average_values_and_edges(llama):
    name = "mlp.gate_proj.weight"
    w = [_param(llama, l, name) for l in range(5)]
    norm = [_param(llama, l, "input_layernorm.weight") for l in range(5)]
    with edits.applied(llama, edits.edit("neighbour_average", [2, 3])):
        # both from the originals: layer 3 uses the original layer 2, not the averaged one
        assert torch.equal(_param(llama, 2, name), (w[1] + w[3]) / 2)
        assert torch.equal(_param(llama, 3, name), (w[2] + w[4]) / 2)
        assert torch.equal(_param(llama, 2, "input_layernorm.weight"), (norm[1] + norm[3]) / 2)
    with edits.applied(llama, edits.edit("neighbour_average", [0, 4])):
        assert torch.equal(_param(llama, 0, name), w[1])  # single-neighbour copy at the ends
        assert torch.equal(_param(llama, 4, name), w[3])
    with edits.applied(llama, edits.edit("neighbour_average", 2, group="linear")):
        assert torch.equal(_param(llama, 2, "input_layernorm.weight"), norm[2])  # norms kept
        assert torch.equal(_param(llama, 2, name), (w[1] + w[3]) / 2)


def test_groups_split_attention_mlp_and_norms(llama):
    block = llama.blocks[0]
    att, mlp, norms = (set(edits.tensor_names(block, g)) for g in ("attention", "mlp", "norms"))
    assert att == {f"self_attn.{p}_proj.weight" for p in "qkvo"}
    assert mlp == {f"mlp.{p}_proj.weight" for p in ("gate", "up", "down")}
    assert norms == {"input_layernorm.weight", "post_attention_layernorm.weight"}
    assert att | mlp | norms == set(edits.tensor_names(block, "all"))
    opt = models.load_tiny("tiny-opt", layers=3).blocks[0]  # OPT's MLP is fc1/fc2, outside any "mlp"
    assert {"fc1.weight", "fc2.weight"} <= set(edits.tensor_names(opt, "mlp"))


def test_mean_clone_mix_scale_and_low_rank_values(llama):
    name = "self_attn.q_proj.weight"
    w = [_param(llama, l, name) for l in range(5)]
    with edits.applied(llama, edits.edit("mean_of_others", 1)):
        torch.testing.assert_close(_param(llama, 1, name), (w[0] + w[2] + w[3] + w[4]) / 4)
    with edits.applied(llama, edits.edit("clone", 3)):
        assert torch.equal(_param(llama, 3, name), w[2])
        assert torch.equal(_param(llama, 3, "input_layernorm.weight"),
                           _param(llama, 2, "input_layernorm.weight"))
    with edits.applied(llama, edits.edit("mix", 3)):
        assert torch.equal(_param(llama, 3, name), (w[3] + w[2]) / 2)
    with edits.applied(llama, edits.edit("scale", 3, alpha=0.5)):
        assert torch.equal(_param(llama, 3, name), w[3] * 0.5)
        assert torch.equal(_param(llama, 3, "input_layernorm.weight"),
                           _state(llama)["model.layers.3.input_layernorm.weight"])
    with edits.applied(llama, edits.edit("low_rank_mix", 3, rank=3)):
        got = _param(llama, 3, name)
        assert torch.linalg.matrix_rank(got) == 3
        mixed = (w[3] + w[2]) / 2
        u, s, vh = torch.linalg.svd(mixed)
        torch.testing.assert_close(got, (u[:, :3] * s[:3]) @ vh[:3], rtol=1e-4, atol=1e-5)


def test_noise_is_relative_seeded_and_only_on_matrices(llama):
    name = "mlp.down_proj.weight"
    w = _param(llama, 2, name)
    e = edits.edit("noise", 2, sigma=0.5, seed=7)
    with edits.applied(llama, e):
        first = _param(llama, 2, name)
        assert torch.equal(_param(llama, 2, "input_layernorm.weight"),
                           _state(llama)["model.layers.2.input_layernorm.weight"])
    with edits.applied(llama, e):
        assert torch.equal(_param(llama, 2, name), first)
    ratio = float((first - w).std() / w.std())
    assert 0.45 < ratio < 0.55


@pytest.mark.parametrize("arch", ["tiny-llama", "tiny-qwen2", "tiny-gemma3"])
def test_zero_equals_skip_for_pre_norm_blocks(arch):
    lm = models.load_tiny(arch, layers=4)
    ids = _ids()
    with edits.applied(lm, edits.edit("zero", [1, 2])):
        zero = _logits(lm, ids)
    with edits.applied(lm, edits.edit("skip", [1, 2])):
        skip = _logits(lm, ids)
    torch.testing.assert_close(zero, skip, rtol=1e-5, atol=1e-5)


def test_skip_passes_the_residual_through(llama):
    seen = {}
    with edits.applied(llama, edits.edit("skip", 2)):
        hooks = [llama.blocks[l].register_forward_hook(  # after the skip hook: sees its output
            lambda m, a, o, l=l: seen.__setitem__(l, o[0] if isinstance(o, tuple) else o))
            for l in (1, 2)]
        _logits(llama, _ids())
        for h in hooks:
            h.remove()
    assert torch.equal(seen[1], seen[2])


def test_replace_writes_given_tensors_and_checks_shapes(llama):
    name = "mlp.up_proj.weight"
    value = torch.ones_like(_param(llama, 1, name))
    with edits.applied(llama, edits.edit("replace", 1, values={1: {name: value}})):
        assert torch.equal(_param(llama, 1, name), value)
    with pytest.raises(edits.EditError, match="does not match"):
        with edits.applied(llama, edits.edit("replace", 1, values={1: {name: value[:2]}})):
            pass
    with pytest.raises(edits.EditError, match="no parameter"):
        with edits.applied(llama, edits.edit("replace", 1, values={1: {"nope": value}})):
            pass


def test_bad_edits_are_refused_clearly(llama):
    with pytest.raises(edits.EditError, match="unknown edit kind"):
        edits.edit("shuffle", 1)
    with pytest.raises(edits.EditError, match="alpha"):
        edits.edit("scale", 1)
    with pytest.raises(edits.EditError, match="out of range"):
        with edits.applied(llama, edits.edit("skip", 9)):
            pass
    with pytest.raises(edits.EditError, match="layer 0"):
        with edits.applied(llama, edits.edit("clone", 0)):
            pass
    with edits.applied(llama, edits.edit("skip", 1)):
        with pytest.raises(edits.EditError, match="do not nest"):
            with edits.applied(llama, edits.edit("zero", 2)):
                pass


# -- the evaluator -------------------------------------------------------------------------------
def _evalset(lm, n=9):
    g = torch.Generator().manual_seed(1)
    ids = [torch.randint(3, 250, (int(t),), generator=g).tolist()
           for t in torch.randint(3, 20, (n,), generator=g)]
    return EvalSet("test", [""] * n, ids, source="random")


def test_batches_cover_every_sentence_once_and_respect_the_budget():
    ids = [[1] * n for n in (5, 3, 9, 2, 7, 7, 4)]
    batches = make_batches(ids, batch_tokens=16)
    seen = sorted(int(i) for b in batches for i in b.index)
    assert seen == list(range(len(ids)))
    for b in batches:
        assert b.ids.numel() <= 16 or b.ids.shape[0] == 1
        assert b.mask.sum() == sum(len(ids[int(i)]) for i in b.index)


@pytest.mark.parametrize("arch", ARCHS)
def test_evaluator_resumed_from_a_layer_equals_a_full_forward(arch):
    lm = models.load_tiny(arch, layers=4)
    es = _evalset(lm)
    fast = Evaluator(lm, es, batch_tokens=40, resume=True)
    slow = Evaluator(lm, es, batch_tokens=40, resume=False)
    torch.testing.assert_close(torch.tensor(fast.base().nll), torch.tensor(slow.base().nll))
    # each sentence alone, unpadded: padding must not leak into any sentence's loss
    for i, sent in enumerate(es.ids[:3]):
        logits = _logits(lm, torch.tensor([sent]))
        nll = torch.nn.functional.cross_entropy(logits[0, :-1], torch.tensor(sent[1:]),
                                                reduction="sum")
        assert abs(float(nll) - fast.base().nll[i]) < 1e-3
    for e in (edits.edit("neighbour_average", 2), edits.edit("skip", 3),
              edits.edit("scale", [1, 3], alpha=0.7)):
        a, b = fast.evaluate(e), slow.evaluate(e)
        torch.testing.assert_close(torch.tensor(a.nll), torch.tensor(b.nll), rtol=1e-5, atol=1e-4)
        assert a.ppl != fast.base().ppl


def test_scores_pool_tokens_and_average_sentences(llama):
    s = Evaluator(llama, _evalset(llama)).base()
    assert s.ppl == pytest.approx(float(torch.exp(torch.tensor(s.nll.sum() / s.tokens.sum()))))
    assert s.mean_sentence_ppl == pytest.approx(float(torch.tensor(s.nll / s.tokens).exp().mean()))
