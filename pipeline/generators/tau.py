"""Writer of TAU profile files (``profile.<node>.<context>.<thread>``) from the synthetic model.

Each run directory holds one text file per rank and thread in TAU's callpath profile
format: line 1 ``<n> templated_functions_MULTI_<METRIC>``, line 2 the column header
with the ``<metadata>`` block, then one line per timer (``.TAU application`` first,
then for every function its flat entry followed by its callpath entries), then
``0 aggregates`` and the user events. With several metrics every metric gets its own
``MULTI__<metric>`` subdirectory holding a full set of files.
"""
from __future__ import annotations

import datetime as dt
import pathlib
import re
import zlib

import numpy as np

from .calltree import CallTree, Metrics, inclusive_from_exclusive, make_metrics, make_tree, perturb
from .names import MPI, category, signature, source_location
from .size_limits import check_sizes

TAU_ROOT = ".TAU application"
SEP = " => "
# counts of a hardware counter per microsecond of exclusive time (2.3 GHz cores)
COUNTER_PER_US = {"PAPI_TOT_CYC": 2300.0, "PAPI_REF_CYC": 2300.0, "PAPI_TOT_INS": 2900.0,
                  "PAPI_FP_OPS": 1100.0, "PAPI_L1_DCM": 40.0, "PAPI_L2_TCM": 9.0, "PAPI_L3_TCM": 1.5}
_APPS = [("lulesh2.0", "-s 48 -i 500 -p"), ("amg", "-problem 2 -n 80 80 80"),
         ("miniFE.x", "nx=256 ny=256 nz=256"), ("lmp", "-in in.lj -var x 8"),
         ("nekbone", "data.rea"), ("xhpcg", "--nx=104 --rt=300")]
_USERS = ["jsmith", "alee", "mgarcia", "pkumar", "hpcuser"]
_PROFILE_RE = re.compile(r"^profile\.\d+\.\d+\.\d+$")


def tau_frame(name: str) -> str:
    """The timer name TAU writes for a function: PDT-annotated, MPI plain with two spaces."""
    if category(name) == MPI:
        return signature(name) + "  "
    file, line, end = source_location(name)
    return f"{signature(name)} C [{{{file}}} {{{line},1}}-{{{end},1}}]"


class _Layout:
    """Everything about a run's files that does not depend on the rank or the metric."""

    def __init__(self, tree: CallTree, m: Metrics):
        n = len(tree)
        frames = {nm: tau_frame(nm) for nm in dict.fromkeys(tree.names)}
        name_id: dict[str, int] = {}
        nid = np.array([name_id.setdefault(nm, len(name_id)) for nm in tree.names], dtype=np.int64)
        self.n_flat = n_flat = len(name_id)
        cpath: list[str] = []
        recursive = np.zeros(n, dtype=bool)  # a node whose ancestors include its own name
        parents = tree.parent.tolist()
        for i, p in enumerate(parents):
            cpath.append((TAU_ROOT if p < 0 else cpath[p]) + SEP + frames[tree.names[i]])
            q = p
            while q >= 0 and not recursive[i]:
                recursive[i] = tree.names[q] == tree.names[i]
                q = parents[q]
        self.group_order = np.argsort(nid, kind="stable")
        self.group_starts = np.searchsorted(nid[self.group_order], np.arange(n_flat))
        self.flat_incl_mask = ~recursive
        # rows: 0 = root, 1..n_flat = flat entries, n_flat+1.. = callpath entries
        flat_calls = np.bincount(nid, weights=m.calls, minlength=n_flat).astype(np.int64)
        flat_subrs = np.bincount(nid, weights=m.subrs, minlength=n_flat).astype(np.int64)
        calls = np.concatenate([[1], flat_calls, m.calls]).tolist()
        subrs = np.concatenate([[m.calls[0]], flat_subrs, m.subrs]).tolist()
        texts = [TAU_ROOT] + list(frames.values()) + cpath
        groups = ["TAU_DEFAULT"] + ["MPI" if category(nm) == MPI else "TAU_USER" for nm in frames]
        groups += ["TAU_CALLPATH|" + groups[1 + k] for k in nid.tolist()]
        by_name: list[list[int]] = [[] for _ in range(n_flat)]
        for i, k in enumerate(nid.tolist()):
            by_name[k].append(1 + n_flat + i)
        order = [0]
        for k in range(n_flat):
            order.append(1 + k)
            order.extend(by_name[k])
        self.order = np.asarray(order, dtype=np.int64)
        self.prefix = [f'"{texts[r]}" {calls[r]} {subrs[r]} ' for r in order]
        self.suffix = [f' 0 GROUP="{groups[r]}" \n' for r in order]
        self.allreduce_calls = int(flat_calls[name_id["MPI_Allreduce"]]) if "MPI_Allreduce" in name_id else 1
        self.bcast_calls = int(flat_calls[name_id["MPI_Bcast"]]) if "MPI_Bcast" in name_id else 1

    def rows(self, root_excl: np.ndarray, excl: np.ndarray, incl: np.ndarray):
        """(excl, incl) per file column: arrays [n_cols, n_entries] in file order."""
        flat_e = np.add.reduceat(excl[self.group_order], self.group_starts, axis=0)
        masked = incl * self.flat_incl_mask[:, None]
        flat_i = np.add.reduceat(masked[self.group_order], self.group_starts, axis=0)
        e = np.vstack([root_excl[None, :], flat_e, excl])[self.order]
        i = np.vstack([(root_excl + incl[0])[None, :], flat_i, incl])[self.order]
        return np.ascontiguousarray(e.T), np.ascontiguousarray(i.T)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _metadata(metric: str, attrs: dict[str, str]) -> str:
    items = [("Metric Name", metric)] + sorted(attrs.items())
    body = "".join(f"<attribute><name>{_xml(k)}</name><value>{_xml(v)}</value></attribute>"
                   for k, v in items)
    return f"<metadata>{body}</metadata>"


