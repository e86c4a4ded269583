"""Every chart builder of `layerlab.book.plots` (used by chapters 00-11) on a small synthetic
table with the columns it reads: its Vega-Lite spec validates, carries its data, and colours only
from the book's palette (`plots.CATEGORY`, `plots.PALETTE` via `scale_for`) or a named scale
(`SIGN_COLORS`, `VERDICT_COLORS`, a sequential scheme for ordered values). A builder added to
`plots.__all__` without a row in BUILDERS fails `test_every_chart_builder_has_a_row`."""

from __future__ import annotations

import inspect
import typing

import altair as alt
import numpy as np
import pandas as pd
import pytest

from layerlab import claims
from layerlab.book import plots
from layerlab.book.plots import _style, anatomy, geometry, scaling_law, toy, verdicts

MODELS = ["SmolLM2-135M", "Gemma-3-270M", "family-d4"]
SWEEPS = [f"{t}-kl-T{T}-s{s}" for t in ("tied", "independent") for T in (0.5, 1, 2)
          for s in (0, 1)] + ["tied-mse", "independent-mse"]
ARMS = ["uniform", "uniform 50% budget", "gtt", "G_stack", "random schedule", "gtt, paper's steps"]
STRATEGIES = ("remove", "mean", "scale 0.5", "noise", "ridge")
SETS = ("E0", "E1")


# --- synthetic inputs: the columns each builder reads ------------------------------------------
def _perplexity():
    return pd.DataFrame([{"model": m, "corpus": c, "perplexity": 10.0 + i + j, "predicted_tokens": 1000}
                         for i, m in enumerate(MODELS) for j, c in enumerate(("wiki", "code"))])


def _norms():
    return pd.DataFrame([{"model": m, "layer": l, "depth": l / 6, "mean_norm": 10.0 * (l + 1),
                          "state": "after final norm" if l == 6 else "residual stream"}
                         for m in MODELS for l in range(7)])


def _parts_by_cut():
    return pd.DataFrame([{"cut": cut, "ell": ell, "m": m, "D": 1e8 * ell, "loss": 3.0 + 1 / ell,
                          "depth_part": 0.5 / ell, "depth_term": 0.5 / ell, "alpha_l": 0.7}
                         for cut in (0, 20, 40) for ell in (2, 4, 8, 16) for m in (64, 128, 256)])


def _parts():
    return pd.DataFrame([{"m": m, "D": d, "width_part": 1 / m, "width_term": 1 / m,
                          "data_part": 1e6 / d, "data_term": 1e6 / d}
                         for m in (64, 128, 256) for d in (1e7, 1e8, 1e9)])


def _bootstrap(marks):
    return pd.Series(np.random.default_rng(0).normal(0.7, 0.01, 400)), 0.68, 0.72, marks


def _cut_scan():
    return pd.DataFrame([{"cut": c, "n_points": 203 - c, "recipe": r, "alpha_l": 0.7, "alpha_l_se": 0.05}
                         for c in (0, 20, 40) for r in ("paper", "converged")])


def _profile():
    a = np.linspace(0.3, 1.2, 10)
    return pd.DataFrame({"alpha_l": a, "lr_stat": 40 * (a - 0.7) ** 2, "objective": 0.01 + (a - 0.7) ** 2})


def _adam_path():
    return pd.DataFrame({"steps": [100, 1000, 10000, 50000], "alpha_l": [0.5, 0.6, 0.68, 0.7],
                         "objective": [0.02, 0.015, 0.0101, 0.01]})


def _shapes():
    return pd.DataFrame({"N": np.geomspace(1e7, 1.5e12, 8), "aspect": np.geomspace(20, 400, 8),
                         "m": 1000, "ell": 10})


def _profiles():
    return pd.DataFrame([{"convention": c, "tokens": t, "model": m, "depth": i / 10, "q25": 0.01 * (i + 1),
                          "q75": 0.03 * (i + 1), "mean": 0.02 * (i + 1), "median": 0.02 * (i + 1),
                          "layers": 10, "index": i}
                         for c in ("last block's output", "after final norm")
                         for t in ("positions ≥ 1", "all") for m in MODELS for i in range(10)])


def _scaling_summary():
    return pd.DataFrame({"model": MODELS + ["family-d8", "family-d16"],
                         "family": [False, False, True, True, True], "layers": [30, 18, 4, 8, 16],
                         "middle_theta_dh": [1.2, 1.3, 1.4, 1.1, 0.9]}).set_index("model")


