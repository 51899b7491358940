"""A safe reader of the ``marshal`` data in a pstats file (``cProfile``/``profile`` ``dump_stats``).

Python's own ``marshal.load`` is documented as not safe against erroneous or malicious data, cannot read the
marshal of another major version (Hatchet then prints "Incompatible pstats file" and fails), and builds code
objects.  A pstats file only holds dicts, tuples, strings, integers and floats, so this reader decodes that
subset of the format (CPython's ``Python/marshal.c``: versions 0-2 of Python 2, 3-5 of Python 3) and refuses the
rest.  Checked at every step: lengths against the bytes left, nesting depth, integer size, reference indices.

The file is decoded a block at a time (:func:`load`): memory follows the objects built, not the file, and a
file that is not marshal (2 GB of NULs) is refused at its first byte.  Limits (readers/limits.py): a string at
most MAX_FRAME_TEXT bytes (a pstats file holds only file and function names), at most MAX_NODES functions (the
outer dict's entries) and call_graph.MAX_EDGES callers in all (the inner dicts' entries).
"""

from __future__ import annotations

import os
import struct

from perflake.readers.limits import MAX_EDGES, MAX_FRAME_TEXT, MAX_NODES

FLAG_REF = 0x80
MAX_DEPTH = 64  # a pstats file nests 4 deep (dict / tuple / dict / tuple)
MAX_LONG_DIGITS = 8  # 8 x 15 bits: every counter and line number of a real profile fits
MAX_CALLERS = MAX_EDGES  # callers of all functions: the call edges
_BLOCK = 1 << 20


class MarshalError(ValueError):
    """The data is not (this subset of) marshal; the message says where."""


class LimitError(MarshalError):
    """The data exceeds a limit of readers/limits.py; the message says which."""


