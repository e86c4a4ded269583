"""`layerlab report`: the command on tiny models of every tested architecture, the page, the
summary rules (each with an input that passes and one that fails) and the bad inputs."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from layerlab import claims, cli, models
from layerlab.anatomy.evaluator import Evaluator
from layerlab.depth import geometry
from layerlab.report import ReportError, build, diagnostics, rules
from layerlab.report.build import summarise
from layerlab.settings import REPORT_QUICK

SMALL = REPORT_QUICK.shrunk()
IDS = set(rules.DECLARATIONS)  # each row is a book claim asked of one model
# the report words the one decision's verdicts as signatures of one model
R, P, N = (rules.SIGNATURE[v] for v in (claims.REPRODUCED, claims.PARTLY, claims.NOT_REPRODUCED))
T, D = rules.SIGNATURE[claims.NOT_TESTABLE], rules.SIGNATURE[claims.NOT_DIAGNOSTIC]


class _Loads(HTMLParser):
    """Addresses the page would make a browser fetch by itself."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe") and a.get("src"):
            self.found.append(a["src"])
        if tag == "link" and a.get("href"):
            self.found.append(a["href"])


def _check_report(folder: Path, n_layers: int) -> dict:
    report = json.loads((folder / "report.json").read_text())
    assert {r["id"] for r in report["summary"]} == IDS
    assert all(r["verdict"] in rules.SIGNATURE.values() for r in report["summary"])
    # the verdicts are a function of the stored numbers: recomputed from report.json alone
    assert summarise(report) == report["summary"]
    assert len(report["p2"]["untrained"]["importance"]) == 2 * n_layers
    assert len(report["p1"]["per_layer"]["trained"]["hf"]["theta"]) == n_layers
    assert len(report["p2"]["importance"]) == 2 * n_layers
    assert np.isfinite(report["p2"]["base_ppl"])
    page = (folder / "report.html").read_text()
    loads = _Loads()
    loads.feed(page)
    assert loads.found == []  # every script is inline: the page needs no network
    assert page.count("<div class='chart'") == 7 and "vegaEmbed" in page
    return report


def test_the_command_on_tiny_llama_quick(tmp_path, capsys):
    rc = cli.main(["report", "tiny-llama", "--quick", "--out", str(tmp_path / "r"),
                   "--no-progress"])
    assert rc == 0
    report = _check_report(tmp_path / "r", 4)
    assert report["settings"]["mode"] == "quick"
    assert report["text"]["evaluation"]["predicted_tokens"] >= REPORT_QUICK.eval_tokens


@pytest.mark.parametrize("name", models.TINY)
def test_a_report_on_a_saved_folder_of_every_tested_architecture(tmp_path, tiny_folders, name):
    report = build(str(tiny_folders[name]), tmp_path / "r", settings=SMALL, progress=False)
    _check_report(tmp_path / "r", 4)
    assert report["model"]["arch"] in models.TESTED_FAMILIES


def test_a_stored_report_is_reworded_from_its_own_numbers_when_the_rules_change(tmp_path,
                                                                              monkeypatch):
    from layerlab.report import chapter

    build("tiny-llama", tmp_path / "r", settings=SMALL, progress=False)
    path = tmp_path / "r" / "report.json"
    stored = json.loads(path.read_text())
    stale = {**stored, "summary": [{**r, "verdict": R} for r in stored["summary"]]}
    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")
    with pytest.raises(LookupError, match="stale"):
        chapter._resummarised(stale, path)
    monkeypatch.delenv("LAYERLAB_CACHE_ONLY")
    assert chapter._resummarised(stale, path)["summary"] == stored["summary"]
    assert json.loads(path.read_text())["summary"] == stored["summary"]


