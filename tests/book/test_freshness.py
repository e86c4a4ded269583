"""Layer 6 of the tests: the committed pages equal what the code and the committed results give
today. Every chapter is re-executed with the cpu profile from the cache alone (nothing may
compute) and compared with its committed .ipynb (layerlab.book.outputs; `make check-outputs`).
The whole pass takes a few minutes, so `make test` runs all of it."""

import pytest

from layerlab import cli, paths
from layerlab.book import outputs

pytestmark = pytest.mark.freshness


def test_committed_outputs_equal_a_fresh_cache_only_run(monkeypatch):
    monkeypatch.delenv("LAYERLAB_RESULTS", raising=False)  # read the committed results
    # claims recomputed every time, and a seeded sample of the expensive records within the
    # gate's time budget (`make check-outputs SAMPLE=1`; FULL=1 recomputes all, hours)
    found = outputs.check(profile="cpu", recompute="sample")
    bad = {k: v for k, v in found.items() if v}
    chapters = [py.stem for py in cli._notebooks([])]
    pages = sorted(f"{p.parent.parent.name}/reports/{p.name}"
                   for p in paths.results_dir().glob("*/reports/*")
                   if p.parent.parent.name != "smoke")  # a test run's scratch, never committed
    assert pages  # the committed report pages are compared too
    assert sorted(found) == sorted(chapters + pages)  # every chapter and every report page
    assert "expensive" in outputs.LAST_RECOMPUTED  # the sample ran (each record within its time)
    assert not bad, "\n\n".join(f"{k}:\n" + "\n".join(v) for k, v in bad.items())
