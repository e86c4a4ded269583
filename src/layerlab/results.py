"""The results cache: every expensive result is a small JSON file keyed by experiment name and
a hash of its configuration, written atomically with its provenance.

- The key is the configuration plus the experiment's schema version (`SCHEMAS`, bumped when its
  code changes what it computes) and content hashes of the data files it reads (E0 sentences,
  corpora, Chinchilla CSV): edit a sentence, a corpus or the code and the old numbers are no
  longer found.
- Same key: the stored value is returned (`None` included), nothing recomputed.
- Changed key: a new file, so stale results are never mixed with new ones; `layerlab cache
  status` lists the records the current code no longer reads.
- `for_each` stores each item (e.g. each model) as soon as it finishes, so an interrupted run
  (Ctrl-C, Colab disconnect) resumes at the first item without a result.

Files live in `results/<profile>/<experiment>/`; the `cpu` and `gpu` ones are committed.

Used by every chapter (00–11).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import os
import re
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from layerlab import paths, provenance, verify

# experiment -> (schema version, data the experiment reads). Bump a version when the code of
# that experiment changes what it stores; the old records then stop matching.
SCHEMAS: dict[str, tuple[int, tuple[str, ...]]] = {
    "models_and_data": (1, ("corpora",)),
    "depth_scaling": (1, ("chinchilla",)),
    "hidden_geometry": (1, ("corpora",)),
    "geometry_sequences": (1, ("corpora",)),
    "geometry_sequences_paper_last": (1, ("corpora",)),  # P1-A1's last angle after the final norm
    "bulk_by_context": (1, ("corpora",)),
    "ce_lens": (1, ("corpora",)),
    "causal_tracing": (1, ()),
    "depth_family": (2, ("corpora",)),  # 2: members per seed
    "toy_students": (2, ()),  # 2: one record per student
    "toy_signatures": (1, ()),
    "anatomy_base": (1, ("e0", "corpora")),
    "anatomy_sets": (1, ("e0", "corpora")),
    "importance_map": (1, ("e0", "corpora")),
    "layer_similarity": (1, ("corpora",)),
    "manipulation": (1, ("e0", "corpora")),
    "generations": (1, ()),
    "paradox": (1, ("e0", "corpora")),
    "ridge_predictability": (1, ()),
    "descriptor_predictability": (1, ()),
    "delta_correlation": (1, ()),
    "recovery": (1, ("e0", "corpora")),
    "stand_in_precision": (1, ("e0", "corpora")),
    "stand_in_precision_error": (1, ()),
    "stand_in_precision_map": (1, ("e0", "corpora")),
    "growth": (1, ("corpora",)),
    "growth_tuning": (1, ("corpora",)),
    "growth_timing": (1, ("corpora",)),  # chapter 10's verdict runs trained again, for CPU-seconds
    "manipulation_matched": (1, ("e0", "corpora")),
    "descriptor_nulls": (1, ()),
    "prediction_vs_mean": (1, ()),
    "paradox_outputs": (1, ("e0",)),
    "delta_invariant": (1, ()),
    "claims": (1, ()),
}
# input group -> files under data/ (globs)
INPUTS: dict[str, tuple[str, ...]] = {
    "e0": ("eval/e0_sentences.txt",),
    "corpora": ("corpora/*.txt.xz",),
    "chinchilla": ("get_fitting_data_chinchilla.csv",),
}
# The profiles whose results are committed: records there must name the commit that made them.
COMMITTED = ("cpu", "gpu")
MISSING = object()  # what `lookup` returns for an absent record (a stored None is a value)


class CacheError(RuntimeError):
    """A record that exists but cannot be read."""



def _corrupt(path: Path, why: str) -> CacheError:
    return CacheError(
        f"the result record {path} is corrupt ({why}). Delete it to recompute that result, or "
        f"restore the committed copy with `git checkout -- {path}`.")


def value_digest(value: Any) -> str:
    """sha256 (16 hex) of a value's canonical JSON: stored with every record, so an edited,
    truncated or retyped value is found on read instead of reaching chapter code."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=_to_jsonable)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


