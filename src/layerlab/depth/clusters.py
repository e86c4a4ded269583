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


PAPER_BULK = paper.P1_BULK_FRACTION.value
TOLERANCE = 0.005


def assess(table: pd.DataFrame, primary: str, setting: str,
           report: dict[str, Any] | None = None) -> list:
    """The 99.6 % claim: reproduced when the primary model with the primary rule (progress
    features, 2-means) lands within ±0.5 pp; partly when only other models or rules do."""
    from layerlab.claims import NOT_REPRODUCED, PARTLY, REPRODUCED, Claim

    main = table[(table["model"] == primary) & (table["features"] == "progress")
                 & (table["rule"] == "kmeans")]
    if main.empty:
        raise ValueError(f"no clustering result for the primary model {primary!r}")
    frac = float(main["bulk_fraction"].iloc[0])
    near = (table["bulk_fraction"] - PAPER_BULK).abs() <= TOLERANCE
    verdict = REPRODUCED if abs(frac - PAPER_BULK) <= TOLERANCE else (
        PARTLY if near.any() else NOT_REPRODUCED)
    others = "; ".join(f"{r.model} {r.features}/{r.rule} {100 * r.bulk_fraction:.1f} %"
                       for r in table.itertuples())
    return [Claim("P1-B1-bulk-fraction", "P1", "03_token_clusters",
                  "A PCA of per-token layer profiles shows one bulk cluster holding ≈99.6 % of "
                  "tokens (updated evenly through the middle layers) and a small minority",
                  "99.6 % (Pythia)", f"{primary}, progress features, 2-means: {100 * frac:.1f} %"
                  + (f"; {100 * report['share_at_position_0']:.0f} % of its minority sit at "
                     "position 0" if report else "") + f" (all: {others})",
                  "primary model and rule within 99.6 ± 0.5 %; partly if only other models or "
                  "rules are", verdict, setting, {"bulk_fraction": frac})]
