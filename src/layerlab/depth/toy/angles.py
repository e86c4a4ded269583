"""Consecutive-update angles of chapter 04's toy networks, with the same `layerlab.hidden`
statistics as the LLM chapters (02): of trained students and their teacher, and of untrained
students at PyTorch's default initialisation (the signature's control). Both are measured on the
inputs of `net.probe_seed`."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from layerlab.depth.toy.net import (
    ResidualMLP,
    draw_batch,
    generator,
    make_student,
    probe_seed,
    student_seed,
)
from layerlab.depth.toy.sweep import Sweep

PROBES = 512  # inputs the angles are averaged over


def middle_angles(net: ResidualMLP, x: torch.Tensor) -> dict[str, float]:
    """The mean θ(Δh_l, Δh_{l+1}) over the middle pairs and θ(h_l, h_{l+1}) over the middle
    layers of `net`'s trajectory from `x` (at least 4 blocks)."""
    from layerlab import hidden

    out = hidden.layer_angles([s.unsqueeze(0) for s in net.trajectory(x)])
    return {"middle_theta_dh": float(np.mean(out["theta_dh"][hidden.middle_pairs(net.depth)])),
            "middle_theta": float(np.mean(out["theta"][hidden.middle_layers(net.depth)]))}


def student_angles(sweep: Sweep, n: int = PROBES) -> list[dict[str, Any]]:
    """Consecutive-update angles of each trained student (and the teacher), with the same
    `layerlab.hidden` statistics as the LLM chapter."""
    x = draw_batch(n, generator(probe_seed(sweep.cfg.seed)))
    rows = []
    with torch.no_grad():
        nets = [(f"student ℓ={d}", s["net"]) for d, s in zip(sweep.cfg.student_depths, sweep.students)]
        nets.append((f"teacher ({sweep.cfg.teacher}, {sweep.cfg.teacher_depth})", sweep.teacher))
        for name, net in nets:
            if net.depth < 4:  # no pair of middle updates below 4 blocks
                continue
            rows.append({"network": name, "depth": net.depth, **middle_angles(net, x)})
    return rows


def untrained_angles(depths, seed: int) -> list[dict[str, Any]]:
    """The angles of students of `depths` (4 blocks or more) at PyTorch's default
    initialisation, seeded as a sweep of teacher seed `seed` seeds its students."""
    x = draw_batch(PROBES, generator(probe_seed(seed)))
    rows = []
    with torch.no_grad():
        for d in depths:
            if d < 4:
                continue
            net = make_student(d, seed=student_seed(seed, d), head=False, identity=False)["net"]
            rows.append({"network": f"untrained ℓ={d}", "depth": d, **middle_angles(net, x),
                         "teacher": "none (untrained)"})
    return rows