def _control():
    return pd.DataFrame([{"statistic": st, "model": m, "layers": i + 4, "trained": 2.0, "trained_lo": 1.8,
                          "trained_hi": 2.2, "untrained": 1.0, "untrained_lo": 0.9, "untrained_hi": 1.1}
                         for st in ("edge_ratio", "middle_theta") for i, m in enumerate(MODELS)])


def _seq_means():
    return pd.DataFrame([{"layers": n, "value": 1 / n, "condition": c, "model": f"family-d{n}"}
                         for n in (2, 4, 8, 16) for c in ("trained", "untrained")])


def _lens():
    return pd.DataFrame([{"model": m, "condition": c, "layer": l, "depth": l / 6, "mean": 5 - l / 2,
                          "q25": 4 - l / 2, "q75": 6 - l / 2}
                         for m in MODELS for c in ("trained", "untrained") for l in range(6)])


def _effects():
    groups = ("first subject token", "middle subject tokens", "last subject token",
              "after the subject", "last token")
    return pd.DataFrame([{"group": g, "depth": d, "effect": (i + 1) * d / 5, "facts": 12}
                         for i, g in enumerate(groups) for d in (0.1, 0.3, 0.5, 0.7, 0.9)])


def _bulk_context():
    return pd.DataFrame([{"model": m, "T": T, "bos": bos, "bulk_fraction": 1 - 1.5 / T,
                          "bulk_fraction_without_position0": 1 - 0.5 / T, "minority_position0_share": 0.8}
                         for m in MODELS[:2] for T in (16, 64, 256) for bos in (True, False)])


def _tokens():
    rng = np.random.default_rng(1)
    return pd.DataFrame({"pc1": rng.normal(size=30), "pc2": rng.normal(size=30),
                         "group": ["minority" if i < 5 else "bulk" for i in range(30)],
                         "token": [f"tok{i}" for i in range(30)], "position": range(30),
                         "norm_mid": rng.uniform(10, 100, 30)})


def _progress():
    arrays = {"progress": np.linspace(0, 1, 30 * 7).reshape(30, 7),
              "token_text": np.array([f"tok{i}" for i in range(30)])}
    return arrays, _tokens()


def _family_curves():
    return pd.DataFrame([{"depth": d, "seed": s, "step": st, "tokens": st * 1e5,
                          "val_loss": 2 - st / 1000 - d / 100}
                         for d in (2, 4, 8) for s in (0, 1) for st in (0, 100, 200)])


def _family_losses():
    return pd.DataFrame([{"depth": d, "seed": s, "val_loss": 1.5 - d / 100 + s / 1000}
                         for d in (2, 4, 8, 16) for s in (0, 1)])


def _warmup():
    return pd.DataFrame([{"depth": d, "error": float(d) ** -p, "mechanism": m}
                         for m, p in (("average of ℓ noisy estimates", 1), ("ℓ Euler steps of a smooth flow", 2))
                         for d in (2, 4, 8, 16, 32, 64, 128)])


def _toy_loss():
    return pd.DataFrame([{"depth": d, "test_loss": 1e-2 / d, "sweep": s, "teacher": s.split("-")[0]}
                         for s in SWEEPS for d in (2, 4, 8, 16)])


def _local_slopes():
    return pd.DataFrame([{"sweep": s, "teacher": s.split("-")[0], "to": d, "pair": f"{d // 2}-{d}",
                          "slope": 1.0 + i / 10} for i, s in enumerate(SWEEPS[:4]) for d in (4, 8, 16)])


def _alpha_temperature():
    return pd.DataFrame([{"temperature": T, "alpha": 1.2, "alpha_se": 0.1, "teacher": t, "seed": s,
                          "sweep": f"{t}-{T}-{s}"}
                         for t in ("tied", "independent") for T in (0.5, 1, 2) for s in (0, 1)])


def _alpha_steps():
    return pd.DataFrame([{"sweep": s, "teacher": s.split("-")[0], "step": st, "alpha": 1 + st / 1000}
                         for s in SWEEPS[:4] for st in (100, 200, 300)])


def _signature():
    return pd.DataFrame([{"network": n, "middle_theta_dh": 1.2, "teacher": t}
                         for t in ("independent", "tied") for n in ("student ℓ=4", "teacher")])


