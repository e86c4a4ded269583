"""The two evaluation sets of P2's chapters.

- **E0**: ten English sentences written for this book (`data/eval/e0_sentences.txt`); the paper's
  ten sentences are not published, so these stand in for them and are published here.
- **E1**: several hundred held-out sentences, at least `min_tokens` predicted tokens, taken in
  order from the test split of a vendored corpus (or from FineWeb in the `gpu` profile).

Each sentence is its own sequence, tokenized with the tokenizer's defaults (SmolLM2 adds no BOS),
and tokens 1 … T−1 are predicted, as P2's spec asks (research/paper2.md §3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from layerlab import corpus, paths

__all__ = ["E0_FILE", "e0", "e0_sentences", "e1", "EvalSet", "split_sentences", "take_sentences"]

E0_FILE = "eval/e0_sentences.txt"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


@dataclass
class EvalSet:
    """Sentences with their token ids (one sequence each), where they came from, and in `info`
    the settings that chose them. A set with no sentences, or with a sentence of fewer than two
    tokens (nothing to predict), is refused."""

    name: str
    sentences: list[str]
    ids: list[list[int]]
    source: str
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.ids:
            raise corpus.CorpusError(f"evaluation set {self.name!r} has no sentences")
        short = [i for i, s in enumerate(self.ids) if len(s) < 2]
        if short:
            raise corpus.CorpusError(
                f"evaluation set {self.name!r}: sentences {short[:5]} have fewer than 2 tokens, "
                "so nothing in them can be predicted")

    @property
    def predicted_tokens(self) -> int:
        """Tokens scored: T − 1 per sentence, as the first token has nothing before it."""
        return sum(len(s) - 1 for s in self.ids)

    def describe(self) -> dict[str, Any]:
        """The set's size as one table row (sentences, predicted tokens, shortest and longest
        sentence in tokens, and `info`); `Lab.describe_sets` caches it."""
        lengths = [len(s) for s in self.ids]
        return {"set": self.name, "source": self.source, "sentences": len(self.ids),
                "predicted_tokens": self.predicted_tokens, "min_len": min(lengths),
                "max_len": max(lengths), **self.info}


def split_sentences(text: str) -> list[str]:
    """Sentences of running text: split after . ! ? before a capital or quote, one line at a time.

    Lines are treated separately so titles and list items never merge with the next paragraph.
    """
    out = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def _clean(sentence: str, min_words: int) -> bool:
    # Wikipedia markup stripping leaves empty brackets ("the term  is", "()"): drop those sentences
    return (len(sentence.split()) >= min_words and "()" not in sentence and "  " not in sentence
            and sentence[-1] in ".!?\"'")


def e0(tokenizer: Any, path: str | None = None) -> EvalSet:
    """The ten published sentences (one per line)."""
    sentences = e0_sentences(path)
    return EvalSet("E0", sentences, [tokenizer(s)["input_ids"] for s in sentences],
                   source=f"data/{path or E0_FILE}")


def e1(tokenizer: Any, source: str = "wikipedia", *, min_tokens: int = 20_000,
       split: str = "test", max_len: int = 96, min_words: int = 6) -> EvalSet:
    """Held-out sentences in text order until at least `min_tokens` tokens are predicted.

    Sentences longer than `max_len` tokens are skipped (they are rare and would dominate padding).
    """
    texts: Iterable[str] = (corpus.fineweb_documents() if source == "fineweb"
                            else [corpus.load_text(source, split)])
    sentences, ids, predicted = take_sentences(tokenizer, texts, min_tokens=min_tokens,
                                               max_len=max_len, min_words=min_words)
    if predicted < min_tokens:
        raise corpus.CorpusError(f"{source!r} ({split}) gives only {predicted} tokens of clean "
                                 f"sentences, fewer than the {min_tokens} asked for")
    return EvalSet("E1", sentences, ids, source=f"{source}:{split}",
                   info={"min_tokens": min_tokens, "max_len": max_len})


def take_sentences(tokenizer: Any, texts: Iterable[str], *, min_tokens: int, max_len: int,
                   min_words: int) -> tuple[list[str], list[list[int]], int]:
    """Clean sentences of `texts` in order, with their token ids, until at least `min_tokens`
    tokens are predicted or the texts end (read lazily: a stream stops there); sentences longer
    than `max_len` tokens are skipped. Returns (sentences, ids, predicted tokens)."""
    sentences: list[str] = []
    ids: list[list[int]] = []
    predicted = 0
    for text in texts:
        for sentence in split_sentences(text):
            if not _clean(sentence, min_words):
                continue
            tokens = tokenizer(sentence)["input_ids"]
            if len(tokens) > max_len:
                continue
            sentences.append(sentence)
            ids.append(tokens)
            predicted += len(tokens) - 1
            if predicted >= min_tokens:
                return sentences, ids, predicted
    return sentences, ids, predicted


def e0_sentences(path: str | None = None) -> list[str]:
    """The published E0 sentences, for display."""
    file = paths.data_dir() / (path or E0_FILE)
    return [s.strip() for s in file.read_text(encoding="utf-8").splitlines() if s.strip()]
