"""Bounded memory of the Caliper (``.cali``, json-split) and HPCToolkit (experiment.xml, metric-db, v4 ``*.db``)
readers (issue 23, item 2): generated inputs read in a child process under an address-space limit
(``RLIMIT_AS``), which reports its own peak RSS growth over what a first read of a tiny valid input of the same
format took (VmHWM reset after that read: ru_maxrss would keep a parent's peak across fork and exec).

* inputs beyond a limit of readers/limits.py (a 50 MB attribute, a name too long, a call path too deep, too many
  nodes, binary garbage) fail with exit status 1 and exactly one line naming the file and the limit, having
  grown by a few MiB: they were refused after reading a bounded part of the file;
* inputs within the limits are read, with a peak that follows the call tree and rows, not the file.

Node-count cases run with MAX_NODES lowered in the child (a file of 5 million nodes is too slow to generate
here); every other case uses the real limits.  Memory is asserted, never time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from perflake.generators.caliper_sized import write_cali, write_json_split
from perflake.generators.hpctoolkit import write_hpctoolkit_runs
from perflake.generators.hpctoolkit_sized import altered, chain_body, garbage
from perflake.generators.hpctoolkit_v4 import write_hpctoolkit_v4_runs
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_CALL_DEPTH, MAX_FRAME_TEXT

MB = 1 << 20
ADDRESS_SPACE = 1536 * MB  # the child's RLIMIT_AS: the unfixed .cali reader took 978 MB for a 50 MB attribute

CHILD = textwrap.dedent("""
    import json, sys
    import numpy, pyarrow, pyarrow.compute, pyarrow.csv  # the baseline includes the libraries a reader uses
    import perflake.readers.limits as limits
    for name, value in json.loads(sys.argv[3]).items():  # lowered limits, set before any reader is imported
        setattr(limits, name, value)
    from perflake.errors import PerflakeError
    from perflake.readers import get_reader
    reader = get_reader(sys.argv[1])
    reader.read(sys.argv[4])  # a tiny valid input first: what a first read imports and sets up is no growth
    # peak RSS of this process image: VmHWM (ru_maxrss keeps the parent's peak across fork and exec), reset to
    # the current RSS after the warm-up (Linux clear_refs 5)
    status = lambda key: next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key))
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    base = status("VmRSS:")
    peak = lambda: status("VmHWM:")
    try:
        rows = reader.read(sys.argv[2])
    except PerflakeError as exc:
        print(json.dumps({"growth_kb": peak() - base}))
        sys.stderr.write(str(exc) + "\\n")
        sys.exit(1)
    print(json.dumps({"growth_kb": peak() - base, "frames": rows.frames.num_rows, "rows": rows.values.num_rows}))
""")


def _limit_as():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.fixture(scope="module", autouse=True)
def tiny_inputs(tmp_path_factory):
    """A tiny valid input per reader, read first by every child (its warm-up)."""
    tmp = tmp_path_factory.mktemp("tiny")
    TINY.update(caliper=write_cali(tmp / "t.cali", regions=5), caliper_json=write_json_split(tmp / "t.json", nodes=5),
                hpctoolkit=write_hpctoolkit_runs(tmp / "h", nodes=20, ranks=1)[0],
                hpctoolkit_v4=write_hpctoolkit_v4_runs(tmp / "v", nodes=20, ranks=1)[0])


TINY: dict = {}


def read_in_child(kind: str, path, **limits) -> tuple[int, dict, str]:
    """(exit status, the child's report, its stderr) of reading ``path`` with reader ``kind``."""
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}  # mimalloc reserves address space up front
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), json.dumps(limits), str(TINY[kind])],
                          capture_output=True, text=True, env=env, preexec_fn=_limit_as, timeout=600)
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def assert_refused(kind: str, path, named, *words, most_mb: float = 24, **limits) -> None:
    """Reading fails with one line ``<named>: ...`` holding ``words``, after growing by less than ``most_mb``."""
    code, report, err = read_in_child(kind, path, **limits)
    assert code == 1 and report, (code, report, err[-2000:])
    assert err.count("\n") == 1 and err.startswith(f"{named}: "), err[-2000:]
    for word in ("limit", *words):
        assert word in err, (word, err)
    assert report["growth_kb"] < most_mb * 1024, report


# -- .cali ---------------------------------------------------------------------------------------------------


