"""What the readers whose input is one file share (Caliper ``.cali`` and json-split, cProfile, gprof2dot DOT,
Hatchet JSON, pyinstrument): the run is that file, ``sniff`` looks at its first bytes, ``read`` takes it whole.
Errors follow the reader contract (:mod:`perflake.readers.base`): one ReaderError naming the file."""

from __future__ import annotations

import mmap
import os

from perflake.errors import ReaderError


class SingleFileReader:
    """Base of a one-file reader's ``Reader`` class: the run's files are the file itself (the run id hashes it)."""

    @staticmethod
    def files(path: str) -> list[str]:
        return [os.fspath(path)]


def file_head(path: str, size: int) -> bytes | None:
    """The first ``size`` bytes of ``path``; None when it is no regular file or cannot be read (for ``sniff``)."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return None


def map_file(path: str) -> bytes | mmap.mmap:
    """The bytes of ``path`` mapped read-only, for readers of binary files that decode structures where they lie
    (a file smaller than a page is read); a ReaderError naming it when it cannot be read.  Nothing is read until
    it is used, and the pages used are the kernel's to drop: memory grows with what the reader takes, not with
    the file.  The mapping lives as long as the arrays viewing it."""
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size < mmap.PAGESIZE:
                return fh.read()
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise ReaderError(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def file_bytes(path: str) -> bytes:
    """Every byte of ``path``; a ReaderError naming it when it cannot be read or is empty."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ReaderError(path, exc.strerror or str(exc)) from None
    if not data:
        raise ReaderError(path, "an empty file")
    return data


def file_text(path: str) -> str:
    """``path`` as UTF-8 text (a byte order mark dropped), as :func:`file_bytes` reads it; a ReaderError naming it when
    it is not UTF-8."""
    try:
        return file_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReaderError(path, f"not UTF-8 text (byte {exc.start})") from None
