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
from typing import Any, Iterator

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from layerlab import models

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
    final = ce[-1]
    early = ce[mid] <= final + margin
    return {"layers": L, "tokens": int(ce.shape[1]), "mean": ce.mean(1).tolist(),
            "q25": np.percentile(ce, 25, axis=1).tolist(),
            "median": np.median(ce, axis=1).tolist(),
            "q75": np.percentile(ce, 75, axis=1).tolist(), "middle_layer": mid,
            "margin": margin, "early_share": float(early.mean()),
            # gradual: the share of the mean CE drop (first → final) done by the middle
            "drop_by_middle": drop_by_middle(ce.mean(1), mid)}


MIN_DROP = 0.05  # nats: a smaller fall of the mean CE from first to last is no drop at all


def drop_by_middle(mean_ce, mid: int) -> float:
    """(CE_0 − CE_mid) / (CE_0 − CE_final); NaN when the CE falls by less than `MIN_DROP`
    (an untrained stack's flat curve would otherwise give a ratio of noise)."""
    mean_ce = np.asarray(mean_ce, dtype=float)
    total = mean_ce[0] - mean_ce[-1]
    return float((mean_ce[0] - mean_ce[mid]) / total) if total > MIN_DROP else float("nan")


# --- every model of a profile -------------------------------------------------------------------
EXPERIMENT = "ce_lens"


def run(profile, cache=None, *, progress: bool = True, only: list[str] | None = None):
    """The lens on every LLM of the profile and the first-seed family members with a middle,
    each beside its untrained twin; one row per (model, trained), cached model by model."""
    from tqdm.auto import tqdm

    from layerlab import corpus, results
    from layerlab.depth import family, geometry

    cache = cache or results.Cache(profile.name)
    cfg, fam = geometry.config_for(profile), family.config_for(profile)
    llms = geometry.control_llms(profile)
    members = [f"{geometry.FAMILY_PREFIX}{d}" for d in fam.depths if d >= 4]
    rows = []
    for name in tqdm(only or [*llms, *members], desc="lens", disable=not progress):
        key = {**geometry._cache_key(profile, name), "tokens": cfg.lens_tokens, "margin": MARGIN}
        for trained in (True, False):
            item = f"{name}-{'trained' if trained else 'untrained'}"
            value = cache.get(EXPERIMENT, key, item)
            if value is None:
                cache.may_compute(f"{EXPERIMENT}/{item}")
                lm = geometry._control_model(name, profile, trained)
                if name.startswith(geometry.FAMILY_PREFIX):
                    blocks = corpus.token_blocks(lm.tokenizer, fam.corpus, n_tokens=cfg.lens_tokens,
                                                 seq_len=fam.seq_len, split="test")
                else:
                    blocks = corpus.token_blocks(lm.tokenizer, profile.eval_corpus,
                                                 n_tokens=cfg.lens_tokens, seq_len=cfg.seq_len,
                                                 split="test", add_bos=lm.add_bos)
                value = cache.put(EXPERIMENT, key, lens_stats(lm, blocks, batch_size=cfg.batch_size),
                                  item=item)
                del lm
            rows.append({"model": name, "trained": trained, **value})
    return pd.DataFrame(rows)


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
    return pd.DataFrame({"layers": t["layers"], "early_share": t["early_share"],
                         "drop_by_middle": t["drop_by_middle"],
                         "untrained_early_share": u["early_share"],
                         "untrained_drop_by_middle": u["drop_by_middle"]}
                        ).rename_axis("model").reset_index()


# --- the verdict --------------------------------------------------------------------------------
EARLY_MAX = 0.05  # "a small minority" of early stoppers
GRADUAL = (0.2, 0.8)  # share of the CE drop done by the middle of the stack


def lens_rule(early_share: float, drop: float) -> str:
    """P1's "no early stopping" on one model: few early stoppers, and a gradual CE drop."""
    from layerlab.claims import NOT_REPRODUCED, PARTLY, REPRODUCED

    few = early_share <= EARLY_MAX
    gradual = bool(np.isfinite(drop) and GRADUAL[0] <= drop <= GRADUAL[1])
    return REPRODUCED if few and gradual else PARTLY if few or gradual else NOT_REPRODUCED


def assess(table, setting: str):
    """P1-A4 from `table` (one row per model: early_share, drop_by_middle, and the same for its
    untrained twin as untrained_early_share, untrained_drop_by_middle)."""
    from layerlab.claims import NOT_DIAGNOSTIC, NOT_TESTABLE, PARTLY, REPRODUCED, Claim, combine

    per = {}
    for r in table.itertuples():
        trained = lens_rule(r.early_share, r.drop_by_middle)
        control = lens_rule(r.untrained_early_share, r.untrained_drop_by_middle)
        per[r.model] = NOT_DIAGNOSTIC if control in (REPRODUCED, PARTLY) and trained == control \
            else trained
    return Claim(
        "P1-A4-no-early-stopping", "P1", "02_hidden_state_geometry",
        "Almost no token stops early: fed through the last block, the hidden state's prediction "
        "improves gradually over the middle layers (the last-block CE lens)",
        "gradual CE decrease for the bulk of tokens (§2.5, Fig. 2)",
        "; ".join(f"{r.model}: {100 * r.early_share:.1f} % early, {r.drop_by_middle:.2f} of the "
                  f"CE drop by mid-depth (untrained {100 * r.untrained_early_share:.1f} %, "
                  f"{r.untrained_drop_by_middle:.2f})" for r in table.itertuples()),
        f"per model: at most {100 * EARLY_MAX:.0f} % of tokens within {MARGIN} nats of their "
        f"final CE at mid-depth, and {GRADUAL[0]}–{GRADUAL[1]} of the mean CE drop done by then "
        "(one of the two → partly); not diagnostic where the untrained twin gives the same verdict",
        combine(list(per.values())) if per else NOT_TESTABLE, setting, {"per_model": per})
