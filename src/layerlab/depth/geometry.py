"""Chapters 02 and 03: hidden-state geometry of every model of a profile (the pretrained LLMs and
the depth family trained here), cached model by model, and the tables and fits built on it.

Every signature has an untrained control: the same statistics, sequence by sequence, on a model
of the same configuration at initialisation (`controls`), so a verdict can ask what training
changed rather than what any residual stack does. Each claim is decided by `claims.decide`
against its declaration in `layerlab.depth.declarations`."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pandas as pd
import torch

from layerlab import corpus, hidden, models, results
from layerlab.depth import family
from layerlab.profiles import Profile
from layerlab.settings import GeometrySettings

__all__ = ["assess", "assess_edges", "assess_inverse_depth", "assess_weak_correlation",
           "bootstrap_mean", "CHAPTER", "config_for", "control_llms", "control_names",
           "control_slopes", "control_table", "CONTROLS", "controls", "depth_slope",
           "DH_MIN_LAYERS", "EDGE_MIN_LAYERS", "edge_units", "EXPERIMENT", "family_control_names",
           "family_curves", "family_losses", "family_monotone", "family_points", "FAMILY_PREFIX",
           "inverse_depth_unit", "layer_table", "loss_depth_fit", "measure", "middle_summary",
           "model_names", "positive_estimate", "primary_model", "procedural_curve",
           "procedural_reference", "profile_table", "run", "sequence_stats", "SEQUENCE_STATS",
           "slope_summary", "smooth_stream", "token_profiles", "weak_correlation_units"]

EXPERIMENT = "hidden_geometry"
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


def _cache_key(profile: Profile, name: str | None = None) -> dict[str, Any]:
    """What a model's geometry results depend on (shared by `run`, `token_profiles` and
    `controls`): a family member's also depend on the family's settings."""
    key = {**profile.config(), "geometry": config_for(profile).key()}
    if name is None or name.startswith(FAMILY_PREFIX):
        key["family"] = family.config_for(profile).key()
    return key


def run(profile: Profile, cache: results.Cache | None = None, *, progress: bool = True,
        only: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """`measure` every model of the profile; each model's results are stored as soon as it
    finishes, so an interrupted run (a Colab disconnect) resumes at the next model."""
    from layerlab.progress import tqdm

    cache = cache or results.Cache(profile.name)
    out = {}
    names = only or model_names(profile)
    for name in tqdm(names, desc="models", disable=not progress):
        key = _cache_key(profile, name)
        stats = cache.get(EXPERIMENT, key, name)
        if stats is None or cache.get_arrays(EXPERIMENT, key, name) is None:
            cache.may_compute(f"{EXPERIMENT}/{name}")
            stats, arrays = measure(name, profile)
            cache.put_arrays(EXPERIMENT, key, arrays, item=name)
            stats = cache.put(EXPERIMENT, key, stats, item=name)
        out[name] = stats
    return out


def token_profiles(profile: Profile, name: str, cache: results.Cache | None = None) -> dict:
    """One model's stored sample of per-token profiles (column name → array, with the decoded
    `token_text`) for chapter 03's PCA; read from the cache only, so `run` must have measured
    the model (LookupError otherwise)."""
    cache = cache or results.Cache(profile.name)
    arrays = cache.get_arrays(EXPERIMENT, _cache_key(profile, name), name)
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


def family_losses(results_by_member: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Final validation loss (nats per byte) of each family member, with its size and cost."""
    return pd.DataFrame([{"depth": r["depth"], "seed": r["seed"], "params": r["params"],
                          "val_loss": r["val_loss"], "train_seconds": r["seconds"]}
                         for r in results_by_member.values()]
                        ).sort_values(["depth", "seed"]).reset_index(drop=True)


