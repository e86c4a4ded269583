"""One sweep of chapter 04's toy grid as nn.Modules: a teacher and its students of several
depths, trained together.

Each step draws one batch, runs the teacher once, and takes one optimiser step on the sum of the
students' losses. The students share no parameters, so this is exactly training them one by one
on the same batches, at a fraction of the cost. Networks, seeds, losses and schedule come from
`net`, as for `grid.Grid`; the two differ only in how the arithmetic is laid out (nn.Linear here,
batched matrix products there), so their numbers agree to float32 rounding, not bit for bit --
and the stored results of each keep the numbers it was made with.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from layerlab.depth.toy import net
from layerlab.settings import ToyConfig


class Sweep:
    """A teacher and its students, trained together."""

    def __init__(self, cfg: ToyConfig):
        if cfg.teacher not in ("independent", "tied") or cfg.objective not in ("kl", "mse"):
            raise ValueError(f"bad toy config {cfg}")
        self.cfg = cfg
        self.teacher, self.teacher_head = net.sweep_teacher(cfg)
        self.fixed_head = net.fixed_head(cfg.seed)
        self.students = nn.ModuleList([net.sweep_student(cfg, d) for d in cfg.student_depths])
        self.opt = torch.optim.Adam([net.param_group(s.parameters(), cfg, d)
                                     for s, d in zip(self.students, cfg.student_depths)])
        self.data = net.generator(net.data_seed(cfg.seed))
        self.step_count = 0

    def _teacher_target(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            h = self.teacher(x)
            if self.cfg.objective == "mse":
                return net.rms(h)
            logits = (self.teacher_head(net.rms(h)) if net.learns_head(self.cfg)
                      else net.rms(h) @ self.fixed_head)
            return F.log_softmax(logits / self.cfg.temperature, dim=-1)

    def _student_loss(self, student: nn.ModuleDict, x: torch.Tensor,
                      target: torch.Tensor) -> torch.Tensor:
        h = net.rms(student["net"](x))
        if self.cfg.objective == "mse":
            return net.mse(h, target)
        if net.learns_head(self.cfg):  # exp-9/9-1: student logits not divided by T
            logp = F.log_softmax(student["head"](h), dim=-1)
        else:  # exp-9-3: both sides use rms(h)·W/T
            logp = F.log_softmax(h @ self.fixed_head / self.cfg.temperature, dim=-1)
        return net.kl(logp, target)

    def batch(self, gen: torch.Generator | None = None) -> torch.Tensor:
        """One batch from `gen`, or from the sweep's training stream."""
        return net.draw_batch(self.cfg.batch_size, gen or self.data)

    def train_step(self) -> list[float]:
        """One batch, one teacher pass, one optimiser step for all students; their losses."""
        x = self.batch()
        target = self._teacher_target(x)
        losses = [self._student_loss(s, x, target) for s in self.students]
        net.set_rates(self.opt, self.cfg, self.step_count)
        self.opt.zero_grad(set_to_none=True)
        torch.stack(losses).sum().backward()
        self.opt.step()
        self.step_count += 1
        return [v.item() for v in losses]

    @torch.no_grad()
    def test_loss(self) -> list[float]:
        """Mean loss over fresh batches (a fixed evaluation stream, disjoint from training)."""
        gen = net.generator(net.eval_seed(self.cfg.seed))
        totals = np.zeros(len(self.students))
        for _ in range(self.cfg.eval_batches):
            x = self.batch(gen)
            target = self._teacher_target(x)
            totals += [float(self._student_loss(s, x, target)) for s in self.students]
        return (totals / self.cfg.eval_batches).tolist()

    def run(self, progress: bool = True) -> dict[str, Any]:
        """Train the configured steps, evaluating every `eval_every` and at the end; the run
        record (`net.run_record`)."""
        from layerlab.progress import tqdm

        curve = []
        for _ in tqdm(range(self.cfg.steps), desc=f"{self.cfg.teacher} T={self.cfg.temperature}",
                      disable=not progress, leave=False):
            self.train_step()
            if net.evaluates_at(self.cfg, self.step_count):
                curve.append({"step": self.step_count, "test_loss": self.test_loss()})
        return net.run_record(self.cfg, curve)