class _Decoder:
    """Decodes ``data``, or the file ``fh`` of ``size`` bytes a block at a time (``data`` then holds the bytes
    from file offset ``base``)."""

    def __init__(self, data: bytes, fh=None, size: int | None = None):
        self.data, self.pos, self.base, self.fh = data, 0, 0, fh
        self.size = len(data) if size is None else size
        self.refs: list = []  # objects written with FLAG_REF (Python 3), by index
        self.interned: list = []  # Python 2's interned strings ('t'), for 'R'
        self.functions = self.callers = 0

    def fail(self, what: str):
        raise MarshalError(f"{what} at byte {self.base + self.pos}")

    def left(self) -> int:
        return self.size - self.base - self.pos

    def _fill(self, n: int) -> None:
        """At least ``n`` bytes in ``data`` from ``pos`` (as many as the file has)."""
        if self.fh is not None and self.pos + n > len(self.data):
            rest = self.data[self.pos:]
            self.base += self.pos
            self.data, self.pos = rest + self.fh.read(max(n - len(rest), _BLOCK)), 0

    def peek(self) -> int | None:
        self._fill(1)
        return self.data[self.pos] if self.pos < len(self.data) else None

    def take(self, n: int) -> bytes:
        if n < 0 or n > self.left():
            self.fail(f"{n} bytes wanted, {self.left()} left")
        self._fill(n)
        if self.pos + n > len(self.data):  # the file shrank while read
            self.fail(f"{n} bytes wanted, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def i32(self) -> int:
        return struct.unpack("<i", self.take(4))[0]

    def count(self) -> int:
        n = self.i32()
        if n < 0 or n > self.left():  # every item takes a byte at least
            self.fail(f"a count of {n}")
        return n

    def string(self) -> bytes:
        n = self.count()
        if n > MAX_FRAME_TEXT:
            raise LimitError(f"a string of {n} bytes at byte {self.base + self.pos} (more than {MAX_FRAME_TEXT}, "
                             "readers/limits.py: MAX_FRAME_TEXT)")
        return self.take(n)

    def text(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:  # Python 2 byte strings: any byte is a character
            return raw.decode("latin-1")

    def entry(self, depth: int) -> None:
        """Count a new dict key against the limits: the outer dict's are functions, the inner ones' callers."""
        if depth == 0:
            self.functions += 1
            if self.functions > MAX_NODES:
                raise LimitError(f"more than {MAX_NODES} functions (readers/limits.py: MAX_NODES)")
        else:
            self.callers += 1
            if self.callers > MAX_CALLERS:
                raise LimitError(f"more than {MAX_CALLERS} callers in all (readers/limits.py: MAX_EDGES)")

    def value(self, depth: int = 0):
        if depth > MAX_DEPTH:
            self.fail(f"nested more than {MAX_DEPTH} deep")
        start = self.base + self.pos
        code = self.take(1)[0]
        flag, code = code & FLAG_REF, chr(code & ~FLAG_REF)
        slot = None
        if flag:
            slot = len(self.refs)
            self.refs.append(_PENDING)
        if code == "N":
            out = None
        elif code in "TF":
            out = code == "T"
        elif code == "i":
            out = self.i32()
        elif code == "I":
            out = struct.unpack("<q", self.take(8))[0]
        elif code == "l":
            n = self.i32()
            if abs(n) > MAX_LONG_DIGITS:
                self.fail(f"an integer of {abs(n)} 15-bit digits")
            digits = struct.unpack(f"<{abs(n)}H", self.take(2 * abs(n)))
            if any(d >= 1 << 15 for d in digits):
                self.fail("an integer digit beyond 15 bits")
            out = sum(d << (15 * k) for k, d in enumerate(digits)) * (-1 if n < 0 else 1)
        elif code == "g":
            out = struct.unpack("<d", self.take(8))[0]
        elif code == "f":
            raw = self.take(self.take(1)[0])
            try:
                out = float(raw.decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                self.fail(f"a float written {raw[:20]!r}")
        elif code in "stuaA":
            raw = self.string()
            if code in "aA" and not raw.isascii():
                self.fail("non-ASCII bytes in an ASCII string")
            out = self.text(raw)
            if code == "t":
                self.interned.append(out)
        elif code in "zZ":
            raw = self.take(self.take(1)[0])
            out = raw.decode("ascii") if raw.isascii() else self.fail("non-ASCII bytes in an ASCII string")
        elif code == "R":
            k = self.i32()
            if not 0 <= k < len(self.interned):
                self.fail(f"a reference to interned string {k} of {len(self.interned)}")
            out = self.interned[k]
        elif code == "r":
            k = self.i32()
            if not 0 <= k < len(self.refs) or self.refs[k] is _PENDING:
                self.fail(f"a reference to object {k}, which is not (yet) read")
            out = self.refs[k]
        elif code in "()":
            n = self.take(1)[0] if code == ")" else self.count()
            out = tuple(self.value(depth + 1) for _ in range(n))
        elif code == "{":
            out, n_keys = {}, 0
            if slot is not None:
                self.refs[slot] = out  # a dict's entries may refer to it
            while True:
                if self.peek() == ord("0"):
                    self.pos += 1
                    break
                key = self.value(depth + 1)
                try:
                    out[key] = self.value(depth + 1)
                except TypeError:
                    self.fail(f"an unhashable dict key {type(key).__name__}")
                if len(out) > n_keys:  # a new key (a repeated one replaces its value: no memory)
                    n_keys += 1
                    self.entry(depth)
        else:
            self.pos = start - self.base
            self.fail(f"marshal type {code!r} (0x{ord(code):02x}), which a pstats file does not hold")
        if slot is not None:
            self.refs[slot] = out
        return out


class _Pending:
    pass


_PENDING = _Pending()


def head_key(data: bytes):
    """The first key of the dict that ``data`` starts with (a few bytes of it suffice), or None when ``data``
    does not start with a non-empty marshalled dict."""
    if not data or data[0] & ~FLAG_REF != ord("{"):
        return None
    dec = _Decoder(data)
    dec.pos = 1
    if data[0] & FLAG_REF:
        dec.refs.append(_PENDING)
    try:
        return dec.value()
    except MarshalError:
        return None


def loads(data: bytes):
    """The object marshalled in ``data`` (one object filling all of ``data``); MarshalError when it is not."""
    dec = _Decoder(data)
    out = dec.value()
    if dec.pos != len(data):
        dec.fail(f"{len(data) - dec.pos} bytes after the data")
    return out


def load(fh):
    """The object marshalled in the binary file ``fh`` (one object filling the file), read a block at a time."""
    dec = _Decoder(b"", fh, os.fstat(fh.fileno()).st_size)
    out = dec.value()
    if dec.left():
        dec.fail(f"{dec.left()} bytes after the data")
    return out
