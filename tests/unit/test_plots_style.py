"""One look across the book's charts: a palette that does not repeat past ten series, the same
colour for the same name in every chart, legends that show line colours (not pale bands) below
the plot, and axes titled in words with one notation for log-scale labels.

Charts are built from small synthetic tables with the columns each function reads; the checks
read the Vega-Lite spec (`chart.to_dict()`), so nothing is rendered."""

import numpy as np
import pandas as pd
import pytest

from layerlab.book import plots

# Vega's tableau20 (vega-scale's scheme string, split into colours)
TABLEAU20 = {f"#{c}" for c in (
    "4c78a8 9ecae9 f58518 ffbf79 54a24b 88d27a b79a20 f2cf5b 439894 83bcb6 "
    "e45756 ff9d98 79706e bab0ac d67195 fcbfd2 b279a2 d6a5c9 9e765f d8b5a5").split()}
MODELS = ["SmolLM2-135M", "Gemma-3-270M", "family-d4"]
SWEEPS = [f"{t}-kl-T{T}-s{s}" for t in ("tied", "independent") for T in (0.5, 1, 2)
          for s in (0, 1)] + ["tied-mse", "independent-mse"]  # 14, as in chapter 04
LAYERS = [1, 2, 3, 5, 8, 11, 13, 14, 15, 16, 17, 18, 19, 20]  # 14, as in chapter 09
ARMS = ["uniform", "uniform 50% budget", "gtt", "G_stack", "random schedule", "gtt, paper's steps"]


# --- synthetic inputs, one per chart function ----------------------------------------------------
def _profiles():
    return pd.DataFrame([{"convention": c, "tokens": t, "model": m, "depth": i / 10, "q25": 0.01 * (i + 1),
                          "q75": 0.03 * (i + 1), "mean": 0.02 * (i + 1), "median": 0.02 * (i + 1),
                          "layers": 10, "index": i}
                         for c in ("last block's output", "after final norm")
                         for t in ("positions ≥ 1", "all") for m in MODELS for i in range(10)])


def _bootstrap(marks):
    values = pd.Series(np.random.default_rng(0).normal(0.7, 0.01, 400))  # bins ~0.002 wide
    return plots.bootstrap_histogram(values, 0.68, 0.72, marks)


def _cut_scan():
    return plots.cut_scan_chart(pd.DataFrame([
        {"cut": c, "n_points": 203 - c, "recipe": r, "alpha_l": 0.7, "alpha_l_se": 0.05}
        for c in (0, 20, 40) for r in ("paper", "converged")]))


def _aspect():
    n = np.geomspace(1e7, 1.5e12, 8)  # Chinchilla's range: Vega's default wrote 1e+12 here
    shapes = pd.DataFrame({"N": n, "aspect": np.geomspace(20, 400, 8), "m": 1000, "ell": 10})
    return plots.aspect_chart(shapes, shapes)


def _control():
    return plots.control_chart(pd.DataFrame([
        {"statistic": "edge_ratio", "model": m, "layers": i + 4, "trained": 2.0, "trained_lo": 1.8,
         "trained_hi": 2.2, "untrained": 1.0, "untrained_lo": 0.9, "untrained_hi": 1.1}
        for i, m in enumerate(MODELS)]), "edge_ratio", "min(first, last) / middle θ(h_l, h_{l+1})")


def _slope():
    seq = pd.DataFrame([{"layers": n, "value": 1 / n, "condition": c, "model": f"family-d{n}"}
                        for n in (2, 4, 8, 16) for c in ("trained", "untrained")])
    fits = {c: {"slope": -1.0, "intercept": 0.0} for c in ("trained", "untrained")}
    return plots.slope_chart(seq, "middle_theta", "middle θ(h_l, h_{l+1}) (rad)", fits)


def _scaling_points():
    summary = pd.DataFrame({"model": MODELS, "family": [False, False, True], "layers": [30, 18, 4],
                            "middle_theta_dh": [1.2, 1.3, 1.4]}).set_index("model")
    return plots.depth_scaling_points(summary, "middle_theta_dh", "middle-layer θ(Δh_l, Δh_{l+1}) (rad)")


def _toy_loss():
    return plots.toy_loss_chart(pd.DataFrame([
        {"depth": d, "test_loss": 1e-2 / d, "sweep": s, "teacher": s.split("-")[0]}
        for s in SWEEPS for d in (2, 4, 8, 16)]))


def _alpha_temperature():
    return plots.alpha_vs_temperature(pd.DataFrame([
        {"temperature": T, "alpha": 1.2, "alpha_se": 0.1, "teacher": t, "seed": s, "sweep": f"{t}-{T}-{s}"}
        for t in ("tied", "independent") for T in (0.5, 1, 2) for s in (0, 1)]))


