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

The bulk is the larger cluster; the bulk fraction is its share of the sampled tokens. P1-B1 is
decided by `claims.decide` against its declaration (`layerlab.depth.declarations`): the fraction's
95 % interval over windows (the sample's minority is about one token per window, so windows, not
tokens, are resampled), a negative control with each token's layers shuffled, and the minority's
and bulk's progress a quarter of the way through the stack as secondaries.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from layerlab import claims, paper, results
from layerlab.depth.declarations import DECLARATIONS
from layerlab.profiles import Profile

__all__ = ["BOOTSTRAP", "CLAIM", "CONTEXT", "CONTROL_SEED", "FEATURES", "MIN_LAYERS", "PAPER_BULK",
           "RULES", "assess", "bos_token", "bulk_of", "by_context", "cluster", "context_blocks",
           "context_summary", "features", "fraction_interval", "fractions", "kmeans2",
           "median_interval", "minority_report", "pca", "primary_unit", "scatter_sample",
           "shuffle_layers", "split", "valley_split", "window_stats", "without_position0"]

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


def split(X: np.ndarray, rule: str = "kmeans", seed: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                                      np.ndarray]:
    """PCA scores, explained variance ratios and cluster labels of one feature matrix."""
    scores, ratio = pca(X)
    if rule == "kmeans":
        labels = kmeans2(scores, seed)
    elif rule == "valley":
        labels = valley_split(scores[:, 0])
    else:
        raise ValueError(f"unknown rule {rule!r}; choose one of {RULES}")
    return scores, ratio, labels


def bulk_of(labels: np.ndarray) -> np.ndarray:
    """Membership of the larger cluster."""
    return labels == int(np.bincount(labels, minlength=2).argmax())


