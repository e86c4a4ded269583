"""Benchmarks: measured side by side in one run, reported as ratios (never asserted in tests).

models:  load time of the offline model from its GGUF vs from the converted cache, and tokens/s
         of a plain forward pass (the reference later chapters compare their analyses with).
scaling: the Chinchilla fit (chapter 01): the paper recipe (50k Adam steps), the converged
         multi-start fit, and a 1000-resample bootstrap solved as one batched problem vs the
         same solver run resample by resample (and scipy's least_squares as a reference).
hidden:  the streaming statistics pass (chapters 02-03) vs a bare forward pass of SmolLM2 over
         the same tokens, and the peak memory for 4 vs 16 windows of 512 tokens.
toy:     chapter 04's batched step (all student depths, one teacher pass) vs training the
         students one by one for the same steps; and the grid of 8 sweeps as one batched
         program (toy.Grid) vs sweep by sweep.
offload: the statistics pass of a sharded 12 x 768 Llama in memory vs read from disk through
         accelerate's offload: time and peak RSS (not in the default set).
weights: chapters 07-08's weight-statistics pass over all layers and tensor types with nulls
         (delta correlations, ridge over the α grid, descriptors), timed; and Gram-space ridge vs
         the same dual ridge computed on the explicit 884,736-element gate_proj layers.
report:  `layerlab report --quick` in one process vs the same diagnostics run the way the
         chapters run them, one fresh process per chapter (not in the default set; --model).
anatomy: chapter 05's full neighbour-average map of SmolLM2 (base + one edit per layer, in
         place, restored exactly, blocks below the edit not rerun) vs L+1 plain evaluations of
         the same sentences; and the same map without the resume (edits only, full forwards).

    python benchmarks/run.py [models|scaling|hidden|toy|weights|anatomy|offload|report ...] [--threads N] [--repeats R]

Writes benchmarks/out/<suite>.json and prints a table.
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
        times = _timed(lambda: lm.model(input_ids=blocks, use_cache=False, **kwargs), repeats)  # noqa: B023
        out[label] = {"seconds_per_batch": statistics.median(times), "tokens": blocks.numel(),
                      "tokens_per_s": blocks.numel() / statistics.median(times)}
    out["hidden_states_overhead_ratio"] = (out["with_hidden_states"]["seconds_per_batch"]
                                           / out["plain"]["seconds_per_batch"])
    return out


def bench_scaling(n_resamples: int = 1000, n_looped: int = 100) -> dict:
    import numpy as np
    from scipy.optimize import least_squares

    from layerlab.depth import scaling

    data = scaling.load_chinchilla()
    start = time.perf_counter()
    paper = scaling.fit(data, "paper")
    t_paper = time.perf_counter() - start
    start = time.perf_counter()
    conv = scaling.fit(data, "converged")
    t_conv = time.perf_counter() - start
    start = time.perf_counter()
    boot = scaling.bootstrap(data, conv, n_resamples=n_resamples, seed=0)
    t_boot = time.perf_counter() - start

    # the same resamples, one at a time: our solver with B = 1, and scipy's LM
    d = scaling.design(scaling.kept(data))
    rng = np.random.default_rng(0)
    w = rng.multinomial(d.n, np.full(d.n, 1 / d.n), size=n_resamples).astype(float)[:n_looped]
    theta0 = np.array(conv.extra["theta"])
    start = time.perf_counter()
    looped = [scaling.levenberg_marquardt(d, wi[None], theta0)[0][0] for wi in w]
    t_loop = (time.perf_counter() - start) / n_looped
    start = time.perf_counter()
    sp = []
    for wi in w:
        sw = np.sqrt(wi)
        sp.append(least_squares(lambda th: sw * (d.y - np.log(scaling.predict(th, d.X)[0])), theta0,  # noqa: B023
                                method="lm").x)
    t_scipy = (time.perf_counter() - start) / n_looped
    agree = float(np.abs(np.array(sp)[:, 4] - boot["alpha_l"].to_numpy()[:n_looped]).max())
    return {"paper_recipe_s": t_paper, "alpha_l_paper": paper.alpha_l,
            "converged_fit_s": t_conv, "alpha_l_converged": conv.alpha_l,
            "bootstrap_batched_s": t_boot, "n_resamples": n_resamples,
            "bootstrap_looped_estimate_s": t_loop * n_resamples,
            "bootstrap_scipy_estimate_s": t_scipy * n_resamples,
            "ratio_looped_over_batched": t_loop * n_resamples / t_boot,
            "ratio_scipy_over_batched": t_scipy * n_resamples / t_boot,
            "max_abs_alpha_l_difference_scipy_vs_batched": agree,
            "max_abs_alpha_l_difference_looped_vs_batched": float(np.abs(
                np.array(looped)[:, 4] - boot["alpha_l"].to_numpy()[:n_looped]).max())}


def _peak_rss_mb(n_blocks: int) -> float:
    """Peak resident memory of a fresh process that streams `n_blocks` x 512 tokens of SmolLM2
    through the statistics pass (ru_maxrss only grows, hence one process per size)."""
    import subprocess

    code = (
        "import resource, torch; torch.set_num_threads(1)\n"
        "from layerlab import corpus, hidden, models\n"
        f"lm = models.load('{NAME}')\n"
        f"b = corpus.token_blocks(lm.tokenizer, 'wikipedia', n_tokens={n_blocks} * 512, seq_len=512)\n"
        "hidden.collect(lm, hidden.block_batches(b, 2), progress=False)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


@torch.no_grad()
def bench_hidden(repeats: int, n_blocks: int = 8) -> dict:
    """The statistics pass vs a bare forward pass over the same tokens, side by side."""
    from layerlab import hidden

    lm = models.load(NAME)
    blocks = corpus.token_blocks(lm.tokenizer, "wikipedia", n_tokens=n_blocks * 512, seq_len=512)
    batches = hidden.block_batches(blocks, 2)
    lm.model(input_ids=blocks[:1], use_cache=False)  # warm-up

    def bare():
        for b in batches:
            lm.model(input_ids=b["input_ids"], use_cache=False)

    def stats():
        hidden.collect(lm, batches, progress=False)

    t_bare, t_stats = [], []
    for _ in range(repeats):  # interleaved, so load changes hit both alike
        t_bare += _timed(bare, 1)
        t_stats += _timed(stats, 1)
    bare_s, stats_s = statistics.median(t_bare), statistics.median(t_stats)
    rss = {n: _peak_rss_mb(n) for n in (4, 16)}
    return {"tokens": blocks.numel(), "bare_forward_s": bare_s, "stats_pass_s": stats_s,
            "bare_tokens_per_s": blocks.numel() / bare_s, "stats_tokens_per_s": blocks.numel() / stats_s,
            "overhead_ratio": stats_s / bare_s, "peak_rss_mb_4_blocks": rss[4],
            "peak_rss_mb_16_blocks": rss[16]}


def bench_toy(steps: int = 200, repeats: int = 3) -> dict:
    """All student depths in one step (one batch, one teacher pass) vs one student at a time
    (its own teacher pass), the same number of steps, cpu-profile sizes."""
    from layerlab.depth import toy

    base = dict(teacher_depth=64, batch_size=256, steps=steps, student_depths=(2, 4, 8, 16))

    def together():
        sweep = toy.Sweep(toy.ToyConfig(**base))
        for _ in range(steps):
            sweep.train_step()

    def one_by_one():
        for d in base["student_depths"]:
            sweep = toy.Sweep(toy.ToyConfig(**{**base, "student_depths": (d,)}))
            for _ in range(steps):
                sweep.train_step()

    t_together, t_single = [], []
    for _ in range(repeats):
        t_together += _timed(together, 1)
        t_single += _timed(one_by_one, 1)
    a, b = statistics.median(t_together), statistics.median(t_single)
    return {"steps": steps, "together_s": a, "one_by_one_s": b,
            "ratio_one_by_one_over_together": b / a,
            # the cpu profile's batch, and a small one where launches, not arithmetic, dominate
            # (the regime of a GPU at width 32)
            "grid": bench_toy_grid(steps, repeats),
            "grid_small_batch": bench_toy_grid(steps, repeats, batch_size=16)}


def bench_toy_grid(steps: int = 200, repeats: int = 3, batch_size: int = 256) -> dict:
    """The paper's grid shape at cpu-profile sizes -- 4 temperatures x 2 teacher types, one seed
    (8 KL sweeps) -- as one batched program (`toy.Grid`: one teacher pass per teacher type,
    one batched matmul per layer and depth) vs today's sweep-by-sweep loop (each sweep's depths
    together, its own teacher pass), the same steps; and the share of the batched step spent in
    matrix products (what batching cannot remove on a CPU)."""
    from torch.profiler import profile

    from layerlab.depth import toy

    base = dict(teacher_depth=64, batch_size=batch_size, steps=steps,
                student_depths=(2, 4, 8, 16))
    configs = {f"kl-T{t}-{teacher}": toy.ToyConfig(**base, temperature=t, teacher=teacher)
               for t in (0.1, 0.3, 1.0, 3.0) for teacher in ("independent", "tied")}

    def batched():
        grid = toy.Grid(configs)
        for _ in range(steps):
            grid.train_step()

    def sequential():
        for cfg in configs.values():
            sweep = toy.Sweep(cfg)
            for _ in range(steps):
                sweep.train_step()

    t_grid, t_seq = [], []
    for _ in range(repeats):
        t_grid += _timed(batched, 1)
        t_seq += _timed(sequential, 1)
    grid = toy.Grid(configs)
    grid.train_step()
    with profile() as prof:
        for _ in range(3):
            grid.train_step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events
                 if e.key in ("aten::bmm", "aten::baddbmm", "aten::mm", "aten::addmm"))
    a, b = statistics.median(t_grid), statistics.median(t_seq)
    students = len(configs) * len(base["student_depths"])
    return {"sweeps": len(configs), "batch_size": batch_size, "steps": steps, "batched_s": a,
            "sequential_s": b, "ratio_sequential_over_batched": b / a,
            "student_steps_per_s_batched": students * steps / a,
            "matmul_share_of_batched_step": matmul / total}


_OFFLOAD_CHILD = """
import json, resource, sys, time, torch
torch.set_num_threads(1)
from layerlab import hidden, models
folder, mode = sys.argv[1], sys.argv[2]
kw = {"device_map": "auto", "max_memory": {"cpu": "1MB"}} if mode == "disk" else {}
lm = models.load(folder, **kw)
ids = torch.randint(3, 250, (8, 256), generator=torch.Generator().manual_seed(0))
start = time.perf_counter()
out = hidden.collect(lm, hidden.block_batches(ids, 4), progress=False)
print(json.dumps({"seconds": time.perf_counter() - start,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "theta_mean": out["conventions"]["hf"]["all"]["theta"]["mean"]}))
"""


def bench_offload() -> dict:
    """The statistics pass of a 12 x 768 Llama saved in shards, in memory vs every block read
    from disk through accelerate's offload (each in a fresh process: peak RSS), and the largest
    difference of any per-layer mean angle between the two."""
    import subprocess

    from layerlab import models

    folder = Path(tempfile.mkdtemp(prefix="layerlab-offload-"))
    try:
        tiny = models.load_tiny("tiny-llama", layers=12, width=768)
        tiny.model.save_pretrained(folder, max_shard_size="50MB")
        tiny.tokenizer.save_pretrained(folder)
        del tiny
        res = {}
        for mode in ("memory", "disk"):
            out = subprocess.run([sys.executable, "-c", _OFFLOAD_CHILD, str(folder), mode],
                                 capture_output=True, text=True, check=True)
            res[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        diff = max(abs(a - b) for a, b in zip(res["memory"]["theta_mean"], res["disk"]["theta_mean"]))
        for r in res.values():
            r.pop("theta_mean")
        return {**res, "max_abs_theta_difference": diff, "layers": 12, "width": 768}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_weights() -> dict:
    """The full weight-statistics pass of chapters 07-08 (cpu profile, nothing cached), and the
    Gram-space ridge vs an explicit dual ridge on gate_proj (in-sample, forward, LOO × 4 α)."""
    import numpy as np

    from layerlab import profiles
    from layerlab.anatomy import deltas, predictability
    from layerlab.anatomy import weights as w
    from layerlab.anatomy.lab import Lab

    lab = Lab(profiles.get("cpu"), progress=False)
    lab.lm  # noqa: B018 - load outside the timings
    t_delta = _timed(lambda: deltas.measure(lab), 1)[0]
    t_ridge = _timed(lambda: predictability.measure_ridge(lab), 1)[0]
    t_desc = _timed(lambda: predictability.measure_descriptors(lab), 1)[0]

    s = w.stack(lab.lm, w.LLAMA_TYPES["gate"]).astype(np.float64)
    L = s.shape[0]
    plans = [(p, a) for p in ("in_sample", "forward", "loo") for a in predictability.SPEC_ALPHAS]

    def gram_way():
        g = w.Gram.of(s)
        for p, a in plans:
            w.ridge_scores(g, a, p)

    def explicit_way():  # the same estimator on the data: kernels and predictions in 884,736-d
        split = w.default_split(L)
        for p, a in plans:
            targets = range(split, L) if p == "forward" else range(1, L)
            for t in targets:
                train = (list(range(1, split)) if p == "forward" else
                         [u for u in range(1, L) if u != t] if p == "loo" else list(range(1, L)))
                X, Y = s[[u - 1 for u in train]], s[train]
                xm, ym = X.mean(0), Y.mean(0)
                Xc = X - xm
                k = Xc @ (s[t - 1] - xm)
                pred = ym + np.linalg.solve(Xc @ Xc.T + a * np.eye(len(train)), k) @ (Y - ym)
                _ = 1 - ((s[t] - pred) ** 2).sum() / ((s[t] - s[t].mean()) ** 2).sum()

    t_gram = _timed(gram_way, 1)[0]
    t_explicit = _timed(explicit_way, 1)[0]
    return {"delta_pass_s": t_delta, "ridge_pass_s": t_ridge, "descriptor_pass_s": t_desc,
            "total_s": t_delta + t_ridge + t_desc, "gate_gram_ridge_s": t_gram,
            "gate_explicit_ridge_s": t_explicit, "ratio_explicit_over_gram": t_explicit / t_gram}


def bench_anatomy(min_tokens: int = 2000) -> dict:
    """The importance map (L+1 evaluations with edits) vs L+1 plain evaluations, one run."""
    from layerlab.anatomy import edits, evalsets
    from layerlab.anatomy.evaluator import Evaluator

    lm = models.load(NAME)
    es = evalsets.e1(lm.tokenizer, "wikipedia", min_tokens=min_tokens)
    L = lm.n_layers

    def plain():
        ev = Evaluator(lm, es, resume=False)
        ev.base()
        for _ in range(L):
            ev.evaluate()  # the unedited model, full forward

    def mapped(resume: bool):
        ev = Evaluator(lm, es, resume=resume)
        ev.base()
        for l in range(L):
            ev.evaluate(edits.edit("neighbour_average", l))

    t_plain = _timed(plain, 1)[0]
    t_map = _timed(lambda: mapped(True), 1)[0]
    t_map_full = _timed(lambda: mapped(False), 1)[0]
    return {"layers": L, "predicted_tokens": es.predicted_tokens, "plain_s": t_plain,
            "map_resumed_s": t_map, "map_full_forward_s": t_map_full,
            "ratio_map_over_plain": t_map / t_plain,
            "ratio_map_without_resume_over_plain": t_map_full / t_plain}


# One chapter's share of the report's diagnostics, in a fresh process as a reader running the
# chapters one by one would: import, load the model, read the text, compute its part (with the
# untrained twin where the chapter has one; every P2 chapter evaluates its own base).
_REPORT_CHILD = r"""
import sys, tempfile, time
from pathlib import Path
t0 = time.perf_counter()
import torch
torch.set_num_threads(int(sys.argv[3]))
from layerlab import models, results
from layerlab.anatomy.evaluator import Evaluator
from layerlab.report import diagnostics as d, text
from layerlab.report.build import fitted, load_model
from layerlab.settings import REPORT_QUICK
name, part = sys.argv[1], sys.argv[2]
lm = load_model(name)
cfg = fitted(REPORT_QUICK, lm)
txt = text.load(None)
cache = results.Cache("cache", root=Path(tempfile.mkdtemp()))
if part in ("geometry", "lens", "weights"):
    blocks = text.windows(lm.tokenizer, txt, cfg, add_bos=lm.add_bos)
    twin = models.untrained_twin(lm, seed=cfg.seed)
    for m in (lm, twin):
        if part == "geometry":
            d.geometry_of(m, blocks, cfg, progress=False)
        elif part == "lens":
            d.lens_of(m, blocks, cfg)
    if part == "weights":
        d.weight_statistics(lm, twin, cfg)
