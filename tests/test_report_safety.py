"""`layerlab report` on inputs that used to slip through or end in a traceback (issue 25): an
edited checkpoint served from a stale step cache, encoder-decoder and state-space checkpoints,
NaN in report.json, broken checkpoint folders, unusable `--out` folders and text, and two
checkpoints whose folders share a name."""

from __future__ import annotations

from pathlib import Path

import torch

from layerlab import models
from layerlab.anatomy.evaluator import Evaluator
from layerlab.report import build
from layerlab.report.build import model_fingerprint
from layerlab.settings import REPORT_QUICK

SMALL = REPORT_QUICK.shrunk()


def _save(lm: models.LoadedModel, folder: Path) -> Path:
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    return folder


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
    assert calls["n"] == 2 * 4 + len(SMALL.alphas)  # every step computed again
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
