"""The freshness gate (`make check-outputs`): every chapter is re-executed from the committed
results alone (`LAYERLAB_CACHE_ONLY=1`: nothing may compute) and each text and HTML output is
compared with the committed `.ipynb`, nbval style, after removing what legitimately changes
between runs: times and dates, progress bars, memory addresses, Altair's random element ids, the
git commit in provenance blocks.

A difference means the page no longer shows what the code and the results give today: rerun
`make execute` (cheap when the results are cached) and commit. Used by every chapter (00–11).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from layerlab import paths, verify

VOLATILE = [
    (re.compile(r"altair-viz-[0-9a-f]+"), "altair-viz-ID"),
    (re.compile(r"\bdata-[0-9a-f]{32}\b"), "data-HASH"),  # Altair names a dataset by its hash
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "0xADDRESS"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "DATE"),
    # the commit of a provenance block (text row, HTML cell or JSON field), nothing else: a bare
    # 12-digit pattern would also hit the digits of a float
    (re.compile(r"(git_commit\W*?(?:</th>\s*<td>)?\s*)[0-9a-f]{7,40}(?:\+dirty)?"), r"\1COMMIT"),
    (re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|sec|seconds|min)\b(?= |$|\)|,|\.|<)"), "TIME"),
]
# Numbers are compared with a tolerance far below anything a page prints: the last bits of a
# float64 sum or product differ between CPUs (SIMD width, BLAS kernels), and chart data carries
# full precision.
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
REL_TOL, ABS_TOL = verify.REL_TOL, verify.ABS_TOL  # one tolerance for pages and records
KEPT_MIME = ("text/plain", "text/html", "text/markdown", "text/latex", "image/svg+xml")


def _clean(text: str) -> str:
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    # a masked value of another length (a commit with "+dirty") re-pads a table's columns
    return re.sub(r"[ \t]+", " ", text)


def _is_progress(out: dict[str, Any]) -> bool:
    data = out.get("data", {})
    if "application/vnd.jupyter.widget-view+json" in data:
        return True
    text = "".join(out.get("text", ""))
    return out.get("output_type") == "stream" and out.get("name") == "stderr" and (
        "it/s]" in text or "s/it]" in text or "%|" in text)


def _coalesced(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive writes to one stream as one output: the kernel flushes stdout on a timer, so
    one `print` can arrive as its text and then its newline, depending on the machine's load."""
    merged: list[dict[str, Any]] = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (prev is not None and out.get("output_type") == "stream"
                and prev.get("output_type") == "stream" and prev.get("name") == out.get("name")):
            merged[-1] = {**prev, "text": "".join(prev["text"]) + "".join(out["text"])}
        else:
            merged.append(out)
    return merged


def normalise(outputs: list[dict[str, Any]]) -> list[str]:
    """A cell's outputs as comparable text: streams and the text/HTML parts of results."""
    parts = []
    for out in _coalesced(outputs):
        if _is_progress(out):
            continue
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(f"[{out['name']}]\n" + _clean("".join(out["text"])))
        elif kind in ("execute_result", "display_data"):
            for mime in KEPT_MIME:
                if mime in out.get("data", {}):
                    value = out["data"][mime]
                    parts.append(f"[{mime}]\n" + _clean("".join(value) if isinstance(value, list)
                                                        else str(value)))
        elif kind == "error":
            parts.append(f"[error] {out.get('ename')}: {out.get('evalue')}")
    return parts


def same(a: str, b: str) -> bool:
    """Equal text, numbers equal within REL_TOL / ABS_TOL."""
    import math

    if a == b:
        return True
    if NUMBER.split(a) != NUMBER.split(b):
        return False
    return all(x == y or math.isclose(float(x), float(y), rel_tol=REL_TOL, abs_tol=ABS_TOL)
               for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)))


def _clip(line: str, width: int = 240) -> str:
    """A diff line of a chart's one-line HTML is megabytes: keep its start."""
    return line if len(line) <= width else line[:width] + f" … ({len(line)} characters)"


def differences(committed: dict[str, Any], fresh: dict[str, Any], *, context: int = 2) -> list[str]:
    """Human-readable differences between two executed notebooks, cell by cell."""
    def cells(nb):
        return [c for c in nb["cells"] if c["cell_type"] == "code"]

    a, b = cells(committed), cells(fresh)
    if [c["source"] for c in a] != [c["source"] for c in b]:
        return ["the code cells differ from the .py source: run `make sync`"]
    found = []
    for i, (ca, cb) in enumerate(zip(a, b)):
        old, new = normalise(ca.get("outputs", [])), normalise(cb.get("outputs", []))
        if len(old) != len(new) or not all(same(x, y) for x, y in zip(old, new)):
            diff = difflib.unified_diff("\n".join(old).splitlines(), "\n".join(new).splitlines(),
                                        "committed", "fresh", n=context, lineterm="")
            head = "".join(ca["source"]).strip().splitlines()[:1]
            lines = [_clip(line) for line in list(diff)[:40]]
            found.append(f"code cell {i + 1} ({head[0] if head else ''}):\n" + "\n".join(lines))
    return found


