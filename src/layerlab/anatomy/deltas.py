"""Chapter 08: P2's "universal oscillatory delta pattern" (research/paper2.md §6).

For every tensor type: corr(Δ_l, Δ_{l+1}) over depth for the real weights, beside the closed-form
prediction from the measured variances (independent layers) and from the measured adjacent
correlations (stationary sequence), and beside controls: the same weights in shuffled layer
order, i.i.d. Gaussian layers with matched std, an untrained model of the same config, and
positive controls with known structure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from layerlab import claims
from layerlab.anatomy import weights as w
from layerlab.anatomy.declarations import DECLARATIONS
from layerlab.anatomy.lab import Lab, ProfileOrLab, recorded

__all__ = ["CHAPTER", "CONSTANT", "DeltaResult", "IID", "INVARIANT_MEASURES", "PAIR_RESAMPLES", "POSITIVE",
           "STRUCTURED", "aligned_mlp", "assess", "assess_oscillation", "assess_value",
           "invariant", "invariant_products", "measure", "measure_invariant", "oscillation_units",
           "pair_estimate", "positive_controls", "power", "run", "summary", "value_units"]

PAIR_RESAMPLES = 2000  # bootstrap resamples of the layer pairs behind each mean delta correlation
IID = "i.i.d. Gaussian, matched std"
POSITIVE = {"AR(1) ρ = 0.5": ("ar1", 0.5), "AR(1) ρ = 0.9": ("ar1", 0.9),
            "random walk": ("walk", 0.0), "smooth drift": ("smooth", 0.0)}


def _nanmean(x: np.ndarray) -> float:
    """Mean over the defined values (a constant stack, e.g. untrained norms, has none: NaN)."""
    x = np.asarray(x, dtype=np.float64)
    return float(x[np.isfinite(x)].mean()) if np.isfinite(x).any() else float("nan")


@recorded("delta_correlation", reads_e1=False)
def measure(lab: Lab, init_std: float) -> dict[str, Any]:
    """Per type and stack (the controls drawn at `init_std`): delta correlations per layer pair
    and the two closed-form predictions; cached."""
    lm = lab.lm
    types = w.tensor_types(lm)
    rows, preds = [], []
    for label, name in types.items():
        is_norm = w.value(lm.blocks[0], name).ndim == 1
        for kind, s in w.controls(lm, name, init_std).items():
            dc = w.delta_correlation(s)
            rows += [{"type": label, "stack": kind, "pair": l, "delta_corr": float(v)}
                     for l, v in enumerate(dc)]
            if kind == "real":
                r1 = w.adjacent_correlation(s)
                r2 = w.adjacent_correlation(s, lag=2)
                preds.append({
                    "type": label, "is_norm": is_norm,
                    "adjacent_corr": _nanmean(r1), "lag2_corr": _nanmean(r2),
                    "predicted_independent": _nanmean(w.independent_prediction(s)),
                    "predicted_stationary": w.stationary_prediction(_nanmean(r1), _nanmean(r2)),
                    "adjacent_by_layer": [float(x) for x in r1],
                })
    n = lab.cfg.control_elements
    for label, (kind, rho) in POSITIVE.items():
        s = w.synthetic(kind, lab.n_layers, n, rho=rho, seed=0)
        rows += [{"type": "synthetic", "stack": label, "pair": l, "delta_corr": float(v)}
                 for l, v in enumerate(w.delta_correlation(s))]
    return {"rows": rows, "predictions": preds}


@dataclass(frozen=True, eq=False)  # tables: compared field by field, not with ==
class DeltaResult:
    """Chapter 08's measurement (`run`)."""

    per_pair: pd.DataFrame  # one row per type, stack and layer pair
    predictions: pd.DataFrame  # one row per type
    summary: pd.DataFrame  # `summary(per_pair, predictions)`


def run(lab: ProfileOrLab) -> DeltaResult:
    """Chapter 08's measurement, cached under the model and init std: `per_pair` (one row per
    type, stack and layer pair), `predictions` (one row per type) and their `summary`."""
    lab = Lab.of(lab)
    value = measure(lab, init_std=lab.cfg.init_std)
    per_pair = pd.DataFrame(value["rows"])
    preds = pd.DataFrame(value["predictions"])
    return DeltaResult(per_pair=per_pair, predictions=preds, summary=summary(per_pair, preds))


# -- the basis question: permuting neurons or heads changes the flat weights, not the function --
INVARIANT_MEASURES = ("element-wise", "aligned neurons", "invariant product")


