"""Recompute stored results from today's code and compare them with the committed records.

The schema versions in `results.SCHEMAS` only help when someone remembers to bump them; this
does not depend on anyone remembering. Under the freshness gate (`make check-outputs`, which
sets `LAYERLAB_VERIFY`) every stored value a chapter reads through `Cache.cached` or
`Cache.for_each` may be recomputed by the function that would have computed it, and compared
with the stored value; a value that `Cache.put` is asked to store over a different one (claims,
which every chapter re-decides) is compared the same way:

- **derived** experiments (`DERIVED`: fits, summaries, tables, claims — computed from other
  records or the vendored data in about a second or less) are recomputed every time;
- every other experiment is **expensive** (a model evaluated or trained): with
  `LAYERLAB_VERIFY=sample` a seeded sample of its records (`LAYERLAB_VERIFY_SEED`, a fraction
  `LAYERLAB_VERIFY_RATE`) is recomputed while the shared time budget
  (`LAYERLAB_VERIFY_BUDGET` seconds, over all chapters) lasts; with `all` every record is.

A difference is a `Stale` error naming the record and the first differing numbers; each
recomputation is logged (`LAYERLAB_VERIFY_LOG`, JSON lines) so the gate can say how many
records it recomputed and what that took. Outside the gate nothing here runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

__all__ = ["DERIVED", "REL_TOL", "ABS_TOL", "DERIVED_REL_TOL", "MODEL_REL_TOL", "Stale", "active", "check",
           "difference", "summary"]

# The gate's tolerance: far below anything a page prints, above the last bits a float64 sum
# or product differs by between CPUs (SIMD width, BLAS kernels).
REL_TOL, ABS_TOL = 1e-9, 1e-12
# A recomputed record is compared more loosely than a page: an iterative fit stops at its own
# tolerance, and its result moves in the 7th digit when BLAS sums in another order (the
# committed Chinchilla fit, made with two BLAS threads, and the gate's one-thread rerun differ
# by 2e-7 relative in a covariance); far below any printed digit, far above what a code change
# that matters leaves (a doubled area, a changed formula).
DERIVED_REL_TOL = 1e-6
# Expensive records come from float32 model arithmetic, whose last bits depend on the CPU's
# kernels (oneDNN picks AVX2 or AVX-512 code) and are amplified by training steps. Measured on
# one committed record (E0, L04 neighbour-averaged, SmolLM2 stand-in): AVX2 against AVX-512 moves
# its perplexity by 9e-6 relative, but the float32 cross-entropy kernel moves it by 1.2e-4: the
# records computed before 6db28b4 used a transposed-view cross-entropy whose summed NLL is
# 0.025 nats (1.3e-4 a token) from float64 on that set, the flattened one 0.0016 nats. Both are
# float32 rounding, not a change in what is computed, so the class's tolerance sits above the
# larger one — far below a printed digit and far below what a code change that matters leaves.
MODEL_REL_TOL = 5e-4

# Experiments whose records are derived from other records or the vendored data and cost about
# a second or less: recomputed on every `make check-outputs`. Everything else is expensive.
DERIVED: frozenset[str] = frozenset({
    "claims",
})
# Experiments whose recomputation is not reproducible to the class's tolerance, with theirs:
# chapter 01's fits run float32 Adam for 50,000 steps (`depth/scaling/experiment.py`), whose covariance moves
# by 4e-6 relative between one and two BLAS threads.
TOLERANCE: dict[str, float] = {"depth_scaling": 1e-3}

ENV = "LAYERLAB_VERIFY"  # derived | sample | all
MODES = ("derived", "sample", "all")


class Stale(RuntimeError):
    """A committed record that today's code no longer computes."""


def active() -> str | None:
    mode = os.environ.get(ENV) or None
    if mode is not None and mode not in MODES:
        raise ValueError(f"{ENV}={mode!r}: use one of {MODES}")
    return mode