def _importance():
    return pd.DataFrame([{"set": s, "method": m, "layer": i, "class": "x", "ppl": 10.0 + i,
                          "deg": (i - 3) * 50.0, "lo": 1.0, "hi": 9.0, "log10_ppl": 1 + i / 10}
                         for s in SETS for m in ("neighbour_average", "skip") for i in range(8)])


def _anchor():
    return pd.DataFrame({"layer": range(8), "block_influence": np.linspace(0, 0.3, 8),
                         "abs_deg": np.geomspace(0.1, 1e4, 8), "deg": np.geomspace(0.1, 1e4, 8)})


def _joint():
    return pd.DataFrame([{"set": s, "strategy": st, "ppl": 10.0 + i, "deg": (i - 2) * 30.0,
                          "lo": (i - 2) * 25.0, "hi": (i - 2) * 35.0}
                         for s in SETS for i, st in enumerate(STRATEGIES)])


def _single():
    return pd.DataFrame([{"set": s, "strategy": st, "layer": l, "deg": (i - 2) * 10.0 + l, "lo": 0.0, "hi": 1.0}
                         for s in SETS for i, st in enumerate(STRATEGIES) for l in range(6)])


def _alpha_sweep():
    return pd.DataFrame([{"alpha": a, "scope": sc, "set": s, "deg": a * 10, "lo": a * 8, "hi": a * 12}
                         for a in (0, 0.5, 1, 1.5) for sc in ("one layer", "target set", "all") for s in SETS])


def _removal():
    return pd.DataFrame([{"k": k, "strategy": st, "set": s, "layers removed": ",".join(map(str, range(k))),
                          "ppl": 10.0 * 1.5 ** k, "log10_ppl": 1 + k * 0.18, "deg": 50.0 * k}
                         for k in range(1, 5) for st in STRATEGIES[:3] for s in SETS])


def _ridge():
    return pd.DataFrame([{"stack": st, "protocol": p, "r2": 0.5, "type": t, "alpha": a, "cosine": 0.9}
                         for st in ("real", "shuffled") for p in ("in_sample", "forward", "other")
                         for t in ("q", "k", "v") for a in (1e-3, 1.0, 1e3, 1e6)])


def _paradox():
    return pd.DataFrame([{"k": k, "ppl": 10.0 * 3 ** k, "substitute": sub, "set": s, "layers": "1", "deg": 1.0}
                         for k in range(6) for sub in ("ridge", "mean") for s in SETS])


def _delta_pairs():
    return pd.DataFrame([{"type": t, "stack": st, "pair": i, "delta_corr": -0.4 + i / 100}
                         for t in ("q", "k", "synthetic") for st in ("real", "shuffled") for i in range(6)])


def _delta_summary():
    return pd.DataFrame({"type": ["q", "k", "v"], "real": [-0.45, -0.4, -0.5], "real min": [-0.6] * 3,
                         "real max": [-0.3] * 3, "shuffled": [-0.5] * 3, "independent": [-0.5, np.nan, -0.49],
                         "adjacent_corr": [0.9] * 3, "predicted_stationary": [-0.5] * 3}).set_index("type")


def _recovery(seed=True):
    df = pd.DataFrame([{"condition": c, "layer": i, "step": st, "ppl": 20.0 / (1 + st / 100), "seed": 0}
                       for c in ("fixed σ", "calibrated σ") for i in (1, 2, 3, 5, 8, 11, 13, 14)
                       for st in (0, 100, 200)])
    return df if seed else df.drop(columns="seed")


def _growth():
    return pd.DataFrame([{"regime": r, "arm": a, "val_loss": 3 - s / 100, "lo": 2.9 - s / 100,
                          "hi": 3.1 - s / 100, "count": 3, "step": s, "layer_steps": s * 12,
                          "flops": s * 1e12, "seconds": s / 10, "tokens": s * 1e4}
                         for r in ("natural", "memorise") for a in ARMS for s in (0, 50, 100)])


def _verdicts():
    names = list(claims.VERDICT_COLOURS)
    return pd.DataFrame([{"id": f"P{p}-{i}", "paper": f"P{p}", "chapter": f"0{i}",
                          "statement": f"claim {i} of paper {p}, " + "long enough to be cut " * 4,
                          "paper_value": "0.7", "ours": "0.68", "rule": "within band",
                          "verdict": names[i % len(names)], "setting": "cpu"}
                         for p in (1, 2) for i in range(5)])


