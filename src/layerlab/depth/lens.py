"""Chapter 02: P1's last-block cross-entropy lens (research/paper1.md §2.5), the direct test of
"no early stopping".

For l < L − 1 the residual stream h_l (after l blocks) is fed straight into the *last* block, then
the final norm and the head: the model with blocks l+1 … L−1 skipped. For l = L − 1 it is the
model itself. The cross-entropy of the true next token against l says how much of the
prediction is ready after l blocks. A token whose CE is already within `margin` nats of its final
CE by the middle of the stack has stopped early.

Skipping is done by running the model with a shortened block list (`skipped`), so every
architecture's own masks and rotary embeddings apply unchanged.

Used by chapter 02.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from layerlab import corpus, models, results
from layerlab.depth import family, geometry
from layerlab.profiles import Profile

__all__ = ["EXPERIMENT", "MARGIN", "MIN_DROP", "assess", "curves", "drop_by_middle", "early_share",
           "early_stopping_curves", "lens_stats", "positive_estimate", "run", "skipped", "summary",
           "token_ce", "units", "wilson", "LensStats"]

MARGIN = 0.1  # nats: "within the margin of the final CE"


@contextlib.contextmanager
def skipped(lm: models.LoadedModel, keep: list[int]) -> Iterator[models.LoadedModel]:
    """The model with only the blocks `keep` (in order); restored on exit."""
    original = OrderedDict(lm.blocks._modules)
    config = lm.model.config
    n_attr = "num_hidden_layers"
    n_before = getattr(config, n_attr, None)
    try:
        lm.blocks._modules = OrderedDict((str(i), original[str(k)]) for i, k in enumerate(keep))
        if n_before is not None:
            setattr(config, n_attr, len(keep))
        yield lm
    finally:
        lm.blocks._modules = original
        if n_before is not None:
            setattr(config, n_attr, n_before)


@torch.no_grad()
def token_ce(lm: models.LoadedModel, input_ids: torch.Tensor) -> torch.Tensor:
    """[L, B, T−1]: the lens CE of every next token after l = 0 … L−1 blocks."""
    L = lm.n_layers
    ids = input_ids.to(lm.device)
    out = []
    for l in range(L):
        with skipped(lm, [*range(l), L - 1]):
            logits = lm.model(input_ids=ids, use_cache=False).logits.float()
        out.append(F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:],
                                   reduction="none").cpu())
    return torch.stack(out)


def lens_stats(lm: models.LoadedModel, blocks: torch.Tensor, *, batch_size: int = 2,
               margin: float = MARGIN) -> dict[str, Any]:
    """Per layer: mean and quartiles of the lens CE (positions ≥ 1); per token: the share whose
    CE at the middle of the stack is within `margin` of its final CE (early stoppers)."""
    ce = torch.cat([token_ce(lm, blocks[i : i + batch_size])[:, :, 1:].flatten(1)
                    for i in range(0, len(blocks), batch_size)], dim=1).numpy()  # [L, N]
    if not np.isfinite(ce).all():
        raise FloatingPointError(f"{lm.name}: the lens produced non-finite cross-entropies")
    L = ce.shape[0]
    mid = L // 2
    return {"layers": L, "tokens": int(ce.shape[1]), "mean": ce.mean(1).tolist(),
            "q25": np.percentile(ce, 25, axis=1).tolist(),
            "median": np.median(ce, axis=1).tolist(),
            "q75": np.percentile(ce, 75, axis=1).tolist(), "middle_layer": mid,
            "margin": margin, "early_share": early_share(ce, margin),
            # gradual: the share of the mean CE drop (first → final) done by the middle
            "drop_by_middle": drop_by_middle(ce.mean(1), mid)}


def early_share(ce: np.ndarray, margin: float = MARGIN) -> float:
    """The share of tokens (columns of `ce` [L, N]) whose CE at mid-depth (l = ⌊L/2⌋) is within
    `margin` of their final CE: the early stoppers."""
    ce = np.asarray(ce, dtype=float)
    return float((ce[ce.shape[0] // 2] <= ce[-1] + margin).mean())


MIN_DROP = 0.05  # nats: a smaller fall of the mean CE from first to last is no drop at all


def drop_by_middle(mean_ce, mid: int) -> float:
    """(CE_0 − CE_mid) / (CE_0 − CE_final); NaN when the CE falls by less than `MIN_DROP`
    (an untrained stack's flat curve would otherwise give a ratio of noise)."""
    mean_ce = np.asarray(mean_ce, dtype=float)
    total = mean_ce[0] - mean_ce[-1]
    return float((mean_ce[0] - mean_ce[mid]) / total) if total > MIN_DROP else float("nan")


# --- every model of a profile -------------------------------------------------------------------
EXPERIMENT = "ce_lens"


@dataclass(frozen=True, eq=False)
class LensStats:
    """The lens on one model, trained or untrained (`lens_stats`)."""

    layers: int
    tokens: int  # predicted tokens (positions ≥ 1)
    mean: list[float]  # per layer: the lens CE's mean and quartiles
    q25: list[float]
    median: list[float]
    q75: list[float]
    middle_layer: int  # ⌊L/2⌋
    margin: float  # nats: an early stopper's CE at the middle is within this of its final CE
    early_share: float  # the share of early stoppers
    drop_by_middle: float  # the share of the mean CE drop done by the middle (NaN: no drop)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> LensStats:
        """Read back a stored record (`lens_stats`'s fields)."""
        return cls(**{f: record[f] for f in cls.__dataclass_fields__})


# keyed like chapter 02's other per-model records (`geometry.model_context`), one per condition
@results.recorded(EXPERIMENT, context=geometry.model_context, ignore=("name", "trained"),
                  record=geometry.condition, decode=LensStats.from_record)
def _lens(profile: Profile, name: str, trained: bool, *, tokens: int,
          margin: float) -> dict[str, Any]:
    cfg = geometry.config_for(profile)
    lm = geometry.measurement._control_model(name, profile, trained)
    if name.startswith(geometry.FAMILY_PREFIX):
        fam = family.config_for(profile)
        blocks = corpus.token_blocks(lm.tokenizer, fam.corpus, n_tokens=tokens,
                                     seq_len=fam.seq_len, split="test")
    else:
        blocks = corpus.token_blocks(lm.tokenizer, profile.eval_corpus, n_tokens=tokens,
                                     seq_len=cfg.seq_len, split="test", add_bos=lm.add_bos)
    return lens_stats(lm, blocks, batch_size=cfg.batch_size, margin=margin)


def run(profile: Profile, cache: results.Cache | None = None, *, progress: bool = True,
        only: list[str] | None = None) -> pd.DataFrame:
    """The lens on every LLM of the profile and the first-seed family members with a middle,
    each beside its untrained twin; one row per (model, trained) with its `LensStats`, cached
    model by model."""
    from layerlab.progress import tqdm

    cfg, fam = geometry.config_for(profile), family.config_for(profile)
    llms = geometry.control_llms(profile)
    members = [f"{geometry.FAMILY_PREFIX}{d}" for d in fam.depths if d >= 4]
    return pd.DataFrame([
        {"model": name, "trained": trained,
         **asdict(_lens(profile, name, trained, tokens=cfg.lens_tokens, margin=MARGIN,
                        cache=cache))}
        for name in tqdm(only or [*llms, *members], desc="lens", disable=not progress)
        for trained in (True, False)])


def curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Long table for the chart: mean and quartiles of the lens CE against l/L."""
    return pd.DataFrame([{"model": r.model, "condition": "trained" if r.trained else "untrained",
                          "depth": l / max(1, r.layers - 1), "layer": l, "mean": m, "q25": a, "q75": b}
                         for r in runs.itertuples()
                         for l, (m, a, b) in enumerate(zip(r.mean, r.q25, r.q75))])


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per model: its early-stopper share and CE drop by mid-depth, beside the twin's."""
    # the drop is recomputed from the stored curves, so the rule's threshold lives in code
    runs = runs.assign(drop_by_middle=[drop_by_middle(r.mean, r.middle_layer)
                                       for r in runs.itertuples()])
    t = runs[runs["trained"]].set_index("model")
    u = runs[~runs["trained"]].set_index("model")
    return pd.DataFrame({"layers": t["layers"], "tokens": t["tokens"],
                         "early_share": t["early_share"],
                         "drop_by_middle": t["drop_by_middle"],
                         "untrained_early_share": u["early_share"],
                         "untrained_drop_by_middle": u["drop_by_middle"]}
                        ).rename_axis("model").reset_index()


# --- the verdict --------------------------------------------------------------------------------
def wilson(share: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson 95 % interval of a binomial share of `n` trials."""
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


POSITIVE_EARLY, POSITIVE_NOISE, POSITIVE_SEED = 0.25, 0.05, 0


def early_stopping_curves(layers: int, tokens: int, *, early: float = POSITIVE_EARLY,
                          noise: float = POSITIVE_NOISE, seed: int = POSITIVE_SEED) -> np.ndarray:
    """P1-A4's positive control: lens CE curves [layers, tokens] of a population with known early
    stoppers. Every token falls from a start 2–6 nats above its final CE (1–6 nats); a share
    `early` of them (compositional assembly's easy tokens) is done by a quarter of the depth,
    the rest fall evenly to the last layer; Gaussian noise of `noise` nats on every value."""
    rng = np.random.default_rng(seed)
    final = rng.uniform(1.0, 6.0, tokens)
    start = final + rng.uniform(2.0, 6.0, tokens)
    depth = np.arange(layers)[:, None] / max(1, layers - 1)
    quarter = max(1, layers // 4) / max(1, layers - 1)
    progress = np.where(rng.random(tokens) < early, np.minimum(1.0, depth / quarter), depth)
    return start + (final - start) * progress + rng.normal(0.0, noise, (layers, tokens))


def positive_estimate(layers: int, tokens: int):
    """The early-stopper share of `early_stopping_curves` at the unit's depth and token count,
    with the same count (`early_share`) and interval (`wilson`) as the models."""
    from layerlab.claims import Estimate

    share = early_share(early_stopping_curves(layers, tokens))
    return Estimate(share, *wilson(share, tokens))


def _finite(value: Any) -> bool:
    try:
        return bool(np.isfinite(float(value)))
    except (TypeError, ValueError):
        return False


def _drop(x: float) -> str:
    return f"{x:.2f}" if _finite(x) else "no drop"


def units(table: pd.DataFrame, positive=None, losses: pd.DataFrame | None = None) -> list:
    """P1-A4: one unit per model: its early-stopper share with a Wilson interval over its tokens,
    the share of the CE drop done by mid-depth as the secondary "gradual" (exact: the record
    keeps only the mean curve), and the synthetic early-stopping population of the same depth
    and token count as the positive control (or `positive` for every unit). The family's units
    also need a family where depth buys loss over the depths the lens reads
    (`geometry.depth_buys_loss` on `losses`, every seed trained at those depths)."""
    from layerlab.claims import Estimate, Unit

    if table.empty:
        return [Unit(name="no model", primary=None, precondition="no model ran the lens")]
    out = []
    for r in table.itertuples():
        tokens, drop = getattr(r, "tokens", np.nan), r.drop_by_middle
        pre = None
        if not _finite(tokens) or int(tokens) < 1:
            pre = "the lens record gives no token count: no interval"
        elif not _finite(drop):
            pre = (f"the lens CE falls by less than {MIN_DROP} nats from the first to the last "
                   "layer: nothing to stop early from")
        primary = (Estimate(float(r.early_share), *wilson(float(r.early_share), int(tokens)))
                   if _finite(tokens) and int(tokens) >= 1 else None)
        control = positive if positive is not None else (
            positive_estimate(int(r.layers), int(tokens)) if primary is not None else None)
        out.append(Unit(name=r.model, primary=primary, precondition=pre, control=control,
                        secondary={"gradual": Estimate.exact(float(drop))} if _finite(drop) else {}))
    return geometry.with_family_precondition(out, losses)


def assess(table, setting: str, *, positive=None, losses: pd.DataFrame | None = None):
    """P1-A4 (an absence claim) from `table` (one row per model: layers, tokens, early_share,
    drop_by_middle, and its untrained twin's untrained_early_share, untrained_drop_by_middle):
    per model the early-stopper share's interval inside [0, 4 %] and the CE drop by mid-depth in
    [0.25, 0.75], where synthetic curves with a quarter of early stoppers (the positive control;
    `positive` overrides it) must fall outside; the family's units only where depth buys loss
    over the depths the lens reads (`losses`: the family's final validation losses). The
    untrained twin is shown beside."""
    from layerlab import claims
    from layerlab.depth.declarations import DECLARATIONS

    found = units(table, positive, losses)
    est = {u.name: u for u in found}

    def words(r) -> str:
        u = est.get(r.model)  # a family member is part of the family's one unit
        share = (f"{100 * r.early_share:.1f} % early [{100 * u.primary.lo:.1f}, "
                 f"{100 * u.primary.hi:.1f}]" if u is not None and u.primary is not None
                 else f"{100 * r.early_share:.1f} % early")
        pos = (f"; synthetic early stoppers {100 * u.control.point:.0f} %"
               if u is not None and u.control else "")
        return (f"{r.model}: {share}, {_drop(r.drop_by_middle)} of the CE drop by mid-depth "
                f"(untrained {100 * r.untrained_early_share:.1f} %, "
                f"{_drop(r.untrained_drop_by_middle)}{pos})")

    decl = DECLARATIONS["P1-A4-no-early-stopping"]
    decision = claims.decide(decl, found)
    ours = "; ".join(words(r) for r in table.itertuples()) or "no model"
    family = next((u.precondition for u in found
                   if u.name.startswith("family") and u.precondition), None)
    if family:
        ours += f"; the family's units: {family}"
    return claims.make(
        decl, decision, ours=ours,
        setting=setting,
        numbers={"per_model": {n: str(v) for n, (v, _) in decision.units.items()},
                 "early_share": {u.name: [u.primary.point, u.primary.lo, u.primary.hi]
                                 for u in found if u.primary is not None},
                 "drop_by_middle": {r.model: float(r.drop_by_middle) for r in table.itertuples()},
                 "untrained_early_share": {r.model: float(r.untrained_early_share)
                                           for r in table.itertuples()},
                 "positive_control": {u.name: [u.control.point, u.control.lo, u.control.hi]
                                      for u in found if u.control is not None}})
