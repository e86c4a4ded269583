"""Chapters 02 and 03: hidden-state geometry of every model of a profile (the pretrained LLMs and
the depth family trained here), cached model by model, and the tables and fits built on it.

Every signature has an untrained control: the same statistics, sequence by sequence, on a model
of the same configuration at initialisation (`controls`), so a verdict can ask what training
changed rather than what any residual stack does (`layerlab.claims.against_control`)."""

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
    from tqdm.auto import tqdm

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
    from tqdm.auto import tqdm

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


# --- verdicts: one function per claim ---------------------------------------------------------
CHAPTER = "02_hidden_state_geometry"
EDGE_RATIO = 1.5  # first and last rotation above 1.5 × the middle one
SLOPE_TARGET, SLOPE_MARGIN = -1.0, 0.3  # P1: update ∝ 1/ℓ; research/paper1.md §8's ± 0.3
LARGE_ANGLE = 1.0  # rad: "large" consecutive-update angle
FLAT_SLOPE = -0.3  # a θ(Δh) slope above this is "not shrinking with depth"


def edge_rule(lo: float) -> str:
    """P1-A1 on one model: the lower end of the edge ratio's interval above 1.5."""
    from layerlab.claims import NOT_REPRODUCED, REPRODUCED

    return REPRODUCED if lo > EDGE_RATIO else NOT_REPRODUCED


def assess_edges(table: pd.DataFrame, setting: str):
    """P1-A1: only the first and last blocks rotate strongly (models with ≥ 8 blocks)."""
    from layerlab.claims import NOT_TESTABLE, Claim, against_control, combine

    rows = table[(table["statistic"] == "edge_ratio") & (table["layers"] >= 8)]
    per = {r.model: against_control(edge_rule(r.trained_lo), edge_rule(r.untrained_lo),
                                    r.diff_lo, r.diff_hi) for r in rows.itertuples()}
    return Claim(
        "P1-A1-edges-rotate", "P1", CHAPTER,
        "Only the first and last blocks rotate the hidden state strongly; the middle blocks make "
        "small updates", "qualitative (Fig. 2a–b)",
        "; ".join(f"{r.model}: min(first, last)/middle {r.trained:.2f} [{r.trained_lo:.2f}, "
                  f"{r.trained_hi:.2f}], untrained {r.untrained:.2f} → {per[r.model]}"
                  for r in rows.itertuples()),
        f"per model with ≥ 8 blocks: the 95 % interval of min(first, last)/middle θ(h_l, h_{{l+1}}) "
        f"above {EDGE_RATIO} (last block's own output, positions ≥ 1, bootstrap over sequences); "
        "not diagnostic where the untrained model passes too or the trained − untrained interval "
        "contains 0", combine(list(per.values())) if per else NOT_TESTABLE, setting,
        {"per_model": per})


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


def assess_inverse_depth(slopes: dict[str, dict], monotone: dict[str, Any], setting: str):
    """P1-A2: the middle-layer update ∝ 1/ℓ — an equivalence test of the family's slope against
    −1 ± 0.3, judged only on a family whose loss falls with depth, against its untrained twin."""
    from layerlab.claims import NOT_TESTABLE, Claim, against_control, equivalence

    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    trained = equivalence(t["slope"], t["lo"], t["hi"], SLOPE_TARGET, SLOPE_MARGIN)
    control = equivalence(u["slope"], u["lo"], u["hi"], SLOPE_TARGET, SLOPE_MARGIN)
    verdict = against_control(trained, control, d["lo"], d["hi"])
    if not monotone["monotone"]:
        verdict = NOT_TESTABLE
    return Claim(
        "P1-A2-update-inverse-depth", "P1", CHAPTER,
        "The middle-layer update shrinks as 1/ℓ across models of different depth",
        "slope −1 (∝ 1/ℓ)",
        f"slope {t['slope']:.2f} (95 % CI [{t['lo']:.2f}, {t['hi']:.2f}], {t['n']} members); "
        f"untrained twins {u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}]; trained − untrained "
        f"{d['slope']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}]"
        + ("" if monotone["monotone"] else "; the family's loss does not fall with depth"),
        "equivalence: the slope's 95 % CI inside −1 ± 0.3 (partly: only the point); judged only "
        "when the family's seed-mean loss falls with depth (no step up beyond its standard error, "
        "the deepest clearly below the shallowest); not diagnostic where the untrained family "
        "passes too or the difference CI contains 0",
        verdict, setting, {"slope": t, "untrained": u, "difference": d,
                           "monotone": monotone["monotone"]})


def assess_weak_correlation(table: pd.DataFrame, slopes: dict[str, dict], setting: str):
    """P1-A3: consecutive updates weakly correlated — θ(Δh) large and not shrinking with ℓ."""
    from layerlab.claims import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, Claim, against_control

    rows = table[(table["statistic"] == "middle_theta_dh") & (table["layers"] >= 4)]

    def rule(lo: float, slope_lo: float) -> str:
        return REPRODUCED if lo >= LARGE_ANGLE and slope_lo > FLAT_SLOPE else NOT_REPRODUCED

    t, u, d = slopes["trained"], slopes["untrained"], slopes["difference"]
    if rows.empty or not np.isfinite(t["lo"]):
        verdict = NOT_TESTABLE
    else:
        trained = rule(float(rows["trained_lo"].min()), t["lo"])
        control = rule(float(rows["untrained_lo"].min()), u["lo"])
        # the difference that matters is the angle's: the model whose interval of trained −
        # untrained lies furthest from 0 (if even that one contains 0, training changed nothing)
        gap = np.where(rows["diff_lo"] > 0, rows["diff_lo"],
                       np.where(rows["diff_hi"] < 0, -rows["diff_hi"], 0.0))
        far = rows.iloc[int(np.argmax(gap))]
        verdict = against_control(trained, control, float(far["diff_lo"]), float(far["diff_hi"]))
    return Claim(
        "P1-A3-weak-update-correlation", "P1", CHAPTER,
        "Consecutive updates are only weakly correlated: θ(Δh_l, Δh_{l+1}) is large in the middle "
        "layers and does not shrink with depth (procedural assembly predicts ∝ 1/ℓ)",
        "large, near π/2",
        "; ".join(f"{r.model}: {r.trained:.2f} rad (untrained {r.untrained:.2f})"
                  for r in rows.itertuples())
        + f"; family slope {t['slope']:.2f} [{t['lo']:.2f}, {t['hi']:.2f}], untrained "
          f"{u['slope']:.2f} [{u['lo']:.2f}, {u['hi']:.2f}]",
        f"every model's 95 % interval of middle θ(Δh) ≥ {LARGE_ANGLE} rad and the family slope's "
        f"CI above {FLAT_SLOPE}; not diagnostic where the untrained twins pass too",
        verdict, setting, {"slope": t, "untrained_slope": u, "difference": d})


def assess(table: pd.DataFrame, slopes: dict[str, dict], dh_slopes: dict[str, dict],
           monotone: dict[str, Any], setting: str) -> list:
    """Chapter 02's claims: each from its own function, each against its untrained control."""
    return [assess_edges(table, setting), assess_inverse_depth(slopes, monotone, setting),
            assess_weak_correlation(table, dh_slopes, setting)]