def _warmup():
    return plots.warmup_chart(pd.DataFrame([
        {"depth": d, "error": float(d) ** -p, "mechanism": m}
        for m, p in (("average of ℓ noisy estimates", 1), ("ℓ Euler steps of a smooth flow", 2))
        for d in (2, 4, 8, 16, 32, 64, 128)]))


def _signature():
    return plots.signature_chart(pd.DataFrame([
        {"network": n, "middle_theta_dh": 1.2, "teacher": t}
        for t in ("independent", "tied") for n in ("student ℓ=4", "teacher")]))


def _importance():
    return pd.DataFrame([{"set": s, "method": m, "layer": i, "class": "x", "ppl": 10.0 + i,
                          "deg": (i - 3) * 50.0, "lo": 1.0, "hi": 9.0, "log10_ppl": 1 + i / 10}
                         for s in ("E0", "E1") for m in ("neighbour_average", "skip") for i in range(8)])


def _anchor():
    points = pd.DataFrame({"layer": range(8), "block_influence": np.linspace(0, 0.3, 8),
                           "abs_deg": np.geomspace(0.1, 1e4, 8), "deg": np.geomspace(0.1, 1e4, 8)})
    return plots.anchor_scatter(points, "block_influence", "Degradation vs Block Influence (E1)")


def _alpha_sweep():
    return plots.alpha_sweep(pd.DataFrame([
        {"alpha": a, "scope": sc, "set": s, "deg": a * 10, "lo": a * 8, "hi": a * 12}
        for a in (0, 0.5, 1, 1.5) for sc in ("one layer", "target set", "all") for s in ("E0", "E1")]))


def _r2():
    return plots.r2_vs_alpha(pd.DataFrame([
        {"stack": "real", "protocol": p, "r2": 0.5, "type": t, "alpha": a, "cosine": 0.9}
        for p in ("in_sample", "forward") for t in ("q", "k", "v") for a in (1e-3, 1.0, 1e3, 1e6)]))


def _paradox():
    return plots.paradox_chart(pd.DataFrame([
        {"k": k, "ppl": 10.0 * 3 ** k, "substitute": sub, "set": s, "layers": "1", "deg": 1.0}
        for k in range(6) for sub in ("ridge", "mean") for s in ("E0", "E1")]))


def _delta_lines():
    return plots.delta_lines(pd.DataFrame([{"type": t, "stack": st, "pair": i, "delta_corr": -0.4}
                                           for t in ("q", "k") for st in ("real", "shuffled")
                                           for i in range(6)]))


def _recovery():
    return plots.recovery_curves(pd.DataFrame([
        {"condition": c, "layer": i, "step": st, "ppl": 20.0 / (1 + st / 100), "seed": 0}
        for c in ("fixed σ", "calibrated σ") for i in LAYERS for st in (0, 100, 200)]), 10.0)


def _growth():
    return plots.growth_curves(pd.DataFrame([
        {"regime": r, "arm": a, "val_loss": 3 - s / 100, "lo": 2.9 - s / 100, "hi": 3.1 - s / 100,
         "count": 3, "step": s, "layer_steps": s * 12, "flops": s * 1e12, "seconds": s / 10,
         "tokens": s * 1e4}
        for r in ("natural", "memorise") for a in ARMS for s in (0, 50, 100)]))


def _cross_paper(x, y):
    layers = pd.DataFrame({"layer": range(8), "theta": np.linspace(0.2, 1, 8),
                           "rel_update": np.linspace(0.1, 2, 8), "skip deg %": np.geomspace(1, 1e4, 8),
                           "neighbour-average deg %": np.geomspace(1, 1e3, 8)})
    return plots.cross_paper_scatter(layers, x, y, "title")


CHARTS = {
    "bootstrap_histogram": lambda: _bootstrap({"paper recipe": 0.69, "converged": 0.71,
                                               "ensemble averaging: 1": 1.0}),
    "cut_scan_chart": _cut_scan,
    "aspect_chart": _aspect,
    "layer_profiles": lambda: plots.layer_profiles(_profiles(), "θ(h_l, h_{l+1}) (rad)", reference=1.57),
    "layer_profiles_log": lambda: plots.layer_profiles(_profiles(), "relative update ‖Δh_l‖/‖h_l‖", log=True),
    "depth_scaling_points": _scaling_points,
    "control_chart": _control,
    "slope_chart": _slope,
    "warmup_chart": _warmup,
    "toy_loss_chart": _toy_loss,
    "alpha_vs_temperature": _alpha_temperature,
    "signature_chart": _signature,
    "importance_bars": lambda: plots.importance_bars(_importance()),
    "method_lines": lambda: plots.method_lines(_importance()),
    "anchor_scatter": _anchor,
    "alpha_sweep": _alpha_sweep,
    "r2_vs_alpha": _r2,
    "paradox_chart": _paradox,
    "delta_lines": _delta_lines,
    "recovery_curves": _recovery,
    "growth_curves": _growth,
    "cross_paper_theta": lambda: _cross_paper("theta", "skip deg %"),
    "cross_paper_rel_update": lambda: _cross_paper("rel_update", "neighbour-average deg %"),
}


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


