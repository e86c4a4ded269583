"""`build(model, out)`: load, measure step by step (each stored in `out/cache/` when it
finishes), judge, and write `report.html` and `report.json` last.

Used by `layerlab report` and chapter 12.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from layerlab import models, offload, paper, provenance, results
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.report import diagnostics as d
from layerlab.report import rules, text
from layerlab.report.text import ReportError
from layerlab.settings import REPORT_FULL, REPORT_QUICK, ReportSettings

__all__ = ["ReportError", "build", "model_fingerprint", "settings_for"]


def settings_for(mode: str) -> ReportSettings:
    presets = {"quick": REPORT_QUICK, "full": REPORT_FULL}
    if mode not in presets:
        raise ReportError(f"unknown mode {mode!r}; use quick or full")
    return presets[mode]


def fitted(cfg: ReportSettings, lm: models.LoadedModel) -> ReportSettings:
    """The settings with windows no longer than the model was built for."""
    longest = getattr(lm.model.config.get_text_config(), "max_position_embeddings", None)
    if isinstance(longest, int) and longest < cfg.seq_len:
        return cfg.replace(seq_len=longest, geometry_tokens=max(cfg.geometry_tokens, 2 * longest))
    return cfg


def load_model(name: str, *, dtype: str = "float32", device: str | None = None,
               device_map: str | None = None) -> models.LoadedModel:
    """The model, with a causal-LM check: a folder of another kind of model gets a clear error."""
    try:
        torch_dtype = models.resolve_dtype(dtype)
    except AttributeError as err:
        raise ReportError(f"unknown dtype {dtype!r}; use float32, bfloat16 or float16") from err
    folder = Path(name).expanduser()
    if folder.is_dir() and not (folder / "config.json").is_file():
        raise ReportError(f"{name}: the folder has no config.json (write it with save_pretrained)")
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # what loading would warn about is refused here, in one line
    try:
        try:
            lm = models.load(name, dtype=torch_dtype, device=device, device_map=device_map)
        except models.ModelNotAvailable as err:
            if "Unrecognized configuration class" in str(err):
                raise ReportError(
                    f"{name} is not a causal language model (AutoModelForCausalLM does not know "
                    "its configuration); the report needs a decoder that predicts the next "
                    "token.") from err
            raise
        check_causal(lm)  # first: an encoder with a fresh LM head is named as such
        fresh = lm.info.get("newly_initialised") or []
        if fresh:
            raise ReportError(
                f"{name}: loading it as {type(lm.model).__name__} left {len(fresh)} weights newly "
                f"initialised ({', '.join(fresh[:3])}{', …' if len(fresh) > 3 else ''}): the "
                "checkpoint does not hold this causal LM whole, so its report would measure "
                "random weights.")
        check_hidden_states(lm)
    finally:
        hf_logging.set_verbosity(verbosity)
    return lm


@torch.no_grad()
def check_hidden_states(lm: models.LoadedModel) -> None:
    """P1's statistics read `hidden_states[l]` as the input of block l and `hidden_states[L]` as
    the last block's output (final-normed or raw): hook the blocks and check that the model's
    own `output_hidden_states` says the same. A state-space stack such as Mamba's lists each
    block's output instead (no embeddings first), which would shift every P1 number by one."""
    vocab = int(getattr(lm.model.config.get_text_config(), "vocab_size", 0) or 0)
    ids = (torch.arange(6) * 5 + 1).remainder(max(vocab, 2))[None].to(lm.device)
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []

    def pre(_module: Any, args: tuple, kwargs: dict) -> None:
        inputs.append(args[0] if args else kwargs["hidden_states"])

    def post(_module: Any, _args: Any, output: Any) -> None:
        outputs.append(output[0] if isinstance(output, tuple) else output)

    handles = [b.register_forward_pre_hook(pre, with_kwargs=True) for b in lm.blocks]
    handles += [b.register_forward_hook(post) for b in lm.blocks]
    try:
        hidden = lm.model(input_ids=ids, output_hidden_states=True, use_cache=False).hidden_states
    finally:
        for h in handles:
            h.remove()

    def same(a: torch.Tensor, b: torch.Tensor) -> bool:
        a, b = a.float().to(b.device), b.float()
        return a.shape == b.shape and torch.allclose(a, b, rtol=1e-4,
                                                     atol=1e-5 * (float(b.abs().max()) + 1e-6))

    L = lm.n_layers
    why = None
    if hidden is None or len(hidden) != L + 1 or len(inputs) != L or len(outputs) != L:
        why = (f"it gives {0 if hidden is None else len(hidden)} hidden states for {L} blocks "
               f"called {len(inputs)} times (expected {L + 1}: the embeddings, then each block)")
    else:
        bad = next((i for i in range(L) if not same(hidden[i], inputs[i])), None)
        last = outputs[-1]
        normed = lm.final_norm(last) if lm.final_norm is not None else last
        if bad is not None:
            why = f"hidden_states[{bad}] is not the input of block {bad}"
        elif not (same(hidden[L], last) or same(hidden[L], normed)):
            why = f"hidden_states[{L}] is neither the last block's output nor its final norm"
    if why:
        raise ReportError(
            f"{lm.name}: its hidden states do not line up with its blocks ({why}; a state-space "
            "or otherwise differently built stack?), so every per-block statistic would be "
            "misplaced; the report needs hidden_states[l] to be the input of block l.")


