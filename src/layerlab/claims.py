"""The claims register and the one decision procedure (`../shared/VERDICTS.md`).

Each claim is *declared* before any number is read (`Declaration`: the paper's words, kind,
primary statistic and its resampling unit, band and why, precondition, control, secondaries,
scope, finding) in one module per wing (`layerlab.depth.declarations`,
`layerlab.anatomy.declarations`). A chapter measures the evidence per unit (`Unit`) and
`decide` turns declaration and evidence into a verdict and the step that decided it; `make`
builds the `Claim` that is registered and shown. Chapters register claims as they measure them;
the verdict chapter reads them all back.

Stored through the results cache (`results/<profile>/claims/<id>-<hash>.json`), with provenance.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, Mapping, Sequence

from layerlab import results

__all__ = ["Verdict", "Kind", "Band", "Secondary", "Declaration", "index", "Estimate", "Unit", "Decision",
           "decide", "across", "finding", "flagged", "stand_in_threat", "make", "Claim", "register", "record", "collect", "table", "VERDICTS",
           "REPRODUCED", "PARTLY", "NOT_REPRODUCED", "NOT_TESTABLE", "NOT_DIAGNOSTIC"]


class Verdict(StrEnum):
    """The verdict vocabulary; a `str`, so records and tables hold the plain words."""

    REPRODUCED = "reproduced"
    PARTLY = "partly reproduced"
    NOT_REPRODUCED = "not reproduced"
    NOT_TESTABLE = "not testable at this budget"  # censored, unconverged or underpowered evidence
    NOT_DIAGNOSTIC = "not diagnostic"  # the negative control passes the same rule


# one colour per verdict, everywhere in the book (charts, tables, callouts)
VERDICT_COLOURS: dict[str, str] = {
    "reproduced": "#59a14f", "partly reproduced": "#edc948", "not reproduced": "#e15759",
    "not testable at this budget": "#bab0ac", "not diagnostic": "#76b7b2"}

REPRODUCED = Verdict.REPRODUCED
PARTLY = Verdict.PARTLY
NOT_REPRODUCED = Verdict.NOT_REPRODUCED
NOT_TESTABLE = Verdict.NOT_TESTABLE
NOT_DIAGNOSTIC = Verdict.NOT_DIAGNOSTIC
VERDICTS = tuple(Verdict)


class Kind(StrEnum):
    """What a claim asserts: that a signature exists, that something does not happen, or a
    number. Decides which control matters (`decide` step 3)."""

    PRESENCE = "presence"
    ABSENCE = "absence"
    NUMBER = "number"


@dataclass(frozen=True, kw_only=True)
class Band:
    """Where the primary statistic must fall, derived from the paper's words (VERDICTS.md §3),
    never from our data; `reason` says how in one sentence.

    With `paper` set the band is a number with a stated uncertainty, `paper` ± its stated
    uncertainty as [lo, hi], and `test` compares estimates, not intervals (VERDICTS.md §3 [rev]):
    pass when our point lies in [lo, hi] and `paper` lies in our 95 % interval, fail when our
    interval lies wholly outside [lo, hi]. Requiring our interval inside theirs could never pass
    on the same data with the same spread."""

    lo: float = -math.inf
    hi: float = math.inf
    reason: str
    paper: float | None = None

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("a band needs its reason (VERDICTS.md §3)")
        if not self.lo < self.hi:
            raise ValueError(f"a band needs lo < hi, got [{self.lo}, {self.hi}]")
        if self.paper is not None and not self.lo <= self.paper <= self.hi:
            raise ValueError(f"the paper's value {self.paper} lies outside its own stated "
                             f"interval [{self.lo}, {self.hi}]")

    def test(self, est: "Estimate") -> str:
        """'pass' (interval inside), 'fail' (disjoint) or 'undecided' (it straddles an edge or
        is NaN). An infinite end is allowed: a censored interval such as [320, ∞) steps can
        still pass a one-sided band. With `paper` set: the estimates' comparison above."""
        lo, hi = est.lo, est.hi
        if math.isnan(lo) or math.isnan(hi) or lo > hi:
            return "undecided"
        if hi < self.lo or lo > self.hi:
            return "fail"
        if self.paper is not None:
            agree = self.lo <= est.point <= self.hi and lo <= self.paper <= hi
            return "pass" if agree else "undecided"
        if self.lo <= lo and hi <= self.hi:
            return "pass"
        return "undecided"

    def text(self, fmt: str = "g") -> str:
        if self.paper is not None:
            return (f"our estimate in the paper's {self.paper:{fmt}} ± "
                    f"{(self.hi - self.lo) / 2:{fmt}} and {self.paper:{fmt}} in our 95 % interval")
        if math.isinf(self.lo):
            return f"≤ {self.hi:{fmt}}"
        if math.isinf(self.hi):
            return f"≥ {self.lo:{fmt}}"
        return f"[{self.lo:{fmt}}, {self.hi:{fmt}}]"


