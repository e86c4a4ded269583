"""A depth family trained here: GPT-NeoX-style byte-level LMs of one width and several depths,
trained on the same tokens of vendored Wikipedia text. It stands in for the Pythia suite offline
and gives a measured loss-vs-depth curve; every depth is trained once per seed (`seeds`), and the
seed spread says how much of a loss difference between depths is noise.

Every member sees the same batches in the same order (the same token budget), starts from a
seeded initialisation, and checkpoints atomically every `checkpoint_every` steps: an interrupted
run resumes from its last checkpoint and ends with the same weights as an uninterrupted one.
Weights live in the cache folder (`~/.cache/layerlab/family/<config hash>/`, never committed);
the loss curves and final losses go to the results cache. Nothing is downloaded: a missing member
is retrained.

Used by chapters 00, 02, 03 and 11.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from layerlab import corpus, models, paths, results, training
from layerlab.settings import FamilySettings

__all__ = ["FAMILY", "build", "checkpoint", "config_for", "eval_loss", "FamilyConfig", "folder",
           "load_member", "member_name", "members", "stored", "train", "train_family"]

# the typed settings live with every other experiment's (layerlab.settings)
FamilyConfig = FamilySettings


def config_for(profile) -> FamilyConfig:
    """The family of a profile."""
    return FamilySettings.from_profile(profile)


def folder(cfg: FamilyConfig) -> Path:
    """Where the family's checkpoints live (outside the results; one folder per settings)."""
    return paths.cache_dir() / "family" / results.config_hash(cfg.key())


def _seed(cfg: FamilyConfig, seed: int | None) -> int:
    return cfg.seed if seed is None else seed


FAMILY = "depth_family"  # the experiment name of the members' training results


def member_name(depth: int, seed: int) -> str:
    """A member's item name in the results and its checkpoint's file stem."""
    return f"depth-{depth}-s{seed}"


def build(depth: int, cfg: FamilyConfig, seed: int | None = None,
          device: str | None = None) -> models.LoadedModel:
    """A freshly initialised member (seeded: the same depth and seed always start from the same
    weights; initialised on the CPU, then moved to `device`, by default the GPU when there is
    one). Also the untrained control of the geometry chapters."""
    seed = _seed(cfg, seed)
    from transformers import AutoModelForCausalLM, GPTNeoXConfig

    tok = models.byte_tokenizer()
    config = GPTNeoXConfig(vocab_size=len(tok), hidden_size=cfg.width, num_hidden_layers=depth,
                           num_attention_heads=cfg.heads, intermediate_size=4 * cfg.width,
                           max_position_embeddings=cfg.seq_len, tie_word_embeddings=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1000 * seed + depth)
        model = AutoModelForCausalLM.from_config(config)
    model.to(device or models.default_device())
    return models.wrap(f"family-d{depth}", model, tok, source=f"trained here ({cfg.width} wide)")


def _train_blocks(cfg: FamilyConfig, tok, seed: int | None = None) -> torch.Tensor:
    """The batches of one seed: every depth of that seed sees the same ones in the same order."""
    blocks = corpus.token_blocks(tok, cfg.corpus, n_tokens=10**9, seq_len=cfg.seq_len,
                                 split="train", allow_fewer=True)
    return training.shuffled_batches(blocks, cfg.steps, cfg.batch_size, _seed(cfg, seed))


def _eval_blocks(cfg: FamilyConfig, tok) -> torch.Tensor:
    return corpus.token_blocks(tok, cfg.corpus, n_tokens=cfg.eval_blocks * cfg.seq_len,
                               seq_len=cfg.seq_len, split="validation")


def eval_loss(lm: models.LoadedModel, blocks: torch.Tensor, batch_size: int = 16) -> float:
    """Mean next-token loss in nats per byte."""
    return training.mean_loss(lm.model, blocks, batch_size)