@torch.no_grad()
def check_causal(lm: models.LoadedModel) -> None:
    """Changing later tokens must leave every earlier position's logits as they were: an
    encoder loaded with an LM head (BERT answers AutoModelForCausalLM too) fails this."""
    config = lm.model.config.get_text_config()
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    if vocab < 3:
        raise ReportError(f"{lm.name}: the configuration has no usable vocab_size")
    # Change the second half of the tokens, compare the first half: one changed token can
    # move an encoder's earlier outputs by less than the tolerance (seen on a random tiny BERT).
    ids = (torch.arange(8) * 7 + 1).remainder(vocab)[None]
    changed = ids.clone()
    changed[0, 4:] = (changed[0, 4:] + vocab // 2) % vocab
    a = lm.model(input_ids=ids.to(lm.device), use_cache=False).logits[0, :4].float()
    b = lm.model(input_ids=changed.to(lm.device), use_cache=False).logits[0, :4].float()
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        raise ReportError(
            f"{lm.name}: the model's outputs hold NaN/inf values (an overflow in a low precision "
            "dtype, or broken weights). Rerun with --dtype float32, or check the model.")
    if not torch.allclose(a, b, rtol=1e-3, atol=1e-3 * (float(a.abs().max()) + 1e-6)):
        raise ReportError(
            f"{lm.name} is not a causal language model: its predictions at earlier positions "
            "change when a later token changes (an encoder with an LM head?). The report needs a "
            "decoder that predicts the next token from the past only.")


def _tensor_digest(h: Any, name: str, t: torch.Tensor) -> None:
    """Feed one tensor (name, dtype, shape and every byte) into the hash `h`; one tensor at a
    time on the CPU, so hashing a large model needs memory for its largest tensor only."""
    t = t.detach()
    h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
    flat = t.reshape(-1).contiguous().cpu()
    h.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")


def _checkpoint_files_digest(lm: models.LoadedModel) -> str:
    """sha256 over the checkpoint files the model was read from (names and contents, streamed):
    the fingerprint of a model whose weights are not all in memory and cannot be read back."""
    location = Path(str(getattr(lm.model.config, "_name_or_path", "") or lm.source))
    if not location.is_dir():
        try:
            from huggingface_hub import snapshot_download

            location = Path(snapshot_download(str(location), local_files_only=True))
        except Exception as err:  # noqa: BLE001 - any failure means: no files to hash
            raise ReportError(f"{lm.name}: some weights are offloaded and the checkpoint files "
                              f"they came from cannot be found to fingerprint them ({err})") from err
    h = hashlib.sha256()
    files = sorted(f for f in location.iterdir() if f.is_file() and f.suffix in
                   (".safetensors", ".bin", ".pt", ".json", ".model", ".txt", ".gguf"))
    for f in files:
        h.update(f.name.encode() + b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 24), b""):  # noqa: B023 - fh of this loop
                h.update(chunk)
    return "files:" + h.hexdigest()[:16]


