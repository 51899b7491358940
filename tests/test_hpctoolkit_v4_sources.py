"""Issue 13 item 1: source files hpcprof copied into a v4 database are named by their original path.

FORMATS.md (Source File Specification): bit 0 of ``flags`` is ``copied``.  hpcprof stores a copied file as
``src/<original absolute path>`` (releases before mid-2023: ``<output directory>/src/<path>``, the form of
hpctoolkit-gamess: ``gamess-1n-siCap-gpu.d/src/opt/cray/...``).  Names, ``file`` attributes and call-path ids
must not depend on whether or where the sources were copied.  The variants are made from the real database by
rewriting its source file records (tests/v4_patch.py), so the rule is tested on bytes we control.
"""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from perflake.ingest.normalize import normalize
from perflake.readers.hpctoolkit_v4 import Reader, original_source_path
from v4_patch import COPIED, rewrite_sources, source_files

SAMPLE = "hpctoolkit-gamess"
OUTDIR = "gamess-1n-siCap-gpu.d/src/"
STL_MAP = "/opt/cray/pe/gcc/10.3.0/snos/include/g++/bits/stl_map.h"
PTHREAD = ("/lustre/orion/csc322/proj-shared/spack/build-stage/frontier/blue42u/spack-stage-libmonitor-2022.09.02-"
           "jhuqxa6o2sck6w7646u4ut2aevwtf4as/spack-src/src/pthread.c")


@pytest.mark.parametrize("stored, original", [
    ("src/home/u/app/x.c", "/home/u/app/x.c"),  # since mid-2023
    ("gamess-1n-siCap-gpu.d/src/opt/cray/x.h", "/opt/cray/x.h"),  # before: the output directory given to hpcprof
    ("/scratch/u/db.d/src/home/u/x.c", "/home/u/x.c"),  # an absolute output directory
    ("db/src/home/u/hpctoolkit/src/tool/a.c", "/home/u/hpctoolkit/src/tool/a.c"),  # only the first src component
    ("src/src/x.c", "/src/x.c"),  # an original path that starts with /src
    ("srcdir/x.c", "srcdir/x.c"),  # no src component (hatchet would make it "dir/x.c")
    ("x.c", "x.c"),
])
def test_original_source_path(stored, original):
    assert original_source_path(stored) == original


def _variants(base, tmp_path):
    """The real database (pre-2023 copied form) and three rewrites of it."""
    def new_form(flags, path):  # what hpcprof writes since mid-2023
        return (flags, "src/" + path[len(OUTDIR):]) if flags & COPIED else None

    def absolute_outdir(flags, path):
        return (flags, "/d/src/" + path[len(OUTDIR):]) if flags & COPIED else None

    def not_copied(flags, path):  # hpcprof run without copying sources: the original path, flag clear
        return (0, "/" + path[len(OUTDIR):]) if flags & COPIED else None

    return {"old form": base,
            "new form": rewrite_sources(base, tmp_path / "new", new_form),
            "absolute outdir": rewrite_sources(base, tmp_path / "abs", absolute_outdir),
            "not copied": rewrite_sources(base, tmp_path / "plain", not_copied)}


def test_the_sample_has_copied_and_plain_files(shared_data):
    records = source_files((shared_data(SAMPLE) / "meta.db").read_bytes())
    copied = [p for _, f, _, p in records if f & COPIED]
    assert len(records) == 52 and len(copied) == 7 and all(p.startswith(OUTDIR) for p in copied)
    assert any(p == PTHREAD for _, f, _, p in records if not f & COPIED)  # has a src component, not copied


def test_copies_give_identical_call_path_ids(shared_data, tmp_path):
    reads = {k: Reader().read(str(db)) for k, db in _variants(shared_data(SAMPLE), tmp_path).items()}
    norm = {k: normalize(r) for k, r in reads.items()}
    ids = {k: sorted(n.nodes.column("node_id").to_pylist()) for k, n in norm.items()}
    assert len(ids["old form"]) == 8410
    assert ids["new form"] == ids["old form"] == ids["absolute outdir"] == ids["not copied"]
    base = norm["old form"].metrics.sort_by([("node_id", "ascending"), ("rank", "ascending"), ("thread", "ascending")])
    for k, n in norm.items():
        assert n.metrics.sort_by([("node_id", "ascending"), ("rank", "ascending"),
                                  ("thread", "ascending")]).equals(base), k
    for k, r in reads.items():
        names, files = set(r.frames.column("name").to_pylist()), set(r.frames.column("file").to_pylist())
        assert any(n.startswith(f"line {STL_MAP}:") for n in names) and STL_MAP in files, k
        assert not any(OUTDIR in n or " src/" in n for n in names if n), k
        assert PTHREAD in files, k  # a file without the copied flag is left as it is
    # the in-database path is kept in the metadata
    assert reads["new form"].metadata["hpctoolkit.copied_sources"][STL_MAP] == "src" + STL_MAP
    assert reads["old form"].metadata["hpctoolkit.copied_sources"][STL_MAP] == OUTDIR + STL_MAP[1:]
    assert len(reads["absolute outdir"].metadata["hpctoolkit.copied_sources"]) == 7
    assert reads["not copied"].metadata["hpctoolkit.copied_sources"] == {}


def test_the_flag_decides(shared_data, tmp_path):
    """A stored path of the copied form whose flag is clear is an original path: it stays as it is (and so
    gets other call-path ids); setting the flag on a file that has no src component changes nothing."""
    base = shared_data(SAMPLE)
    cleared = rewrite_sources(base, tmp_path / "cleared", lambda f, p: (0, p) if f & COPIED else None)
    flagged = rewrite_sources(base, tmp_path / "flagged",
                              lambda f, p: (COPIED, p) if p.endswith("darshan-posix.c") else None)
    files = set(Reader().read(str(cleared)).frames.column("file").to_pylist())
    assert OUTDIR + STL_MAP[1:] in files and STL_MAP not in files
    ids = lambda db: set(normalize(Reader().read(str(db))).nodes.column("node_id").to_pylist())  # noqa: E731
    assert ids(cleared) != ids(base)
    rows = Reader().read(str(flagged))
    assert ids(flagged) == ids(base) and pc.sum(pc.equal(rows.frames.column("file"), PTHREAD)).as_py() > 0
