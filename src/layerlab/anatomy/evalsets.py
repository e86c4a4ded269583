"""The two evaluation sets of P2's chapters.

- **E0**: ten English sentences written for this book (`data/eval/e0_sentences.txt`); the paper's
  ten sentences are not published, so these stand in for them and are published here.
- **E1**: several hundred sentences, at least `min_tokens` predicted tokens. With `documents` = 0
  they are taken in order from the test split of a vendored corpus (or from FineWeb in the `gpu`
  profile): a few long articles. With `documents` = n they come from n documents -- n Wikipedia
  articles spread evenly over the corpus (FineWeb: the stream's first n documents) long enough to
  give an equal share of the tokens from their start --, and each sentence carries its document (`units`),
  so intervals resample documents, the independent units, rather than sentences of one article.

Each sentence is its own sequence, tokenized with the tokenizer's defaults (SmolLM2 adds no BOS),
and tokens 1 … T−1 are predicted, as P2's spec asks (research/paper2.md §3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from layerlab import corpus, paths

__all__ = ["by_document", "documents_of", "E0_FILE", "e0", "e0_sentences", "e1", "EvalSet",
           "split_sentences", "take_sentences"]

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
    units: list[int] | None = None  # each sentence's document, when resampled by document
    unit_names: list[str] = field(default_factory=list)  # the documents' titles

    def __post_init__(self) -> None:
        if not self.ids:
            raise corpus.CorpusError(f"evaluation set {self.name!r} has no sentences")
        if self.units is not None and len(self.units) != len(self.ids):
            raise ValueError(f"evaluation set {self.name!r}: {len(self.units)} units for "
                             f"{len(self.ids)} sentences")
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
        by_document = self.units is not None
        return {"set": self.name, "source": self.source, "sentences": len(self.ids),
                "resampled by": "document" if by_document else "sentence",
                "resampling units": len(set(self.units)) if by_document else len(self.ids),
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
       split: str = "test", max_len: int = 96, min_words: int = 6, documents: int = 0) -> EvalSet:
    """Held-out sentences until at least `min_tokens` tokens are predicted.

    `documents` = 0: in text order from the `split`. `documents` = n: `min_tokens / n` tokens
    (rounded up) from the start of each of n documents (`by_document`), each sentence tagged with
    its document. Sentences longer than `max_len` tokens are skipped (they are rare and would
    dominate padding).
    """
    if documents:
        return by_document(tokenizer, source, min_tokens=min_tokens, max_len=max_len,
                           min_words=min_words, documents=documents)
    texts: Iterable[str] = (corpus.fineweb_documents() if source == "fineweb"
                            else [corpus.load_text(source, split)])
    sentences, ids, predicted = take_sentences(tokenizer, texts, min_tokens=min_tokens,
                                               max_len=max_len, min_words=min_words)
    if predicted < min_tokens:
        raise corpus.CorpusError(f"{source!r} ({split}) gives only {predicted} tokens of clean "
                                 f"sentences, fewer than the {min_tokens} asked for")
    return EvalSet("E1", sentences, ids, source=f"{source}:{split}",
                   info={"min_tokens": min_tokens, "max_len": max_len})


def documents_of(source: str) -> Iterator[tuple[str, str]]:
    """(title, text) of each document of a source, in order: a vendored corpus's articles
    (blocks separated by two blank lines, the title on the first line), or FineWeb's stream."""
    if source == "fineweb":
        for i, text in enumerate(corpus.fineweb_documents()):
            yield f"document {i}", text
        return
    for block in corpus.load_text(source, "all").split("\n\n\n"):
        title, _, text = block.strip().partition("\n")
        if text.strip():
            yield title.strip(), text


def by_document(tokenizer: Any, source: str, *, min_tokens: int, max_len: int, min_words: int,
                documents: int) -> EvalSet:
    """E1 from `documents` documents, each giving its share -- ceil(min_tokens / documents)
    predicted tokens -- of clean sentences from its start, so every unit weighs about the same.
    Documents too short for a share are passed over; of the rest, a vendored corpus gives
    `documents` spread evenly over the whole corpus (no stretch of it dominates), FineWeb its
    stream's first ones. Too few long-enough documents is an error."""
    if documents < 2:
        raise ValueError(f"documents must be at least 2 to resample them, not {documents}")
    share = -(-min_tokens // documents)
    eligible: list[tuple[str, list[str], list[list[int]]]] = []
    for title, text in documents_of(source):
        got, tok, predicted = take_sentences(tokenizer, [text], min_tokens=share, max_len=max_len,
                                             min_words=min_words)
        if predicted >= share:
            eligible.append((title, got, tok))
            if source == "fineweb" and len(eligible) == documents:
                break
    if len(eligible) < documents:
        raise corpus.CorpusError(
            f"{source!r} has {len(eligible)} documents with {share} tokens of clean sentences; "
            f"{documents} were asked for (ask for fewer tokens or fewer documents)")
    chosen = [eligible[(i * len(eligible)) // documents] for i in range(documents)]
    sentences = [x for _, got, _ in chosen for x in got]
    ids = [x for _, _, tok in chosen for x in tok]
    units = [u for u, (_, got, _) in enumerate(chosen) for _ in got]
    return EvalSet("E1", sentences, ids, source=f"{source}:{documents} documents",
                   info={"min_tokens": min_tokens, "max_len": max_len}, units=units,
                   unit_names=[title for title, _, _ in chosen])


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
