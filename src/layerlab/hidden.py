"""Streaming statistics of the residual stream, layer by layer (P1 §2).

For every kept token and layer, in float32:

- `theta[l]`      θ(h_l, h_{l+1}), l = 0..L−1: the rotation block l+1 applies;
- `theta_dh[l]`   θ(Δh_l, Δh_{l+1}), Δh_l = h_{l+1} − h_l, l = 0..L−2: consecutive updates;
- `rel_update[l]` ‖Δh_l‖ / ‖h_l‖;
- `norms[l]`      ‖h_l‖, l = 0..L;
- `progress[l]`   s_l = ⟨h_l − h_0, h_L − h_0⟩ / ‖h_L − h_0‖² (0 at the embedding, 1 at the end);
- `angle_to_end[l]` θ(h_l, h_L).

Tokens stream through in chunks; per layer only sums and fixed-bin histograms are kept (means and
quantiles), plus a seeded sample of per-token profiles for the PCA of chapter 03. Memory depends on
the chunk, never on the number of tokens.

Two conventions are reported side by side, as the papers' figures mix them: `hf`, where h_L is
Hugging Face's last hidden state (after the final norm), and `raw`, where h_L is the last block's
own output. And two token sets: all kept positions, and positions ≥ 1 (position 0 is often an
attention sink with an outsized norm). A token at position t is kept when t and t+1 are both real
(P1's rule), so the last token of each sequence is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import torch

from layerlab import models

METRICS = ("theta", "theta_dh", "rel_update", "norms", "progress", "angle_to_end")
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
# Fixed histogram ranges per metric: (low, high, bins, log10-scaled?)
BINS: dict[str, tuple[float, float, int, bool]] = {
    "theta": (0.0, math.pi, 720, False),
    "theta_dh": (0.0, math.pi, 720, False),
    "angle_to_end": (0.0, math.pi, 720, False),
    "rel_update": (-5.0, 3.0, 800, True),
    "norms": (-3.0, 7.0, 1000, True),
    "progress": (-2.0, 3.0, 1000, False),
}
EPS = 1e-12


def _arccos_ratio(dot: torch.Tensor, na: torch.Tensor, nb: torch.Tensor) -> torch.Tensor:
    return torch.arccos((dot / (na * nb).clamp_min(EPS)).clamp(-1.0, 1.0))


def _shared(body: torch.Tensor) -> dict[str, torch.Tensor]:
    """Everything about states h_0..h_{L−1} that does not involve the last state."""
    dh = body[1:] - body[:-1]
    return {"body": body, "nb": body.norm(dim=-1), "dh": dh, "ndh": dh.norm(dim=-1),
            "dot_hh": (body[:-1] * body[1:]).sum(-1), "dot_dd": (dh[:-1] * dh[1:]).sum(-1)}


def _with_ends(sh: dict[str, torch.Tensor], ends: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """Per-token metrics given the shared part and each choice of the last state h_L.

    The statistics must cost little beside the forward pass, so each reduction over [L, N, d] is
    one pass: neighbour dot products once, and the dot products of every state and update with
    all candidate ends in one batched matrix product. The progress is a cumulative sum of
    ⟨Δh_k, h_L − h_0⟩, exact at both ends.
    """
    body, nb, dh, ndh = sh["body"], sh["nb"], sh["dh"], sh["ndh"]
    E = torch.stack(ends, dim=-1)  # [N, d, C]
    dot_body_end = torch.bmm(body.transpose(0, 1), E)  # [N, L, C]: ⟨h_l, end⟩
    dot_dh_start = torch.bmm(dh.transpose(0, 1), body[0].unsqueeze(-1))[..., 0]  # [N, L−1]
    dot_dh_end = torch.bmm(dh.transpose(0, 1), E)  # [N, L−1, C]
    out = []
    for c, end in enumerate(ends):
        last_dh = end - body[-1]
        n_end, n_last_dh = end.norm(dim=-1), last_dh.norm(dim=-1)
        span = end - body[0]
        # ⟨Δh_k, span⟩ = ⟨Δh_k, end⟩ − ⟨Δh_k, h_0⟩
        steps = torch.cat([(dot_dh_end[..., c] - dot_dh_start).T,
                           (last_dh * span).sum(-1)[None]])
        progress = torch.cat([torch.zeros_like(n_end)[None], steps.cumsum(0)]) / (
            (span * span).sum(-1) + 1e-10)
        all_dh_norms = torch.cat([ndh, n_last_dh[None]])
        dot_dd = sh["dot_dd"]
        if len(body) >= 2:
            dot_dd = torch.cat([dot_dd, (dh[-1] * last_dh).sum(-1)[None]])
        dot_end = dot_body_end[..., c].T  # [L, N]
        out.append({
            "theta": _arccos_ratio(torch.cat([sh["dot_hh"], dot_end[-1:]]), nb,
                                   torch.cat([nb[1:], n_end[None]])),
            "theta_dh": _arccos_ratio(dot_dd, all_dh_norms[:-1], all_dh_norms[1:]),
            "rel_update": all_dh_norms / nb.clamp_min(EPS),
            "norms": torch.cat([nb, n_end[None]]),
            "progress": progress,
            "angle_to_end": _arccos_ratio(dot_end, nb, n_end.expand_as(nb)),
        })
    return out


def token_metrics(traj: torch.Tensor, dtype: torch.dtype = torch.float32
                  ) -> dict[str, torch.Tensor]:
    """Per-token metrics of one trajectory [L+1, N, d], computed in `dtype` (float32 for a model's
    states; float64 for a synthetic stream whose numbers must not depend on the CPU's float32
    kernels); each value is [K, N]."""
    h = traj.to(dtype)
    return _with_ends(_shared(h[:-1]), [h[-1]])[0]


def layer_angles(hidden_states: Iterable[torch.Tensor]) -> dict[str, np.ndarray]:
    """Mean θ(h_l, h_{l+1}) (length L) and θ(Δh_l, Δh_{l+1}) (length L−1) over every token of a
    batch, in radians. `hidden_states` are the L+1 states, each [batch, tokens, width]."""
    states = [torch.as_tensor(h).float() for h in hidden_states]
    if len(states) < 3:
        raise ValueError("need at least 3 states (2 layers) for consecutive-update angles")
    traj = torch.stack([s.reshape(-1, s.shape[-1]) for s in states])
    m = token_metrics(traj)
    return {"theta": m["theta"].mean(1).numpy(), "theta_dh": m["theta_dh"].mean(1).numpy()}


class _Histograms:
    """Per-layer sums, counts and fixed-bin histograms of one metric."""

    def __init__(self, name: str, n_rows: int):
        lo, hi, bins, log = BINS[name]
        self.lo, self.hi, self.bins, self.log = lo, hi, bins, log
        self.counts = np.zeros((n_rows, bins + 2), dtype=np.int64)  # + under/overflow
        self.sums = np.zeros(n_rows, dtype=np.float64)
        self.n = np.zeros(n_rows, dtype=np.int64)
        self.nonfinite = 0

    def add(self, values: torch.Tensor) -> None:
        v = values.double()
        finite = torch.isfinite(v)
        self.nonfinite += int((~finite).sum())
        v = torch.where(finite, v, torch.zeros_like(v))
        self.sums += (v * finite).sum(1).numpy()
        self.n += finite.sum(1).numpy()
        x = torch.log10(v.clamp_min(1e-30)) if self.log else v
        idx = ((x - self.lo) / (self.hi - self.lo) * self.bins).floor().long() + 1
        idx = idx.clamp(0, self.bins + 1)
        idx = torch.where(finite, idx, torch.zeros_like(idx))
        rows = torch.arange(v.shape[0]).unsqueeze(1).expand_as(idx)
        flat = torch.zeros(v.shape[0] * (self.bins + 2), dtype=torch.long)
        flat.index_add_(0, (rows * (self.bins + 2) + idx)[finite], torch.ones(int(finite.sum()),
                                                                                dtype=torch.long))
        self.counts += flat.view(v.shape[0], self.bins + 2).numpy()

    def quantile(self, q: float) -> np.ndarray:
        """Bin-centre quantiles (resolution: one bin), per row."""
        inner = self.counts[:, 1:-1]
        cum = np.cumsum(self.counts, axis=1)
        total = cum[:, -1:]
        pos = (cum >= q * np.maximum(total, 1)).argmax(axis=1)
        centre = self.lo + (np.clip(pos, 1, self.bins) - 0.5) * (self.hi - self.lo) / self.bins
        out = 10**centre if self.log else centre
        return np.where(inner.sum(1) > 0, out, np.nan)

    def summary(self) -> dict[str, list]:
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = self.sums / self.n
        out = {"mean": mean.tolist(), "count": self.n.tolist(), "nonfinite": self.nonfinite}
        for q in QUANTILES:
            out[f"q{int(q * 100):02d}"] = self.quantile(q).tolist()
        return out


class StatsAccumulator:
    """Streaming per-layer statistics for one convention, on two token sets (all, positions ≥ 1)."""

    def __init__(self, n_layers: int):
        rows = {"theta": n_layers, "theta_dh": n_layers - 1, "rel_update": n_layers,
                "norms": n_layers + 1, "progress": n_layers + 1, "angle_to_end": n_layers}
        self.groups = {g: {m: _Histograms(m, rows[m]) for m in METRICS} for g in ("all", "pos_ge_1")}
        self.tokens = {"all": 0, "pos_ge_1": 0}

    def add(self, metrics: dict[str, torch.Tensor], positions: torch.Tensor) -> None:
        later = positions >= 1
        for group, mask in (("all", None), ("pos_ge_1", later)):
            for name, values in metrics.items():
                self.groups[group][name].add(values if mask is None else values[:, mask])
            self.tokens[group] += int(positions.numel() if mask is None else mask.sum())

    def summary(self) -> dict[str, Any]:
        return {g: {"tokens": self.tokens[g], **{m: h.summary() for m, h in hs.items()}}
                for g, hs in self.groups.items()}


@dataclass
class ProfileSample:
    """A seeded uniform sample of per-token profiles (hf convention), kept by smallest random key
    so the sample does not depend on how the tokens were chunked."""

    size: int
    seed: int = 0
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0))
    data: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, keys: np.ndarray, columns: dict[str, np.ndarray]) -> None:
        if self.size <= 0:
            return
        allkeys = np.concatenate([self.keys, keys])
        keep = np.argsort(allkeys, kind="stable")[: self.size]
        self.keys = allkeys[keep]
        for name, col in columns.items():
            prev = self.data.get(name)
            both = col if prev is None else np.concatenate([prev, col])
            self.data[name] = both[keep]

    def arrays(self) -> dict[str, np.ndarray]:
        order = np.argsort(self.keys, kind="stable")
        return {k: v[order] for k, v in self.data.items()}


def kept_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """P1's token rule: keep position t when tokens t and t+1 are both real. [B, T] bool."""
    mask = attention_mask.bool()
    keep = torch.zeros_like(mask)
    keep[:, :-1] = mask[:, :-1] & mask[:, 1:]
    return keep