def test_cali_huge_global_is_refused_after_reading_about_the_limit(tmp_path):
    path = write_cali(tmp_path / "big.cali", regions=20, global_bytes=50 * MB)
    assert path.stat().st_size > 50 * MB
    assert_refused("caliper", path, path, f"more than {MAX_ATTRIBUTE_TEXT + MAX_FRAME_TEXT} bytes")


def test_cali_global_just_below_the_limit_is_read(tmp_path):
    path = write_cali(tmp_path / "ok.cali", regions=20, global_bytes=MAX_ATTRIBUTE_TEXT)
    code, report, err = read_in_child("caliper", path)
    assert code == 0 and report["frames"] == 20 and report["rows"] == 20, err[-2000:]


def test_cali_global_over_the_limit_within_a_line_is_refused(tmp_path):
    path = write_cali(tmp_path / "over.cali", regions=20, global_bytes=MAX_ATTRIBUTE_TEXT + 1000)
    assert_refused("caliper", path, path, f"a value of more than {MAX_ATTRIBUTE_TEXT} bytes")


def test_cali_long_region_name_is_refused(tmp_path):
    path = write_cali(tmp_path / "name.cali", regions=20, long_name=2 * MAX_FRAME_TEXT)
    assert_refused("caliper", path, path, f"{2 * MAX_FRAME_TEXT} bytes", str(MAX_FRAME_TEXT))


def test_cali_path_deeper_than_the_limit_is_refused(tmp_path):
    path = write_cali(tmp_path / "deep.cali", regions=MAX_CALL_DEPTH + 10, chain=True)
    assert_refused("caliper", path, path, f"deeper than {MAX_CALL_DEPTH}")


def test_cali_path_at_the_limit_is_read(tmp_path):
    path = write_cali(tmp_path / "deep.cali", regions=MAX_CALL_DEPTH, chain=True)
    code, report, err = read_in_child("caliper", path)
    assert code == 0 and report["frames"] == MAX_CALL_DEPTH, err[-2000:]


def test_cali_too_many_nodes_is_refused(tmp_path):
    path = write_cali(tmp_path / "wide.cali", regions=3000)
    assert_refused("caliper", path, path, "more than 1000", MAX_NODES=1000)


def test_cali_garbage_is_refused_in_bounded_memory(tmp_path):
    path = garbage(tmp_path / "junk.cali", 64 * MB, head=b"__rec=node,id=12,attr=8,data=x,parent=3\n")
    code, report, err = read_in_child("caliper", path)
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"{path}: line 2"), err[-2000:]
    assert report["growth_kb"] < 24 * 1024, report


def test_cali_memory_follows_the_rows_not_the_text(tmp_path):
    """A profile of 4,000 regions x 64 ranks (256,000 records, one per row): the unfixed reader grew by 14 times
    the file (its text whole, its lines, then a tuple, a list and strings per record); now a record costs its ids
    and values as text plus a few words until it is a row (about 150 bytes a row, the text is 53)."""
    path = write_cali(tmp_path / "rows.cali", regions=4000, ranks=64, name_bytes=40)
    size = path.stat().st_size
    code, report, err = read_in_child("caliper", path)
    assert code == 0 and report["frames"] == 4000 and report["rows"] == 4000 * 64, err[-2000:]
    assert report["growth_kb"] * 1024 < 3.5 * size, (report, size)


# -- json-split ----------------------------------------------------------------------------------------------


def test_json_huge_metadata_is_refused_after_reading_about_the_limit(tmp_path):
    path = write_json_split(tmp_path / "big.json", nodes=50, meta_bytes=50 * MB)
    assert_refused("caliper_json", path, path, f"a string of more than {MAX_ATTRIBUTE_TEXT} bytes")


def test_json_long_label_is_refused(tmp_path):
    path = write_json_split(tmp_path / "label.json", nodes=50, long_label=2 * MAX_FRAME_TEXT)
    assert_refused("caliper_json", path, path, f"more than {MAX_FRAME_TEXT} bytes")


def test_json_path_deeper_than_the_limit_is_refused(tmp_path):
    path = write_json_split(tmp_path / "deep.json", nodes=MAX_CALL_DEPTH + 10, chain=True)
    assert_refused("caliper_json", path, path, f"deeper than {MAX_CALL_DEPTH}")


def test_json_too_many_nodes_is_refused_before_parsing_them(tmp_path):
    path = write_json_split(tmp_path / "wide.json", nodes=3000)
    assert_refused("caliper_json", path, path, "more than 1000 nodes", MAX_NODES=1000)