@dataclass(frozen=True, kw_only=True)
class Secondary:
    """One of a claim's other stated parts, with its own band."""

    name: str
    statistic: str
    band: Band


@dataclass(frozen=True, kw_only=True)
class Declaration:
    """A claim as declared before its numbers are read (VERDICTS.md §1)."""

    id: str
    paper: str  # "P1" or "P2"
    chapter: str  # notebook stem
    statement: str  # the claim in our words
    source: str  # the paper's words, quoted
    source_from: str  # where the quote comes from: "abstract", "§4.2", "secondary summary", …
    paper_value: str  # as the paper reports it
    kind: Kind
    primary: str  # the one statistic that carries the claim
    unit: str  # its resampling unit (documents, seeds, model shapes, …)
    band: Band
    precondition: str  # what must hold for the test to have power
    control: str  # presence: a negative control; absence: a positive one; number: may be ""
    scope: str  # where the paper says it holds; each model or set in it is one unit
    finding: str  # the independent piece of evidence it belongs to (shared within an experiment)
    secondary: tuple[Secondary, ...] = ()

    def __post_init__(self) -> None:
        if self.paper not in ("P1", "P2"):
            raise ValueError(f"paper must be 'P1' or 'P2', got {self.paper!r}")
        if not self.id.startswith(self.paper):
            raise ValueError(f"{self.id}: its id must start with its paper {self.paper}")
        object.__setattr__(self, "kind", Kind(self.kind))
        for name in ("statement", "source", "source_from", "primary", "unit", "precondition",
                     "scope", "finding"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"{self.id}: {name} is empty")
        if self.kind is not Kind.NUMBER and not self.control.strip():
            raise ValueError(f"{self.id}: a {self.kind} claim needs its control (VERDICTS.md §1)")
        if len({s.name for s in self.secondary}) != len(self.secondary):
            raise ValueError(f"{self.id}: secondary names repeat")

    @property
    def from_summary(self) -> bool:
        """The quote comes only from a secondary summary, not the paper's own text."""
        return "summary" in self.source_from.lower()


def index(declarations: Sequence[Declaration]) -> dict[str, Declaration]:
    """A wing's declarations by id; an id declared twice is an error, not a silent overwrite."""
    out: dict[str, Declaration] = {}
    for d in declarations:
        if d.id in out:
            raise ValueError(f"{d.id} declared twice")
        out[d.id] = d
    return out


@dataclass(frozen=True)
class Estimate:
    """A statistic with its 95 % interval."""

    point: float
    lo: float
    hi: float

    @classmethod
    def exact(cls, value: float) -> "Estimate":
        """A number with no sampling error (a count, a fit on the paper's own data)."""
        return cls(value, value, value)


@dataclass(frozen=True, kw_only=True)
class Unit:
    """The evidence of one unit in a claim's scope (a model, an evaluation set, a seed grid).

    `primary` is None when it could not be measured; `precondition` names a failed precondition;
    `control` is the control's primary through the same band (negative for presence claims,
    positive for absence claims); `secondary` maps each declared secondary to its estimate."""

    name: str
    primary: Estimate | None
    precondition: str | None = None
    control: Estimate | None = None
    secondary: Mapping[str, Estimate] = field(default_factory=dict)
    # why a secondary is left undecided although measured (e.g. the stand-in's precision)
    undecided: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    decided_by: str  # the step of VERDICTS.md §2 that decided it, in words
    units: dict[str, tuple[Verdict, str]]  # per unit: its verdict and deciding step