def _heads(lm) -> tuple[int, int, int]:
    cfg = lm.model.config
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    return heads, kv, cfg.hidden_size // heads


def invariant_products(lm) -> dict[str, np.ndarray]:
    """Per layer, four d × d matrices that no permutation of MLP neurons or attention heads can
    change: the MLP's W_down W_up and W_down W_gate (sums over neurons), and the attention's OV
    circuit Σ_h W_O^h W_V^{g(h)} and QK form Σ_h W_Q^{h⊤} W_K^{g(h)} (sums over heads; g maps a
    query head to its key/value group). [L, d²] stacks."""
    import torch

    heads, kv, hd = _heads(lm)
    out: dict[str, list[np.ndarray]] = {"MLP down·up": [], "MLP down·gate": [],
                                        "attention OV": [], "attention QK": []}
    for b in lm.blocks:
        p = {n: w.value(b, n).double().cpu() for n, _ in b.named_parameters()}
        get = {label: p[name] for label, name in w.LLAMA_TYPES.items() if name in p}
        out["MLP down·up"].append((get["down"] @ get["up"]).reshape(-1).numpy())
        out["MLP down·gate"].append((get["down"] @ get["gate"]).reshape(-1).numpy())
        ov = torch.zeros(get["o"].shape[0], get["v"].shape[1], dtype=torch.float64)
        qk = torch.zeros(get["q"].shape[1], get["k"].shape[1], dtype=torch.float64)
        for h in range(heads):
            g = h // (heads // kv)
            ov += get["o"][:, h * hd:(h + 1) * hd] @ get["v"][g * hd:(g + 1) * hd]
            qk += get["q"][h * hd:(h + 1) * hd].T @ get["k"][g * hd:(g + 1) * hd]
        out["attention OV"].append(ov.reshape(-1).numpy())
        out["attention QK"].append(qk.reshape(-1).numpy())
    return {k: np.stack(v) for k, v in out.items()}


def aligned_mlp(lm, order: list[int] | None = None) -> dict[str, np.ndarray]:
    """gate, up and down stacks after permuting each layer's MLP neurons to match the layer below
    (Hungarian matching on the cosine of each neuron's [gate row, up row, down column]); a chain,
    so layer l+1 is matched to the already aligned layer l. The function is unchanged. Matching
    itself raises the correlation of any two layers (it picks the best of n! pairings), so its null
    is the same chain over the layers in a shuffled `order`."""
    from scipy.optimize import linear_sum_assignment

    names = {t: w.LLAMA_TYPES[t] for t in ("gate", "up", "down")}
    blocks = [lm.blocks[i] for i in (order or range(len(lm.blocks)))]
    mats = [{t: w.value(b, n).double().cpu().numpy()
             for t, n in names.items()} for b in blocks]

    def features(m: dict[str, np.ndarray]) -> np.ndarray:
        f = np.concatenate([m["gate"], m["up"], m["down"].T], axis=1)
        return f / np.linalg.norm(f, axis=1, keepdims=True)

    aligned = [mats[0]]
    for m in mats[1:]:
        prev = features(aligned[-1])
        _, perm = linear_sum_assignment(-(prev @ features(m).T))
        aligned.append({"gate": m["gate"][perm], "up": m["up"][perm], "down": m["down"][:, perm]})
    return {t: np.stack([a[t].reshape(-1) for a in aligned]) for t in names}


@recorded("delta_invariant", reads_e1=False)
def measure_invariant(lab: Lab) -> list[dict[str, Any]]:
    """Mean delta and adjacent correlations of the element-wise, aligned and invariant stacks,
    each beside the same stack in shuffled layer order and the independent-layers prediction."""
    lm = lab.lm
    stacks: dict[tuple[str, str], np.ndarray] = {}
    for t in ("gate", "up", "down", "q", "k", "v", "o"):
        stacks[("element-wise", t)] = w.stack(lm, w.LLAMA_TYPES[t])
    order = [int(i) for i in np.random.default_rng(0).permutation(len(lm.blocks))]
    nulls: dict[tuple[str, str], np.ndarray] = {}
    shuffled_aligned = aligned_mlp(lm, order)
    for t, s in aligned_mlp(lm).items():
        stacks[("aligned neurons", t)] = s
        nulls[("aligned neurons", t)] = shuffled_aligned[t]
    for t, s in invariant_products(lm).items():
        stacks[("invariant product", t)] = s
    rows = []
    for (measure, t), s in stacks.items():
        null = nulls.get((measure, t))
        null = w.shuffled(s) if null is None else null
        rows.append({"measure": measure, "type": t,
                     "real": _nanmean(w.delta_correlation(s)),
                     "shuffled order": _nanmean(w.delta_correlation(null)),
                     "independent prediction": _nanmean(w.independent_prediction(s)),
                     "adjacent_corr": _nanmean(w.adjacent_correlation(s))})
    return rows


