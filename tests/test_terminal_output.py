"""What reaches a terminal (issue 23, item 5): names with escape codes, line breaks and bidi overrides are shown
escaped, never sent; tables and trees fit $COLUMNS or the terminal's width; a missing value is spelled ``-``
in every table; colour only on a terminal and never with $NO_COLOR.  Machine formats (csv/json to a pipe)
keep the names exact.

The lake holds one hand-written Hatchet JSON profile whose function and file names carry the hostile
characters; a real terminal is a pseudo-terminal (``pty``) of a set size.
"""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import unicodedata

import numpy as np
import pandas as pd
import pytest

from perflake.render.safe_text import colour_wanted, display_width, escape, output_width, shorten
from perflake.render.table import MISSING, text_table

PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]
ESC_NAME = "evil\x1b[31mRED\x1b[0m"
NEWLINE_NAME = "two\nlines"
BIDI_NAME = "bidi\u202egnp.exe"
C1_NAME = "tab\there\x7f\x9b"
LONG_NAME = "ns::" + "x" * 140 + "::kernel(int)"
OSC_FILE = "/src/\x1b]0;pwned\x07.c"
LONG_FILE = "/a/" + "d" * 120 + "/f.c"
NAMES = ["main", ESC_NAME, NEWLINE_NAME, BIDI_NAME, LONG_NAME, C1_NAME]
FILES = ["/src/main.c", OSC_FILE, None, LONG_FILE, "ok.c", "ok.c"]
# anything that would drive a terminal: C0 but line feed (lines), DEL, C1, bidi controls
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _profile(path):
    graph = {"0": {"data": {"name": NAMES[0], "type": "function", "file": FILES[0]}, "children": [1, 2, 3, 4, 5]}}
    for i in range(1, 6):
        graph[str(i)] = {"data": {"name": NAMES[i], "type": "function", "file": FILES[i]}, "children": []}
    rows = [{"node": i, "name": NAMES[i], "file": FILES[i], "time (inc)": 100.0 if i == 0 else 10.0 * i,
             "time": 50.0 if i == 0 else 10.0 * i} for i in range(6)]
    path.write_text(json.dumps({"graph": [graph], "dataframe_indices": ["node"], "dataframe": rows,
                                "inclusive_metrics": ["time (inc)"], "exclusive_metrics": ["time"]}))


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "PERFLAKE_LAKE", "TERM")}
    env.update(extra)
    return env


