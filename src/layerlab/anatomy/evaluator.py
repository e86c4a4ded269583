"""Per-sentence negative log-likelihood of an evaluation set, fast enough to evaluate one edit
per layer of a 30-layer model.

An edit of layer l cannot change what enters layer l, so the evaluator runs the unedited model
once, keeps the residual stream entering every block, and evaluates an edit by running the
model's own forward pass from block l on (`models.resumed_at`: blocks 0 … l−1 compute nothing,
block l reads the kept state), so its masks, rotary embeddings and head (final norm, Granite's
logit scaling, Gemma 2's soft-cap, ...) are the model's own. `resume=False` runs the whole
model every time instead (for sets whose states would not fit in memory); both paths give the
same numbers (tested on every tested architecture).

Used by chapters 05, 06, 07 and 09.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from layerlab import models
from layerlab.anatomy import edits
from layerlab.anatomy.evalsets import EvalSet
from layerlab.models import LoadedModel

__all__ = ["STATE_BUDGET_BYTES", "Evaluator", "make_batches", "Scores"]

STATE_BUDGET_BYTES = 4 * 2**30  # keep block inputs when they fit in this much memory


@dataclass
class Scores:
    """Summed NLL (nats) and predicted-token count of every sentence, in the set's order; the
    unedited model's scores of a set resampled by document also carry each sentence's document
    (`units`), which every interval over that set resamples."""

    nll: np.ndarray
    tokens: np.ndarray
    units: np.ndarray | None = None

    @property
    def ppl(self) -> float:
        """Token-pooled perplexity exp(Σ NLL / Σ tokens)."""
        return math.exp(self.nll.sum() / self.tokens.sum())

    @property
    def mean_sentence_ppl(self) -> float:
        """Mean over sentences of each sentence's own perplexity."""
        return float(np.mean(np.exp(self.nll / self.tokens)))

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the results cache: NLLs rounded to 5 decimals, token counts, and the
        two perplexities for a reader of the stored file."""
        units = {} if self.units is None else {"units": [int(u) for u in self.units]}
        return {"nll": [round(float(x), 5) for x in self.nll],
                "tokens": [int(x) for x in self.tokens], **units, "ppl": self.ppl,
                "mean_sentence_ppl": self.mean_sentence_ppl}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Scores":
        """Scores back from `to_dict`'s form; the stored perplexities are not read but
        recomputed from the NLLs."""
        units = np.asarray(d["units"], dtype=np.int64) if "units" in d else None
        return cls(np.asarray(d["nll"], dtype=np.float64), np.asarray(d["tokens"], dtype=np.int64),
                   units)


@dataclass
class _Batch:
    index: torch.Tensor  # positions of its sentences in the set
    ids: torch.Tensor  # [b, T], right-padded with 0
    mask: torch.Tensor  # [b, T], 1 on real tokens


def make_batches(ids: list[list[int]], batch_tokens: int) -> list[_Batch]:
    """Sentences sorted by length and packed so that a padded batch holds ≤ batch_tokens tokens."""
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
    batches, current = [], []
    for i in order:
        if current and (len(current) + 1) * len(ids[i]) > batch_tokens:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    out = []
    for members in batches:
        width = max(len(ids[i]) for i in members)
        x = torch.zeros(len(members), width, dtype=torch.long)
        m = torch.zeros_like(x)
        for row, i in enumerate(members):
            x[row, : len(ids[i])] = torch.tensor(ids[i])
            m[row, : len(ids[i])] = 1
        out.append(_Batch(torch.tensor(members), x, m))
    return out


def _sentence_nll(logits: torch.Tensor, batch: _Batch) -> torch.Tensor:
    ids = batch.ids.to(logits.device)
    mask = batch.mask[:, 1:].to(logits.device)
    # flattened rows: cross_entropy over a transposed [b, V, T] view is ~9x slower on CPU
    b, t = ids.shape[0], ids.shape[1] - 1
    nll = F.cross_entropy(logits[:, :-1].reshape(b * t, -1).float(), ids[:, 1:].reshape(-1),
                          reduction="none").view(b, t)
    nll = (nll * mask).sum(dim=1)
    if not torch.isfinite(nll).all():
        raise FloatingPointError("non-finite loss: the edited model produced NaN or inf logits")
    return nll.double().cpu()


class Evaluator:
    """Scores of one evaluation set under the model as it is, or under an edit."""

    def __init__(self, lm: LoadedModel, evalset: EvalSet, *, batch_tokens: int = 2048,
                 resume: bool | None = None, progress: bool = False) -> None:
        self.lm = lm
        self.evalset = evalset
        self.batches = make_batches(evalset.ids, batch_tokens)
        padded = sum(b.ids.numel() for b in self.batches)
        state_bytes = padded * lm.d_model * 4 * lm.n_layers
        self.resume = state_bytes <= STATE_BUDGET_BYTES if resume is None else resume
        self.progress = progress
        self._states: list[list[torch.Tensor]] | None = None  # [batch][block] block inputs
        self._base: Scores | None = None

    def _logits(self, batch: _Batch) -> torch.Tensor:
        """A full forward pass of one padded batch."""
        return self.lm.model(input_ids=batch.ids.to(self.lm.device),
                             attention_mask=batch.mask.to(self.lm.device), use_cache=False).logits

    # -- the unedited model, and its block inputs -------------------------------------------
    @torch.no_grad()
    def _capture(self) -> Scores:
        if edits.active(self.lm) is not None:
            raise RuntimeError("capture the evaluator's base states before applying any edit")
        states: list[list[torch.Tensor]] = []
        nll = torch.zeros(len(self.evalset.ids), dtype=torch.float64)
        for batch in self.batches:
            calls: list[torch.Tensor] = []

            def keep(_module: Any, args: tuple, kwargs: dict) -> None:
                hidden = args[0] if args else kwargs["hidden_states"]
                calls.append(hidden.detach())  # noqa: B023 - runs in this iteration

            handles = [b.register_forward_pre_hook(keep, with_kwargs=True)
                       for b in self.lm.blocks] if self.resume else []
            try:
                logits = self._logits(batch)
            finally:
                for h in handles:
                    h.remove()
            nll[batch.index] = _sentence_nll(logits, batch)
            states.append(calls)
        self._states = states if self.resume else None
        return self._scores(nll)

    def _scores(self, nll: torch.Tensor) -> Scores:
        tokens = np.array([len(s) - 1 for s in self.evalset.ids], dtype=np.int64)
        return Scores(nll.numpy(), tokens)

    def base(self) -> Scores:
        """Scores of the unedited model (computed once), with the set's documents when it has
        them."""
        if self._base is None:
            self._base = self._capture()
            if self.evalset.units is not None:
                self._base.units = np.asarray(self.evalset.units, dtype=np.int64)
        return self._base

    # -- edited models -------------------------------------------------------------------------
    @torch.no_grad()
    def _run_from(self, start: int) -> Scores:
        from layerlab.progress import tqdm

        nll = torch.zeros(len(self.evalset.ids), dtype=torch.float64)
        for b, batch in enumerate(tqdm(self.batches, disable=not self.progress, leave=False)):
            if self._states is None or start == 0:
                logits = self._logits(batch)
            else:  # the model's own forward from block `start`, fed the kept state
                with models.resumed_at(self.lm, start, self._states[b][start]):
                    logits = self._logits(batch)
            nll[batch.index] = _sentence_nll(logits, batch)
        return self._scores(nll)

    def current(self, start_layer: int = 0) -> Scores:
        """Scores of the model as it is now (e.g. during fine-tuning), rerunning blocks from
        `start_layer`; the caller guarantees that no layer below it has changed since `base()`."""
        self.base()
        return self._run_from(start_layer if self.resume else 0)

    def evaluate(self, edit: edits.Edit | None = None) -> Scores:
        """Scores with `edit` applied (restored exactly afterwards); None gives the base scores."""
        self.base()  # block inputs must come from the unedited model
        if edit is None:
            return self._run_from(0)
        start = min(edit.layers) if self.resume else 0
        with edits.applied(self.lm, edit):
            return self._run_from(start)