def test_an_interrupted_report_resumes_and_writes_nothing_half_done(tmp_path, monkeypatch):
    calls = {"n": 0}
    real_evaluate = Evaluator.evaluate

    def counting(self, edit=None):
        calls["n"] += 1
        return real_evaluate(self, edit)

    monkeypatch.setattr(Evaluator, "evaluate", counting)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(diagnostics, "scaling_sweep", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build("tiny-llama", tmp_path / "r", settings=SMALL, progress=False)
    assert not (tmp_path / "r" / "report.json").exists()
    assert not (tmp_path / "r" / "report.html").exists()
    first = calls["n"]
    assert first == 2 * 4  # every layer, both operations: stored before the interruption
    monkeypatch.undo()
    monkeypatch.setattr(Evaluator, "evaluate", counting)
    resumed = build("tiny-llama", tmp_path / "r", settings=SMALL, progress=False)
    # only the sweep ran again, then the other strategies on S (chapter 06's four at full
    # strength, three at ×0.9's size), then the untrained twin's control: its map and ×0.9
    after = len(SMALL.alphas) + 4 + 3 + 2 * 4 + 1
    assert calls["n"] - first == after
    _check_report(tmp_path / "r", 4)
    # served wholly from the cache, the report still says what its steps cost when computed
    again = build("tiny-llama", tmp_path / "r", settings=SMALL, progress=False)
    assert calls["n"] - first == after
    cost = again["provenance"]
    assert cost["untimed_steps"] == 0 and cost["compute_seconds"] > 0
    assert cost["compute_seconds"] == pytest.approx(resumed["provenance"]["compute_seconds"], abs=0.2)


def test_bad_inputs_give_one_line_errors(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "unknown model" in capsys.readouterr().err
    (tmp_path / "empty-folder").mkdir()
    with pytest.raises(ReportError, match="no config.json"):
        build(str(tmp_path / "empty-folder"), tmp_path / "o", settings=SMALL, progress=False)
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(ReportError, match="empty"):
        build("tiny-llama", tmp_path / "o", text_path=str(tmp_path / "empty.txt"),
              settings=SMALL, progress=False)
    (tmp_path / "short.txt").write_text("A short text. It has two sentences.")
    with pytest.raises(ReportError, match="predictable tokens"):
        build("tiny-llama", tmp_path / "o", text_path=str(tmp_path / "short.txt"),
              settings=SMALL, progress=False)
    with pytest.raises(ReportError, match="no such file"):
        build("tiny-llama", tmp_path / "o", text_path=str(tmp_path / "nope.txt"), settings=SMALL,
              progress=False)
    assert not (tmp_path / "o" / "report.json").exists()


def test_a_model_that_is_not_causal_is_refused(tmp_path):
    from transformers import BertConfig, BertModel

    torch.manual_seed(8)  # this seed's BERT moved too little when only the last token changed
    BertModel(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, vocab_size=257)).save_pretrained(tmp_path / "bert")
    models.byte_tokenizer().save_pretrained(tmp_path / "bert")
    with pytest.raises(ReportError, match="not a causal language model"):
        build(str(tmp_path / "bert"), tmp_path / "o", settings=SMALL, progress=False)


def test_nan_hidden_states_are_refused(tmp_path):
    lm = models.load("tiny-llama")
    with torch.no_grad():
        lm.blocks[1].mlp.down_proj.weight[0, 0] = float("nan")
    lm.model.save_pretrained(tmp_path / "nan")
    lm.tokenizer.save_pretrained(tmp_path / "nan")
    with pytest.raises(ReportError, match="NaN/inf"):
        build(str(tmp_path / "nan"), tmp_path / "o", settings=SMALL, progress=False)
    assert not (tmp_path / "o" / "report.json").exists()


def test_your_own_text_without_sentences_is_cut_into_pieces(tmp_path):
    code = "\n".join(f"def f{i}(x):\n    return x * {i} + {i * i}" for i in range(60))
    (tmp_path / "code.py").write_text(code)
    report = build("tiny-llama", tmp_path / "r", text_path=str(tmp_path / "code.py"),
                   settings=SMALL, progress=False)
    assert report["text"]["evaluation"]["unit"].startswith("pieces")
    assert report["text"]["source"].endswith("code.py")


# -- the summary rules: one input that passes, one that fails, one whose control passes too ------
def _control(stat, trained_lo, untrained_lo, layers=12, width=0.2):
    return pd.DataFrame([{"model": "model", "statistic": stat, "layers": layers,
                          "trained": trained_lo + width / 2, "trained_lo": trained_lo,
                          "trained_hi": trained_lo + width, "untrained": untrained_lo + 0.1,
                          "untrained_lo": untrained_lo, "untrained_hi": untrained_lo + 0.2}])


def test_every_report_row_restates_a_declared_book_claim_for_one_model():
    from layerlab.anatomy.declarations import DECLARATIONS as P2D
    from layerlab.depth.declarations import DECLARATIONS as P1D

    for cid, decl in rules.DECLARATIONS.items():
        book = {**P1D, **P2D}[cid]
        assert decl.scope == rules.ONE_MODEL and decl.statement == book.statement
        assert decl.kind == claims.Kind.NUMBER or decl.control  # always a control
    # the same band wherever the report measures the book's own statistic
    for cid in ("P1-A1-edges-rotate", "P1-A3-weak-update-correlation", "P1-B1-bulk-fraction",
                "P2-C1-core", "P2-C1-anti-layers", "P2-C3-oscillation", "P2-C4-only-scaling"):
        assert rules.DECLARATIONS[cid].band == {**P1D, **P2D}[cid].band
    r = rules.edges(_edges(2.0, 1.0), 12)
    assert r["book claim"] == "P1-A1-edges-rotate" and r["rule"] and r["decided by"]


def _edges(trained_lo, untrained_lo, layers=12, block_lo=None):
    """Both edge-ratio rows: P1's convention (after the final norm) decides, the block-only one
    is shown beside."""
    block = trained_lo if block_lo is None else block_lo
    return pd.concat([_control(geometry.EDGE_PAPER, trained_lo, untrained_lo, layers),
                      _control(geometry.EDGE_BLOCK, block, untrained_lo, layers)])


def test_edges_rule():
    # the trained ratio above the twin's 95 % range and above 1
    assert rules.edges(_edges(2.0, 1.0), 12)["verdict"] == R
    assert rules.edges(_edges(0.5, 1.0), 12)["verdict"] == N
    # straddles its range; its decided part (edges above the middle) speaks (VERDICTS.md §2 [rev])
    assert rules.edges(_edges(1.1, 1.0), 12)["verdict"] == P
    assert rules.edges(_edges(2.0, 1.0), 4)["verdict"] == T
    # P1's convention decides; the block-only ratio is shown beside
    r = rules.edges(_edges(2.0, 1.0, block_lo=0.4), 12)
    assert r["verdict"] == R and "block-only" in r["this model"]
    # a report made before the paper's convention was measured: not testable, saying why
    r = rules.edges(_control("edge_ratio", 2.0, 1.0), 12)
    assert r["verdict"] == T and "final norm" in r["decided by"]
    assert r[rules.VS_BOOK].startswith("Not the book's rule")
    assert not rules.edges(_edges(2.0, 1.0), 12)[rules.VS_BOOK].startswith("Not the book's")


def test_weak_correlation_rule():
    # an absence: in [π/4, 3π/4], and the smooth stream (the positive control) is rejected
    assert rules.weak_correlation(_control("middle_theta_dh", 1.4, 0.5))["verdict"] == R
    assert rules.weak_correlation(_control("middle_theta_dh", 0.2, 0.2))["verdict"] == N
    # the untrained twin at π/2 too does not make an absence claim undiagnostic
    assert rules.weak_correlation(_control("middle_theta_dh", 1.4, 1.4))["verdict"] == R


def test_no_early_stopping_rule():
    flat = {"early_share": 0.9, "drop_by_middle": float("nan")}
    ok = {"early_share": 0.01, "drop_by_middle": 0.5, "layers": 12, "tokens": 20_000}
    assert rules.no_early_stopping(ok, flat)["verdict"] == R
    assert rules.no_early_stopping({**ok, "early_share": 0.6}, flat)["verdict"] == N
    assert rules.no_early_stopping({**ok, "drop_by_middle": 0.95}, flat)["verdict"] == P
    assert rules.no_early_stopping({**ok, "drop_by_middle": float("nan")}, flat)["verdict"] == T


def _bulk(frac, tokens=200_000, minority=1.0, bulk=0.25):
    return {"all": {"bulk_fraction": frac, "tokens": tokens, "share_at_position_0": 0.5,
                    "median_progress_at_quarter_depth_minority": minority,
                    "median_progress_at_quarter_depth_bulk": bulk},
            "without_position0": {"bulk_fraction": frac}}


def test_bulk_fraction_rule():
    # stored before the report kept chapter 03's evidence (tests/unit/test_report_rules.py has
    # the book's rule): the layer-shuffled control is missing, so only a fraction outside the
    # band is decided; the untrained twin is shown, not deciding
    assert rules.bulk_fraction(_bulk(0.996), _bulk(0.7))["verdict"] == T
    assert rules.bulk_fraction(_bulk(0.90), _bulk(0.7))["verdict"] == N
    assert rules.bulk_fraction(_bulk(0.996), _bulk(0.996))["verdict"] == T


def _map(values: dict[str, dict[int, tuple[float, float, float]]]) -> pd.DataFrame:
    return pd.DataFrame([{"method": m, "layer": l, "deg": d, "lo": lo, "hi": hi}
                         for m, layers in values.items() for l, (d, lo, hi) in layers.items()])


def test_critical_core_rule():
    low = {l: (5.0, 2.0, 8.0) for l in range(12)}
    core = {**low, 5: (300.0, 200.0, 400.0)}  # 12 blocks: one critical layer of the middle half
    flat = _map({"neighbour_average": low, "skip": low})
    assert rules.core_rank(12) == 1 and rules.core_rank(30) == 3
    assert rules.critical_core(_map({"neighbour_average": core, "skip": core}), 12, flat)[
        "verdict"] == R
    assert rules.critical_core(_map({"neighbour_average": core, "skip": low}), 12, flat)[
        "verdict"] == P
    assert rules.critical_core(flat, 12, flat)["verdict"] == N
    edge = {**low, 0: (900.0, 800.0, 990.0)}  # big, but outside the middle half
    assert rules.critical_core(_map({"neighbour_average": edge, "skip": edge}), 12, flat)[
        "verdict"] == N
    both = _map({"neighbour_average": core, "skip": core})
    assert rules.critical_core(both, 12, both)["verdict"] == D  # the twin has one too
    assert rules.critical_core(both, 12)["verdict"] == T  # control not measured


def test_anti_layers_rule():
    low = {l: (5.0, 2.0, 8.0) for l in range(12)}
    flat = _map({"neighbour_average": low})
    below = {**low, 6: (-3.0, -5.0, -1.0)}
    anti = _map({"neighbour_average": below, "skip": below})
    assert rules.anti_layers(anti, 12, flat)["verdict"] == R
    # removing it costs perplexity: the secondary "under removal" fails
    assert rules.anti_layers(_map({"neighbour_average": below, "skip": low}), 12, flat)[
        "verdict"] == P
    assert rules.anti_layers(_map({"neighbour_average": {**low, 6: (-3.0, -5.0, 1.0)}}), 12,
                             flat)["verdict"] == T  # straddles 0
    assert rules.anti_layers(flat, 12, flat)["verdict"] == N
    # a random model identical to its untrained twin: whatever it shows, not diagnostic
    assert rules.anti_layers(anti, 12, anti)["verdict"] == D


def _weights(real, iid, loo=0.8, shuffled=0.1):
    return [{"type": "q", "is_norm": False, "delta_real": real, "delta_iid": iid,
             **{f"ridge_{p}_{k}_{a:g}": v for p, k, v in (("in_sample", "real", 0.95),
                                                         ("loo", "real", loo),
                                                         ("loo", "shuffled", shuffled))
                for a in (1.0, 100.0)}}]


def test_delta_correlation_rule():
    assert rules.delta_correlation(_weights(-0.50, -0.10))["verdict"] == R
    assert rules.delta_correlation(_weights(-0.10, -0.10))["verdict"] == N
    assert rules.delta_correlation(_weights(-0.50, -0.50))["verdict"] == D  # what i.i.d. layers give


def test_ridge_rule():
    assert rules.ridge(_weights(-0.5, -0.5), (1.0, 100.0))["verdict"] == R
    assert rules.ridge(_weights(-0.5, -0.5, loo=0.1), (1.0, 100.0))["verdict"] == N
    assert rules.ridge(_weights(-0.5, -0.5, shuffled=0.8), (1.0, 100.0))["verdict"] == D


def test_scaling_rule():
    sweep = lambda d, lo, hi: pd.DataFrame([{"alpha": 0.9, "deg": d, "lo": lo, "hi": hi}])  # noqa: E731
    twin = sweep(0.0, -1.0, 1.0)  # shown beside, never deciding

    def others(full, matched):  # chapter 06's runs on S, as build stores them
        return pd.DataFrame(
            [{"set": "text", "strategy": s, "matched": "full", "deg": full, "lo": full - 1,
              "hi": full + 1} for s in ("zero", "clone", "mix", "low-rank mix r=64")]
            + [{"set": "text", "strategy": s, "matched": "size joint", "deg": matched,
                "lo": matched - 1, "hi": matched + 1} for s in ("clone", "mix", "low-rank mix r=64")])

    harmful = others(1e5, 300.0)
    assert rules.scaling(sweep(3.0, 1.0, 5.0), [3], twin, harmful)["verdict"] == R
    assert rules.scaling(sweep(45.0, 40.0, 50.0), [3], twin, harmful)["verdict"] == N
    # straddling 30 %: the decided part (the others harmful) is named (VERDICTS.md §2 [rev])
    assert rules.scaling(sweep(25.0, 20.0, 35.0), [3], twin, harmful)["verdict"] == P
    # the other strategies moved as far as ×0.9 moves the weights are benign too
    assert rules.scaling(sweep(3.0, 1.0, 5.0), [3], twin, others(1e5, 3.0))["verdict"] == D
    # stored before the report measured that control: a benign ×0.9 cannot be decided
    assert rules.scaling(sweep(3.0, 1.0, 5.0), [3], twin)["verdict"] == T


def test_the_page_renders_offline_in_headless_chromium(tmp_path, browser):
    build("tiny-gpt2", tmp_path / "r", settings=SMALL, progress=False)
    refused, errors = [], []
    page = browser.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))

    def handler(route):
        if route.request.url.startswith("file://"):
            return route.continue_()
        refused.append(route.request.url)
        return route.abort()

    page.route("**/*", handler)
    page.goto((tmp_path / "r" / "report.html").as_uri(), wait_until="load")
    page.wait_for_function("document.querySelectorAll('.vega-embed svg.marks').length >= 7",
                           timeout=30_000)
    assert "chart error" not in page.inner_text("body")
    page.close()
    assert not refused and not errors, (refused, errors)


