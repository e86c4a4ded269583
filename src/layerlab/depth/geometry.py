"""Chapters 02 and 03: hidden-state geometry of every model of a profile (the pretrained LLMs and
the depth family trained here), cached model by model, and the tables and fits built on it."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pandas as pd
import torch

from layerlab import corpus, hidden, models, results
from layerlab.depth import family
from layerlab.profiles import Profile
from layerlab.settings import GeometrySettings

EXPERIMENT = "hidden_geometry"
FAMILY_PREFIX = "family-d"


def config_for(profile: Profile) -> GeometrySettings:
    return GeometrySettings.from_profile(profile)


def model_names(profile: Profile) -> list[str]:
    cfg = config_for(profile)
    fam = family.config_for(profile)
    return [*(cfg.models or profile.models), *(f"{FAMILY_PREFIX}{d}" for d in fam.depths)]


def primary_model(profile: Profile) -> str:
    """The model that stands in for P1's Pythia-410m in the token-cluster analysis."""
    return config_for(profile).primary or model_names(profile)[0]


def _load(name: str, profile: Profile, cfg: GeometrySettings) -> models.LoadedModel:
    if name.startswith(FAMILY_PREFIX):
        return family.load_member(int(name.removeprefix(FAMILY_PREFIX)), family.config_for(profile))
    dtype = getattr(torch, cfg.torch_dtype)
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


def _cache_key(profile: Profile) -> dict[str, Any]:
    """What a model's geometry results depend on (shared by `run` and `token_profiles`)."""
    return {**profile.config(), "geometry": config_for(profile).key(),
            "family": family.config_for(profile).key()}