def _attrs(seed: int, run: int, rank: int, thread: int, threads: int, start: int, end: int) -> dict:
    app, args = _APPS[seed % len(_APPS)]
    user = _USERS[(seed // len(_APPS)) % len(_USERS)]
    host = f"nid{1000 + (seed * 37) % 8000 + rank * threads // 64:06d}"
    pid = 10_000 + (seed * 7919 + rank * 131 + run * 17) % 50_000
    tz = dt.timezone(dt.timedelta(hours=-7))
    t0 = dt.datetime.fromtimestamp(start // 1_000_000, tz=dt.timezone.utc)
    cwd = f"/scratch/{user}/{app.split('.')[0]}/run-{run:03d}"
    return {
        "CPU Cores": "64", "CPU MHz": "2300.000", "CPU Type": "AMD EPYC 7763 64-Core Processor",
        "CPU Vendor": "AuthenticAMD", "CWD": cwd, "Command Line": f"./{app} {args}",
        "Ending Timestamp": str(end), "Executable": f"/home/{user}/apps/{app.split('.')[0]}/build/{app}",
        "Hostname": host, "Local Time": t0.astimezone(tz).strftime("%Y-%m-%dT%H:%M:%S-07:00"),
        "MPI Processor Name": host, "Memory Size": "527958096 kB", "Node Name": host,
        "OMP_NUM_THREADS": str(threads), "OS Machine": "x86_64", "OS Name": "Linux",
        "OS Release": "5.14.21-150400.24.46-default", "Starting Timestamp": str(start),
        "TAU Architecture": "default", "TAU Version": "2.33.1", "TAU_CALLPATH": "on",
        "TAU_CALLPATH_DEPTH": "100", "TAU_PROFILE": "on", "TAU_PROFILE_FORMAT": "profile",
        "TAU_SAMPLING": "off", "TAU_THROTTLE": "on", "Timestamp": str(start + 46),
        "UTC Time": t0.strftime("%Y-%m-%dT%H:%M:%SZ"), "pid": str(pid), "tid": str(pid + thread),
        "username": user,
    }


def _user_events(rng: np.random.Generator, layout: _Layout) -> str:
    out = ["0 aggregates\n2 userevents\n# eventname numevents max min mean sumsqr\n"]
    for label, count in (("Message size for all-reduce", layout.allreduce_calls),
                         ("Message size for broadcast", layout.bcast_calls)):
        lo = 8.0 * int(rng.integers(1, 4))
        hi = lo * 2 ** int(rng.integers(0, 12)) if count > 1 else lo
        mean = lo if hi == lo else float(rng.uniform(lo, hi))
        sumsqr = count * mean * mean * (1.0 + (0.0 if hi == lo else float(rng.uniform(0.0, 0.3))))
        out.append(f'"{label}" {count} {hi:.16G} {lo:.16G} {mean:.16G} {sumsqr:.16G}\n')
    return "".join(out)


def _metric_values(tree: CallTree, m: Metrics, metric: str, root_us: np.ndarray):
    """(root exclusive, node exclusive, node inclusive) in the metric's unit (int64)."""
    if metric == "TIME":
        return root_us, m.exclusive, m.inclusive
    scale = COUNTER_PER_US.get(metric, 1000.0)
    # per-function efficiency (IPC-like), fixed per name so all ranks and runs agree
    eff = np.array([0.8 + 0.4 * (zlib.crc32(f"{metric}/{nm}".encode()) % 1000) / 1000.0
                    for nm in tree.names])
    excl = np.maximum(np.rint(m.exclusive * (scale * eff)[:, None]), 1).astype(np.int64)
    root = np.maximum(np.rint(root_us * scale), 1).astype(np.int64)
    return root, excl, inclusive_from_exclusive(tree, excl)


def write_tau_runs(out_dir, *, nodes: int, ranks: int, runs: int = 1, seed: int = 0,
                   threads: int = 1, metrics=("TIME",)) -> list[pathlib.Path]:
    """Write ``runs`` TAU profile directories ``out_dir/run-000`` ... and return them.

    Run 0 profiles ``make_tree(nodes, seed=seed)``; run k > 0 profiles
    ``perturb(base, seed=seed * 1000 + k)``. Every run has its own metric seed, while the
    base cost of a call path is shared by all runs (``app_seed=seed``).
    """
    metrics = tuple(metrics)
    if not metrics or len(set(metrics)) != len(metrics):
        raise ValueError("metrics must be a non-empty sequence of distinct names")
    if any(not re.fullmatch(r"[A-Za-z0-9_:]+", mt) for mt in metrics):
        raise ValueError(f"unsupported metric name in {metrics!r}")
    check_sizes(nodes=nodes, ranks=ranks, threads=threads, runs=runs, seed=seed)
    out = pathlib.Path(out_dir)
    base = make_tree(nodes, seed=seed)
    run_dirs: list[pathlib.Path] = []
    for k in range(runs):
        tree = base if k == 0 else perturb(base, seed=seed * 1000 + k)
        m = make_metrics(tree, ranks, seed=seed * 1000 + k + 500, n_threads=threads, app_seed=seed)
        layout = _Layout(tree, m)
        rng = np.random.default_rng([seed, k, 77])
        root_us = np.rint(rng.uniform(150.0, 900.0, ranks * threads)).astype(np.int64)
        start0 = 1_609_459_200_000_000 + (seed * 2_654_435_761 % 90_000_000) * 1_000_000 \
            + k * 7_200_000_000
        starts = start0 + np.arange(ranks * threads) * 13
        ends = starts + root_us + m.inclusive[0]
        events = [_user_events(rng, layout) for _ in range(ranks * threads)]
        run_dir = out / f"run-{k:03d}"
        for metric in metrics:
            d = run_dir if len(metrics) == 1 else run_dir / f"MULTI__{metric}"
            d.mkdir(parents=True, exist_ok=True)
            excl_rows, incl_rows = layout.rows(*_metric_values(tree, m, metric, root_us))
            head = f"{len(layout.prefix)} templated_functions_MULTI_{metric}\n"
            written = set()
            for col in range(ranks * threads):
                rank, thread = divmod(col, threads)
                attrs = _attrs(seed, k, rank, thread, threads, int(starts[col]), int(ends[col]))
                body = "".join([f"{p}{e} {i}{s}" for p, e, i, s in zip(
                    layout.prefix, excl_rows[col].tolist(), incl_rows[col].tolist(), layout.suffix)])
                name = f"profile.{rank}.0.{thread}"
                with open(d / name, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(f"{head}# Name Calls Subrs Excl Incl ProfileCalls # "
                             f"{_metadata(metric, attrs)}\n{body}{events[col]}")
                written.add(name)
            for stale in d.iterdir():  # files of an earlier, larger run in the same place
                if _PROFILE_RE.match(stale.name) and stale.name not in written and stale.is_file():
                    stale.unlink()
        run_dirs.append(run_dir)
    return run_dirs
