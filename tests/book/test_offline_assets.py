"""book/_ext/offline_assets.py: the site's own scripts are files committed in this repository
(no npm, no node_modules), and the Vega versions it checks the pages against are read from the
vendored files themselves. The built site itself is tested in tests/book/test_book.py."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

pytest.importorskip("sphinx")  # the floors venv builds no book

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "book" / "_ext" / "offline_assets.py"


def _load():
    spec = importlib.util.spec_from_file_location("offline_assets", EXT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


oa = _load()


def _served() -> dict[str, Path]:
    """{'offline/<folder>/<name>': the repository file copied there}."""
    return {f"offline/{folder}/{file.name}": file for folder, file in oa.ASSETS}


def test_every_served_asset_is_a_committed_file_outside_node_modules():
    for folder, file in oa.ASSETS:
        assert file.is_file(), file
        rel = file.resolve().relative_to(ROOT)  # inside the repository
        assert "node_modules" not in rel.parts, rel
        assert folder in {"vega", "mathjax"}, folder
    if shutil.which("git") and (ROOT / ".git").exists():
        paths = [str(f.resolve().relative_to(ROOT)) for _, f in oa.ASSETS]
        listed = subprocess.run(["git", "ls-files", "--", *paths], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.split()
        assert sorted(listed) == sorted(paths), "served but not tracked by git"


def test_the_extension_does_not_reach_for_npm():
    text = EXT.read_text()
    assert "node_modules" not in text and "npm ci" not in text


def test_every_offline_path_the_pages_load_is_served():
    served = _served()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert config["mathjax_path"] in served
    assert config["nb_ipywidgets_js"] == {}  # no widget manager, and not myst-nb's CDN default
    for script in oa.VEGA_SCRIPTS:
        assert script in served, script


def test_copy_assets_writes_every_file_under_static_offline(tmp_path):
    oa.copy_assets(SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(tmp_path)))
    for rel, file in _served().items():
        assert (tmp_path / "_static" / rel).read_bytes() == file.read_bytes(), rel
    other = tmp_path / "latex"
    oa.copy_assets(SimpleNamespace(builder=SimpleNamespace(format="latex"), outdir=str(other)))
    assert not other.exists()


def test_the_vendored_versions_are_read_from_the_files():
    """The versions LICENSES.txt names, and Vega-Lite the one Altair's specs ask for."""
    import altair as alt

    head = (oa.VENDOR / "LICENSES.txt").read_text().splitlines()[0]
    named = dict(zip(("vega", "vega-lite", "vega-embed"),
                     re.match(r"Vega (\S+), Vega-Lite (\S+) and Vega-Embed (\S+) ", head).groups()))
    read = {lib: oa.file_version(oa.VENDOR / f"{lib}.min.js") for lib in named}
    assert read == named
    assert read["vega-lite"] == alt.SCHEMA_VERSION.lstrip("v")


@pytest.mark.parametrize("text, version", [
    ('x.a=1,t.version="6.4.0",t.b=2', "6.4.0"),                                   # a literal
    ('var n="6.4.1";function f(n){n=3}const Zp=n;e.x=1,e.version=Zp});', "6.4.1"),  # an alias
    ('const hn="7.3.0",un=i;x.version===y.version;this.version=`${a}`;Sn.version=hn,Sn});',
     "7.3.0"),                                                  # comparisons, templates ignored
    ('var qe="3.0.0";a.version="1.2.3-rc.1";', "1.2.3-rc.1"),   # the last export wins
])
def test_file_version_follows_the_umd_export(tmp_path, text, version):
    path = tmp_path / "lib.min.js"
    path.write_text(text)
    assert oa.file_version(path) == version


@pytest.mark.parametrize("text", ['var n="1.0.0";', "e.version=m;", 'e.version="latest";'])
def test_file_version_refuses_what_it_cannot_read(tmp_path, text):
    from sphinx.errors import ExtensionError

    path = tmp_path / "lib.min.js"
    path.write_text(text)
    with pytest.raises(ExtensionError):
        oa.file_version(path)


def test_add_vega_warns_when_a_page_asks_for_another_version(monkeypatch):
    warned = []
    monkeypatch.setattr(oa, "logger", SimpleNamespace(warning=lambda *a: warned.append(a)))

    def page(body):
        scripts = []
        app = SimpleNamespace(add_js_file=lambda *a, **k: scripts.append((a, k)))
        oa.add_vega(app, "p", "page.html", {"body": body}, None)
        return scripts

    assert page("no chart here") == [] and not warned
    ok = ('maybeLoadScript("vega", "6"), maybeLoadScript("vega-lite", "6.4.1"), '
          'maybeLoadScript("vega-embed", "7")')
    scripts = page(ok)
    assert [a[0] for a, _ in scripts[:3]] == oa.VEGA_SCRIPTS and not warned
    assert '"vegalite_version": "6.4.1"' in scripts[-1][1]["body"]
    page('maybeLoadScript("vega-lite", "5.20.1")')
    assert len(warned) == 1 and "vega-lite" in warned[0]


def test_report_pages_in_the_site_link_back_to_the_book():
    spec = importlib.util.spec_from_file_location(
        "report_pages", Path(__file__).resolve().parents[2] / "book" / "_ext" / "report_pages.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    page = mod.with_way_back("<html><head></head><body class='x'><h1>r</h1></body></html>")
    assert page.index("12_your_model.html") < page.index("<h1>") and "<body class='x'>" in page
    with pytest.raises(ValueError, match="body"):
        mod.with_way_back("<html></html>")
