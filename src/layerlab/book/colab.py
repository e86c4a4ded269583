"""The Colab setup cell: one template, written as the first code cell of every chapter by
`make sync` (`python -m layerlab.book.colab`). It is tagged `remove-cell`, so the site hides it while
Colab runs it, and it installs exactly what that chapter needs: layerlab from a clone of the
repository, plus the offline models (PyPI wheels) the chapter loads on the `cpu` profile, which
is what Colab runs without a GPU.

Used by every chapter (00–12) and `tests/book/test_notebooks.py`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from layerlab import paths

TAG_LINE = '# %% tags=["remove-cell"]'
# chapter prefix -> offline models (models.WHEEL_MODELS) it loads on the cpu profile
CHAPTER_MODELS: dict[str, tuple[str, ...]] = {
    "00": ("smollm2-135m-instruct-q4", "gemma-3-270m-q4"),  # the survey of the profile's models
    "02": ("smollm2-135m-instruct-q4", "gemma-3-270m-q4"),  # geometry of every model
    "03": ("smollm2-135m-instruct-q4", "gemma-3-270m-q4"),  # token profiles of every model
    **{ch: ("smollm2-135m-instruct-q4",) for ch in ("05", "06", "07", "08", "09")},  # P2's model
    "10": ("smollm2-135m-instruct-q4",),  # the gpu profile's growth model uses its tokenizer
    "12": ("smollm2-135m-instruct-q4", "gemma-3-270m-q4"),  # reports on both offline LLMs
}

TEMPLATE = '''{tag}
# Colab setup (hidden on the site; written by `make sync` from layerlab/book/colab.py): clone the
# repository (code, vendored data, committed results) and install what this chapter needs.
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    repo = "/content/layerlab"
    if not os.path.isdir(repo):
        subprocess.run(["git", "clone", "--depth", "1", "{url}", repo],
                       check=True)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-e", repo], check=True)
{extras}    sys.path.insert(0, f"{{repo}}/src")
    os.chdir(f"{{repo}}/notebooks")
'''


def repository_url() -> str:
    import yaml

    config = yaml.safe_load((paths.REPO_ROOT / "_config.yml").read_text())
    return config["repository"]["url"]


def render(stem: str) -> str:
    """The setup cell of the chapter `stem` (e.g. "05_importance_map"), in py:percent."""
    from layerlab import models

    lines = []
    for name in CHAPTER_MODELS.get(stem[:2], ()):
        wheel = models.WHEEL_MODELS[name]
        args = wheel.install.removeprefix("pip install ").split()
        quoted = ", ".join('"' + a + '"' for a in args)
        lines.append(f"    subprocess.run([*pip, {quoted}], check=True)  # {name}\n")
    return TEMPLATE.format(tag=TAG_LINE, url=repository_url(), extras="".join(lines))


# a code cell's `# %%` line (tags allowed, markdown not), then every line up to the next cell
_CODE_CELL = re.compile(r"^# %%(?! \[markdown\])(?: tags=\[[^\]]*\])?\n(?:(?!# %%).*(?:\n|$))*",
                        re.M)


def first_code_cell(text: str) -> re.Match[str]:
    """The first code cell of a py:percent text (from its `# %%` line to the next cell)."""
    cell = _CODE_CELL.search(text)
    if cell is None:
        raise ValueError("no code cell")
    return cell


def sync(py: Path) -> bool:
    """Write the rendered template over the chapter's first code cell; True when it changed."""
    text = py.read_text()
    cell = first_code_cell(text)
    if "google.colab" not in cell.group(0):
        raise ValueError(f"{py.name}: the first code cell is not the Colab setup cell")
    new = text[:cell.start()] + render(py.stem) + "\n" + text[cell.end():].lstrip("\n")
    if new != text:
        py.write_text(new)
    return new != text


def main() -> int:
    changed = [py.name for py in sorted((paths.REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
               if sync(py)]
    print(f"Colab cell: {len(changed)} chapter(s) rewritten {changed if changed else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
