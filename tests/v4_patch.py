"""Copies of a real HPCToolkit v4 database with their source-file records rewritten byte by byte.

The layout is read here straight from HPCToolkit's FORMATS.md (meta.db header: section 6 = Source Files,
``{pFiles u64, nFiles u32, szFile u16}``; a Source File Specification: ``{flags u32 @0x00, pPath u64 @0x08}``,
bit 0 of ``flags`` = ``copied``), independently of perflake's reader.  A path is rewritten in place: the new
text must not be longer than the stored one (the rest of its bytes become NULs), so every other pointer of the
file stays valid.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Callable

COPIED = 1


def source_files(data: bytes) -> list[tuple[int, int, int, str]]:
    """(record offset, flags, path pointer, path) of every source file record of a meta.db."""
    _size, section = struct.unpack_from("<QQ", data, 0x10 + 16 * 6)
    p_files, n_files, sz_file = struct.unpack_from("<QIH", data, section)
    out = []
    for i in range(n_files):
        at = p_files + i * sz_file
        flags, p_path = struct.unpack_from("<I4xQ", data, at)
        end = data.index(b"\0", p_path)
        out.append((at, flags, p_path, data[p_path:end].decode()))
    return out


def rewrite_sources(src: Path, dst: Path, change: Callable[[int, str], tuple[int, str] | None]) -> Path:
    """Copy the database ``src`` to ``dst`` (meta.db, profile.db) with ``change(flags, path)`` applied to each
    source file record: it returns the new (flags, path), or None to leave the record alone."""
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "profile.db", dst / "profile.db")
    data = bytearray((src / "meta.db").read_bytes())
    for at, flags, p_path, path in source_files(bytes(data)):
        new = change(flags, path)
        if new is None:
            continue
        new_flags, new_path = new
        raw = new_path.encode()
        old_len = len(path.encode())
        assert len(raw) <= old_len, f"{new_path!r} is longer than the stored {path!r}"
        data[p_path : p_path + old_len] = raw + b"\0" * (old_len - len(raw))
        struct.pack_into("<I", data, at, new_flags)
    (dst / "meta.db").write_bytes(bytes(data))
    return dst