def invariant(lab: Lab) -> pd.DataFrame:
    """The permutation-invariant check, cached (weights only: a minute)."""
    return pd.DataFrame(measure_invariant(lab)).round(3)


def summary(per_pair: pd.DataFrame, preds: pd.DataFrame) -> pd.DataFrame:
    """Mean [min, max] of the delta correlation per type and stack, with the predictions."""
    real = per_pair[per_pair["type"] != "synthetic"]
    agg = real.groupby(["type", "stack"], sort=False)["delta_corr"].agg(["mean", "min", "max"])
    wide = agg["mean"].unstack("stack")
    wide.insert(1, "real min", agg["min"].xs("real", level="stack"))
    wide.insert(2, "real max", agg["max"].xs("real", level="stack"))
    p = preds.set_index("type")[["adjacent_corr", "predicted_independent", "predicted_stationary"]]
    return wide.join(p).loc[preds["type"]].round(3)


def positive_controls(per_pair: pd.DataFrame) -> pd.DataFrame:
    """Mean delta correlation of each synthetic stack beside its closed form (−(1 − ρ)/2 for
    AR(1), 0 for a random walk, none for the smooth drift): the check that the statistic reads
    known cross-layer structure correctly before it is read on real weights."""
    syn = per_pair[per_pair["type"] == "synthetic"]
    out = syn.groupby("stack", sort=False)["delta_corr"].mean().rename("measured").to_frame()
    expected = {label: (-(1 - rho) / 2 if kind == "ar1" else 0.0 if kind == "walk" else None)
                for label, (kind, rho) in POSITIVE.items()}
    out["closed form"] = [expected[s] for s in out.index]
    return out.round(3)


CHAPTER = "08_delta_oscillation"
# positive controls with cross-layer structure the oscillation band must reject (its power)
STRUCTURED = ("AR(1) ρ = 0.9", "random walk", "smooth drift")


