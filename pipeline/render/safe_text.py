"""Text that is safe and fits on a terminal: the one place perflake escapes control characters, measures and
shortens text to a column width, and decides on colour.

* :func:`escape` shows every character that could move the cursor, change colours, retitle the window or reorder
  the line visibly instead of sending it: C0 controls (U+0000-U+001F) and DEL, C1 controls (U+0080-U+009F,
  among them the one-byte CSI U+009B), the line and paragraph separators U+2028/U+2029 and the bidirectional
  controls (U+061C, U+200E/U+200F, U+202A-U+202E, U+2066-U+2069: the "Trojan Source" characters), and lone
  surrogates (the undecodable bytes of a file name, which a UTF-8 stream would refuse).  Tab, line
  feed and carriage return become ``\\t``, ``\\n``, ``\\r``; the others ``\\xNN`` or ``\\uNNNN``, as Python
  spells them.  A backslash is left as is (the exact value is what ``--format json`` gives, and ``csv`` to a
  pipe or a file);
* :func:`display_width` counts terminal columns: East Asian wide and full-width characters take 2, combining
  marks and format characters 0;
* :func:`shorten` cuts text to a width with an ellipsis ``…`` at the end (``right``), in the middle
  (``middle``, for function names: both the scope and the signature stay) or at the start (``left``, for paths:
  the file and the leaf frame stay);
* :func:`output_width` is the width to fit standard output to: ``$COLUMNS`` when set to a positive number, else
  the terminal's width when standard output is a terminal, else None: piped or redirected output is not cut
  (``perflake runs | grep x`` sees whole values; ``COLUMNS=100 perflake runs | less`` fits them to 100);
* :func:`colour_wanted` follows https://no-color.org: an explicit ``--color``/``--no-color`` wins, else colour
  only on a terminal, and never when ``$NO_COLOR`` is set and not empty or ``$TERM`` is ``dumb``.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata

ELLIPSIS = "\u2026"
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
# lone surrogates too: a file name of undecodable bytes (os.fsdecode) cannot be written to a UTF-8 stream
_UNSAFE = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *_BIDI, *range(0xD800, 0xE000))


def _spelled(code: int) -> str:
    return _NAMED.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


_TABLE = {code: _spelled(code) for code in _UNSAFE}


def escape(text) -> str:
    """``text`` (made a string) with each terminal control character spelled out visibly (module docstring)."""
    return str(text).translate(_TABLE)


_PIECES = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|[tnr])|.", re.S)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes (after :func:`escape`: no control characters left)."""
    return len(text) if text.isascii() else sum(_char_width(ch) for ch in text)


def _take(text: str, width: int, *, from_end: bool = False) -> str:
    """The longest start (or end) of ``text`` that fits in ``width`` columns; an escape of :func:`escape`
    (``\\x1b``) is kept whole or left out, not cut in two."""
    pieces = _PIECES.findall(text)
    if from_end:
        pieces.reverse()
    kept, used = [], 0
    for piece in pieces:
        used += display_width(piece)
        if used > width:
            break
        kept.append(piece)
    if from_end:
        kept.reverse()
    return "".join(kept)


def _take_end(text: str, width: int) -> str:
    return _take(text, width, from_end=True)


def shorten(text: str, width: int, where: str = "right") -> str:
    """``text`` cut to at most ``width`` columns with ``…`` where text was removed: at the ``right``, in the
    ``middle`` or at the ``left``; unchanged when it fits."""
    if display_width(text) <= width:
        return text
    if width <= 0:
        return ""
    room = width - 1  # the ellipsis takes one column
    if where == "left":
        return ELLIPSIS + _take_end(text, room)
    if where == "middle" and room >= 2:
        head = _take(text, (room + 1) // 2)
        return head + ELLIPSIS + _take_end(text, room - display_width(head))
    return _take(text, room) + ELLIPSIS


def pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` columns, on the left when ``right`` (aligned right)."""
    fill = " " * max(width - display_width(text), 0)
    return fill + text if right else text + fill


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def output_width(stream=None) -> int | None:
    """Columns to fit ``stream`` (default standard output) to, or None for no limit (module docstring)."""
    stream = sys.stdout if stream is None else stream
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not _is_tty(stream):
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, ValueError, OSError):
        return None


def on_terminal(stream=None) -> bool:
    """Whether ``stream`` (default standard output) is a terminal."""
    return _is_tty(sys.stdout if stream is None else stream)


def colour_wanted(requested: bool | None = None, stream=None) -> bool:
    """Colour or not: ``requested`` when given (``--color`` / ``--no-color`` override $NO_COLOR, as
    no-color.org asks), else only on a terminal without $NO_COLOR (non-empty) and with a $TERM other than dumb."""
    if requested is not None:
        return bool(requested)
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    return on_terminal(stream)