def family_curves(results_by_member: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Training curves of the family, one row per member and evaluation step: depth, seed,
    step, tokens seen, and train and validation loss (nats per byte)."""
    return pd.DataFrame([{"depth": r["depth"], "seed": r["seed"], **p}
                         for r in results_by_member.values() for p in r["curve"]])


def loss_depth_fit(losses: pd.DataFrame) -> dict[str, float]:
    """Fit val_loss = c / ℓ^α + L∞ over the family (scipy); with five depths the floor and the
    exponent trade off, so the SEs matter as much as the values."""
    from scipy.optimize import curve_fit

    means = losses.groupby("depth")["val_loss"].mean()  # over seeds
    ell = means.index.to_numpy(float)
    y = means.to_numpy(float)
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


# --- untrained controls, sequence by sequence --------------------------------------------------
CONTROLS = "geometry_sequences"
SEQUENCE_STATS = ("first_theta", "last_theta", "middle_theta", "middle_rel_update",
                  "middle_theta_dh")


@torch.no_grad()
def sequence_stats(lm: models.LoadedModel, batches, *, limit: int | None = None) -> list[dict]:
    """Per sequence (kept positions ≥ 1, last block's own output as h_L, float32): the mean over
    its tokens of θ(h_l, h_{l+1}) at the first block, the last block and over the middle blocks,
    of the middle relative update and of the middle θ(Δh_l, Δh_{l+1}). Sequences are the unit of
    the bootstrap intervals (tokens of one text are not independent)."""
    L = lm.n_layers
    rows: list[dict] = []
    for batch in batches:
        ids = batch["input_ids"]
        mask = batch.get("attention_mask")
        keep = hidden.kept_positions(mask if mask is not None else torch.ones_like(ids))
        keep[:, 0] = False
        states, raw = hidden.trajectories(lm, ids, mask)
        for b in range(ids.shape[0]):
            if limit is not None and len(rows) >= limit:
                return rows
            sel = keep[b]
            if int(sel.sum()) == 0:
                continue
            traj = torch.cat([states[:-1, b][:, sel], raw[b][sel][None]])
            m = {k: v.mean(1).numpy() for k, v in hidden.token_metrics(traj).items()}
            mid, pairs = hidden.middle_layers(L), hidden.middle_pairs(L)
            rows.append({
                "first_theta": float(m["theta"][0]), "last_theta": float(m["theta"][-1]),
                "middle_theta": float(m["theta"][mid].mean()) if L > 2 else float("nan"),
                "middle_rel_update": float(m["rel_update"][mid].mean()) if L > 2 else float("nan"),
                "middle_theta_dh": float(m["theta_dh"][pairs].mean()) if L >= 4 else float("nan"),
                "tokens": int(sel.sum()), "layers": L})
    return rows


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


def controls(profile: Profile, cache: results.Cache | None = None, *,
             progress: bool = True, only: list[str] | None = None) -> pd.DataFrame:
    """Per-sequence statistics of every control model, trained and untrained (one row per
    sequence), each model cached as soon as it finishes."""
    from layerlab.progress import tqdm

    cache = cache or results.Cache(profile.name)
    cfg = config_for(profile)
    frames = []
    todo = [(n, t) for n in (only or control_names(profile)) for t in (True, False)]
    for name, trained in tqdm(todo, desc="controls", disable=not progress):
        key = {**_cache_key(profile, name), "sequences": cfg.control_sequences}
        item = f"{name}-{'trained' if trained else 'untrained'}"
        rows = cache.get(CONTROLS, key, item)
        if rows is None:
            cache.may_compute(f"{CONTROLS}/{item}")
            lm = _control_model(name, profile, trained)
            batches, _ = _batches(lm, profile, cfg)
            rows = cache.put(CONTROLS, key, sequence_stats(lm, batches,
                                                           limit=cfg.control_sequences), item=item)
            del lm
        frame = pd.DataFrame(rows)
        frame["model"], frame["trained"] = name, trained
        frame["layers"] = (_member(name)[0] if name.startswith(FAMILY_PREFIX)
                           else rows[0]["layers"] if rows else np.nan)
        frame["family"] = name.startswith(FAMILY_PREFIX)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def bootstrap_mean(values: np.ndarray, *, n: int = 2000, seed: int = 0) -> np.ndarray:
    """Bootstrap distribution of the mean of `values` (resampling the sequences)."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    return values[rng.integers(0, len(values), size=(n, len(values)))].mean(1)


def _interval(draws: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return float(lo), float(hi)


def control_table(seq: pd.DataFrame, *, n: int = 2000) -> pd.DataFrame:
    """Per model and statistic: the trained and untrained means with 95 % bootstrap intervals
    over sequences, the edge ratio min(first, last)/middle, and trained − untrained."""
    rows = []
    for model, g in seq.groupby("model", sort=False):
        draws = {}
        for trained, h in g.groupby("trained"):
            d = {s: bootstrap_mean(h[s].to_numpy(), n=n, seed=1) for s in SEQUENCE_STATS}
            # ratio of means, resampled jointly (the same sequences in numerator and denominator)
            idx = np.random.default_rng(2).integers(0, len(h), size=(n, len(h)))
            edge = np.minimum(h["first_theta"].to_numpy()[idx].mean(1),
                              h["last_theta"].to_numpy()[idx].mean(1))
            d["edge_ratio"] = edge / h["middle_theta"].to_numpy()[idx].mean(1)
            draws[bool(trained)] = d
        for stat in (*SEQUENCE_STATS, "edge_ratio"):
            row = {"model": model, "statistic": stat, "layers": g["layers"].iloc[0],
                   "family": bool(g["family"].iloc[0])}
            for trained, label in ((True, "trained"), (False, "untrained")):
                if trained in draws:
                    d = draws[trained][stat]
                    row[label], (row[f"{label}_lo"], row[f"{label}_hi"]) = float(np.mean(d)), _interval(d)
            if True in draws and False in draws:
                diff = draws[True][stat] - draws[False][stat]
                row["difference"], (row["diff_lo"], row["diff_hi"]) = float(diff.mean()), _interval(diff)
            rows.append(row)
    return pd.DataFrame(rows)


def control_slopes(seq: pd.DataFrame, column: str, min_layers: int = 4) -> dict[str, dict]:
    """`depth_slope` of one statistic over the family members (every seed), trained and
    untrained, and their difference with a normal-approximation 95 % interval."""
    out = {}
    for trained, label in ((True, "trained"), (False, "untrained")):
        per = (seq[seq["family"] & (seq["trained"] == trained)]
               .groupby("model").agg(layers=("layers", "first"), value=(column, "mean")))
        summary = per.rename(columns={"value": column}).assign(family=True)
        out[label] = depth_slope(summary, column, min_layers=min_layers)
    t, u = out["trained"], out["untrained"]
    diff = t["slope"] - u["slope"]
    se = float(np.hypot(t["se"], u["se"]))
    out["difference"] = {"slope": diff, "se": se, "lo": diff - 1.96 * se, "hi": diff + 1.96 * se}
    return out


def family_points(seq: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per family member (every seed) and condition: the mean of one per-sequence statistic."""
    fam = seq[seq["family"]]
    out = fam.groupby(["model", "trained"]).agg(layers=("layers", "first"),
                                                value=(column, "mean")).reset_index()
    out["condition"] = np.where(out["trained"], "trained", "untrained")
    return out.drop(columns="trained")


def slope_summary(slopes: dict[str, dict[str, dict]]) -> pd.DataFrame:
    """The fitted slopes (trained, untrained, difference) of several statistics, one row each."""
    return pd.DataFrame([{"statistic": stat, "condition": cond, "slope": v["slope"],
                          "lo": v["lo"], "hi": v["hi"]}
                         for stat, by in slopes.items() for cond, v in by.items()])


# --- verdicts: one function per claim, each decided by `claims.decide` ------------------------
CHAPTER = "02_hidden_state_geometry"
EDGE_MIN_LAYERS = 8  # P1-A1's scope: fewer blocks leave "the middle" a handful of blocks
DH_MIN_LAYERS = 4  # P1-A3's scope: a pair of middle updates exists


def _decided(claim_id: str, units: list, *, ours: str, setting: str, numbers: dict | None = None):
    """The one decision procedure (`claims.decide`) on the claim's declaration and units."""
    from layerlab import claims
    from layerlab.depth.declarations import DECLARATIONS

    decl = DECLARATIONS[claim_id]
    decision = claims.decide(decl, units)
    numbers = {**(numbers or {}),
               "per_model": {n: str(v) for n, (v, _) in decision.units.items()}}
    return claims.make(decl, decision, ours=ours, setting=setting, numbers=numbers)


def _finite(*values: float) -> bool:
    return all(v is not None and np.isfinite(v) for v in values)


def _iv(row, label: str) -> list[float]:
    """[value, lo, hi] of `label` ("trained" or "untrained") in a `control_table` row (NaN where
    the condition was not measured)."""
    return [float(getattr(row, f"{label}{s}", np.nan)) for s in ("", "_lo", "_hi")]


def _text(v: list[float]) -> str:
    return f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" if _finite(*v) else "not measured"


def edge_units(table: pd.DataFrame) -> list:
    """P1-A1: one unit per model with at least `EDGE_MIN_LAYERS` blocks. The primary is the edge
    ratio's 95 % interval less the upper end of the untrained twin's (its excess over the
    negative control's range, which must be above 0); the ratio itself is the secondary "edges
    above the middle" (above 1). The control, the twin's own excess over its range, is at most 0
    by construction: the calibrated threshold is the control."""
    from layerlab.claims import Estimate, Unit

    rows = table[(table["statistic"] == "edge_ratio") & (table["layers"] >= EDGE_MIN_LAYERS)]
    if rows.empty:
        return [Unit(name="no model", primary=None,
                     precondition=f"no model with at least {EDGE_MIN_LAYERS} blocks")]
    units = []
    for r in rows.itertuples():
        t, u = _iv(r, "trained"), _iv(r, "untrained")
        if not _finite(*t):
            units.append(Unit(name=r.model, primary=None,
                              precondition="the edge ratio could not be measured"))
            continue
        if not _finite(*u):
            units.append(Unit(name=r.model, primary=None,
                              precondition="no untrained twin measured on the same windows"))
            continue
        top = u[2]
        units.append(Unit(name=r.model, primary=Estimate(t[0] - top, t[1] - top, t[2] - top),
                          control=Estimate(u[0] - top, u[1] - top, 0.0),
                          secondary={"edges above the middle": Estimate(*t)}))
    return units


def assess_edges(table: pd.DataFrame, setting: str):
    """P1-A1: only the first and last blocks rotate strongly — per model (≥ 8 blocks), the edge
    ratio's interval above the untrained twin's 95 % range and above 1."""
    rows = table[(table["statistic"] == "edge_ratio") & (table["layers"] >= EDGE_MIN_LAYERS)]
    ours = "; ".join(
        f"{r.model}: min(first, last)/middle {_text(_iv(r, 'trained'))}, untrained "
        f"{_text(_iv(r, 'untrained'))}" for r in rows.itertuples()) or "no model with ≥ 8 blocks"
    return _decided(
        "P1-A1-edges-rotate", edge_units(table), ours=ours, setting=setting,
        numbers={"edge_ratio": {r.model: {"trained": _iv(r, "trained"),
                                          "untrained": _iv(r, "untrained")}
                                for r in rows.itertuples()}})


def family_monotone(losses: pd.DataFrame) -> dict[str, Any]:
    """Whether the seed-mean validation loss falls with depth. `strict`: every added depth
    lowers the mean. `monotone` (what the verdict reads): no added depth raises the mean by more
    than the standard error of that difference (pooled seed SD), and the deepest member beats the
    shallowest by more than two standard errors — a strict ordering of means that differ by less
    than the seed noise is a coin toss, not evidence either way."""
    by = losses.groupby("depth")["val_loss"].agg(["mean", "std", "size"]).sort_index()
    means, n = by["mean"].to_numpy(), by["size"].to_numpy()
    steps = np.diff(means)
    pooled = float(np.sqrt(np.nanmean(by["std"].to_numpy() ** 2))) if (n > 1).any() else np.nan
    se = pooled * np.sqrt(1 / n[1:] + 1 / n[:-1]) if np.isfinite(pooled) else np.zeros_like(steps)
    overall_se = pooled * np.sqrt(1 / n[0] + 1 / n[-1]) if np.isfinite(pooled) else 0.0
    within = bool((steps <= se).all() and means[-1] < means[0] - 2 * overall_se)
    return {"monotone": within, "strict": bool((steps < 0).all()),
            "largest_step": float(steps.max()), "seed_sd": pooled,
            "by_depth": {int(d): {"mean": float(r["mean"]), "sd": float(r["std"])
                                  if r["size"] > 1 else float("nan"), "seeds": int(r["size"])}
                         for d, r in by.iterrows()}}


def inverse_depth_unit(slopes: dict[str, dict], monotone: dict[str, Any]):
    """P1-A2: one unit, the depth family: its trained slope with the untrained twins' slope as
    the negative control; not testable where the family's loss does not fall with depth, where
    no slope could be fitted, or where the slope's interval is wider than the band."""
    from layerlab.claims import Estimate, Unit
    from layerlab.depth.declarations import DECLARATIONS

    t, u = slopes["trained"], slopes["untrained"]
    if not _finite(t["slope"], t["lo"], t["hi"]):
        return Unit(name="depth family", primary=None,
                    precondition="fewer than 3 family depths with a middle: no slope")
    est = Estimate(t["slope"], t["lo"], t["hi"])
    band = DECLARATIONS["P1-A2-update-inverse-depth"].band
    pre = None
    if not monotone["monotone"]:
        pre = ("the family's seed-mean validation loss does not fall with depth beyond the seed "
               "noise: depth buys nothing to explain")
    elif t["hi"] - t["lo"] > band.hi - band.lo and band.test(est) != "fail":
        pre = (f"the slope's 95 % interval [{t['lo']:.2f}, {t['hi']:.2f}] is wider than the band "
               f"{band.text('.3g')}")
    control = Estimate(u["slope"], u["lo"], u["hi"]) if _finite(u["slope"], u["lo"], u["hi"]) \
        else None
    return Unit(name="depth family", primary=est, precondition=pre, control=control)


def assess_inverse_depth(slopes: dict[str, dict], monotone: dict[str, Any], setting: str):
    """P1-A2: the middle-layer update ∝ 1/ℓ — the family's log–log slope against −1 (band
    [−1.5, −0.5]), judged only on a family whose loss falls with depth, with its untrained twins
    through the same band as the negative control."""
    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    return _decided(
        "P1-A2-update-inverse-depth", [inverse_depth_unit(slopes, monotone)],
        ours=f"slope {t['slope']:.2f} (95 % CI [{t['lo']:.2f}, {t['hi']:.2f}], {t['n']} members); "
             f"untrained twins {u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}]; trained − "
             f"untrained {d['slope']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}]"
             + ("" if monotone["monotone"] else "; the family's loss does not fall with depth"),
        setting=setting,
        numbers={"slope": t, "untrained": u, "difference": d, "monotone": monotone["monotone"]})


POSITIVE_WIDTH, POSITIVE_SEQUENCES, POSITIVE_TOKENS, POSITIVE_SEED = 64, 16, 64, 0


def smooth_stream(layers: int, *, width: int = POSITIVE_WIDTH,
                  sequences: int = POSITIVE_SEQUENCES, tokens: int = POSITIVE_TOKENS,
                  seed: int = POSITIVE_SEED) -> np.ndarray:
    """P1-A3's positive control: per sequence, the middle θ(Δh_l, Δh_{l+1}) of a smooth residual
    stream — `layers` Euler steps h_{l+1} = h_l + v(h_l)/ℓ of one smooth random vector field
    v(h) = W₂ tanh(W₁ h) (procedural assembly: consecutive updates aligned by construction),
    measured by `hidden.token_metrics` as the models are. Seeded; float32."""
    gen = torch.Generator().manual_seed(seed)
    w1 = torch.randn(width, width, generator=gen) / width ** 0.5
    w2 = torch.randn(width, width, generator=gen) / width ** 0.5
    out = []
    for _ in range(sequences):
        h = torch.randn(tokens, width, generator=gen)
        states = [h]
        for _ in range(layers):
            h = h + torch.tanh(h @ w1.T) @ w2.T / layers
            states.append(h)
        theta_dh = hidden.token_metrics(torch.stack(states))["theta_dh"]
        out.append(float(theta_dh[hidden.middle_pairs(layers)].mean()))
    return np.array(out)


def positive_estimate(layers: int, *, n: int = 2000):
    """The smooth stream's middle θ(Δh) at `layers` blocks with the models' bootstrap (its mean
    over sequences, the same resamples and percentiles as `control_table`)."""
    from layerlab.claims import Estimate

    values = smooth_stream(layers)
    lo, hi = _interval(bootstrap_mean(values, n=n, seed=1))
    return Estimate(float(values.mean()), lo, hi)


def weak_correlation_units(table: pd.DataFrame, positive=None) -> list:
    """P1-A3: one unit per model with at least `DH_MIN_LAYERS` blocks, its middle θ(Δh) with the
    smooth stream of the same depth as the positive control (or `positive` for every unit)."""
    from layerlab.claims import Estimate, Unit

    rows = table[(table["statistic"] == "middle_theta_dh") & (table["layers"] >= DH_MIN_LAYERS)]
    if rows.empty:
        return [Unit(name="no model", primary=None,
                     precondition=f"no model with at least {DH_MIN_LAYERS} blocks")]
    controls: dict[int, Any] = {}
    units = []
    for r in rows.itertuples():
        layers = int(r.layers)
        if positive is None and layers not in controls:
            controls[layers] = positive_estimate(layers)
        t = _iv(r, "trained")
        units.append(Unit(name=r.model, primary=Estimate(*t) if _finite(*t) else None,
                          control=positive if positive is not None else controls[layers]))
    return units


def assess_weak_correlation(table: pd.DataFrame, slopes: dict[str, dict], setting: str, *,
                            positive=None):
    """P1-A3 (an absence claim): consecutive updates weakly correlated — per model (≥ 4 blocks)
    the middle θ(Δh) inside [π/4, 3π/4], where a smooth residual stream (the positive control,
    `smooth_stream`; `positive` overrides it for every unit) must fall outside. The untrained
    twins and the family's slope of θ(Δh) on depth are shown beside, not deciding."""
    rows = table[(table["statistic"] == "middle_theta_dh") & (table["layers"] >= DH_MIN_LAYERS)]
    units = weak_correlation_units(table, positive)
    pos = {u.name: u.control for u in units if u.control is not None}
    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    ours = "; ".join(f"{r.model}: {_text(_iv(r, 'trained'))} rad (untrained "
                     f"{_iv(r, 'untrained')[0]:.2f}; smooth stream {pos[r.model].point:.2f})"
                     for r in rows.itertuples() if r.model in pos)
    ours += (f"; family slope of θ(Δh) on ℓ {t['slope']:.2f} [{t['lo']:.2f}, {t['hi']:.2f}], "
             f"untrained {u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}] (procedural: −1)")
    return _decided(
        "P1-A3-weak-update-correlation", units, ours=ours.lstrip("; "), setting=setting,
        numbers={"middle_theta_dh": {r.model: _iv(r, "trained") for r in rows.itertuples()},
                 "untrained": {r.model: _iv(r, "untrained") for r in rows.itertuples()},
                 "positive_control": {n: [e.point, e.lo, e.hi] for n, e in pos.items()},
                 "slope": t, "untrained_slope": u, "difference": d})


def assess(table: pd.DataFrame, slopes: dict[str, dict], dh_slopes: dict[str, dict],
           monotone: dict[str, Any], setting: str) -> list:
    """Chapter 02's geometry claims, each from its own function and decided by `claims.decide`
    against its declaration (`layerlab.depth.declarations`)."""
    return [assess_edges(table, setting), assess_inverse_depth(slopes, monotone, setting),
            assess_weak_correlation(table, dh_slopes, setting)]
