"""One-off (issue 15): records of experiments computed before they were registered in
`results.SCHEMAS` carry no input hashes; move each to the key with its experiment's input hashes,
when it came from a clean tree and the data it reads did not change between its commit and HEAD
(otherwise delete it, so the next run recomputes it). Value and provenance are kept.
Run: python tools/rekey_inputs.py cpu EXPERIMENT...
"""

from __future__ import annotations

import json
import sys

from layerlab import results

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from migrate_cache_keys import inputs_unchanged  # noqa: E402


def main(profile: str, experiments: list[str]) -> None:
    cache = results.Cache(profile)
    moved = deleted = 0
    for exp in experiments:
        _, groups = results.SCHEMAS[exp]
        for path in sorted((cache.folder / exp).glob("*.json")):
            record = json.loads(path.read_text())
            stored = record["config"]
            if set(stored.get("_inputs", {})) == set(groups):
                continue
            commit = record["provenance"]["git_commit"]
            if commit.endswith("+dirty") or not inputs_unchanged(commit, exp):
                path.unlink()
                deleted += 1
                continue
            config = {k: v for k, v in stored.items() if k not in ("_schema", "_inputs")}
            new = cache.path(exp, config, record["item"])
            record["config"] = results.full_key(exp, config)
            record["config_hash"] = results.config_hash(record["config"])
            record["provenance"]["rekeyed"] = (f"2026-12: {exp} registered with inputs {groups}; "
                                               f"data/ unchanged since {commit}")
            results.atomic_write_text(new, results.dumps(record))
            if new != path:
                path.unlink()
            moved += 1
    print(f"{moved} records re-keyed, {deleted} deleted")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
