"""Tests of the synthetic call-tree model and the TAU profile writer (perflake.generators)."""
from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflake.generators import make_metrics, make_tree, perturb, write_tau_runs

ENTRY_RE = re.compile(
    r'^"(?P<name>[^"]*)" (?P<calls>\d+) (?P<subrs>\d+) (?P<excl>[0-9.Ee+-]+) (?P<incl>[0-9.Ee+-]+) '
    r'(?P<pc>\d+) GROUP="(?P<group>[^"]*)" $')
HEAD_RE = re.compile(r"^(\d+) templated_functions_MULTI_(\w+)$")
PDT_RE = re.compile(r"^\S.* C \[\{[^{}]+\} \{\d+,1\}-\{\d+,1\}\]$")
ROOT = ".TAU application"
SEP = " => "


def parse(path):
    """Minimal reader: (count, metric, metadata, entries {name: (calls, subrs, excl, incl, group)}, tail)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    m = HEAD_RE.match(lines[0])
    assert m, lines[0]
    count, metric = int(m.group(1)), m.group(2)
    assert lines[1].startswith("# Name Calls Subrs Excl Incl ProfileCalls # <metadata>")
    entries, order = {}, []
    for line in lines[2:2 + count]:
        e = ENTRY_RE.match(line)
        assert e, line
        assert e.group("pc") == "0"
        name = e.group("name")
        assert name not in entries, f"duplicate entry {name!r}"
        entries[name] = (int(e.group("calls")), int(e.group("subrs")), float(e.group("excl")),
                         float(e.group("incl")), e.group("group"))
        order.append(name)
    return count, metric, lines[1], entries, order, lines[2 + count:]


def callpaths(entries):
    return {k: v for k, v in entries.items() if SEP in k}


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory):
    out = tmp_path_factory.mktemp("tau")
    dirs = write_tau_runs(out, nodes=300, ranks=16, runs=3, seed=11)
    return out, dirs


def test_same_seed_gives_identical_bytes(tmp_path):
    kw = dict(nodes=120, ranks=3, runs=2, seed=4, threads=2, metrics=("TIME", "PAPI_TOT_CYC"))
    a = write_tau_runs(tmp_path / "a", **kw)
    b = write_tau_runs(tmp_path / "b", **kw)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("profile.*"))
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("profile.*"))
    assert files_a == files_b and len(files_a) == 2 * 2 * 3 * 2
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    assert [p.name for p in a] == [p.name for p in b] == ["run-000", "run-001"]


def test_different_seed_gives_different_files(tmp_path):
    write_tau_runs(tmp_path / "a", nodes=120, ranks=2, seed=1)
    write_tau_runs(tmp_path / "b", nodes=120, ranks=2, seed=2)
    for f in ("profile.0.0.0", "profile.1.0.0"):
        assert (tmp_path / "a/run-000" / f).read_bytes() != (tmp_path / "b/run-000" / f).read_bytes()
    # and within one ensemble the ranks differ too
    assert (tmp_path / "a/run-000/profile.0.0.0").read_bytes() != (tmp_path / "a/run-000/profile.1.0.0").read_bytes()


def test_file_counts_and_multi_metric_layout(tmp_path):
    dirs = write_tau_runs(tmp_path, nodes=60, ranks=5, runs=2, seed=3, threads=3,
                          metrics=("TIME", "PAPI_TOT_CYC"))
    assert dirs == [tmp_path / "run-000", tmp_path / "run-001"]
    for d in dirs:
        assert sorted(p.name for p in d.iterdir()) == ["MULTI__PAPI_TOT_CYC", "MULTI__TIME"]
        for metric in ("TIME", "PAPI_TOT_CYC"):
            files = sorted(p.name for p in (d / f"MULTI__{metric}").iterdir())
            assert files == sorted(f"profile.{r}.0.{t}" for r in range(5) for t in range(3))
            _, got, meta, *_ = parse(d / f"MULTI__{metric}" / "profile.4.0.2")
            assert got == metric
            assert f"<attribute><name>Metric Name</name><value>{metric}</value></attribute>" in meta
    single = write_tau_runs(tmp_path / "single", nodes=60, ranks=7, seed=3)
    assert len(list(single[0].glob("profile.*.0.0"))) == 7


def test_papi_counts_follow_time(tmp_path):
    (d,) = write_tau_runs(tmp_path, nodes=200, ranks=2, seed=8, metrics=("TIME", "PAPI_TOT_CYC"))
    *_, t_entries, _, _ = parse(d / "MULTI__TIME" / "profile.1.0.0")
    *_, c_entries, _, _ = parse(d / "MULTI__PAPI_TOT_CYC" / "profile.1.0.0")
    assert t_entries.keys() == c_entries.keys()
    for name, (calls, subrs, excl, _, _) in t_entries.items():
        c = c_entries[name]
        assert (c[0], c[1]) == (calls, subrs)
        assert c[2] == int(c[2]) and c[2] >= 1
        if excl >= 1000:
            assert 0.7 * 2300 <= c[2] / excl <= 1.3 * 2300, name


def test_header_body_and_trailer(ensemble):
    _, dirs = ensemble
    count, metric, meta, entries, order, tail = parse(dirs[0] / "profile.3.0.0")
    assert metric == "TIME" and count == len(entries) == len(order)
    assert meta.index("<name>Metric Name</name><value>TIME</value>") < meta.index("<name>Hostname</name>")
    for attr in ("Hostname", "Executable", "Command Line", "CPU Cores", "Starting Timestamp", "Local Time",
                 "TAU Version", "MPI Processor Name", "pid", "tid", "username"):
        assert f"<attribute><name>{attr}</name><value>" in meta, attr
    assert "<name>TAU_CALLPATH</name><value>on</value>" in meta
    assert "<name>TAU_CALLPATH_DEPTH</name><value>100</value>" in meta
    assert order[0] == ROOT and entries[ROOT][4] == "TAU_DEFAULT"
    assert tail[0] == "0 aggregates"
    n_ev = int(tail[1].split()[0])
    assert tail[1] == f"{n_ev} userevents" and n_ev >= 1
    assert tail[2] == "# eventname numevents max min mean sumsqr"
    for line in tail[3:3 + n_ev]:
        m = re.match(r'^"[^"]+" (\d+) (\S+) (\S+) (\S+) (\S+)$', line)
        assert m and float(m.group(3)) <= float(m.group(4)) <= float(m.group(2))
    assert tail[3 + n_ev:] == [""]  # file ends with a newline


def test_frames_are_annotated(ensemble):
    _, dirs = ensemble
    *_, entries, _, _ = parse(dirs[0] / "profile.0.0.0")
    flats = [k for k in entries if SEP not in k and k != ROOT]
    assert "int main(int, char **) C [{main.cpp} {19,1}-{60,1}]" in flats
    for name in flats:
        group = entries[name][4]
        if name.startswith("MPI_"):
            assert group == "MPI" and re.fullmatch(r"MPI_\w+\(\)  ", name), name
        else:
            assert group == "TAU_USER" and PDT_RE.match(name), name
    for name, v in callpaths(entries).items():
        assert name.startswith(ROOT + SEP + "int main(int, char **)")
        assert v[4] == "TAU_CALLPATH|" + entries[name.split(SEP)[-1]][4]


def test_callpath_parents_and_inclusive_sums(ensemble):
    _, dirs = ensemble
    for run in dirs:
        for f in ("profile.0.0.0", "profile.9.0.0"):
            *_, entries, _, _ = parse(run / f)
            kids = defaultdict(list)
            for name in callpaths(entries):
                parent = name.rsplit(SEP, 1)[0]
                assert parent == ROOT or parent in entries, f"missing parent of {name!r}"
                assert name.split(SEP)[-1] in entries, "callpath frame without a flat entry"
                kids[parent].append(name)
            for name, (calls, subrs, excl, incl, _) in entries.items():
                if SEP not in name and name != ROOT:
                    continue
                ch = kids.get(name, [])
                assert incl == excl + sum(entries[c][3] for c in ch), name
                assert subrs == sum(entries[c][0] for c in ch), name
                assert excl > 0 and calls >= 1
            # flat entries aggregate their contexts (trees have no recursion)
            agg = defaultdict(lambda: [0, 0, 0.0, 0.0])
            for name, v in callpaths(entries).items():
                a = agg[name.split(SEP)[-1]]
                for j in range(4):
                    a[j] += v[j]
            for flat, a in agg.items():
                assert list(entries[flat][:4]) == a, flat


def test_tree_depth_siblings_and_locations():
    for seed in range(6):
        t = make_tree(1000, seed=seed)
        assert len(t) == 1000 and t.names[0] == "main" and t.parent[0] == -1
        assert 8 <= t.max_depth <= 30
        assert np.all(t.parent[1:] < np.arange(1, 1000))
        assert np.array_equal(t.depth[1:], t.depth[t.parent[1:]] + 1)
        for kids in t.children():
            names = [t.names[k] for k in kids]
            assert len(names) == len(set(names))
        where = {}
        for nm, f, ln in zip(t.names, t.file, t.line.tolist()):
            assert where.setdefault(nm, (f, ln)) == (f, ln) and 1 <= ln <= 2000
        contexts = defaultdict(set)
        for i in range(1, len(t)):
            contexts[t.names[i]].add(t.names[t.parent[i]])
        assert max(len(c) for c in contexts.values()) >= 5  # names reused under many parents
        fanout = np.bincount(t.parent[1:], minlength=len(t))
        assert fanout.max() >= 10 and np.median(fanout[fanout > 0]) <= 3
    assert make_tree(1000, seed=2).max_depth <= make_tree(20000, seed=2).max_depth <= 30
    assert t.path(int(np.argmax(t.depth)))[0] == "main" and len(t.path(int(np.argmax(t.depth)))) == t.max_depth + 1


def test_metrics_model():
    t = make_tree(400, seed=5)
    m = make_metrics(t, 32, seed=9, n_threads=2)
    assert m.exclusive.shape == m.inclusive.shape == (400, 64)
    assert m.exclusive.min() >= 1 and m.calls.min() >= 1
    child_sum = np.zeros_like(m.inclusive)
    np.add.at(child_sum, t.parent[1:], m.inclusive[1:])
    assert np.array_equal(m.inclusive, m.exclusive + child_sum)
    assert 2 <= len(m.regions) <= 5
    again = make_metrics(t, 32, seed=9, n_threads=2)
    assert np.array_equal(again.exclusive, m.exclusive)
    other = make_metrics(t, 32, seed=10, n_threads=2)
    assert not np.array_equal(other.exclusive, m.exclusive)
    # per-rank noise is a few percent outside the imbalanced regions
    quiet = np.ones(400, dtype=bool)
    size = t.subtree_size()
    for r, _, _ in m.regions:
        quiet[r:r + size[r]] = False
    spread = m.exclusive[quiet].std(axis=1) / m.exclusive[quiet].mean(axis=1)
    assert np.median(spread[m.exclusive[quiet].mean(axis=1) > 100]) < 0.1


def test_perturbed_runs_share_most_callpaths(ensemble):
    _, dirs = ensemble
    base = set(callpaths(parse(dirs[0] / "profile.0.0.0")[3]))
    for run in dirs[1:]:
        other = set(callpaths(parse(run / "profile.0.0.0")[3]))
        shared = len(base & other) / len(base)
        assert 0.9 <= shared < 1.0
        assert other - base  # new call paths too
    t = make_tree(1000, seed=1)
    p = perturb(t, seed=2)
    a, b = set(t.paths()), set(p.paths())
    assert 0.9 <= len(a & b) / len(a) < 1 and b - a
    assert set(perturb(t, seed=3).paths()) != b


def test_some_region_is_imbalanced(ensemble):
    _, dirs = ensemble
    files = sorted(dirs[0].glob("profile.*.0.0"))
    assert len(files) == 16
    per_rank = [callpaths(parse(f)[3]) for f in files]
    root_incl = np.mean([parse(f)[3][ROOT][3] for f in files])
    worst = 0.0
    for name in per_rank[0]:
        incl = np.array([r[name][3] for r in per_rank])
        if incl.mean() >= 0.005 * root_incl:
            worst = max(worst, incl.max() / incl.mean())
    assert worst > 1.5


def test_rewrite_with_fewer_ranks_removes_stale_files(tmp_path):
    write_tau_runs(tmp_path, nodes=30, ranks=6, seed=1)
    write_tau_runs(tmp_path, nodes=30, ranks=2, seed=1)
    assert sorted(p.name for p in (tmp_path / "run-000").iterdir()) == ["profile.0.0.0", "profile.1.0.0"]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 80), seed=st.integers(0, 2**31 - 1))
def test_small_trees_and_perturbations_are_valid(n, seed):
    for t in (make_tree(n, seed=seed), perturb(make_tree(n, seed=seed), seed=seed + 1)):
        assert t.names[0] == "main" and t.parent[0] == -1
        assert np.all(t.parent[1:] < np.arange(1, len(t)))
        for kids in t.children():
            assert len({t.names[k] for k in kids}) == len(kids)
        for i in range(len(t)):
            assert t.names[i] not in t.path(i)[:-1]  # no recursion
        m = make_metrics(t, 3, seed=seed)
        child_sum = np.zeros_like(m.inclusive)
        np.add.at(child_sum, t.parent[1:], m.inclusive[1:])
        assert np.array_equal(m.inclusive, m.exclusive + child_sum) and m.exclusive.min() >= 1


def test_tiny_tree_writes_valid_profile(tmp_path):
    (d,) = write_tau_runs(tmp_path, nodes=1, ranks=1, seed=0)
    count, _, _, entries, order, _ = parse(d / "profile.0.0.0")
    assert count == 3 and order[0] == ROOT
    main = next(k for k in entries if SEP in k)
    assert entries[ROOT][3] == entries[ROOT][2] + entries[main][3]
