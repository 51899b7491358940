"""HPCToolkit inputs beyond the readers' limits, for the memory tests and benchmark of the HPCToolkit readers
(tests/test_reader_memory_cali_hpct.py, bench/bench_memory_cali_hpct.py).

:func:`altered` copies an old-layout database (``experiment.xml`` + metric-db files, e.g. one of
:func:`perflake.generators.hpctoolkit.write_hpctoolkit_runs`) and changes its experiment.xml: an Info value of a
chosen size in the ``<Header>`` (written in blocks: it may be far larger than memory allows), a long procedure
name, or a call-tree body replaced by a chain of procedure frames of a chosen depth.  :func:`garbage` writes a
file of deterministic random bytes (a damaged ``meta.db``, ``profile.db`` or metric-db).  Same arguments, same
bytes.
"""

from __future__ import annotations

import pathlib
import random
import shutil

_BLOCK = 1 << 20


def chain_body(depth: int) -> str:
    """A ``<SecCallPathProfileData>`` body: ``depth`` procedure frames, each called from a call site of the
    previous one (procedure 1, file 1, load module 1 of the database's tables)."""
    opening = "".join(f'<C i="{2 * k + 3}" s="1" l="{k + 1}"><PF i="{2 * k + 2}" s="1" l="1" lm="1" f="1" n="1">'
                      for k in range(depth))
    return opening[len('<C i="3" s="1" l="1">'):] + "</PF></C>" * (depth - 1) + "</PF>"


def altered(src, dest, *, info_bytes: int = 0, proc_bytes: int = 0, body: str | None = None) -> pathlib.Path:
    """A copy of database ``src`` at ``dest`` with an ``<NV n="note">`` Info value of ``info_bytes`` bytes, the
    first procedure's name ``proc_bytes`` long, and/or the call tree replaced by ``body``."""
    src, dest = pathlib.Path(src), pathlib.Path(dest)
    dest.mkdir(parents=True)
    for f in src.iterdir():
        if f.name != "experiment.xml":
            shutil.copyfile(f, dest / f.name)
    xml = (src / "experiment.xml").read_text()
    if proc_bytes:
        start = xml.index('<Procedure i="1" n="') + len('<Procedure i="1" n="')
        xml = xml[:start] + "p" * proc_bytes + xml[xml.index('"', start):]
    if body is not None:
        start = xml.index("<SecCallPathProfileData>") + len("<SecCallPathProfileData>")
        xml = xml[:start] + body + xml[xml.index("</SecCallPathProfileData>"):]
    head, tail = xml, ""
    if info_bytes:
        cut = xml.index("<Header ")
        cut = xml.index(">", cut) + 1
        head, tail = xml[:cut] + '<Info><NV n="note" v="', '"/></Info>' + xml[cut:]
    with open(dest / "experiment.xml", "w", encoding="utf-8") as out:
        out.write(head)
        left = info_bytes
        while left > 0:
            out.write("v" * min(left, _BLOCK))
            left -= _BLOCK
        out.write(tail)
    return dest


def garbage(path, nbytes: int, *, head: bytes = b"", seed: int = 0) -> pathlib.Path:
    """``nbytes`` bytes: ``head`` then deterministic random bytes."""
    path, rng = pathlib.Path(path), random.Random(seed)
    with open(path, "wb") as out:
        out.write(head)
        left = nbytes - len(head)
        while left > 0:
            n = min(left, _BLOCK)
            out.write(rng.randbytes(n))
            left -= n
    return path