def _tokenizer_text(tokenizer: Any) -> str:
    """The tokenizer as text: its full serialisation (vocabulary, merges, normaliser, added
    and special tokens) where it has one, else its vocabulary and special tokens."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    special = sorted((k, str(v)) for k, v in (getattr(tokenizer, "special_tokens_map", {}) or {}).items())
    body = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    return json.dumps([type(tokenizer).__name__, special, body])


def model_fingerprint(lm: models.LoadedModel) -> dict[str, str]:
    """sha256 (16 hex each) of every parameter and buffer (bytes, dtype and shape), of the
    configuration and of the tokenizer: a step's cached result is reused only for this exact
    model. Weights offloaded by a device map are read through the offload store; where that
    is impossible the checkpoint files are hashed instead."""
    h = hashlib.sha256()
    try:
        for kind, named in (("param", lm.model.named_parameters()), ("buffer", lm.model.named_buffers())):
            for name, t in named:
                value = offload.read(lm.model, name) if t.is_meta else t
                _tensor_digest(h, f"{kind}:{name}", value)
        weights = h.hexdigest()[:16]
    except offload.OffloadError:
        weights = _checkpoint_files_digest(lm)
    config = lm.model.config.to_dict()
    config.pop("_name_or_path", None)  # where it was read from is the key's `model`
    return {"weights": weights,
            "config": hashlib.sha256(results.dumps(config).encode()).hexdigest()[:16],
            "tokenizer": hashlib.sha256(_tokenizer_text(lm.tokenizer).encode()).hexdigest()[:16]}


def _key(lm: models.LoadedModel, fingerprint: dict[str, str], txt: text.ReportText,
         cfg: ReportSettings, dtype: str, *fields: str) -> dict[str, Any]:
    """What a step's result depends on: the model (name and `model_fingerprint`), the text,
    the dtype and the settings the step reads."""
    return {"model": lm.name, "layers": lm.n_layers, "params": lm.n_params,
            "fingerprint": fingerprint, "text": txt.sha, "dtype": dtype,
            **{f: getattr(cfg, f) for f in fields}}


def finite_or_null(obj: Any) -> Any:
    """`obj` with every NaN or ±inf replaced by None: report.json holds `null` for a number
    that is undefined for this model (strict JSON parsers reject bare NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_or_null(v) for v in obj]
    return obj


def strict_dumps(report: dict[str, Any]) -> str:
    """report.json's text: results.dumps' layout, and an error rather than a bare NaN."""
    return json.dumps(report, sort_keys=True, indent=1, allow_nan=False)


def check_out(out: Path) -> None:
    """Create `out` and check that it and its step cache can be written, the way the results
    are written (a temporary file beside the target)."""
    import tempfile

    if out.exists() and not out.is_dir():
        raise ReportError(f"--out {out} is a file, not a folder: name a folder for the report")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ReportError(f"--out {out}: the folder cannot be created ({err.strerror or err})") from err
    for folder in (out, out / "cache"):
        if not folder.exists():
            continue
        if not folder.is_dir():
            raise ReportError(f"--out {out}: {folder} is a file, not a folder")
        try:
            fd, probe = tempfile.mkstemp(dir=folder, prefix=".layerlab-write-test-")
        except OSError as err:
            raise ReportError(f"--out {out}: {folder} is not writable ({err.strerror or err})") from err
        os.close(fd)
        os.unlink(probe)


