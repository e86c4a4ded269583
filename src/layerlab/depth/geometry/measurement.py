"""Chapters 02 and 03's measurements: which models a profile measures (`model_names`: the
pretrained LLMs, then the depth family as `family-d<depth>`; `control_names`: those that get an
untrained twin), how each is loaded and which text it reads, `measure` (one model's layer-by-layer
statistics and its sample of per-token profiles) and `sequence_stats` (the same statistics
sequence by sequence, the unit of the bootstrap intervals and of the untrained controls), and
`smooth_stream`, P1-A3's positive control measured by the same metric as the models."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import torch

from layerlab import corpus, hidden, models
from layerlab.depth import family
from layerlab.profiles import Profile
from layerlab.settings import GeometrySettings

__all__ = ["FAMILY_PREFIX", "config_for", "model_names", "primary_model", "measure",
           "SEQUENCE_STATS", "PAPER_LAST", "sequence_stats", "paper_last_angles", "control_llms", "control_names",
           "family_control_names", "POSITIVE_WIDTH", "POSITIVE_SEQUENCES", "POSITIVE_TOKENS",
           "POSITIVE_SEED", "smooth_stream"]


FAMILY_PREFIX = "family-d"


def config_for(profile: Profile) -> GeometrySettings:
    """The profile's geometry settings: which text, how much of it, which models get untrained
    controls, and chapter 03's context lengths."""
    return GeometrySettings.from_profile(profile)


def model_names(profile: Profile) -> list[str]:
    """Every model the chapters measure, in order: the pretrained ones (the geometry settings'
    `models`, else the profile's), then the depth family as `family-d<depth>`."""
    cfg = config_for(profile)
    fam = family.config_for(profile)
    return [*(cfg.models or profile.models), *(f"{FAMILY_PREFIX}{d}" for d in fam.depths)]


def primary_model(profile: Profile) -> str:
    """The model that stands in for P1's Pythia-410m in the token-cluster analysis."""
    return config_for(profile).primary or model_names(profile)[0]


def _load(name: str, profile: Profile, cfg: GeometrySettings) -> models.LoadedModel:
    if name.startswith(FAMILY_PREFIX):
        return family.load_member(int(name.removeprefix(FAMILY_PREFIX)), family.config_for(profile))
    dtype = models.resolve_dtype(cfg.torch_dtype)
    if cfg.device_map:
        return models.load(name, dtype=dtype, device_map=cfg.device_map)
    return models.load(name, dtype=dtype, device=models.default_device())


