"""P2's Growth Transformer Training (GTT, research/paper2.md §9) against uniform training,
G_stack depth stacking and random phase schedules, under one budget accounting.

Every arm is a *program*: a list of segments, each training a set of layers of a Llama-style
model for some optimizer steps (the embedding and final norm train in every segment). Segments
may start with an operation: `clone` (GTT's growth: layers initialised from trained core layers
plus noise) or `stack` (G_stack: a 3-layer model repeated four times). GTT ends by scaling its
never-trained anti-layers by 0.9.

Budgets are counted per optimizer step in layer-steps (trainable layers), tokens, FLOPs (forward
through every layer; backward activation gradients from the lowest trainable layer up; weight
gradients only for trainable layers; attention-score FLOPs ignored) and wall-clock. Training
checkpoints atomically; an interrupted arm resumes and ends with the same weights as an
uninterrupted one.

Used by chapter 10 (and the deviations page).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from layerlab import claims, corpus, models, paper, paths, results, training
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.settings import GrowthConfig, GrowthSettings

if TYPE_CHECKING:
    import pandas as pd


# -- the model -------------------------------------------------------------------------------------
TOKENIZER_ENV = "LAYERLAB_TOKENIZER_SMOLLM2"


def tokenizer_for(cfg: GrowthConfig):
    """The growth model's tokenizer: bytes, or SmolLM2's -- from the folder named by
    $LAYERLAB_TOKENIZER_SMOLLM2 when set (what `make gpu-run` carries to a GPU machine, which
    has no GGUF), else from the offline model's GGUF."""
    if cfg.tokenizer == "byte":
        return models.byte_tokenizer()
    if cfg.tokenizer == "smollm2":
        folder = os.environ.get(TOKENIZER_ENV)
        if folder:
            from transformers import AutoTokenizer

            if not Path(folder, "tokenizer.json").is_file():
                raise FileNotFoundError(f"${TOKENIZER_ENV}={folder} holds no tokenizer.json; "
                                        "write one with `make gpu-prepare`")
            return AutoTokenizer.from_pretrained(folder)
        return models.load("smollm2-135m-instruct-q4").tokenizer
    raise ValueError(f"unknown tokenizer {cfg.tokenizer!r}: 'smollm2' or 'byte'")


def save_tokenizer(folder: Path) -> Path:
    """SmolLM2's tokenizer files (from the offline GGUF) into `folder`, for a machine without it."""
    tok = models.load("smollm2-135m-instruct-q4").tokenizer
    tok.save_pretrained(str(folder))
    return Path(folder)


