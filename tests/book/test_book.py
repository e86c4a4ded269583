"""The book builds strictly, and every page of the built site works in a real browser with
no network: the site serves its own chart and maths scripts (book/_ext/offline_assets.py).

The browser test records every request. A request for a file the site does not have, or for
anything outside the site, fails the test: no substitution, no allow-list. A chart that draws
no marks, or a Vega warning in the console, fails it too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.book

ROOT = Path(__file__).resolve().parents[2]
ORIGIN = "http://layerlab.test/"
ALLOWED_PAGE_ERRORS = ("THEBE_JS_URL",)  # sphinx-thebe declares it twice in JB1; harmless


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", "-W", "-n",
           "--keep-going", "--path-output", str(out), "book/"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return out / "_build" / "html"


def _toc_docnames() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]
    for part in toc.get("parts", []):
        names += [ch["file"] for ch in part["chapters"]]
    return names


def _altair_outputs(notebook: Path) -> int:
    nb = json.loads(notebook.read_text())
    return sum("vega-embed" in "".join(o.get("data", {}).get("text/html", ""))
               for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []))


def test_every_toc_page_is_built(built_site):
    for doc in _toc_docnames():
        assert (built_site / f"{doc}.html").is_file(), doc


def test_pages_have_no_error_outputs(built_site):
    for doc in _toc_docnames():
        html = (built_site / f"{doc}.html").read_text()
        assert "output traceback" not in html and 'class="output error"' not in html, doc
        assert "ansi-red-fg" not in html, f"{doc}: coloured traceback in the output"


def test_colab_buttons_open_the_top_level_notebooks(built_site):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    for doc in _toc_docnames():
        if not doc.startswith("notebooks/"):
            continue
        html = (built_site / f"{doc}.html").read_text()
        expected = f"https://colab.research.google.com/github/{repo}/blob/main/{doc}.ipynb"
        assert expected in html, f"{doc}: no Colab link to {expected}"
        assert (ROOT / f"{doc}.ipynb").is_file()


def _route(site: Path, refused: list[str]):
    """Serve the built site under ORIGIN; record and abort everything else."""
    def handler(route):
        url = route.request.url
        if url.startswith(ORIGIN):
            path = site / url[len(ORIGIN):].split("?")[0].split("#")[0]
            if path.is_file():
                return route.fulfill(status=200, body=path.read_bytes(), content_type=_mime(path))
        refused.append(url)
        return route.abort()

    return handler


class _Links(HTMLParser):
    """Every address a page makes the browser load by itself (scripts, images, frames, styles,
    preloads, icons)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe") and a.get("src"):
            self.found.append(a["src"])
        rel = set((a.get("rel") or "").split())
        if tag == "link" and rel & {"stylesheet", "preload", "icon"} and a.get("href"):
            self.found.append(a["href"])


def test_pages_load_nothing_from_another_host(built_site):
    for page in built_site.rglob("*.html"):
        parser = _Links()
        parser.feed(page.read_text())
        external = [u for u in parser.found if re.match(r"^([a-z][a-z0-9+.-]*:|//)", u)]
        assert not external, f"{page.relative_to(built_site)} loads {external}"


