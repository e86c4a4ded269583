"""A self-contained site: the scripts the pages need (Vega, Vega-Lite, Vega-Embed, the widget
manager, MathJax) are copied from the pinned npm packages (`tests/browser/package.json`,
installed by `npm ci --prefix tests/browser`) into `_build/html/_static/offline/`, and the pages
load them from there. Opened from disk or served without a network, every chart, progress bar
and formula renders.

- Vega goes only on pages whose outputs hold an Altair chart, in <head> before the outputs, with
  `VEGA_DEBUG` set to the versions the outputs ask for: Altair's loader then uses the globals and
  never reaches for its CDN. A version the outputs ask for that the npm copy does not satisfy is
  a warning (an error under `-W`).
- The widget manager is `embed.js` without require.js (`nb_ipywidgets_js` in _config.yml):
  with require.js on the page, Altair's outputs would configure CDN paths.
- MathJax is the SVG build (`mathjax_path`), which fetches no web fonts.

The files are copied at `builder-inited`, never placed under book/_static (Jupyter Book would
inject every .js there into every page).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

NODE = Path(__file__).resolve().parents[2] / "tests" / "browser" / "node_modules"
# (folder under _static/offline, file or glob under node_modules)
ASSETS = [
    ("vega", "vega/build/vega.min.js"),
    ("vega", "vega-lite/build/vega-lite.min.js"),
    ("vega", "vega-embed/build/vega-embed.min.js"),
    ("widgets", "@jupyter-widgets/html-manager/dist/embed.js"),
    ("widgets", "@jupyter-widgets/html-manager/dist/*.woff2"),
    ("mathjax", "mathjax/es5/tex-mml-svg.js"),
]
VEGA_SCRIPTS = ["offline/vega/vega.min.js", "offline/vega/vega-lite.min.js",
                "offline/vega/vega-embed.min.js"]
LOAD_CALL = re.compile(r'maybeLoadScript\("(vega|vega-lite|vega-embed)", "([^"]+)"\)')


def _npm_version(package: str) -> str:
    return json.loads((NODE / package / "package.json").read_text())["version"]


def copy_assets(app) -> None:
    if app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "offline"
    for folder, pattern in ASSETS:
        found = sorted(NODE.glob(pattern))
        if not found:
            raise ExtensionError(f"offline_assets: {NODE / pattern} is missing; run "
                                 "`npm ci --prefix tests/browser` (make book does)")
        (target / folder).mkdir(parents=True, exist_ok=True)
        for file in found:
            shutil.copy2(file, target / folder / file.name)


def add_vega(app, pagename, templatename, context, doctree) -> None:
    wanted = dict(LOAD_CALL.findall(context.get("body", "")))
    if not wanted:
        return
    for lib, version in wanted.items():
        have = _npm_version(lib)
        if not (have == version or have.startswith(version + ".")):
            logger.warning("offline_assets: %s asks for %s %s, the site serves %s; bump "
                           "tests/browser/package.json", pagename, lib, version, have)
    for script in VEGA_SCRIPTS:
        app.add_js_file(script, priority=300)
    debug = {f"{lib.replace('-', '', 1)}_version": v for lib, v in wanted.items()}
    app.add_js_file(None, priority=301, body=f"var VEGA_DEBUG = {json.dumps(debug)};")


def setup(app):
    app.connect("builder-inited", copy_assets)
    app.connect("html-page-context", add_vega)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