def cluster(arrays: dict[str, np.ndarray], kind: str = "progress", rule: str = "kmeans",
            seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-token PCA scores, cluster labels and bulk membership, plus a summary."""
    X = features(arrays, kind)
    if X.shape[1] < 2:
        raise ValueError(f"{X.shape[1]} {kind} features: a model needs ≥ {MIN_LAYERS} blocks")
    scores, ratio, labels = split(X, rule, seed)
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
    """Bulk fraction for every model (with ≥ MIN_LAYERS blocks) × feature kind × rule, with its
    95 % interval over windows, the layer-shuffled control's fraction through the same rule and
    the median progress at a quarter of the depth of minority and bulk (`window_stats`)."""
    rows = []
    for model, arrays in arrays_by_model.items():
        if np.asarray(arrays["theta"]).shape[1] < MIN_LAYERS:
            continue
        if exclude_position0:
            arrays = without_position0(arrays)
        for kind in FEATURES:
            for rule in RULES:
                df, summary = cluster(arrays, kind, rule)
                rows.append({"model": model, **summary, **window_stats(arrays, df, kind, rule)})
    return pd.DataFrame(rows)


# --- intervals over windows and the layer-shuffled control (P1-B1) -------------------------------
BOOTSTRAP = 2000  # window resamples
CONTROL_SEED = 0


def shuffle_layers(X: np.ndarray, seed: int = CONTROL_SEED) -> np.ndarray:
    """The negative control's features: each token's profile with its layers in a random order
    (seeded, token by token). Every token keeps its values; the depth order that tells even
    increments from early stopping is gone."""
    rng = np.random.default_rng(seed)
    return np.take_along_axis(X, rng.random(X.shape).argsort(1), axis=1)


def _resample_counts(n_windows: int, seed: int = 0, n_boot: int = BOOTSTRAP) -> np.ndarray:
    """[n_boot, n_windows]: how often each window is drawn in each bootstrap resample."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(n_windows, size=(n_boot, n_windows))
    counts = np.zeros((n_boot, n_windows), dtype=np.int64)
    np.add.at(counts, (np.arange(n_boot)[:, None], idx), 1)
    return counts


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    if not len(values):
        return float("nan"), float("nan")
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def fraction_interval(member: np.ndarray, window: np.ndarray,
                      counts: np.ndarray) -> tuple[float, float]:
    """95 % percentile interval of a token share over window resamples: every window's tokens
    and members are counted together (the ratio of the resampled sums)."""
    n_w = counts.shape[1]
    tokens = np.bincount(window, minlength=n_w).astype(float)
    members = np.bincount(window, weights=member.astype(float), minlength=n_w)
    return _percentiles((counts @ members) / (counts @ tokens))


def median_interval(values: np.ndarray, window: np.ndarray, counts: np.ndarray,
                    chunk: int = 250) -> tuple[float, float]:
    """95 % percentile interval of the median of `values` over window resamples (each token
    weighted by how often its window is drawn; a resample without any of the tokens is
    skipped)."""
    if not len(values):
        return float("nan"), float("nan")
    order = np.argsort(values, kind="stable")
    v, w_of = np.asarray(values, dtype=float)[order], window[order]
    out = []
    for start in range(0, len(counts), chunk):
        weights = counts[start:start + chunk][:, w_of].astype(float)  # [chunk, tokens]
        cum = np.cumsum(weights, axis=1)
        total = cum[:, -1]
        at = (cum < total[:, None] / 2).sum(1).clip(max=len(v) - 1)
        out.append(np.where(total > 0, v[at], np.nan))
    return _percentiles(np.concatenate(out))


def window_stats(arrays: dict[str, np.ndarray], df: pd.DataFrame, kind: str, rule: str,
                 seed: int = 0) -> dict[str, Any]:
    """P1-B1's evidence for one model × features × rule beside `cluster`'s summary: the number of
    windows in the sample, the bulk fraction's 95 % interval over windows (cluster labels fixed),
    the layer-shuffled control's bulk fraction through the same rule with its interval, and the
    median progress at a quarter of the depth of minority and bulk with theirs. Without window
    ids (`sequence`) the intervals are NaN."""
    bulk = df["bulk"].to_numpy()
    quarter = df["progress_quarter"].to_numpy(dtype=float)
    control = bulk_of(split(shuffle_layers(features(arrays, kind)), rule, seed)[2])
    out: dict[str, Any] = {
        "windows": 0, "bulk_lo": np.nan, "bulk_hi": np.nan,
        "control_fraction": float(control.mean()), "control_lo": np.nan, "control_hi": np.nan,
        "minority_quarter": float(np.median(quarter[~bulk])) if (~bulk).any() else np.nan,
        "minority_quarter_lo": np.nan, "minority_quarter_hi": np.nan,
        "bulk_quarter": float(np.median(quarter[bulk])) if bulk.any() else np.nan,
        "bulk_quarter_lo": np.nan, "bulk_quarter_hi": np.nan}
    if "sequence" not in arrays:
        return out
    window = np.unique(np.asarray(arrays["sequence"]), return_inverse=True)[1].ravel()
    n_w = int(window.max()) + 1 if len(window) else 0
    out["windows"] = n_w
    if n_w < 2:
        return out
    counts = _resample_counts(n_w, seed)
    out["bulk_lo"], out["bulk_hi"] = fraction_interval(bulk, window, counts)
    out["control_lo"], out["control_hi"] = fraction_interval(control, window, counts)
    out["minority_quarter_lo"], out["minority_quarter_hi"] = median_interval(
        quarter[~bulk], window[~bulk], counts)
    out["bulk_quarter_lo"], out["bulk_quarter_hi"] = median_interval(
        quarter[bulk], window[bulk], counts)
    return out


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


def by_context(profile: Profile, cache: results.Cache | None = None, *,
               progress: bool = True) -> pd.DataFrame:
    """Bulk fraction against context length T, without and with a BOS token at position 0, for
    the profile's context models; each (model, T, BOS) cached as soon as it finishes."""
    from layerlab.depth import geometry
    from layerlab.progress import tqdm

    cfg = geometry.config_for(profile)
    rows = []
    for name in tqdm(list(cfg.context_models or profile.models), desc="models",
                     disable=not progress):
        held: dict[str, Any] = {}  # the model, loaded for its first missing record only
        rows += [{"model": name, **_context_bulk(profile, name, T, with_bos,
                                                 tokens=cfg.context_tokens,
                                                 dtype=cfg.torch_dtype, held=held, cache=cache)}
                 for T in cfg.context_lengths for with_bos in (False, True)]
    return pd.DataFrame(rows).assign(sink_line=lambda d: 1 - 1 / d["T"])


# `dtype` is the geometry settings' (the one `_load` loads the model in); `held` keeps the model
@results.recorded(CONTEXT, context=results.profile_config,
                  ignore=("name", "T", "with_bos", "held"),
                  record=lambda a: f"{a['name']}-T{a['T']}-{'bos' if a['with_bos'] else 'text'}")
def _context_bulk(profile: Profile, name: str, T: int, with_bos: bool, *, tokens: int,
                  dtype: str | None, held: dict[str, Any]) -> dict[str, Any]:
    from layerlab import hidden
    from layerlab.depth import geometry

    cfg = geometry.config_for(profile)
    if "lm" not in held:
        held["lm"] = geometry.measurement._load(name, profile, cfg)
    lm = held["lm"]
    bos, bos_text = bos_token(lm.tokenizer)
    blocks = context_blocks(lm.tokenizer, profile.eval_corpus, n_tokens=tokens, seq_len=T,
                            bos=bos if with_bos else None)
    out = hidden.collect(lm, hidden.block_batches(blocks, cfg.batch_size), profiles=tokens,
                         seed=0, progress=False)
    arrays = out["profiles"]
    arrays["token_text"] = np.array([lm.tokenizer.decode([int(t)]) for t in arrays["token_id"]])
    return {**context_summary(arrays), "T": T, "bos": with_bos,
            "bos_token": bos_text if with_bos else None}


# --- the verdict (P1-B1), decided by `claims.decide` against its declaration ------------------------
CLAIM = "P1-B1-bulk-fraction"
PAPER_BULK = paper.P1_BULK_FRACTION.value
def _estimate(row: pd.Series, point: str, lo: str, hi: str) -> claims.Estimate | None:
    values = [float(row.get(k, np.nan)) for k in (point, lo, hi)]
    return claims.Estimate(*values) if all(np.isfinite(values)) else None


def primary_unit(row: pd.Series, name: str) -> claims.Unit:
    """The primary model's evidence (one row of `fractions`, progress features and 2-means) as
    P1-B1's unit: the bulk fraction with its interval over windows, the layer-shuffled control
    and the two secondaries."""
    band = DECLARATIONS[CLAIM].band
    primary = _estimate(row, "bulk_fraction", "bulk_lo", "bulk_hi")
    windows = int(row.get("windows", 0) or 0)
    pre = None
    if primary is None:
        pre = (f"the sample spans {windows} window(s) with ids: no interval over windows"
               if windows < 2 else "the bulk fraction's interval over windows is undefined")
    elif primary.hi - primary.lo > band.hi - band.lo and band.test(primary) != "fail":
        pre = (f"the interval over windows [{primary.lo:.4f}, {primary.hi:.4f}] is wider than the "
               f"band {band.text('.4g')}")
    secondary = {k: e for k, e in (
        ("minority stops early", _estimate(row, "minority_quarter", "minority_quarter_lo",
                                           "minority_quarter_hi")),
        ("bulk updates evenly", _estimate(row, "bulk_quarter", "bulk_quarter_lo",
                                          "bulk_quarter_hi"))) if e is not None}
    return claims.Unit(name=name, primary=primary, precondition=pre,
                       control=_estimate(row, "control_fraction", "control_lo", "control_hi"),
                       secondary=secondary)


def _pct(e: claims.Estimate | None) -> str:
    return "undefined" if e is None else f"{100 * e.point:.2f} % [{100 * e.lo:.2f}, {100 * e.hi:.2f}]"


def _num(e: claims.Estimate | None) -> str:
    return "undefined" if e is None else f"{e.point:.2f} [{e.lo:.2f}, {e.hi:.2f}]"


def assess(table: pd.DataFrame, primary: str, setting: str,
           report: dict[str, Any] | None = None, context: pd.DataFrame | None = None) -> list:
    """P1-B1 on the primary model and rule (progress features, 2-means), decided by
    `claims.decide`: the bulk fraction's interval over windows against the declared band; the
    layer-shuffled control through the same band (passing too → not diagnostic); the minority's
    and the bulk's median progress at a quarter of the depth as secondaries (early stoppers,
    even increments). `report` (`minority_report` of the primary model) and `context`
    (`by_context`) are shown beside."""
    decl = DECLARATIONS[CLAIM]
    main = table[(table["model"] == primary) & (table["features"] == "progress")
                 & (table["rule"] == "kmeans")]
    if main.empty:
        raise ValueError(f"no clustering result for the primary model {primary!r}")
    row = main.iloc[0]
    unit = primary_unit(row, primary)
    report = report or {}
    share = float(report.get("share_at_position_0", np.nan))
    share_all = float(report.get("position_0_share_of_all", np.nan))
    minority, even = (unit.secondary.get(k) for k in ("minority stops early",
                                                      "bulk updates evenly"))
    numbers: dict[str, Any] = {
        "bulk_fraction": float(row["bulk_fraction"]), "tokens": int(row["tokens"]),
        "windows": int(row.get("windows", 0) or 0),
        "interval": [unit.primary.lo, unit.primary.hi] if unit.primary else None,
        "control_fraction": float(row.get("control_fraction", np.nan)),
        "control_interval": [unit.control.lo, unit.control.hi] if unit.control else None,
        "minority_quarter": [minority.point, minority.lo, minority.hi] if minority else None,
        "bulk_quarter": [even.point, even.lo, even.hi] if even else None,
        "minority_position0_share": share, "position0_share_of_sample": share_all,
        "band": [decl.band.lo, decl.band.hi]}
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
    ours = (f"{primary}, progress features, 2-means: bulk {_pct(unit.primary)} over "
            f"{numbers['windows']} windows ({numbers['tokens']} tokens; windows are the resampling "
            f"unit, labels fixed); layer-shuffled control {_pct(unit.control)}; median progress at "
            f"a quarter of the depth: minority {_num(minority)}, bulk {_num(even)}; "
            f"{100 * share:.0f} % of the minority at position 0 (position 0 is "
            f"{100 * share_all:.2f} % of the sample)" + extra)
    return [claims.make(decl, claims.decide(decl, [unit]), ours=ours, setting=setting,
                        numbers=numbers)]
