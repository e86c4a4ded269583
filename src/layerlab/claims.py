"""The claims register: each paper claim with the paper's number, ours, the tolerance, and the
verdict the tolerance gives. Chapters register claims as they measure them; the verdict chapter
reads them all back. Verdicts are computed by `judge`, never typed.

Stored through the results cache (`results/<profile>/claims/<id>-<hash>.json`), with provenance.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from layerlab import results

REPRODUCED = "reproduced"
PARTLY = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_TESTABLE = "not testable at this budget"  # censored, unconverged or underpowered evidence
NOT_DIAGNOSTIC = "not diagnostic"  # an untrained model of the same config shows it as well
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE, NOT_DIAGNOSTIC)


@dataclass
class Claim:
    id: str  # e.g. "P1-C-alpha-l-paper-recipe"
    paper: str  # "P1" or "P2"
    chapter: str  # notebook stem
    statement: str  # the claim in words
    paper_value: str  # as the paper (or its code) reports it
    ours: str  # our measurement, formatted
    rule: str  # the tolerance, in words
    verdict: str
    setting: str  # model / data / profile it was measured on
    numbers: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.paper not in ("P1", "P2"):
            raise ValueError(f"paper must be 'P1' or 'P2', got {self.paper!r}")


def judge(checks: dict[str, bool], *, partial_ok: bool = True) -> str:
    """All checks pass → reproduced; some → partly (if allowed); none → not reproduced."""
    if not checks:
        raise ValueError("a verdict needs at least one check")
    passed = sum(bool(v) for v in checks.values())
    if passed == len(checks):
        return REPRODUCED
    if passed and partial_ok:
        return PARTLY
    return NOT_REPRODUCED


def within(value: float, target: float, tol: float) -> bool:
    return abs(value - target) <= tol


def equivalence(point: float, lo: float, hi: float, target: float, margin: float) -> str:
    """An equivalence test against the band target ± margin: reproduced when the whole interval
    lies inside the band, partly when only the point estimate does, not reproduced when the
    interval misses the band altogether, and not testable when the point lies outside but the
    interval still reaches the band (the data can neither confirm nor reject)."""
    import math

    if not all(math.isfinite(v) for v in (point, lo, hi)):
        return NOT_TESTABLE
    band_lo, band_hi = target - margin, target + margin
    if band_lo <= lo and hi <= band_hi:
        return REPRODUCED
    if band_lo <= point <= band_hi:
        return PARTLY
    if hi < band_lo or lo > band_hi:
        return NOT_REPRODUCED
    return NOT_TESTABLE


def interval_excludes(lo: float, hi: float, value: float) -> bool:
    return not lo <= value <= hi


def against_control(trained: str, control: str, diff_lo: float, diff_hi: float) -> str:
    """The verdict of a signature once its untrained control is known.

    `trained` and `control` are the same rule applied to the trained model and to an untrained
    model of the same configuration; [diff_lo, diff_hi] is the interval of trained − untrained.
    A signature the untrained model shows as well (its verdict reproduced or partly), or one that
    training does not measurably change (the difference interval contains 0), says nothing about
    what training built: not diagnostic, whatever the trained value."""
    import math

    if trained in (NOT_TESTABLE, NOT_DIAGNOSTIC):
        return trained
    if control in (REPRODUCED, PARTLY):
        return NOT_DIAGNOSTIC
    if math.isfinite(diff_lo) and math.isfinite(diff_hi) and diff_lo <= 0 <= diff_hi:
        return NOT_DIAGNOSTIC
    return trained


def interval_rule(lo: float, hi: float, band_lo: float, band_hi: float) -> str:
    """A claimed band against a confidence interval, with no verdict from the point estimate:
    the interval inside the band → reproduced; disjoint from it → not reproduced; overlapping
    its edge (or not finite) → not testable at this budget."""
    import math

    if not (math.isfinite(lo) and math.isfinite(hi)):
        return NOT_TESTABLE
    if band_lo <= lo and hi <= band_hi:
        return REPRODUCED
    if hi < band_lo or lo > band_hi:
        return NOT_REPRODUCED
    return NOT_TESTABLE


def strict(verdicts: list[str]) -> str:
    """Every part of a claim must hold: all parts reproduced → reproduced; any part failing →
    not reproduced; otherwise (some part untestable) → not testable at this budget. Never
    "partly" because some of several checks passed."""
    if not verdicts:
        raise ValueError("no verdicts to combine")
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if NOT_REPRODUCED in verdicts or PARTLY in verdicts:
        return NOT_REPRODUCED
    return NOT_TESTABLE


def all_hold(checks: dict[str, bool]) -> str:
    """Checks that are each decided by the data (no interval left open): all → reproduced,
    otherwise not reproduced."""
    return judge(checks, partial_ok=False)


def combine(verdicts: list[str]) -> str:
    """One verdict from per-model verdicts: unanimous ones stand; any mixture with a reproduced
    model is partly reproduced; failures mixed with non-diagnostic models are not reproduced."""
    if not verdicts:
        raise ValueError("no verdicts to combine")
    if len(set(verdicts)) == 1:
        return verdicts[0]
    if REPRODUCED in verdicts or PARTLY in verdicts:
        return PARTLY
    if NOT_REPRODUCED in verdicts:
        return NOT_REPRODUCED
    return NOT_TESTABLE


def register(claim: Claim, profile: str, cache: results.Cache | None = None) -> Claim:
    cache = cache or results.Cache(profile)
    cache.put("claims", {"id": claim.id}, asdict(claim), item=claim.id)
    return claim


def record(found: list[Claim], profile: str, cache: results.Cache | None = None):
    """Register every claim of a chapter and return them as its display table."""
    for claim in found:
        register(claim, profile, cache)
    return table(found)


def collect(profile: str, cache: results.Cache | None = None):
    """Every registered claim of a profile, as a DataFrame sorted by paper and id."""
    import pandas as pd

    cache = cache or results.Cache(profile)
    folder = cache.folder / "claims"
    rows = []
    for path in sorted(folder.glob("*.json")):
        claim = cache.read_record(path)["value"]
        # only the record the current key points at (a schema bump leaves the old one behind)
        if path == cache.path("claims", {"id": claim["id"]}, item=claim["id"]):
            rows.append(claim)
    columns = [f.name for f in Claim.__dataclass_fields__.values()]
    return pd.DataFrame(rows, columns=columns).sort_values(["paper", "id"]).reset_index(drop=True)


def table(claims: list[Claim]):
    """The claims of one chapter as a display table."""
    import pandas as pd

    return pd.DataFrame([{"claim": c.statement, "paper reported": c.paper_value, "ours": c.ours,
                          "tolerance": c.rule, "verdict": c.verdict} for c in claims])
