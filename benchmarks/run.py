"""Benchmarks: measured side by side in one run, reported as ratios (never asserted in tests).

models: load time of the offline model from its GGUF vs from the converted cache, and tokens/s
of a plain forward pass (the reference later chapters compare their analyses with).

    python benchmarks/run.py [--threads N] [--repeats R]

Writes benchmarks/out/models.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from layerlab import corpus, models, provenance

NAME = "smollm2-135m-instruct-q4"
OUT = Path(__file__).resolve().parent / "out"


def _timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def bench_load(repeats: int) -> dict:
    """GGUF load (parse + dequantise + convert) into a throw-away cache vs load from the cache."""
    import os

    scratch = Path(tempfile.mkdtemp(prefix="layerlab-bench-"))
    old = os.environ.get("LAYERLAB_CACHE")
    os.environ["LAYERLAB_CACHE"] = str(scratch)
    try:
        def from_gguf():
            shutil.rmtree(scratch / "models", ignore_errors=True)
            models.load(NAME)

        gguf = _timed(from_gguf, 1)  # ~20-30 s each; once is enough to show the ratio
        cached = _timed(lambda: models.load(NAME), repeats)
    finally:
        if old is None:
            os.environ.pop("LAYERLAB_CACHE")
        else:
            os.environ["LAYERLAB_CACHE"] = old
        shutil.rmtree(scratch, ignore_errors=True)
    return {"gguf_load_s": gguf[0], "cached_load_s": statistics.median(cached),
            "cached_load_all_s": cached, "ratio_gguf_over_cached": gguf[0] / statistics.median(cached)}


@torch.no_grad()
def bench_forward(repeats: int) -> dict:
    lm = models.load(NAME)
    blocks = corpus.token_blocks(lm.tokenizer, "wikipedia", n_tokens=4 * 512, seq_len=512)
    lm.model(input_ids=blocks[:1], use_cache=False)  # warm-up
    out = {}
    for label, kwargs in {"plain": {}, "with_hidden_states": {"output_hidden_states": True}}.items():
        times = _timed(lambda: lm.model(input_ids=blocks, use_cache=False, **kwargs), repeats)
        out[label] = {"seconds_per_batch": statistics.median(times), "tokens": blocks.numel(),
                      "tokens_per_s": blocks.numel() / statistics.median(times)}
    out["hidden_states_overhead_ratio"] = (out["with_hidden_states"]["seconds_per_batch"]
                                           / out["plain"]["seconds_per_batch"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    result = {"load": bench_load(args.repeats), "forward": bench_forward(args.repeats),
              "provenance": provenance.collect("cpu", threads=args.threads, model=NAME)}
    OUT.mkdir(exist_ok=True)
    (OUT / "models.json").write_text(json.dumps(result, indent=1))
    load, fwd = result["load"], result["forward"]
    print(f"load from GGUF     {load['gguf_load_s']:7.2f} s")
    print(f"load from cache    {load['cached_load_s']:7.2f} s   ratio {load['ratio_gguf_over_cached']:.1f}x")
    print(f"forward 4x512      {fwd['plain']['tokens_per_s']:7.0f} tokens/s ({args.threads} threads)")
    print(f"  + hidden states  {fwd['with_hidden_states']['tokens_per_s']:7.0f} tokens/s "
          f"(overhead {fwd['hidden_states_overhead_ratio']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
