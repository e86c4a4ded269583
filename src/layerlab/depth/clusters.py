"""Chapter 03: PCA of per-token layer profiles and the "≈99.6 % of tokens are evenly
incremental" claim (P1 §3).

The paper's PCA code, features and cluster rule are not public; we implement the documented
candidates and report each (research/paper1.md §3):

- features `progress`: s_1..s_{L−1} (the progress coordinate; "evenly incremental" means
  s_l ≈ l/L, "early stopping" means s reaches ≈1 after a few layers);
- features `rotation`: θ(h_l, h_{l+1}) normalised to sum 1 over layers (where the rotation
  happens, whatever its total);
- rules `kmeans` (2-means on PC1–PC2, seeded k-means++) and `valley` (split PC1 at the deepest
  valley of its histogram between the two highest modes).

The bulk is the larger cluster; the bulk fraction is its share of the sampled tokens.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from layerlab import paper

FEATURES = ("progress", "rotation")
RULES = ("kmeans", "valley")


def features(arrays: dict[str, np.ndarray], kind: str) -> np.ndarray:
    """[tokens, features] for one feature kind."""
    if kind == "progress":
        return np.asarray(arrays["progress"], dtype=np.float64)[:, 1:-1]
    if kind == "rotation":
        theta = np.asarray(arrays["theta"], dtype=np.float64)
        return theta / np.clip(theta.sum(1, keepdims=True), 1e-12, None)
    raise ValueError(f"unknown feature kind {kind!r}; choose one of {FEATURES}")


def pca(X: np.ndarray, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Scores on the first k principal components (centred, unscaled) and explained variance
    ratios. Signs are fixed so that each component's largest loading is positive."""
    Xc = X - X.mean(0)
    _, s, vt = np.linalg.svd(Xc, full_matrices=False)
    signs = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(1)])
    vt = vt * signs[:, None]
    ratio = s**2 / np.sum(s**2)
    return Xc @ vt[:k].T, ratio[:k]


def kmeans2(Y: np.ndarray, seed: int = 0, iters: int = 100) -> np.ndarray:
    """2-means with k-means++ initialisation (seeded); labels 0/1."""
    rng = np.random.default_rng(seed)
    first = Y[rng.integers(len(Y))]
    d2 = ((Y - first) ** 2).sum(1)
    second = Y[rng.choice(len(Y), p=d2 / d2.sum())] if d2.sum() > 0 else first
    centres = np.stack([first, second])
    labels = np.zeros(len(Y), dtype=int)
    for _ in range(iters):
        new = ((Y[:, None, :] - centres[None]) ** 2).sum(-1).argmin(1)
        if np.array_equal(new, labels) and _ > 0:
            break
        labels = new
        for c in (0, 1):
            if (labels == c).any():
                centres[c] = Y[labels == c].mean(0)
    return labels


def valley_split(x: np.ndarray, bins: int = 60) -> np.ndarray:
    """Split a 1-D distribution at the lowest histogram bin between its two highest peaks;
    labels 0 (left) / 1 (right). One peak only: everything in one cluster."""
    counts, edges = np.histogram(x, bins=bins)
    peaks = [i for i in range(bins) if counts[i] > 0 and (i == 0 or counts[i] >= counts[i - 1])
             and (i == bins - 1 or counts[i] >= counts[i + 1])]
    if len(peaks) < 2:
        return np.zeros(len(x), dtype=int)
    a, b = sorted(sorted(peaks, key=lambda i: counts[i])[-2:])
    valley = a + int(np.argmin(counts[a : b + 1]))
    return (x > edges[valley + 1]).astype(int)


