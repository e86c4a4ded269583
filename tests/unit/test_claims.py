"""The one decision procedure (`claims.decide`, VERDICTS.md §2): every branch on synthetic
evidence, the cross-unit rule, and every declaration of both wings."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from layerlab import claims
from layerlab.anatomy.declarations import DECLARATIONS as P2
from layerlab.claims import Band, Declaration, Estimate, Kind, Secondary, Unit, Verdict, decide
from layerlab.depth.declarations import DECLARATIONS as P1

BAND = Band(lo=0.9, hi=1.5, reason="the paper's own interval")


def _decl(kind: Kind = Kind.NUMBER, secondary: tuple[Secondary, ...] = (), **kw) -> Declaration:
    fields = dict(id="P1-X1-test", paper="P1", chapter="01_depth_scaling_law",
                  statement="s", source="“words”", source_from="abstract", paper_value="1.2",
                  kind=kind, primary="alpha", unit="model shapes", band=BAND,
                  precondition="the fit converged", control="" if kind is Kind.NUMBER else "ctl",
                  scope="the Chinchilla grid", finding="P1-F1", secondary=secondary)
    fields.update(kw)
    return Declaration(**fields)


IN, OUT, EDGE = Estimate(1.2, 1.0, 1.4), Estimate(3.0, 2.5, 3.5), Estimate(1.4, 1.2, 1.7)


@pytest.mark.parametrize(("unit", "verdict", "step"), [
    (Unit(name="u", primary=IN), Verdict.REPRODUCED, "primary and every secondary pass"),
    (Unit(name="u", primary=OUT), Verdict.NOT_REPRODUCED, "primary: the interval lies outside"),
    (Unit(name="u", primary=EDGE), Verdict.NOT_TESTABLE, "primary: the interval straddles"),
    (Unit(name="u", primary=IN, precondition="not converged"), Verdict.NOT_TESTABLE,
     "precondition: not converged"),
    (Unit(name="u", primary=None), Verdict.NOT_TESTABLE, "precondition: the primary"),
    (Unit(name="u", primary=Estimate(1.2, math.nan, 1.3)), Verdict.NOT_TESTABLE, "primary:"),
])
def test_a_number_claim_takes_each_branch(unit, verdict, step):
    d = decide(_decl(), [unit])
    assert d.verdict is verdict and d.decided_by.startswith(step)


def test_a_presence_claim_whose_negative_control_passes_is_not_diagnostic():
    decl = _decl(Kind.PRESENCE)
    assert decide(decl, [Unit(name="u", primary=IN, control=IN)]).verdict is Verdict.NOT_DIAGNOSTIC
    assert decide(decl, [Unit(name="u", primary=IN, control=EDGE)]).verdict is Verdict.REPRODUCED
    assert decide(decl, [Unit(name="u", primary=IN, control=OUT)]).verdict is Verdict.REPRODUCED
    assert decide(decl, [Unit(name="u", primary=IN)]).decided_by == "control: not measured"
    # a failing primary is not reproduced whatever the control does
    assert decide(decl, [Unit(name="u", primary=OUT, control=IN)]).verdict is Verdict.NOT_REPRODUCED


def test_an_absence_claim_needs_its_positive_control_detected():
    decl = _decl(Kind.ABSENCE)
    # the property-bearing system must fail the "absent" band: then the measure can see it
    assert decide(decl, [Unit(name="u", primary=IN, control=OUT)]).verdict is Verdict.REPRODUCED
    blind = decide(decl, [Unit(name="u", primary=IN, control=IN)])
    assert blind.verdict is Verdict.NOT_TESTABLE and "cannot see" in blind.decided_by
    assert decide(decl, [Unit(name="u", primary=IN, control=EDGE)]).verdict is Verdict.NOT_TESTABLE


def test_secondaries_make_a_passing_primary_partly():
    sec = (Secondary(name="rest", statistic="share", band=Band(hi=0.3, reason="“< 30 %”")),)
    decl = _decl(secondary=sec)
    ok = Unit(name="u", primary=IN, secondary={"rest": Estimate(0.1, 0.05, 0.2)})
    bad = Unit(name="u", primary=IN, secondary={"rest": Estimate(0.5, 0.4, 0.6)})
    assert decide(decl, [ok]).verdict is Verdict.REPRODUCED
    d = decide(decl, [bad])
    assert d.verdict is Verdict.PARTLY and d.decided_by == "secondary fails: rest"
    missing = decide(decl, [Unit(name="u", primary=IN)])
    assert missing.verdict is Verdict.PARTLY and "not decided: rest" in missing.decided_by
    # a failing primary stays not reproduced even when its secondaries pass
    assert decide(decl, [dataclasses.replace(ok, primary=OUT)]).verdict is Verdict.NOT_REPRODUCED


def test_across_units():
    decl = _decl()
    u = lambda name, est: Unit(name=name, primary=est)  # noqa: E731
    assert decide(decl, [u("a", IN), u("b", IN)]).verdict is Verdict.REPRODUCED
    mixed = decide(decl, [u("a", IN), u("b", OUT), u("c", OUT)])
    assert mixed.verdict is Verdict.PARTLY and "b: not reproduced" in mixed.decided_by
    # units that could not be tested never outweigh a decided one; they stay listed
    most = decide(decl, [u("a", EDGE), u("b", EDGE), u("c", OUT)])
    assert most.verdict is Verdict.NOT_REPRODUCED
    assert most.decided_by.startswith("across the decided units") and "a: not testable" in \
        most.decided_by
    partly = decide(decl, [u("a", EDGE), u("b", IN), u("c", OUT)])
    assert partly.verdict is Verdict.PARTLY
    # reproduced where tested, the rest untested: partly (the whole scope was not tested)
    capped = decide(decl, [u("a", EDGE), u("b", IN), u("c", IN)])
    assert capped.verdict is Verdict.PARTLY and "a: not testable" in capped.decided_by
    sec = (Secondary(name="rest", statistic="share", band=Band(hi=0.3, reason="“< 30 %”")),)
    tie = decide(_decl(secondary=sec), [
        Unit(name="a", primary=IN, secondary={"rest": Estimate(0.1, 0.05, 0.2)}),
        Unit(name="b", primary=IN, secondary={"rest": Estimate(0.5, 0.4, 0.6)})])
    assert tie.verdict is Verdict.PARTLY  # reproduced beside partly: a tie says least
    assert set(mixed.units) == {"a", "b", "c"}
    with pytest.raises(ValueError, match="no units"):
        decide(decl, [])
    with pytest.raises(ValueError, match="repeat"):
        decide(decl, [u("a", IN), u("a", IN)])


def test_bands_and_declarations_refuse_what_the_design_forbids():
    with pytest.raises(ValueError, match="reason"):
        Band(lo=0, hi=1, reason=" ")
    with pytest.raises(ValueError, match="lo < hi"):
        Band(lo=1, hi=1, reason="r")
    with pytest.raises(ValueError, match="needs its control"):
        _decl(Kind.PRESENCE, control="")
    with pytest.raises(ValueError, match="start with its paper"):
        _decl(id="P2-X")
    with pytest.raises(ValueError, match="source is empty"):
        _decl(source="")
    assert Band(lo=0.5, reason="r").text() == "≥ 0.5" and BAND.text() == "[0.9, 1.5]"


def test_make_stores_the_declaration_and_the_deciding_step():
    decl = _decl(Kind.PRESENCE)
    d = decide(decl, [Unit(name="m", primary=IN, control=OUT)])
    c = claims.make(decl, d, ours="1.2 [1.0, 1.4]", setting="cpu")
    assert c.verdict == "reproduced" and c.decided_by == d.decided_by
    assert (c.band, c.band_reason, c.kind, c.finding) == ("[0.9, 1.5]", BAND.reason, "presence",
                                                         "P1-F1")
    assert c.units == {"m": {"verdict": "reproduced", "decided_by": d.decided_by}}


@pytest.mark.parametrize("decl", [*P1.values(), *P2.values()], ids=lambda d: d.id)
def test_every_declaration_builds_with_its_reasons(decl):
    assert decl.band.reason.strip()
    assert all(s.band.reason.strip() for s in decl.secondary)
    assert (Path(__file__).resolve().parents[2] / "notebooks" / f"{decl.chapter}.py").is_file()


def test_the_declarations_cover_every_spec_claim():
    from layerlab.book import verdicts

    declared = set(P1) | set(P2)
    assert declared <= set(verdicts.SPEC_CLAIMS) and not set(P1) & set(P2)
    # every chapter's claims are declared (issue 26)
    pending = {verdicts.SPEC_CLAIMS[c][1] for c in set(verdicts.SPEC_CLAIMS) - declared}
    assert pending == set()


HELPERS = ("judge", "strict", "combine", "all_hold", "equivalence", "interval_rule",
           "against_control", "interval_excludes")


def test_the_one_decision_is_the_only_way_to_combine_verdicts():
    """The seven old combination helpers are gone, and no module defines or calls one again."""
    import re

    assert not [h for h in HELPERS if hasattr(claims, h)]
    used = re.compile(r"\b(" + "|".join(HELPERS) + r")\(")
    root = Path(claims.__file__).parent
    users = {str(py.relative_to(root)) for py in root.rglob("*.py")
             if used.search(py.read_text(encoding="utf-8"))}
    assert users == set()


def test_a_claim_is_built_by_keyword_only():
    with pytest.raises(TypeError):
        claims.Claim("P1-X1", "P1", "ch", "s", "1", "1", "r", "reproduced", "set")  # noqa


# -- VERDICTS.md [rev] -----------------------------------------------------------------------------
def test_an_undecided_primary_never_hides_the_decided_parts():
    sec = (Secondary(name="slow L14", statistic="steps", band=Band(lo=100, reason="“slow”")),
           Secondary(name="never output", statistic="steps", band=Band(lo=300, reason="“never”")))
    decl = _decl(secondary=sec)
    passing, failing = Estimate(150, 120, 200), Estimate(50, 40, 60)
    both_pass = decide(decl, [Unit(name="u", primary=EDGE, secondary={
        "slow L14": passing, "never output": Estimate(400, 320, 500)})])
    assert both_pass.verdict is Verdict.PARTLY
    assert "decided parts pass: slow L14, never output" in both_pass.decided_by
    mixed = decide(decl, [Unit(name="u", primary=EDGE, secondary={
        "slow L14": passing, "never output": failing})])
    assert mixed.verdict is Verdict.PARTLY
    assert "pass: slow L14" in mixed.decided_by and "fail: never output" in mixed.decided_by
    all_fail = decide(decl, [Unit(name="u", primary=EDGE, secondary={"slow L14": failing})])
    assert all_fail.verdict is Verdict.NOT_REPRODUCED and "fail: slow L14" in all_fail.decided_by
    nothing = decide(decl, [Unit(name="u", primary=EDGE, secondary={
        "slow L14": Estimate(100, 90, 110)})])
    assert nothing.verdict is Verdict.NOT_TESTABLE
    assert nothing.decided_by == "primary: the interval straddles the band's edge"


def test_a_number_with_a_stated_uncertainty_compares_estimates():
    """α_ℓ = 1.2 ± 0.3 refitted on the same data with the same spread: our interval can never
    fit inside theirs, so the estimates are compared (VERDICTS.md §3 [rev])."""
    stated = Band(lo=0.9, hi=1.5, paper=1.2, reason="the paper's value ± its stated uncertainty")
    decl = _decl(band=stated)
    same_data = Estimate(1.33, 0.9, 2.0)  # wider than theirs, both estimates inside the other
    assert decide(decl, [Unit(name="u", primary=same_data)]).verdict is Verdict.REPRODUCED
    assert BAND.test(same_data) == "undecided"  # the interval rule could not pass it
    outside = Estimate(2.2, 1.8, 2.6)
    assert decide(decl, [Unit(name="u", primary=outside)]).verdict is Verdict.NOT_REPRODUCED
    # our point outside their interval, yet the intervals overlap: undecided
    assert stated.test(Estimate(1.6, 1.1, 2.1)) == "undecided"
    # their value outside our interval, our point inside theirs: undecided
    assert stated.test(Estimate(1.45, 1.3, 1.6)) == "undecided"
    with pytest.raises(ValueError, match="outside its own stated"):
        Band(lo=0.9, hi=1.5, paper=2.0, reason="r")
    assert "1.2 ± 0.3" in stated.text()


def test_a_finding_never_upgrades_its_claims_by_majority():
    r, p, n = Verdict.REPRODUCED, Verdict.PARTLY, Verdict.NOT_REPRODUCED
    t, d = Verdict.NOT_TESTABLE, Verdict.NOT_DIAGNOSTIC
    assert claims.finding({"a": p, "b": r, "c": r})[0] is p
    assert claims.finding({"a": n, "b": d})[0] is n
    assert claims.finding({"a": t, "b": d})[0] is t
    assert claims.finding({"a": r, "b": r}) == (r, None)
    assert claims.finding({"a": r, "b": n, "c": n})[0] is p
    assert "a: partly" in claims.finding({"a": p, "b": r})[1]
    with pytest.raises(ValueError):
        claims.finding({})


def test_the_stand_in_check_is_directional():
    """A copy threatens a verdict only by crossing the band's edge (or straddling it then);
    moving further from the edge, however far, is no threat."""
    band = Band(lo=100, reason="critical: ≥ 100 %")
    stand_in = Estimate(265, 227, 311)
    away = {"s0": Estimate(4000, 3000, 5000), "s1": Estimate(190, 150, 230)}
    assert claims.stand_in_threat(band, stand_in, away) == []
    across = {"s0": Estimate(90, 70, 110), "s1": Estimate(300, 250, 350)}
    assert claims.stand_in_threat(band, stand_in, across) == ["s0"]
    straddles = {"s2": Estimate(130, 95, 160)}
    assert claims.stand_in_threat(band, stand_in, straddles) == ["s2"]
    # a failing verdict is threatened by a copy that passes, not by one that fails further
    failing = Estimate(40, 31, 50)
    assert claims.stand_in_threat(band, failing, {"s0": Estimate(10, 5, 20)}) == []
    assert claims.stand_in_threat(band, failing, {"s0": Estimate(150, 120, 180)}) == ["s0"]
    # an undecided stand-in has nothing to threaten; an unmeasured copy is skipped
    assert claims.stand_in_threat(band, Estimate(100, 80, 120), across) == []
    assert claims.stand_in_threat(band, stand_in, {"s0": None}) == []


def test_flagged_sets_a_failed_precondition_and_keeps_an_earlier_one():
    units = [Unit(name="a", primary=IN), Unit(name="b", primary=IN, precondition="own")]
    assert claims.flagged(units, None) == units
    out = claims.flagged(units, "stand-in precision: crosses")
    assert [u.precondition for u in out] == ["stand-in precision: crosses", "own"]
    assert decide(_decl(), out[:1]).verdict is Verdict.NOT_TESTABLE
