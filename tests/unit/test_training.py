"""The shared training loop (`layerlab.training`): one step, the resumable run's state, cadence
and early stop. The family, growth and recovery tests run it end to end."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from layerlab import training


def _tiny(seed: int = 0) -> LlamaForCausalLM:
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def test_state_is_saved_flat_and_read_back():
    state = training.TrainState(3, [{"step": 3, "val_loss": 1.5}], 2.5, {"flops": 9.0})
    flat = state.as_dict()
    assert flat == {"step": 3, "curve": [{"step": 3, "val_loss": 1.5}], "seconds": 2.5,
                    "flops": 9.0}
    assert training.TrainState.from_dict(flat) == state


def test_step_sets_the_rate_clips_and_lowers_the_loss():
    torch.manual_seed(0)
    model, ids = _tiny(), torch.randint(0, 32, (4, 16))
    opt = training.adamw(model.parameters(), 1e-2, 0.0)
    first = training.step(model, opt, ids, lr=3e-3, clip=1e-3)
    assert all(g["lr"] == 3e-3 for g in opt.param_groups)
    for _ in range(5):
        last = training.step(model, opt, ids, clip=None)
    assert float(last) < float(first)


def test_step_trains_under_no_grad_and_upcasts():
    model, ids = _tiny(), torch.randint(0, 32, (2, 16))
    opt = training.adamw(model.parameters(), 1e-3, 0.0)
    before = model.lm_head.weight.detach().clone()
    with torch.no_grad():
        loss = training.step(model, opt, ids, upcast=True)
    assert loss.dtype == torch.float32
    assert not torch.equal(before, model.lm_head.weight)


def test_run_resumes_where_its_checkpoint_stopped(tmp_path):
    def train(stop_after=None):
        model = _tiny()
        opt = training.adamw(model.parameters(), 1e-2, 0.0)
        run = training.Run(tmp_path / "run.ckpt", 6, desc="t", progress=False,
                           stop_after=stop_after, counters={"seen": 0})
        run.resume(model, opt)
        ran = []
        for step in run.steps():
            ids = torch.randint(0, 32, (2, 16), generator=torch.Generator().manual_seed(step))
            training.step(model, opt, ids)
            run.state.counters["seen"] += 1
            ran.append(step)
            if run.due(step + 1, 4):
                run.lap()
                run.log({"step": step + 1})
                run.save(model, opt, step + 1)
        return model, run, ran

    _, run, ran = train(stop_after=5)
    assert ran == [0, 1, 2, 3, 4] and run.state.step == 4  # the checkpoint after step 4
    resumed, run, ran = train()
    assert ran == [4, 5]
    assert run.state.step == 6 and [r["step"] for r in run.state.curve] == [4, 6]
    assert run.state.counters["seen"] == 6
    (tmp_path / "run.ckpt").unlink()
    straight, _, _ = train()
    assert all(torch.equal(a, b) for a, b in zip(resumed.state_dict().values(),
                                                 straight.state_dict().values()))


def test_untimed_work_is_not_counted(tmp_path, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(training.time, "perf_counter", lambda: now[0])
    run = training.Run(tmp_path / "r.ckpt", 2, desc="t", progress=False)
    for _ in run.steps():
        now[0] += 1.0  # training
        with run.untimed():
            now[0] += 10.0  # evaluation
        run.lap()
    assert run.state.seconds == 2.0
