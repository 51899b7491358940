"""A safe reader of the ``marshal`` data in a pstats file (``cProfile``/``profile`` ``dump_stats``).

Python's own ``marshal.load`` is documented as not safe against erroneous or malicious data, cannot read the
marshal of another major version (Hatchet then prints "Incompatible pstats file" and fails), and builds code
objects.  A pstats file only holds dicts, tuples, strings, integers and floats, so this reader decodes that
subset of the format (CPython's ``Python/marshal.c``: versions 0-2 of Python 2, 3-5 of Python 3) and refuses the
rest.  Checked at every step: lengths against the bytes left, nesting depth, integer size, reference indices.
"""

from __future__ import annotations

import struct

FLAG_REF = 0x80
MAX_DEPTH = 64  # a pstats file nests 4 deep (dict / tuple / dict / tuple)
MAX_LONG_DIGITS = 8  # 8 x 15 bits: every counter and line number of a real profile fits


class MarshalError(ValueError):
    """The data is not (this subset of) marshal; the message says where."""


class _Decoder:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0
        self.refs: list = []  # objects written with FLAG_REF (Python 3), by index
        self.interned: list = []  # Python 2's interned strings ('t'), for 'R'

    def fail(self, what: str):
        raise MarshalError(f"{what} at byte {self.pos}")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            self.fail(f"{n} bytes wanted, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def i32(self) -> int:
        return struct.unpack("<i", self.take(4))[0]

    def count(self) -> int:
        n = self.i32()
        if n < 0 or n > len(self.data) - self.pos:  # every item takes a byte at least
            self.fail(f"a count of {n}")
        return n

    def text(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:  # Python 2 byte strings: any byte is a character
            return raw.decode("latin-1")

    def value(self, depth: int = 0):
        if depth > MAX_DEPTH:
            self.fail(f"nested more than {MAX_DEPTH} deep")
        start = self.pos
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
            raw = self.take(self.count())
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
            out = {}
            if slot is not None:
                self.refs[slot] = out  # a dict's entries may refer to it
            while True:
                if self.pos < len(self.data) and self.data[self.pos] == ord("0"):
                    self.pos += 1
                    break
                key = self.value(depth + 1)
                try:
                    out[key] = self.value(depth + 1)
                except TypeError:
                    self.fail(f"an unhashable dict key {type(key).__name__}")
        else:
            self.pos = start
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
