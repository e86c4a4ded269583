"""Chapter 04's toy grid as one batched program: every student of every sweep in a group trains
in the same step.

`sweep.Sweep` already trains the student depths of one sweep together; the paper's grid has 108
sweeps (16 temperatures x 2 teachers x 3 seeds, plus MSE and RK2 runs), and at width 32 a step
costs kernel launches and autograd bookkeeping, not arithmetic. Here the sweeps of a *group*
(same objective, head, block type, teacher depth, batch, steps, schedule and learning rate;
temperature, teacher type, seed and student depths may differ) are stacked along a leading sweep
axis (`stack`): the teachers run as one batched matmul per layer, and the students of each depth
(one per sweep that has that depth) as one batched matmul per layer. Parameters, initialisation,
seeds, batches, targets, losses and schedule come from `net`, as for `sweep.Sweep` -- each sweep
draws its own batches from its own generator and sees only its own teacher -- so a grid ends
where the sweeps end one by one (`tests/unit/test_toygrid.py`, to float32 rounding).

A grid saves its whole state (parameters, Adam moments, data generators, curves) with
`save`/`load`, so a time-boxed run stops at any step and resumes there.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from layerlab.depth.toy import net
from layerlab.depth.toy.stack import forward, stack_blocks, stack_networks, unique_index, unstack
from layerlab.settings import ToyConfig

# the fields that must agree for sweeps to share one step
GROUP_FIELDS = ("objective", "head", "student_block", "teacher_depth", "batch_size", "steps",
                "schedule", "base_lr", "eval_every", "eval_batches")


def group_key(cfg: ToyConfig) -> tuple:
    """The fields of `GROUP_FIELDS`: sweeps with the same key can train as one grid."""
    return tuple(getattr(cfg, f) for f in GROUP_FIELDS)


def groups(configs: dict[str, ToyConfig], max_size: int | None = None) -> list[dict[str, ToyConfig]]:
    """Sweeps split into groups that can train as one batched program (first-seen order). With
    `max_size`, a group is cut into parts of at most that many sweeps, sweeps of one teacher
    and seed kept together (they share the teacher pass): a part finishes, and is stored, sooner
    -- what a time-boxed machine needs, since a part in flight cannot travel back."""
    out: dict[tuple, dict[str, ToyConfig]] = {}
    for name, cfg in configs.items():
        out.setdefault(group_key(cfg), {})[name] = cfg
    if not max_size:
        return list(out.values())
    parts = []
    for group in out.values():
        ordered = sorted(group.items(), key=lambda kv: (kv[1].teacher, kv[1].seed))
        for i in range(0, len(ordered), max_size):
            parts.append(dict(ordered[i:i + max_size]))
    return parts


class Grid:
    """The students of several sweeps of one group, trained as one batched program."""

    def __init__(self, configs: dict[str, ToyConfig], device: str | torch.device = "cpu"):
        if not configs:
            raise ValueError("a toy grid needs at least one sweep")
        keys = {group_key(c) for c in configs.values()}
        if len(keys) != 1:
            raise ValueError(f"sweeps of one grid must agree on {GROUP_FIELDS}; split them with "
                             f"toy.groups() first ({len(keys)} groups given)")
        self.names = list(configs)
        self.cfgs = [configs[n] for n in self.names]
        first = self.cfgs[0]
        self.cfg = first  # the group's shared fields
        self.device = torch.device(device)
        self.learned = net.learns_head(first)
        # Sweeps with the same seed draw the same batches (`net.data_seed`), and those with the
        # same teacher type too see the same teacher: the paper's 16 temperatures of one
        # teacher and seed share one teacher pass here.
        self.seeds, self.data_of = unique_index([c.seed for c in self.cfgs])
        teachers, self.teacher_of = unique_index([(c.teacher, c.seed) for c in self.cfgs])
        self.teacher_data = torch.tensor([self.seeds.index(s) for _, s in teachers])
        made = [net.sweep_teacher(first.replace(teacher=t, seed=s)) for t, s in teachers]
        self.teacher = stack_networks([stack_blocks(t.blocks) for t, _ in made], self.device)
        self.teacher_head = torch.stack([
            made[j][1].weight.T for j in self.teacher_of]).contiguous().to(self.device)
        self.fixed_head = torch.stack([net.fixed_head(c.seed)
                                       for c in self.cfgs]).to(self.device)
        self.temps = torch.tensor([c.temperature for c in self.cfgs],
                                  device=self.device).view(-1, 1, 1)
        # students: one stack per depth over the sweeps that have that depth
        self.depths = sorted({d for c in self.cfgs for d in c.student_depths})
        self.members = {d: [i for i, c in enumerate(self.cfgs) if d in c.student_depths]
                        for d in self.depths}
        self.students: dict[int, dict[str, Any]] = {}
        for d, idx in self.members.items():
            nets = [net.sweep_student(self.cfgs[i], d) for i in idx]
            leaves = stack_networks([stack_blocks(s["net"].blocks) for s in nets], self.device)
            for p in (t for mlp in leaves for t in mlp):
                p.requires_grad_(True)
            head = (torch.stack([s["head"].weight.T for s in nets]).detach().contiguous()
                    .to(self.device).requires_grad_(True) if self.learned else None)
            self.students[d] = {"layers": leaves, "head": head,
                                "data": torch.tensor([self.data_of[i] for i in idx],
                                                     device=self.device),
                                "sweeps": torch.tensor(idx, device=self.device)}
        self.opt = torch.optim.Adam([net.param_group(self._params(d), first, d)
                                     for d in self.depths])
        self.data = [net.generator(net.data_seed(s)) for s in self.seeds]
        self.step_count = 0
        self.curves: list[dict[str, Any]] = []
        self._graph: torch.cuda.CUDAGraph | None = None
        self._static_x: torch.Tensor | None = None

    def _params(self, depth: int) -> list[torch.Tensor]:
        s = self.students[depth]
        return [t for mlp in s["layers"] for t in mlp] + ([s["head"]] if self.learned else [])

    # --- one step ---------------------------------------------------------------------------
    def _batch(self, generators: list[torch.Generator]) -> torch.Tensor:
        """One batch per distinct seed, drawn on the CPU as `sweep.Sweep` draws it."""
        return torch.stack([net.draw_batch(self.cfg.batch_size, g)
                            for g in generators]).to(self.device)

    @torch.no_grad()
    def _targets(self, x: torch.Tensor) -> torch.Tensor:
        """Per sweep: the teacher's normalised final state (MSE) or its log-probabilities."""
        h = net.rms(forward(net.rms(x[self.teacher_data]), self.teacher, "euler"))
        h = h[torch.tensor(self.teacher_of, device=self.device)]
        if self.cfg.objective == "mse":
            return h
        logits = (torch.bmm(h, self.teacher_head) if self.learned
                  else torch.bmm(h, self.fixed_head))
        return F.log_softmax(logits / self.temps, dim=-1)

    def _losses(self, x: torch.Tensor, target: torch.Tensor) -> dict[int, torch.Tensor]:
        """Per depth, each member sweep's loss [members] (`net.mse`, `net.kl`)."""
        out = {}
        for d, s in self.students.items():
            h = net.rms(forward(net.rms(x[s["data"]]), s["layers"], self.cfg.student_block))
            t = target[s["sweeps"]]
            if self.cfg.objective == "mse":
                out[d] = net.mse(h, t)
                continue
            logits = (torch.bmm(h, s["head"]) if self.learned
                      else torch.bmm(h, self.fixed_head[s["sweeps"]]) / self.temps[s["sweeps"]])
            out[d] = net.kl(F.log_softmax(logits, dim=-1), t)
        return out

    def _step_on(self, x: torch.Tensor) -> None:
        losses = self._losses(x, self._targets(x))
        self.opt.zero_grad(set_to_none=True)
        torch.stack([v.sum() for v in losses.values()]).sum().backward()
        self.opt.step()

    def train_step(self) -> None:
        """One batch per seed, one teacher pass, one optimiser step for every student."""
        x = self._batch(self.data)
        net.set_rates(self.opt, self.cfg, self.step_count)
        if self._graph is not None:
            self._static_x.copy_(x)
            self._graph.replay()
        else:
            self._step_on(x)
        self.step_count += 1

    def use_cuda_graph(self, warmup: int = 3) -> bool:
        """On CUDA, capture one training step as a CUDA graph and replay it from then on: the
        grid's thousands of small kernels launch as one (the same computation, to float32
        rounding).
        The optimiser becomes `capturable` with tensor learning rates; the `warmup` steps before
        the capture are ordinary training steps. Returns False (and trains eagerly) elsewhere or
        if the capture fails."""
        if self.device.type != "cuda" or self._graph is not None:
            return self._graph is not None
        state = self.opt.state_dict()
        try:
            opt = torch.optim.Adam(
                [{"params": self._params(d), "initial_lr": self.cfg.lr(d),
                  "lr": torch.tensor(self.cfg.lr(d), device=self.device)} for d in self.depths],
                capturable=True)
            if state["state"]:
                opt.load_state_dict(state)
            self.opt = opt
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(warmup):
                    if self.done:
                        break
                    self.train_step()
            torch.cuda.current_stream().wait_stream(side)
            self._static_x = torch.zeros(len(self.seeds), self.cfg.batch_size, net.WIDTH,
                                         device=self.device)
            graph = torch.cuda.CUDAGraph()
            self.opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                self._step_on(self._static_x)
            self._graph = graph
            return True
        except Exception as err:  # noqa: BLE001 - any capture failure falls back to eager steps
            warnings.warn(f"CUDA graph capture failed ({err}); training eagerly", stacklevel=2)
            self._graph = None
            return False

    @torch.no_grad()
    def test_loss(self) -> dict[int, list[float]]:
        """Per depth, each member's mean loss over the fixed evaluation stream of its sweep."""
        gens = [net.generator(net.eval_seed(s)) for s in self.seeds]
        totals = {d: torch.zeros(len(idx), device=self.device) for d, idx in self.members.items()}
        for _ in range(self.cfg.eval_batches):
            x = self._batch(gens)
            for d, v in self._losses(x, self._targets(x)).items():
                totals[d] += v
        return {d: (v / self.cfg.eval_batches).tolist() for d, v in totals.items()}

    # --- a run --------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """Whether the grid has trained its configured steps."""
        return self.step_count >= self.cfg.steps

    def train(self, *, deadline: float | None = None, checkpoint: Path | None = None,
              checkpoint_every: int = 0, progress: bool = True) -> bool:
        """Train to the configured steps, evaluating every `eval_every`; stop early (state intact)
        once `time.monotonic()` passes `deadline`. Saves to `checkpoint` every `checkpoint_every`
        steps and when it stops. True when finished."""
        from layerlab.progress import tqdm

        bar = tqdm(total=self.cfg.steps, initial=self.step_count, disable=not progress,
                   desc=f"toy grid ({len(self.names)} sweeps)", leave=False)
        while not self.done:
            if deadline is not None and time.monotonic() > deadline:
                break
            self.train_step()
            bar.update(1)
            if net.evaluates_at(self.cfg, self.step_count):
                self.curves.append({"step": self.step_count, "test_loss": self.test_loss()})
            if checkpoint and checkpoint_every and self.step_count % checkpoint_every == 0:
                self.save(checkpoint)
        bar.close()
        if checkpoint:
            self.save(checkpoint)
        return self.done

    def results(self) -> dict[str, dict[str, Any]]:
        """Per sweep, what `sweep.Sweep.run` returns: config, depths, curve and final losses."""
        out = {}
        for i, (name, cfg) in enumerate(zip(self.names, self.cfgs)):
            curve = [{"step": c["step"],
                      "test_loss": [c["test_loss"][d][self.members[d].index(i)]
                                    for d in cfg.student_depths]} for c in self.curves]
            out[name] = net.run_record(cfg, curve)
        return out

    def student(self, name: str, depth: int) -> dict[str, torch.Tensor]:
        """One sweep's student of one depth as `stack.stack_blocks` gives it ([depth, k, ...],
        CPU)."""
        j = self.members[depth].index(self.names.index(name))
        return unstack(self.students[depth]["layers"], j,
                       2 if self.cfg.student_block == "rk2" else 1)

    # --- resumable state ----------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Tensors and plain types only (the generators' states are uint8 tensors), so `load`
        reads it with `weights_only=True`."""
        return {"names": self.names, "configs": [asdict(c) for c in self.cfgs],
                "step": self.step_count, "curves": self.curves,
                "students": {d: [p.detach().cpu() for p in self._params(d)] for d in self.depths},
                "opt": self.opt.state_dict(),
                "data": [g.get_state() for g in self.data]}

    def save(self, path: Path) -> None:
        """Atomically: a run killed while saving keeps the previous checkpoint."""
        from layerlab.results import save_torch

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_torch(self.state(), path)

    def load(self, path: Path) -> bool:
        """Resume from `path` if it holds this grid's sweeps and settings; False otherwise."""
        path = Path(path)
        if not path.exists():
            return False
        state = torch.load(path, map_location="cpu", weights_only=True)
        if state["names"] != self.names or state["configs"] != [asdict(c) for c in self.cfgs]:
            return False
        with torch.no_grad():
            for d, saved in state["students"].items():
                for p, v in zip(self._params(d), saved):
                    p.copy_(v.to(self.device))
        self.opt.load_state_dict(state["opt"])
        for g, s in zip(self.data, state["data"]):
            g.set_state(s)
        self.step_count, self.curves = state["step"], state["curves"]
        return True
