"""Reading a Caliper ``.cali`` stream in bounded memory (for :mod:`perflake.readers.cali_format`): its lines block
by block with the length limits of :mod:`perflake.readers.limits`, and its records stored compactly.

* :func:`line_blocks` reads :data:`BLOCK` bytes at a time, cut at line ends, never the whole file; a line longer
  than :data:`MAX_LINE` bytes is refused once that much of it is read (a line within one block is short enough,
  so only a line begun in the previous block's tail is measured);
* :class:`Records` keeps the ``ctx`` (or ``globals``) records column-wise: the line numbers in an array, the
  ``attr`` id tuples shared among the records that repeat them (the parser caches them), and the raw ``ref``
  and ``data`` texts of up to :data:`JOIN` records joined into one string (parsed again when iterated), so a
  record costs about the bytes of its ids and values plus two words -- less than its line -- instead of tuples,
  a list and a string per value.
"""

from __future__ import annotations

from array import array

from perflake.errors import ReaderError
from perflake.readers.base import shown
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_FRAME_TEXT

BLOCK = 1 << 20  # bytes read at a time (at most MAX_LINE: a line within one block is short enough)
MAX_LINE = MAX_ATTRIBUTE_TEXT + MAX_FRAME_TEXT  # the longest record line: a value at its limit and the rest
JOIN = 1 << 16  # records whose data text is joined into one string
_NO_DATA = object()


def line_blocks(path: str):
    """The complete lines of ``path``, block by block (lists of str, invalid UTF-8 as U+FFFD), then the text after
    the last newline (a str, empty when the file ends with one).  A ReaderError naming the file when it cannot
    be read, does not start as a .cali file or holds a line longer than MAX_LINE."""
    try:
        with open(path, "rb") as fh:
            carry = b""
            while chunk := fh.read(BLOCK):
                if fh.tell() == len(chunk) and not chunk.startswith(b"__rec="):
                    raise ReaderError(path, "not a Caliper .cali file: it does not start with '__rec='")
                buf = carry + chunk if carry else chunk
                first = buf.find(b"\n") if carry else 0
                if first > MAX_LINE or (first < 0 and len(buf) > MAX_LINE):
                    raise ReaderError(path, f"a line of more than {MAX_LINE} bytes (limit: values of at most "
                                            f"{MAX_ATTRIBUTE_TEXT} bytes)")
                cut = buf.rfind(b"\n") + 1
                carry = buf[cut:]
                if cut:
                    lines = buf[:cut].decode("utf-8", errors="replace").split("\n")
                    lines.pop()  # the empty text after the last newline
                    yield lines
            if fh.tell() == 0:
                raise ReaderError(path, "not a Caliper .cali file: it does not start with '__rec='")
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    yield carry.decode("utf-8", errors="replace")


def check_value(cf, lineno: int, value: str) -> None:
    """A ReaderError (``cf.error``) when a value (a node's, a global's) holds more than MAX_ATTRIBUTE_TEXT bytes."""
    if len(value) > MAX_ATTRIBUTE_TEXT // 4 and len(value.encode("utf-8", "surrogatepass")) > MAX_ATTRIBUTE_TEXT:
        raise cf.error(lineno, f"a value of more than {MAX_ATTRIBUTE_TEXT} bytes (limit): {shown(value[:40])}")


class Records:
    """Records in file order; iterating gives ``(line, refs, attrs, values)`` with ``values`` a new list of str.

    ``raw`` (what :meth:`append` takes) is the text after ``data=`` of a line without escapes (``v1=v2``), the
    tuple of unescaped values of a line with escapes, or None for a record without ``data``."""

    __slots__ = ("lines", "attrs", "_joined", "_pending", "_special", "_refs")

    def __init__(self):
        self.lines = array("q")
        self.attrs: list[tuple] = []
        self._refs: dict[int, tuple] = {}  # record -> its ref ids, when they are not its ref text read as ints
        self._joined: list[str] = []  # the data texts of JOIN records each, "\n"-separated (no raw text holds one)
        self._pending: list[str] = []
        self._special: dict[int, object] = {}  # record -> its tuple of unescaped values, or _NO_DATA

    def append(self, lineno: int, refs: tuple, attrs: tuple, raw, ref_text: str | None = None) -> None:
        """``ref_text``: the ``ref=`` text when ``refs`` are its ids as written (no re-bound id), else None."""
        if not isinstance(raw, str):
            self._special[len(self.lines)] = _NO_DATA if raw is None else raw
            raw = ""
        if ref_text is None:
            self._refs[len(self.lines)] = refs
            ref_text = ""
        self.lines.append(lineno)
        self.attrs.append(attrs)
        pending = self._pending
        pending.append(ref_text)
        pending.append(raw)
        if len(pending) >= 2 * JOIN:
            self._joined.append("\n".join(pending))
            pending.clear()

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self):
        if self._pending:
            self._joined.append("\n".join(self._pending))
            self._pending.clear()
        lines, attrs, special, held = self.lines, self.attrs, self._special, self._refs
        i = 0
        for joined in self._joined:
            texts = iter(joined.split("\n"))
            for ref_text, raw in zip(texts, texts):
                if special and i in special:
                    got = special[i]
                    values = [] if got is _NO_DATA else list(got)
                else:
                    values = raw.split("=")
                refs = held[i] if held and i in held else tuple(map(int, ref_text.split("=")))
                yield lines[i], refs, attrs[i], values
                i += 1
