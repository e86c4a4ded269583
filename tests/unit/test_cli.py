from __future__ import annotations

import json

import pytest

from layerlab import cli


def test_execute_writes_outputs_from_the_py_source(tmp_path, monkeypatch):
    monkeypatch.delenv("LAYERLAB_PROFILE", raising=False)
    src = tmp_path / "99_demo.py"
    src.write_text(
        "# %% [markdown]\n# # Demo\n\n"
        "# %%\nimport os\nprint('profile', os.environ['LAYERLAB_PROFILE'])\n\n"
        "# %%\n6 * 7\n"
    )
    out = cli.execute_notebook(src, "smoke")
    nb = json.loads(out.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == [1, 2]
    assert "profile smoke" in "".join(code[0]["outputs"][0]["text"])
    assert "".join(code[1]["outputs"][0]["data"]["text/plain"]) == "42"
    assert "LAYERLAB_PROFILE" not in __import__("os").environ  # restored afterwards


def test_execute_rejects_unknown_chapters():
    with pytest.raises(SystemExit, match="no notebook matches"):
        cli._notebooks(["77"])


def test_models_command_lists_the_zoo(capsys):
    assert cli.main(["models"]) == 0
    listed = capsys.readouterr().out
    assert "smollm2-135m-instruct-q4" in listed and "tiny-llama" in listed


def test_execute_refuses_dirty_tree_for_committed_results(monkeypatch):
    from layerlab import provenance

    monkeypatch.delenv("LAYERLAB_RESULTS", raising=False)
    monkeypatch.setattr(provenance, "git_commit", lambda: "abc123+dirty")
    with pytest.raises(SystemExit, match="uncommitted source changes"):
        cli.refuse_dirty_results("cpu")
    cli.refuse_dirty_results("cpu", force=True)  # forced: allowed
    cli.refuse_dirty_results("smoke")  # not committed: allowed
    monkeypatch.setattr(provenance, "git_commit", lambda: "abc123")
    cli.refuse_dirty_results("cpu")  # clean: allowed


def test_code_cells_are_folded_on_the_page_unless_they_chose_otherwise():
    import nbformat

    from layerlab import cli

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("setup()", metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("HTML(answer)", metadata={"tags": ["remove-input"]}),
    ])
    cli.fold_code(nb)
    assert "tags" not in nb.cells[0].metadata
    assert nb.cells[1].metadata["tags"] == ["hide-input"]
    assert nb.cells[2].metadata["tags"] == ["remove-cell"]
    assert nb.cells[3].metadata["tags"] == ["remove-input"]