else:
    ev = Evaluator(lm, text.eval_set(lm.tokenizer, txt, cfg), batch_tokens=cfg.batch_tokens)
    base = ev.base()
    if part == "importance":
        d.importance_map(ev, d.importance_items(lm.n_layers), cache, {}, False)
    else:  # chapter 06 reads chapter 05's layer ranking from its cache
        d.scaling_sweep(ev, base, [int(x) for x in sys.argv[4].split(",")], cfg, cache, {}, False)
print(time.perf_counter() - t0)
"""

_REPORT_WHOLE = r"""
import sys, tempfile, time, json
t0 = time.perf_counter()
import torch
torch.set_num_threads(int(sys.argv[2]))
from layerlab.report.build import build
r = build(sys.argv[1], tempfile.mkdtemp(), progress=False)
print(json.dumps({"seconds": time.perf_counter() - t0, "layers": r["p2"]["scaled_layers"]}))
"""


def bench_report(name: str = NAME, threads: int = 1) -> dict:
    """`layerlab report --quick` in one process vs the same diagnostics as the chapters run them,
    one fresh process per chapter (02-03 geometry, 02 lens, 07-08 weights, 05 importance, 06
    scaling), each timed from interpreter start."""
    import subprocess

    def run(code: str, *args: str) -> str:
        out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                             text=True)
        if out.returncode:
            raise RuntimeError(out.stderr[-3000:])
        return out.stdout.strip().splitlines()[-1]

    start = time.perf_counter()
    whole = json.loads(run(_REPORT_WHOLE, name, threads))
    whole["wall_s"] = time.perf_counter() - start
    layers = ",".join(map(str, whole["layers"]))
    parts = {part: float(run(_REPORT_CHILD, name, part, threads, layers))
             for part in ("geometry", "lens", "weights", "importance", "scaling")}
    one_by_one = sum(parts.values())
    return {"model": name, "threads": threads, "report_s": whole["wall_s"],
            "chapters_s": parts, "one_by_one_s": one_by_one,
            "ratio_report_over_one_by_one": whole["wall_s"] / one_by_one}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("suites", nargs="*",
                        default=["models", "scaling", "hidden", "toy", "weights", "anatomy"])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", help="the report suite's model (default: SmolLM2)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    OUT.mkdir(exist_ok=True)
    prov = provenance.collect("cpu", threads=args.threads)
    if "scaling" in args.suites:
        res = bench_scaling() | {"provenance": prov}
        (OUT / "scaling.json").write_text(json.dumps(res, indent=1))
        print(f"paper recipe (50k Adam)   {res['paper_recipe_s']:7.2f} s  α_ℓ {res['alpha_l_paper']:.4f}")
        print(f"converged fit (16 starts) {res['converged_fit_s']:7.2f} s  α_ℓ {res['alpha_l_converged']:.4f}")
        print(f"bootstrap x{res['n_resamples']} batched   {res['bootstrap_batched_s']:7.2f} s")
        print(f"  one at a time (est.)    {res['bootstrap_looped_estimate_s']:7.2f} s  ratio "
              f"{res['ratio_looped_over_batched']:.1f}x")
        print(f"  scipy least_squares     {res['bootstrap_scipy_estimate_s']:7.2f} s  ratio "
              f"{res['ratio_scipy_over_batched']:.1f}x (max |Δα_ℓ| "
              f"{res['max_abs_alpha_l_difference_scipy_vs_batched']:.1e})")
    if "hidden" in args.suites:
        res = bench_hidden(args.repeats) | {"provenance": prov | {"model": NAME}}
        (OUT / "hidden.json").write_text(json.dumps(res, indent=1))
        print(f"bare forward       {res['bare_tokens_per_s']:7.0f} tokens/s")
        print(f"statistics pass    {res['stats_tokens_per_s']:7.0f} tokens/s  "
              f"(overhead {res['overhead_ratio']:.3f}x)")
        print(f"peak RSS           {res['peak_rss_mb_4_blocks']:.0f} MB for 4x512 tokens, "
              f"{res['peak_rss_mb_16_blocks']:.0f} MB for 16x512")
    if "toy" in args.suites:
        res = bench_toy() | {"provenance": prov}
        (OUT / "toy.json").write_text(json.dumps(res, indent=1))
        print(f"toy: {res['steps']} steps, all depths together {res['together_s']:.2f} s, one by one "
              f"{res['one_by_one_s']:.2f} s (ratio {res['ratio_one_by_one_over_together']:.2f}x)")
        for key in ("grid", "grid_small_batch"):
            g = res[key]
            print(f"toy grid, {g['sweeps']} sweeps, batch {g['batch_size']}: batched "
                  f"{g['batched_s']:.2f} s vs sweep by sweep {g['sequential_s']:.2f} s (ratio "
                  f"{g['ratio_sequential_over_batched']:.2f}x; {g['student_steps_per_s_batched']:.0f} "
                  f"student-steps/s; matmuls {g['matmul_share_of_batched_step']:.0%} of the step)")
    if "offload" in args.suites:
        res = bench_offload() | {"provenance": prov}
        (OUT / "offload.json").write_text(json.dumps(res, indent=1))
        for mode in ("memory", "disk"):
            r = res[mode]
            print(f"statistics pass, model {mode:6s}: {r['seconds']:.2f} s, peak RSS {r['peak_rss_mb']:.0f} MB")
    if "weights" in args.suites:
        res = bench_weights() | {"provenance": prov | {"model": NAME}}
        (OUT / "weights.json").write_text(json.dumps(res, indent=1))
        print(f"weight statistics: deltas {res['delta_pass_s']:.1f} s, ridge (α grid, nulls) "
              f"{res['ridge_pass_s']:.1f} s, descriptors {res['descriptor_pass_s']:.1f} s; "
              f"total {res['total_s']:.1f} s")
        print(f"gate_proj ridge, 12 fits: Gram {res['gate_gram_ridge_s']:.2f} s vs explicit "
              f"{res['gate_explicit_ridge_s']:.2f} s (ratio {res['ratio_explicit_over_gram']:.0f}x)")
    if "report" in args.suites:
        res = bench_report(args.model or NAME, args.threads) | {"provenance": prov}
        (OUT / "report.json").write_text(json.dumps(res, indent=1))
        print(f"report --quick on {res['model']}: one process {res['report_s']:.0f} s vs the "
              f"chapters one by one {res['one_by_one_s']:.0f} s (ratio "
              f"{res['ratio_report_over_one_by_one']:.2f}); parts "
              + ", ".join(f"{k} {v:.0f} s" for k, v in res["chapters_s"].items()))
    if "anatomy" in args.suites:
        res = bench_anatomy() | {"provenance": prov | {"model": NAME}}
        (OUT / "anatomy.json").write_text(json.dumps(res, indent=1))
        print(f"{res['layers'] + 1} plain evaluations  {res['plain_s']:7.1f} s "
              f"({res['predicted_tokens']} tokens each)")
        print(f"importance map (resumed)   {res['map_resumed_s']:7.1f} s  "
              f"ratio {res['ratio_map_over_plain']:.2f}x")
        print(f"importance map (full fwd)  {res['map_full_forward_s']:7.1f} s  "
              f"ratio {res['ratio_map_without_resume_over_plain']:.2f}x")
    if "models" not in args.suites:
        return 0
    result = {"load": bench_load(args.repeats), "forward": bench_forward(args.repeats),
              "provenance": prov | {"model": NAME}}
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