def test_json_memory_follows_the_rows(tmp_path):
    path = write_json_split(tmp_path / "rows.json", nodes=4000, rows_per_node=64)
    size = path.stat().st_size
    code, report, err = read_in_child("caliper_json", path)
    assert code == 0 and report["frames"] == 4000 and report["rows"] == 4000 * 64, err[-2000:]
    assert report["growth_kb"] * 1024 < 6 * size, (report, size)  # 3 float64 columns of 256,000 rows, and work


# -- HPCToolkit experiment.xml and metric-db ------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    return write_hpctoolkit_runs(tmp_path_factory.mktemp("hpct"), nodes=300, ranks=2)[0]


def test_xml_huge_info_value_is_refused_after_reading_about_the_limit(small_db, tmp_path):
    db = altered(small_db, tmp_path / "db", info_bytes=50 * MB)
    assert_refused("hpctoolkit", db, db / "experiment.xml", f"at most {MAX_ATTRIBUTE_TEXT} bytes")


def test_xml_long_procedure_name_is_refused(small_db, tmp_path):
    db = altered(small_db, tmp_path / "db", proc_bytes=2 * MAX_FRAME_TEXT)
    assert_refused("hpctoolkit", db, db / "experiment.xml", f"{2 * MAX_FRAME_TEXT} bytes", str(MAX_FRAME_TEXT))


def test_xml_path_deeper_than_the_limit_is_refused(small_db, tmp_path):
    db = altered(small_db, tmp_path / "db", body=chain_body(MAX_CALL_DEPTH + 10))
    assert_refused("hpctoolkit", db, db / "experiment.xml", f"deeper than {MAX_CALL_DEPTH}")


def test_xml_too_many_nodes_is_refused(small_db):
    assert_refused("hpctoolkit", small_db, small_db / "experiment.xml", "more than 100", MAX_NODES=100)


def test_xml_is_streamed(small_db, tmp_path):
    """40 MB of comments between the elements: the reader grows by what the tree needs, not by the file."""
    db = altered(small_db, tmp_path / "db")
    xml = db / "experiment.xml"
    text = xml.read_text()
    cut = text.index("</HPCToolkitExperiment>")
    with open(xml, "w") as out:
        out.write(text[:cut])
        line = "<!-- " + "c" * 90 + " -->\n"
        for _ in range(40):
            out.write(line * (MB // len(line)))
        out.write(text[cut:])
    assert xml.stat().st_size > 40 * MB
    code, report, err = read_in_child("hpctoolkit", db)
    assert code == 0 and report["rows"] == 2 * report["frames"] > 300, err[-2000:]
    assert report["growth_kb"] < 16 * 1024, report


def test_metric_db_garbage_is_refused_without_reading_it(small_db, tmp_path):
    db = altered(small_db, tmp_path / "db")
    victim = sorted(db.glob("*.metric-db"))[0]
    garbage(victim, 64 * MB, head=victim.read_bytes()[:32])  # a valid header, then far too many bytes
    code, report, err = read_in_child("hpctoolkit", db)
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"{victim}: trailing bytes"), err[-2000:]
    assert report["growth_kb"] < 24 * 1024, report


# -- HPCToolkit v4 -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def v4_db(tmp_path_factory):
    return write_hpctoolkit_v4_runs(tmp_path_factory.mktemp("v4"), nodes=300, ranks=4)[0]


@pytest.mark.parametrize("name, head", [("meta.db", b"HPCTOOLKITmeta\x04\x00"),
                                        ("profile.db", b"HPCTOOLKITprof\x04\x00"), ("meta.db", b"")])
def test_v4_garbage_is_refused_in_bounded_memory(v4_db, tmp_path, name, head):
    import shutil

    db = tmp_path / "db"
    shutil.copytree(v4_db, db)
    garbage(db / name, 64 * MB, head=head, seed=len(head))
    code, report, err = read_in_child("hpctoolkit_v4", db)
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"{db / name}: "), err[-2000:]
    assert report["growth_kb"] < 24 * 1024, report  # mapped: the 64 MB are never read whole


def test_v4_reads_a_mapped_database(v4_db):
    code, report, err = read_in_child("hpctoolkit_v4", v4_db)
    assert code == 0 and report["frames"] > 300 and report["rows"] > 0, err[-2000:]