def checkpoint(depth: int, cfg: FamilyConfig, seed: int | None = None) -> Path:
    """The member's resumable checkpoint (weights, optimizer, training state)."""
    return folder(cfg) / f"{member_name(depth, _seed(cfg, seed))}.ckpt"


def train(depth: int, cfg: FamilyConfig, seed: int | None = None, *, progress: bool = True,
          stop_after: int | None = None, device: str | None = None) -> dict[str, Any]:
    """Train one member (resuming from its checkpoint if one exists); returns its curve.

    Trains on the GPU when there is one (`device` overrides); the checkpoint is device-free.
    `stop_after` ends the run early after that many steps, as an interruption would (tests).
    """
    seed = _seed(cfg, seed)
    lm = build(depth, cfg, seed, device)
    tok = lm.tokenizer
    train_blocks, val_blocks = _train_blocks(cfg, tok, seed), _eval_blocks(cfg, tok)
    opt = training.adamw(lm.model.parameters(), cfg.lr, cfg.weight_decay)
    run = training.Run(checkpoint(depth, cfg, seed), cfg.steps, progress=progress,
                       desc=f"train depth {depth} seed {seed}", stop_after=stop_after)
    run.resume(lm.model, opt)
    for step in run.steps():
        lm.model.train()
        loss = training.step(lm.model, opt, train_blocks[step].to(lm.device),
                             lr=training.warmup_cosine(step, cfg.steps, cfg.lr, cfg.warmup))
        done = step + 1
        if run.due(done, cfg.eval_every):
            run.log({"step": done, "tokens": done * cfg.batch_size * cfg.seq_len,
                     "train_loss": loss.item(), "val_loss": eval_loss(lm, val_blocks)})
        if run.due(done, cfg.checkpoint_every):
            run.lap()
            run.save(lm.model, opt, done)
    state = run.state
    final = state.curve[-1] if state.curve else {}
    return {"depth": depth, "seed": seed, "params": lm.n_params, "steps_done": state.step,
            "finished": state.step >= cfg.steps, "seconds": state.seconds,
            "val_loss": final.get("val_loss"), "curve": state.curve}


def load_member(depth: int, cfg: FamilyConfig, seed: int | None = None) -> models.LoadedModel:
    """A trained member, retrained from scratch if its weights are not in the cache."""
    path = checkpoint(depth, cfg, seed)
    saved = torch.load(path, weights_only=True, map_location="cpu") if path.is_file() else None
    if saved is None or saved["state"]["step"] < cfg.steps:
        train(depth, cfg, seed)
        saved = torch.load(path, weights_only=True, map_location="cpu")
    lm = build(depth, cfg, seed)
    lm.model.load_state_dict(saved["model"])
    lm.model.eval()
    return lm


def members(cfg: FamilyConfig) -> dict[str, dict[str, int]]:
    """Every depth × seed of the family, by name."""
    return {member_name(d, s): {"depth": d, "seed": s} for s in cfg.seeds for d in cfg.depths}


def stored(cfg: FamilyConfig, profile: str, cache: results.Cache | None = None
           ) -> dict[str, dict[str, Any]]:
    """The members whose results are stored (reading only): another profile's committed
    family, which may be partly trained. Keys as `train_family` stores them."""
    return _member.stored(members(cfg), cfg, profile=profile, show=False, cache=cache)


def train_family(cfg: FamilyConfig, profile: str, cache: results.Cache | None = None,
                 *, progress: bool = True) -> dict[str, dict[str, Any]]:
    """Every depth × seed of the family, each result cached as soon as it finishes (a rerun
    resumes)."""
    return _member.each(members(cfg), cfg, profile=profile, show=progress, cache=cache,
                        progress=progress)


# `show`: the member's own progress bar (`each` takes `progress` for the bar over members)
@results.recorded(FAMILY, context=results.settings_first, ignore=("profile", "show"))
def _member(cfg: FamilyConfig, item: dict[str, int], *, profile: str,
            show: bool) -> dict[str, Any]:
    return train(item["depth"], cfg, item["seed"], progress=show)
