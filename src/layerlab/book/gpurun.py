"""`make gpu-run`: the `gpu` settings' experiments that need no model hub, run on an offline GPU
machine inside a time budget, packed for the trip back.

    python -m layerlab.book.gpurun --budget 540 --out "$OUT"      # on the GPU machine
    layerlab results import /path/to/gpu-results.tar.gz       # here: records into results/gpu/
                                                              # (layerlab.results.import_archive)

Parts, in this order (`--parts` picks some):

- `toy`    chapter 04's grid -- every gpu sweep (exp-9/9-1 KL grid, MSE and RK2 runs) trained as
           batched groups (`layerlab.depth.toy.grid`), each group resumable from its checkpoint;
- `family` chapter 02's depth family (the gpu `FamilySettings`), member by member, then each
           member's hidden-state statistics, trained and untrained;
- `growth` chapter 10's arms with the paper's 12-layer model and SmolLM2's tokenizer (the
           tokenizer travels as a folder, `--tokenizer` / `LAYERLAB_TOKENIZER_SMOLLM2`; the GGUF
           it comes from does not), then the paper-regime search.

Every part runs in a child process that sees the deadline (`LAYERLAB_DEADLINE`, epoch seconds)
and stores each finished result as its own record at once (atomic writes), so stopping at the
deadline loses at most the unit in flight; a child still running at the deadline is ended, and
a later run resumes from the records (which travel with the working tree once committed) and,
on the same machine, from the checkpoints. Before the budget runs out the run packs the records
it wrote into at most three files under `--out`: `gpu-results.tar.gz`, `gpu-run.json` (parts,
status, timings, device) and `gpu-run.log`.

`--dry` runs the same program on a CPU with every size shrunk (`Profile.shrunk`), into a
temporary results folder: `make gpu-run DRY=1`, and `tests/book/test_gpurun.py`. It orchestrates
chapters 02 (depth family), 04 (toy grid) and 10 (growth), so it sits on the top floor.

Needs only what the GPU machine has (torch, transformers, tokenizers, safetensors, pandas,
numpy, tqdm) plus this source tree on `PYTHONPATH`; nothing here imports altair or the notebooks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

PARTS = ("toy", "family", "growth")
DEADLINE_ENV = "LAYERLAB_DEADLINE"
PACK_SECONDS = 20  # kept free at the end of the budget to pack the results
TOY_GROUP = 16  # sweeps per batched toy group on the GPU
ARCHIVE = "gpu-results.tar.gz"


def deadline() -> float | None:
    """The wall-clock deadline (epoch seconds) this process was given, if any."""
    value = os.environ.get(DEADLINE_ENV)
    return float(value) if value else None


def past_deadline() -> bool:
    d = deadline()
    return d is not None and time.time() > d


def _profile(dry: bool):
    from layerlab import profiles

    gpu = profiles.PROFILES["gpu"]
    return gpu.shrunk() if dry else gpu


# --- the parts (each runs in its own child process) -------------------------------------------
def part_toy(profile) -> dict[str, Any]:
    from layerlab import results
    from layerlab.depth import toy

    cache = results.Cache(profile.name)
    configs = toy.sweep_configs(profile)
    stop = deadline()
    # parts of 16 sweeps (the paper's 16 temperatures of one teacher and seed): each finishes,
    # and is stored, within a lease; a part in flight is lost with the machine
    done = toy.run_grid(profile.name, configs, cache, deadline=_monotonic(stop), progress=True,
                        max_group=TOY_GROUP)
    return {"sweeps": len(configs), "finished": done}


def part_family(profile) -> dict[str, Any]:
    """Train every member, then measure each one trained and untrained (chapter 02's
    per-sequence statistics on the family's own test text): the weights stay on the GPU
    machine, the statistics travel."""
    from layerlab import results
    from layerlab.depth import family, geometry

    cfg = family.config_for(profile)
    cache = results.Cache(profile.name)
    out = family.train_family(cfg, profile.name, cache, progress=True)
    members = geometry.family_control_names(profile)
    geometry.controls(profile, cache, only=members, progress=True)
    return {"members": len(out), "measured": len(members), "finished": True}


def part_growth(profile) -> dict[str, Any]:
    from layerlab.anatomy import growth

    runs = growth.run(profile, progress=True)
    tuned = growth.tuned(profile, progress=True)
    return {"runs": len(runs), "tuned_runs": len(tuned.runs), "finished": True}


PART_FUNCTIONS = {"toy": part_toy, "family": part_family, "growth": part_growth}


def _monotonic(epoch: float | None) -> float | None:
    """An epoch-seconds deadline on this process's monotonic clock."""
    return None if epoch is None else time.monotonic() + (epoch - time.time())


def _child(part: str, dry: bool) -> int:
    """Run one part (in the child process); its summary goes to stdout as the last line."""
    import torch

    torch.manual_seed(0)
    out = PART_FUNCTIONS[part](_profile(dry))
    print(json.dumps({"part": part, **out}), flush=True)
    return 0


# --- the parent: budget, children, packing ------------------------------------------------------
def _records(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime for p in root.rglob("*.json")}


def pack(root: Path, before: dict[str, float], out: Path) -> list[str]:
    """Every record under `root` that is new or rewritten since `before`, into one archive."""
    now = _records(root)
    changed = sorted(k for k, m in now.items() if before.get(k) != m)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / ARCHIVE, "w:gz") as tar:
        for rel in changed:
            tar.add(root / rel, arcname=rel)
    return changed


