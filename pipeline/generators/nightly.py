"""A nightly series of runs of one application, with noise and performance shifts injected at known runs.

What the regression and change-point tools (perflake.analytics.regress / .changes) are tested and
benchmarked on.  One call tree (``make_tree(nodes, seed)``) is run every night; run ``k``'s exclusive time
at node ``i`` and rank ``r`` (microseconds) is::

    base[i, r] * shift(i, k) * exp(s_i * z[k, i] + RUN_NOISE * z[k]) * exp(RANK_NOISE * z[k, i, r]) * outlier[k]

- ``base``: the per-rank exclusive times of ``make_metrics(tree, ranks, ...)`` (rank imbalance included)
  times ``SCALE``, so that even small call paths are far above the microsecond resolution of the files;
- ``s_i``: the call path's own run-to-run noise, log-uniform in ``noise`` (default 1% to 5%);
- ``RUN_NOISE``: a factor common to all call paths of a run (the machine's state that night);
- ``outlier``: a few runs (``outlier_rate``) are slower as a whole by 15% to 50% (a bad node, a noisy
  neighbour), as real nightly series have them;
- ``shift(i, k)``: ``1 + size`` from run ``Shift.run`` on for the call paths of ``shifts``, else 1.

The shifted call paths are chosen by the seed among call paths holding 1% to 30% of the run's exclusive
time (the nearest to that range in a tree without enough of them), none an ancestor of another (an
exclusive-time shift of one call path changes the inclusive time of its ancestors, and of nothing else).
Each run carries ``launchdate`` (epoch seconds: one run a night, a few minutes of jitter; the lake's
``launch_time``), ``commit`` (40 hex digits), ``branch`` and ``build`` metadata.  Files are Caliper
json-split documents (``perflake.generators.caliper``), one per run.
Everything is deterministic given the arguments.
"""
from __future__ import annotations

import hashlib
import pathlib
from dataclasses import dataclass

import numpy as np

from .caliper import caliper_json_text
from .calltree import CallTree, Metrics, inclusive_from_exclusive, make_metrics, make_tree

SCALE = 100  # base times x 100: the smallest call path is still hundreds of microseconds
RUN_NOISE = 0.005
RANK_NOISE = 0.01
START = 1_767_232_800  # 2026-01-01 02:00 UTC: the first nightly run
DAY = 86_400
DEFAULT_SHIFTS = ((0.03, 200), (0.10, 120), (0.30, 290))  # (relative size, first run with the new level)


@dataclass(frozen=True)
class Shift:
    node: int  # the call path's index in the tree (pre-order)
    path: tuple[str, ...]  # names from the root
    run: int  # the first run with the new level
    size: float  # relative change of the call path's exclusive time (0.10: 10% slower)
    noise: float  # the call path's own run-to-run noise s_i


@dataclass
class NightlySeries:
    tree: CallTree
    ranks: int
    seed: int
    shifts: list[Shift]
    noise: np.ndarray  # s_i per node
    exclusive: np.ndarray  # int64 [runs, nodes, ranks], microseconds
    launch: np.ndarray  # int64 epoch seconds per run
    commits: list[str]

    @property
    def runs(self) -> int:
        return self.exclusive.shape[0]

    def run_values(self) -> np.ndarray:
        """[runs, nodes] the per-run exclusive time in seconds as the lake computes it: the mean over ranks."""
        return self.exclusive.mean(axis=2) / 1e6

    def globals(self, k: int) -> dict[str, str]:
        total = int(inclusive_from_exclusive(self.tree, self.exclusive[k])[0].max())
        return {
            "cali.caliper.version": "2.12.0",
            "cali.channel": "runtime-profile",
            "mpi.world.size": str(self.ranks),
            "jobsize": str(self.ranks),
            "user": "nightly",
            "cluster": "quartz",
            "executablepath": "/ci/nightly/build/bin/miniapp",
            "launchdate": str(int(self.launch[k])),
            "commit": self.commits[k],
            "branch": "main",
            "build": str(k + 1),
            "elapsed_time": f"{total / 1e6:.6f}",
        }


def _commit(seed: int, k: int) -> str:
    return hashlib.sha1(f"nightly:{seed}:{k}".encode()).hexdigest()