def cli(*args, **env):
    return subprocess.run([*PERFLAKE, *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=_env(**env))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("terminal")
    (tmp / "in").mkdir()
    _profile(tmp / "in" / "evil.json")
    lake = tmp / "lake"
    proc = cli("ingest", tmp / "in", "--lake", lake)
    assert proc.returncode == 0, proc.stderr
    run_id = cli("sql", "select run_id from runs", "--lake", lake, "--format", "csv").stdout.split()[1]
    return lake, run_id


def views(lake, run_id):
    return {"runs": ["runs"], "tree": ["tree", run_id], "flat": ["flat", run_id],
            "flat by file": ["flat", run_id, "--by", "file"], "hotpath": ["hotpath", run_id, "--threshold", "0"],
            "sql": ["sql", "select name, file, null as nothing, 1.5 as x from nodes order by name"],
            "query": ["query", 'MATCH (".", p)->(q)'], "imbalance": ["imbalance", "--min-share", "0"],
            "statsframe": ["statsframe"]}


# -- the helpers -------------------------------------------------------------------------------------------------
def test_escape_spells_out_every_control_and_leaves_text():
    assert escape(ESC_NAME) == "evil\\x1b[31mRED\\x1b[0m"
    assert escape(NEWLINE_NAME + "\r") == "two\\nlines\\r"
    assert escape(C1_NAME) == "tab\\there\\x7f\\x9b"
    assert escape(BIDI_NAME + "\u2066\u2069\u200f\u2028") == "bidi\\u202egnp.exe\\u2066\\u2069\\u200f\\u2028"
    assert escape("\x00\x07") == "\\x00\\x07"
    assert escape(os.fsdecode(b"/tmp/a\xff.c")) == "/tmp/a\\udcff.c"  # undecodable bytes of a file name
    for text in ("main", "Größe", "関数", "C:\\temp", "a > b", "é"):
        assert escape(text) == text
    assert not RAW.search(escape("".join(map(chr, range(0x00, 0xa0))) + "\u202a\u202b\u202c\u202d\u2067\u2068"))


def test_widths_and_shortening():
    assert display_width("関数") == 4 and display_width("e\u0301") == 1 and display_width("abc") == 3
    assert shorten("abcdefghij", 6) == "abcde…"
    assert shorten("abcdefghij", 6, "left") == "…fghij"
    assert shorten("abcdefghij", 6, "middle") == "abc…ij"
    assert shorten("abc", 3) == "abc" and shorten("abcd", 1) == "…"
    assert shorten("関数関数", 5) == "関数…" and display_width(shorten("関数関数", 4)) <= 4
    # an escape is kept whole or left out, never cut in two
    assert shorten("ab\\x1bcd", 5) == "ab…" and shorten("ab\\x1bcd", 7, "left") == "…\\x1bcd"


def test_colour_follows_no_color_and_the_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    tty, pipe = _Tty(True), _Tty(False)
    assert colour_wanted(None, tty) and not colour_wanted(None, pipe)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_wanted(None, tty) and colour_wanted(True, pipe)  # --color wins, as no-color.org says
    monkeypatch.setenv("NO_COLOR", "")  # set but empty: no effect
    assert colour_wanted(None, tty)
    monkeypatch.setenv("TERM", "dumb")
    assert not colour_wanted(None, tty)


class _Tty:
    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty

    def fileno(self):
        raise OSError("no file")


def test_output_width_is_columns_else_the_terminal_else_unlimited(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert output_width(_Tty(False)) == 80
    for bad in ("", "0", "abc", "-5"):
        monkeypatch.setenv("COLUMNS", bad)
        assert output_width(_Tty(False)) is None
    monkeypatch.delenv("COLUMNS")
    assert output_width(_Tty(False)) is None and output_width(_Tty(True)) is None  # no size known: no limit


def test_table_spells_every_missing_value_the_same():
    df = pd.DataFrame({"name": ["a", None, "c"], "f": [1.5, np.nan, 2.25], "i": pd.array([1, None, 3], "Int64"),
                       "t": pd.to_datetime(["2024-01-02 03:04:05", None, "2024-01-03 00:00:00"]),
                       "o": [None, float("nan"), pd.NA], "s": pd.array(["x", None, "z"], dtype="string")})
    lines = text_table(df).splitlines()
    assert lines[0].split() == ["name", "f", "i", "t", "o", "s"]
    assert lines[2].split() == [MISSING] * 6
    assert lines[1].split() == ["a", "1.50", "1", "2024-01-02", "03:04:05", MISSING, "x"]
    text = text_table(df)
    assert not re.search(r"\b(NaN|None|NaT|nan)\b|<NA>", text)
    assert text_table(df.head(0)) == "(no rows)\n"


def test_table_fits_the_width_and_keeps_every_column():
    df = pd.DataFrame({"run_id": ["748300dc649b8acb", "0123456789abcdef"], "name": [LONG_NAME, "main"],
                       "path": ["main > " + LONG_NAME, "main"], "time (inc)": [123456.5, 7.0],
                       "source": [LONG_FILE, "ok.c"]})
    whole = text_table(df).splitlines()
    assert LONG_NAME in whole[1] and LONG_FILE in whole[1]  # no width: nothing cut
    for width in (80, 60, 40):
        lines = text_table(df, width).splitlines()
        assert lines and all(display_width(line) <= width for line in lines), (width, lines)
        text = "\n".join(lines)
        for value in ("748300dc649b8acb", "0123456789abcdef", "123456.5", "7.0"):  # ids and numbers whole
            assert value in text
        assert all(h in text for h in ("run_id", "name", "path", "time (inc)", "source"))
        assert any("…" in line for line in lines)
    at80 = text_table(df, 80).splitlines()
    assert len(at80) == 3  # one block at 80 columns
    assert "…" in at80[1] and "::kernel(int)" in at80[1]  # the path keeps its leaf, the name its end
    narrow = text_table(df, 30)
    assert all(display_width(line) <= 30 for line in narrow.splitlines()) and "\n\n" in narrow  # blocks


# -- the command line --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("view", ["runs", "tree", "flat", "flat by file", "hotpath", "sql", "query", "imbalance",
                                  "statsframe"])
