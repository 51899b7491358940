"""Hostile input (issue 7, item 5).

* experiment.xml with entity expansion (billion laughs, quadratic blow-up) or external entities / DTDs
  (file://, http://) is refused with a one-line message naming the file, in under 1 s and 100 MB (measured
  in a child process with ru_maxrss), without touching the file or the network;
* SQL injection attempts through call-path query strings, metric names, metadata keys and values and run
  ids leave the lake unchanged and end in a result or a one-line error, never a traceback.  ``--where`` is
  SQL by design (trusted), but it is parsed by DuckDB as one expression (``SQLExpression``) applied to a
  relation: it cannot hold a statement, so it cannot write; the tests try;
* regular expressions in queries are bounded in time: ``=~ "(a+)+$"`` over long names returns at once (RE2
  in pyarrow instead of Python's backtracking ``re``: pipeline/query/predicates.py).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import lake_files
from perflake import GraphFrame, Lake
from perflake.errors import QueryError
from perflake.query.predicates import python_to_re2

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
TABLES = ("runs", "nodes", "edges", "metrics")
EVIL = 'x"); drop table runs; --'  # a metric name, a node label, a metadata value...
QUOTED = "it's"


def lake_data(root: Path) -> dict[str, bytes]:
    """The lake's catalog and tables (what a failed ingest must not change; its log of attempts may grow)."""
    return {k: v for k, v in lake_files(root).items() if k == "perflake.json" or k.split("/")[0] in TABLES}


