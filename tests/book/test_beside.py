"""GPU results beside the cpu ones (`layerlab.book.beside`) and the verdict table's choice of
the better-powered result: with no gpu records, with the records of a dry `make gpu-run`
(complete), and with one of them removed (partial, so not judged)."""

from __future__ import annotations

import shutil

import pytest

from layerlab import claims, profiles, results
from layerlab.book import beside, verdicts

CPU, GPU = profiles.PROFILES["cpu"], profiles.PROFILES["gpu"]


def _claim(cid: str, verdict: str, setting: str = "s") -> claims.Claim:
    paper, chapter = verdicts.SPEC_CLAIMS[cid]
    return claims.Claim(id=cid, paper=paper, chapter=chapter, statement=f"statement {cid}",
                        paper_value="1", ours="2", rule="r", verdict=verdict, setting=setting)


def test_the_gpu_settings_are_stronger_than_cpu_in_every_size_and_not_the_reverse():
    assert beside.dominates(GPU, CPU) == {"toy": True, "family": True, "growth": True}
    assert not any(beside.dominates(CPU, GPU).values())
    assert beside.rank("gpu") > beside.rank("cpu") > beside.rank("smoke")
    # every pairing a page shows is a stronger profile over a weaker one
    for own, others in beside.BESIDE.items():
        for other in others:
            assert beside.rank(other) > beside.rank(own)
            assert all(beside.dominates(profiles.PROFILES[other], profiles.PROFILES[own]).values())


def test_the_verdict_table_takes_the_stronger_profile_and_keeps_the_other_visible():
    claims.register(_claim("P1-D1-independent-teacher", claims.NOT_TESTABLE), "cpu")
    claims.register(_claim("P1-D1-independent-teacher", claims.REPRODUCED, "on a GPU"), "gpu")
    claims.register(_claim("P2-C1-core", claims.PARTLY), "cpu")
    claims.register(_claim("P2-C1-core", claims.NOT_REPRODUCED), "smoke")
    row = verdicts.table("cpu").set_index("id")
    d1 = row.loc["P1-D1-independent-teacher"]
    assert (d1["verdict"], d1["source"], d1["setting"]) == (claims.REPRODUCED, "gpu", "on a GPU")
    assert d1["other"] == f"cpu: {claims.NOT_TESTABLE}"
    core = row.loc["P2-C1-core"]  # measured on cpu only: its own verdict, nothing replaced
    assert (core["verdict"], core["source"], core["other"]) == (claims.PARTLY, "cpu", "")
    html = verdicts.html_table(verdicts.table("cpu"))
    assert f"gpu (better powered; cpu: {claims.NOT_TESTABLE})" in html
    counted = verdicts.sources(verdicts.table("cpu")).set_index("source")
    assert counted.loc["gpu", "replaced"] == 1
    # smoke is a code check: it never shows another profile's verdicts
    smoke = verdicts.table("smoke").set_index("id")
    assert smoke.loc["P1-D1-independent-teacher", "verdict"] == claims.NOT_TESTABLE
    assert smoke.loc["P2-C1-core", "source"] == "smoke"


def test_without_gpu_records_each_chapter_says_how_to_get_them():
    import pandas as pd

    empty = pd.DataFrame()
    for b in (beside.toy(CPU, empty), beside.family(CPU, empty, empty), beside.growth(CPU, empty)):
        assert b.status == "none" and "make gpu-run" in b.message() and not b.claims
        assert "make gpu-run" in b._repr_html_()
    assert beside.toy(profiles.PROFILES["smoke"], empty).status == "not shown"


@pytest.fixture
def dry_results(dry_gpu_run, tmp_path, monkeypatch):
    """A copy of the dry run's results (the shrunk gpu profile's records) as results/."""
    root = tmp_path / "results"
    shutil.copytree(dry_gpu_run["results"], root)
    monkeypatch.setenv("LAYERLAB_RESULTS", str(root))
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "cache"))  # no weights: records only
    return root


def _own_side(gpu):
    """Stand-ins for the cpu chapter's own tables (the dry gpu numbers themselves)."""
    from layerlab.anatomy import growth
    from layerlab.depth import family, geometry, toy

    with results.cache_only():
        alphas = toy.alpha_table(toy.run_sweeps(gpu, progress=False))
        losses = geometry.family_losses(family.train_family(family.config_for(gpu), gpu.name,
                                                            progress=False))
        seq = geometry.controls(gpu, only=geometry.family_control_names(gpu), progress=False)
        cv = growth.curves(growth.run(gpu, progress=False))
    return alphas, losses, seq, cv


@pytest.mark.gpu_dry
def test_complete_gpu_results_are_shown_judged_and_preferred(dry_results):
    gpu = GPU.shrunk()
    alphas, losses, seq, cv = _own_side(gpu)
    toy_b, fam_b, grow_b = (beside.toy(CPU, alphas, gpu), beside.family(CPU, losses, seq, gpu),
                            beside.growth(CPU, cv, gpu))
    for b in (toy_b, fam_b, grow_b):
        assert b.status == "complete", b.message()
        assert b.device.startswith("cpu") and "torch" in b.device  # from the records' provenance
        assert {"cpu", "gpu"} <= {c.split()[0] for c in b.table.columns if c.split()[0] in
                                  ("cpu", "gpu")}
        assert all(c.setting.startswith("profile gpu on cpu") for c in b.claims)
    assert [c.id for c in toy_b.claims] == ["P1-D1-independent-teacher", "P1-D2-tied-teacher-steep",
                                            "P1-D3-tied-cold", "P1-D4-mse-ordering"]
    assert [c.id for c in fam_b.claims] == ["P1-A2-update-inverse-depth"]
    assert {c.id for c in grow_b.claims} == {"P2-C6-loss-ratio", "P2-C6-half-budget",
                                             "P2-C6-faster", "P2-C6-cost"}
    # registered in the gpu register, and the verdict table takes them
    claims.register(_claim("P1-D3-tied-cold", claims.PARTLY), "cpu")
    row = verdicts.table("cpu").set_index("id")
    got = {c.id: c.verdict for b in (toy_b, fam_b, grow_b) for c in b.claims}
    for cid, verdict in got.items():
        assert row.loc[cid, "source"] == "gpu" and row.loc[cid, "verdict"] == verdict
    assert row.loc["P1-D3-tied-cold", "other"] == f"cpu: {claims.PARTLY}"
    assert row.loc["P1-A1-edges-rotate", "source"] == "cpu"


@pytest.mark.gpu_dry
def test_partial_gpu_results_are_shown_but_not_judged(dry_results):
    from layerlab.depth import family, toy

    gpu = GPU.shrunk()
    alphas, losses, seq, cv = _own_side(gpu)
    student = sorted((dry_results / "gpu" / toy.STUDENTS).glob("*.json"))[0]
    student.unlink()
    member = sorted((dry_results / "gpu" / family.FAMILY).glob("*.json"))[-1]
    member.unlink()
    growth_run = sorted((dry_results / "gpu" / "growth_tuning").glob("*.json"))[0]
    growth_run.unlink()
    toy_b, fam_b, grow_b = (beside.toy(CPU, alphas, gpu), beside.family(CPU, losses, seq, gpu),
                            beside.growth(CPU, cv, gpu))
    for b in (toy_b, fam_b, grow_b):
        assert b.status == "partial" and not b.claims and "not judged" in b.message(), b.message()
        assert b.missing
    assert toy_b.done == toy_b.total - 1 and fam_b.done == fam_b.total - 1
    assert not (dry_results / "gpu" / "claims").exists()