def _mime(path: Path) -> str:
    return {".html": "text/html", ".js": "application/javascript", ".css": "text/css",
            ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json",
            ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf"}.get(path.suffix, "application/octet-stream")


# Charts whose data marks (Vega's role-mark groups, never axes or legends) cover no area: rects
# and symbols need width and height, lines and rules a length, text some characters.
VISIBLE_MARKS = """() => [...document.querySelectorAll('.vega-embed svg.marks')].filter(svg => {
    const visible = [...svg.querySelectorAll('g.role-mark')].some(g => {
        const kind = [...g.classList].find(c => c.startsWith('mark-'));
        return [...g.querySelectorAll('path, line, text, rect')].some(el => {
            const box = el.getBoundingClientRect();
            if (kind === 'mark-text') return (el.textContent || '').trim().length > 0;
            if (kind === 'mark-line' || kind === 'mark-rule' || kind === 'mark-area')
                return box.width > 0.5 || box.height > 0.5;
            return box.width > 0.5 && box.height > 0.5;
        });
    });
    return !visible;
}).length"""


@pytest.mark.parametrize("doc", _toc_docnames())
def test_page_renders_in_headless_chromium(built_site, browser, doc):
    refused: list[str] = []
    errors: list[str] = []
    warnings: list[str] = []
    page = browser.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: warnings.append(msg.text) if msg.type in ("warning", "error")
            else None)
    page.route("**/*", _route(built_site, refused))
    page.goto(f"{ORIGIN}{doc}.html", wait_until="load")
    notebook = ROOT / f"{doc}.ipynb"
    charts = _altair_outputs(notebook) if notebook.is_file() else 0
    maths = "math notranslate" in (built_site / f"{doc}.html").read_text()
    # the lazy loads (Altair's injected scripts, MathJax) happen while rendering; the site has no
    # widget manager (_config.yml), so a widget left in a notebook's outputs draws nothing
    if charts:
        page.wait_for_function("document.querySelectorAll('.vega-embed svg.marks, "
                               f".vega-embed canvas.marks').length >= {charts}", timeout=30_000)
    if maths:
        page.wait_for_selector("mjx-container", timeout=30_000)
    page.wait_for_timeout(500)
    body = page.inner_text("body")
    assert "Error loading script" not in body
    assert "Traceback" not in body
    rendered = page.locator(".vega-embed svg.marks, .vega-embed canvas.marks").count()
    assert rendered == charts, f"{doc}: {rendered} charts rendered, {charts} expected"
    # every chart draws something visible: an empty default selection, or bars of zero height
    # (a log axis without a base), leave only axes and grid lines
    empty = page.evaluate(VISIBLE_MARKS)
    assert empty == 0, f"{doc}: {empty} charts drew no marks"
    assert not [e for e in errors if not any(a in e for a in ALLOWED_PAGE_ERRORS)], errors
    vega = [w for w in warnings if "WARN" in w or "Infinite extent" in w or "vega" in w.lower()]
    assert not vega, f"{doc}: Vega warnings {vega}"
    assert not refused, f"{doc} asked for resources outside the site: {refused}"
    page.close()


def test_a_chart_page_opened_from_disk_renders_offline(built_site, browser):
    """What the README promises: open _build/html from disk, no network, every chart drawn."""
    doc = "notebooks/05_importance_map"
    refused: list[str] = []
    page = browser.new_page()

    def handler(route):
        if route.request.url.startswith("file://"):
            return route.continue_()
        refused.append(route.request.url)
        return route.abort()

    page.route("**/*", handler)
    page.goto((built_site / f"{doc}.html").as_uri(), wait_until="load")
    charts = _altair_outputs(ROOT / f"{doc}.ipynb")
    page.wait_for_function("document.querySelectorAll('.vega-embed svg.marks, "
                           f".vega-embed canvas.marks').length >= {charts}", timeout=30_000)
    assert "Error loading script" not in page.inner_text("body")
    assert not refused, refused
    page.close()


