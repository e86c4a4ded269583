"""One-off (issue 14): split the stored toy sweeps (one record per sweep) into one record per
student, and re-key the signature runs for the new `student_block` field. Exact, because
students share only the teacher and the batches (tests/unit/test_toy.py): each record keeps the
provenance of the run that computed it."""

from __future__ import annotations

import json
import sys

from layerlab import results
from layerlab.depth import toy
from layerlab.settings import ToyConfig


def write(cache: results.Cache, experiment: str, config: dict, value, item: str,
          provenance: dict) -> None:
    key = results.full_key(experiment, config)
    record = {"experiment": experiment, "item": item, "config": key,
              "config_hash": results.config_hash(key), "provenance": provenance, "value": value}
    results.atomic_write_text(cache.path(experiment, config, item), results.dumps(record))


def main(profile: str) -> None:
    cache = results.Cache(profile)
    old = sorted((cache.folder / "toy_sweeps").glob("*.json"))
    for path in old:
        record = json.loads(path.read_text())
        name, run = record["item"], record["value"]
        cfg = ToyConfig(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in run["config"].items()})
        for i, d in enumerate(run["depths"]):
            curve = [{"step": p["step"], "test_loss": p["test_loss"][i]} for p in run["curve"]]
            write(cache, toy.STUDENTS, toy.student_key(cfg), {"depth": d, "curve": curve},
                  f"{name}-d{d}", record["provenance"])
        path.unlink()
    for path in sorted((cache.folder / "toy_signatures").glob("*.json")):
        record = json.loads(path.read_text())
        item = record["config"]["item"]
        cfg = ToyConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in item.items()})
        path.unlink()
        write(cache, "toy_signatures", {"toy": 1, "item": cfg.key()}, record["value"],
              record["item"], record["provenance"])
    print(f"{len(old)} sweeps split into students")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
