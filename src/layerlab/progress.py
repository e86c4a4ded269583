"""Progress bars: tqdm, switched off for the book's runs, kept for interactive use.

`layerlab execute` (cli.execute_notebook) runs every chapter with `LAYERLAB_PROGRESS=0`: a
progress bar in a committed notebook is a widget (or a stream of carriage returns) that the
site would have to serve a widget manager for, and that says nothing once the run is over. In a
notebook or a terminal of one's own the variable is unset and the bars show as before; a
caller's `disable=` still applies.

Every module of the package takes its bars from here (`from layerlab.progress import tqdm`;
tests/unit/test_progress.py checks that nothing else imports tqdm). Only tqdm is imported, and only
when a bar is made, so the GPU machine's run (layerlab.book.gpurun: torch, transformers,
tokenizers, pandas and tqdm) keeps working.
"""

from __future__ import annotations

import os

ENV = "LAYERLAB_PROGRESS"


def off() -> bool:
    """True when the environment turns progress bars off (`LAYERLAB_PROGRESS=0`)."""
    return os.environ.get(ENV, "").strip() == "0"


def tqdm(*args, disable: bool | None = False, **kwargs):
    """`tqdm.auto.tqdm(*args, **kwargs)`, disabled when `disable` is true or `off()`
    (`disable=None`, tqdm's "only on a terminal", is kept as it is unless `off()`)."""
    from tqdm.auto import tqdm as _tqdm

    return _tqdm(*args, disable=True if off() else disable, **kwargs)
