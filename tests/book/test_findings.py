"""The page "What we found" and the intro's answer: computed from the claims register, never
typed; a finding whose evidence does not hold is not shown."""

from __future__ import annotations

import pandas as pd

from layerlab import claims
from layerlab.book import findings, outputs


def _register(verdicts: dict[str, str]) -> pd.DataFrame:
    rows = []
    for i, (cid, v) in enumerate(verdicts.items()):
        rows.append({"id": cid, "paper": cid[:2], "chapter": "05_importance_map",
                     "statement": f"claim {i}", "paper_value": "1", "ours": "2", "rule": "r",
                     "verdict": v, "setting": "s", "decided_by": "primary: the interval straddles",
                     "finding": f"{cid[:2]}-F{i % 2}", "source_from": "abstract",
                     "source": "cpu", "other": ""})
    return pd.DataFrame(rows)


def test_tally_counts_claims_and_findings_per_paper():
    t = _register({"P1-a": "reproduced", "P1-b": "not reproduced", "P1-c": "reproduced",
                   "P2-a": "not testable at this budget"})
    tl = findings.tally(t).set_index(["paper", "counted"])
    assert tl.loc[("P1", "claims"), "total"] == 3 and tl.loc[("P1", "claims"), "reproduced"] == 2
    # P1-a and P1-c share finding P1-F0 (both reproduced); P1-b is P1-F1 alone
    assert tl.loc[("P1", "findings"), "total"] == 2
    assert tl.loc[("P2", "claims"), "not testable at this budget"] == 1
    html = findings.tally_html(t)
    assert all(claims.VERDICT_COLOURS[str(v)] in html for v in claims.VERDICTS)


def test_answer_sentences_follow_the_register():
    """Findings in words, re-run kept apart from replicated, the stand-in's distance in the line
    of every finding measured on it (VERDICTS.md §5 [rev])."""
    t = _register({"P1-a": "reproduced", "P2-a": "not reproduced", "P2-b": "not reproduced"})
    t.loc[t["id"] == "P1-a", "finding"] = "P1-C recipe re-run"
    t.loc[t["id"] == "P2-b", "setting"] = "smollm2-135m-instruct-q4"
    lines = findings.answer_sentences(t, "4-bit stand-in: E0 perplexity 35.7")
    p1, p2 = lines[0], lines[1]
    assert "Re-run" in p1 and "recipe re-run" in p1 and "Replicated (" not in p1
    assert "Not replicated" in p2 and "†" in p2 and "E0 perplexity 35.7" in p2
    assert "E0 perplexity" not in p1  # no P1 finding was measured on the stand-in
    t3 = t.assign(verdict="partly reproduced", finding=["P1-C depth exponent", "P2-F0", "P2-F1"])
    assert "Reanalysed, agreeing in part: depth exponent" in findings.answer_sentences(t3)[0]
    t2 = t.assign(verdict="reproduced", finding=["P1-F0", "P2-F0", "P2-F1"])
    text = " ".join(findings.answer_sentences(t2))
    assert "Replicated (" in text and "Re-run" not in text


def test_a_finding_is_shown_only_when_its_evidence_holds():
    uncorrelated = {"element-wise": {k: {"real": -0.5, "i.i.d. Gaussian, matched std": -0.5,
                                         "shuffled order": -0.5} for k in ("q", "k")},
                    "positive controls": {"random walk": 0.0, "smooth drift": 0.8}}
    f = findings._delta_null({"P2-C3-oscillation": uncorrelated})
    assert f is not None and "0.000" in f.evidence[0] and f.chart is not None
    oscillating = {"element-wise": {k: {"real": -0.9, "i.i.d. Gaussian, matched std": -0.5}
                                    for k in ("q", "k")}}
    assert findings._delta_null({"P2-C3-oscillation": oscillating}) is None
    assert findings._delta_null({}) is None
    bulk = {"by_context": {str(T): {"bulk": 1 - 1 / T, "one_minus_1_over_T": 1 - 1 / T,
                                    "minority_position0_share": 1.0} for T in (64, 256)},
            "minority_position0_share": 0.95}
    assert findings._bulk_context({"P1-B1-bulk-fraction": bulk}) is not None
    bulk["by_context"]["64"]["bulk"] = 0.5  # far from 1 - 1/T: no longer the finding
    assert findings._bulk_context({"P1-B1-bulk-fraction": bulk}) is None


def test_chapter_finding_callout_names_each_claims_verdict_and_link():
    c = claims.Claim(id="P2-x", paper="P2", chapter="05_importance_map", statement="a claim",
                     paper_value="1", ours="2", rule="r", verdict=claims.NOT_REPRODUCED,
                     setting="s", decided_by="primary: the interval lies outside the band (E0)")
    html = claims.finding_html([c])
    assert "13_what_we_found.html#P2-x" in html and claims.VERDICT_COLOURS["not reproduced"] in html
    assert "our 95 % interval lies outside the band" in html and "(E0)" not in html
    precondition = claims._first_sentence("every unit: precondition: not converged: α 1 → 2")
    assert precondition == "could not be tested: not converged: α 1 → 2"
    shown = claims.ChapterVerdicts([c])._repr_html_()
    assert "<details>" in shown and "P2-x" in shown


def test_committed_answer_equals_a_fresh_rendering(monkeypatch):
    monkeypatch.delenv("LAYERLAB_RESULTS", raising=False)  # read the committed results
    monkeypatch.setenv("LAYERLAB_CACHE_ONLY", "1")
    committed = findings.answer_path().read_text(encoding="utf-8")
    assert outputs.same(findings.render_answer("cpu"), committed), (
        "book/_generated/answer.md is stale: regenerate it with "
        "`python -m layerlab.book.findings`")