def _report_back_line() -> str:
    import importlib.util

    spec = importlib.util.spec_from_file_location("report_pages", ROOT / "book/_ext/report_pages.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.BACK


REPORT_BACK = _report_back_line()


def test_chapter_12_links_every_committed_report_page(built_site):
    """book/_ext/report_pages.py copies each committed report page into the site; chapter 12's
    links must land on them (a link the build does not serve is a dead end for the reader)."""
    committed = sorted(ROOT.glob("results/cpu/reports/*/report.html"))
    assert committed, "no committed cpu report"
    chapter = (built_site / "notebooks" / "12_your_model.html").read_text()
    hrefs = set(re.findall(r"href=['\"](\.\./reports/[^'\"]+)['\"]", chapter))
    assert hrefs == {f"../reports/cpu/{p.parent.name}.html" for p in committed}
    for href in hrefs:
        page = (built_site / "notebooks" / href).resolve()
        committed_page = ROOT / "results" / "cpu" / "reports" / page.stem / "report.html"
        # the site's copy is the committed page with one link back to the book (report_pages.py)
        shown = page.read_text(encoding="utf-8")
        assert page.is_file() and "12_your_model.html" in shown
        assert shown.replace(REPORT_BACK, "", 1) == committed_page.read_text(encoding="utf-8"), href


# --- reading: the answer first, nothing clipped, no debug output (issue 27) --------------------
# Elements in the article wider than its column, unless a scroll wrapper (overflow-x auto or
# scroll) holds them; and printed results (pre) that need horizontal scrolling.
OVERFLOW = """() => {
    const col = document.querySelector('article.bd-article') || document.querySelector('main');
    const right = col.getBoundingClientRect().right + 1;
    const scrolls = el => { for (let a = el.parentElement; a && a !== col; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX; if (o === 'auto' || o === 'scroll') return true; }
        return false; };
    // only a table may scroll inside its wrapper (and source code inside its own block, folded
    // by default); charts, text, printed results and images must fit the column
    const wide = [...col.querySelectorAll('*')].filter(el => {
        const box = el.getBoundingClientRect();
        const allowed = (el.closest('table') || el.closest('div.highlight')) && scrolls(el);
        return box.width > 0 && box.right > right && !allowed
               && !el.closest('details:not([open])')
               && getComputedStyle(el).position !== 'fixed';
    }).map(el => el.tagName.toLowerCase() + '.' + [...el.classList].join('.'));
    const pre = [...col.querySelectorAll('div.cell_output pre, div.output pre')]
        .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 60));
    return {wide: [...new Set(wide)].slice(0, 8), pre: pre.slice(0, 5)};
}"""
# the top of the first coloured verdict (a verdict word defined in prose is not an answer)
FIRST_VERDICT = """() => {
    const shown = [...document.querySelectorAll('article .ll-verdict')];
    return shown.length ? Math.min(...shown.map(el => el.getBoundingClientRect().top)) : 1e9;
}"""


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("doc", _toc_docnames())
def test_page_reads_at_desktop_and_phone_width(built_site, browser, doc, width):
    refused: list[str] = []
    page = browser.new_page(viewport={"width": width, "height": 900 if width > 500 else 844})
    page.route("**/*", _route(built_site, refused))
    page.goto(f"{ORIGIN}{doc}.html", wait_until="load")
    notebook = ROOT / f"{doc}.ipynb"
    charts = _altair_outputs(notebook) if notebook.is_file() else 0
    if charts:
        page.wait_for_function("document.querySelectorAll('.vega-embed svg.marks, "
                               f".vega-embed canvas.marks').length >= {charts}", timeout=30_000)
    page.wait_for_timeout(300)
    found = page.evaluate(OVERFLOW)
    assert not found["wide"], f"{doc} at {width} px: wider than the column: {found['wide']}"
    assert not found["pre"], f"{doc} at {width} px: printed lines cut off: {found['pre']}"
    text = page.inner_text("article") if page.locator("article").count() else page.inner_text("body")
    assert not re.search(r"\bNaN\b|\bnan\b", text), f"{doc}: NaN on the page"
    assert not re.search(r"\d+it/s\]|it/s,|█", text), f"{doc}: a progress bar on the page"
    assert page.locator(".widget-progress, .jupyter-widgets").count() == 0
    if doc in ("intro", "notebooks/11_verdicts", "notebooks/13_what_we_found"):
        top = page.evaluate(FIRST_VERDICT)
        assert top < page.viewport_size["height"], f"{doc} at {width} px: first verdict at {top} px"
    page.close()