def _cross_layers():
    return pd.DataFrame({"layer": range(8), "theta": np.linspace(0.2, 1, 8),
                         "rel_update": np.linspace(0.1, 2, 8), "skip deg %": np.geomspace(1, 1e4, 8),
                         "neighbour-average deg %": np.geomspace(1, 1e3, 8)})


# builder -> its calls on synthetic inputs (several where an argument changes the spec's shape)
BUILDERS = {
    "perplexity_bars": [lambda: plots.perplexity_bars(_perplexity())],
    "norm_lines": [lambda: plots.norm_lines(_norms())],
    "depth_part_slider": [lambda: plots.depth_part_slider(_parts_by_cut()),
                          lambda: plots.depth_part_slider(_parts_by_cut(), default_cut=7)],
    "other_parts": [lambda: plots.other_parts(_parts())],
    "bootstrap_histogram": [lambda: plots.bootstrap_histogram(*_bootstrap(
        {"paper recipe": 0.69, "converged": 0.71, "ensemble averaging: 1": 1.0}))],
    "cut_scan_chart": [lambda: plots.cut_scan_chart(_cut_scan()),
                       lambda: plots.cut_scan_chart(_cut_scan(), band=(0.5, 0.9))],
    "profile_chart": [lambda: plots.profile_chart(_profile())],
    "adam_path_chart": [lambda: plots.adam_path_chart(_adam_path(), 0.7)],
    "aspect_chart": [lambda: plots.aspect_chart(_shapes(), _shapes())],
    "layer_profiles": [lambda: plots.layer_profiles(_profiles(), "θ(h_l, h_{l+1}) (rad)", reference=1.57),
                       lambda: plots.layer_profiles(_profiles(), "relative update", log=True)],
    "depth_scaling_points": [
        lambda: plots.depth_scaling_points(_scaling_summary(), "middle_theta_dh", "middle θ"),
        lambda: plots.depth_scaling_points(
            _scaling_summary(), "middle_theta_dh", "middle θ", fit={"slope": -0.5, "intercept": 0.3},
            reference=pd.DataFrame({"layers": [4, 8, 16], "middle_theta_dh": [1.5, 1.1, 0.8]}))],
    "control_chart": [lambda: plots.control_chart(_control(), "edge_ratio", "edge ratio of θ")],
    "slope_chart": [lambda: plots.slope_chart(_seq_means(), "middle_theta", "middle θ (rad)",
                                              {c: {"slope": -1.0, "intercept": 0.0}
                                               for c in ("trained", "untrained")})],
    "lens_chart": [lambda: plots.lens_chart(_lens())],
    "tracing_heatmap": [lambda: plots.tracing_heatmap(_effects(), "Causal tracing")],
    "bulk_vs_context": [lambda: plots.bulk_vs_context(_bulk_context())],
    "token_scatter": [lambda: plots.token_scatter(_tokens(), "tokens on PC1 and PC2")],
    "progress_profiles": [lambda: plots.progress_profiles(*_progress(), n=3)],
    "family_loss_chart": [lambda: plots.family_loss_chart(_family_curves())],
    "family_final_chart": [lambda: plots.family_final_chart(_family_losses())],
    "warmup_chart": [lambda: plots.warmup_chart(_warmup())],
    "toy_loss_chart": [lambda: plots.toy_loss_chart(_toy_loss())],
    "local_slope_chart": [lambda: plots.local_slope_chart(_local_slopes())],
    "alpha_vs_temperature": [lambda: plots.alpha_vs_temperature(_alpha_temperature())],
    "alpha_vs_steps": [lambda: plots.alpha_vs_steps(_alpha_steps())],
    "signature_chart": [lambda: plots.signature_chart(_signature())],
    "importance_bars": [lambda: plots.importance_bars(_importance())],
    "method_lines": [lambda: plots.method_lines(_importance())],
    "anchor_scatter": [lambda: plots.anchor_scatter(_anchor(), "block_influence", "Deg vs BI")],
    "strategy_bars": [lambda: plots.strategy_bars(_joint())],
    "single_layer_heatmap": [lambda: plots.single_layer_heatmap(_single())],
    "alpha_sweep": [lambda: plots.alpha_sweep(_alpha_sweep())],
    "removal_curve": [lambda: plots.removal_curve(_removal())],
    "r2_vs_alpha": [lambda: plots.r2_vs_alpha(_ridge())],
    "paradox_chart": [lambda: plots.paradox_chart(_paradox())],
    "delta_lines": [lambda: plots.delta_lines(_delta_pairs())],
    "delta_summary_dots": [lambda: plots.delta_summary_dots(_delta_summary())],
    "recovery_curves": [lambda: plots.recovery_curves(_recovery(), 10.0),
                        lambda: plots.recovery_curves(_recovery(seed=False), 10.0)],
    "growth_curves": [lambda: plots.growth_curves(_growth())],
    "verdict_chart": [lambda: plots.verdict_chart(_verdicts())],
    "cross_paper_scatter": [
        lambda: plots.cross_paper_scatter(_cross_layers(), "theta", "skip deg %", "θ vs skip"),
        lambda: plots.cross_paper_scatter(_cross_layers(), "rel_update", "neighbour-average deg %", "t")],
}