def difference(a: Any, b: Any, *, rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL,
               where: str = "value") -> str | None:
    """None when two JSON values are equal (numbers within the tolerance, NaN equal to NaN),
    else the first difference as 'value.rows[3].ppl: 122.75 stored, 245.5 now'."""
    if _number(a) and _number(b):
        if a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(
                a, b, rel_tol=rel_tol, abs_tol=abs_tol):
            return None
        return f"{where}: {a!r} stored, {b!r} now"
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            gone, new = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
            return f"{where}: fields {gone} stored only, {new} now only"
        for k in a:
            if (d := difference(a[k], b[k], rel_tol=rel_tol, abs_tol=abs_tol,
                                where=f"{where}.{k}")):
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} entries stored, {len(b)} now"
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := difference(x, y, rel_tol=rel_tol, abs_tol=abs_tol, where=f"{where}[{i}]")):
                return d
        return None
    same = a == b and type(a) is type(b)
    return None if same else f"{where}: {_short(a)} stored, {_short(b)} now"


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _short(x: Any) -> str:
    text = json.dumps(x, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


class _OverBudget(BaseException):
    """Raised by the alarm when an expensive recomputation outlives the budget."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def alarm(_signum, _frame):
        raise _OverBudget()

    before = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


_inside = threading.local()  # a recomputation's own reads are not recomputed again


def _log(entry: dict[str, Any]) -> None:
    path = os.environ.get("LAYERLAB_VERIFY_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")


def _logged() -> list[dict[str, Any]]:
    """What the gate has recomputed so far, in every chapter's process (the shared log)."""
    path = os.environ.get("LAYERLAB_VERIFY_LOG")
    return _entries(Path(path)) if path and Path(path).is_file() else []


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def draw(name: str) -> float:
    """A record's seeded place in the sample, uniform in [0, 1)."""
    seed = os.environ.get("LAYERLAB_VERIFY_SEED", "0")
    return int(hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()[:8], 16) / 16**8


def check(cache: Any, experiment: str, config: Mapping[str, Any], item: str | None,
          stored: Any, compute: Callable[[], Any], *, pick: bool = True) -> None:
    """Under the gate: recompute one stored value when its class and the sample say so, and
    raise `Stale` if today's code gives another.

    The sample of expensive records: the first record of each experiment the gate meets whose
    `pick` is true (`for_each` passes it for the item of lowest seeded draw, so which record
    stands for an experiment depends on the seed), plus any record whose draw is below
    `LAYERLAB_VERIFY_RATE`; each recomputation may take at most `LAYERLAB_VERIFY_CAP` seconds
    and all of them together `LAYERLAB_VERIFY_BUDGET` (a longer one is stopped and logged as
    such, never counted as verified)."""
    mode = active()
    if mode is None or getattr(_inside, "on", False):
        return
    path = cache.path(experiment, config, item)
    name = path.relative_to(cache.folder.parent).as_posix()
    kind = "derived" if experiment in DERIVED else "expensive"
    limit = 0.0
    entry = {"record": name, "experiment": experiment, "class": kind}
    if kind == "expensive" and mode != "all":
        if mode == "derived":
            return
        logged = _logged()  # read once: whether this experiment was tried, what was spent
        first = pick and not any(e.get("experiment") == experiment for e in logged)
        if not (first or draw(name) < float(os.environ.get("LAYERLAB_VERIFY_RATE", "0.02"))):
            return
        spent = sum(e["seconds"] for e in logged if e["class"] == "expensive")
        left = float(os.environ.get("LAYERLAB_VERIFY_BUDGET", "120")) - spent
        limit = min(float(os.environ.get("LAYERLAB_VERIFY_CAP", "30")), left)
        if limit <= 0:
            _log({**entry, "status": "skipped (budget spent)", "seconds": 0.0})
            return
    from layerlab import results

    _inside.on = True
    started = time.perf_counter()
    try:
        with _time_limit(limit):
            fresh = json.loads(results.dumps(compute()))
    except _OverBudget:
        _log({**entry, "status": "stopped (over its time)",
              "seconds": time.perf_counter() - started})
        return
    finally:
        _inside.on = False
    seconds = time.perf_counter() - started
    tol = TOLERANCE.get(experiment, DERIVED_REL_TOL if kind == "derived" else MODEL_REL_TOL)
    diff = difference(stored, fresh, rel_tol=tol)
    _log({**entry, "status": "same" if diff is None else "differs", "seconds": seconds})
    if diff is not None:
        raise Stale(f"{name}: recomputed from today's code it differs from the committed record "
                    f"({diff}). Re-run the chapter (`make execute`) and commit the new record, "
                    "or bump its schema in results.SCHEMAS if the change was intended.")


def summary(log: Path) -> dict[str, Any]:
    """What the gate recomputed: records and seconds per class and status."""
    out: dict[str, Any] = {}
    for e in (_entries(log) if log.is_file() else []):
        row = out.setdefault(e["class"], {"records": 0, "seconds": 0.0, "statuses": {}})
        row["statuses"][e["status"]] = row["statuses"].get(e["status"], 0) + 1
        if e["status"] in ("same", "differs"):
            row["records"] += 1
        row["seconds"] += e["seconds"]
    return out
