"""`layerlab report` on inputs that used to slip through or end in a traceback (issue 25): an
edited checkpoint served from a stale step cache, encoder-decoder and state-space checkpoints,
NaN in report.json, broken checkpoint folders, unusable `--out` folders and text, and two
checkpoints whose folders share a name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from layerlab import cli, models
from layerlab.anatomy.evaluator import Evaluator
from layerlab.report import build
from layerlab.report.build import model_fingerprint
from layerlab.settings import REPORT_QUICK

SMALL = REPORT_QUICK.shrunk()


def _save(lm: models.LoadedModel, folder: Path) -> Path:
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    return folder


def _report(capsys, *args: str) -> int:
    """`layerlab report ARGS --no-progress` through cli.main, with stderr captured from here."""
    capsys.readouterr()
    return cli.main(["report", *args, "--no-progress"])


def _one_line_error(capsys, rc: int, *words: str) -> str:
    """Exit status 2 and exactly one line on stderr, naming `words`; no traceback."""
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("layerlab report: "), err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# -- 12: the step cache fingerprints every weight, the config and the tokenizer -----------------
def test_an_edited_checkpoint_is_measured_again(tmp_path, monkeypatch):
    ckpt = _save(models.load("tiny-llama"), tmp_path / "ckpt")
    first = build(str(ckpt), tmp_path / "r", settings=SMALL, progress=False)
    edited = models.load(str(ckpt))
    with torch.no_grad():
        for l in (2, 3):
            for p in edited.blocks[l].parameters():
                p.mul_(1.5)
    _save(edited, ckpt)
    calls = {"n": 0}
    real = Evaluator.evaluate

    def counting(self, edit=None):
        calls["n"] += 1
        return real(self, edit)

    monkeypatch.setattr(Evaluator, "evaluate", counting)
    second = build(str(ckpt), tmp_path / "r", settings=SMALL, progress=False)
    # every step computed again: the map, the sweep, the untrained twin's map and ×0.9, and
    # chapter 06's strategies on S (four at full strength, three at ×0.9's size)
    assert calls["n"] == 2 * 4 + len(SMALL.alphas) + 2 * 4 + 1 + 4 + 3
    assert second["p2"]["base_ppl"] != first["p2"]["base_ppl"]
    assert second["p2"]["importance"] != first["p2"]["importance"]
    assert second["p1"]["per_layer"]["trained"] != first["p1"]["per_layer"]["trained"]


def test_the_fingerprint_sees_any_weight_the_config_and_the_tokenizer():
    lm = models.load("tiny-llama")
    before = model_fingerprint(lm)
    assert before == model_fingerprint(models.load("tiny-llama"))
    with torch.no_grad():
        w = lm.blocks[3].mlp.down_proj.weight
        w[-1, -1] += 1e-3  # the last weight of a late block, far from "the first 1,000"
    weights = model_fingerprint(lm)
    assert weights["weights"] != before["weights"]
    lm.model.config.rms_norm_eps = 1e-3
    assert model_fingerprint(lm)["config"] != before["config"]
    lm.tokenizer.add_tokens(["<extra>"])
    assert model_fingerprint(lm)["tokenizer"] != before["tokenizer"]


def test_an_offloaded_model_has_the_fingerprint_of_the_same_model_in_memory(tmp_path):
    folder = tmp_path / "sharded"
    tiny = models.load("tiny-llama")
    tiny.model.save_pretrained(folder, max_shard_size="100KB")
    tiny.tokenizer.save_pretrained(folder)
    split = models.load(str(folder), device_map="auto", max_memory={"cpu": "150KB"})
    assert any(p.is_meta for p in split.model.parameters())
    assert model_fingerprint(split)["weights"] == model_fingerprint(models.load(str(folder)))["weights"]


# -- 15: encoder-decoder checkpoints, and any load that leaves weights newly initialised -------
@pytest.fixture
def bart_folder(tmp_path):
    import transformers as tf

    tok = models.byte_tokenizer()
    cfg = tf.BartConfig(vocab_size=len(tok), d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_position_embeddings=256)
    torch.manual_seed(0)
    tf.BartForConditionalGeneration(cfg).save_pretrained(tmp_path / "bart")
    tok.save_pretrained(tmp_path / "bart")
    return tmp_path / "bart"


def test_an_encoder_decoder_checkpoint_is_refused(tmp_path, bart_folder, capsys):
    rc = _report(capsys, str(bart_folder), "--out", str(tmp_path / "o"))
    _one_line_error(capsys, rc, "encoder-decoder")
    assert not (tmp_path / "o" / "report.json").exists()


def test_a_load_that_leaves_weights_newly_initialised_is_refused(tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    ckpt = _save(models.load("tiny-llama"), tmp_path / "ckpt")
    state = load_file(ckpt / "model.safetensors")
    del state["model.layers.2.mlp.up_proj.weight"]
    save_file(state, ckpt / "model.safetensors", metadata={"format": "pt"})
    rc = _report(capsys, str(ckpt), "--out", str(tmp_path / "o"))
    _one_line_error(capsys, rc, "newly initialised", "model.layers.2.mlp.up_proj.weight")


# -- 16: hidden states that do not line up with the blocks (state-space models) -----------------
def test_hidden_states_that_do_not_line_up_with_the_blocks_are_refused(tmp_path, capsys):
    import transformers as tf

    tok = models.byte_tokenizer()
    cfg = tf.MambaConfig(vocab_size=len(tok), hidden_size=32, state_size=4, num_hidden_layers=4,
                         expand=2, conv_kernel=4)
    torch.manual_seed(0)
    tf.MambaForCausalLM(cfg).save_pretrained(tmp_path / "mamba")
    tok.save_pretrained(tmp_path / "mamba")
    mamba = models.load(str(tmp_path / "mamba"))
    assert mamba.n_layers == 4  # its block stack is found: only the alignment check refuses it
    rc = _report(capsys, str(tmp_path / "mamba"), "--out", str(tmp_path / "o"))
    _one_line_error(capsys, rc, "hidden states", "block")
    assert not (tmp_path / "o" / "report.json").exists()


@pytest.mark.parametrize("name", models.TINY)
def test_every_tested_architecture_has_hidden_states_aligned_with_its_blocks(tiny_models, name):
    from layerlab.report.build import check_hidden_states

    check_hidden_states(tiny_models[name])  # raises ReportError when they do not line up


# -- 18: report.json is strict JSON; the page says what a missing number means -------------------
def _strict(text: str):
    def refuse(constant: str):
        raise ValueError(f"bare {constant} in report.json")

    return json.loads(text, parse_constant=refuse)


def _nulls(obj, path=""):
    if obj is None:
        return [path]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _nulls(v, f"{path}[{i}]")]
    return []


def test_report_json_is_strict_json_and_the_page_explains_missing_numbers(tmp_path):
    from layerlab.report import page

    build("tiny-llama", tmp_path / "r", settings=SMALL, progress=False)
    report = _strict((tmp_path / "r" / "report.json").read_text())
    # the untrained twin's norms are constant: their delta correlation is undefined
    assert any("delta_untrained" in p for p in _nulls(report)), _nulls(report)
    html = (tmp_path / "r" / "report.html").read_text()
    assert html == page.render(report)
    assert page.MISSING in html and "null in report.json" in html
    assert ">nan<" not in html.lower() and ">None<" not in html
    # a page still renders when any number is missing, the base perplexity included
    report["p2"]["base_ppl"] = None
    report["p2"]["weights"][0]["delta_real"] = None
    assert page.MISSING in page.render(report)


# -- 19: broken checkpoint folders, unusable --out and --text, same-named folders ---------------
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_corrupt_safetensors_file_is_one_line(tmp_path, capsys, damage):
    ckpt = _save(models.load("tiny-llama"), tmp_path / "ckpt")
    weights = ckpt / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"\x07junk" * 99)
    rc = _report(capsys, str(ckpt), "--out", str(tmp_path / "o"))
    _one_line_error(capsys, rc, "model.safetensors", "truncated or corrupt")


def test_a_folder_with_only_a_config_names_what_is_missing(tmp_path, capsys):
    ckpt = _save(models.load("tiny-llama"), tmp_path / "ckpt")
    for f in ckpt.iterdir():
        if f.name != "config.json":
            f.unlink()
    line = _one_line_error(capsys, _report(capsys, str(ckpt), "--out", str(tmp_path / "o")),
                           "tokenizer")
    assert "sentencepiece" not in line
    models.byte_tokenizer().save_pretrained(ckpt)  # a tokenizer now, still no weights
    _one_line_error(capsys, _report(capsys, str(ckpt), "--out", str(tmp_path / "o")),
                    "no weights")


def test_an_out_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "o").write_text("not a folder")
    _one_line_error(capsys, _report(capsys, "tiny-llama", "--out", str(tmp_path / "o")),
                    "--out", "not a folder")
    (tmp_path / "f").write_text("a file")
    _one_line_error(capsys, _report(capsys, "tiny-llama", "--out", str(tmp_path / "f" / "o")),
                    "--out")


def test_a_read_only_out_is_refused_before_the_model_loads(tmp_path, capsys, monkeypatch):
    import os
    import tempfile

    out = tmp_path / "o"
    (out / "cache").mkdir(parents=True)
    for folder in (out / "cache", out):
        folder.chmod(0o555)
    if os.geteuid() == 0:  # root writes through permission bits: act as a read-only filesystem
        real = tempfile.mkstemp

        def read_only(*args, dir=None, **kwargs):  # noqa: A002 - mkstemp's own keyword
            if dir is not None and Path(dir).resolve().is_relative_to(out.resolve()):
                raise PermissionError(13, "Read-only file system", str(dir))
            return real(*args, dir=dir, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", read_only)
    loaded = []
    real_load = models.load
    monkeypatch.setattr(models, "load", lambda *a, **k: loaded.append(a) or real_load(*a, **k))
    try:
        rc = _report(capsys, "tiny-llama", "--out", str(out))
    finally:
        for folder in (out, out / "cache"):
            folder.chmod(0o755)
    _one_line_error(capsys, rc, "--out", "not writable")
    assert loaded == []  # refused before anything was loaded or computed


@pytest.mark.parametrize("content", ["\0" * 5000, "\x01\x02\x03\x04 a" * 800])
def test_text_that_is_not_text_is_refused(tmp_path, capsys, content):
    (tmp_path / "t.txt").write_text(content)
    rc = _report(capsys, "tiny-llama", "--text", str(tmp_path / "t.txt"), "--out",
                 str(tmp_path / "o"))
    _one_line_error(capsys, rc, "--text", "not text")


def test_same_named_folders_get_their_own_default_out(tmp_path, capsys, monkeypatch):
    from layerlab.report import build as build_function

    a = _save(models.load("tiny-llama", seed=0), tmp_path / "a" / "ckpt")
    b = _save(models.load("tiny-llama", seed=1), tmp_path / "b" / "ckpt")
    outs = []

    def small(model, out, **kwargs):  # the command's own build, at the tests' size
        outs.append(Path(out))
        return build_function(model, out, **{**kwargs, "settings": SMALL})

    monkeypatch.setattr("layerlab.report.build", small)
    monkeypatch.chdir(tmp_path)
    assert _report(capsys, str(a)) == 0 and _report(capsys, str(b)) == 0
    assert len(set(outs)) == 2 and all(o.parent == Path("reports") for o in outs)
    assert all(o.name.startswith("ckpt-") for o in outs)
    models_seen = [json.loads((tmp_path / o / "report.json").read_text())["model"]["source"]
                   for o in outs]
    assert models_seen == [str(a), str(b)]
