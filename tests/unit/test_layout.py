"""The package's layout holds: the ground floor (models, corpus, hidden, results, settings,
paper, ...) imports neither wing; P1's wing (`depth`) and P2's (`anatomy`) never import each
other; `report` (both papers on one model) uses both wings; `book` (rendering) and `report` sit
on top and nothing below imports them; the command line (`cli.py`) is the entry above all."""

import ast
from pathlib import Path

import layerlab

SRC = Path(layerlab.__file__).parent
FLOORS = {"depth": {"anatomy", "book", "report"}, "anatomy": {"depth", "book", "report"},
          "book": {"report"}, "report": {"book"}, "": {"depth", "anatomy", "book", "report"},
          "cli": set()}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("layerlab"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("layerlab")}
    return found


def _wing(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in FLOORS else ""


def test_wings_import_the_ground_floor_never_each_other():
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        # a ground-floor package (models, settings) is the ground floor, like a module
        home = (rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in FLOORS
                else "cli" if rel.name == "cli.py" else "")
        for dotted in _imports(path):
            if _wing(dotted) in FLOORS[home]:
                bad.append(f"{rel} imports {dotted}")
    assert not bad, bad


def test_every_module_names_the_chapters_that_use_it():
    for path in SRC.rglob("*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert "chapter" in doc.lower() or "page" in doc.lower(), path.relative_to(SRC)


def test_every_wing_module_says_what_is_public():
    """Each module of the two wings (a package: its `__init__`) lists its public names in
    `__all__`, and each listed name exists; a split package's inner modules need not."""
    import importlib

    missing, unknown = [], []
    for wing in ("depth", "anatomy"):
        for path in sorted((SRC / wing).glob("*.py")) + sorted((SRC / wing).glob("*/__init__.py")):
            if path.name == "__init__.py" and path.parent.name == wing:
                continue  # the wing's own package file holds nothing
            rel = path.relative_to(SRC).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            module = importlib.import_module(".".join(("layerlab", *parts)))
            names = getattr(module, "__all__", None)
            if names is None:
                missing.append(str(rel))
                continue
            unknown += [f"{rel}: {n}" for n in names if not hasattr(module, n)]
    assert not missing, f"no __all__: {missing}"
    assert not unknown, unknown
