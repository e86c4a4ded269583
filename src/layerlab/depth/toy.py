"""P1's toy teacher–student residual networks (§5, App. C): does a student's loss fall as 1/ℓ
(ensemble averaging) or faster (procedural assembly)?

Block: pre-norm MLP residual update h ← h + W₂ relu(W₁ rms(h) + b₁)², width n = 32, hidden 4n,
RMSNorm without gain. Input x ~ N(0, I), h₀ = rms(x). A *teacher* of depth L_T has every W₂ scaled
by 1/√L_T; its blocks are independent, or *tied* (all blocks share block 1's tensors: one vector
field iterated, a smooth flow). Students of several depths start as the identity (W₂ = 0, head
= 0) and learn the teacher's output distribution (KL at temperature T through a head) or its
final state (MSE).

All student depths of a sweep train together: each step draws one batch, runs the teacher once,
and takes one optimiser step on the sum of the students' losses. The students share no
parameters, so this is exactly training them one by one on the same batches, at a fraction of
the cost.

Used by chapter 04.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from layerlab import claims
from layerlab.claims import Estimate, Unit
from layerlab.depth.declarations import DECLARATIONS
from layerlab.settings import ToyConfig, ToySettings

WIDTH = 32
VOCAB = 128

if TYPE_CHECKING:
    import pandas as pd


def rms(h: torch.Tensor) -> torch.Tensor:
    """RMSNorm without a learnable gain (PyTorch's default eps)."""
    return F.rms_norm(h, (h.shape[-1],))


class Block(nn.Module):
    """One Euler step: h ← h + f(h), f(h) = W₂ relu(W₁ rms(h) + b₁)²."""

    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.w1 = nn.Linear(width, 4 * width)
        self.w2 = nn.Linear(4 * width, width, bias=False)

    def update(self, h: torch.Tensor) -> torch.Tensor:
        return self.w2(F.relu(self.w1(rms(h))) ** 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.update(h)


class RK2Block(nn.Module):
    """P1's explicit-midpoint student block (App. C.3, exp-9-4): two MLPs, k₁ = f₁(h),
    h ← h + f₂(h + ½k₁). A smooth flow is integrated with error ∝ 1/ℓ⁴ by such steps, so if a
    student's exponent is bounded by its block type, RK2 students show it."""

    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.first, self.second = Block(width), Block(width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.second.update(h + 0.5 * self.first.update(h))


BLOCKS = {"euler": Block, "rk2": RK2Block}


class ResidualMLP(nn.Module):
    """A stack of blocks; `forward` returns the final state, `trajectory` all L+1 states."""

    def __init__(self, depth: int, width: int = WIDTH, *, tied: bool = False,
                 block: str = "euler"):
        super().__init__()
        kind = BLOCKS[block]
        first = kind(width)
        self.blocks = nn.ModuleList([first] * depth if tied else
                                    [first] + [kind(width) for _ in range(depth - 1)])
        self.tied = tied

    @property
    def depth(self) -> int:
        return len(self.blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = rms(x)
        for block in self.blocks:
            h = block(h)
        return h

    def trajectory(self, x: torch.Tensor) -> list[torch.Tensor]:
        states = [rms(x)]
        for block in self.blocks:
            states.append(block(states[-1]))
        return states


def make_teacher(depth: int, *, tied: bool, seed: int, width: int = WIDTH,
                 vocab: int = VOCAB) -> tuple[ResidualMLP, nn.Linear]:
    """A teacher (W₂ scaled by 1/√depth) and its default-initialised head, seeded."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = ResidualMLP(depth, width, tied=tied)
        with torch.no_grad():
            for block in {id(b): b for b in net.blocks}.values():  # a tied block once
                block.w2.weight.mul_(1 / math.sqrt(depth))
        head = nn.Linear(width, vocab, bias=False)
    for p in [*net.parameters(), *head.parameters()]:
        p.requires_grad_(False)
    return net, head


def make_student(depth: int, *, seed: int, width: int = WIDTH, vocab: int = VOCAB,
                 head: bool = True, block: str = "euler", identity: bool = True) -> nn.ModuleDict:
    """A student that starts as the identity map: every W₂ and the head are zero. With
    `identity=False` it keeps PyTorch's default initialisation (the untrained control)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = ResidualMLP(depth, width, block=block)
        parts = {"net": net}
        if head:
            parts["head"] = nn.Linear(width, vocab, bias=False)
    if not identity:
        return nn.ModuleDict(parts)
    with torch.no_grad():
        for mlp in (m for m in net.modules() if isinstance(m, Block)):
            mlp.w2.weight.zero_()
        if head:
            parts["head"].weight.zero_()
    return nn.ModuleDict(parts)


class Sweep:
    """A teacher and its students, trained together."""

    def __init__(self, cfg: ToyConfig):
        if cfg.teacher not in ("independent", "tied") or cfg.objective not in ("kl", "mse"):
            raise ValueError(f"bad toy config {cfg}")
        self.cfg = cfg
        self.teacher, self.teacher_head = make_teacher(cfg.teacher_depth,
                                                       tied=cfg.teacher == "tied", seed=cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed + 7)
        # exp-9-3's fixed head: one N(0,1)/√n matrix shared by teacher and students
        self.fixed_head = torch.randn(WIDTH, VOCAB, generator=gen) / math.sqrt(WIDTH)
        learned_head = cfg.objective == "kl" and cfg.head == "learned"
        self.students = nn.ModuleList([
            make_student(d, seed=cfg.seed * 1000 + d, head=learned_head, block=cfg.student_block)
            for d in cfg.student_depths])
        self.opt = torch.optim.Adam([{"params": s.parameters(), "lr": cfg.lr(d), "initial_lr": cfg.lr(d)}
                                     for s, d in zip(self.students, cfg.student_depths)])
        self.data = torch.Generator().manual_seed(cfg.seed + 1)
        self.step_count = 0

    def _teacher_target(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            h = self.teacher(x)
            if self.cfg.objective == "mse":
                return rms(h)
            logits = (self.teacher_head(rms(h)) if self.cfg.head == "learned"
                      else rms(h) @ self.fixed_head)
            return F.log_softmax(logits / self.cfg.temperature, dim=-1)

    def _student_loss(self, student: nn.ModuleDict, x: torch.Tensor,
                      target: torch.Tensor) -> torch.Tensor:
        h = rms(student["net"](x))
        if self.cfg.objective == "mse":
            return F.mse_loss(h, target)
        if self.cfg.head == "learned":  # exp-9/9-1: student logits not divided by T
            logp = F.log_softmax(student["head"](h), dim=-1)
        else:  # exp-9-3: both sides use rms(h)·W/T
            logp = F.log_softmax(h @ self.fixed_head / self.cfg.temperature, dim=-1)
        return F.kl_div(logp, target, log_target=True, reduction="batchmean")

    def batch(self, generator: torch.Generator | None = None) -> torch.Tensor:
        return torch.randn(self.cfg.batch_size, WIDTH, generator=generator or self.data)

    def train_step(self) -> list[float]:
        """One batch, one teacher pass, one optimiser step for all students; their losses."""
        x = self.batch()
        target = self._teacher_target(x)
        losses = [self._student_loss(s, x, target) for s in self.students]
        for group in self.opt.param_groups:
            group["lr"] = group["initial_lr"] * self.cfg.factor(self.step_count)
        self.opt.zero_grad(set_to_none=True)
        torch.stack(losses).sum().backward()
        self.opt.step()
        self.step_count += 1
        return [v.item() for v in losses]

    @torch.no_grad()
    def test_loss(self) -> list[float]:
        """Mean loss over fresh batches (a fixed evaluation stream, disjoint from training)."""
        gen = torch.Generator().manual_seed(self.cfg.seed + 12345)
        totals = np.zeros(len(self.students))
        for _ in range(self.cfg.eval_batches):
            x = self.batch(gen)
            target = self._teacher_target(x)
            totals += [float(self._student_loss(s, x, target)) for s in self.students]
        return (totals / self.cfg.eval_batches).tolist()

    def run(self, progress: bool = True) -> dict[str, Any]:
        from layerlab.progress import tqdm

        curve = []
        for _ in tqdm(range(self.cfg.steps), desc=f"{self.cfg.teacher} T={self.cfg.temperature}",
                      disable=not progress, leave=False):
            self.train_step()
            if self.step_count % self.cfg.eval_every == 0 or self.step_count == self.cfg.steps:
                curve.append({"step": self.step_count, "test_loss": self.test_loss()})
        return {"config": asdict(self.cfg), "depths": list(self.cfg.student_depths),
                "curve": curve, "final": curve[-1]["test_loss"]}


def fit_alpha(depths, losses) -> tuple[float, float]:
    """α_ℓ from least squares of log loss on log depth (no floor: the teacher is realisable),
    with its standard error; P1's procedure as reconstructed in research/paper1.md §5.3."""
    x = np.log(np.asarray(depths, dtype=float))
    y = np.log(np.asarray(losses, dtype=float))
    A = np.column_stack([np.ones_like(x), x])
    coef, res, *_ = np.linalg.lstsq(A, y, rcond=None)
    n = len(x)
    if n > 2:
        s2 = float(((y - A @ coef) ** 2).sum()) / (n - 2)
        se = math.sqrt(s2 * np.linalg.inv(A.T @ A)[1, 1])
    else:
        se = float("nan")
    return float(-coef[1]), se


def student_angles(sweep: Sweep, n: int = 512) -> list[dict[str, Any]]:
    """Consecutive-update angles of each trained student (and the teacher), with the same
    `layerlab.hidden` statistics as the LLM chapter."""
    from layerlab import hidden

    gen = torch.Generator().manual_seed(sweep.cfg.seed + 999)
    x = torch.randn(n, WIDTH, generator=gen)
    rows = []
    with torch.no_grad():
        nets = [(f"student ℓ={d}", s["net"]) for d, s in zip(sweep.cfg.student_depths, sweep.students)]
        nets.append((f"teacher ({sweep.cfg.teacher}, {sweep.cfg.teacher_depth})", sweep.teacher))
        for name, net in nets:
            if net.depth < 4:  # no pair of middle updates below 4 blocks
                continue
            states = [s.unsqueeze(0) for s in net.trajectory(x)]
            out = hidden.layer_angles(states)
            rows.append({"network": name, "depth": net.depth,
                         "middle_theta_dh": float(np.mean(out["theta_dh"][
                             hidden.middle_pairs(net.depth)])),
                         "middle_theta": float(np.mean(out["theta"][
                             hidden.middle_layers(net.depth)]))})
    return rows


def euler_error(depths, *, seed: int = 0) -> list[float]:
    """Squared error of ℓ Euler steps for a smooth linear flow h' = A h over unit time: ∝ 1/ℓ²."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((8, 8)) / math.sqrt(8)
    h0 = rng.standard_normal(8)
    evals, evecs = np.linalg.eig(A)
    exact = np.real(evecs @ np.diag(np.exp(evals)) @ np.linalg.solve(evecs, h0))
    out = []
    for ell in depths:
        h = h0.copy()
        for _ in range(ell):
            h = h + A @ h / ell
        out.append(float(((h - exact) ** 2).sum()))
    return out


def averaging_error(depths, *, trials: int = 4000, seed: int = 0) -> list[float]:
    """Mean squared error of the average of ℓ independent noisy estimates: ∝ 1/ℓ."""
    rng = np.random.default_rng(seed)
    return [float((rng.standard_normal((trials, ell)).mean(1) ** 2).mean()) for ell in depths]


# --- sweeps of a profile ------------------------------------------------------------------------
def sweep_configs(profile) -> dict[str, ToyConfig]:
    """The named sweeps of a profile."""
    return ToySettings.from_profile(profile).sweep_configs()


STUDENTS = "toy_students"


def student_key(cfg: ToyConfig) -> dict[str, Any]:
    """What one student's result depends on: its sweep's settings without the list of depths.
    Students share nothing but the teacher and the batches, so a student trained alongside
    others ends exactly where it would alone (`tests/test_toy.py`), and a sweep extended by one
    depth reuses every student already stored."""
    key = asdict(cfg)
    key.pop("student_depths")
    return {"toy": 2, **key}


def _stored(name: str, cfg: ToyConfig, cache) -> dict[int, Any]:
    from layerlab.results import MISSING

    key = student_key(cfg)
    return {d: v for d in cfg.student_depths
            if (v := cache.lookup(STUDENTS, key, f"{name}-d{d}")) is not MISSING}


def _assemble(cfg: ToyConfig, stored: dict[int, Any]) -> dict[str, Any]:
    depths = list(cfg.student_depths)
    steps = [p["step"] for p in stored[depths[0]]["curve"]]
    curve = [{"step": step, "test_loss": [stored[d]["curve"][i]["test_loss"] for d in depths]}
             for i, step in enumerate(steps)]
    return {"config": asdict(cfg), "depths": depths, "curve": curve,
            "final": curve[-1]["test_loss"]}


def _store(name: str, cfg: ToyConfig, run: dict[str, Any], cache) -> None:
    """Each student of a finished run (only its missing depths) as its own record."""
    for i, d in enumerate(run["depths"]):
        curve = [{"step": p["step"], "test_loss": p["test_loss"][i]} for p in run["curve"]]
        cache.put(STUDENTS, student_key(cfg), {"depth": d, "curve": curve}, item=f"{name}-d{d}")


def stored_sweeps(configs: dict[str, ToyConfig], cache) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(every sweep whose students are all stored, assembled; the names of the others), reading
    the cache only: another profile's committed grid, which may be partly finished."""
    runs, missing = {}, []
    for name, cfg in configs.items():
        stored = _stored(name, cfg, cache)
        if len(stored) == len(cfg.student_depths):
            runs[name] = _assemble(cfg, stored)
        else:
            missing.append(name)
    return runs, missing


def run_sweep(name: str, cfg: ToyConfig, cache, *, progress: bool = True) -> dict[str, Any]:
    """One sweep, student by student from the cache; the missing students train together."""
    stored = _stored(name, cfg, cache)
    missing = tuple(d for d in cfg.student_depths if d not in stored)
    if missing:
        cache.may_compute(f"{STUDENTS}/{name} depths {missing}")
        _store(name, cfg, Sweep(cfg.replace(student_depths=missing)).run(progress=progress), cache)
        stored = _stored(name, cfg, cache)
    return _assemble(cfg, stored)


def grid_checkpoint(profile_name: str, names: list[str]) -> Path:
    """Where a batched group of sweeps keeps its resumable state (outside the results)."""
    from layerlab import paths, results

    return paths.cache_dir() / "toygrid" / profile_name / f"{results.config_hash({'sweeps': names})}.pt"


def run_grid(profile_name: str, configs: dict[str, ToyConfig], cache, *, device=None,
             deadline: float | None = None, progress: bool = True,
             max_group: int | None = None) -> bool:
    """Train every missing student of `configs` as batched groups (`layerlab.depth.toygrid`),
    resuming each group from its checkpoint and storing its students when it finishes (groups
    of at most `max_group` sweeps); on CUDA each group's step is a captured CUDA graph. Stops
    cleanly once `time.monotonic()` passes `deadline`; True when nothing is left to train."""
    import torch

    from layerlab.depth import toygrid

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    todo = {}
    for name, cfg in configs.items():
        missing = tuple(d for d in cfg.student_depths if d not in _stored(name, cfg, cache))
        if missing:
            cache.may_compute(f"{STUDENTS}/{name} depths {missing}")
            todo[name] = cfg.replace(student_depths=missing)
    for group in toygrid.groups(todo, max_group):
        grid = toygrid.Grid(group, device=device)
        ckpt = grid_checkpoint(cache.profile, list(group))
        grid.load(ckpt)
        grid.use_cuda_graph()  # a no-op on a CPU
        every = max(1, grid.cfg.eval_every)
        if not grid.train(deadline=deadline, checkpoint=ckpt, checkpoint_every=every,
                          progress=progress):
            return False
        for name, run in grid.results().items():
            _store(name, configs[name], run, cache)
        ckpt.unlink(missing_ok=True)
    return True


def run_sweeps(profile, cache=None, *, only: list[str] | None = None, progress: bool = True,
               batched: bool = True) -> dict[str, dict[str, Any]]:
    """Every sweep of the profile. Missing students train as batched groups of sweeps
    (`batched`, the default) or sweep by sweep; each is stored when its group finishes and a
    rerun resumes (a group from its checkpoint; a sweep given a deeper student trains only it)."""
    from layerlab import results
    from layerlab.progress import tqdm

    cache = cache or results.Cache(profile.name)
    configs = {k: v for k, v in sweep_configs(profile).items() if only is None or k in only}
    if batched:
        run_grid(profile.name, configs, cache, progress=progress)
    return {name: run_sweep(name, cfg, cache, progress=progress)
            for name, cfg in tqdm(configs.items(), desc="toy sweeps", disable=not progress)}


def local_slopes(depths, losses) -> list[dict[str, float]]:
    """−Δlog loss / Δlog ℓ for each consecutive pair of student depths: where a single power
    law over all depths bends, these show it (the exponent at the deep end is P1's regime)."""
    d = np.asarray(depths, dtype=float)
    y = np.log(np.asarray(losses, dtype=float))
    return [{"from": int(d[i]), "to": int(d[i + 1]),
             "slope": float(-(y[i + 1] - y[i]) / (np.log(d[i + 1]) - np.log(d[i])))}
            for i in range(len(d) - 1)]


def alpha_table(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """α_ℓ of every sweep at every evaluation step (the last row per sweep is the final one):
    over the sweep's own depths (`alpha`, its least-squares SE `alpha_se` over `n_depths`
    depths), over the depths every sweep of its block type shares (`alpha_common`,
    `alpha_common_se` over `n_common` depths, for comparing sweeps), and the deepest pair's local
    slope (`deep_slope`)."""
    import pandas as pd

    blocks = {r["config"].get("student_block", "euler") for r in runs.values()}
    shared = {b: sorted(set.intersection(*(set(r["depths"]) for r in runs.values()
                                            if r["config"].get("student_block", "euler") == b)))
              for b in blocks}
    rows = []
    for name, run in runs.items():
        cfg = run["config"]
        common = shared[cfg.get("student_block", "euler")]  # shared by sweeps of its block type
        keep = [run["depths"].index(d) for d in common]
        for point in run["curve"]:
            alpha, se = fit_alpha(run["depths"], point["test_loss"])
            alpha_c, se_c = (fit_alpha(common, [point["test_loss"][i] for i in keep])
                             if len(common) > 1 else (np.nan, np.nan))
            deep = local_slopes(run["depths"], point["test_loss"])[-1]["slope"]
            rows.append({"sweep": name, "teacher": cfg["teacher"], "objective": cfg["objective"],
                         "temperature": cfg["temperature"], "seed": cfg["seed"],
                         "block": cfg.get("student_block", "euler"),
                         "depths": f"{min(run['depths'])}–{max(run['depths'])}",
                         "step": point["step"], "alpha": alpha, "alpha_se": se,
                         "alpha_common": alpha_c, "alpha_common_se": se_c,
                         "n_depths": len(run["depths"]), "n_common": len(common),
                         "deep_slope": deep})
    return pd.DataFrame(rows)


def slope_table(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """Final local slopes of every sweep, one row per consecutive depth pair."""
    import pandas as pd

    return pd.DataFrame([{"sweep": name, "teacher": run["config"]["teacher"],
                          "objective": run["config"]["objective"],
                          "temperature": run["config"]["temperature"],
                          "block": run["config"].get("student_block", "euler"),
                          "pair": f"{s['from']}→{s['to']}", "to": s["to"], "slope": s["slope"]}
                         for name, run in runs.items()
                         for s in local_slopes(run["depths"], run["final"])])


def loss_table(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """Final test loss per sweep and student depth."""
    import pandas as pd

    return pd.DataFrame([{"sweep": name, "teacher": run["config"]["teacher"],
                          "objective": run["config"]["objective"],
                          "temperature": run["config"]["temperature"], "depth": d, "test_loss": v}
                         for name, run in runs.items() for d, v in zip(run["depths"], run["final"])])


def signatures(profile, cache=None, *, progress: bool = True) -> "pd.DataFrame":
    """Consecutive-update angles of trained students of both teacher types (MSE objective,
    `ToySettings.signature_steps` steps), cached per teacher type."""
    import pandas as pd

    from layerlab import results

    cache = cache or results.Cache(profile.name)
    spec = ToySettings.from_profile(profile)
    configs = {t: spec.signature_config(t) for t in ("independent", "tied")}

    def compute(teacher: str, _cfg) -> list[dict[str, Any]]:
        sweep = Sweep(configs[teacher])
        sweep.run(progress=progress)
        return [{**row, "teacher": teacher} for row in student_angles(sweep)]

    out = cache.for_each("toy_signatures", {"toy": 1}, {t: asdict(c) for t, c in configs.items()},
                         compute, progress=progress)
    return pd.DataFrame([row for rows in out.values() for row in rows])


# --- verdicts: one function per claim, decided by `claims.decide` ------------------------------
CHAPTER = "04_toy_depth_mechanisms"
MOVING = 0.01  # the least change of a statistic between the last two evaluations that counts as moving


def _distance(value: float, band: tuple[float, float]) -> float:
    lo, hi = band
    return max(lo - value, 0.0, value - hi)


def converging(history: list[float], band: tuple[float, float]) -> bool:
    """Whether a statistic outside `band` is still moving toward it: its distance to the band
    shrank by at least `MOVING` between the last two evaluations. Such a unit has not converged
    as far as the verdict goes (more training could bring it in); one moving away, or standing
    still, is taken as it stands."""
    if len(history) < 2 or _distance(history[-1], band) == 0:
        return False
    return _distance(history[-2], band) - _distance(history[-1], band) >= MOVING


def t_interval(point: float, se: float, df: float) -> Estimate | None:
    """`point` ± the 97.5 % t quantile × `se` (None without a finite SE or a degree of freedom)."""
    from scipy import stats

    if not (np.isfinite(point) and np.isfinite(se) and df >= 1):
        return None
    half = float(stats.t.ppf(0.975, df)) * float(se)
    return Estimate(float(point), float(point) - half, float(point) + half)


def mean_interval(values) -> Estimate | None:
    """The mean with its t interval over independent values (None below two)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return None
    return t_interval(float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))), len(v) - 1)


def _alpha(r, *, common: bool = False) -> Estimate | None:
    """A sweep's final α_ℓ (over its own depths, or the shared ones) with its t interval."""
    if common:
        return t_interval(r.alpha_common, r.alpha_common_se, r.n_common - 2)
    return t_interval(r.alpha, r.alpha_se, r.n_depths - 2)


def _difference(a, b) -> Estimate | None:
    """α_ℓ(a) − α_ℓ(b) over the shared depths; the t interval of the difference of two
    independent fits with the fewer degrees of freedom of the two."""
    return t_interval(a.alpha_common - b.alpha_common,
                      math.hypot(a.alpha_common_se, b.alpha_common_se),
                      min(a.n_common, b.n_common) - 2)


def _final(alphas: "pd.DataFrame") -> "pd.DataFrame":
    return alphas.sort_values("step").groupby("sweep").tail(1).set_index("sweep")


def _history(alphas: "pd.DataFrame", sweep: str, column: str = "alpha") -> "pd.Series":
    return alphas[alphas["sweep"] == sweep].sort_values("step").set_index("step")[column]


def _select(final: "pd.DataFrame", **kw) -> "pd.DataFrame":
    sel = final[final["block"] == "euler"]
    for k, v in kw.items():
        sel = sel[np.isclose(sel[k], v)] if isinstance(v, float) else sel[sel[k] == v]
    return sel


def _unconverged(history, band: claims.Band, what: str) -> str | None:
    """The failed precondition of a unit whose statistic still moves toward the band."""
    h = [float(x) for x in history]
    if converging(h, (band.lo, band.hi)):
        return (f"not converged: {what} {h[-2]:.2f} → {h[-1]:.2f} between the last two "
                f"evaluations, still moving toward the band {band.text('.3g')}")
    return None


def _no_interval(est: Estimate | None, what: str) -> str | None:
    return None if est is not None else f"{what}: fewer than 3 student depths, no interval"


def _sweep_unit(alphas: "pd.DataFrame", name: str, r, decl: claims.Declaration,
                secondary: dict[str, Estimate] | None = None) -> Unit:
    """One sweep as a unit: its final α_ℓ over its own depths, converged or not."""
    est = _alpha(r)
    pre = (_unconverged(_history(alphas, name), decl.band, "α_ℓ")
           or _no_interval(est, "α_ℓ"))
    return Unit(name=name, primary=est, precondition=pre, secondary=secondary or {})


def _placeholder(what: str) -> Unit:
    return Unit(name="no sweep", primary=None, precondition=f"no {what} in this grid")


def _est(e: Estimate | None) -> str:
    return "undefined" if e is None else f"{e.point:.2f} [{e.lo:.2f}, {e.hi:.2f}]"


def _fmt(units: list[Unit], final: "pd.DataFrame") -> str:
    """Each sweep's α_ℓ with its interval, deepest local slope and failed precondition."""
    out = []
    for u in units:
        if u.name not in final.index:
            out.append(f"{u.name}: {u.precondition}")
            continue
        text = f"{u.name}: α {_est(u.primary)} (deepest pair {final.loc[u.name, 'deep_slope']:.2f})"
        out.append(text + (f" — {u.precondition}" if u.precondition else ""))
    return "; ".join(out) or "none"


def _numbers(units: list[Unit]) -> dict[str, Any]:
    return {u.name: {"primary": None if u.primary is None else [u.primary.point, u.primary.lo,
                                                                 u.primary.hi],
                     "precondition": u.precondition,
                     **{k: [e.point, e.lo, e.hi] for k, e in u.secondary.items()}}
            for u in units}


def _decided(claim_id: str, units: list[Unit], *, ours: str, setting: str,
             numbers: dict | None = None) -> claims.Claim:
    decl = DECLARATIONS[claim_id]
    return claims.make(decl, claims.decide(decl, units), ours=ours, setting=setting,
                       numbers=numbers)


def assess_independent(alphas: "pd.DataFrame", setting: str):
    """P1-D1: every independent-teacher sweep (KL at every T, and MSE), one unit each: its final
    α_ℓ's t interval against the ensemble band; a sweep outside the band still moving toward it
    has not converged (not testable)."""
    decl = DECLARATIONS["P1-D1-independent-teacher"]
    final = _final(alphas)
    ind = _select(final, teacher="independent")
    units = [_sweep_unit(alphas, s, r, decl) for s, r in ind.iterrows()]
    return _decided(decl.id, units or [_placeholder("independent-teacher sweep")],
                    ours=_fmt(units, final), setting=setting, numbers=_numbers(units))


def assess_tied_steep(alphas: "pd.DataFrame", setting: str):
    """P1-D2: every tied KL sweep at the highest temperature, one unit each: α_ℓ against ≥ 2,
    and (secondary) steeper than the independent sweep of the same temperature and seed."""
    decl = DECLARATIONS["P1-D2-tied-teacher-steep"]
    final = _final(alphas)
    kl = _select(final, objective="kl")
    hot = float(kl["temperature"].max()) if len(kl) else np.nan
    tied, ind = (_select(kl, teacher=t, temperature=hot) for t in ("tied", "independent"))
    units = []
    for s, r in tied.iterrows():
        twin = ind[ind["seed"] == r.seed]
        diff = _difference(r, twin.iloc[0]) if len(twin) else None
        units.append(_sweep_unit(alphas, s, r, decl,
                                 {"steeper than independent": diff} if diff else None))
    diffs = "; ".join(f"{u.name} − independent {_est(u.secondary.get('steeper than independent'))}"
                      for u in units)
    return _decided(decl.id, units or [_placeholder(f"tied KL sweep at T = {hot:g}")],
                    ours=f"T = {hot:g}, tied: {_fmt(units, final)}; independent: "
                         + "; ".join(f"{s}: α {_est(_alpha(r))}" for s, r in ind.iterrows())
                         + f"; over the shared depths: {diffs or 'none'}",
                    setting=setting, numbers={"temperature": hot, **_numbers(units)})


def assess_tied_cold(alphas: "pd.DataFrame", setting: str):
    """P1-D3: every tied KL sweep at the lowest temperature, one unit each, against the ensemble
    band."""
    decl = DECLARATIONS["P1-D3-tied-cold"]
    final = _final(alphas)
    kl = _select(final, objective="kl")
    cold = float(kl["temperature"].min()) if len(kl) else np.nan
    tied = _select(kl, teacher="tied", temperature=cold)
    units = [_sweep_unit(alphas, s, r, decl) for s, r in tied.iterrows()]
    return _decided(decl.id, units or [_placeholder(f"tied KL sweep at T = {cold:g}")],
                    ours=f"T = {cold:g}: {_fmt(units, final)}", setting=setting,
                    numbers={"temperature": cold, **_numbers(units)})


def assess_mse(alphas: "pd.DataFrame", setting: str):
    """P1-D4: per teacher seed, the tied minus the independent MSE sweep's α_ℓ over the shared
    depths against the 'steeper' band, with the independent α_ℓ ≈ 1 as secondary; a pair whose
    difference or independent α_ℓ still moves toward its band has not converged."""
    decl = DECLARATIONS["P1-D4-mse-ordering"]
    ensemble = decl.secondary[0].band
    final = _final(alphas)
    ind, tied = (_select(final, objective="mse", teacher=t) for t in ("independent", "tied"))
    units = []
    for seed in sorted(set(ind["seed"]) | set(tied["seed"])):
        i, t = ind[ind["seed"] == seed], tied[tied["seed"] == seed]
        name = f"seed {seed}"
        if not (len(i) and len(t)):
            units.append(Unit(name=name, primary=None, precondition="no tied and independent "
                                                                    "MSE pair for this seed"))
            continue
        (si, ri), (st, rt) = next(i.iterrows()), next(t.iterrows())
        diff, alpha = _difference(rt, ri), _alpha(ri)
        gap = (_history(alphas, st, "alpha_common") - _history(alphas, si, "alpha_common")).dropna()
        pre = (_unconverged(gap, decl.band, f"α_ℓ({st}) − α_ℓ({si})")
               or _unconverged(_history(alphas, si), ensemble, f"α_ℓ({si})")
               or _no_interval(diff, "the difference"))
        units.append(Unit(name=name, primary=diff, precondition=pre,
                          secondary={"independent ≈ 1": alpha} if alpha else {}))
    ours = "; ".join(
        f"{u.name}: tied − independent {_est(u.primary)}, independent α "
        f"{_est(u.secondary.get('independent ≈ 1'))}"
        + (f" — {u.precondition}" if u.precondition else "") for u in units)
    sweeps = {t: _fmt([Unit(name=s, primary=_alpha(r)) for s, r in sel.iterrows()], final)
              for t, sel in (("independent", ind), ("tied", tied))}
    return _decided(decl.id, units or [_placeholder("MSE sweep")],
                    ours=f"{ours or 'none'}; sweeps over their own depths: independent "
                         f"{sweeps['independent']}; tied {sweeps['tied']}",
                    setting=setting, numbers=_numbers(units))


def assess_signatures(sig: "pd.DataFrame", control: "pd.DataFrame", setting: str):
    """P1-D5, an absence claim (no alignment of consecutive updates): the independent teacher's
    students' mean middle θ(Δh) with its t interval over students against [π/4, 3π/4]; the
    positive control is the tied teacher itself (a smooth flow, aligned updates), which the band
    must reject; the tied students aligning theirs is the secondary. `control` (students at
    default initialisation) is shown beside, not deciding."""
    decl = DECLARATIONS["P1-D5-student-signatures"]
    students = sig[sig["network"].str.startswith("student")]
    ind = students[students["teacher"] == "independent"]["middle_theta_dh"]
    tied = students[students["teacher"] == "tied"]["middle_theta_dh"]
    teacher = sig[sig["network"].str.startswith("teacher") & (sig["teacher"] == "tied")]
    init = control["middle_theta_dh"]
    primary, aligned = mean_interval(ind), mean_interval(tied)
    flow = (Estimate.exact(float(teacher["middle_theta_dh"].iloc[0])) if len(teacher) else None)
    unit = Unit(name="signature runs", primary=primary,
                precondition=None if primary is not None else
                f"{len(ind)} trained independent-teacher student(s) with ≥ 4 blocks: no interval",
                control=flow, secondary={"tied students align": aligned} if aligned else {})

    def span(v) -> str:
        return f"{v.min():.2f}–{v.max():.2f}" if len(v) else "none"

    return _decided(
        decl.id, [unit],
        ours=f"middle θ(Δh): independent students {_est(primary)} rad (range {span(ind)}), tied "
             f"students {_est(aligned)} (range {span(tied)}); positive control, the tied "
             f"teacher: {'not measured' if flow is None else f'{flow.point:.3f}'} rad; untrained "
             f"students (beside) {span(init)} rad",
        setting=setting,
        numbers={"independent": ind.tolist(), "tied": tied.tolist(), "untrained": init.tolist(),
                 "tied_teacher": None if flow is None else flow.point})


def assess(alphas: "pd.DataFrame", sig: "pd.DataFrame", control: "pd.DataFrame",
           setting: str) -> list:
    """Chapter 04's claims, each from its own function, decided by `claims.decide` against its
    declaration (`layerlab.depth.declarations`)."""
    return [assess_independent(alphas, setting), assess_tied_steep(alphas, setting),
            assess_tied_cold(alphas, setting), assess_mse(alphas, setting),
            assess_signatures(sig, control, setting)]


def untrained_signatures(profile, cache=None, seed: int = 0) -> "pd.DataFrame":
    """The signature's control: students of the signature depths at PyTorch's default
    initialisation (not the identity start), measured exactly as the trained ones. Cached:
    float32 matrix products differ in the last bits between CPUs, and the page must show the
    stored numbers."""
    import pandas as pd

    from layerlab import results

    spec = ToySettings.from_profile(profile)
    cache = cache or results.Cache(profile.name)
    rows = cache.cached("toy_signatures", {"toy": 1, "untrained": list(spec.student_depths),
                                           "seed": seed},
                        lambda: _untrained_rows(spec.student_depths, seed))
    return pd.DataFrame(rows)


def _untrained_rows(depths, seed: int) -> list[dict[str, Any]]:
    from layerlab import hidden

    gen = torch.Generator().manual_seed(seed + 999)
    x = torch.randn(512, WIDTH, generator=gen)
    rows = []
    with torch.no_grad():
        for d in depths:
            if d < 4:
                continue
            net = make_student(d, seed=seed * 1000 + d, head=False, identity=False)["net"]
            out = hidden.layer_angles([s.unsqueeze(0) for s in net.trajectory(x)])
            rows.append({"network": f"untrained ℓ={d}", "depth": d,
                         "middle_theta_dh": float(np.mean(out["theta_dh"][hidden.middle_pairs(d)])),
                         "middle_theta": float(np.mean(out["theta"][hidden.middle_layers(d)])),
                         "teacher": "none (untrained)"})
    return rows


def replicate_summary(alphas: "pd.DataFrame") -> "pd.DataFrame":
    """Final α_ℓ per teacher type, objective, temperature and student block over the depths
    every sweep shares: mean and SD over teacher seeds."""
    final = _final(alphas)
    return final.groupby(["block", "teacher", "objective", "temperature"]).agg(
        alpha_mean=("alpha_common", "mean"), alpha_sd=("alpha_common", "std"),
        replicates=("alpha_common", "size")).reset_index()