# colours a chart may use beyond the palette: the named scales of the plots package, and
# sequential schemes for ordered values (layers and widths, restored share, signed degradation)
NAMED_SCALES = [plots.SIGN_COLORS.to_dict(), plots.VERDICT_COLORS.to_dict()]
SCHEMES = {"viridis", "purples", "redblue"}


# --- walking a spec ------------------------------------------------------------------------------
def _units(spec):
    """Every single-view spec (one with an encoding) inside a layered or concatenated chart."""
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in spec.get(key, []):
            yield from _units(child)
    if "spec" in spec:
        yield from _units(spec["spec"])
    if "encoding" in spec:
        yield spec


def _data_names(node):
    """The names of the datasets a spec's views read."""
    if isinstance(node, dict):
        if isinstance(node.get("data"), dict) and "name" in node["data"]:
            yield node["data"]["name"]
        for value in node.values():
            yield from _data_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from _data_names(value)


def _check_colours(spec):
    palette = set(plots.CATEGORY) | set(plots.PALETTE.values())
    assert spec["config"]["range"]["category"] == plots.CATEGORY  # unscaled names: the book's colours
    for unit in _units(spec):
        for channel in ("color", "fill", "stroke"):
            enc = unit["encoding"].get(channel)
            if not isinstance(enc, dict) or "field" not in enc:
                continue
            scale = enc.get("scale", {})
            if "scheme" in scale:
                assert scale["scheme"] in SCHEMES, (channel, enc["field"], scale["scheme"])
            elif "range" in scale:
                named = {k: scale[k] for k in ("domain", "range")}
                if named not in NAMED_SCALES:  # else a scale_for scale: palette colours only
                    assert set(scale["range"]) <= palette, (enc["field"], scale["range"])
                    for name, colour in zip(scale["domain"], scale["range"]):
                        assert plots.PALETTE.get(name, colour) == colour, (name, colour)
            else:  # no scale of its own: the theme's category colours, or Vega's ordered ramp
                assert not scale, (enc["field"], scale)


# --- one test per builder ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_chart_builder(name):
    for build in BUILDERS[name]:
        with alt.theme.enable("layerlab"):
            chart = build()
            spec = chart.to_dict(validate=True)  # raises on a spec Vega-Lite's schema rejects
        assert isinstance(chart, alt.TopLevelMixin)
        datasets = spec.get("datasets", {})
        assert datasets and all(len(rows) > 0 for rows in datasets.values()), name
        used = set(_data_names(spec))
        assert used and used <= set(datasets), (name, used - set(datasets))
        _check_colours(spec)


def _chart_builders():
    """The public functions of plots.__all__ whose return annotation is a chart."""
    found = set()
    for name in plots.__all__:
        obj = getattr(plots, name)
        if inspect.isfunction(obj):
            ret = typing.get_type_hints(obj).get("return")
            if isinstance(ret, type) and issubclass(ret, alt.TopLevelMixin):
                found.add(name)
    return found


def test_every_chart_builder_has_a_row():
    builders = _chart_builders()
    helpers = {n for n in plots.__all__ if inspect.isfunction(getattr(plots, n))} - builders
    assert helpers == {"scale_for", "log_axis"}  # an unannotated builder would land here
    assert builders == set(BUILDERS), (builders - set(BUILDERS), set(BUILDERS) - builders)


def test_the_package_reexports_every_family_module():
    modules = (_style, scaling_law, geometry, toy, anatomy, verdicts)
    names = [n for m in modules for n in m.__all__]
    assert sorted(names) == sorted(plots.__all__) and len(set(names)) == len(names)
    for module in modules:
        assert module.__doc__ and "\n" not in module.__doc__.strip()
        for name in module.__all__:
            assert getattr(plots, name) is getattr(module, name)
    assert "layerlab" in alt.theme.names()