@torch.no_grad()
def trajectories(lm: models.LoadedModel, input_ids: torch.Tensor,
                 attention_mask: torch.Tensor | None = None, *,
                 layer_by_layer: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The hf-convention states [L+1, B, T, d] and the raw last-block output [B, T, d], on CPU.

    `layer_by_layer=True` captures each block's output with hooks and moves it to CPU at once,
    so accelerator memory holds one layer's states at a time (with `device_map="auto"` this is
    how a model larger than the GPU runs); the result equals the full forward's.
    """
    if not layer_by_layer:
        hidden, raw = models.forward_with_hidden(lm, input_ids, attention_mask)
        return torch.stack([h.float().cpu() for h in hidden]), raw.float().cpu()
    states: list[torch.Tensor] = []

    def first_input(_module, args, kwargs):
        h = args[0] if args else kwargs["hidden_states"]
        states.append(h.detach().float().cpu())

    def block_output(_module, _args, output):
        h = output[0] if isinstance(output, tuple) else output
        states.append(h.detach().float().cpu())

    handles = [lm.blocks[0].register_forward_pre_hook(first_input, with_kwargs=True)]
    handles += [b.register_forward_hook(block_output) for b in lm.blocks]
    try:
        lm.model(input_ids=input_ids.to(lm.device), attention_mask=None if attention_mask is None
                 else attention_mask.to(lm.device), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    raw = states[-1]
    norm = lm.final_norm
    last = raw if norm is None else norm(raw.to(lm.device, next(norm.parameters()).dtype)).float().cpu()
    return torch.stack(states[:-1] + [last]), raw


# tokens per chunk of the per-token metrics: ~1.2 GB of working copies for a 36 x 5,120 model
CHUNK_TOKENS = 2048


@torch.no_grad()
def collect(lm: models.LoadedModel, batches: Iterable[dict[str, torch.Tensor]], *,
            profiles: int = 0, seed: int = 0, layer_by_layer: bool = False,
            progress: bool = True, total: int | None = None,
            chunk_tokens: int = CHUNK_TOKENS) -> dict[str, Any]:
    """Stream batches (`input_ids`, optional `attention_mask`) through the model and return the
    per-layer statistics of both conventions, plus a profile sample when `profiles > 0`.

    The per-token metrics are computed `chunk_tokens` tokens at a time: every statistic is a
    sum over tokens, so the result does not depend on the chunk, and host memory holds the
    batch's states once plus one chunk's working copies (not ~4x the states: Pythia-12b's
    8 x 1,024-token batch would need ~26 GB)."""
    from layerlab.progress import tqdm

    L = lm.n_layers
    acc = {"hf": StatsAccumulator(L), "raw": StatsAccumulator(L)}
    sample = ProfileSample(profiles, seed)
    rng = np.random.default_rng(seed)
    n_batches = 0
    for batch in tqdm(batches, desc=f"hidden stats {lm.name}", disable=not progress, total=total,
                      leave=False):
        ids = batch["input_ids"]
        mask = batch.get("attention_mask")
        keep = kept_positions(mask if mask is not None else torch.ones_like(ids))
        states, raw = trajectories(lm, ids, mask, layer_by_layer=layer_by_layer)
        rows, cols = keep.nonzero(as_tuple=True)  # row-major: the order of states[:, keep]
        for start in range(0, rows.numel(), chunk_tokens):
            r, c = rows[start:start + chunk_tokens], cols[start:start + chunk_tokens]
            hf = states[:, r, c]  # [L+1, n, d]
            shared = _shared(hf[:-1])  # both conventions share every layer but the last
            metrics = dict(zip(("hf", "raw"), _with_ends(shared, [hf[-1], raw[r, c]])))
            for name, m in metrics.items():
                acc[name].add(m, c)
            if profiles:
                m = metrics["hf"]
                columns = {k: m[k].T.numpy().astype(np.float32)
                           for k in ("theta", "progress", "rel_update", "norms")}
                columns |= {"position": c.numpy(), "token_id": ids[r, c].numpy(),
                            "sequence": (r + 10_000 * n_batches).numpy()}
                sample.add(rng.random(c.numel()), columns)
        del states, raw
        n_batches += 1
    out = {"n_layers": L, "conventions": {k: a.summary() for k, a in acc.items()}}
    if profiles:
        out["profiles"] = sample.arrays()
    return out


def block_batches(blocks: torch.Tensor, batch_size: int) -> list[dict[str, torch.Tensor]]:
    """Fixed-length token blocks [n, T] as batches for `collect`."""
    return [{"input_ids": blocks[i : i + batch_size]} for i in range(0, len(blocks), batch_size)]


def middle_layers(n_layers: int) -> slice:
    """Blocks 2..L−1 (1-based), i.e. every block but the first and the last."""
    return slice(1, n_layers - 1)


def middle_pairs(n_layers: int) -> slice:
    """Consecutive-update pairs (Δh_l, Δh_{l+1}) with both updates from middle blocks, as indices
    into `theta_dh`: l = 1..L−3 (empty below 4 blocks)."""
    return slice(1, max(1, n_layers - 2))