def _pick_nodes(tree: CallTree, share: np.ndarray, count: int, rng: np.random.Generator) -> list[int]:
    """``count`` call paths, none an ancestor of another: drawn among those holding 1%..30% of the
    exclusive time, then (a tree without enough of them) the nearest to that range."""
    inside = (share >= 0.01) & (share <= 0.30)
    cand = [int(i) for i in np.flatnonzero(inside) if i > 0]
    rng.shuffle(cand)
    distance = np.where(share < 0.01, 0.01 / np.maximum(share, 1e-12), share / 0.30)
    cand += [int(i) for i in np.argsort(distance, kind="stable") if i > 0 and not inside[i]]
    chosen: list[int] = []
    for i in cand:
        line = _ancestors(tree, i)
        if any(j in line or i in _ancestors(tree, j) for j in chosen):
            continue
        chosen.append(i)
        if len(chosen) == count:
            return chosen
    raise ValueError(f"the tree has fewer than {count} call paths none of which is an ancestor of another")


def _ancestors(tree: CallTree, i: int) -> set[int]:
    out = set()
    while i >= 0:
        out.add(i)
        i = int(tree.parent[i])
    return out


def nightly_series(*, runs: int = 365, nodes: int = 40, ranks: int = 4, seed: int = 0,
                   shifts=DEFAULT_SHIFTS, noise: tuple[float, float] = (0.01, 0.05),
                   outlier_rate: float = 0.015) -> NightlySeries:
    """The values of a nightly series (module docstring); ``shifts``: (size, first run) pairs."""
    if runs < 2 or nodes < 8 or ranks < 1:
        raise ValueError("runs >= 2, nodes >= 8 and ranks >= 1")
    if any(not 0 < run < runs for _, run in shifts):
        raise ValueError(f"a shift's first run must be in 1..{runs - 1}")
    tree = make_tree(nodes, seed=seed)
    base = make_metrics(tree, ranks, seed=seed * 1000 + 7, app_seed=seed).exclusive.astype(float) * SCALE
    rng = np.random.default_rng([seed, 16, 4])
    s = np.exp(rng.uniform(np.log(noise[0]), np.log(noise[1]), nodes))
    share = base.mean(axis=1) / base.mean(axis=1).sum()
    picked = _pick_nodes(tree, share, len(shifts), rng)
    factor = np.ones((runs, nodes))
    out_shifts = []
    for (size, first), i in zip(shifts, picked):
        factor[first:, i] *= 1.0 + size
        out_shifts.append(Shift(i, tree.path(i), int(first), float(size), float(s[i])))
    log_noise = s[None, :] * rng.standard_normal((runs, nodes)) + RUN_NOISE * rng.standard_normal((runs, 1))
    outlier = np.where(rng.uniform(size=runs) < outlier_rate, rng.uniform(1.15, 1.5, runs), 1.0)
    per_run = factor * np.exp(log_noise) * outlier[:, None]  # [runs, nodes]
    ranks_noise = np.exp(RANK_NOISE * rng.standard_normal((runs, nodes, ranks)))
    exclusive = np.maximum(np.rint(base[None, :, :] * per_run[:, :, None] * ranks_noise), 1).astype(np.int64)
    launch = START + DAY * np.arange(runs, dtype=np.int64) + rng.integers(0, 900, runs)
    return NightlySeries(tree, ranks, seed, out_shifts, s, exclusive, launch, [_commit(seed, k) for k in range(runs)])


def write_nightly(series: NightlySeries, out_dir, *, runs=None) -> list[pathlib.Path]:
    """Write the series (or the run indices ``runs``) as json-split files ``out_dir/night-0000.json`` ..."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tree = series.tree
    calls = np.ones(len(tree), dtype=np.int64)
    subrs = np.zeros(len(tree), dtype=np.int64)
    np.add.at(subrs, tree.parent[1:], 1)
    paths = []
    for k in range(series.runs) if runs is None else runs:
        exc = series.exclusive[k]
        m = Metrics(exc, inclusive_from_exclusive(tree, exc), calls, subrs, series.ranks, 1, [])
        outside = np.full(series.ranks, 500, dtype=np.int64)
        path = out / f"night-{k:04d}.json"
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(caliper_json_text(tree, m, outside, series.globals(k)))
        paths.append(path)
    return paths