def _secondaries(decl: Declaration, unit: Unit) -> dict[str, str]:
    """Each declared secondary's outcome on the unit: 'pass', 'fail' or 'undecided' (not
    measured counts as undecided)."""
    out = {}
    for sec in decl.secondary:
        est = unit.secondary.get(sec.name)
        out[sec.name] = ("undecided" if est is None or sec.name in unit.undecided
                         else sec.band.test(est))
    return out


def _why(unit: Unit, names: list[str]) -> list[str]:
    return [f"{n} ({unit.undecided[n]})" if n in unit.undecided else n for n in names]


def _named(parts: Mapping[str, str], state: str) -> list[str]:
    return [name for name, s in parts.items() if s == state]


UNDECIDED_PRIMARY = "primary: the interval straddles the band's edge"


def _undecided_primary(parts: Mapping[str, str]) -> tuple[Verdict, str]:
    """VERDICTS.md §2 [rev]: an undecided primary never hides the claim's decided parts. All
    decided parts pass → partly; some pass and some fail → partly, naming both; every decided
    part fails → not reproduced; nothing decided → not testable."""
    passing, failing = _named(parts, "pass"), _named(parts, "fail")
    if not passing and not failing:
        return NOT_TESTABLE, UNDECIDED_PRIMARY
    said = "; ".join(p for p in (
        "decided parts pass: " + ", ".join(passing) if passing else "",
        "decided parts fail: " + ", ".join(failing) if failing else "") if p)
    verdict = PARTLY if passing else NOT_REPRODUCED
    return verdict, f"{UNDECIDED_PRIMARY}; {said}"


def _decide_unit(decl: Declaration, unit: Unit) -> tuple[Verdict, str]:
    # 1. precondition
    if unit.precondition:
        return NOT_TESTABLE, f"precondition: {unit.precondition}"
    if unit.primary is None:
        return NOT_TESTABLE, "precondition: the primary statistic could not be measured"
    parts = _secondaries(decl, unit)
    # 2. primary against band
    outcome = decl.band.test(unit.primary)
    if outcome == "undecided":
        return _undecided_primary(parts)
    # 3. control
    if outcome == "pass" and decl.kind is not Kind.NUMBER:
        if unit.control is None:
            return NOT_TESTABLE, "control: not measured"
        control = decl.band.test(unit.control)
        if decl.kind is Kind.PRESENCE and control == "pass":
            return NOT_DIAGNOSTIC, "control: the negative control passes too"
        if decl.kind is Kind.ABSENCE and control != "fail":
            return NOT_TESTABLE, "control: the measure cannot see the property (positive control)"
    # 4. secondaries
    failing, open_ = _named(parts, "fail"), _named(parts, "undecided")
    if outcome == "fail":
        return NOT_REPRODUCED, "primary: the interval lies outside the band"
    if failing:
        return PARTLY, "secondary fails: " + ", ".join(failing)
    if open_:
        return PARTLY, "secondary not decided: " + ", ".join(_why(unit, open_))
    return REPRODUCED, "primary and every secondary pass"


def decide(decl: Declaration, units: Sequence[Unit]) -> Decision:
    """The one decision procedure of VERDICTS.md §2, per unit and across units.

    Per unit: a failed precondition → not testable; the primary's interval against the band
    (inside → pass, disjoint → fail, straddling → not testable); the control (presence: a
    negative control that passes too → not diagnostic; absence: a positive control the rule does
    not detect → not testable); then the secondaries (all pass → reproduced, any failing or
    undecided → partly; a failing primary → not reproduced). Across units: unanimous → that
    verdict; reproduced or partly mixed with not reproduced → partly, naming the units;
    otherwise the most common verdict (ties to the more cautious), units listed."""
    if not units:
        raise ValueError(f"{decl.id}: no units to decide")
    names = [u.name for u in units]
    if len(set(names)) != len(names):
        raise ValueError(f"{decl.id}: unit names repeat: {names}")
    per = {u.name: _decide_unit(decl, u) for u in units}
    verdict, step = across({n: v for n, (v, _) in per.items()})
    if step is None:  # unanimous
        step = next(iter(per.values()))[1] if len(per) == 1 else "every unit: " + ", ".join(
            sorted({s for _, s in per.values()}))
    return Decision(verdict, step, per)