def _mark(unit):
    mark = unit.get("mark")
    return mark["type"] if isinstance(mark, dict) else mark


def _colour(spec, field):
    """{name: colour} of a chart's explicit colour scale on `field`."""
    for unit in _units(spec):
        enc = unit["encoding"].get("color", {})
        if enc.get("field") == field and "scale" in enc:
            return dict(zip(enc["scale"]["domain"], enc["scale"]["range"]))
    raise AssertionError(f"no explicit colour scale on {field!r}")


@pytest.fixture(scope="module")
def specs():
    return {name: build().to_dict() for name, build in CHARTS.items()}


# --- (a) the category palette --------------------------------------------------------------------
def test_category_colours_are_tableau20_so_fourteen_series_do_not_repeat(specs):
    category = specs["toy_loss_chart"]["config"]["range"]["category"]
    assert set(category) == TABLEAU20 and len(category) == 20
    # the saturated ten first: a chart of up to ten series stays as distinct as with tableau10
    assert category[:3] == ["#4c78a8", "#f58518", "#54a24b"]


def test_legends_sit_below_the_plot(specs):
    assert specs["toy_loss_chart"]["config"]["legend"]["orient"] == "bottom"
    for name, spec in specs.items():
        for unit in _units(spec):
            for channel in ("color", "fill", "shape", "strokeDash"):
                enc = unit["encoding"].get(channel)
                if isinstance(enc, dict) and "field" in enc and enc.get("legend", {}) is not None:
                    assert enc.get("legend", {}).get("orient") == "bottom", (name, channel)


# --- (b) one colour per name ---------------------------------------------------------------------
def test_scale_for_keeps_a_names_colour_whatever_else_is_shown():
    def colours(names):
        scale = plots.scale_for(names).to_dict()
        return dict(zip(scale["domain"], scale["range"]))

    full = colours(["uniform", "uniform 50% budget", "gtt", "G_stack", "random schedule",
                    "gtt, paper's steps"])
    assert colours(["gtt", "uniform"]) == {k: full[k] for k in ("gtt", "uniform")}
    assert colours(["random schedule", "G_stack"]) == {k: full[k] for k in ("random schedule", "G_stack")}
    assert len(set(full.values())) == len(full)  # the arms of one chart are told apart
    assert colours(["converged", "paper"])["converged"] == colours(["paper recipe", "converged"])["converged"]
    assert colours(["paper"])["paper"] == colours(["paper recipe"])["paper recipe"]
    assert colours(["trained", "untrained"]) == colours(["untrained", "trained"])
    for name in ("paper", "converged", "trained", "untrained", "uniform", "uniform same budget",
                 "uniform 50% budget", "gtt", "G_stack", "random schedule", "gtt, paper's steps",
                 "E0", "E1"):
        assert name in plots.PALETTE
    # names the palette does not know still get colours of their own, none taken from it
    other = colours(["trained", "something new", "another"])
    assert other["something new"] != other["another"]
    assert not {other["something new"], other["another"]} & set(plots.PALETTE.values())


def test_chapter_01_histograms_colour_converged_alike():
    first = _bootstrap({"paper recipe": 0.69, "converged": 0.71, "ensemble averaging: 1": 1.0}).to_dict()
    second = _bootstrap({"converged": 0.71, "ensemble averaging: 1": 1.0, "Euler steps: 2": 2.0}).to_dict()
    a, b = _colour(first, "what"), _colour(second, "what")
    assert a["converged"] == b["converged"] and a["ensemble averaging: 1"] == b["ensemble averaging: 1"]
    assert a["converged"] == _colour(_cut_scan().to_dict(), "recipe")["converged"]
    assert a["paper recipe"] == _colour(_cut_scan().to_dict(), "recipe")["paper"]


def test_named_colours_are_shared_across_chapters(specs):
    assert _colour(specs["control_chart"], "condition") == _colour(specs["slope_chart"], "condition")
    arms = _colour(specs["growth_curves"], "arm")
    assert all(arms[a] == plots.PALETTE[a] for a in ARMS)
    teachers = _colour(specs["alpha_vs_temperature"], "teacher")
    assert teachers == _colour(specs["signature_chart"], "teacher")


# --- (c) layer colours, band legends, axes -------------------------------------------------------
def test_recovery_layers_are_coloured_in_order():
    [unit] = list(_units(_recovery().to_dict()))
    color = unit["encoding"]["color"]
    assert color["field"] == "layer" and color["type"] == "ordinal"
    assert color["scale"]["scheme"] == "viridis"


