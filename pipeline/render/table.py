"""A DataFrame as a text table for a terminal: the ``--format table`` of every sub-command.

* every header and cell goes through :func:`perflake.render.safe_text.escape`: no control character reaches the
  terminal;
* a missing value -- None, NaN, NaT, pandas' NA -- is spelled :data:`MISSING` (``-``) whatever the column's
  type (pandas would print NaN, None, NaT or <NA>);
* numbers, booleans, dates and durations are formatted column by column as pandas does and aligned right; any
  other value is text, aligned left; a list or array is ``[a, b]``;
* with a ``width``, the table fits it: text columns are shortened with ``…`` (the columns that take least
  keep their whole values, the others share what is left), a call path, file or source from the start (its
  end stays), a name in the middle, other text at the end; run ids and numbers are not cut (the header of a
  number may be, in the middle, to no less than :data:`HEADER_FLOOR`).  When even that is too wide, the
  columns are laid out in several blocks one under the other (the first column repeated in each when it is
  narrow), each within the width, numbers with their whole headers.  Without a width nothing is cut.

Columns are separated by two spaces; lines carry no trailing blanks.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perflake.render.safe_text import display_width, escape, pad, shorten

MISSING = "-"
GAP = "  "
TEXT_FLOOR = 6  # a shortened text column keeps at least this many columns (its header too)
HEADER_FLOOR = 10  # the header of a number shortens to no less (``time …ount``): a number needs its name
_KEEP_END = ("path", "source", "file", "module", "dir", "directory", "url")
_IDS = ("run_id", "id", "node_id", "batch")


def _missing(value) -> bool:
    if value is None or value is pd.NaT or value is pd.NA:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    return False


def _text(value) -> str:
    """One value as text (before escaping): lists as ``[a, b]``, missing values as :data:`MISSING`."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if _missing(value):
        return MISSING
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


def _formatted(column: pd.Series) -> tuple[list[str], bool]:
    """The cells of one column as text and whether they align right (numbers, booleans, dates, durations)."""
    kind = column.dtype.kind
    if kind in "biufcmM":
        missing = column.isna().to_numpy()
        if missing.all():
            return [MISSING] * len(column), True
        lines = column.reset_index(drop=True).to_frame().to_string(index=False, header=False).split("\n")
        return [MISSING if m else s.strip() for s, m in zip(lines, missing)], True
    values = column.tolist()
    cells = [escape(_text(v)) for v in values]
    numbers = [v for v in values if not _missing(v)]
    numeric = bool(numbers) and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                                    for v in numbers)
    return cells, numeric


def _where(name: str) -> str:
    low = name.lower()
    if low in _KEEP_END or low.endswith(tuple("_" + k for k in _KEEP_END)):
        return "left"
    return "middle" if low == "name" or low.endswith("name") else "right"


class _Column:
    def __init__(self, name, column: pd.Series):
        self.header = escape(name)
        self.cells, self.right = _formatted(column)
        self.where = _where(str(name))
        self.natural = max([display_width(self.header), *map(display_width, self.cells)])
        fixed = self.right or str(name).lower() in _IDS
        longest = max(map(display_width, self.cells), default=0)
        # numbers and ids keep their values whole (their header may be cut); text shrinks to TEXT_FLOOR
        self.floor = min(self.natural, max(longest, HEADER_FLOOR)) if fixed else min(self.natural, TEXT_FLOOR)
        self.fixed = fixed

    def render(self, width: int) -> tuple[str, list[str]]:
        header = shorten(self.header, width, "middle" if self.fixed else "right")
        cells = [shorten(c, width, self.where) for c in self.cells]
        return pad(header, width, right=self.right), [pad(c, width, right=self.right) for c in cells]


def _widths(columns: list[_Column], width: int | None) -> list[int]:
    """Column widths within ``width``: fixed columns at their floor or natural width, the text columns filled
    from the narrowest (each gets its whole width or an even share of what is left)."""
    if width is None:
        return [c.natural for c in columns]
    room = width - len(GAP) * (len(columns) - 1)
    out = [c.natural for c in columns]
    if sum(out) <= room:
        return out
    fixed = [i for i, c in enumerate(columns) if c.fixed]
    text = sorted((i for i, c in enumerate(columns) if not c.fixed), key=lambda i: columns[i].natural)
    deficit = sum(columns[i].floor for i in text) - (room - sum(out[i] for i in fixed))
    for i in sorted(fixed, key=lambda i: columns[i].floor - out[i]):  # the longest headers above their values
        if deficit <= 0:  # first: numbers and ids shorten their headers only so that text keeps its floor
            break
        cut = min(out[i] - columns[i].floor, deficit)
        out[i] -= cut
        deficit -= cut
    left = room - sum(out[i] for i in fixed)
    for k, i in enumerate(text):
        share = left // (len(text) - k) if left > 0 else 0
        out[i] = max(min(columns[i].natural, share), columns[i].floor)
        left -= out[i]
    return [max(min(w, width), 1) for w in out]


def _blocks(columns: list[_Column], width: int) -> list[list[int]]:
    """Column indices of each block: as many columns per block as fit within ``width``, numbers and ids at their
    whole width (split in blocks, a header need not be cut), text at its floor (it may widen in its block)."""
    def need_of(c: _Column) -> int:
        return min(c.natural if c.fixed else c.floor, width)

    first = need_of(columns[0])
    repeat = first <= width // 3
    blocks, current, used = [], [], 0
    for i, c in enumerate(columns):
        need = need_of(c)
        if current and used + len(GAP) + need > width:
            blocks.append(current)
            fits_beside = repeat and first + len(GAP) + need <= width
            current, used = ([0], first) if fits_beside else ([], 0)
        used += need + (len(GAP) if current else 0)
        current.append(i)
    blocks.append(current)
    return blocks


def _lines(columns: list[_Column], width: int | None) -> list[str]:
    widths = _widths(columns, width)
    rendered = [c.render(w) for c, w in zip(columns, widths)]
    header = GAP.join(h for h, _ in rendered).rstrip()
    rows = [GAP.join(parts).rstrip() for parts in zip(*(cells for _, cells in rendered))]
    return [header, *rows]


def text_table(df: pd.DataFrame, width: int | None = None) -> str:
    """``df`` as a table (the module docstring), each line within ``width`` columns when given; ends with a
    line feed.  No rows: ``(no rows)``."""
    if len(df) == 0:
        return "(no rows)\n"
    if df.columns.empty:
        return f"({len(df)} rows, no columns)\n"
    columns = [_Column(name, df.iloc[:, j]) for j, name in enumerate(df.columns)]
    if width is None:
        return "\n".join(_lines(columns, None)) + "\n"
    floors = sum(min(c.floor, width) for c in columns) + len(GAP) * (len(columns) - 1)
    if floors <= width:
        return "\n".join(_lines(columns, width)) + "\n"
    out = []
    for block in _blocks(columns, width):
        out.append("\n".join(_lines([columns[i] for i in block], width)))
    return "\n\n".join(out) + "\n"