def cluster(arrays: dict[str, np.ndarray], kind: str = "progress", rule: str = "kmeans",
            seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-token PCA scores, cluster labels and bulk membership, plus a summary."""
    X = features(arrays, kind)
    if X.shape[1] < 2:
        raise ValueError(f"{X.shape[1]} {kind} features: a model needs ≥ {MIN_LAYERS} blocks")
    scores, ratio = pca(X)
    if rule == "kmeans":
        labels = kmeans2(scores, seed)
    elif rule == "valley":
        labels = valley_split(scores[:, 0])
    else:
        raise ValueError(f"unknown rule {rule!r}; choose one of {RULES}")
    bulk_label = int(np.bincount(labels, minlength=2).argmax())
    df = pd.DataFrame({"pc1": scores[:, 0], "pc2": scores[:, 1], "cluster": labels,
                       "bulk": labels == bulk_label,
                       "position": np.asarray(arrays["position"]),
                       "token": np.asarray(arrays["token_text"]).astype(str),
                       "norm_mid": np.asarray(arrays["norms"], dtype=float)[
                           :, np.asarray(arrays["norms"]).shape[1] // 2],
                       # how far the token has come a quarter of the way through the blocks
                       "progress_quarter": np.asarray(arrays["progress"], dtype=float)[
                           :, max(1, (np.asarray(arrays["progress"]).shape[1] - 1) // 4)]})
    summary = {"features": kind, "rule": rule, "tokens": len(df),
               "bulk_fraction": float(df["bulk"].mean()), "explained_pc1": float(ratio[0]),
               "explained_pc2": float(ratio[1])}
    return df, summary


MIN_LAYERS = 4  # fewer blocks leave too few profile features for a PCA to mean anything


def without_position0(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The sample without the tokens at position 0 (the control for attention sinks)."""
    keep = np.asarray(arrays["position"]) > 0
    return {k: np.asarray(v)[keep] for k, v in arrays.items()}


def fractions(arrays_by_model: dict[str, dict[str, np.ndarray]], *,
              exclude_position0: bool = False) -> pd.DataFrame:
    """Bulk fraction for every model (with ≥ MIN_LAYERS blocks) × feature kind × rule."""
    rows = []
    for model, arrays in arrays_by_model.items():
        if np.asarray(arrays["theta"]).shape[1] < MIN_LAYERS:
            continue
        if exclude_position0:
            arrays = without_position0(arrays)
        for kind in FEATURES:
            for rule in RULES:
                rows.append({"model": model, **cluster(arrays, kind, rule)[1]})
    return pd.DataFrame(rows)


def minority_report(df: pd.DataFrame, top: int = 12) -> dict[str, Any]:
    """Who the minority tokens are: how many sit at position 0, their commonest strings, and
    their mid-depth norm against the bulk's."""
    minority = df[~df["bulk"]]
    bulk = df[df["bulk"]]
    counts = minority["token"].value_counts().head(top)
    quarter = df["progress_quarter"] if "progress_quarter" in df else None
    return {
        "median_progress_at_quarter_depth_minority": float(quarter[~df["bulk"]].median())
        if quarter is not None and len(minority) else np.nan,
        "median_progress_at_quarter_depth_bulk": float(quarter[df["bulk"]].median())
        if quarter is not None else np.nan,
        "minority_tokens": int(len(minority)),
        "share_at_position_0": float((minority["position"] == 0).mean()) if len(minority) else np.nan,
        "position_0_share_of_all": float((df["position"] == 0).mean()),
        "median_norm_minority": float(minority["norm_mid"].median()) if len(minority) else np.nan,
        "median_norm_bulk": float(bulk["norm_mid"].median()),
        "top_strings": [(repr(s), int(n)) for s, n in counts.items()],
    }


def scatter_sample(df: pd.DataFrame, n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """All minority tokens plus a random sample of the bulk, for the interactive scatter."""
    minority = df[~df["bulk"]]
    bulk = df[df["bulk"]]
    take = bulk.sample(n=min(len(bulk), max(0, n - len(minority))), random_state=seed)
    out = pd.concat([minority, take])
    out["group"] = np.where(out["bulk"], "bulk", "minority")
    return out


# --- is the bulk the first position? -------------------------------------------------------------
CONTEXT = "bulk_by_context"


def context_blocks(tokenizer, source: str, *, n_tokens: int, seq_len: int,
                   bos: int | None) -> torch.Tensor:
    """Windows of `seq_len` tokens of the test split; with `bos`, every window starts with that
    token and seq_len − 1 tokens of text."""
    from layerlab import corpus

    if bos is None:
        return corpus.token_blocks(tokenizer, source, n_tokens=n_tokens, seq_len=seq_len,
                                   split="test")
    text = corpus.token_blocks(tokenizer, source, n_tokens=n_tokens // seq_len * (seq_len - 1),
                               seq_len=seq_len - 1, split="test")
    return torch.cat([torch.full((len(text), 1), bos, dtype=text.dtype), text], dim=1)


def bos_token(tokenizer) -> tuple[int, str]:
    """The token a document starts with: the tokenizer's BOS, or its end-of-text token for
    tokenizers without one (SmolLM2's documents are separated by <|endoftext|>)."""
    for attr in ("bos_token_id", "eos_token_id"):
        tid = getattr(tokenizer, attr, None)
        if tid is not None:
            return int(tid), tokenizer.convert_ids_to_tokens(int(tid))
    raise ValueError("the tokenizer has neither a BOS nor an end-of-text token")


def context_summary(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The primary rule (progress features, 2-means) on one sample: the bulk fraction with and
    without position 0, and who the minority are."""
    df, info = cluster(arrays, "progress", "kmeans")
    report = minority_report(df)
    no0 = cluster(without_position0(arrays), "progress", "kmeans")[1]
    n = info["tokens"]
    return {"tokens": n, "bulk_fraction": info["bulk_fraction"],
            "bulk_fraction_se": float(np.sqrt(info["bulk_fraction"] * (1 - info["bulk_fraction"])
                                              / n)),
            "bulk_fraction_without_position0": no0["bulk_fraction"],
            "minority_tokens": report["minority_tokens"],
            "minority_position0_share": report["share_at_position_0"],
            "position0_share_of_sample": report["position_0_share_of_all"],
            "progress_quarter_minority": report["median_progress_at_quarter_depth_minority"],
            "progress_quarter_bulk": report["median_progress_at_quarter_depth_bulk"]}


def by_context(profile, cache=None, *, progress: bool = True) -> pd.DataFrame:
    """Bulk fraction against context length T, without and with a BOS token at position 0, for
    the profile's context models; each (model, T, BOS) cached as soon as it finishes."""
    from tqdm.auto import tqdm

    from layerlab import hidden, results
    from layerlab.depth import geometry

    cache = cache or results.Cache(profile.name)
    cfg = geometry.config_for(profile)
    names = list(cfg.context_models or profile.models)
    key = {**profile.config(), "tokens": cfg.context_tokens, "dtype": cfg.torch_dtype}
    rows = []
    for name in tqdm(names, desc="models", disable=not progress):
        lm = None
        for T in cfg.context_lengths:
            for with_bos in (False, True):
                item = f"{name}-T{T}-{'bos' if with_bos else 'text'}"
                value = cache.get(CONTEXT, key, item)
                if value is None:
                    cache.may_compute(f"{CONTEXT}/{item}")
                    lm = lm or geometry._load(name, profile, cfg)
                    bos, bos_text = bos_token(lm.tokenizer)
                    blocks = context_blocks(lm.tokenizer, profile.eval_corpus,
                                            n_tokens=cfg.context_tokens, seq_len=T,
                                            bos=bos if with_bos else None)
                    out = hidden.collect(lm, hidden.block_batches(blocks, cfg.batch_size),
                                         profiles=cfg.context_tokens, seed=0, progress=False)
                    arrays = out["profiles"]
                    arrays["token_text"] = np.array(
                        [lm.tokenizer.decode([int(t)]) for t in arrays["token_id"]])
                    value = cache.put(CONTEXT, key, {**context_summary(arrays), "T": T,
                                                     "bos": with_bos, "bos_token": bos_text if
                                                     with_bos else None}, item=item)
                rows.append({"model": name, **value})
        del lm
    return pd.DataFrame(rows).assign(sink_line=lambda d: 1 - 1 / d["T"])


PAPER_BULK = paper.P1_BULK_FRACTION.value
TOLERANCE = 0.005
EARLY_MARGIN = 0.25  # "at its final state": median progress within 1 ± this at a quarter depth


def number_rule(frac: float, se: float) -> str:
    """The number: the bulk fraction's 95 % interval against 99.6 ± 0.5 %."""
    from layerlab.claims import equivalence

    return equivalence(frac, frac - 1.96 * se, frac + 1.96 * se, PAPER_BULK, TOLERANCE)


def meaning_rule(position0_share: float, progress_minority: float, progress_bulk: float) -> bool:
    """The meaning: the minority are early stoppers — mostly not the first position, already at
    their final state a quarter of the way through the stack (median progress s within
    1 ± `EARLY_MARGIN`; a token far beyond 1 overshoots, it has not stopped), while the bulk is
    still far from it (below 1 − `EARLY_MARGIN`)."""
    return bool(np.isfinite(position0_share) and position0_share < 0.5
                and abs(progress_minority - 1) <= EARLY_MARGIN
                and progress_bulk < 1 - EARLY_MARGIN)


def assess(table: pd.DataFrame, primary: str, setting: str,
           report: dict[str, Any] | None = None, context: pd.DataFrame | None = None) -> list:
    """P1-B1 in two parts: the number (the primary model and rule, progress features and
    2-means, within 99.6 ± 0.5 % with its sampling interval) and its meaning (the minority are
    early-stopping tokens). Both → reproduced; the number only → partly."""
    from layerlab.claims import NOT_REPRODUCED, PARTLY, REPRODUCED, Claim

    main = table[(table["model"] == primary) & (table["features"] == "progress")
                 & (table["rule"] == "kmeans")]
    if main.empty:
        raise ValueError(f"no clustering result for the primary model {primary!r}")
    frac = float(main["bulk_fraction"].iloc[0])
    n = int(main["tokens"].iloc[0])
    se = float(np.sqrt(frac * (1 - frac) / n))
    number = number_rule(frac, se)
    report = report or {}
    share = float(report.get("share_at_position_0", np.nan))
    meaning = meaning_rule(share, float(report.get("median_progress_at_quarter_depth_minority",
                                                    np.nan)),
                           float(report.get("median_progress_at_quarter_depth_bulk", np.nan)))
    number_ok = number in (REPRODUCED, PARTLY)
    verdict = (REPRODUCED if number == REPRODUCED and meaning else
               PARTLY if number_ok or meaning else NOT_REPRODUCED)
    numbers = {"bulk_fraction": frac, "bulk_fraction_se": se, "number_verdict": number,
               "meaning": meaning, "minority_position0_share": share}
    extra = ""
    if context is not None and len(context):
        plain = context[(context["model"] == primary) & ~context["bos"]]
        numbers["by_context"] = {int(r.T): {"bulk": r.bulk_fraction, "one_minus_1_over_T": 1 - 1 / r.T,
                                            "without_position0": r.bulk_fraction_without_position0,
                                            "minority_position0_share": r.minority_position0_share}
                                 for r in plain.itertuples()}
        extra = "; against T: " + ", ".join(
            f"T={int(r.T)} {100 * r.bulk_fraction:.2f} % (1 − 1/T {100 * (1 - 1 / r.T):.2f} %)"
            for r in plain.itertuples())
    return [Claim("P1-B1-bulk-fraction", "P1", "03_token_clusters",
                  "A PCA of per-token layer profiles shows one bulk cluster holding ≈99.6 % of "
                  "tokens (updated evenly through the middle layers) and a small minority of "
                  "early-stopping tokens", "99.6 % (Pythia)",
                  f"{primary}, progress features, 2-means: {100 * frac:.2f} ± {196 * se:.2f} % "
                  f"(number: {number}); {100 * share:.0f} % of its minority sit at position 0, "
                  f"minority progress at a quarter of the depth "
                  f"{report.get('median_progress_at_quarter_depth_minority', np.nan):.2f} vs bulk "
                  f"{report.get('median_progress_at_quarter_depth_bulk', np.nan):.2f} "
                  f"(early stoppers: {'yes' if meaning else 'no'})" + extra,
                  "two parts — the number: the 95 % interval within 99.6 ± 0.5 %; the meaning: "
                  "under half the minority at position 0, its median progress at a quarter of the "
                  f"depth within 1 ± {EARLY_MARGIN} (stopped) and the bulk's below "
                  f"{1 - EARLY_MARGIN}; both → reproduced, one → partly",
                  verdict, setting, numbers)]