def across(verdicts: Mapping[str, str]) -> tuple[Verdict, str | None]:
    """The cross-unit rule of VERDICTS.md §2: unanimous → that verdict (step None); units not
    testable beside decided ones are set aside (listed, never outweighing a decided unit; the
    decided ones reproducing then gives partly: the scope was not all tested);
    among the rest, reproduced or partly mixed with not reproduced → partly, naming the units;
    otherwise the most common verdict (a tie goes to the one that says least), the units
    listed."""
    if not verdicts:
        raise ValueError("no verdicts to combine")
    vs = [Verdict(v) for v in verdicts.values()]
    if len(set(vs)) == 1:
        return vs[0], None
    listed = "; ".join(f"{n}: {v}" for n, v in verdicts.items())
    # an undecided unit carries no evidence: it never outweighs a decided one (VERDICTS.md §2
    # [rev], as an undecided primary never hides a claim's decided parts); it stays listed
    decided = {n: v for n, v in verdicts.items() if Verdict(v) is not NOT_TESTABLE}
    if decided and len(decided) < len(verdicts):
        verdict, _ = across(decided)
        # reproduced where it could be tested is not reproduced over the whole scope
        return (PARTLY if verdict is REPRODUCED else verdict,
                f"across the decided units ({listed})")
    if NOT_REPRODUCED in vs and (REPRODUCED in vs or PARTLY in vs):
        return PARTLY, f"across units, mixed ({listed})"
    counts = Counter(vs)
    top = max(counts.values())
    caution = [NOT_TESTABLE, NOT_DIAGNOSTIC, NOT_REPRODUCED, PARTLY, REPRODUCED]
    return (next(v for v in caution if counts.get(v) == top),
            f"across units, most common ({listed})")


def finding(verdicts: Mapping[str, str]) -> tuple[Verdict, str | None]:
    """A finding's verdict from its claims' (VERDICTS.md §2 [rev]): never an upgrade by
    majority. Unanimous → that verdict (step None); mixed with any claim reproduced or partly
    reproduced → partly reproduced; mixed with none of those but a claim not reproduced → not
    reproduced (nothing of the finding holds, and a decided part fails); otherwise (not
    testable beside not diagnostic) → not testable. Each claim's verdict is listed."""
    if not verdicts:
        raise ValueError("no verdicts to combine")
    vs = {Verdict(v) for v in verdicts.values()}
    if len(vs) == 1:
        return next(iter(vs)), None
    listed = "; ".join(f"{n}: {v}" for n, v in verdicts.items())
    if vs & {REPRODUCED, PARTLY}:
        return PARTLY, f"claims mixed ({listed})"
    if NOT_REPRODUCED in vs:
        return NOT_REPRODUCED, f"claims mixed, none holds ({listed})"
    return NOT_TESTABLE, f"claims mixed, none decided ({listed})"


def flagged(units: Sequence[Unit], note: str | None) -> list[Unit]:
    """`units` with `note` as their failed precondition (a unit already failing one keeps its
    own); unchanged when `note` is None. For a check made outside the units, e.g. the stand-in's
    precision (VERDICTS.md §4)."""
    return [replace(u, precondition=u.precondition or note) if note else u for u in units]


def stand_in_threat(band: Band, stand_in: Estimate | None,
                    copies: Mapping[str, Estimate | None]) -> list[str]:
    """VERDICTS.md §4 [rev], directional: the copies whose statistic lands on the other side of
    the band's edge from the stand-in's, or whose interval then straddles it (their band
    outcome differs from the stand-in's). Movement away from the edge is no threat, and a
    stand-in already undecided has nothing to threaten. A copy not measured (None) is skipped."""
    if stand_in is None:
        return []
    own = band.test(stand_in)
    if own == "undecided":
        return []
    return [name for name, e in copies.items() if e is not None and band.test(e) != own]


