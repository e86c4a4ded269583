"""Chapter 02: causal tracing (P1 Fig. 6, research/paper1.md §6; Meng et al.'s protocol).

For a factual prompt: a clean run gives p(target); a corrupted run adds Gaussian noise of
`noise_scale` × the std of the embedding outputs to the subject's tokens; then, for every block l
and position j, the corrupted run is repeated with block l's clean output restored at j, and
p(target) is read at the last position. Where restoring brings the probability back, that state
carries the fact.

The facts are written for the book (`FACTS`); a fact enters the average only when the model
knows it — clean p(target) ≥ `threshold`, a rule fixed before looking at the traces. Noise draws
are seeded and averaged over `noise_samples` (P1 used one unseeded draw).

Used by chapter 02.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd
import torch

from layerlab import models, results
from layerlab.profiles import Profile
from layerlab.settings import TracingSettings

__all__ = ["FACTS", "POSITION_GROUPS", "assess", "effect_map", "embedding_std", "encode", "Fact",
           "known", "run", "summary", "trace", "Trace"]


@dataclass(frozen=True)
class Fact:
    """A factual prompt to trace: `subject` is the span of `prompt` whose tokens the corrupted
    run noises, and p(target) is read for the first token of `target` at the last position."""

    prompt: str
    subject: str
    target: str  # the continuation; its first token is the target


FACTS = (
    Fact("The Space Needle is in downtown", "The Space Needle", " Seattle"),  # P1's prompt
    Fact("The Eiffel Tower is in the city of", "The Eiffel Tower", " Paris"),
    Fact("The Colosseum is located in the city of", "The Colosseum", " Rome"),
    Fact("Big Ben is a clock tower in the city of", "Big Ben", " London"),
    Fact("The Kremlin is located in the city of", "The Kremlin", " Moscow"),
    Fact("The Acropolis is located in the city of", "The Acropolis", " Athens"),
    Fact("The Louvre is a museum in the city of", "The Louvre", " Paris"),
    Fact("The Taj Mahal is located in the country of", "The Taj Mahal", " India"),
    Fact("The Great Pyramid of Giza is located in", "The Great Pyramid of Giza", " Egypt"),
    Fact("The Sydney Opera House is located in the country of", "The Sydney Opera House",
         " Australia"),
    Fact("Mount Fuji is the highest mountain in", "Mount Fuji", " Japan"),
    Fact("The Golden Gate Bridge is in the city of", "The Golden Gate Bridge", " San"),
    Fact("The Statue of Liberty is in the city of", "The Statue of Liberty", " New"),
    Fact("Tokyo is the capital of", "Tokyo", " Japan"),
    Fact("Paris is the capital of", "Paris", " France"),
    Fact("Berlin is the capital of", "Berlin", " Germany"),
    Fact("Madrid is the capital of", "Madrid", " Spain"),
    Fact("Albert Einstein was a famous", "Albert Einstein", " physicist"),
    Fact("William Shakespeare was a famous English", "William Shakespeare", " playwright"),
    Fact("Leonardo da Vinci painted the Mona", "Leonardo da Vinci", " Lisa"),
    Fact("The iPhone is made by the company", "The iPhone", " Apple"),
    Fact("Windows is an operating system made by", "Windows", " Microsoft"),
    Fact("The Amazon River flows through the country of", "The Amazon River", " Brazil"),
    Fact("The Nile is a river in", "The Nile", " Africa"),
)


def encode(lm: models.LoadedModel, fact: Fact) -> dict[str, Any]:
    """Token ids of the prompt (with BOS where the model expects one), the subject's token span
    and the target's first token."""
    tok = lm.tokenizer
    start = fact.prompt.index(fact.subject)
    bos = [tok.bos_token_id] if lm.add_bos and tok.bos_token_id is not None else []

    def ids(text: str) -> list[int]:
        return bos + tok.encode(text, add_special_tokens=False)

    prompt = ids(fact.prompt)
    lo = len(ids(fact.prompt[:start])) if start else len(bos)
    hi = len(ids(fact.prompt[:start + len(fact.subject)]))
    target = tok.encode(fact.target, add_special_tokens=False)[0]
    if not lo < hi <= len(prompt):
        raise ValueError(f"cannot place the subject {fact.subject!r} in {fact.prompt!r}")
    return {"ids": torch.tensor([prompt]), "subject": (lo, hi), "target": int(target)}


def embedding_std(lm: models.LoadedModel, n: int = 4096, seed: int = 0) -> float:
    """Std of the embedding module's outputs (Gemma scales its embeddings by √d) over a seeded
    sample of the vocabulary."""
    vocab = lm.embed.weight.shape[0]
    ids = torch.randperm(vocab, generator=torch.Generator().manual_seed(seed))[:min(n, vocab)]
    with torch.no_grad():
        return float(lm.embed(ids.to(lm.device)).float().std())


