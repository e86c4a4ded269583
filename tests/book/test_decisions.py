"""book/decisions.md ("How the verdicts are decided") is rendered from the declarations."""

from layerlab.book import decisions, outputs


def test_the_committed_page_equals_a_fresh_rendering():
    assert outputs.same(decisions.render(), decisions.page_path().read_text(encoding="utf-8")), (
        "book/decisions.md is stale: regenerate it with `python -m layerlab.book.decisions`")


def test_the_page_shows_every_declaration_with_its_band_reason_and_is_in_the_toc():
    from layerlab import paths

    page = decisions.render()
    for d in decisions.declarations():
        assert f"#### {d.id}" in page and decisions._cell(d.band.reason) in page
    assert "file: decisions" in (paths.REPO_ROOT / "_toc.yml").read_text(encoding="utf-8")