def test_views_escape_names_and_fit_80_columns(hostile, view):
    lake, run_id = hostile
    proc = cli(*views(lake, run_id)[view], "--lake", lake, COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    assert not RAW.search(proc.stdout) and not RAW.search(proc.stderr), proc.stdout
    lines = proc.stdout.splitlines()
    assert lines and max(display_width(line) for line in lines) <= 80, lines
    if view in ("tree", "flat", "sql", "query"):
        assert "evil\\x1b[31mRED\\x1b[0m" in proc.stdout and "two\\nlines" in proc.stdout
        assert "bidi\\u202egnp.exe" in proc.stdout and "tab\\there\\x7f\\x9b" in proc.stdout
    if view in ("tree", "flat", "sql", "query", "flat by file"):
        assert "…" in proc.stdout  # the long name or file was shortened


def test_tree_shortens_context_then_name_to_the_width(hostile):
    lake, run_id = hostile
    lines = cli("tree", run_id, "--lake", lake, "--no-header", COLUMNS="40").stdout.splitlines()
    assert lines[0] == "100.000 main /src/main.c"
    assert all(display_width(line) <= 40 for line in lines)
    assert lines[1:] == ["├─ 30.000 bidi\\u202egnp.exe …ddddddd/f.c",  # the file shortened from its start,
                         "├─ 10.000 evil\\x1b[31mRED\\x1b[0m",  # or left out when under 8 columns are left,
                         "├─ 40.000 ns::xxxxxxxxxxx…x::kernel(int)",  # then the name shortened in the middle
                         "├─ 50.000 tab\\there\\x7f\\x9b ok.c", "└─ 20.000 two\\nlines"]
    whole = cli("tree", run_id, "--lake", lake, "--no-header").stdout  # piped, no COLUMNS: Hatchet's layout
    assert LONG_FILE in whole and f" {LONG_NAME[:18]}...{LONG_NAME[-18:]} ok.c\n" in whole
    expanded = cli("tree", run_id, "--lake", lake, "--no-header", "--expand-name", COLUMNS="40").stdout
    assert escape(LONG_NAME) in expanded


def test_the_python_tree_escapes_too(hostile):
    from perflake import Lake

    lake, run_id = hostile
    text = Lake(lake).graphframe(run_id).tree(render_header=False, colour=False)
    assert not RAW.search(text) and "evil\\x1b[31mRED\\x1b[0m /src/\\x1b]0;pwned\\x07.c" in text
    assert len(text.splitlines()) == 6


def test_machine_formats_keep_names_exact_when_piped(hostile):
    lake, run_id = hostile
    query = "select name, file from nodes order by name"
    rows = json.loads(cli("sql", query, "--lake", lake, "--format", "json").stdout)
    assert sorted(r["name"] for r in rows) == sorted(NAMES)
    assert {r["file"] for r in rows} == set(FILES)
    out = cli("sql", query, "--lake", lake, "--format", "json").stdout
    assert not RAW.search(out)  # JSON's own escapes (and DEL's): exact and still terminal-safe
    got = list(csv.DictReader(io.StringIO(cli("sql", query, "--lake", lake, "--format", "csv").stdout)))
    assert sorted(r["name"] for r in got) == sorted(NAMES)
    flat = json.loads(cli("flat", run_id, "--lake", lake, "--format", "json").stdout)
    assert {r["name"] for r in flat} == set(NAMES)


def test_error_lines_escape_names(hostile):
    lake, _ = hostile
    proc = cli("tree", "run\x1b[2J\u202e\nid", "--lake", lake)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "perflake: no run 'run\\x1b[2J\\u202e\\nid' in the lake (list them with: perflake runs)\n"
    bad = cli("query", 'MATCH (".", p) WHERE p."na\x1bme" = "x" AND ]', "--lake", lake)
    assert bad.returncode == 2 and not RAW.search(bad.stderr)
    head, query, caret = bad.stderr.splitlines()
    assert head == "perflake: unexpected character ']'"
    assert query == '  MATCH (".", p) WHERE p."na\\x1bme" = "x" AND ]'
    assert caret.index("^") == query.index("]")  # the caret under the offending character of the escaped query
    usage = cli("runs", "--lake", lake, "x\x1b[2J")  # argparse shows the argument back, as it is
    assert usage.returncode == 2 and not RAW.search(usage.stderr)
    assert usage.stderr.splitlines()[-1] == "perflake: error: unrecognized arguments: x\\x1b[2J"
    missing = cli("runs", "--lake", lake.parent / "no\x1b]0;x\x07lake")
    assert missing.returncode == 2 and not RAW.search(missing.stderr) and "\\x1b]0;x\\x07" in missing.stderr
    assert missing.stderr.count("\n") == 1


def test_runs_table_has_one_missing_spelling(hostile):
    lake, _ = hostile
    out = cli("runs", "--lake", lake, COLUMNS="200").stdout
    header, row = out.splitlines()
    assert header.split() == ["run_id", "format", "app", "ranks", "threads", "n_nodes", "exc_metrics",
                              "launch_time", "source"]
    assert row.split()[1:8] == ["hatchet_json", MISSING, "1", "1", "6", "[time]", MISSING]
    assert not re.search(r"\b(NaN|None|NaT)\b|<NA>", out)


# -- a real terminal ---------------------------------------------------------------------------------------------
def on_pty(args, columns: int, **env) -> str:
    """stdout of the command on a pseudo-terminal ``columns`` wide (no $COLUMNS: the terminal's size counts)."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen([*PERFLAKE, *map(str, args)], stdout=slave, stderr=subprocess.PIPE,
                            env=_env(TERM="xterm-256color", **env))
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode == 0, proc.stderr.read()
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal sizes as on Linux")
def test_on_a_terminal_colour_unless_no_color_and_the_terminal_width(hostile):
    lake, run_id = hostile
    coloured = on_pty(["tree", run_id, "--lake", lake, "--no-header"], 60)
    assert "\x1b[38;5;" in coloured and "Legend" in coloured
    plain = on_pty(["tree", run_id, "--lake", lake, "--no-header"], 60, NO_COLOR="1")
    assert "\x1b" not in plain and not RAW.search(plain)
    assert all(display_width(line) <= 60 for line in plain.splitlines())
    assert "\x1b" not in on_pty(["tree", run_id, "--lake", lake, "--no-header", "--no-color"], 60)
    forced = subprocess.run([*PERFLAKE, "tree", run_id, "--lake", lake, "--color"], capture_output=True, text=True,
                            env=_env(NO_COLOR="1")).stdout
    assert "\x1b[38;5;" in forced  # --color overrides $NO_COLOR (no-color.org)
    table = on_pty(["flat", run_id, "--lake", lake], 50, NO_COLOR="1")
    assert all(display_width(line) <= 50 for line in table.splitlines()) and "…" in table
    plain_csv = on_pty(["sql", "select name from nodes order by name", "--lake", lake, "--format", "csv"], 200)
    assert not RAW.search(plain_csv) and "evil\\x1b[31mRED\\x1b[0m" in plain_csv  # csv on a terminal: escaped


def test_wide_characters_take_two_columns():
    assert unicodedata.east_asian_width("関") == "W"
    df = pd.DataFrame({"name": ["関数" * 30], "label": ["関数" * 30]})
    lines = text_table(df, 41).splitlines()
    # 19 and 20 columns: a name cut in the middle, other text at its end; no wide character split
    assert lines[1] == "関数関数…数関数関数  関数関数関数関数関…"
    assert [display_width(line) for line in lines] == [19 + 2 + len("label"), 19 + 2 + 19]


def test_ingest_problem_lines_escape_file_names(tmp_path):
    """A file name is the user's input too: ingest's per-file lines escape it (the summary and --json keep
    the name exact)."""
    src = tmp_path / "in"
    src.mkdir()
    name = "bad\x1b[2J\u202ename.cali"
    (src / name).write_bytes(b"")  # empty: not a run, reported by name
    proc = cli("ingest", src, "--lake", tmp_path / "lake")
    assert not RAW.search(proc.stderr), proc.stderr
    assert "bad\\x1b[2J\\u202ename.cali" in proc.stderr
    js = cli("ingest", src, "--lake", tmp_path / "lake", "--json")
    assert name in js.stdout or json.dumps(name)[1:-1] in js.stdout  # exact in the machine format
