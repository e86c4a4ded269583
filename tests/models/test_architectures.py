"""Every tested block stack end to end from a `save_pretrained` folder: found by the structural
rule, logits rebuilt from the last block (Gemma 2's soft-cap included), weight roles cut out of
fused projections exactly as the forward pass uses them, and P1/P2 statistics that run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from layerlab import hidden, models
from layerlab.anatomy import edits
from layerlab.anatomy import weights as w


@pytest.fixture(scope="module")
def saved(tiny_folders):
    """Each tiny family (same seed, same weights) beside itself read back from its folder."""
    return {name: (models.load(name), models.load(str(folder)))
            for name, folder in tiny_folders.items()}


@pytest.mark.parametrize("name", models.TINY)
def test_a_saved_folder_is_read_by_the_structural_rule(saved, name):
    lm, again = saved[name]
    family = name.removeprefix("tiny-").replace("gptneox", "gpt_neox")
    assert again.arch == family and family in models.TESTED_FAMILIES
    assert again.n_layers == 4 and again.final_norm is not None
    ids = torch.tensor([[3, 50, 97, 101, 32, 120, 7]])
    hs, raw = models.forward_with_hidden(again, ids)
    with torch.no_grad():
        torch.testing.assert_close(again.model(ids).logits, lm.model(ids).logits)
        torch.testing.assert_close(again.logits_from_hidden(raw), again.model(ids).logits,
                                   rtol=1e-4, atol=1e-4)
    assert models.last_hidden_convention(again, ids)["last_is_final_normed"]


def test_gemma2_soft_cap_is_applied_to_rebuilt_logits(saved):
    lm = saved["tiny-gemma2"][1]
    assert lm.logit_softcap == 30.0
    ids = torch.tensor([[5, 6, 7, 8]])
    _, raw = models.forward_with_hidden(lm, ids)
    with torch.no_grad():
        uncapped = lm.unembed(lm.final_norm(raw))
        assert (lm.logits_from_hidden(raw).abs() <= 30.0).all()
        assert not torch.allclose(lm.logits_from_hidden(raw), uncapped * 100)


def _projection(block, name, x):
    """What the forward pass computes with the fused module: the projection's output for x."""
    module = block.get_submodule(name.rpartition(".")[0])
    with torch.no_grad():
        y = module(x)
    return y - (module.bias if getattr(module, "bias", None) is not None else 0)


@pytest.mark.parametrize("name,role", [
    ("tiny-gpt2", "q"), ("tiny-gpt2", "k"), ("tiny-gpt2", "v"),
    ("tiny-gptneox", "q"), ("tiny-gptneox", "k"), ("tiny-gptneox", "v"),
    ("tiny-phi3", "q"), ("tiny-phi3", "k"), ("tiny-phi3", "v"),
    ("tiny-phi3", "gate"), ("tiny-phi3", "up"),
])
def test_fused_parts_are_the_projections_the_forward_pass_uses(tiny_models, name, role):
    lm = tiny_models[name]
    block = lm.blocks[1]
    spec = w.tensor_types(lm)[role]
    base = spec.partition("[")[0]
    x = torch.randn(3, lm.d_model, generator=torch.Generator().manual_seed(0))
    fused = _projection(block, base, x)
    part = w.value(block, spec)  # [out, in]
    if name == "tiny-gptneox":  # per head: q, k, v of head_size each
        hs = block.attention.head_size
        expected = fused.view(3, -1, 3, hs)[:, :, "qkv".index(role)].reshape(3, -1)
    else:
        sizes = [p.shape[0] for p in (w.value(block, f"{base}[{r}]") for r in
                                      (("gate", "up") if role in ("gate", "up") else "qkv"))]
        index = ("gate", "up").index(role) if role in ("gate", "up") else "qkv".index(role)
        expected = fused.split(sizes, dim=-1)[index]
    torch.testing.assert_close(x @ part.T, expected, rtol=1e-5, atol=1e-5)


def test_gpt2_conv1d_weights_are_linear_for_edits_and_statistics(tiny_models):
    lm = tiny_models["tiny-gpt2"]
    assert "mlp.c_fc.weight" in edits.tensor_names(lm.blocks[0], "linear")
    s = w.stack(lm, w.tensor_types(lm)["up"])
    # element-wise statistics do not depend on the [in, out] storage: the transposed stack
    # holds the same values in another order, hence the same delta correlations
    t = np.stack([b.mlp.c_fc.weight.detach().T.reshape(-1).numpy() for b in lm.blocks])
    np.testing.assert_allclose(w.delta_correlation(s), w.delta_correlation(t), rtol=1e-5)


@pytest.mark.parametrize("name", models.TINY)
def test_p1_statistics_match_the_angles_of_the_hidden_states(tiny_models, name):
    lm = tiny_models[name]
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(0))
    out = hidden.collect(lm, hidden.block_batches(ids, 2), progress=False)
    theta = np.asarray(out["conventions"]["hf"]["all"]["theta"]["mean"])
    hs, _ = models.forward_with_hidden(lm, ids)
    h = torch.stack([x.float() for x in hs])  # [L+1, B, T, d]
    cos = torch.nn.functional.cosine_similarity(h[:-1], h[1:], dim=-1).clamp(-1, 1)
    expected = torch.arccos(cos).mean(dim=(1, 2)).numpy()  # radians
    assert theta.shape == (lm.n_layers,)
    # float64 angles in the statistics pass vs float32 here: arccos amplifies rounding near 1
    np.testing.assert_allclose(theta, expected, rtol=0.03)


def _padded_set(n=7):
    from layerlab.anatomy.evalsets import EvalSet

    g = torch.Generator().manual_seed(3)
    ids = [torch.randint(3, 250, (int(t),), generator=g).tolist()
           for t in torch.randint(3, 18, (n,), generator=g)]
    return EvalSet("invariant", [""] * n, ids, source="random")


@pytest.mark.parametrize("name", models.TINY)
def test_a_rerun_from_any_layer_gives_the_models_own_logits(tiny_models, name):
    """The evaluator re-runs an edit from the cached input of its first edited block: whatever
    the architecture does after the blocks (Granite's logits ÷ logits_scaling, Gemma 2's
    soft-cap, OPT's final norm) must apply, so every start layer gives the full forward's
    losses, and the last block's output through the model's head gives the model's logits."""
    from layerlab.anatomy.evaluator import Evaluator

    lm = tiny_models[name]
    es = _padded_set()
    full = Evaluator(lm, es, batch_tokens=40, resume=False).base().nll  # the model's own forward
    fast = Evaluator(lm, es, batch_tokens=40, resume=True)
    np.testing.assert_allclose(fast.base().nll, full, rtol=1e-6)
    for start in range(lm.n_layers):
        np.testing.assert_allclose(fast.current(start).nll, full, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name}: re-run from layer {start}")
    ids = torch.tensor([es.ids[0]])
    _, raw = models.forward_with_hidden(lm, ids)
    with torch.no_grad():
        torch.testing.assert_close(lm.logits_from_hidden(raw), lm.model(ids).logits,
                                   rtol=1e-5, atol=1e-5)
