"""`make gpu-dry`: every chapter executed top to bottom with `LAYERLAB_PROFILE=gpu` on a CPU,
through the gpu code paths, with every size shrunk by one switch (`LAYERLAB_DRY=1`,
`Profile.shrunk`).

Nothing reaches a hub: each hub id the gpu profile names is served by a tiny random model of the
same architecture, saved under that id in a temporary Hugging Face cache (offline mode on), and
FineWeb by a small local parquet file in FineWeb's columns, read through `datasets` streaming.
Results go to a temporary folder; the committed notebooks and results are never touched.

Used by `make gpu-dry` and `tests/book/test_gpu_dry.py` (every chapter, 00–11).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from layerlab import cli, profiles

# hub organisation / name prefix -> the tiny architecture that stands in for it
ARCHITECTURES = {
    "EleutherAI/pythia": "gptneox",
    "Qwen/Qwen2": "qwen2",
    "facebook/opt": "opt",
    "HuggingFaceTB/SmolLM2": "llama",
    "meta-llama/": "llama",
    "google/gemma-3": "gemma3",
}
FAKE_REVISION = "0" * 40


def architecture_for(hub_id: str) -> str:
    for prefix, arch in ARCHITECTURES.items():
        if hub_id.startswith(prefix):
            return arch
    raise ValueError(f"no tiny stand-in for {hub_id!r}; add its prefix to ARCHITECTURES")


def hub_ids(profile: profiles.Profile) -> list[str]:
    """Every hub id a chapter of the profile loads."""
    names = [*profile.models, *(profile.geometry.models or ()), profile.anatomy.model]
    return sorted({n for n in names if "/" in n and not Path(n).exists()})


def save_stand_in(hub_id: str, hf_home: Path, *, layers: int) -> Path:
    """A tiny random model of the id's architecture, in the hub cache layout under that id."""
    from transformers.utils import logging as hf_logging

    from layerlab import models

    hf_logging.disable_progress_bar()
    lm = models.load_tiny(f"tiny-{architecture_for(hub_id)}", layers=layers)
    repo = hf_home / "hub" / f"models--{hub_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / FAKE_REVISION
    lm.model.save_pretrained(snapshot)
    lm.tokenizer.save_pretrained(snapshot)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(FAKE_REVISION)
    return snapshot


def write_fineweb(path: Path, n_docs: int = 64) -> Path:
    """A small parquet file with FineWeb's columns, its texts from the vendored Wikipedia test
    split (consecutive lines joined into documents of about 2,000 characters)."""
    import pandas as pd

    from layerlab import corpus

    paras, doc = [], ""
    for line in corpus.load_text("wikipedia", "test").splitlines():
        doc += line.strip() + "\n"
        if len(doc) >= 2000:
            paras.append(doc.strip())
            doc = ""
        if len(paras) == n_docs:
            break
    if len(paras) < n_docs:
        raise RuntimeError("the vendored Wikipedia test split is too short for the FineWeb stand-in")
    pd.DataFrame({
        "text": paras, "id": [f"<urn:uuid:dry-{i}>" for i in range(len(paras))],
        "dump": "CC-MAIN-dry", "url": [f"https://example.org/{i}" for i in range(len(paras))],
        "date": "2024-01-01T00:00:00Z", "file_path": "dry.warc.gz", "language": "en",
        "language_score": 0.95, "token_count": [len(p) // 4 for p in paras],
    }).to_parquet(path, index=False)
    return path


@contextmanager
def environment(workdir: Path) -> Iterator[dict[str, str]]:
    """Stand-ins written under `workdir` and the environment that points everything at them."""
    profile = profiles.PROFILES["gpu"].shrunk()
    hf_home = workdir / "hf"
    for hub_id in hub_ids(profile):
        layers = profile.anatomy.n_layers if hub_id == profile.anatomy.model else 4
        save_stand_in(hub_id, hf_home, layers=layers)
    env = {
        "LAYERLAB_PROFILE": "gpu", "LAYERLAB_DRY": "1",
        "LAYERLAB_RESULTS": str(workdir / "results"),
        "LAYERLAB_FINEWEB_FILES": str(write_fineweb(workdir / "fineweb.parquet")),
        "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_CACHE": str(workdir / "datasets"),
    }
    with cli.environ(**env):
        yield env


def run(chapters: list[str] | None = None, *, workdir: Path | None = None,
        timeout: int | None = 600) -> dict[str, float]:
    """Execute the chapters (default: all) under the dry gpu profile; seconds per chapter.
    Raises with the chapter's name on the first cell that fails."""
    import shutil

    own = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="layerlab-gpu-dry-")) if own else workdir
    times: dict[str, float] = {}
    try:
        with environment(workdir):
            for py in cli._notebooks(chapters or []):
                copy = workdir / "notebooks" / py.name
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(py, copy)
                start = time.perf_counter()
                print(f"gpu-dry: {py.stem} ...", flush=True)
                try:
                    cli.execute_notebook(copy, "gpu", timeout, cwd=py.parent)
                except Exception as err:
                    raise RuntimeError(f"gpu dry run: {py.stem} failed: {err}") from err
                times[py.stem] = time.perf_counter() - start
                print(f"gpu-dry: {py.stem} ok in {times[py.stem]:.0f} s", flush=True)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m layerlab.book.dryrun", description=__doc__)
    parser.add_argument("chapters", nargs="*", help="prefixes such as 04 (default: all)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    times = run(args.chapters, timeout=args.timeout)
    print(f"gpu-dry: {len(times)} chapters in {sum(times.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
