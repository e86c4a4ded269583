"""One-off migration (2026-12) of committed result records to keys with a schema version and
input hashes (layerlab.results.SCHEMAS / INPUTS).

A record keeps its value and provenance and moves to its new key only when
- it was computed from a clean tree (its provenance commit has no `+dirty`), and
- none of the data files it could read changed between that commit and HEAD;
otherwise it is deleted, so the next `make execute` recomputes it from a clean tree. Claims are
always deleted: every chapter run writes them afresh. Run: python tools/migrate_cache_keys.py cpu
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

from layerlab import paths, results
from layerlab.settings import GrowthConfig


def legacy_to_current(experiment: str, config: dict) -> dict:
    """Key shapes that the typed settings changed; every other key is unchanged."""
    if experiment == "growth":  # was the profile's override dict, now the whole base config
        full = dataclasses.asdict(GrowthConfig(**config["config"]))
        full.pop("regime")
        full.pop("seed")
        return {**config, "config": full}
    return config


def inputs_unchanged(commit: str, experiment: str) -> bool:
    """The data files this experiment reads are the same at `commit` and HEAD."""
    _, groups = results.SCHEMAS[experiment]
    specs = [f"data/{pattern}" for g in groups for pattern in results.INPUTS[g]]
    if not specs:
        return True
    out = subprocess.run(["git", "-C", str(paths.REPO_ROOT), "diff", "--quiet", commit, "HEAD",
                          "--", *specs], capture_output=True)
    return out.returncode == 0


def main(profile: str) -> None:
    cache = results.Cache(profile)
    moved = deleted = 0
    for path in sorted(cache.folder.glob("*/*.json")):
        record = json.loads(path.read_text())
        exp, item, config = record["experiment"], record["item"], record["config"]
        if "_schema" in config:
            continue
        commit = record["provenance"]["git_commit"]
        npz = path.with_suffix(".npz")
        if exp == "claims" or commit.endswith("+dirty") or not inputs_unchanged(commit.removesuffix('+dirty'), exp):
            path.unlink()
            npz.unlink(missing_ok=True)
            deleted += 1
            continue
        config = legacy_to_current(exp, config)
        new = cache.path(exp, config, item)
        record["config"] = results.full_key(exp, config)
        record["config_hash"] = results.config_hash(record["config"])
        record["provenance"]["rekeyed"] = ("2026-12: key gained schema version and input hashes; "
                                           f"data/ unchanged since {commit}")
        results.atomic_write_text(new, results.dumps(record))
        if npz.exists():
            npz.rename(new.with_suffix(".npz"))
        if new != path:
            path.unlink()
        moved += 1
    print(f"{profile}: {moved} records moved to their new keys, {deleted} deleted (dirty, "
          "changed inputs, or claims)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
