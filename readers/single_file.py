"""What the readers whose input is one file share (Caliper ``.cali`` and json-split, cProfile, gprof2dot DOT,
Hatchet JSON, pyinstrument): the run is that file, ``sniff`` looks at its first bytes, ``read`` takes it whole.
Errors follow the reader contract (:mod:`perflake.readers.base`): one ReaderError naming the file."""

from __future__ import annotations

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