def test_the_embedded_chart_libraries_are_the_version_altair_asks_for():
    """The report page embeds its own copies (the book's site serves the same files, and
    tests/book/test_offline_assets.py reads all three versions); Vega-Lite must be the version
    Altair's specs ask for."""
    import altair as alt

    vendor = Path(__file__).parents[2] / "src" / "layerlab" / "report" / "vendor"
    assert f'"{alt.SCHEMA_VERSION.lstrip("v")}"' in (vendor / "vega-lite.min.js").read_text()


def test_the_chapter_reads_reports_and_refuses_to_compute_in_cache_only_mode(monkeypatch, tmp_path):
    from layerlab import profiles
    from layerlab.report import chapter

    profile = profiles.PROFILES["smoke"]
    profile = profile.__class__(**{**profile.__dict__, "reports": profile.reports.replace(
        models=("tiny-llama",))})
    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")
    with pytest.raises(LookupError, match="LAYERLAB_CACHE_ONLY"):
        chapter.collect(profile, progress=False)
    monkeypatch.delenv("LAYERLAB_CACHE_ONLY")
    reports = chapter.collect(profile, progress=False)
    assert (chapter.folder(profile, "tiny-llama") / "report.json").is_file()
    head = chapter.headline(reports)
    assert head.loc["tiny-llama", "blocks"] == 4 and np.isfinite(head.loc["tiny-llama", "base PPL"])
    assert set(chapter.verdicts(reports).index.get_level_values("id")) == IDS
    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")  # now it is stored: read, not computed
    assert chapter.collect(profile, progress=False)["tiny-llama"]["summary"] == reports["tiny-llama"]["summary"]


def test_a_page_does_not_depend_on_the_charts_rendered_before_it_in_the_process():
    """Altair numbers a layered chart's views from a process-wide counter; the page renames them
    by order of appearance, so the committed page equals any fresh rendering of report.json."""
    import altair as alt

    from layerlab import paths
    from layerlab.report import page

    report = json.loads((paths.REPO_ROOT / "results" / "cpu" / "reports"
                         / "family-d16-s0" / "report.json").read_text())
    first = page.render(report)
    base = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_line().encode(x="x")
    for _ in range(3):  # advance the counter as a long build process does
        alt.layer(base, base.mark_point()).to_dict()
    assert page.render(report) == first
    assert "view_1" in first