def build(cfg: GrowthConfig, vocab: int, layers: int | None = None, seed_offset: int = 0):
    """A seeded Llama-style model (tied embeddings, SwiGLU) of `layers` blocks."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=vocab, hidden_size=cfg.width, intermediate_size=cfg.ffn,
                         num_hidden_layers=layers or cfg.layers, num_attention_heads=cfg.heads,
                         num_key_value_heads=cfg.heads, max_position_embeddings=cfg.seq_len,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                         pad_token_id=None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed * 1000 + seed_offset)
        return AutoModelForCausalLM.from_config(config)


def layer_params(cfg: GrowthConfig) -> int:
    """Parameters of one block: attention 4·d², SwiGLU 3·d·ffn, two norms."""
    return 4 * cfg.width**2 + 3 * cfg.width * cfg.ffn + 2 * cfg.width


def n_params(cfg: GrowthConfig, vocab: int) -> int:
    return cfg.layers * layer_params(cfg) + vocab * cfg.width + cfg.width


# -- anatomy and programs ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Anatomy:
    core: tuple[int, ...]
    io: tuple[int, ...]
    anti: tuple[int, ...]
    connective: tuple[int, ...]


def proportional_anatomy(n_layers: int = 12, source_layers: int = paper.P2_N_LAYERS.value,
                         core=paper.P2_CRITICAL_CORE.value, anti=paper.P2_ANTI_LAYERS.value,
                         io=paper.P2_IO_LAYERS.value) -> Anatomy:
    """P2's SmolLM2 classes mapped to a smaller stack by index × n/30 (the spec's option (a))."""
    def scale(ls):
        return tuple(sorted({min(n_layers - 1, round(l * n_layers / source_layers)) for l in ls}))

    c, a = scale(core), scale(anti)
    i = tuple(l for l in scale(io) if l not in c and l not in a)
    rest = tuple(l for l in range(n_layers) if l not in (*c, *a, *i))
    return Anatomy(core=c, io=i, anti=tuple(l for l in a if l not in c), connective=rest)


@dataclass(frozen=True)
class Segment:
    name: str
    trainable: tuple[int, ...]
    steps: int
    op: str | None = None  # "clone" or "stack", applied before the segment's first step
    model_layers: int = 12


@dataclass(frozen=True)
class Program:
    arm: str
    segments: tuple[Segment, ...]
    final_scale: tuple[int, ...] = ()  # layers scaled by anti_scale after training
    clone_from: tuple[tuple[int, int], ...] = ()  # (target, source) pairs of the clone op

    @property
    def steps(self) -> int:
        return sum(s.steps for s in self.segments)

    @property
    def layer_steps(self) -> int:
        return sum(len(s.trainable) * s.steps for s in self.segments)


GTT_PHASES = (  # (name, which layers, share of GTT's optimizer steps)
    ("gastrulation", "core", 0.20), ("neurulation", "io", 0.15),
    ("organogenesis", "core+adjacent", 0.20), ("growth", "core+connective", 0.15),
    ("connective", "connective", 0.15), ("maturation", "all but anti", 0.15),
)


def _phase_layers(which: str, a: Anatomy, n: int) -> tuple[int, ...]:
    if which == "core":
        return a.core
    if which == "io":
        return a.io
    if which == "core+adjacent":
        near = {m for c in a.core for m in (c - 1, c, c + 1) if 0 <= m < n}
        return tuple(sorted(near - set(a.anti)))
    if which == "core+connective":
        return tuple(sorted({*a.core, *a.connective}))
    if which == "connective":
        return a.connective
    if which == "all but anti":
        return tuple(l for l in range(n) if l not in a.anti)
    raise ValueError(which)


def _nearest(target: int, sources: tuple[int, ...]) -> int:
    return min(sources, key=lambda s: (abs(s - target), s))


def gtt_program(cfg: GrowthConfig, a: Anatomy, arm: str = "gtt",
                steps: int | None = None) -> Program:
    """GTT's six phases, with optimizer steps sized so layer-steps = budget × uniform's; or,
    given `steps`, so that the phases add up to that many optimizer steps (the paper's arm)."""
    n = cfg.layers
    sets = [(name, _phase_layers(which, a, n), share) for name, which, share in GTT_PHASES]
    if steps is None:
        target = cfg.budget * n * cfg.uniform_steps
        total = target / sum(share * len(layers) for _, layers, share in sets)
    else:
        total = steps / sum(share for _, _, share in sets)
    segs = tuple(Segment(name, layers, max(1, round(share * total)),
                         op="clone" if name == "growth" else None) for name, layers, share in sets)
    clone = tuple((t, _nearest(t, a.core)) for t in a.connective)
    return Program(arm, segs, final_scale=a.anti, clone_from=clone)


def random_program(cfg: GrowthConfig, a: Anatomy, seed: int) -> Program:
    """GTT's program with the layer labels permuted at random: same budget, phases and
    operations, no anatomy."""
    perm = np.random.default_rng(10_000 + seed).permutation(cfg.layers)

    def p(ls):
        return tuple(sorted(int(perm[l]) for l in ls))

    shuffled = Anatomy(core=p(a.core), io=p(a.io), anti=p(a.anti), connective=p(a.connective))
    prog = gtt_program(cfg, a, arm="random schedule")
    segs = tuple(dataclasses.replace(s, trainable=p(s.trainable)) for s in prog.segments)
    clone = tuple((int(perm[t]), int(perm[s])) for t, s in prog.clone_from)
    return Program("random schedule", segs, final_scale=shuffled.anti, clone_from=clone)


def uniform_program(cfg: GrowthConfig, share: float = 1.0) -> Program:
    steps = max(1, round(share * cfg.uniform_steps))
    name = "uniform" if share == 1.0 else f"uniform {share:.0%} budget"
    return Program(name, (Segment("all layers", tuple(range(cfg.layers)), steps),))


def gstack_program(cfg: GrowthConfig, small: int = 3) -> Program:
    """G_stack: a `small`-layer model, stacked to `layers`, with layer-steps split evenly
    between the two stages and the total equal to GTT's budget."""
    if cfg.layers % small:
        raise ValueError(f"{cfg.layers} layers cannot be stacked from {small}")
    target = cfg.budget * cfg.layers * cfg.uniform_steps
    t_small = max(1, round(target / 2 / small))
    t_big = max(1, round(target / 2 / cfg.layers))
    return Program("G_stack", (
        Segment("small model", tuple(range(small)), t_small, model_layers=small),
        Segment("stacked", tuple(range(cfg.layers)), t_big, op="stack"),
    ))


# The paper's own GTT arm: "GTT at 50 % budget (416 steps) ... uniform at full budget (656
# steps)" -- 63 % of uniform's optimizer steps, whatever that is in layer-steps. Our "gtt" arm
# reads "50 %" as layer-steps instead (more optimizer steps than uniform); both are run.
PAPER_ARM = "gtt, paper's steps"
PAPER_STEP_SHARE = paper.P2_GROWTH_STEPS.value["gtt"] / paper.P2_GROWTH_STEPS.value["uniform"]


def programs(cfg: GrowthConfig, seed: int) -> dict[str, Program]:
    a = proportional_anatomy(cfg.layers)
    return {"uniform": uniform_program(cfg), "uniform same budget": uniform_program(cfg, cfg.budget),
            "gtt": gtt_program(cfg, a), "G_stack": gstack_program(cfg),
            "random schedule": random_program(cfg, a, seed),
            PAPER_ARM: gtt_program(cfg, a, arm=PAPER_ARM,
                                   steps=max(1, round(PAPER_STEP_SHARE * cfg.uniform_steps)))}


# -- data -----------------------------------------------------------------------------------------
def data(cfg: GrowthConfig, tok, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """([steps, batch, seq] training batches, [n, seq] validation windows), seeded."""
    if cfg.regime == "natural":
        pool = corpus.token_blocks(tok, "wikipedia", n_tokens=10**9, seq_len=cfg.seq_len,
                                   split="train", allow_fewer=True)
        val = corpus.token_blocks(tok, "wikipedia", n_tokens=cfg.eval_blocks * cfg.seq_len,
                                  seq_len=cfg.seq_len, split="validation")
    elif cfg.regime == "memorise":
        # a small set, trained on and evaluated on: the paper's loss of ~0.13 needs this regime
        ids = corpus.token_blocks(tok, "kjv", n_tokens=cfg.memorise_tokens, seq_len=cfg.seq_len,
                                  split="train").reshape(-1)
        starts = torch.arange(0, len(ids) - cfg.seq_len, max(1, cfg.seq_len // 4))
        pool = torch.stack([ids[s : s + cfg.seq_len] for s in starts])
        val = pool[:: max(1, len(pool) // cfg.eval_blocks)][: cfg.eval_blocks]
    else:
        raise ValueError(f"unknown regime {cfg.regime!r}: 'natural' or 'memorise'")
    return training.shuffled_batches(pool, steps, cfg.batch_size, cfg.seed), val


# -- operations -----------------------------------------------------------------------------------
@torch.no_grad()
def clone_layers(model, pairs: tuple[tuple[int, int], ...], noise: float, seed: int) -> None:
    """Layer t ← layer s + noise · std(tensor) · N(0, 1), for each (t, s)."""
    layers = model.model.layers
    gen = torch.Generator().manual_seed(seed)
    for t, s in pairs:
        src = dict(layers[s].named_parameters())
        for name, p in layers[t].named_parameters():
            w = src[name].detach()
            std = w.std() if w.numel() > 1 else w.abs().mean()
            # drawn on the CPU: the same noise whatever device the model is on
            p.copy_(w + noise * std * torch.randn(w.shape, generator=gen).to(w.device))


@torch.no_grad()
def stack_model(small, big, times: int) -> None:
    """G_stack: copy the small model into the big one, its block stack repeated `times` times."""
    big.model.embed_tokens.weight.copy_(small.model.embed_tokens.weight)
    big.model.norm.weight.copy_(small.model.norm.weight)
    n = len(small.model.layers)
    for i, layer in enumerate(big.model.layers):
        layer.load_state_dict(small.model.layers[i % n].state_dict())
    if len(big.model.layers) != n * times:
        raise ValueError("stacked model has the wrong depth")


@torch.no_grad()
def scale_layers(model, layers: tuple[int, ...], alpha: float) -> None:
    for l in layers:
        for p in model.model.layers[l].parameters():
            if p.ndim == 2:
                p.mul_(alpha)


def set_trainable(model, layers: tuple[int, ...]) -> None:
    """Only these blocks (plus the embedding and final norm) receive gradients."""
    for i, layer in enumerate(model.model.layers):
        for p in layer.parameters():
            p.requires_grad_(i in layers)
    model.model.embed_tokens.weight.requires_grad_(True)
    model.model.norm.weight.requires_grad_(True)


def step_flops(cfg: GrowthConfig, vocab: int, model_layers: int, trainable: tuple[int, ...]) -> float:
    """FLOPs of one optimizer step (see the module docstring)."""
    tokens = cfg.batch_size * cfg.seq_len
    per_layer = 2 * tokens * layer_params(cfg)
    head = 2 * tokens * vocab * cfg.width
    forward = model_layers * per_layer + head
    act_grad = (model_layers - min(trainable)) * per_layer + head
    weight_grad = len(trainable) * per_layer + head  # the tied embedding/unembedding trains
    return float(forward + act_grad + weight_grad)


# -- training -------------------------------------------------------------------------------------
def folder(cfg: GrowthConfig) -> Path:
    return paths.cache_dir() / "growth" / results.config_hash(cfg.key())


def _segment_at(prog: Program, step: int) -> tuple[int, Segment]:
    start = 0
    for seg in prog.segments:
        if step < start + seg.steps:
            return start, seg
        start += seg.steps
    return start, prog.segments[-1]


def train_arm(prog: Program, cfg: GrowthConfig, tok, *, progress: bool = True,
              stop_after: int | None = None, device: str | None = None) -> dict[str, Any]:
    """Run one program (resuming from its checkpoint); the curve holds every budget measure.
    Trains on the GPU when there is one (`device` overrides); the checkpoint is device-free."""
    device = device or models.default_device()
    vocab = len(tok)
    batches, val = data(cfg, tok, prog.steps)
    first = prog.segments[0].model_layers
    run = training.Run(folder(cfg) / f"{results.slug(prog.arm)}.ckpt", prog.steps, desc=prog.arm,
                       progress=progress, stop_after=stop_after,
                       counters={"layer_steps": 0, "tokens": 0, "flops": 0.0,
                                 "model_layers": first, "finished": False})
    saved = run.saved()
    count = run.state.counters
    # a run stopped after a stack resumes at the stacked depth
    model = build(cfg, vocab, count["model_layers"]).to(device)
    opt = training.adamw(model.parameters(), cfg.lr, cfg.weight_decay)
    if saved is not None:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
    if not run.state.curve:
        run.log({"step": 0, "layer_steps": 0, "tokens": 0, "flops": 0.0, "seconds": 0.0,
                 "val_loss": training.mean_loss(model, val)})
    for step in run.steps():
        seg_start, seg = _segment_at(prog, step)
        if step == seg_start and seg.op == "stack":
            big = build(cfg, vocab, seg.model_layers).to(device)
            stack_model(model, big, seg.model_layers // len(model.model.layers))
            model = big
            count["model_layers"] = seg.model_layers
            opt = training.adamw(model.parameters(), cfg.lr, cfg.weight_decay)
        elif step == seg_start and seg.op == "clone":
            clone_layers(model, prog.clone_from, cfg.clone_noise, seed=cfg.seed * 7919 + step)
        set_trainable(model, seg.trainable)
        model.train()
        loss = training.step(model, opt, batches[step].to(device),
                             lr=training.warmup_cosine(step, prog.steps, cfg.lr, cfg.warmup))
        done = step + 1
        count["layer_steps"] += len(seg.trainable)
        count["tokens"] += cfg.batch_size * cfg.seq_len
        count["flops"] += step_flops(cfg, vocab, count["model_layers"], seg.trainable)
        last = done == prog.steps
        if last and prog.final_scale:
            scale_layers(model, prog.final_scale, cfg.anti_scale)
        if run.due(done, cfg.eval_every):
            run.lap()
            with run.untimed():  # the curve's seconds are training time only
                run.log({"step": done, "layer_steps": count["layer_steps"],
                         "tokens": count["tokens"], "flops": count["flops"],
                         "seconds": run.state.seconds, "train_loss": loss.item(),
                         "val_loss": training.mean_loss(model, val), "phase": seg.name})
        if run.due(done, cfg.checkpoint_every):
            count["finished"] = last
            run.save(model, opt, done)
    state = run.state
    return {"arm": prog.arm, "steps": prog.steps, "layer_steps_budget": prog.layer_steps,
            "finished": state.counters["finished"],
            "params": sum(p.numel() for p in model.parameters()),
            "final_val_loss": state.curve[-1]["val_loss"], "curve": state.curve,
            "segments": [dataclasses.asdict(s) for s in prog.segments]}


def final_weights(prog: Program, cfg: GrowthConfig) -> dict[str, torch.Tensor]:
    """The weights an arm's checkpoint holds (for tests and inspection)."""
    return torch.load(folder(cfg) / f"{results.slug(prog.arm)}.ckpt", weights_only=True,
                      map_location="cpu")["model"]


# -- the chapter ------------------------------------------------------------------------------------
def config_for(profile, regime: str, seed: int) -> GrowthConfig:
    return GrowthSettings.from_profile(profile).run_config(regime, seed)


def run(profile, *, progress: bool = True) -> dict[str, Any]:
    """Every regime × seed × arm of the profile, each cached as soon as it finishes."""
    g = GrowthSettings.from_profile(profile)
    cache = results.Cache(profile.name)
    tok_cache: dict[str, Any] = {}
    items = {f"{regime}-s{seed}-{arm}": {"regime": regime, "seed": seed, "arm": arm}
             for regime in g.regimes for seed in g.seeds
             for arm in ("uniform", "uniform same budget", "gtt", "G_stack", "random schedule")}

    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        cfg = config_for(profile, item["regime"], item["seed"])
        if cfg.tokenizer not in tok_cache:
            tok_cache[cfg.tokenizer] = tokenizer_for(cfg)
        prog = programs(cfg, item["seed"])[item["arm"]]
        out = train_arm(prog, cfg, tok_cache[cfg.tokenizer], progress=progress)
        if not out["finished"]:
            raise RuntimeError(f"{item} stopped before its last step")
        return out

    return cache.for_each("growth", g.key(), items, compute, progress=progress)


# -- the paper's regime: a stated search, then a learning rate per arm ---------------------------
ARMS = ("uniform", "uniform same budget", "gtt", "G_stack", "random schedule")
TUNED = "paper regime"  # the regime name of the tuned runs in tables and charts


def _tuned_config(profile, size: int, lr: float, seed: int) -> GrowthConfig:
    return config_for(profile, "memorise", seed).replace(memorise_tokens=size, lr=lr)


def _run_items(profile, experiment: str, items: dict[str, dict[str, Any]],
               progress: bool) -> dict[str, dict[str, Any]]:
    """Train the arms `items` name (size, lr, seed, arm), each cached as soon as it finishes."""
    g = GrowthSettings.from_profile(profile)
    tok: dict[str, Any] = {}

    def compute(_name: str, item: dict[str, Any]) -> dict[str, Any]:
        cfg = _tuned_config(profile, item["size"], item["lr"], item["seed"])
        if cfg.tokenizer not in tok:
            tok[cfg.tokenizer] = tokenizer_for(cfg)
        out = train_arm(programs(cfg, item["seed"])[item["arm"]], cfg, tok[cfg.tokenizer],
                        progress=progress)
        if not out["finished"]:
            raise RuntimeError(f"{item} stopped before its last step")
        return out

    return results.Cache(profile.name).for_each(experiment, g.key(), items, compute,
                                                progress=progress)


def _item(size: int, lr: float, seed: int, arm: str) -> tuple[str, dict[str, Any]]:
    return f"{size}-lr{lr:g}-s{seed}-{arm}", {"size": size, "lr": lr, "seed": seed, "arm": arm}


def search(profile, *, progress: bool = True) -> "pd.DataFrame":
    """Step 1: uniform training on each memorised-set size; the size nearest the target wins."""
    import pandas as pd

    t = GrowthSettings.from_profile(profile).tuning
    lr = GrowthSettings.from_profile(profile).config.lr
    items = dict(_item(n, lr, t.search_seed, "uniform") for n in t.sizes)
    runs = _run_items(profile, "growth_tuning", items, progress)
    rows = [{"set size (tokens)": items[k]["size"], "lr": lr, "seed": t.search_seed,
             "uniform final val loss": r["final_val_loss"]} for k, r in runs.items()]
    df = pd.DataFrame(rows)
    df["distance to target"] = (df["uniform final val loss"] - t.target).abs()
    df["chosen"] = df["distance to target"] == df["distance to target"].min()
    return df


def chosen_size(search_table: "pd.DataFrame") -> int:
    return int(search_table.loc[search_table["chosen"], "set size (tokens)"].iloc[0])


def lr_grid(profile, size: int, *, progress: bool = True) -> "pd.DataFrame":
    """Step 2: every arm at every lr of the grid (search seed); the best lr per arm is marked."""
    import pandas as pd

    t = GrowthSettings.from_profile(profile).tuning
    items = dict(_item(size, lr, t.search_seed, arm) for arm in ARMS for lr in t.lrs)
    runs = _run_items(profile, "growth_tuning", items, progress)
    df = pd.DataFrame([{"arm": items[k]["arm"], "lr": items[k]["lr"],
                        "final val loss": r["final_val_loss"]} for k, r in runs.items()])
    best = df.groupby("arm")["final val loss"].transform("min")
    df["best"] = df["final val loss"] == best
    return df


def best_lrs(grid: "pd.DataFrame") -> dict[str, float]:
    return {r["arm"]: float(r["lr"]) for _, r in grid[grid["best"]].iterrows()}


def tuned(profile, *, progress: bool = True) -> dict[str, Any]:
    """The whole paper-regime pipeline: search, lr grid, then every arm at its lr for the
    verdict's seeds; runs named like `run`'s (regime `paper regime`) so the analysis is shared."""
    t = GrowthSettings.from_profile(profile).tuning
    if t is None:
        raise ValueError(f"profile {profile.name!r} has no growth tuning settings")
    found = search(profile, progress=progress)
    size = chosen_size(found)
    grid = lr_grid(profile, size, progress=progress)
    lrs = best_lrs(grid)
    items = dict(_item(size, lrs[arm], seed, arm) for seed in t.seeds for arm in ARMS)
    # the paper's arm: GTT's program and learning rate, cut to 63 % of uniform's optimizer steps
    items |= dict(_item(size, lrs["gtt"], seed, PAPER_ARM) for seed in t.seeds)
    runs = _run_items(profile, "growth_tuning", items, progress)
    named = {f"{TUNED}-s{items[k]['seed']}-{items[k]['arm']}": r for k, r in runs.items()}
    every = {**_run_items(profile, "growth_tuning", dict(_item(n, GrowthSettings.from_profile(
        profile).config.lr, t.search_seed, "uniform") for n in t.sizes), progress),
             **_run_items(profile, "growth_tuning",
                          dict(_item(size, lr, t.search_seed, arm) for arm in ARMS for lr in t.lrs),
                          progress), **runs}
    return {"search": found, "size": size, "grid": grid, "lrs": lrs, "runs": named,
            "all_runs": every}


# -- analysis ---------------------------------------------------------------------------------------
MEASURES = ("step", "layer_steps", "tokens", "flops", "seconds")
PAPER = paper.P2_GROWTH.value


def curves(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    import pandas as pd

    rows = []
    for name, r in runs.items():
        regime, seed = name.split("-s")[0], int(name.split("-s")[1].split("-")[0])
        rows += [{"regime": regime, "seed": seed, "arm": r["arm"], **c} for c in r["curve"]]
    return pd.DataFrame(rows)


def bands(cv: "pd.DataFrame") -> "pd.DataFrame":
    """Mean, min and max over seeds at each evaluation point (seeds share the schedule)."""
    g = cv.groupby(["regime", "arm", "step"])
    out = g[list(MEASURES[1:])].mean().join(g["val_loss"].agg(["mean", "min", "max", "count"]))
    return out.reset_index().rename(columns={"mean": "val_loss", "min": "lo", "max": "hi"})


def finals(cv: "pd.DataFrame") -> "pd.DataFrame":
    """Final validation loss (mean ± sd over seeds) and the budget each arm spent."""
    last = cv.sort_values("step").groupby(["regime", "seed", "arm"]).tail(1)
    g = last.groupby(["regime", "arm"])
    out = g["val_loss"].agg(["mean", "std", "count"]).rename(
        columns={"mean": "final val loss", "std": "sd", "count": "seeds"})
    for m in MEASURES:
        out[m] = g[m].mean()
    return out.reset_index()


def comparison(cv: "pd.DataFrame") -> "pd.DataFrame":
    """Per regime and arm, against uniform at full budget: loss ratio and difference, the share
    of uniform's budget spent (each measure), and the first evaluation at which the arm's mean
    curve reaches uniform's final loss (as a share of uniform's steps and FLOPs)."""
    import pandas as pd

    f = finals(cv).set_index(["regime", "arm"])
    b = bands(cv)
    rows = []
    for regime in f.index.get_level_values(0).unique():
        uni = f.loc[(regime, "uniform")]
        for arm in f.loc[regime].index:
            r = f.loc[(regime, arm)]
            curve = b[(b["regime"] == regime) & (b["arm"] == arm)].sort_values("step")
            hit = curve[curve["val_loss"] <= uni["final val loss"]]
            rows.append({
                "regime": regime, "arm": arm, "final val loss": r["final val loss"], "sd": r["sd"],
                "uniform / arm loss": uni["final val loss"] / r["final val loss"],
                "loss − uniform": r["final val loss"] - uni["final val loss"],
                **{f"{m} share": r[m] / uni[m] for m in MEASURES},
                "reaches uniform's final loss at step share":
                    float(hit["step"].iloc[0] / uni["step"]) if len(hit) else float("nan"),
                "… at FLOP share":
                    float(hit["flops"].iloc[0] / uni["flops"]) if len(hit) else float("nan"),
            })
    return pd.DataFrame(rows)


CHAPTER = "10_growth_training"
HALF_BUDGET = 0.5  # P2-C6-half-budget's "50 % budget", read as a share of uniform's layer-steps
BUDGET_ROUNDING = 0.05  # phase lengths are whole steps: GTT's share lands within 5 points of it


def paired(cv: "pd.DataFrame", arm: str = "gtt", regime: str | None = None) -> "pd.DataFrame":
    """Final row of `arm` and of uniform per seed (one regime: the given one, or the only one)."""
    regime = regime or (TUNED if TUNED in set(cv["regime"]) else cv["regime"].iloc[0])
    last = cv[cv["regime"] == regime].sort_values("step").groupby(["seed", "arm"]).tail(1)
    a = last[last["arm"] == arm].set_index("seed")
    u = last[last["arm"] == "uniform"].set_index("seed")
    return a.join(u, lsuffix="", rsuffix="_uniform", how="inner")


def t_interval(x: "np.ndarray") -> tuple[float, float, float]:
    """Mean and 95 % t-interval over seeds (NaN bounds with fewer than two seeds)."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - half, m + half


def _judged(cv: "pd.DataFrame", *, seeds_needed: int = 2, arm: str = "gtt",
            label: str = "GTT") -> tuple[str, "pd.DataFrame", list[str]]:
    """The regime the claims are judged in (the paper regime), `arm`'s seeds paired with
    uniform's and the failed preconditions common to the C6 claims."""
    regime = TUNED if TUNED in set(cv["regime"]) else str(cv["regime"].iloc[0])
    p = paired(cv, arm=arm, regime=regime)
    problems = []
    if regime != TUNED:
        problems.append(f"not the paper's regime: no '{TUNED}' runs (the tuned memorised set)")
    if len(p) < seeds_needed:
        problems.append(f"{len(p)} paired seed(s) of {label} and uniform: an interval needs "
                        f"{seeds_needed}")
    return regime, p, problems


def _ratio(p: "pd.DataFrame") -> claims.Estimate:
    """uniform / GTT final loss: geometric mean over paired seeds, t-interval on the log scale."""
    m, lo, hi = t_interval(np.log(p["val_loss_uniform"] / p["val_loss"]))
    return claims.Estimate(float(np.exp(m)), float(np.exp(lo)), float(np.exp(hi)))


def _saving(p: "pd.DataFrame", measure: str) -> claims.Estimate:
    """1 − GTT / uniform of a budget measure: mean over paired seeds and its t-interval."""
    return claims.Estimate(*t_interval(1 - p[measure] / p[f"{measure}_uniform"]))


def _per_seed(p: "pd.DataFrame", values) -> dict[str, float]:
    return {str(int(s)): float(v) for s, v in zip(p.index, values)}


def unit_for(cv: "pd.DataFrame", claim_id: str) -> tuple[claims.Unit, dict[str, Any]]:
    """One C6 claim's evidence (a unit: the paper regime) and the numbers it rests on."""
    regime, p, problems = _judged(cv, seeds_needed=1 if claim_id == "P2-C6-cost" else 2)
    info: dict[str, Any] = {"regime": regime, "seeds": [int(s) for s in p.index]}
    if len(p):
        info["layer_steps_share"] = float((p["layer_steps"] / p["layer_steps_uniform"]).mean())
        info["step_share"] = float((p["step"] / p["step_uniform"]).mean())
    if claim_id == "P2-C6-half-budget" and len(p):
        share = info["layer_steps_share"]
        if abs(share - HALF_BUDGET) > BUDGET_ROUNDING:
            problems.append(f"GTT spent {share:.0%} of uniform's layer-steps, not "
                            f"{HALF_BUDGET:.0%}")
    name = f"{regime}, 50 % of layer-steps" if claim_id == "P2-C6-half-budget" else regime
    if problems:
        return claims.Unit(name=name, primary=None, precondition="; ".join(problems)), info
    if claim_id in ("P2-C6-loss-ratio", "P2-C6-half-budget"):
        est = _ratio(p)
        info["per_seed"] = _per_seed(p, p["val_loss_uniform"] / p["val_loss"])
        secondary = {"2.1× lower loss": est} if claim_id == "P2-C6-half-budget" else {}
    elif claim_id == "P2-C6-faster":
        est, secondary = _saving(p, "seconds"), {}
        info["per_seed"] = _per_seed(p, 1 - p["seconds"] / p["seconds_uniform"])
    elif claim_id == "P2-C6-cost":
        saved = 1 - p["flops"] / p["flops_uniform"]
        est, secondary = claims.Estimate.exact(float(saved.mean())), {}  # fixed by the program
        info["per_seed"] = _per_seed(p, saved)
    else:
        raise ValueError(f"not a C6 claim: {claim_id}")
    info["estimate"] = [est.point, est.lo, est.hi]
    return claims.Unit(name=name, primary=est, secondary=secondary), info


def paper_arm_unit(cv: "pd.DataFrame") -> tuple[claims.Unit, dict[str, Any]]:
    """P2-C6-half-budget read as the paper's own arm: GTT at 416 of uniform's 656 optimizer
    steps (63 %), paired by seed with uniform at full budget."""
    regime, p, problems = _judged(cv, arm=PAPER_ARM, label="the paper's GTT arm")
    name = f"{regime}, paper's arm: {PAPER_STEP_SHARE:.0%} of optimizer steps"
    info: dict[str, Any] = {"seeds": [int(s) for s in p.index]}
    if len(p):
        info["step_share"] = float((p["step"] / p["step_uniform"]).mean())
        info["layer_steps_share"] = float((p["layer_steps"] / p["layer_steps_uniform"]).mean())
        if abs(info["step_share"] - PAPER_STEP_SHARE) > BUDGET_ROUNDING:
            problems.append(f"the arm took {info['step_share']:.0%} of uniform's steps, not "
                            f"{PAPER_STEP_SHARE:.0%}")
    if problems:
        return claims.Unit(name=name, primary=None, precondition="; ".join(problems)), info
    est = _ratio(p)
    info["per_seed"] = _per_seed(p, p["val_loss_uniform"] / p["val_loss"])
    info["estimate"] = [est.point, est.lo, est.hi]
    return claims.Unit(name=name, primary=est, secondary={"2.1× lower loss": est}), info


def _claim(claim_id: str, cv: "pd.DataFrame", setting: str, ours: str) -> claims.Claim:
    decl = DECLARATIONS[claim_id]
    unit, info = unit_for(cv, claim_id)
    return claims.make(decl, claims.decide(decl, [unit]), ours=ours, setting=setting,
                       numbers=info)


def _regime_text(c: "pd.DataFrame", regimes: list[str], fmt) -> str:
    return "; ".join(f"{r}: {fmt(c.loc[(r, 'gtt')], c.loc[(r, 'uniform')])}" for r in regimes)


def assess_ratio(cv: "pd.DataFrame", setting: str,
                 c: "pd.DataFrame | None" = None) -> claims.Claim:
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    return _claim("P2-C6-loss-ratio", cv, setting, _regime_text(
        c, regimes, lambda g, u: f"GTT {g['final val loss']:.3f} ± {g['sd']:.3f} vs uniform "
                                 f"{u['final val loss']:.3f} ({g['uniform / arm loss']:.2f}×)"))


def assess_half_budget(cv: "pd.DataFrame", setting: str,
                       c: "pd.DataFrame | None" = None) -> claims.Claim:
    """Two readings of "50 % budget", each a unit: GTT at half of uniform's layer-steps (our
    `gtt` arm) and the paper's own arm at 63 % of uniform's optimizer steps; the cross-unit
    rule gives the verdict."""
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    decl = DECLARATIONS["P2-C6-half-budget"]
    unit, info = unit_for(cv, "P2-C6-half-budget")
    paper_unit, paper_info = paper_arm_unit(cv)
    ours = _regime_text(
        c, regimes, lambda g, u: f"GTT {g['final val loss']:.3f} at {g['layer_steps share']:.0%} "
                                 f"of uniform's layer-steps ({g['step share']:.0%} of its steps) "
                                 f"vs uniform {u['final val loss']:.3f}")
    if (TUNED, PAPER_ARM) in c.index:
        g, u = c.loc[(TUNED, PAPER_ARM)], c.loc[(TUNED, "uniform")]
        ours += (f"; the paper's arm: GTT {g['final val loss']:.3f} at {g['step share']:.0%} of "
                 f"uniform's steps ({g['layer_steps share']:.0%} of its layer-steps) vs uniform "
                 f"{u['final val loss']:.3f}")
    return claims.make(decl, claims.decide(decl, [unit, paper_unit]), ours=ours,
                       setting=setting, numbers=info | {"paper_arm": paper_info})


def assess_faster(cv: "pd.DataFrame", setting: str,
                  c: "pd.DataFrame | None" = None) -> claims.Claim:
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    return _claim("P2-C6-faster", cv, setting, _regime_text(
        c, regimes, lambda g, u: f"GTT took {g['seconds share']:.0%} of uniform's wall-clock and "
                                 f"{g['flops share']:.0%} of its FLOPs"))


def assess_cost(cv: "pd.DataFrame", setting: str,
                c: "pd.DataFrame | None" = None) -> claims.Claim:
    c = comparison(cv).set_index(["regime", "arm"]) if c is None else c
    regimes = list(c.index.get_level_values(0).unique())
    return _claim("P2-C6-cost", cv, setting, _regime_text(
        c, regimes, lambda g, u: f"cost reduction {1 - g['flops share']:.0%} in FLOPs, "
                                 f"{1 - g['layer_steps share']:.0%} in layer-steps (set by "
                                 "construction)"))


def assess(cv: "pd.DataFrame", setting: str) -> list:
    """The four C6 claims (one finding), judged in the paper's regime."""
    c = comparison(cv).set_index(["regime", "arm"])  # once for all four claims
    return [assess_ratio(cv, setting, c), assess_half_budget(cv, setting, c),
            assess_faster(cv, setting, c), assess_cost(cv, setting, c)]


def program_table(cfg: GrowthConfig, seed: int = 0) -> "pd.DataFrame":
    """Segments of every arm: layers trained, optimizer steps, layer-steps, operation."""
    import pandas as pd

    rows = []
    for prog in programs(cfg, seed).values():
        for s in prog.segments:
            rows.append({"arm": prog.arm, "segment": s.name, "layers trained": list(s.trainable),
                         "steps": s.steps, "layer-steps": len(s.trainable) * s.steps,
                         "operation": s.op or "", "model layers": s.model_layers})
        if prog.final_scale:
            rows.append({"arm": prog.arm, "segment": "end", "layers trained": [], "steps": 0,
                         "layer-steps": 0, "model layers": cfg.layers,
                         "operation": f"scale layers {list(prog.final_scale)} by {cfg.anti_scale}"})
    return pd.DataFrame(rows)


def vocab_cost(cfg: GrowthConfig, tuned_runs: dict[str, dict[str, Any]] | None = None,
               vocab: int = 49_152) -> str:
    """Training FLOPs per step of the paper's model with SmolLM2's vocabulary against ours, and
    what the paper-regime pipeline would have cost with it: the wall-clock our runs measured
    (every search, grid and seed run), times the FLOP ratio."""
    ours = step_flops(cfg, len(models.byte_tokenizer()) if cfg.tokenizer == "byte" else vocab,
                      cfg.layers, tuple(range(cfg.layers)))
    paper_model = step_flops(cfg, vocab, cfg.layers, tuple(range(cfg.layers)))
    ratio = paper_model / ours
    out = (f"training FLOPs per step: {ours:.3g} with our {cfg.tokenizer} vocabulary, "
           f"{paper_model:.3g} with SmolLM2's {vocab:,} tokens ({ratio:.1f}×)")
    if tuned_runs:
        hours = sum(r["curve"][-1]["seconds"] for r in tuned_runs.values()) / 3600
        out += (f"; the paper-regime runs took {hours:.1f} h of wall-clock here, so with SmolLM2's "
                f"vocabulary at least {hours * ratio:.0f} h on the same machine (FLOPs alone; the 49k-way "
                "softmax and the embedding's optimizer step add more)")
    return out


def seeds(cv: "pd.DataFrame") -> list[int]:
    return sorted(int(s) for s in cv["seed"].unique())


def describe(profile) -> str:
    """The profile's growth settings on one line, for provenance blocks."""
    return GrowthSettings.from_profile(profile).describe()