def make(decl: Declaration, decision: Decision, *, ours: str, setting: str,
         numbers: dict[str, Any] | None = None) -> "Claim":
    """The registered claim: the declaration, our measurement in words and the decision."""
    return Claim(
        id=decl.id, paper=decl.paper, chapter=decl.chapter, statement=decl.statement,
        paper_value=decl.paper_value, ours=ours, rule=rule_text(decl),
        verdict=decision.verdict, setting=setting, numbers=dict(numbers or {}),
        decided_by=decision.decided_by, source=decl.source, source_from=decl.source_from,
        kind=str(decl.kind), primary=decl.primary, unit=decl.unit, band=decl.band.text(),
        band_reason=decl.band.reason, precondition=decl.precondition, control=decl.control,
        secondary=[f"{s.name}: {s.statistic} in {s.band.text()}" for s in decl.secondary],
        scope=decl.scope, finding=decl.finding,
        units={n: {"verdict": str(v), "decided_by": s} for n, (v, s) in decision.units.items()})


def rule_text(decl: Declaration) -> str:
    """The band, secondaries and control of a declaration, in words."""
    parts = [f"{decl.primary} (95 % interval over {decl.unit}) in {decl.band.text()}"]
    parts += [f"{s.statistic} in {s.band.text()}" for s in decl.secondary]
    if decl.control:
        parts.append(f"control: {decl.control}")
    return "; ".join(parts)


@dataclass(kw_only=True)
class Claim:
    """A decided claim as registered and shown: built by `make` from its declaration and
    decision (the fields after `numbers` are the declaration's, stored with every record).
    Keyword-only: no field can be filled by position."""

    id: str  # e.g. "P1-C2-alpha-l-paper-recipe"
    paper: str  # "P1" or "P2"
    chapter: str  # notebook stem
    statement: str  # the claim in words
    paper_value: str  # as the paper (or its code) reports it
    ours: str  # our measurement, formatted
    rule: str  # the band and control, in words
    verdict: str
    setting: str  # model / data / profile it was measured on
    numbers: dict[str, Any] = field(default_factory=dict)
    decided_by: str = ""  # the step of VERDICTS.md §2 that decided it
    source: str = ""
    source_from: str = ""
    kind: str = ""
    primary: str = ""
    unit: str = ""
    band: str = ""
    band_reason: str = ""
    precondition: str = ""
    control: str = ""
    secondary: list[str] = field(default_factory=list)
    scope: str = ""
    finding: str = ""
    units: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        self.verdict = str(Verdict(self.verdict))
        if self.paper not in ("P1", "P2"):
            raise ValueError(f"paper must be 'P1' or 'P2', got {self.paper!r}")


def register(claim: Claim, profile: str, cache: results.Cache | None = None) -> Claim:
    cache = cache or results.Cache(profile)
    cache.put("claims", {"id": claim.id}, asdict(claim), item=claim.id)
    return claim


def record(found: list[Claim], profile: str, cache: results.Cache | None = None) -> "ChapterVerdicts":
    """Register every claim of a chapter and return them as its display table. In a notebook it
    also glues the chapter's "Finding" callout (`finding_html`) under the name `finding`, which
    the chapter shows under its claim, at the top of the page."""
    for claim in found:
        register(claim, profile, cache)
    _glue("finding", finding_html(found))
    return ChapterVerdicts(found)


def badge(verdict: str) -> str:
    """A verdict as a coloured label (HTML)."""
    import html

    colour = VERDICT_COLOURS.get(str(verdict), "#bab0ac")
    return f'<span class="ll-verdict" style="background:{colour}">{html.escape(str(verdict))}</span>'


