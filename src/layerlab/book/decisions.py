"""The page "How the verdicts are decided" (`book/decisions.md`), rendered from the claim
declarations of both wings (`layerlab.depth.declarations`, `layerlab.anatomy.declarations`):
per claim the paper's words, the kind, the primary statistic and its unit, the band and why, the
precondition, the control, the secondaries, the scope and the finding.

Nothing on it is typed: `python -m layerlab.book.decisions` rewrites it and a test checks the
committed page equals a fresh rendering. It reads no result, so it says what was declared, not
what was found.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from layerlab import paths
from layerlab.claims import Declaration

__all__ = ["declarations", "render", "page_path", "main"]

HEADER = """# How the verdicts are decided

Every claim of both papers is declared in one place, its band derived from the paper's words by
the rules below (the bands fixed after their data had been seen are named, with the reason, on
the deviations page), and every verdict in the
book — chapters 01–10, the verdict chapter and `layerlab report` — is made by one function,
`layerlab.claims.decide`, from that declaration and the measured evidence. This page is rendered
from the declarations themselves (`python -m layerlab.book.decisions`; a test checks it matches
the code), so what it says is what the code does.

## The procedure

For each unit in a claim's scope (a model, an evaluation set, a grid of seeds), in order:

1. **Precondition.** If what the test needs does not hold (training converged, the family shows
   what depth buys beyond seed noise over the members the statistic uses, the stand-in's own
   rounding does not carry the statistic across the band's edge, the measurement made at all),
   the unit is *not testable at this budget*, naming the precondition. A precondition on a kind
   of unit holds for every claim that uses that kind.
2. **Primary against band.** The primary statistic's 95 % interval, resampled over the
   independent unit, is compared with the band derived from the paper's words: inside →
   pass; disjoint → fail. A number the paper states with an uncertainty and we refit on the
   same data is compared as estimates: ours inside the paper's value ± its uncertainty and the
   paper's value inside our interval → pass; our interval wholly outside → fail. An interval
   straddling an edge decides nothing, but never hides the claim's decided parts: if its other
   stated parts are decided, all passing → *partly reproduced*, some failing → *partly
   reproduced* naming both, all failing → *not reproduced*; only when nothing is decided is the
   unit *not testable at this budget*.
3. **Control.** A claim that something is present whose *negative* control (an untrained twin,
   a shuffled or i.i.d. null) passes the same band too is *not diagnostic*. A claim that
   something is absent whose *positive* control (a system known to have the property) is not
   detected by the same band is *not testable at this budget*: the measure cannot see it.
4. **Secondaries.** A passing primary with every other stated part in its own band is
   *reproduced*; with any part failing or undecided, *partly reproduced*, naming it. A failing
   primary is *not reproduced*, its secondaries still shown.

Across units: all agree → that verdict; a unit that could not be tested carries no evidence and
never outweighs a decided one (it stays listed, and decided units that all reproduce then give
*partly reproduced*: the scope was not all tested); among the decided units, reproduced or partly
mixed with not reproduced → *partly reproduced*, naming the units; otherwise the most common
verdict (a tie goes to the one that says least), the units listed. Units are independent evidence only when they are: the
members of the depth family trained here are one unit, their spread its interval. A finding's
verdict never upgrades its claims by majority: claims that disagree give *partly reproduced*
when any holds, *not reproduced* when none holds and one fails, else *not testable*. No other
way of combining evidence exists in the code.

Bands come from the paper's words (a stated uncertainty is the paper's own interval; a number
measured on the same data agrees to the precision printed; a number measured on a stand-in keeps
its sign and order of magnitude; a contrast ends halfway to the alternative the paper argues
against; a shape's threshold is its negative control's range), never from our data. Claims
computed from the same experiment share a *finding*, and the verdict chapter counts findings as
well as claims.
"""


def declarations() -> list[Declaration]:
    """Every declared claim of both papers, ordered by paper and id."""
    from layerlab.anatomy.declarations import DECLARATIONS as P2
    from layerlab.depth.declarations import DECLARATIONS as P1

    return sorted([*P1.values(), *P2.values()], key=lambda d: (d.paper, d.id))


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def _claim(d: Declaration) -> str:
    rows = [("the paper's words", f"{d.source} ({d.source_from})"),
            ("paper reported", d.paper_value), ("kind", str(d.kind)),
            ("primary statistic", f"{d.primary}; 95 % interval over {d.unit}"),
            ("band", f"{d.band.text()}: {d.band.reason}"),
            ("precondition", d.precondition), ("control", d.control or "none (a number)")]
    rows += [(f"secondary: {s.name}", f"{s.statistic} in {s.band.text()}: {s.band.reason}")
             for s in d.secondary]
    rows += [("scope (units)", d.scope)]
    table = "\n".join(f"| {k} | {_cell(v)} |" for k, v in rows)
    return (f"#### {d.id}\n\n{d.statement} — chapter [{d.chapter}](notebooks/{d.chapter}.ipynb)\n\n"
            f"| | |\n|---|---|\n{table}\n")


def render() -> str:
    """The page, from the declarations alone."""
    decls = declarations()
    summary_only = [d.id for d in decls if d.from_summary]
    out = [HEADER]
    for paper_id in ("P1", "P2"):
        mine = [d for d in decls if d.paper == paper_id]
        findings: dict[str, list[Declaration]] = defaultdict(list)
        for d in mine:
            findings[d.finding].append(d)
        kinds = {k: sum(str(d.kind) == k for d in mine) for k in ("presence", "absence", "number")}
        out.append(f"## {paper_id}: {len(mine)} claims in {len(findings)} findings\n\n"
                   + ", ".join(f"{n} {k}" for k, n in kinds.items()) + " claims.\n")
        for finding, ds in findings.items():
            out.append(f"### {finding}\n")
            out += [_claim(d) for d in ds]
    from layerlab.book.verdicts import SPEC_CLAIMS

    pending = sorted(set(SPEC_CLAIMS) - {d.id for d in decls})
    if pending:
        out.append("## Claims not yet declared\n\nThese claims are still decided by their "
                   "chapter's own rules, stated in the chapter, while they move to this "
                   "procedure: " + ", ".join(pending) + ".\n")
    out.append("## Claims resting on a secondary summary alone\n\n"
               + (f"{len(summary_only)} of {len(decls)} claims quote only a secondary summary "
                  "of the paper, not its own text; the verdict chapter counts them apart: "
                  + ", ".join(summary_only) + "." if summary_only
                  else "None: every claim quotes the paper's own text.") + "\n")
    return "\n".join(out)


def page_path() -> Path:
    return paths.REPO_ROOT / "book" / "decisions.md"


def main(argv: list[str] | None = None) -> int:
    page_path().write_text(render(), encoding="utf-8")
    print(f"wrote {page_path()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
