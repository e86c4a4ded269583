"""A self-contained site, built without npm: the scripts the pages need are files in this
repository, copied into `_build/html/_static/offline/` at build time, and the pages load them
from there. Opened from disk or served without a network, every chart and formula renders.

- Vega, Vega-Lite and Vega-Embed are the copies the package embeds in its report pages
  (`src/layerlab/report/vendor/`). They go only on pages whose outputs hold an Altair chart, in
  <head> before the outputs, with `VEGA_DEBUG` set to the versions the outputs ask for: Altair's
  loader then uses the globals and never reaches for its CDN. A version the outputs ask for that
  the vendored file (its version read from the file itself) does not satisfy is a warning (an
  error under `-W`).
- MathJax is the SVG build (`mathjax_path` in _config.yml), which fetches no web fonts, vendored
  in `book/_ext/vendor/mathjax/` (its README says where it came from and how to refresh it).
- No widget manager: the pages hold no widgets (the notebooks run with progress bars off and
  store no widget state; `nb_ipywidgets_js` is empty in _config.yml).

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

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "src" / "layerlab" / "report" / "vendor"
# (folder under _static/offline, file in the repository)
ASSETS = [
    ("vega", VENDOR / "vega.min.js"),
    ("vega", VENDOR / "vega-lite.min.js"),
    ("vega", VENDOR / "vega-embed.min.js"),
    ("mathjax", ROOT / "book" / "_ext" / "vendor" / "mathjax" / "tex-mml-svg.js"),
]
VEGA_SCRIPTS = ["offline/vega/vega.min.js", "offline/vega/vega-lite.min.js",
                "offline/vega/vega-embed.min.js"]
LOAD_CALL = re.compile(r'maybeLoadScript\("(vega|vega-lite|vega-embed)", "([^"]+)"\)')

# A UMD build's last `<exports>.version=` assignment is the library's own version: a string
# literal (vega: `t.version="6.4.0"`) or a name bound to one, perhaps through an alias
# (vega-lite: `var n="6.4.1"` ... `const Zp=n` ... `e.version=Zp`; vega-embed: `const hn="7.3.0"`
# ... `Sn.version=hn`). `===` comparisons and template strings are not assignments of this shape.
EXPORT = re.compile(r'[\w$)\]]\.version=(?!=)("[^"]*"|[A-Za-z_$][\w$]*)')
SEMVER = r'\d+\.\d+\.\d+(?:-[\w.]+)?'


def file_version(path: Path) -> str:
    """The version a minified Vega-family UMD build exports, read from its text."""
    text = path.read_text(encoding="utf-8")
    exports = EXPORT.findall(text)
    if not exports:
        raise ExtensionError(f"offline_assets: no `.version=` export in {path}")
    value = exports[-1]
    for _ in range(4):  # follow at most a few aliases
        if value.startswith('"'):
            break
        name = re.escape(value)
        literal = re.search(rf'(?<![\w$.]){name}="({SEMVER})"', text)
        if literal:
            value = f'"{literal.group(1)}"'
            break
        alias = re.search(rf'(?<![\w$.]){name}=(?!=)([A-Za-z_$][\w$]*)(?=[,;])', text)
        if not alias:
            break
        value = alias.group(1)
    version = value.strip('"')
    if not re.fullmatch(SEMVER, version):
        raise ExtensionError(f"offline_assets: cannot read the version of {path} "
                             f"(its export is {exports[-1]!r})")
    return version


def copy_assets(app) -> None:
    if app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "offline"
    for folder, file in ASSETS:
        if not file.is_file():
            raise ExtensionError(f"offline_assets: {file} is missing (it is committed; "
                                 "see book/_ext/vendor/README.md)")
        (target / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, target / folder / file.name)


def add_vega(app, pagename, templatename, context, doctree) -> None:
    wanted = dict(LOAD_CALL.findall(context.get("body", "")))
    if not wanted:
        return
    for lib, version in wanted.items():
        have = file_version(VENDOR / f"{lib}.min.js")
        if not (have == version or have.startswith(version + ".")):
            logger.warning("offline_assets: %s asks for %s %s, the site serves %s; replace "
                           "src/layerlab/report/vendor/%s.min.js", pagename, lib, version, have,
                           lib)
    for script in VEGA_SCRIPTS:
        app.add_js_file(script, priority=300)
    debug = {f"{lib.replace('-', '', 1)}_version": v for lib, v in wanted.items()}
    app.add_js_file(None, priority=301, body=f"var VEGA_DEBUG = {json.dumps(debug)};")


def setup(app):
    app.connect("builder-inited", copy_assets)
    app.connect("html-page-context", add_vega)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