def device_facts() -> dict[str, Any]:
    import platform

    import torch

    facts = {"torch": torch.__version__, "cuda": torch.version.cuda,
             "python": platform.python_version(), "gpu": None}
    if torch.cuda.is_available():
        facts["gpu"] = torch.cuda.get_device_name(0)
        facts["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    return facts


def run(parts: list[str], budget: float, out: Path, *, dry: bool = False,
        tokenizer: str | None = None) -> dict[str, Any]:
    """Run `parts` one after another inside `budget` seconds; pack what finished into `out`."""
    start = time.time()
    stop = start + budget - PACK_SECONDS
    env = dict(os.environ)
    scratch = None
    if dry:  # never the committed results: a throw-away results folder and cache
        scratch = Path(tempfile.mkdtemp(prefix="layerlab-gpurun-"))
        env.setdefault("LAYERLAB_RESULTS", str(scratch / "results"))
        env.setdefault("LAYERLAB_CACHE", str(scratch / "cache"))
        env["LAYERLAB_DRY"] = "1"
    if tokenizer:
        env["LAYERLAB_TOKENIZER_SMOLLM2"] = str(Path(tokenizer).resolve())
    env[DEADLINE_ENV] = str(stop)
    env["LAYERLAB_PROFILE"] = "gpu"
    root = Path(env.get("LAYERLAB_RESULTS") or Path(__file__).resolve().parents[2] / "results") / "gpu"
    root.mkdir(parents=True, exist_ok=True)
    before = _records(root)
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "gpu-run.log").open("w")
    summary: dict[str, Any] = {"budget_s": budget, "dry": dry, "device": device_facts(),
                               "parts": []}
    for part in parts:
        left = stop - time.time()
        if left <= 0:
            summary["parts"].append({"part": part, "status": "not started (budget spent)"})
            continue
        t0 = time.time()
        cmd = [sys.executable, "-m", "layerlab.book.gpurun", "--child", part] + (["--dry"] if dry else [])
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            stdout, _ = proc.communicate(timeout=left + 10)  # the child watches the deadline too
            status = "finished" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, _ = proc.communicate()
            status = "stopped at the deadline"
        log.write(stdout)
        log.flush()
        last = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        info = last[-1] if last else {}
        if status == "finished" and info.get("finished") is False:
            status = "stopped at the deadline"
        summary["parts"].append({"part": part, "status": status, "seconds": round(time.time() - t0, 1),
                                 **{k: v for k, v in info.items() if k != "part"}})
    changed = pack(root, before, out)
    summary["records"] = len(changed)
    summary["seconds"] = round(time.time() - start, 1)
    (out / "gpu-run.json").write_text(json.dumps(summary, indent=2))
    log.close()
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m layerlab.book.gpurun", description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=540, help="seconds in all, packing included")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-out")))
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {PARTS}")
    ap.add_argument("--dry", action="store_true", help="CPU, every size shrunk, scratch results")
    ap.add_argument("--tokenizer", help="folder with SmolLM2's tokenizer files (growth)")
    ap.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(args.child, args.dry)
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        ap.error(f"unknown parts {sorted(unknown)}; choose from {PARTS}")
    summary = run(parts, args.budget, args.out, dry=args.dry, tokenizer=args.tokenizer)
    print(json.dumps(summary, indent=2))
    return 0 if all(p["status"] != "failed" and not p["status"].startswith("failed")
                    for p in summary["parts"]) else 1


if __name__ == "__main__":
    sys.exit(main())