def cli(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*PERFLAKE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def assert_clean(proc: subprocess.CompletedProcess, codes=(0, 2)) -> None:
    """Exit code in ``codes``; stderr is empty or perflake's messages (no traceback, no warning).  A query error
    adds the query and a caret below its line, indented."""
    assert proc.returncode in codes, (proc.returncode, proc.stderr[-1500:])
    stray = [line for line in proc.stderr.splitlines() if not line.startswith(("perflake: ", "  "))]
    assert not stray, proc.stderr[-1500:]


# -- experiment.xml: entity expansion and external resources ---------------------------------------------------

LOL = "".join(f'<!ENTITY lol{k} "{("&lol" + str(k - 1) + ";") * 10}">' for k in range(1, 10))
HOSTILE_XML = {
    "billion-laughs": ('<!ENTITY lol0 "lol">' + LOL, "&lol9;"),
    "quadratic-blowup": (f'<!ENTITY a "{"a" * 50_000}">', "&a;" * 50_000),
    "external-file": ('<!ENTITY x SYSTEM "file://{secret}">', "&x;"),
    "external-http": ('<!ENTITY x SYSTEM "http://127.0.0.1:{port}/x.xml">', "&x;"),
    "parameter-entity-http": ('<!ENTITY % p SYSTEM "http://127.0.0.1:{port}/p.dtd"> %p;', ""),
    "unparsed-entity": ('<!ENTITY u SYSTEM "http://127.0.0.1:{port}/u" NDATA gif>', ""),
    "external-dtd-http": (None, ""),
}

MEASURE = textwrap.dedent("""
    import json, resource, sys, time
    from perflake.readers import get_reader
    from perflake.errors import ReaderError
    reader = get_reader("hpctoolkit")
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    try:
        reader.read(sys.argv[1])
        message = None
    except ReaderError as exc:
        message = str(exc)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"message": message, "seconds": seconds, "growth_mb": (peak - base) / 1024}))
""")


@pytest.fixture
def listener():
    """A local TCP port that records whether anything connected to it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    sock.setblocking(False)
    yield sock
    sock.close()


def hostile_database(tmp_path: Path, shared_data, kind: str, port: int) -> tuple[Path, Path]:
    """A copy of the real cpi database whose experiment.xml carries the hostile DTD and reference."""
    src = shared_data("hpctoolkit-cpi-database")
    db = tmp_path / "db"
    db.mkdir()
    for f in src.iterdir():
        if f.is_file():
            shutil.copyfile(f, db / f.name)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-7f3a\n")
    decl, ref = HOSTILE_XML[kind]
    xml = (src / "experiment.xml").read_text()
    if decl is None:
        xml = xml.replace("<!DOCTYPE HPCToolkitExperiment [",
                          f'<!DOCTYPE HPCToolkitExperiment SYSTEM "http://127.0.0.1:{port}/hpc.dtd" [', 1)
    else:
        end = xml.index("]>")
        xml = xml[:end] + decl.format(secret=secret, port=port) + xml[end:]
    xml = xml.replace('<Header n="cpi"', f'<Header n="cpi{ref}"', 1)
    assert ref in xml
    (db / "experiment.xml").write_text(xml)
    return db, secret


@pytest.mark.parametrize("kind", sorted(HOSTILE_XML))
def test_hostile_experiment_xml_is_refused_in_1s_and_100mb(tmp_path, shared_data, listener, kind):
    db, _ = hostile_database(tmp_path, shared_data, kind, listener.getsockname()[1])
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(db)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    message = got["message"]
    assert message is not None, "the hostile file was read"
    assert message.startswith(f"{db / 'experiment.xml'}: ") and "\n" not in message
    assert "entity" in message or "external DTD" in message, message
    assert got["growth_mb"] < 100, got  # not a timing: memory (bench/ measures time)
    assert "TOP-SECRET" not in message
    with pytest.raises(BlockingIOError):  # nothing connected to the local "server"
        listener.accept()


def test_hostile_experiment_xml_through_the_cli_is_one_line_and_leaves_the_lake(tmp_path, shared_data, listener):
    lake = tmp_path / "lake"
    good = tmp_path / "good"
    shutil.copytree(shared_data("tau-cpi-mpi"), good)
    assert cli("ingest", good, "--lake", lake, "--quiet").returncode == 0
    before = lake_data(lake)
    db, _ = hostile_database(tmp_path, shared_data, "billion-laughs", listener.getsockname()[1])
    proc = cli("ingest", db, "--lake", lake, "--quiet")
    assert_clean(proc, codes=(1,))
    assert proc.stderr.splitlines() == [
        f"perflake: {db / 'experiment.xml'}: entity declaration <!ENTITY lol0 ...> refused (no entity expansion)"]
    assert lake_data(lake) == before


# -- SQL injection -------------------------------------------------------------------------------------------


def _hostile_json(src: Path, dest: Path) -> Path:
    """lulesh json-split with hostile metric names, a hostile node label, hostile metadata keys and values, and
    a node named by 3,000 'a's and a '!' (for the regex test)."""
    doc = json.loads(src.read_text())
    doc["columns"] += [EVIL, QUOTED]
    doc["column_metadata"] += [{"is_value": True}, {"is_value": True}]
    for row in doc["data"]:
        row += [row[2], row[0]]
    doc["app"] = "x'); drop table runs; --"
    doc["it's \"key\""] = "v'al\"ue; drop table runs"
    doc["nodes"][3]["label"] = "Calc'Force\"Elems; drop table nodes; --"
    doc["nodes"][4]["label"] = "a" * 3000 + "!"
    dest.write_text(json.dumps(doc))
    return dest


@pytest.fixture(scope="module")
def hostile_lake(tmp_path_factory):
    from conftest import DATA, _need

    tmp = tmp_path_factory.mktemp("hostile")
    inputs = tmp / "inputs"
    inputs.mkdir()
    shutil.copytree(_need(DATA / "tau-cpi-mpi"), inputs / "tau-cpi-mpi")
    _hostile_json(_need(DATA / "caliper-lulesh-json/lulesh-annotation-profile.json"), inputs / "evil.json")
    lake = tmp / "lake"
    proc = cli("ingest", inputs, "--lake", lake, "--quiet")
    assert proc.returncode == 0, proc.stderr
    runs = Lake(lake).runs()
    ids = dict(zip(runs["format"], runs["run_id"]))
    return lake, ids["tau"], ids["caliper_json"]


@pytest.fixture
def unchanged(hostile_lake):
    """The lake's bytes are the same after the test."""
    lake = hostile_lake[0]
    before = lake_files(lake)
    yield hostile_lake
    assert lake_files(lake) == before, "the lake changed"


def test_hostile_names_and_metadata_are_stored_verbatim(unchanged):
    lake, _, evil = unchanged
    df = Lake(lake).sql("select metadata, metrics from runs where run_id = $id", {"id": evil})
    meta = json.loads(df["metadata"][0])
    assert meta["app"] == "x'); drop table runs; --" and meta["it's \"key\""] == "v'al\"ue; drop table runs"
    assert {EVIL, QUOTED} <= {m["name"] for m in df["metrics"][0]}
    names = Lake(lake).sql("select name from nodes where run_id = $id", {"id": evil})["name"].tolist()
    assert "Calc'Force\"Elems; drop table nodes; --" in names


def test_run_ids_are_bound_not_spliced(unchanged):
    lake = Lake(unchanged[0])
    assert lake.sql("select * from runs where run_id = $id", {"id": "x' or '1'='1"}).empty
    assert len(lake.sql("select * from runs")) == 2


# Each case: argv (after "perflake"), the exit code expected, and a text expected in stdout or stderr.
CASES = {
    "query: value with quotes": (
        ["query", 'MATCH (".", p) WHERE p."name" = "Calc\'Force\\"Elems; drop table nodes; --"'], 0, "Calc'Force"),
    "query: attribute with quotes": (["query", 'MATCH (".", p) WHERE p."x\\"); drop table runs; --" > 0'], 0, "main"),
    "query: STARTS WITH injection": (
        ["query", 'MATCH (".", p) WHERE p."name" STARTS WITH "\'); drop table runs; --"'], 0, "(no rows)"),
    "query: unterminated string": (["query", 'MATCH (".", p) WHERE p."name" = "x\'); drop'], 2, "perflake: "),
    "query: run id with quotes": (["query", 'MATCH (".", p)', "x'; drop table runs; --"], 2, "no run"),
    "query: --where two statements": (["query", 'MATCH (".", p)', "--where", "1=1; drop table runs"], 2, "--where"),
    "query: --where closing paren": (
        ["query", 'MATCH (".", p)', "--where", "1=1) ; copy (select 1) to 'x.csv'; select (1"], 2, "--where"),
    "query: --where copy in query()": (
        ["query", 'MATCH (".", p)', "--where",
         "(select count(*) from query('copy (select 1) to ''{lake}/runs/part-evil.parquet''')) > 0"], 2, "--where"),
    "ensemble: --where statement": (["ensemble", "--where", "true; drop table runs"], 2, "where"),
    "tree: metric injection": (["tree", "{evil}", "--metric", "time; drop table runs"], (0, 2), ""),
    "tree: hostile metric that exists": (["tree", "{evil}", "--metric", EVIL, "--depth", "2"], 0, "main"),
    "tree: run id with quotes": (["tree", "' or '1'='1"], 2, "no run"),
    "imbalance: metric injection": (["imbalance", "--metric", "time\"; drop table runs; --"], 2, "no selected run"),
    "imbalance: hostile metric that exists": (["imbalance", "--metric", EVIL, "--top", "2"], 0, EVIL),
    "imbalance: quoted metric that exists": (["imbalance", "--metric", QUOTED, "--top", "2"], 0, QUOTED),
    "imbalance: run id injection": (["imbalance", "x'; drop table runs; --"], 2, "no run"),
    "compare: run id injection": (["compare", "' or 1=1 --", "{tau}"], 2, "no run"),
    "compare: metric injection": (["compare", "{evil}", "{tau}", "--metric", "time') or 1=1 --"], 2, "no selected run"),
    "ensemble: metadata key injection": (
        ["ensemble", "--metric", EVIL, "--group-by", "meta:x'); drop table runs; --"], 2,
        "no selected run has metadata key \"x'); drop table runs; --\""),  # an unknown key: exit 2, as the API
    "ensemble: metadata key with quotes": (["ensemble", "--group-by", "meta:it's \"key\""], 2, "metadata key"),
    "scaling: quoted metric, metadata value with quotes": (["scaling", "--metric", QUOTED, "--by", "meta:app"], 0,
                                                           "x'); drop table runs; --"),
    "sql: bound parameters are not available, quotes in a literal": (
        ["sql", "select count(*) as n from runs where app = 'x''); drop table runs; --'"], 0, "0"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sql_injection_attempts(unchanged, name):
    lake, tau, evil = unchanged
    argv, codes, expect = CASES[name]
    argv = [a.format(lake=lake, tau=tau, evil=evil) if "{" in a and "MATCH" not in a else a for a in argv]
    proc = cli(*argv, "--lake", lake)
    assert_clean(proc, codes=codes if isinstance(codes, tuple) else (codes,))
    assert expect in proc.stdout + proc.stderr, (proc.stdout[-1000:], proc.stderr[-1000:])


def test_bad_statistic_is_a_one_line_error(unchanged):
    proc = cli("ensemble", "--stats", "count; drop table runs", "--lake", unchanged[0])
    assert_clean(proc, codes=(2,))


def test_sql_command_cannot_write_into_the_lake(tmp_path, unchanged):
    lake = tmp_path / "lake"
    shutil.copytree(unchanged[0], lake)
    before = lake_files(lake)
    proc = cli("sql", f"copy (select * from runs) to '{lake}/runs/part-evil.parquet' (format parquet)", "--lake", lake)
    assert lake_files(lake) == before and proc.returncode == 2


ESCAPES = {  # each would read or write outside the lake, fetch code, or unlock the configuration
    "explain analyze copy": "explain analyze copy (select 42) to '{out}/outside.csv'",
    "read_text": "select * from read_text('/etc/passwd')",
    "read_csv": "select count(*) from read_csv('/etc/passwd')",
    "glob": "select * from glob('/etc/*')",
    "subquery reads a file": "select (select count(*) from read_text('/etc/hostname')) as n",
    "set": "set enable_external_access = true",
    "attach": "attach '{out}/x.db' as x",
    "install": "install httpfs",
    "load": "load httpfs",
    "copy": "copy (select 42) to '{out}/outside.csv'",
    "two statements": "select 1; copy (select 42) to '{out}/outside.csv'",
    "pragma": "pragma enable_profiling",
    "extension type (inet would auto-install)": "select '1.2.3.4'::inet",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_sql_is_confined_to_the_lake(tmp_path, unchanged, name):
    """perflake sql: one read-only query over the lake's files; every escape is a one-line error, exit 2,
    nothing written anywhere, nothing downloaded."""
    lake = unchanged[0]
    before = lake_files(Path(lake))
    proc = cli("sql", ESCAPES[name].format(out=tmp_path), "--lake", lake, timeout=300)
    assert_clean(proc, codes=(2,))
    assert list(tmp_path.iterdir()) == [] and lake_files(Path(lake)) == before


@pytest.mark.parametrize("command", [["runs"], ["ensemble", "--metric", "time"], ["query", '[{"name": "main"}]'],
                                     ["imbalance", "--metric", "time"]])
def test_where_is_confined_too(tmp_path, unchanged, command):
    """--where is SQL on the catalog: it cannot read a file, write one or fetch an extension either."""
    lake = unchanged[0]
    for where in ("(select count(*) from read_text('/etc/hostname')) > 0", "ranks >>= 3",
                  f"(select count(*) from (select 1) t) > 0 and 0 = (select count(*) from glob('{tmp_path}/*'))"):
        proc = cli(*command, "--lake", lake, "--where", where, timeout=300)
        assert_clean(proc, codes=(2,))
        assert "where" in proc.stderr
    proc = cli(*command, "--lake", lake, "--where", "ranks >= 1", timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_sql_reads_the_lake_and_explain_analyze_of_a_select_works(unchanged):
    lake = unchanged[0]
    proc = cli("sql", "select count(*) as n from metrics where rank >= 0", "--lake", lake, "--format", "csv")
    assert proc.returncode == 0 and int(proc.stdout.splitlines()[1]) > 0
    proc = cli("sql", "explain analyze select count(*) from nodes", "--lake", lake)
    assert proc.returncode == 0 and "analyzed_plan" in proc.stdout, proc.stderr  # EXPLAIN ANALYZE ran the SELECT


def test_sql_allow_write_gives_duckdbs_full_power(tmp_path, unchanged):
    lake = unchanged[0]
    proc = cli("sql", f"copy (select count(*) as n from runs) to '{tmp_path}/runs.csv'", "--lake", lake,
               "--allow-write")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "runs.csv").read_text().splitlines()[0] == "n"
    from perflake import Lake

    assert Lake(lake).sql("select count(*) as n from read_text('/etc/hostname')", unsafe=True)["n"].iloc[0] == 1
    with pytest.raises(Exception, match="only one read-only query"):
        Lake(lake).sql("select 1; select 2")


# -- regular expressions are bounded in time ------------------------------------------------------------------

CATASTROPHIC = textwrap.dedent("""
    import sys, time
    from perflake import GraphFrame
    from perflake.frame.graphframe import EmptyFilter
    names = ["a" * 3000 + "!", "a" * 25 + "b", "main"]
    gf = GraphFrame.from_literal([{"frame": {"name": "main"}, "metrics": {"time": 1.0},
                                   "children": [{"frame": {"name": n}, "metrics": {"time": 1.0}} for n in names]}])

    def rows(q):
        try:
            return len(gf.filter(q, squash=False).dataframe)
        except EmptyFilter:
            return 0

    from perflake.query import predicates

    def backtracking(*args):  # what the test watches: RE2 (linear) answered, the backtracking engine never ran
        raise AssertionError("the backtracking engine ran")

    predicates._backtracking_match = backtracking
    a = rows('MATCH (".", p) WHERE p."name" =~ "(a+)+$"')
    b = rows([{"name": "(a|aa)+$"}])
    c = rows('MATCH (".", p) WHERE p."name" =~ "(.*a){25}$"')
    print(a, b, c)
""")


def test_catastrophic_regex_is_answered_by_re2():
    """Python's re needs 2**25 steps and more for these; RE2 is linear: the test checks RE2 answered them all
    (the backtracking engine is replaced by a failure), not a number of seconds.  A child process, so that a regression
    fails on the timeout instead of hanging the suite."""
    proc = subprocess.run([sys.executable, "-c", CATASTROPHIC], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sizes = proc.stdout.split()
    assert sizes == ["0", "0", "0"]  # no name ends with a run of a's


def test_catastrophic_regex_through_the_cli(unchanged):
    lake = unchanged[0]
    proc = cli("query", 'MATCH (".", p) WHERE p."name" =~ "(a+)+$"', "--lake", lake, timeout=300)
    assert_clean(proc, codes=(0,))
    assert "(no rows)" in proc.stdout
    proc = cli("query", 'MATCH (".", p) WHERE p."name" =~ "(a+)+!"', "--lake", lake, timeout=300)
    assert_clean(proc, codes=(0,))
    assert "aaaa" in proc.stdout


PATTERNS = [r"p\w\w\d", r"MPI_.*", r"P?MPI_.*", r"[bg]a", r"[ab]$", r"a|b", r"(?i)mpi", r"\d+", r"[\w-]+\Z",
            r"\s", r"[\s-]x", r"x{,2}y", r"\u00e9", r"caf\w", r"\D\d", r".*\.c:\d+", r"\[\]", r"[\]]", r"^main",
            r"(a+)+$", r"a{2,3}", r"(?s).", r"[\[]", r"\bfoo\b", r"é+", r"\x41", r"\\d",
            r"caf\N{LATIN SMALL LETTER E WITH ACUTE}"]
NAMES = ["p1x", "pab1", "pab", "MPI_Send", "PMPI_Recv", "ba", "ga", "a", "b", "ab", "mpi_x", "123", "x-y",
         "café", "über", "٣4", "é", "ée", "a\u00a0b", "x\u2003", " x", "-x", "xxy", "y", "cpi.c:42", "[]", "]",
         "main", "aaaa", "aaa!", "aa", "\n", "foo bar", "A", "\\d", ""]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_re2_translation_agrees_with_python_re(pattern):
    """``=~`` keeps Python's meaning (re.match) on ASCII and Unicode names."""
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    got = pc.match_substring_regex(pa.array(NAMES), pattern="^(?:" + python_to_re2(pattern) + ")").to_pylist()
    want = [re.match(pattern, n) is not None for n in NAMES]
    assert got == want, [(n, g, w) for n, g, w in zip(NAMES, got, want) if g != w]


@pytest.mark.parametrize("pattern", [r"(?=a)a", r"(a)\1", r"(?<!x)a", r"a*+", r"^((?!MPI).)*$", r"(\w)\1",
                                     r"\w(?<=p)a"])
def test_regex_constructs_re2_lacks_match_as_python_re(pattern):
    """Look-around, back-references and possessive quantifiers (RE2 has none) keep Python's meaning."""
    import re

    literal = [{"frame": {"name": "root"}, "metrics": {"time": 1.0},
                "children": [{"frame": {"name": n}, "metrics": {"time": 1.0}} for n in NAMES if n not in ("root", "")]}]
    gf = GraphFrame.from_literal(literal)
    escaped = pattern.replace("\\", "\\\\")
    got = sorted(gf.filter(f'MATCH (".", p) WHERE p."name" =~ "{escaped}"', squash=False).dataframe["name"])
    want = sorted(n for n in {"root", *NAMES} - {""} if re.match(pattern, n))
    assert got == want and got  # every pattern matches some name


def test_catastrophic_pattern_re2_cannot_run_is_a_bounded_error(monkeypatch):
    """A backtracking pattern (look-ahead forces the fallback) over long names stops at the time limit."""
    from perflake.query import predicates

    monkeypatch.setattr(predicates, "REGEX_SECONDS", 0.5)
    gf = GraphFrame.from_literal([{"frame": {"name": "a" * 40 + "!"}, "metrics": {"time": 1.0}}])
    with pytest.raises(QueryError, match="took more than 0.5 s"):  # the limit the code enforces, by its own clock
        gf.filter('MATCH (".", p) WHERE p."name" =~ "(?=a)(a|aa)+$"')


# -- amplification: a small file whose call tree is a deep chain -----------------------------------------------

DEEP = textwrap.dedent("""
    import json, resource, sys
    # address space: thread stacks and arenas count (RSS ~260 MB)
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from perflake.errors import PerflakeError
    from perflake.ingest.normalize import normalize
    from perflake.readers import get_reader
    try:
        normalize(get_reader("caliper_json").read(sys.argv[1]))
        print("ok")
    except PerflakeError as exc:
        print("error", exc)
""")


def test_a_deep_chain_normalises_in_bounded_memory_or_is_refused(tmp_path):
    n = 9000
    doc = {"data": [[1.0, i, 0] for i in range(0, n, 100)], "columns": ["sum#time.duration", "path", "mpi.rank"],
           "column_metadata": [{"is_value": True}, {"is_value": False}, {"is_value": True}],
           "nodes": [{"label": f"function_number_{i:05d}", "column": "path", **({"parent": i - 1} if i else {})}
                     for i in range(n)]}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(doc))
    try:
        env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}  # mimalloc reserves 1 GB of address space
        proc = subprocess.run([sys.executable, "-c", DEEP, str(path)], capture_output=True, text=True, timeout=300,
                              env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("normalising took more than 20 s")
    assert proc.returncode == 0 and proc.stdout.split()[0] in ("ok", "error"), proc.stderr[-500:]


# -- crafted inputs that used to take quadratic time or memory, or blow Python's recursion ----------------------

def _tau_with(src: Path, dest: Path, *, line2_suffix: str = "", extra_entry: str | None = None) -> Path:
    dest.mkdir()
    for f in sorted(src.glob("profile.*")):
        shutil.copyfile(f, dest / f.name)
    first = dest / "profile.0.0.0"
    lines = first.read_text().split("\n")
    count = int(lines[0].split()[0])
    lines[1] += line2_suffix
    if extra_entry is not None:
        lines.insert(2 + count, extra_entry)
        lines[0] = lines[0].replace(str(count), str(count + 1), 1)
    first.write_text("\n".join(lines))
    return dest


def _cali_chain(dest: Path, depth: int) -> Path:
    """Attribute k is described by a metadata node of attribute k - 1: a chain ``depth`` long."""
    lines, nid, prev = [], 100, None
    for k in range(depth):
        if prev is not None:
            lines.append(f"__rec=node,id={nid + 1},attr={prev},data=m{k},parent=3")
        lines.append(f"__rec=node,id={nid},attr=8,data=a{k},parent={nid + 1 if prev is not None else 3}")
        prev, nid = nid, nid + 2
    lines += [f"__rec=node,id={nid},attr=10,data=268,parent=3",  # a nested attribute "region" and one record
              f"__rec=node,id={nid + 1},attr=8,data=region,parent={nid}",
              f"__rec=node,id={nid + 2},attr={nid + 1},data=main", f"__rec=ctx,ref={nid + 2},attr={prev},data=1"]
    dest.write_text("\n".join(lines) + "\n")
    return dest


def _cali_grafts(dest: Path, depth: int, records: int) -> Path:
    """Records that each reference the same two nested chains, one of them ``depth`` regions deep."""
    lines = ["__rec=node,id=100,attr=10,data=268,parent=3", "__rec=node,id=101,attr=8,data=region,parent=100",
             "__rec=node,id=102,attr=8,data=phase,parent=100", "__rec=node,id=103,attr=10,data=21,parent=5",
             "__rec=node,id=104,attr=8,data=sum#time.duration,parent=103"]
    lines += [f"__rec=node,id={200 + k},attr=101,data=r{k}" + (f",parent={199 + k}" if k else "") for k in range(depth)]
    lines.append(f"__rec=node,id={200 + depth},attr=102,data=p0")
    lines += [f"__rec=ctx,ref={200 + depth}={199 + depth},attr=104,data=1"] * records
    dest.write_text("\n".join(lines) + "\n")
    return dest


def _cali_long_global(src: Path, dest: Path, digits: int) -> Path:
    text = src.read_text() + "__rec=node,id=9000,attr=8,data=evil.global,parent=3\n"
    dest.write_text(text + f"__rec=globals,attr=9000,data={'1' * digits}x\n")
    return dest


def _hpctoolkit_with(src: Path, dest: Path, *, body: str | None = None, info: str | None = None) -> Path:
    dest.mkdir()
    for f in src.glob("*.metric-db"):
        shutil.copyfile(f, dest / f.name)
    xml = (src / "experiment.xml").read_text()
    if body is not None:
        start = xml.index("<SecCallPathProfileData>") + len("<SecCallPathProfileData>")
        xml = xml[:start] + body + xml[xml.index("</SecCallPathProfileData>"):]
    if info is not None:
        xml = xml.replace('<Header n="cpi">', f'<Header n="cpi"><Info><NV n="evil" v="{info}"/></Info>', 1)
    (dest / "experiment.xml").write_text(xml)
    return dest


READ_ALL = textwrap.dedent("""
    import json, resource, sys, time
    from perflake.errors import PerflakeError
    from perflake.readers import get_reader
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for spec in sys.argv[1:]:
        name, kind, path = spec.split("=", 2)
        t0 = time.perf_counter()
        try:
            get_reader(kind).read(path)
            outcome = "ok"
        except PerflakeError as exc:
            outcome = "error: " + str(exc)[:200]
        except Exception as exc:
            outcome = f"BUG {type(exc).__name__}: {str(exc)[:200]}"
        growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        print(json.dumps({"name": name, "seconds": time.perf_counter() - t0, "growth_mb": growth, "outcome": outcome}),
              flush=True)
""")

CRAFTED = {  # name: (format, what the unfixed reader did)
    "tau: a callpath entry 3,000 frames deep": ("tau", "RecursionError"),
    "tau: 20,000 unclosed tags in the metadata line": ("tau", "36 s"),
    "tau: a name of 20,000 ' [{' openings": ("tau", "5 s"),
    "caliper: an attribute chain 3,000 long": ("caliper", "RecursionError"),
    "caliper: 20,000 records grafting a 3,000-deep chain": ("caliper", "40 s"),
    "caliper: a global of 20,000 digits": ("caliper", "11 s"),
    "hpctoolkit: loops nested 8,000 deep": ("hpctoolkit", "8 s and 2 GB"),
    "hpctoolkit: an Info value of 20,000 digits": ("hpctoolkit", "11 s"),
}


@pytest.fixture(scope="module")
def crafted_reads(tmp_path_factory):
    from conftest import DATA, _need

    tmp = tmp_path_factory.mktemp("crafted")
    tau, hpc = _need(DATA / "tau-cpi-mpi"), _need(DATA / "hpctoolkit-cpi-database")
    lulesh = _need(DATA / "caliper-lulesh-cali/lulesh-annotation-profile.cali")
    deep = '"' + " => ".join([".TAU application"] + [f"f{i}" for i in range(3000)]) + '" 1 0 1 1 0 GROUP="TAU_CALLPATH"'
    loops = ('<PF i="2" s="1" l="0" lm="1" f="1" n="1">'
             + "".join(f'<L i="3" s="1" l="{k}" f="1"><S i="3" s="1" l="{k}"/>' for k in range(8000))
             + "</L>" * 8000 + "</PF>")
    paths = {
        "tau: a callpath entry 3,000 frames deep": _tau_with(tau, tmp / "t1", extra_entry=deep),
        "tau: 20,000 unclosed tags in the metadata line":
            _tau_with(tau, tmp / "t2", line2_suffix="<attribute><name>" + "</name><value>" * 20000),
        "tau: a name of 20,000 ' [{' openings": _tau_with(tau, tmp / "t3", extra_entry=(
            '".TAU application => f' + " [{" * 20000 + ']" 1 0 1 1 0 GROUP="TAU_CALLPATH"')),
        "caliper: an attribute chain 3,000 long": _cali_chain(tmp / "c1.cali", 3000),
        "caliper: 20,000 records grafting a 3,000-deep chain": _cali_grafts(tmp / "c2.cali", 3000, 20000),
        "caliper: a global of 20,000 digits": _cali_long_global(lulesh, tmp / "c3.cali", 20000),
        "hpctoolkit: loops nested 8,000 deep": _hpctoolkit_with(hpc, tmp / "h1", body=loops),
        "hpctoolkit: an Info value of 20,000 digits": _hpctoolkit_with(hpc, tmp / "h2", info="1" * 20000 + "x"),
    }
    specs = [f"{name}={CRAFTED[name][0]}={path}" for name, path in paths.items()]
    proc = subprocess.run([sys.executable, "-c", READ_ALL, *specs], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {r["name"]: r for r in map(json.loads, proc.stdout.splitlines())}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_inputs_are_read_in_bounded_time_and_memory(crafted_reads, name):
    got = crafted_reads[name]
    assert not got["outcome"].startswith("BUG"), got
    assert got["growth_mb"] < 300, (got, "the unfixed reader: " + CRAFTED[name][1])  # not a timing


def test_v4_metric_units_are_split_in_linear_time():

    from perflake.readers.hpctoolkit_v4 import _split_unit

    assert _split_unit("CPUTIME (sec)") == ("CPUTIME", "sec") and _split_unit("x") == ("x", None)
    assert _split_unit(" " * 1_000_000 + "(x") == (" " * 1_000_000 + "(x", None)
    # linear by construction (str.rfind, no regex): the quadratic regex it replaced must not come back
    import inspect

    assert "re." not in inspect.getsource(_split_unit).split('"""')[-1]