def _batches(lm: models.LoadedModel, profile: Profile, cfg: GeometrySettings):
    """(batches, count): FineWeb documents for the gpu profile (P1's setup), otherwise windows of
    the profile's text; the family reads its own (byte-level) test text."""
    if lm.name.startswith(FAMILY_PREFIX):
        fam = family.config_for(profile)
        blocks = corpus.token_blocks(lm.tokenizer, fam.corpus, n_tokens=cfg.family_tokens,
                                     seq_len=fam.seq_len, split="test")
        return hidden.block_batches(blocks, cfg.batch_size), None
    if cfg.documents:
        n_docs, seq_len, bs = cfg.documents, cfg.seq_len, cfg.batch_size

        def docs() -> Iterator[dict[str, torch.Tensor]]:
            texts: list[str] = []
            for i, text in enumerate(corpus.fineweb_documents()):
                if i >= n_docs:
                    break
                texts.append(text)
                if len(texts) == bs:
                    yield corpus.document_batch(lm.tokenizer, texts, seq_len)
                    texts = []
            if texts:
                yield corpus.document_batch(lm.tokenizer, texts, seq_len)

        return docs(), -(-n_docs // bs)
    blocks = corpus.token_blocks(lm.tokenizer, profile.eval_corpus, n_tokens=cfg.tokens,
                                 seq_len=cfg.seq_len, split="test", add_bos=lm.add_bos)
    return hidden.block_batches(blocks, cfg.batch_size), None


def measure(name: str, profile: Profile) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Statistics (JSON-ready) and the per-token profile sample of one model."""
    cfg = config_for(profile)
    lm = _load(name, profile, cfg)
    batches, total = _batches(lm, profile, cfg)
    out = hidden.collect(lm, batches, profiles=cfg.profiles, seed=0, total=total,
                         layer_by_layer=bool(cfg.device_map))
    arrays = out.pop("profiles")
    out["summary"] = lm.summary()
    arrays["token_text"] = np.array([lm.tokenizer.decode([int(t)]) for t in arrays["token_id"]])
    return out, arrays


SEQUENCE_STATS = ("first_theta", "last_theta", "middle_theta", "middle_rel_update",
                  "middle_theta_dh")
# P1-A1's last angle on the state Hugging Face returns (after the final norm, P1's convention),
# per window: a record of its own (`experiment._paper_last`), so the block-only statistics above
# keep their records
PAPER_LAST = "last_theta_hf"


def _windows(lm: models.LoadedModel, batches, limit: int | None
             ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Per kept sequence (positions ≥ 1, P1's token rule), at most `limit` of them: its states
    in the hf convention [L+1, N, d] (the last after the final norm) and the last block's own
    output [N, d], float32 on the CPU. Every per-window statistic reads the same windows."""
    count = 0
    for batch in batches:
        ids = batch["input_ids"]
        mask = batch.get("attention_mask")
        keep = hidden.kept_positions(mask if mask is not None else torch.ones_like(ids))
        keep[:, 0] = False
        states, raw = hidden.trajectories(lm, ids, mask)
        for b in range(ids.shape[0]):
            if limit is not None and count >= limit:
                return
            sel = keep[b]
            if int(sel.sum()) == 0:
                continue
            count += 1
            yield states[:, b][:, sel], raw[b][sel]


@torch.no_grad()
def sequence_stats(lm: models.LoadedModel, batches, *, limit: int | None = None) -> list[dict]:
    """Per sequence (kept positions ≥ 1, last block's own output as h_L, float32): the mean over
    its tokens of θ(h_l, h_{l+1}) at the first block, the last block and over the middle blocks,
    of the middle relative update and of the middle θ(Δh_l, Δh_{l+1}). Sequences are the unit of
    the bootstrap intervals (tokens of one text are not independent)."""
    L = lm.n_layers
    rows: list[dict] = []
    for states, raw in _windows(lm, batches, limit):
        traj = torch.cat([states[:-1], raw[None]])
        m = {k: v.mean(1).numpy() for k, v in hidden.token_metrics(traj).items()}
        mid, pairs = hidden.middle_layers(L), hidden.middle_pairs(L)
        rows.append({
            "first_theta": float(m["theta"][0]), "last_theta": float(m["theta"][-1]),
            "middle_theta": float(m["theta"][mid].mean()) if L > 2 else float("nan"),
            "middle_rel_update": float(m["rel_update"][mid].mean()) if L > 2 else float("nan"),
            "middle_theta_dh": float(m["theta_dh"][pairs].mean()) if L >= 4 else float("nan"),
            "tokens": int(raw.shape[0]), "layers": L})
    return rows


@torch.no_grad()
def paper_last_angles(lm: models.LoadedModel, batches, *, limit: int | None = None) -> list[dict]:
    """Per sequence, on the windows of `sequence_stats`: the mean over its tokens of the last
    angle θ(h_{L−1}, h_L) with h_L the state Hugging Face returns, after the final norm (P1's
    convention; `sequence_stats` takes the last block's own output). The first and middle
    angles are the same in both conventions."""
    return [{PAPER_LAST: float(hidden.token_metrics(states)["theta"][-1].mean()),
             "tokens": int(raw.shape[0])} for states, raw in _windows(lm, batches, limit)]


def control_llms(profile: Profile) -> list[str]:
    """The pretrained models that get untrained twins (the settings' `control_models`, or every
    model of the profile)."""
    cfg = config_for(profile)
    return list(cfg.control_models if cfg.control_models is not None
                else (cfg.models or profile.models))


def control_names(profile: Profile) -> list[str]:
    """Every model with a sequence-level control: the LLMs (or the settings' `control_models`)
    and each family member of every seed."""
    return control_llms(profile) + family_control_names(profile)


def family_control_names(profile: Profile) -> list[str]:
    """The family members as `controls` names them (`family-dD` is the first seed,
    `family-dD-sS` the others)."""
    fam = family.config_for(profile)
    return [f"{FAMILY_PREFIX}{d}" + ("" if s == fam.seed else f"-s{s}")
            for s in fam.seeds for d in fam.depths]


def _member(name: str) -> tuple[int, int | None]:
    body = name.removeprefix(FAMILY_PREFIX)
    depth, _, seed = body.partition("-s")
    return int(depth), (int(seed) if seed else None)


def _control_model(name: str, profile: Profile, trained: bool) -> models.LoadedModel:
    cfg = config_for(profile)
    if name.startswith(FAMILY_PREFIX):
        depth, seed = _member(name)
        fam = family.config_for(profile)
        return family.load_member(depth, fam, seed) if trained else family.build(depth, fam, seed)
    lm = _load(name, profile, cfg)
    return lm if trained else models.untrained_twin(lm, seed=0)


POSITIVE_WIDTH, POSITIVE_SEQUENCES, POSITIVE_TOKENS, POSITIVE_SEED = 64, 16, 64, 0


def smooth_stream(layers: int, *, width: int = POSITIVE_WIDTH,
                  sequences: int = POSITIVE_SEQUENCES, tokens: int = POSITIVE_TOKENS,
                  seed: int = POSITIVE_SEED) -> np.ndarray:
    """P1-A3's positive control: per sequence, the middle θ(Δh_l, Δh_{l+1}) of a smooth residual
    stream — `layers` Euler steps h_{l+1} = h_l + v(h_l)/ℓ of one smooth random vector field
    v(h) = W₂ tanh(W₁ h) (procedural assembly: consecutive updates aligned by construction),
    measured by `hidden.token_metrics` as the models are. Seeded; float64 arithmetic on float32
    draws, so its numbers do not move with the CPU's float32 kernels (AVX2 and AVX-512 differed
    by 1e-6, above the freshness gate's tolerance for a derived record)."""
    gen = torch.Generator().manual_seed(seed)
    w1 = (torch.randn(width, width, generator=gen) / width ** 0.5).double()
    w2 = (torch.randn(width, width, generator=gen) / width ** 0.5).double()
    out = []
    for _ in range(sequences):
        h = torch.randn(tokens, width, generator=gen).double()
        states = [h]
        for _ in range(layers):
            h = h + torch.tanh(h @ w1.T) @ w2.T / layers
            states.append(h)
        theta_dh = hidden.token_metrics(torch.stack(states), torch.float64)["theta_dh"]
        out.append(float(theta_dh[hidden.middle_pairs(layers)].mean()))
    return np.array(out)
