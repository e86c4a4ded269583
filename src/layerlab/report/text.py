"""The report's text: the vendored held-out text, or the user's own file, as evaluation
sentences (P2's importance map and sweep) and as fixed-length windows (P1's statistics).

Used by `layerlab report` and chapter 12.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from layerlab import corpus
from layerlab.anatomy import evalsets
from layerlab.settings import ReportSettings

DEFAULT_SOURCE = "wikipedia"  # the book's held-out text (its test split), vendored under data/
CHUNK = 64  # tokens per evaluation piece when the text has too few clean sentences


class ReportError(ValueError):
    """Input the report cannot use; the message says what to change."""


@dataclass(frozen=True)
class ReportText:
    text: str
    source: str

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:12]


def load(path: str | Path | None) -> ReportText:
    """The text of `path` (UTF-8), or the vendored held-out text when None."""
    if path is None:
        return ReportText(corpus.load_text(DEFAULT_SOURCE, "test"),
                          f"vendored {DEFAULT_SOURCE} text, held-out split (data/SOURCES.md)")
    p = Path(path).expanduser()
    if not p.is_file():
        raise ReportError(f"--text {path}: no such file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ReportError(f"--text {path} is not UTF-8 text ({err})") from err
    if not text.strip():
        raise ReportError(f"--text {path} is empty")
    why = not_text(text)
    if why:
        raise ReportError(f"--text {path} is not text: {why}. Give a UTF-8 text file.")
    return ReportText(text, str(p))


CONTROL_SHARE = 0.25  # more control characters than this, among the non-blank ones: not text


def not_text(text: str) -> str | None:
    """Why `text` is not real text (NUL bytes, or mostly control characters), else None."""
    if "\0" in text:
        return f"it holds NUL bytes ({text.count(chr(0))}: a binary file?)"
    visible = [c for c in text if not c.isspace()]
    control = sum(unicodedata.category(c) == "Cc" for c in visible)
    if visible and control > CONTROL_SHARE * len(visible):
        return f"{control} of its {len(visible)} non-blank characters are control characters"
    return None


def eval_set(tokenizer: Any, text: ReportText, cfg: ReportSettings) -> evalsets.EvalSet:
    """Clean sentences in text order up to `eval_tokens` predicted tokens; a text without enough
    of them (code, lists, one long line) is cut into pieces of `CHUNK` tokens instead."""
    sentences, ids, predicted = evalsets.take_sentences(
        tokenizer, [text.text], min_tokens=cfg.eval_tokens, max_len=cfg.eval_max_len, min_words=4)
    how = "sentences"
    if predicted < cfg.min_eval_tokens:
        all_ids = tokenizer(text.text, add_special_tokens=False)["input_ids"]
        ids = [all_ids[i:i + CHUNK] for i in range(0, len(all_ids), CHUNK)]
        ids = [c for c in ids if len(c) >= 2][: max(1, cfg.eval_tokens // (CHUNK - 1) + 1)]
        sentences = [tokenizer.decode(c) for c in ids]
        predicted = sum(len(c) - 1 for c in ids)
        how = f"pieces of {CHUNK} tokens"
    if predicted < cfg.min_eval_tokens:
        raise ReportError(
            f"the text gives only {predicted} predictable tokens; the report needs at least "
            f"{cfg.min_eval_tokens} (its importance map compares perplexities). Give a longer "
            "--text.")
    return evalsets.EvalSet("report", sentences, ids, source=text.source,
                            info={"unit": how, "tokens_asked": cfg.eval_tokens})


def windows(tokenizer: Any, text: ReportText, cfg: ReportSettings, *, add_bos: bool) -> torch.Tensor:
    """[n, seq_len] consecutive windows (BOS first where the model's tokenizer adds one), at most
    `geometry_tokens // seq_len` of them, at least two."""
    ids = tokenizer(text.text, add_special_tokens=False)["input_ids"]
    per = cfg.seq_len - (1 if add_bos else 0)
    n = min(cfg.geometry_tokens // cfg.seq_len, len(ids) // per)
    if n < 2:
        raise ReportError(
            f"the text has {len(ids)} tokens: fewer than two windows of {cfg.seq_len} for P1's "
            "statistics. Give a longer --text.")
    return corpus.as_windows(ids, n, per, corpus.bos_id(tokenizer) if add_bos else None)
