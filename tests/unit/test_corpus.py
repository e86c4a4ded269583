from __future__ import annotations

import json

import pytest
import torch

from layerlab import corpus, models


@pytest.fixture(scope="module")
def tok():
    return models.byte_tokenizer()


def test_blocks_are_deterministic_and_shaped(tok):
    a = corpus.token_blocks(tok, "wikipedia", n_tokens=1000, seq_len=100)
    b = corpus.token_blocks(tok, "wikipedia", n_tokens=1000, seq_len=100)
    assert a.shape == (10, 100) and a.dtype == torch.long
    assert torch.equal(a, b)


def test_more_tokens_extend_never_change_earlier_blocks(tok):
    small = corpus.token_blocks(tok, "kjv", n_tokens=300, seq_len=100)
    big = corpus.token_blocks(tok, "kjv", n_tokens=900, seq_len=100)
    assert torch.equal(big[:3], small)


def test_blocks_are_the_text_in_order(tok):
    blocks = corpus.token_blocks(tok, "wikipedia", n_tokens=400, seq_len=200, split="all")
    text = tok.decode(blocks.flatten().tolist())
    assert corpus.load_text("wikipedia").startswith(text)


def test_splits_partition_the_text():
    full = corpus.load_text("shakespeare", "all")
    parts = [corpus.load_text("shakespeare", s) for s in ("train", "validation", "test")]
    assert "".join(parts) == full
    assert all(p.endswith("\n") for p in parts[:2])  # cut at line starts
    assert 0.79 < len(parts[0]) / len(full) < 0.81


def test_offset_moves_into_the_split(tok):
    a = corpus.token_blocks(tok, "wikipedia", n_tokens=200, seq_len=100)
    b = corpus.token_blocks(tok, "wikipedia", n_tokens=200, seq_len=100, offset=0.5)
    assert not torch.equal(a, b)


def test_bos_is_prepended_to_every_window(tok):
    blocks = corpus.token_blocks(tok, "pydoc", n_tokens=300, seq_len=100, add_bos=True)
    assert (blocks[:, 0] == tok.bos_token_id).all()
    plain = corpus.token_blocks(tok, "pydoc", n_tokens=300, seq_len=99)
    assert torch.equal(blocks[:, 1:], plain)


def test_pydoc_needs_no_file():
    assert "Python" in corpus.load_text("pydoc")


def test_local_text_file(tmp_path, tok):
    path = tmp_path / "t.txt"
    path.write_text("hello world\n" * 50)
    blocks = corpus.token_blocks(tok, str(path), n_tokens=120, seq_len=60, split="all")
    assert tok.decode(blocks[0].tolist()).startswith("hello world\nhello")


def test_empty_text_is_a_clear_error(tmp_path, tok):
    path = tmp_path / "empty.txt"
    path.write_text("  \n\n")
    with pytest.raises(corpus.CorpusError, match="empty"):
        corpus.token_blocks(tok, str(path), n_tokens=10, seq_len=5)


def test_too_short_text_is_a_clear_error(tmp_path, tok):
    path = tmp_path / "short.txt"
    path.write_text("just a few words\n")
    with pytest.raises(corpus.CorpusError, match="has only 17 tokens"):
        corpus.token_blocks(tok, str(path), n_tokens=100, seq_len=50, split="all")


@pytest.mark.parametrize("kwargs, match", [
    (dict(source="nope"), "unknown text source"),
    (dict(split="dev"), "unknown split"),
    (dict(n_tokens=10, seq_len=20), "less than one window"),
    (dict(seq_len=1), "at least 2"),
    (dict(offset=1.0), "offset"),
])
def test_bad_arguments(tok, kwargs, match):
    args = dict(source="wikipedia", n_tokens=100, seq_len=50) | kwargs
    source = args.pop("source")
    with pytest.raises(corpus.CorpusError, match=match):
        corpus.token_blocks(tok, source, **args)


def test_fineweb_streams_local_files_in_order(tmp_path, monkeypatch, tok):
    docs = [{"text": f"Document number {i}. " * 20, "id": i} for i in range(5)]
    path = tmp_path / "fw.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in docs))
    monkeypatch.setenv("LAYERLAB_FINEWEB_FILES", str(path))
    texts = list(corpus.fineweb_documents())
    assert texts == [d["text"] for d in docs]
    blocks = corpus.token_blocks(tok, "fineweb", n_tokens=800, seq_len=200)
    assert tok.decode(blocks[0].tolist()).startswith("Document number 0.")
    with pytest.raises(corpus.CorpusError, match="start of its stream"):
        corpus.token_blocks(tok, "fineweb", n_tokens=200, seq_len=100, split="train")


def test_document_batch_pads_right_and_masks(tok):
    batch = corpus.document_batch(tok, ["short", "a much longer document " * 10], seq_len=32)
    assert batch["input_ids"].shape == (2, 32)
    assert batch["attention_mask"][0].sum() == 5 and batch["attention_mask"][1].all()
    assert batch["attention_mask"][0, :5].all() and not batch["attention_mask"][0, 5:].any()
    with pytest.raises(corpus.CorpusError):
        corpus.document_batch(tok, ["fine", ""], seq_len=8)


def test_describe_lists_every_offline_source():
    rows = corpus.describe()
    assert [r["source"] for r in rows] == ["wikipedia", "kjv", "shakespeare", "pydoc"]
    assert all(r["test_chars"] > 10_000 for r in rows)
