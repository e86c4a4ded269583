"""How a page shows a table: missing numbers as a dash with a note, wide tables scrolling in
their own wrapper, and tables a reader rarely needs folded.

- `frame_html` is the HTML of every DataFrame on a page (`install` registers it with IPython,
  `profiles.setup` calls it): NaN shows as "—" and a line under the table says why there is no
  number; the table sits in a horizontally scrolling wrapper, so it never widens the column.
- `FoldedFrame` (`fold`): tables a reader rarely needs (what each tier runs, provenance) stay on
  the page but closed (`<details>`). It is still a DataFrame for code and tests.
"""

from __future__ import annotations

import html

import pandas as pd

__all__ = ["FoldedFrame", "fold", "frame_html", "install", "NA", "NA_NOTE"]

NA = "—"
NA_NOTE = ("— : no number — not measured for this row, or not defined for it (the text above "
           "says which).")


class FoldedFrame(pd.DataFrame):
    """A DataFrame whose HTML form is a closed `<details>` element with `summary` as its title."""

    _metadata = ["summary"]

    @property
    def _constructor(self):
        return FoldedFrame

    def _repr_html_(self) -> str | None:
        return frame_html(self)


def fold(frame: pd.DataFrame, summary: str) -> FoldedFrame:
    out = FoldedFrame(frame)
    out.summary = summary
    return out


def frame_html(df: pd.DataFrame) -> str:
    """A DataFrame's HTML on a page: NaN as a dash with a note, in a scrolling wrapper, folded
    when it is a FoldedFrame."""
    inner = df.to_html(na_rep=NA, notebook=True, border=0,
                       max_rows=pd.get_option("display.max_rows"),
                       max_cols=pd.get_option("display.max_columns"), show_dimensions=False)
    if df.isna().to_numpy().any():
        inner += f'<p class="ll-small">{html.escape(NA_NOTE)}</p>'
    inner = f'<div class="ll-scroll">{inner}</div>'
    if isinstance(df, FoldedFrame):
        title = html.escape(getattr(df, "summary", None) or "table")
        return f'<details class="ll-folded"><summary>{title}</summary>{inner}</details>'
    return inner


def install() -> None:
    """Show every DataFrame in this IPython kernel with `frame_html` (no-op outside IPython)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, frame_html)