def _block_out(output):
    return output[0] if isinstance(output, tuple) else output


@torch.no_grad()
def trace(lm: models.LoadedModel, fact: Fact, *, noise: float, samples: int,
          seed: int) -> dict[str, Any]:
    """p(target) clean, corrupted, and with each (block, position) restored: [L, T]."""
    enc = encode(lm, fact)
    ids = enc["ids"].to(lm.device)
    T, L = ids.shape[1], lm.n_layers
    lo, hi = enc["subject"]
    clean_states: list[torch.Tensor] = []
    hooks = [b.register_forward_hook(lambda _m, _a, out: clean_states.append(
        _block_out(out).detach().clone())) for b in lm.blocks]
    try:
        logits = lm.model(input_ids=ids, use_cache=False).logits
    finally:
        for h in hooks:
            h.remove()
    p_clean = float(torch.softmax(logits[0, -1].float(), -1)[enc["target"]])
    gen = torch.Generator().manual_seed(seed)
    draws = torch.randn(samples, hi - lo, lm.d_model, generator=gen) * noise

    def run(batch: int, restore: tuple[int, torch.Tensor] | None) -> torch.Tensor:
        """p(target) for `batch` rows of noise draws; row r restores position r % T."""
        def corrupt(_m, _a, out):
            out = out.clone()
            out[:, lo:hi] += draws.repeat_interleave(batch // samples, 0).to(out)
            return out

        handles = [lm.embed.register_forward_hook(corrupt)]
        if restore is not None:
            layer, positions = restore

            def patch(_m, _a, out):
                h = _block_out(out)
                rows = torch.arange(h.shape[0])
                h[rows, positions] = clean_states[layer][0, positions].to(h)
                return out

            handles.append(lm.blocks[layer].register_forward_hook(patch))
        try:
            out = lm.model(input_ids=ids.expand(batch, -1), use_cache=False).logits
        finally:
            for h in handles:
                h.remove()
        return torch.softmax(out[:, -1].float(), -1)[:, enc["target"]].cpu()

    p_corrupt = float(run(samples, None).mean())
    positions = torch.arange(T).repeat(samples)  # draws are blocks of T rows
    restored = np.zeros((L, T))
    for layer in range(L):
        p = run(samples * T, (layer, positions))
        restored[layer] = p.view(samples, T).mean(0).numpy()
    return {"prompt": fact.prompt, "subject": fact.subject, "target": fact.target,
            "tokens": [lm.tokenizer.decode([int(t)]) for t in enc["ids"][0]],
            "subject_span": [lo, hi], "p_clean": p_clean, "p_corrupt": p_corrupt,
            "restored": restored.tolist(), "layers": L}


@dataclass(frozen=True, eq=False)
class Trace:
    """One fact traced on one model (`run`; `trace` measures it)."""

    prompt: str
    subject: str
    target: str
    tokens: list[str]  # the prompt's tokens, decoded
    subject_span: list[int]  # [lo, hi): the subject's token positions
    p_clean: float  # p(target) of the clean run
    p_corrupt: float  # p(target) with the subject's embeddings noised
    restored: list[list[float]]  # [layer][position]: p(target) with that state restored
    layers: int
    noise_std: float  # the noise's standard deviation

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Trace:
        """Read back a stored record (`trace`'s fields and the noise)."""
        return cls(**{f: record[f] for f in cls.__dataclass_fields__})


def run(profile: Profile, cache: results.Cache | None = None, *,
        progress: bool = True) -> dict[str, list[Trace]]:
    """Every fact on every tracing model of the profile, cached model by model."""
    cfg = TracingSettings.from_profile(profile)
    names = list(cfg.models or profile.models)
    return _traced.each({n: n for n in names}, profile, tracing=cfg, facts=list(FACTS[:cfg.facts]),
                        show=progress, cache=cache, progress=progress)


# the tracing settings and the facts say all a trace depends on
@results.recorded("causal_tracing", context=results.in_profile, ignore=("show",),
                  decode=lambda rows: [Trace.from_record(r) for r in rows])
def _traced(profile: Profile, item: str, *, tracing: TracingSettings, facts: list[Fact],
            show: bool) -> list[dict[str, Any]]:
    from layerlab.progress import tqdm

    cfg = tracing
    lm = models.load(item, dtype=models.resolve_dtype(cfg.dtype), device=models.default_device())
    noise = cfg.noise_scale * embedding_std(lm, seed=cfg.seed)
    return [{**trace(lm, f, noise=noise, samples=cfg.noise_samples, seed=cfg.seed + i),
             "noise_std": noise}
            for i, f in enumerate(tqdm(facts, desc=item, disable=not show, leave=False))]


POSITION_GROUPS = ("first subject token", "middle subject tokens", "last subject token",
                   "after the subject", "last token")


def _group(j: int, lo: int, hi: int, T: int) -> str | None:
    if j == T - 1:
        return "last token"
    if j == lo:
        return "first subject token"
    if j == hi - 1:
        return "last subject token"
    if lo < j < hi - 1:
        return "middle subject tokens"
    if j >= hi:
        return "after the subject"
    return None  # before the subject (BOS, "The …" is part of most subjects)


def known(traces: list[Trace], threshold: float) -> list[Trace]:
    """The facts the model knows: clean p(target) ≥ threshold, above the corrupted one."""
    return [t for t in traces if t.p_clean >= threshold and t.p_clean > t.p_corrupt]


def effect_map(traces: list[Trace], bins: int = 10) -> pd.DataFrame:
    """Mean normalised indirect effect (p_restored − p_corrupt) / (p_clean − p_corrupt) per
    position group and depth bin (l/L), over the given traces."""
    rows = []
    for t in traces:
        lo, hi = t.subject_span
        R = np.asarray(t.restored)
        L, T = R.shape
        scale = t.p_clean - t.p_corrupt
        for layer in range(L):
            for j in range(T):
                g = _group(j, lo, hi, T)
                if g is not None:
                    rows.append({"group": g, "bin": min(bins - 1, int(bins * layer / L)),
                                 "effect": (R[layer, j] - t.p_corrupt) / scale,
                                 "prompt": t.prompt})
    if not rows:
        return pd.DataFrame(columns=["group", "depth", "effect", "facts"])
    df = pd.DataFrame(rows).groupby(["group", "bin", "prompt"])["effect"].mean().reset_index()
    out = df.groupby(["group", "bin"]).agg(effect=("effect", "mean"),
                                           facts=("prompt", "nunique")).reset_index()
    out["depth"] = (out["bin"] + 0.5) / bins
    return out


def summary(traces_by_model: dict[str, list[Trace]], threshold: float) -> pd.DataFrame:
    """Per model: how many facts it knows, and where restoring the last subject token and the
    last token brings back at least half of the effect (as a range of l/L)."""
    rows = []
    for name, traces in traces_by_model.items():
        k = known(traces, threshold)
        row = {"model": name, "facts": len(traces), "known": len(k),
               "median_p_clean": float(np.median([t.p_clean for t in traces])),
               "median_p_corrupt": float(np.median([t.p_corrupt for t in traces]))}
        m = effect_map(k)
        for g in ("last subject token", "last token"):
            sel = m[(m["group"] == g) & (m["effect"] >= 0.5)] if len(m) else m
            row[f"{g}: l/L with ≥ half the effect"] = (
                f"{sel['depth'].min() - 0.05:.1f}–{sel['depth'].max() + 0.05:.1f}" if len(sel)
                else "none")
        rows.append(row)
    return pd.DataFrame(rows)


def assess(traces_by_model: dict[str, list[Trace]], setting: str):
    """P1 Fig. 6's number: only Pythia-12b knows the Space Needle fact (clean p 0.361, the
    smaller Pythias ≈ 0.01) — Pythia-12b's clean p against a band halfway to the smaller ones',
    the largest of the smaller Pythias' below that halfway point (the secondary). Testable only
    where the profile traces Pythia-12b and a smaller Pythia. One prompt, one forward pass: the
    probabilities are taken exact."""
    from layerlab import claims, paper
    from layerlab.depth.declarations import DECLARATIONS

    reported = paper.P1_TRACE_P_CLEAN.value
    big = "EleutherAI/pythia-12b"
    ours = {name: next(t.p_clean for t in traces if t.subject == "The Space Needle")
            for name, traces in traces_by_model.items()
            if any(t.subject == "The Space Needle" for t in traces)}
    smaller = {n: v for n, v in ours.items() if n in reported and n != big}
    if big not in ours:
        unit = claims.Unit(name="Pythia suite", primary=None,
                           precondition="the profile does not trace Pythia-12b (only the gpu "
                                        "profile loads the Pythia suite)")
    elif not smaller:
        unit = claims.Unit(name="Pythia suite", primary=claims.Estimate.exact(ours[big]),
                           precondition="no smaller Pythia traced beside Pythia-12b")
    else:
        unit = claims.Unit(name="Pythia suite", primary=claims.Estimate.exact(ours[big]),
                           secondary={"smaller Pythias":
                                      claims.Estimate.exact(max(smaller.values()))})
    decl = DECLARATIONS["P1-E1-causal-trace"]
    return claims.make(
        decl, claims.decide(decl, [unit]),
        ours=", ".join(f"{n.split('/')[-1]} {v:.3f}" for n, v in ours.items()) or "not traced",
        setting=setting,
        numbers={"p_clean_space_needle": ours,
                 "paper": {n.split("/")[-1]: v for n, v in reported.items()}})