def build(model: str, out: str | Path, *, mode: str = "quick", text_path: str | None = None,
          dtype: str = "float32", device: str | None = None, device_map: str | None = None,
          settings: ReportSettings | None = None, progress: bool = True,
          label: str | None = None) -> dict[str, Any]:
    """Run every diagnostic on `model` and write `out/report.html` and `out/report.json`
    (`label`: the model's name on the page, e.g. for a local folder). Returns the report's data
    (what report.json holds)."""
    from layerlab.report import page

    started = time.perf_counter()
    cfg = requested = settings or settings_for(mode)
    out = Path(out)
    check_out(out)  # before loading anything: a step computed for nothing is the worst failure
    cache = results.Cache("cache", root=out)
    txt = text.load(text_path)

    def say(msg: str) -> None:
        if progress:
            print(f"[layerlab report] {msg}", flush=True)

    say(f"loading {model}")
    lm = load_model(model, dtype=dtype, device=device, device_map=device_map)
    if label:
        lm.name = label
    cfg = fitted(cfg, lm)
    if cfg.seq_len != requested.seq_len:
        say(f"windows of {cfg.seq_len} tokens (the model's max_position_embeddings)")
    ev_set = text.eval_set(lm.tokenizer, txt, cfg)
    blocks = text.windows(lm.tokenizer, txt, cfg, add_bos=lm.add_bos)
    twin = models.untrained_twin(lm, seed=cfg.seed)
    fingerprint = model_fingerprint(lm)  # once: every step's key holds it
    key = lambda *f: _key(lm, fingerprint, txt, cfg, dtype, *f)  # noqa: E731
    geo_fields = ("geometry_tokens", "seq_len", "batch_size", "profiles", "seed")

    say("P1: hidden-state geometry (model and untrained twin)")
    # "bulk": what the stored bulk fraction holds (since "windows": chapter 03's evidence for
    # P1-B1, `diagnostics.bulk_evidence`); a step stored without it is measured again
    geo = {name: cache.cached(f"report_geometry_{name}", {**key(*geo_fields), "bulk": "windows"},
                              lambda m=m: d.geometry_of(m, blocks, cfg, progress=progress))
           for name, m in (("trained", lm), ("untrained", twin))}
    control = d.geometry_intervals(geo["trained"], geo["untrained"], cfg.bootstrap)
    say("P1: last-block CE lens")
    lens_fields = ("seq_len", "lens_windows", "batch_size", "geometry_tokens")
    lens = {name: cache.cached(f"report_lens_{name}", key(*lens_fields),
                               lambda m=m: d.lens_of(m, blocks, cfg))
            for name, m in (("trained", lm), ("untrained", twin))}
    say("P2: weight statistics")
    weights = cache.cached("report_weights", key("ridge_alphas", "seed"),
                           lambda: d.weight_statistics(lm, twin, cfg))
    twin = None  # noqa: F841 - free the twin's memory before the long P2 evaluations

    say(f"P2: importance map ({ev_set.predicted_tokens} tokens, 2 × {lm.n_layers} edits)")
    ev_fields = ("eval_tokens", "eval_max_len", "min_eval_tokens", "batch_tokens")
    ev = Evaluator(lm, ev_set, batch_tokens=cfg.batch_tokens)
    base = Scores.from_dict(cache.cached("report_base", key(*ev_fields),
                                         lambda: ev.base().to_dict()))
    runs = d.importance_map(ev, d.importance_items(lm.n_layers), cache, key(*ev_fields), progress)
    table = d.importance_table(runs, base, lm.n_layers, cfg)
    layers = d.least_important(table, lm.n_layers, cfg.scale_layers)
    say(f"P2: ×α sweep on L{layers}")
    sweep = d.scaling_sweep(ev, base, layers, cfg, cache, key(*ev_fields, "alphas"), progress)
    say(f"P2: the other strategies on L{layers}, at full strength and at ×0.9's size")
    others = d.strategy_runs(ev, lm, base, layers, cfg, cache, key(*ev_fields), progress)

    # the P2 signatures' negative control: the same map and ×0.9 on the untrained twin (built
    # again from its seed: it was freed above so that the two models are not held at once for
    # longer than this step)
    say("P2: the untrained twin's importance map and ×0.9 (the control)")
    twin = models.untrained_twin(lm, seed=cfg.seed)
    twin_ev = Evaluator(twin, ev_set, batch_tokens=cfg.batch_tokens)
    twin_base = Scores.from_dict(cache.cached("report_base_untrained", key(*ev_fields),
                                              lambda: twin_ev.base().to_dict()))
    twin_runs = d.importance_map(twin_ev, d.importance_items(lm.n_layers), cache,
                                 key(*ev_fields), progress, experiment="report_importance_untrained")
    twin_table = d.importance_table(twin_runs, twin_base, lm.n_layers, cfg)
    twin_sweep = d.scaling_sweep(twin_ev, twin_base, layers, cfg.replace(
        alphas=(paper.P2_SCALE_ALPHA.value,)), cache, key(*ev_fields), progress,
        experiment="report_scaling_untrained")
    twin = twin_ev = None

    report = {
        "model": {**lm.summary(), "convention": models.last_hidden_convention(lm, blocks[:1])},
        "settings": requested.key(), "settings_used": cfg.key(), "text": {"source": txt.source, "sha256_12": txt.sha,
                                        "evaluation": ev_set.describe(),
                                        "windows": [int(x) for x in blocks.shape]},
        # `seconds`: this run's wall time (small when every step came from the cache);
        # `compute_seconds`: what the steps cost when they were computed (`untimed_steps`:
        # steps cached before the cache recorded it)
        "provenance": provenance.collect("report") | {
            "seconds": time.perf_counter() - started, "compute_seconds": round(cache.spent, 1),
            "untimed_steps": cache.untimed},
        "p1": {"per_layer": {k: g["per_layer"] for k, g in geo.items()},
               "intervals": control.to_dict("records"),
               "bulk": {k: g["bulk"] for k, g in geo.items()}, "lens": lens,
               "tokens": geo["trained"]["tokens"]},
        "p2": {"base_ppl": base.ppl, "importance": table.to_dict("records"),
               "scaled_layers": layers, "scaling": sweep.to_dict("records"),
               "strategies": others.to_dict("records"), "weights": weights,
               "untrained": {"base_ppl": twin_base.ppl,
                             "importance": twin_table.to_dict("records"),
                             "scaling": twin_sweep.to_dict("records")}},
    }
    report = finite_or_null(json.loads(results.dumps(report)))  # plain JSON types, NaN → None
    # the verdicts from the stored numbers, as `summarise` recomputes them from report.json later
    report = {**report, "summary": summarise(report)}
    results.atomic_write_text(out / "report.html", page.render(report))
    results.atomic_write_text(out / "report.json", strict_dumps(report))
    say(f"wrote {out / 'report.html'} and report.json in {time.perf_counter() - started:.0f} s")
    return report