def run(profile: Profile, cache: results.Cache | None = None, *, progress: bool = True,
        only: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """`measure` every model of the profile; each model's results are stored as soon as it
    finishes, so an interrupted run (a Colab disconnect) resumes at the next model."""
    from tqdm.auto import tqdm

    cache = cache or results.Cache(profile.name)
    key = _cache_key(profile)
    out = {}
    names = only or model_names(profile)
    for name in tqdm(names, desc="models", disable=not progress):
        stats = cache.get(EXPERIMENT, key, name)
        if stats is None or cache.get_arrays(EXPERIMENT, key, name) is None:
            cache.may_compute(f"{EXPERIMENT}/{name}")
            stats, arrays = measure(name, profile)
            cache.put_arrays(EXPERIMENT, key, arrays, item=name)
            stats = cache.put(EXPERIMENT, key, stats, item=name)
        out[name] = stats
    return out


def token_profiles(profile: Profile, name: str, cache: results.Cache | None = None) -> dict:
    cache = cache or results.Cache(profile.name)
    arrays = cache.get_arrays(EXPERIMENT, _cache_key(profile), name)
    if arrays is None:
        raise LookupError(f"no token profiles for {name!r}: run geometry.run(profile) first")
    return arrays


# --- tables -----------------------------------------------------------------------------------
def layer_table(stats: dict[str, dict[str, Any]], metric: str, *, convention: str = "raw",
                group: str = "pos_ge_1") -> pd.DataFrame:
    """Per model and layer: mean and quartiles of one metric, with normalised depth."""
    rows = []
    for name, s in stats.items():
        L = s["n_layers"]
        m = s["conventions"][convention][group][metric]
        offset = 0.5 if metric in ("theta", "rel_update", "angle_to_end") else (
            1.0 if metric == "theta_dh" else 0.0)
        for i, mean in enumerate(m["mean"]):
            rows.append({"model": name, "layers": L, "index": i, "depth": (i + offset) / L,
                         "mean": mean, "q25": m["q25"][i], "median": m["q50"][i],
                         "q75": m["q75"][i], "family": name.startswith(FAMILY_PREFIX)})
    return pd.DataFrame(rows)


def middle_summary(stats: dict[str, dict[str, Any]], *, convention: str = "raw",
                   group: str = "pos_ge_1") -> pd.DataFrame:
    """Per model: means over the middle blocks (all but the first and last) of θ(h_l, h_{l+1}),
    the relative update and θ(Δh_l, Δh_{l+1}) (pairs inside the middle)."""
    rows = []
    for name, s in stats.items():
        L = s["n_layers"]
        g = s["conventions"][convention][group]
        mid = hidden.middle_layers(L)
        theta = np.array(g["theta"]["mean"])[mid]
        rel = np.array(g["rel_update"]["mean"])[mid]
        tdh = np.array(g["theta_dh"]["mean"])[hidden.middle_pairs(L)]
        rows.append({"model": name, "layers": L, "width": s["summary"]["d_model"],
                     "family": name.startswith(FAMILY_PREFIX),
                     "middle_theta": float(theta.mean()) if theta.size else np.nan,
                     "middle_cv": float(theta.std() / theta.mean()) if theta.size > 1 else np.nan,
                     "middle_rel_update": float(rel.mean()) if rel.size else np.nan,
                     "middle_theta_dh": float(tdh.mean()) if tdh.size else np.nan,
                     "first_theta": g["theta"]["mean"][0], "last_theta": g["theta"]["mean"][-1],
                     "tokens": g["tokens"]})
    return pd.DataFrame(rows).set_index("model")


def depth_slope(summary: pd.DataFrame, column: str = "middle_theta", *,
                min_layers: int = 4, family_only: bool = True) -> dict[str, float]:
    """OLS slope of log(column) on log(layers) with its standard error and 95 % interval
    (statsmodels); P1 predicts −1 (update size ∝ 1/ℓ). Only the depth family by default (one
    width, one data set, one budget); members with fewer than `min_layers` blocks have no middle
    worth the name and are left out. NaN when fewer than 3 distinct depths remain."""
    import statsmodels.api as sm

    use = summary[(summary["layers"] >= min_layers) & summary[column].notna()]
    if family_only:
        use = use[use["family"]]
    if use["layers"].nunique() < 3:
        return {"slope": np.nan, "se": np.nan, "lo": np.nan, "hi": np.nan, "n": len(use),
                "intercept": np.nan}
    X = sm.add_constant(np.log(use["layers"].to_numpy(float)), has_constant="add")
    fit = sm.OLS(np.log(use[column].to_numpy(float)), X).fit()
    lo, hi = fit.conf_int(0.05)[1]
    return {"slope": float(fit.params[1]), "se": float(fit.bse[1]), "lo": float(lo),
            "hi": float(hi), "n": len(use), "intercept": float(fit.params[0])}


def procedural_curve(summary: pd.DataFrame, column: str = "middle_theta_dh",
                     min_layers: int = 4) -> pd.DataFrame | None:
    """The 1/ℓ prediction of procedural assembly for `column`, anchored at the shallowest family
    member with a middle, over the depths of the profile; None without such a member."""
    fam = summary[summary["family"] & (summary["layers"] >= min_layers)].sort_values("layers")
    if fam.empty:
        return None
    anchor = fam.iloc[0]
    grid = np.geomspace(anchor["layers"], max(summary["layers"].max(), anchor["layers"] + 1), 20)
    return pd.DataFrame({"layers": grid, column: procedural_reference(
        grid, anchor["layers"], anchor[column])})


def procedural_reference(layers, anchor_layers: float, anchor_value: float) -> np.ndarray:
    """What procedural assembly predicts for θ(Δh_l, Δh_{l+1}): blocks as Euler steps of a
    smooth flow take steps ∝ 1/ℓ along a curve, so consecutive step directions differ by an
    angle ∝ 1/ℓ. Anchored at one measured model: value × anchor_layers / ℓ."""
    return anchor_value * anchor_layers / np.asarray(layers, dtype=float)


def profile_table(stats: dict[str, dict[str, Any]], metric: str) -> pd.DataFrame:
    """`layer_table` for both conventions and both token sets, for a chart with selectors."""
    frames = []
    for convention in ("raw", "hf"):
        for group, label in (("pos_ge_1", "positions ≥ 1"), ("all", "all positions")):
            t = layer_table(stats, metric, convention=convention, group=group)
            t["convention"] = {"raw": "last block's output", "hf": "after final norm (HF)"}[convention]
            t["tokens"] = label
            frames.append(t)
    return pd.concat(frames, ignore_index=True)


def family_losses(results_by_depth: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Final validation loss (nats per byte) of each family member, with its size and cost."""
    return pd.DataFrame([{"depth": r["depth"], "params": r["params"], "val_loss": r["val_loss"],
                          "train_seconds": r["seconds"]} for r in results_by_depth.values()]
                        ).sort_values("depth").reset_index(drop=True)


def family_curves(results_by_depth: dict[str, dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{"depth": r["depth"], **p} for r in results_by_depth.values()
                         for p in r["curve"]])


def loss_depth_fit(losses: pd.DataFrame) -> dict[str, float]:
    """Fit val_loss = c / ℓ^α + L∞ over the family (scipy); with five depths the floor and the
    exponent trade off, so the SEs matter as much as the values."""
    from scipy.optimize import curve_fit

    ell = losses["depth"].to_numpy(float)
    y = losses["val_loss"].to_numpy(float)
    if len(ell) < 4:
        return {"alpha": np.nan, "alpha_se": np.nan, "floor": np.nan, "c": np.nan}
    try:
        popt, pcov = curve_fit(lambda x, c, a, f: c / x**a + f, ell, y,
                               p0=(y[0] - y[-1] + 0.1, 1.0, y[-1] - 0.05), maxfev=20000)
    except RuntimeError:
        return {"alpha": np.nan, "alpha_se": np.nan, "floor": np.nan, "c": np.nan}
    se = np.sqrt(np.diag(pcov))
    return {"c": float(popt[0]), "alpha": float(popt[1]), "alpha_se": float(se[1]),
            "floor": float(popt[2])}


def assess(summary: pd.DataFrame, slope: dict[str, float], dh_slope: dict[str, float],
           setting: str) -> list:
    """Chapter 02's claims, with verdicts from stated tolerances."""
    from layerlab.claims import Claim, judge

    chapter = "02_hidden_state_geometry"
    deep = summary[summary["layers"] >= 8]
    edge = {m: bool(r["first_theta"] > 1.5 * r["middle_theta"] and
                    r["last_theta"] > 1.5 * r["middle_theta"]) for m, r in deep.iterrows()}
    dh_big = {m: bool(v >= 1.0) for m, v in summary.loc[summary["layers"] >= 4,
                                                         "middle_theta_dh"].items()}
    return [
        Claim("P1-A1-edges-rotate", "P1", chapter,
              "Only the first and last blocks rotate the hidden state strongly; the middle blocks "
              "make small updates", "qualitative (Fig. 2a–b)",
              ", ".join(f"{m}: first {r['first_theta']:.2f}, middle {r['middle_theta']:.2f}, "
                        f"last {r['last_theta']:.2f} rad" for m, r in deep.iterrows()),
              "for every model with ≥ 8 blocks, first and last θ(h_l, h_{l+1}) above 1.5 × the "
              "middle mean (last block's own output, positions ≥ 1)",
              judge(edge) if edge else "not testable here", setting),
        Claim("P1-A2-update-inverse-depth", "P1", chapter,
              "The middle-layer update shrinks as 1/ℓ across models of different depth",
              "slope −1 (∝ 1/ℓ)",
              f"slope {slope['slope']:.2f} (95 % CI [{slope['lo']:.2f}, {slope['hi']:.2f}], "
              f"{slope['n']} family members)",
              "OLS slope of log middle θ on log ℓ over the depth family within −1 ± 0.3",
              judge({"slope": abs(slope["slope"] + 1) <= 0.3}) if np.isfinite(slope["slope"])
              else "not testable here", setting, {"slope": slope}),
        Claim("P1-A3-weak-update-correlation", "P1", chapter,
              "Consecutive updates are only weakly correlated: θ(Δh_l, Δh_{l+1}) is large in the "
              "middle layers and does not shrink with depth (procedural assembly predicts ∝ 1/ℓ)",
              "large, near π/2",
              ", ".join(f"{m}: {v:.2f} rad" for m, v in summary["middle_theta_dh"].items()
                        if summary.loc[m, "layers"] >= 4)
              + f"; family slope {dh_slope['slope']:.2f}",
              "middle θ(Δh) ≥ 1 rad for every model with ≥ 4 blocks, and the family's log–log "
              "slope of θ(Δh) on ℓ above −0.3 (far from the −1 of procedural assembly)",
              judge({**dh_big, "not_1_over_l": bool(np.isfinite(dh_slope["slope"])
                                                    and dh_slope["slope"] > -0.3)}),
              setting, {"dh_slope": dh_slope}),
    ]
