"""The book builds strictly, and every page of the built site works in a real browser.

The browser test serves the site from disk under a fake origin and the CDN scripts (Vega,
the widget manager, require.js) from the npm copies in tests/browser/node_modules, since CI has
no CDN. Everything else a page asks for is refused and, unless allow-listed, fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.book

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "tests" / "browser" / "node_modules"
ORIGIN = "http://layerlab.test/"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# CDN URL pattern -> local file under tests/browser/node_modules
CDN = [
    (re.compile(r"cdn\.jsdelivr\.net/npm/vega@6"), "vega/build/vega.min.js"),
    (re.compile(r"cdn\.jsdelivr\.net/npm/vega-lite@6[^/]*(\?|$)"), "vega-lite/build/vega-lite.min.js"),
    (re.compile(r"cdn\.jsdelivr\.net/npm/vega-embed@7"), "vega-embed/build/vega-embed.min.js"),
    # the manager's own chunks and fonts, also when resolved against the page's origin
    (re.compile(r"/@jupyter-widgets/(?:html-manager(?:@1\.0\.6)?/dist/)?([^/?#]+)(?:$|[?#])"),
     "@jupyter-widgets/html-manager/dist/{0}"),
    (re.compile(r"cdnjs\.cloudflare\.com/ajax/libs/require\.js/.*/require\.min\.js"),
     "requirejs/require.js"),
]
# Requests that may fail offline without harming the page (maths typesetting, thebe, fonts).
ALLOWED_MISSES = ("mathjax", "thebe", "fonts.googleapis", "vega.github.io/schema")
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


def _browser_available() -> bool:
    return Path(CHROMIUM).exists() and (NODE / "vega").is_dir()


@pytest.fixture(scope="session")
def browser():
    if not _browser_available():
        message = "needs Debian chromium and `npm ci --prefix tests/browser` (make test does the npm part)"
        if os.environ.get("LAYERLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        yield browser
        browser.close()


def _route(site: Path, refused: list[str]):
    def handler(route):
        url = route.request.url
        for pattern, local in CDN:
            match = pattern.search(url)
            if match:
                file = NODE / local.format(*match.groups())
                if file.is_file():
                    return route.fulfill(status=200, body=file.read_bytes(),
                                         content_type=_mime(file))
        if url.startswith(ORIGIN):
            path = site / url[len(ORIGIN):].split("?")[0].split("#")[0]
            if not path.is_file():
                refused.append(url)
                return route.fulfill(status=404, body="")
            body = path.read_bytes()
            if path.suffix == ".html":  # local require.js differs from the cdnjs build's SRI hash
                body = re.sub(rb'\sintegrity="[^"]*"', b"", body)
            return route.fulfill(status=200, body=body, content_type=_mime(path))
        if not any(a in url for a in ALLOWED_MISSES):
            refused.append(url)
        return route.abort()

    return handler


def _mime(path: Path) -> str:
    return {".html": "text/html", ".js": "application/javascript", ".css": "text/css",
            ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json",
            ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf"}.get(path.suffix, "application/octet-stream")


@pytest.mark.parametrize("doc", _toc_docnames())
def test_page_renders_in_headless_chromium(built_site, browser, doc):
    refused: list[str] = []
    errors: list[str] = []
    page = browser.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.route("**/*", _route(built_site, refused))
    page.goto(f"{ORIGIN}{doc}.html", wait_until="load")
    notebook = ROOT / f"{doc}.ipynb"
    charts = _altair_outputs(notebook) if notebook.is_file() else 0
    if charts:
        page.wait_for_function(f"document.querySelectorAll('.vega-embed svg.marks, .vega-embed canvas.marks').length >= {charts}",
                               timeout=30_000)
    page.wait_for_timeout(500)
    body = page.inner_text("body")
    assert "Error loading script" not in body
    assert "Traceback" not in body
    rendered = page.locator(".vega-embed svg.marks, .vega-embed canvas.marks").count()
    assert rendered == charts, f"{doc}: {rendered} charts rendered, {charts} expected"
    assert not [e for e in errors if not any(a in e for a in ALLOWED_PAGE_ERRORS)], errors
    assert not refused, f"{doc} asked for resources that are not served: {refused}"
    page.close()
