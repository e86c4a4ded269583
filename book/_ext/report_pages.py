"""The full `layerlab report` pages in the site: every committed
`results/<profile>/reports/<model>/report.html` is copied to `_build/html/reports/<profile>/
<model>.html`, where chapter 12 links to them. The pages are self-contained (their chart
scripts are inline), so they are copied as they are."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def copy_reports(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in sorted((ROOT / "results").glob("*/reports/*/report.html")):
        profile, model = page.parts[-4], page.parts[-2]
        target = Path(app.outdir) / "reports" / profile / f"{model}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, target)


def setup(app):
    app.connect("build-finished", copy_reports)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