@pytest.mark.parametrize("name", ["layer_profiles", "layer_profiles_log", "growth_curves", "alpha_sweep"])
def test_bands_draw_no_legend_and_the_lines_do(specs, name):
    spec = specs[name]
    units = list(_units(spec))
    bands = [u for u in units if _mark(u) in ("area", "errorband")]
    lines = [u for u in units if _mark(u) == "line"]
    assert bands and lines
    for band in bands:
        assert band["encoding"]["color"]["legend"] is None
    assert all(line["encoding"]["color"]["legend"]["orient"] == "bottom" for line in lines)
    # a legend disabled in one layer disables a shared one: the band's is resolved apart
    assert spec["resolve"]["legend"]["color"] == "independent"


def test_legend_click_lives_on_the_lines_of_layer_profiles(specs):
    spec = specs["layer_profiles"]
    legend_bound = [p for p in spec["params"] if p.get("bind") == "legend"]
    [line] = [u for u in _units(spec) if _mark(u) == "line"]
    assert legend_bound and all(p["views"] == [line["name"]] for p in legend_bound)


RAW = {"theta", "rel_update", "rel update", "l", "lo", "hi", "q25", "alpha", "alpha_l", "abs_y",
       "abs_deg", "block influence", "ℓ", "α", "α_ℓ", "PC1", "PC2"}


def test_every_axis_is_titled_in_words(specs):
    for name, spec in specs.items():
        for unit in _units(spec):
            for channel in ("x", "y"):
                enc = unit["encoding"].get(channel)
                if not isinstance(enc, dict) or "field" not in enc:
                    continue
                assert "title" in enc, (name, channel, enc["field"])
                title = enc["title"]
                assert title is None or (title not in RAW and title != enc["field"]), (name, title)


def test_cross_paper_axes_name_the_measures(specs):
    x = [u["encoding"]["x"]["title"] for u in _units(specs["cross_paper_theta"])]
    assert x[0].startswith("angle θ") and x[0].endswith("(rad)")
    x = [u["encoding"]["x"]["title"] for u in _units(specs["cross_paper_rel_update"])]
    assert x[0].startswith("relative update size")
    [first, *_] = _units(specs["delta_lines"])
    assert not first["encoding"]["x"]["title"].startswith("l ")


@pytest.mark.parametrize("name", ["cut_scan_chart", "alpha_vs_temperature", "layer_profiles",
                                  "growth_curves", "alpha_sweep", "bootstrap_histogram"])
def test_layers_title_a_shared_axis_alike(specs, name):
    """Vega-Lite joins differing titles of one axis ('lo, α_ℓ'): every layer gives the same."""
    for channel in ("x", "y"):
        titles = {u["encoding"][channel].get("title", "<field name>") for u in _units(specs[name])
                  if isinstance(u["encoding"].get(channel), dict) and "field" in u["encoding"][channel]}
        assert len(titles) <= 1, (name, channel, titles)


def _log_axes(spec):
    for unit in _units(spec):
        for channel in ("x", "y"):
            enc = unit["encoding"].get(channel)
            if isinstance(enc, dict) and enc.get("scale", {}).get("type") == "log" \
                    and enc["scale"].get("base", 10) == 10:
                yield enc


def test_log_axes_label_in_one_notation(specs):
    """Vega's default format on a log axis writes 100,000,000,000 beside 1e+12."""
    for name, spec in specs.items():
        for enc in _log_axes(spec):
            axis = enc.get("axis", {})
            assert axis.get("labelExpr") == plots.POWER_OF_TEN_LABELS or axis.get("format") == "~g", \
                (name, enc["field"])
    [n_axis, *_] = [enc["axis"] for enc in _log_axes(specs["aspect_chart"]) if enc["field"] == "N"]
    assert n_axis["labelExpr"] == plots.POWER_OF_TEN_LABELS and n_axis["tickCount"] <= 6
    assert "10¹²" in plots.POWER_OF_TEN_LABELS and "10⁻³" in plots.POWER_OF_TEN_LABELS


def test_log_axis_picks_its_notation_from_the_span():
    assert plots.log_axis(pd.Series([1e7, 1e12])).to_dict()["labelExpr"] == plots.POWER_OF_TEN_LABELS
    assert plots.log_axis(pd.Series([0.01, 5.0])).to_dict()["labelExpr"] == plots.POWER_OF_TEN_LABELS
    assert plots.log_axis(pd.Series([1.0, 3.0])).to_dict() == {"format": "~g"}


def test_bootstrap_histogram_labels_resolve_its_bins(specs):
    """α_ℓ with SD 0.01 has bins 0.002 wide: two decimals repeated every label."""
    [hist] = [u for u in _units(specs["bootstrap_histogram"]) if _mark(u) == "bar"]
    assert hist["encoding"]["x"]["axis"]["format"] == ".3f"