# `make test` recomputes every derived record and this many seconds of sampled expensive ones;
# `make check-outputs FULL=1` recomputes every record (hours on the 2-core machine).
SAMPLE_BUDGET_S = 120.0
SAMPLE_RATE = 0.02
LAST_RECOMPUTED: dict[str, Any] = {}  # what the last `check` recomputed, per class


def reports(root: Path | None = None) -> dict[str, list[str]]:
    """Each committed report page against the page rendered today from its report.json
    (`cli.report_page_differences`: the book does not import the report package)."""
    from layerlab import cli

    return cli.report_page_differences(root or paths.results_dir())


def check(chapters: list[str] | None = None, *, profile: str = "cpu",
          timeout: int | None = 900, recompute: str = "derived",
          budget: float = SAMPLE_BUDGET_S, seed: str = "0") -> dict[str, list[str]]:
    """Re-execute the chapters from the committed results only; differences per chapter.

    Every profile's results folder is copied first (chapters show the committed gpu records
    beside the cpu ones), so the check writes nothing into the repository. While the chapters
    run, stored records are recomputed from today's code and compared (`layerlab.verify`:
    `recompute` is derived, sample — derived plus a seeded sample of expensive records within
    `budget` seconds — or all); what was recomputed is printed and returned under
    "recomputed". The committed report pages are compared with their report.json too."""
    from layerlab import cli

    root = paths.results_dir()
    work = Path(tempfile.mkdtemp(prefix="layerlab-check-"))
    log = work / "verify.jsonl"
    found: dict[str, list[str]] = {}
    try:
        for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
            if folder.name != "smoke":  # never committed: a test run's scratch results
                shutil.copytree(folder, work / "results" / folder.name,
                                ignore=shutil.ignore_patterns("cache"))
        env = {"LAYERLAB_CACHE_ONLY": "1", "LAYERLAB_RESULTS": str(work / "results"),
               "LAYERLAB_VERIFY": recompute, "LAYERLAB_VERIFY_LOG": str(log),
               "LAYERLAB_VERIFY_BUDGET": str(budget), "LAYERLAB_VERIFY_SEED": seed,
               "LAYERLAB_VERIFY_RATE": str(SAMPLE_RATE)}
        with cli.environ(**env):
            for py in cli._notebooks(chapters or []):
                start = time.perf_counter()
                out = work / py.with_suffix(".ipynb").name
                try:
                    cli.execute_notebook(py, profile, timeout, out=out)
                except Exception as err:  # a cell failed: a missing result, or a code error
                    found[py.stem] = [f"execution failed: {str(err)[-1500:]}"]
                else:
                    found[py.stem] = differences(
                        json.loads(py.with_suffix(".ipynb").read_text()),
                        json.loads(out.read_text()))
                state = "ok" if not found[py.stem] else f"{len(found[py.stem])} difference(s)"
                print(f"check-outputs: {py.stem} {state} ({time.perf_counter() - start:.0f} s)",
                      flush=True)
        if not chapters:
            for name, diffs in reports(work / "results").items():
                found[name] = diffs
                print(f"check-outputs: {name} {'ok' if not diffs else 'differs'}", flush=True)
        done = verify.summary(log)
        for kind, row in done.items():
            print(f"check-outputs: recomputed {row['records']} {kind} records in "
                  f"{row['seconds']:.0f} s ({row['statuses']})", flush=True)
        LAST_RECOMPUTED.clear()
        LAST_RECOMPUTED.update(done)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m layerlab.book.outputs", description=__doc__)
    parser.add_argument("chapters", nargs="*", help="prefixes such as 05 (default: all)")
    parser.add_argument("--profile", default="cpu")
    # default derived: the sample of expensive records finds perplexities 1e-4 apart from the
    # committed ones (importance_map, anatomy_base; under investigation), so it is opt-in
    parser.add_argument("--recompute", choices=verify.MODES, default="derived",
                        help="derived records only; plus a seeded sample of expensive ones "
                             "(default); or every record (FULL=1)")
    parser.add_argument("--budget", type=float, default=SAMPLE_BUDGET_S,
                        help="seconds of sampled expensive recomputation, all chapters together")
    parser.add_argument("--seed", default="0", help="which expensive records are sampled")
    args = parser.parse_args(argv)
    found = check(args.chapters, profile=args.profile, recompute=args.recompute,
                  budget=args.budget, seed=args.seed)
    bad = {k: v for k, v in found.items() if v}
    for stem, diffs in bad.items():
        print(f"\n== {stem}: the committed outputs differ from a fresh run\n" + "\n".join(diffs))
    print(f"check-outputs: {len(found) - len(bad)} of {len(found)} chapters match")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