def summarise(report: dict[str, Any]) -> list[dict[str, str]]:
    """The summary rows (`rules`) from a report's stored numbers alone: what `build` writes, and
    what a stored report is checked against when the rules change (no model needed)."""
    p1, p2 = report["p1"], report["p2"]
    n_layers = int(report["model"]["layers"])
    control = pd.DataFrame(p1["intervals"])
    twin = p2["untrained"]
    table, twin_table = pd.DataFrame(p2["importance"]), pd.DataFrame(twin["importance"])
    alphas = tuple(float(a) for a in report["settings_used"]["ridge_alphas"])
    return [rules.edges(control, n_layers), rules.weak_correlation(control),
            rules.no_early_stopping(p1["lens"]["trained"], p1["lens"]["untrained"]),
            rules.bulk_fraction(p1["bulk"]["trained"], p1["bulk"]["untrained"]),
            rules.critical_core(table, n_layers, twin_table),
            rules.anti_layers(table, n_layers, twin_table),
            rules.delta_correlation(p2["weights"]), rules.ridge(p2["weights"], alphas),
            rules.scaling(pd.DataFrame(p2["scaling"]), p2["scaled_layers"],
                          pd.DataFrame(twin["scaling"]), pd.DataFrame(p2.get("strategies", [])))]


def summary_frame(report: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(report["summary"])[["id", "finding", "paper", "this model", "verdict"]]