def pair_estimate(values: Any, resamples: int = PAIR_RESAMPLES, seed: int = 0
                  ) -> claims.Estimate | None:
    """Mean of the defined per-pair delta correlations with its 95 % percentile interval,
    resampling the layer pairs; None when no pair is defined (a constant stack)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if not len(x):
        return None
    if len(x) == 1:
        return claims.Estimate.exact(float(x[0]))
    means = x[np.random.default_rng(seed).integers(0, len(x), (resamples, len(x)))].mean(axis=1)
    return claims.Estimate(float(x.mean()), float(np.percentile(means, 2.5)),
                           float(np.percentile(means, 97.5)))


def _pairs(per_pair: pd.DataFrame, type_: str, stack: str) -> np.ndarray:
    rows = per_pair[(per_pair["type"] == type_) & (per_pair["stack"] == stack)]
    return rows.sort_values("pair")["delta_corr"].to_numpy()


def _types(per_pair: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(per_pair.loc[per_pair["type"] != "synthetic", "type"]))


CONSTANT = "the stack is constant across layers (e.g. untrained norms of ones): no delta correlation"


def value_units(per_pair: pd.DataFrame) -> list[claims.Unit]:
    """P2-C3-delta-value: one unit per tensor type, its mean delta correlation over layer pairs."""
    units = []
    for t in _types(per_pair):
        est = pair_estimate(_pairs(per_pair, t, "real"))
        units.append(claims.Unit(name=t, primary=est,
                                 precondition=None if est is not None else CONSTANT))
    return units


def power(per_pair: pd.DataFrame, band: claims.Band) -> str | None:
    """The failed-precondition text when the band does not reject every structured positive
    control (the rule could not tell cross-layer structure from none), else None."""
    missing = [c for c in STRUCTURED if not len(_pairs(per_pair, "synthetic", c))]
    if missing:
        return "positive controls not measured: " + ", ".join(missing)
    kept = []
    for c in STRUCTURED:
        est = pair_estimate(_pairs(per_pair, "synthetic", c))
        if est is None or band.test(est) != "fail":
            kept.append(c)
    return ("the band does not reject structured positive controls (" + ", ".join(kept)
            + "): no power") if kept else None


def oscillation_units(per_pair: pd.DataFrame, inv: pd.DataFrame) -> list[claims.Unit]:
    """P2-C3-oscillation: element-wise per tensor type (control: i.i.d. Gaussian layers of matched
    std) and per neuron-aligned or invariant measure (control: the same measure over shuffled
    layers; means only, taken exact), each through the same band."""
    no_power = power(per_pair, DECLARATIONS["P2-C3-oscillation"].band)
    units = []
    for t in _types(per_pair):
        est = pair_estimate(_pairs(per_pair, t, "real"))
        units.append(claims.Unit(name=f"element-wise {t}", primary=est,
                                 precondition=no_power or (None if est is not None else CONSTANT),
                                 control=pair_estimate(_pairs(per_pair, t, IID))))
    for _, r in inv[inv["measure"] != "element-wise"].iterrows():
        real, null = float(r["real"]), float(r["shuffled order"])
        units.append(claims.Unit(
            name=f"{r['measure']} {r['type']}",
            primary=claims.Estimate.exact(real) if math.isfinite(real) else None,
            precondition=no_power or (None if math.isfinite(real) else CONSTANT),
            control=claims.Estimate.exact(null) if math.isfinite(null) else None))
    return units


def assess_value(result: DeltaResult, setting: str, *, stand_in: str | None = None) -> claims.Claim:
    """P2-C3-delta-value ("≈ −0.50 in every component") decided per tensor type on its
    pair-bootstrap interval; `result` is `run`'s output, `setting` the model in words."""
    s, per_pair = result.summary, result.per_pair
    decl = DECLARATIONS["P2-C3-delta-value"]
    units = claims.flagged(value_units(per_pair), stand_in)
    est = {u.name: u.primary for u in units}
    return claims.make(
        decl, claims.decide(decl, units),
        ours="; ".join(f"{t} {e.point:+.3f} [{e.lo:+.3f}, {e.hi:+.3f}]" if e else f"{t} undefined"
                       for t, e in est.items()),
        setting=setting,
        numbers={"mean": {t: float(s.loc[t, "real"]) for t in s.index},
                 "interval": {t: [e.lo, e.hi] for t, e in est.items() if e},
                 "min": {t: float(s.loc[t, "real min"]) for t in s.index},
                 "max": {t: float(s.loc[t, "real max"]) for t in s.index}})


def assess_oscillation(result: DeltaResult, inv: pd.DataFrame,
                       setting: str) -> claims.Claim:
    """P2-C3-oscillation decided on the element-wise units and the permutation-invariant ones
    from `inv` (`invariant`'s table), with the positive controls' means in the record."""
    s, per_pair = result.summary, result.per_pair
    other = inv[inv["measure"] != "element-wise"]
    decl = DECLARATIONS["P2-C3-oscillation"]
    nulls = [c for c in ("shuffled order", IID, "untrained (random init)") if c in s.columns]
    pos = positive_controls(per_pair)
    return claims.make(
        decl, claims.decide(decl, oscillation_units(per_pair, inv)),
        ours="; ".join(f"{t}: real {r['real']:+.3f}, shuffled {r['shuffled order']:+.3f}, "
                       f"i.i.d. {r[IID]:+.3f}" for t, r in s.iterrows())
             + "; permutation-invariant: " + "; ".join(
                 f"{r['measure']} {r['type']} {r['real']:+.3f} (null {r['shuffled order']:+.3f})"
                 for _, r in other.iterrows())
             + "; positive controls: " + "; ".join(
                 f"{c} {v:+.3f}" for c, v in pos["measured"].items()),
        setting=setting,
        numbers={"element-wise": {t: {c: float(r[c]) for c in ("real", *nulls)}
                                  for t, r in s.iterrows()},
                 "invariant": {f"{r['measure']} {r['type']}": {"real": float(r["real"]),
                                                               "shuffled order": float(r["shuffled order"])}
                               for _, r in other.iterrows()},
                 "positive controls": {c: float(v) for c, v in pos["measured"].items()}})


def assess(result: DeltaResult, inv: pd.DataFrame, setting: str, *,
           stand_in: Mapping[str, str] | None = None) -> list[claims.Claim]:
    """Chapter 08's two claims: the value (≈ −0.50) and the oscillatory structure it is said
    to reveal. `stand_in` (`precision.unresolved`): the claims the 4-bit stand-in's copies
    cannot resolve."""
    return [assess_value(result, setting, stand_in=(stand_in or {}).get("P2-C3-delta-value")),
            assess_oscillation(result, inv, setting)]