def brief(text: str, limit: int = 180) -> str:
    """`text` cut at a word boundary before `limit` characters, marked with " …" when cut."""
    text = str(text)
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def details_html(ours: str, rule: str, decided_by: str, *more: tuple[str, str]) -> str:
    """The toggle under a verdict label: ours in full, the band and control, the deciding step,
    then any (label, already escaped HTML) pairs."""
    import html

    parts = [("ours", html.escape(str(ours))), ("band and control", html.escape(str(rule))),
             ("decided by", html.escape(str(decided_by))), *more]
    return ("<details><summary>details</summary>"
            + "".join(f"<p><em>{label}</em>: {text}</p>" for label, text in parts) + "</details>")


# the deciding step (VERDICTS.md §2) in a reader's words, for the chapter's Finding callout
_PLAIN = (
    ("primary and every secondary pass", "our 95 % interval lies inside the paper's band, and "
                                         "every other stated part holds"),
    ("primary: the interval lies outside the band", "our 95 % interval lies outside the band "
                                                    "the paper's words allow"),
    ("primary: the interval straddles the band's edge", "our 95 % interval straddles the band's "
                                                        "edge: these data cannot decide it"),
    ("control: the negative control passes too", "an untrained or structure-free control shows "
                                                 "the same, so it says nothing about training"),
    ("secondary fails:", "the main number holds but another stated part fails:"),
    ("precondition:", "could not be tested:"),
    ("across units, mixed", "the units disagree (see the table)"),
    ("across the decided units", "decided by the units that could be tested; the others could "
                                 "not (see the table)"),
    ("across units, most common", "the units differ; most give this verdict (see the table)"),
)


def _first_sentence(text: str) -> str:
    """The deciding step in words, without its parenthesised detail (kept in the table)."""
    text = str(text).split(" (")[0].rstrip(".").removeprefix("every unit: ")
    for step, words in _PLAIN:
        if text.startswith(step):
            return words + text[len(step):]
    return text


def finding_html(found: list[Claim]) -> str:
    """The chapter's answer: each claim's coloured verdict and the step that decided it, each
    linking to its line on the page "What we found"."""
    import html

    items = "".join(
        f'<li>{badge(c.verdict)} <a href="13_what_we_found.html#{html.escape(c.id)}">'
        f"{html.escape(c.statement)}</a> — {html.escape(_first_sentence(c.decided_by))}.</li>"
        for c in found)
    return (f'<div class="admonition ll-finding-callout"><p class="admonition-title">Finding</p>'
            f"<ul>{items}</ul></div>")


def _glue(name: str, html_text: str) -> None:
    """Glue HTML for the page (myst-nb) when running in a notebook; a no-op elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML
        from myst_nb import glue
    except ImportError:  # outside the book's environment (a plain script, Colab without myst-nb)
        return
    if get_ipython() is not None:
        glue(name, HTML(html_text), display=False)


class ChapterVerdicts(list):
    """A chapter's claims; shown as a compact table (claim, paper reported, ours, verdict) whose
    band, control and deciding step open on a click."""

    def _repr_html_(self) -> str:
        import html

        rows = []
        for c in self:
            rows.append(
                f"<tr><td><strong>{html.escape(c.id)}</strong><br>{html.escape(c.statement)}</td>"
                f"<td>{html.escape(str(c.paper_value))}</td>"
                f"<td>{html.escape(brief(c.ours))}</td>"
                f"<td>{badge(c.verdict)}{details_html(c.ours, c.rule, c.decided_by)}</td></tr>")
        return ('<div class="ll-scroll"><table class="ll-chapter-verdicts"><thead><tr>'
                "<th>claim</th><th>paper reported</th><th>ours</th><th>verdict</th></tr></thead>"
                "<tbody>"
                + "".join(rows) + "</tbody></table></div>")

    def to_frame(self):
        return table(list(self))


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
    """The claims of one chapter as a display table, one row per claim id, with the step of the
    decision procedure that decided each."""
    import pandas as pd

    return pd.DataFrame([{"claim": c.id, "statement": c.statement,
                          "paper reported": c.paper_value, "ours": c.ours,
                          "band and control": c.rule, "verdict": str(c.verdict),
                          "decided by": c.decided_by} for c in claims]).set_index("claim")