_FIELDS: dict[str, tuple[type, ...]] = {"experiment": (str,), "item": (str, type(None)),
                                        "config": (dict,), "config_hash": (str,),
                                        "provenance": (dict,), "value_sha256": (str,)}


def record_problem(record: Any, path: Path | None = None) -> str | None:
    """Why a record cannot be trusted (None when it can): its shape, its digest, and, given the
    `path` it was read from (relative to a profile folder or absolute), that the path is the
    one its own experiment, item and configuration hash give."""
    if not isinstance(record, dict):
        return f"a record is a JSON object, not {type(record).__name__}"
    for name, types in _FIELDS.items():
        if name not in record:
            return f"no {name!r} field"
        if not isinstance(record[name], types):
            return f"{name!r} is {type(record[name]).__name__}, not {types[0].__name__}"
    if "value" not in record:
        return "no 'value' field"
    if config_hash(record["config"]) != record["config_hash"]:
        return "its configuration does not hash to its config_hash"
    if value_digest(record["value"]) != record["value_sha256"]:
        return "its value does not match its digest (edited or damaged)"
    if path is not None:
        item, h = record["item"], record["config_hash"]
        stem = h if item is None else f"{slug(item)}-{h}"
        if path.parent.name != slug(record["experiment"]) or path.name != f"{stem}.json":
            return (f"it holds experiment {record['experiment']!r}, item {item!r}, key {h}, "
                    f"which belong in {slug(record['experiment'])}/{stem}.json")
    return None


_input_hashes: dict[tuple, str] = {}


def input_hash(group: str) -> str:
    """sha256 (12 hex) over the files of one input group. Memoised on the files' names, sizes
    and modification times, so an edit made while a kernel runs is still seen."""
    root = paths.data_dir()
    files = sorted(f for pattern in INPUTS[group] for f in root.glob(pattern))
    if not files:
        raise FileNotFoundError(f"input group {group!r} matches no file under {root}")
    memo = (group, *((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))
    if memo not in _input_hashes:
        h = hashlib.sha256()
        for f in files:
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(f.read_bytes()).digest())
        _input_hashes[memo] = h.hexdigest()[:12]
    return _input_hashes[memo]


