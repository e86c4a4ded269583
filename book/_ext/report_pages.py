"""The full `layerlab report` pages in the site: every committed
`results/<profile>/reports/<model>/report.html` is copied to `_build/html/reports/<profile>/
<model>.html`, where chapter 12 links to them. The pages are self-contained (their chart
scripts are inline), so they are copied as they are, with one line added at the top of the body:
a link back to the book (the committed page is the standalone report, which has no book)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


BACK = ('<p class="book-nav"><a href="../../notebooks/12_your_model.html">← back to the book '
        "(chapter 12: your model)</a> · <a href=\"../../intro.html\">the book's answer</a></p>")


def with_way_back(page: str) -> str:
    """The report page with a link back to the book right after `<body>`."""
    at = page.find("<body")
    end = page.find(">", at) + 1 if at >= 0 else -1
    if end <= 0:
        raise ValueError("report page without a <body> tag")
    return page[:end] + BACK + page[end:]


def copy_reports(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in sorted((ROOT / "results").glob("*/reports/*/report.html")):
        profile, model = page.parts[-4], page.parts[-2]
        target = Path(app.outdir) / "reports" / profile / f"{model}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(with_way_back(page.read_text(encoding="utf-8")), encoding="utf-8")


def setup(app):
    app.connect("build-finished", copy_reports)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
