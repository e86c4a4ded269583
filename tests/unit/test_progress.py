"""layerlab.progress: tqdm, off when LAYERLAB_PROGRESS=0 (the book's runs: no progress bar in a
committed page), on otherwise; the only place in the package that imports tqdm."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest

import layerlab
from layerlab import progress

SRC = Path(layerlab.__file__).parent


def _bar(**kwargs):
    return progress.tqdm(range(3), file=io.StringIO(), **kwargs)


@pytest.mark.parametrize("value, disabled", [("0", True), (" 0 ", True), (None, False),
                                             ("1", False), ("", False)])
def test_the_environment_switches_the_bars(monkeypatch, value, disabled):
    if value is None:
        monkeypatch.delenv("LAYERLAB_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("LAYERLAB_PROGRESS", value)
    assert progress.off() is disabled
    bar = _bar()
    assert bar.disable is disabled
    assert list(bar) == [0, 1, 2]  # a disabled bar still iterates
    assert _bar(disable=True).disable is True  # the caller's disable always holds


def test_disable_none_is_tqdms_own_unless_off(monkeypatch):
    monkeypatch.delenv("LAYERLAB_PROGRESS", raising=False)
    seen = {}
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", lambda *a, **k: seen.update(k))
    progress.tqdm(range(3), disable=None)
    assert seen["disable"] is None
    monkeypatch.setenv("LAYERLAB_PROGRESS", "0")
    progress.tqdm(range(3), disable=None)
    assert seen["disable"] is True


def test_no_module_imports_tqdm_but_progress():
    direct = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "progress.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n == "tqdm" or n.startswith("tqdm.") for n in names):
                direct.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not direct, f"import tqdm through layerlab.progress: {direct}"


def test_progress_imports_only_tqdm():
    """layerlab.book.gpurun runs where only torch, transformers, tokenizers, pandas and tqdm are
    installed: the wrapper must need nothing else."""
    tree = ast.parse((SRC / "progress.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "os", "tqdm"}, imported


def test_book_runs_write_no_progress_bar_and_no_widget_state(tmp_path, monkeypatch):
    from layerlab import cli

    monkeypatch.delenv("LAYERLAB_PROGRESS", raising=False)
    src = tmp_path / "99_bars.py"
    src.write_text(
        "# %%\nimport os\nprint('progress', os.environ.get('LAYERLAB_PROGRESS'))\n\n"
        "# %%\nfrom layerlab.progress import tqdm\nbar = tqdm(range(3), desc='work')\n"
        "print('disabled', bar.disable, sum(bar))\n"
    )
    nb = json.loads(cli.execute_notebook(src, "smoke").read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    text = "".join("".join(o.get("text", "")) for o in outputs)
    assert "progress 0" in text and "disabled True 3" in text
    assert all(o["output_type"] == "stream" and o["name"] == "stdout" for o in outputs), outputs
    assert "widgets" not in nb["metadata"]
    assert "LAYERLAB_PROGRESS" not in __import__("os").environ  # restored afterwards