def full_key(experiment: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration as stored: plus the schema version and the input hashes."""
    version, groups = SCHEMAS.get(experiment, (1, ()))
    return {**config, "_schema": version, "_inputs": {g: input_hash(g) for g in groups}}


def _to_jsonable(obj: Any) -> Any:
    if hasattr(obj, "tolist"):  # numpy arrays and scalars, torch tensors
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in the results cache")


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, indent=1, default=_to_jsonable)


def config_hash(config: Mapping[str, Any]) -> str:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=_to_jsonable)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder, then rename over `path`: a reader (or
    a crash) sees either the old file or the complete new one, never a torn write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are shared files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_torch(obj: Any, path: Path) -> None:
    """`torch.save` to `path` atomically (checkpoints survive an interruption mid-write)."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def slug(name: str) -> str:
    """A file-name-safe form of an item name such as a hub id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "__", name).strip("_") or "item"


@dataclass
class Cache:
    """Results of one profile. `root` defaults to `results/` (or `$LAYERLAB_RESULTS`).

    A result computed through `cached` or `for_each` records how long its computation took
    (`provenance.compute_seconds`); `spent` sums that over every record this instance read or
    wrote (`untimed` counts the records that predate the timing), so a rerun served from the
    cache can still say what its results cost."""

    profile: str
    root: Path | None = None
    spent: float = field(default=0.0, compare=False, repr=False)
    untimed: int = field(default=0, compare=False, repr=False)

    def _tally(self, record: Mapping[str, Any]) -> None:
        seconds = record.get("provenance", {}).get("compute_seconds")
        if seconds is None:
            self.untimed += 1
        else:
            self.spent += float(seconds)

    @property
    def folder(self) -> Path:
        return (self.root or paths.results_dir()) / self.profile

    def path(self, experiment: str, config: Mapping[str, Any], item: str | None = None) -> Path:
        h = config_hash(full_key(experiment, config))
        stem = h if item is None else f"{slug(item)}-{h}"
        return self.folder / slug(experiment) / f"{stem}.json"

    def read_record(self, path: Path) -> dict[str, Any]:
        """A stored record, checked: whole JSON, every field of the right type, its value equal
        to its digest, and its own experiment, item and configuration hash those of the file
        name it was read from (a record copied over another's file is not served). Anything
        else is a `CacheError` naming the file."""
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as err:
            raise _corrupt(path, f"{type(err).__name__}: {err}") from err
        problem = record_problem(record, path)
        if problem:
            raise _corrupt(path, problem)
        return record

    def lookup(self, experiment: str, config: Mapping[str, Any], item: str | None = None) -> Any:
        """The stored value (which may be None), or `MISSING`."""
        path = self.path(experiment, config, item)
        if not path.is_file():
            return MISSING
        record = self.read_record(path)
        self._tally(record)
        return record["value"]

    def get(self, experiment: str, config: Mapping[str, Any], item: str | None = None) -> Any:
        """The stored value, or None when absent (use `lookup` to tell a stored None apart)."""
        value = self.lookup(experiment, config, item)
        return None if value is MISSING else value

    def put(self, experiment: str, config: Mapping[str, Any], value: Any,
            item: str | None = None, *, seconds: float | None = None) -> Any:
        """Store `value` (atomically, with provenance; `seconds`: what computing it took).

        A value equal (within `verify.REL_TOL`) to the one already stored keeps the stored
        record, provenance included: re-running a chapter that changes nothing churns no file.
        Under `verify` (the freshness gate) a different value is an error naming the record."""
        if os.environ.get("LAYERLAB_DRY") == "1" and self._in_repository():
            raise CacheError("the dry run (LAYERLAB_DRY=1) must not write into the committed "
                             "results/: set LAYERLAB_RESULTS to a temporary folder")
        key = full_key(experiment, config)
        path = self.path(experiment, config, item)
        plain = json.loads(dumps(value))  # serialise first: a bad value writes nothing
        if path.is_file():
            old = self.read_record(path)
            diff = verify.difference(old["value"], plain, rel_tol=verify.REL_TOL)
            if diff is None:
                return old["value"]
            if verify.active():  # the gate writes nothing: a different value is stale
                diff = verify.difference(old["value"], plain, rel_tol=verify.DERIVED_REL_TOL)
                if diff is None:
                    return old["value"]
                raise verify.Stale(f"{path}: today's code computes another value than the "
                                   f"committed record ({diff})")
        prov = provenance.collect(self.profile)
        if prov["git_commit"] == "unknown" and self.profile in COMMITTED and self._in_repository():
            raise CacheError(
                f"refusing to write results/{self.profile}: no git commit can be read (a tree "
                "without .git, or git missing), so the record could not say what computed it. "
                "Run from a clone, or set LAYERLAB_RESULTS to a scratch folder.")
        if seconds is not None:
            prov["compute_seconds"] = round(seconds, 3)
        record = {"experiment": experiment, "item": item, "config": key,
                  "config_hash": config_hash(key), "provenance": prov, "value": plain,
                  "value_sha256": value_digest(plain)}
        atomic_write_text(path, dumps(record))
        if seconds is not None:
            self.spent += round(seconds, 3)
        return plain

    def _in_repository(self) -> bool:
        return self.folder.resolve().is_relative_to((paths.REPO_ROOT / "results").resolve())

    def may_compute(self, what: str) -> None:
        """With `$LAYERLAB_CACHE_ONLY=1`, a missing result is an error instead of a computation
        (rendering pages from committed results must never start a long run)."""
        if os.environ.get("LAYERLAB_CACHE_ONLY") == "1":
            raise LookupError(f"{what} is not in {self.folder} and LAYERLAB_CACHE_ONLY=1")

    def cached(self, experiment: str, config: Mapping[str, Any], compute: Callable[[], Any],
               *, force: bool = False, item: str | None = None) -> Any:
        """The stored value for (experiment, config[, item]), computing and storing it if
        absent. Under the freshness gate a stored value may be recomputed and compared
        (`layerlab.verify`)."""
        if not force:
            hit = self.lookup(experiment, config, item)
            if hit is not MISSING:
                verify.check(self, experiment, config, item, hit, compute)
                return hit
        self.may_compute(experiment if item is None else f"{experiment}/{item}")
        started = time.perf_counter()
        value = compute()
        return self.put(experiment, config, value, item=item,
                        seconds=time.perf_counter() - started)

    def for_each(self, experiment: str, config: Mapping[str, Any], items: Mapping[str, Any],
                 compute: Callable[[str, Any], Any], *, force: bool = False,
                 progress: bool = True) -> dict[str, Any]:
        """`compute(name, item)` for every item, each stored as soon as it finishes.

        A rerun after an interruption recomputes only the items that have no stored result.
        """
        from layerlab.progress import tqdm

        keys = self._item_keys(config, items)
        out: dict[str, Any] = {} if force else self.stored_items(experiment, config, items)
        if verify.active() and out:  # the gate recomputes some stored items (the seed's pick)
            pick = min(out, key=verify.draw)
            for name, hit in out.items():
                verify.check(self, experiment, keys[name], name, hit,
                             lambda name=name: compute(name, items[name]), pick=name == pick)
        todo = [name for name in items if name not in out]
        bar = tqdm(todo, desc=experiment, disable=not (progress and todo), total=len(todo))
        for name in bar:
            bar.set_postfix_str(name)
            self.may_compute(f"{experiment}/{name}")
            started = time.perf_counter()
            value = compute(name, items[name])
            out[name] = self.put(experiment, keys[name], value, item=name,
                                 seconds=time.perf_counter() - started)
        return {name: out[name] for name in items}  # in the order of `items`

    @staticmethod
    def _item_keys(config: Mapping[str, Any], items: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        # an item's own settings are part of its key
        return {name: {**config, "item": item} for name, item in items.items()}

    def stored_items(self, experiment: str, config: Mapping[str, Any],
                     items: Mapping[str, Any]) -> dict[str, Any]:
        """The items of a `for_each` whose results are stored (read only, nothing computed):
        e.g. another profile's committed results, which may be partly finished."""
        return {name: hit for name, key in self._item_keys(config, items).items()
                if (hit := self.lookup(experiment, key, name)) is not MISSING}

    def arrays_path(self, experiment: str, config: Mapping[str, Any], item: str | None = None) -> Path:
        return self.path(experiment, config, item).with_suffix(".npz")

    def put_arrays(self, experiment: str, config: Mapping[str, Any], arrays: Mapping[str, Any],
                   item: str | None = None) -> None:
        """Store numeric arrays beside a record (compressed .npz, written atomically)."""
        import io

        import numpy as np

        buffer = io.BytesIO()
        np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
        atomic_write_bytes(self.arrays_path(experiment, config, item), buffer.getvalue())

    def get_arrays(self, experiment: str, config: Mapping[str, Any],
                   item: str | None = None) -> dict[str, Any] | None:
        import numpy as np

        path = self.arrays_path(experiment, config, item)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise CacheError(f"the array record {path} is corrupt ({err}); delete it to "
                             f"recompute, or `git checkout -- {path}`") from err

    def provenance_of(self, experiment: str, config: Mapping[str, Any],
                      item: str | None = None) -> dict[str, Any] | None:
        path = self.path(experiment, config, item)
        if not path.is_file():
            return None
        return self.read_record(path)["provenance"]


# --- a step whose value is a record, keyed by its own arguments ------------------------------
_ORIGINS: dict[int, tuple[Any, dict[str, Any]]] = {}  # id(value) -> (value, its record's key)
# values Python may share between unrelated places (interned, cached small ints, constant
# tuples): a step returning one never marks it as its record's
_SHARED = (str, bytes, int, float, bool, type(None), tuple, frozenset)


def key_of(value: Any) -> Any:
    """What an argument contributes to a record's key: a value returned by a `recorded` step
    contributes that record's key (a fit started at the converged fit is keyed by it, not by
    its numbers); tuples become lists, as JSON stores them; a settings object enters as its
    `key()`, another dataclass field by field, plain JSON values as they are. Anything else (an array, a table) is refused: pass it under `ignore`."""
    origin = _ORIGINS.get(id(value))
    if origin is not None and origin[0] is value:
        return origin[1]
    if isinstance(value, (list, tuple)):
        return [key_of(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): key_of(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        # a settings object enters as what results depend on; any other record, field by field
        return key_of(value.key() if callable(getattr(value, "key", None)) else asdict(value))
    raise TypeError(f"a {type(value).__name__} cannot enter a record's key: pass it as a "
                    f"recorded step's value, as plain settings, or name its argument in `ignore`")


# What the first argument of a step contributes (e.g. a Lab: its model and evaluation sets, and
# the cache its records live in): `context(arguments)` -> (key fields, cache or None).
Context = Callable[[Mapping[str, Any]], "tuple[dict[str, Any], Cache | None]"]


def recorded(experiment: str, name: str | None = None, *, ignore: Iterable[str] = (),
             encode: Callable[[Any], Any] = lambda v: v,
             decode: Callable[[Any], Any] = lambda v: v,
             context: Context | None = None, record: Callable[[Mapping[str, Any]], str] | None = None,
             arrays: bool = False) -> Callable[[Callable], Callable]:
    """Decorate a step whose value is stored under `experiment`: the key is `{"name": name}`
    plus the step's bound arguments (defaults included, `key_of` each), less those in `ignore`
    (the data every step reads, whose file hash the schema's inputs already carry). Nobody
    writes a key: renaming an argument or adding a setting changes it.

    - `step(*args, cache=…, force=False, **kwargs)`: the stored value, computed if absent. The
      keyword `cache` (a `Cache`) is passed on to the step if it asks for one (to read another
      record) and is never part of the key. `step.key(*args, **kwargs)` is the key alone.
    - `step.each(items, *args, cache=…, force=False, progress=True, **kwargs)`: a step whose
      parameter `item` is one of `items` (name -> item) is run for each, each stored as it
      finishes (`Cache.for_each`: a rerun resumes); the item is in its record's key, not in
      the step's. `step.stored(items, …)` reads the items already stored, computing nothing
      (e.g. another profile's committed, partly finished runs).
    - `context`: the step's first parameter is a setting that is not JSON (e.g. a Lab);
      `context(arguments)` gives what it contributes to the key, in place of the name, and the
      cache when the call names none.
    - `record(arguments)`: the name of the record a call stores (e.g. a model's), for steps
      whose calls share a key; the arguments it reads belong in `ignore` or the context.
    - `arrays`: the step returns (value, arrays); the arrays are stored beside the record
      (`Cache.put_arrays`, read with `Cache.get_arrays(experiment, step.key(…), record)`) and a
      record without its arrays is computed again."""
    skip = {"cache", "item", *ignore}

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        wants_cache = "cache" in sig.parameters
        label = name or fn.__name__
        first = next(iter(sig.parameters)) if context else None
        taken = {"force", "progress"} & set(sig.parameters)
        if taken:  # the step's callers pass these to the cache; the step would never see them
            raise TypeError(f"{label}: a recorded step cannot take {sorted(taken)}; rename it "
                            f"(e.g. `show` for an inner progress bar)")

        def bound(args: tuple, kwargs: dict) -> dict[str, Any]:
            b = sig.bind_partial(*args, **kwargs)
            b.apply_defaults()
            return dict(b.arguments)

        def key_and_cache(arguments: dict[str, Any], cache: Cache | None) -> tuple[dict, Cache]:
            base, own = context(arguments) if context else ({"name": label}, None)
            return {**base, **{k: key_of(v) for k, v in arguments.items()
                               if k not in skip and k != first}}, cache or own

        def key(*args: Any, **kwargs: Any) -> dict[str, Any]:
            return key_and_cache(bound(args, kwargs), None)[0]

        @functools.wraps(fn)
        def step(*args: Any, cache: Cache | None = None, force: bool = False, **kwargs: Any) -> Any:
            arguments = bound(args, kwargs)
            k, cache = key_and_cache(arguments, cache)
            if cache is None:
                raise TypeError(f"{label}: pass cache=… (a results.Cache)")
            extra = {"cache": cache} if wants_cache else {}
            item = record(arguments) if record else None
            if not arrays:
                value = cache.cached(experiment, k, lambda: encode(fn(*args, **kwargs, **extra)),
                                     force=force, item=item)
            else:
                # arrays are written only with a record computed here: the freshness gate may
                # recompute a stored one to compare, and must not overwrite what it compares with
                missing = force or not cache.arrays_path(experiment, k, item).is_file()
                computed: dict[str, Any] = {}

                def compute() -> Any:
                    value, computed["arrays"] = fn(*args, **kwargs, **extra)
                    return encode(value)

                value = cache.cached(experiment, k, compute, force=missing, item=item)
                if missing:
                    cache.put_arrays(experiment, k, computed["arrays"], item=item)
            value = decode(value)
            if not isinstance(value, _SHARED):  # an int or a str may be the same object as any
                _ORIGINS[id(value)] = (value, k)  # equal constant elsewhere: never a record's
            return value

        def each(items: Mapping[str, Any], *args: Any, cache: Cache | None = None,
                 force: bool = False, progress: bool = True, **kwargs: Any) -> dict[str, Any]:
            if "item" not in sig.parameters:
                raise TypeError(f"{label} has no parameter `item`: it is not run per item")
            arguments = bound(args, {**kwargs, "item": None})
            k, cache = key_and_cache(arguments, cache)
            if cache is None:
                raise TypeError(f"{label}: pass cache=… (a results.Cache)")
            extra = {"cache": cache} if wants_cache else {}
            stored = cache.for_each(
                experiment, k, items,
                lambda _name, item: encode(fn(*args, **{**kwargs, "item": item}, **extra)),
                force=force, progress=progress)
            return {n: decode(v) for n, v in stored.items()}

        def stored(items: Mapping[str, Any], *args: Any, cache: Cache | None = None,
                   **kwargs: Any) -> dict[str, Any]:
            k, cache = key_and_cache(bound(args, {**kwargs, "item": None}), cache)
            if cache is None:
                raise TypeError(f"{label}: pass cache=… (a results.Cache)")
            return {n: decode(v) for n, v in cache.stored_items(experiment, k, items).items()}

        step.key = key  # type: ignore[attr-defined]
        step.each = each  # type: ignore[attr-defined]
        step.stored = stored  # type: ignore[attr-defined]
        return step

    return wrap


def in_profile(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], Cache]:
    """A `recorded` context for a step whose first argument is a profile and whose other
    arguments say everything its records depend on: nothing more in the key, the profile's
    cache."""
    profile = next(iter(arguments.values()))
    return {}, Cache(profile.name)


def settings_first(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], Cache]:
    """A `recorded` context for a step whose first argument is a settings object that says
    everything its records depend on (its `key()` is the key) and whose argument `profile`
    (a profile or its name) names the cache; `profile` then belongs in `ignore`."""
    settings = next(iter(arguments.values()))
    profile = arguments["profile"]
    return settings.key(), Cache(profile if isinstance(profile, str) else profile.name)


def profile_config(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], Cache]:
    """A `recorded` context for a step whose first argument is a profile it reads beyond its
    other arguments: the profile's fields that define results (`Profile.config`) in the key,
    the profile's cache."""
    profile = next(iter(arguments.values()))
    return profile.config(), Cache(profile.name)


@contextlib.contextmanager
def cache_only() -> Iterator[None]:
    """Inside: a missing result raises LookupError instead of starting a computation (what
    `$LAYERLAB_CACHE_ONLY=1` does for a whole process), e.g. to read another profile's
    committed results without ever training them on this machine."""
    before = os.environ.get("LAYERLAB_CACHE_ONLY")
    os.environ["LAYERLAB_CACHE_ONLY"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LAYERLAB_CACHE_ONLY", None)
        else:
            os.environ["LAYERLAB_CACHE_ONLY"] = before


def devices(profile: str, experiments: Iterable[str], root: Path | None = None) -> list[str]:
    """The distinct devices (with CUDA and torch versions where recorded) that computed the
    records of these experiments, e.g. to label another profile's results on a page."""
    found = set()
    cache = Cache(profile, root)
    for experiment in experiments:
        for path in (cache.folder / slug(experiment)).glob("*.json"):
            prov = cache.read_record(path).get("provenance", {})
            cuda = f", CUDA {prov['cuda']}" if prov.get("cuda") else ""
            found.add(f"{prov.get('device', 'unknown device')}{cuda}, torch {prov.get('torch', '?')}")
    return sorted(found)


def status(profile: str, root: Path | None = None) -> list[dict[str, Any]]:
    """Every record of a profile: its experiment, commit, whether that tree was dirty, whether
    the current code would still read it (stale: its schema version or input hashes differ from
    today's, so its key is no longer computed), and whether it can be trusted at all
    (`invalid`: why not — damaged, or a record under another record's name)."""
    cache = Cache(profile, root)
    rows = []
    for path in sorted(cache.folder.glob("*/*.json")):
        file = str(path.relative_to(cache.folder))
        try:
            record = cache.read_record(path)
        except CacheError as err:
            rows.append({"experiment": path.parent.name, "item": None, "commit": "?",
                         "dirty": False, "stale": False, "invalid": str(err), "file": file})
            continue
        config = record["config"]
        base = {k: v for k, v in config.items() if k not in ("_schema", "_inputs")}
        current = full_key(record["experiment"], base)
        commit = str(record["provenance"].get("git_commit", "unknown"))
        rows.append({"experiment": record["experiment"], "item": record["item"],
                     "commit": commit.removesuffix("+dirty"), "dirty": commit.endswith("+dirty"),
                     "stale": current != config, "invalid": None, "file": file})
    return rows


class ImportRefused(ValueError):
    """An archive that `layerlab results import` does not take (nothing is written)."""


MEMBER_CAP = 8 << 20  # bytes: the largest gpu-run record is a few hundred kB


def import_archive(archive: Path | Iterable[Path], results_root: Path | None = None, *,
                   allow_cpu: bool = False, allow_dry: bool = False,
                   replace: bool = False) -> list[str]:
    """`layerlab results import`: unpack `make gpu-run` archives into `results/gpu/`, all or
    nothing. Every member must be a JSON record under `<experiment>/`, whole and self-consistent
    (`record_problem`: the record's own experiment, item and key are its name's), computed with
    the gpu profile on a CUDA device (`allow_cpu`: on a CPU), not by a dry or shrunk run
    (`allow_dry`: the tests' own dry archives), at most `MEMBER_CAP` bytes, and not a second
    copy of a name with other content. A record already in `results/gpu/` with other content is
    refused unless `replace` (the replaced names are returned with a `replaced:` prefix). The
    first problem raises `ImportRefused` naming the archive and member; then nothing is
    written."""
    archives = [Path(archive)] if isinstance(archive, (str, Path)) else [Path(a) for a in archive]
    root = (results_root or paths.results_dir()) / "gpu"
    incoming: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in archives:
        for name, record in _archive_records(path, allow_cpu=allow_cpu, allow_dry=allow_dry):
            if name in incoming and incoming[name][1] != record:
                raise ImportRefused(f"{path}: {name} is also in {incoming[name][0]} with other "
                                    "content; which one is right?")
            incoming[name] = (path, record)
    for name in incoming:  # never write through a symlink, never over a non-folder
        target = root / name
        for folder in (root, target.parent):
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise ImportRefused(f"{folder} is a symlink or not a folder; refusing to write "
                                    f"{name} through it")
        if target.is_symlink():
            raise ImportRefused(f"{target} is a symlink; refusing to write through it")
    todo, replaced = [], []  # decided before anything is written: all or nothing
    for name, (path, record) in incoming.items():
        target = root / name
        text = dumps(record)
        if target.is_file():
            try:
                old_text = target.read_text(encoding="utf-8")
                same = old_text == text or json.loads(old_text) == record
            except (json.JSONDecodeError, UnicodeDecodeError):
                old_text, same = None, False
            if old_text == text:
                continue
            if not same:
                if not replace:
                    raise ImportRefused(f"{path}: {name} differs from the record already in "
                                        f"{root} (pass --replace to overwrite it)")
                replaced.append(name)
        todo.append((target, text))
    written = []
    for target, text in todo:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, text)
        written.append(target.relative_to(root).as_posix())
    return [*written, *(f"replaced: {n}" for n in replaced)]


def _archive_records(archive: Path, *, allow_cpu: bool, allow_dry: bool
                     ) -> list[tuple[str, dict[str, Any]]]:
    import tarfile

    if not archive.is_file():
        raise ImportRefused(f"{archive}: no such file")
    try:
        tar = tarfile.open(archive, "r:gz")
    except (tarfile.TarError, OSError, EOFError) as err:
        raise ImportRefused(f"{archive}: not a gzip-compressed tar archive ({err})") from err
    out = []
    with tar:
        try:
            members = tar.getmembers()
        except (tarfile.TarError, OSError, EOFError) as err:
            raise ImportRefused(f"{archive}: damaged archive ({err})") from err
        seen: set[str] = set()
        for m in members:
            rel = Path(m.name)
            where = f"{archive}: {m.name!r}"
            if (not m.isfile() or rel.is_absolute() or ".." in rel.parts or rel.suffix != ".json"
                    or len(rel.parts) != 2):
                raise ImportRefused(f"{where}: unexpected entry; a gpu-run archive holds only "
                                    "<experiment>/<record>.json files")
            if m.name in seen:
                raise ImportRefused(f"{where}: the archive holds this name twice")
            seen.add(m.name)
            if m.size > MEMBER_CAP:
                raise ImportRefused(f"{where}: {m.size} bytes, over the {MEMBER_CAP}-byte cap "
                                    "for one record")
            try:
                data = tar.extractfile(m).read(MEMBER_CAP + 1)
                record = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise ImportRefused(f"{where}: not a UTF-8 JSON record ({err})") from err
            except (tarfile.TarError, OSError, EOFError) as err:
                raise ImportRefused(f"{where}: cannot be read ({err})") from err
            problem = record_problem(record, rel)
            if problem:
                raise ImportRefused(f"{where}: {problem}")
            prov = record["provenance"]
            device = str(prov.get("device", ""))
            if not device.startswith("cuda") and not allow_cpu:
                raise ImportRefused(f"{where}: computed on {device or 'an unknown device'}, "
                                    "not a GPU")
            if prov.get("profile") != "gpu":
                raise ImportRefused(f"{where}: not a gpu-profile record")
            if prov.get("dry") and not allow_dry:
                raise ImportRefused(f"{where}: written by a dry run (shrunk sizes, e.g. "
                                    "`make gpu-check`), not a real result")
            out.append((m.name, record))
    return out
