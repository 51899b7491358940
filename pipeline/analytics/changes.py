"""Change points over a series of runs: for every call path, the runs where its level shifted.

``changes(lake, order_by="launch_time")`` orders the selected runs by a catalog column or ``meta:KEY`` (runs
without a value are left out, with a warning), takes every call path's per-run value (its mean over
locations, ``sql/ensemble_values.sql``, as in perflake.analytics.ensemble), and segments each call path's
series with PELT (perflake.analytics.changepoint): exact minimum of the squared deviations from the segment
means plus a penalty per change, all call paths in one vectorised pass.

- Scale: ``"log"`` (default) looks for relative shifts (a 10% slowdown is the same step for a call path of
  1 ms and one of 10 s); a call path with a value <= 0 is analysed on the linear scale (``scale`` column).
- Noise: each series is divided by its own noise (robust: MAD of first differences) and winsorized around
  its running median at ``clip`` noise units (single outlier runs do not make changes); ``penalty`` is in
  units of that noise's variance, by default ``3 log n + 2 log P`` (P call paths analysed, n runs).
- ``min_size``: the fewest runs between two changes (default 5): a shift must hold for that many runs.
- A call path absent from some runs is segmented over the runs that have it; paths with fewer than
  ``2 * min_size`` values, or below ``min_share`` of the run total (as in perflake.analytics.regress),
  are not analysed.

Result (:class:`ChangeResult`): ``changes`` has one row per change: node_id, name, path, ``position`` (index
in the ordered runs of the first run after the shift), run_id, the order key and the ``show`` columns of
that run (e.g. ``meta:commit``), ``before``/``after`` (mean of the per-run values over the segments on
either side), ``change`` (after / before - 1), ``step`` (the shift in noise units); sorted by position.
``runs`` (the ordered runs), ``paths`` and ``values`` (call paths x runs) keep the series for plots.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from perflake.analytics import changepoint
from perflake.analytics.meta_keys import check_mode, selected_keys, unknown_key_message
from perflake.analytics.rank_summary import run_values
from perflake.analytics.selection import parse_key, select, selection_metric, session, union_nodes, with_metric
from perflake.engine import sqlfiles
from perflake.errors import LakeError, MetadataKeyWarning, UsageError

DEFAULT_SHOW = ("launch_time", "meta:commit")


@dataclass
class ChangeResult:
    changes: pd.DataFrame
    runs: pd.DataFrame  # position, run_id, order key, show columns; in series order
    paths: pd.DataFrame  # node_id, name, path, share, scale, noise, analysed; one row per row of values
    values: np.ndarray  # [paths, runs] per-run values, NaN where a call path has none
    metric: str
    order_by: str
    penalty: float
    min_size: int

    def __repr__(self) -> str:
        return (f"ChangeResult({len(self.changes)} change(s) in {self.changes['node_id'].nunique()} of "
                f"{int(self.paths['analysed'].sum())} call paths, {len(self.runs)} runs ordered by {self.order_by}, "
                f"{self.metric})")

    def _repr_html_(self) -> str:  # Jupyter: the changes table
        return f"<p>{self!r}</p>" + self.changes.to_html(index=False)

    def series(self, node_id) -> pd.Series:
        """One call path's per-run values, indexed by position."""
        row = int(np.flatnonzero(self.paths["node_id"].to_numpy() == np.uint64(node_id))[0])
        return pd.Series(self.values[row], name=int(node_id))


def _show_specs(show, order_by: str) -> tuple[list[str], bool]:
    if show is None:
        return [s for s in DEFAULT_SHOW if s != order_by], False
    show = [show] if isinstance(show, str) else list(show)
    return [s for s in dict.fromkeys(show) if s != order_by], True


def _ordered_runs(lake, order_by: str, show, where, runs, unknown_keys: str):
    """The selection ordered by ``order_by`` without the runs that lack it (one warning with their count), its
    catalog rows in the same order; a LakeError when no run has a value (a misspelt ``meta:KEY`` names the close
    keys); an explicit ``show`` key no run has warns or, ``unknown_keys="error"``, raises."""
    specs, explicit = _show_specs(show, order_by)
    sel = select(lake, runs=runs, where=where, group_by=[order_by, *specs])
    kind, name, key = parse_key(order_by)
    cols = [parse_key(s)[2] for s in specs]
    df = sel.runs
    if df.empty:
        raise LakeError("no runs selected")
    if df[key].isna().all():
        if kind == "meta" and name not in selected_keys(lake, df["run_id"]):
            raise LakeError(f"order by {order_by!r}: {unknown_key_message(lake, df['run_id'], name)}")
        raise LakeError(f"order by {order_by!r}: no selected run has a value")
    missing = int(df[key].isna().sum())
    if missing:
        warnings.warn(f"order by {order_by!r}: {missing} of {len(df)} selected runs have no value and are left "
                      "out", MetadataKeyWarning, stacklevel=3)
    for s, c in zip(specs, cols):
        if df[c].isna().all() and explicit:
            if s.startswith("meta:") and unknown_keys == "error" and s[5:] not in selected_keys(lake, df["run_id"]):
                raise UsageError(f"show {s!r}: {unknown_key_message(lake, df['run_id'], s[5:])}")
            warnings.warn(f"{s}: no selected run has a value", MetadataKeyWarning, stacklevel=3)
    keep = [c for s, c in zip(specs, cols) if explicit or not df[c].isna().all()]
    df = df[df[key].notna()].sort_values([key, "run_id"], kind="stable").reset_index(drop=True)
    # the catalog rows in the order of the runs kept (with_metric and the default metric index them by position)
    where_in = pc.index_in(pa.array(df["run_id"], pa.string()), value_set=sel.catalog.column("run_id"))
    return sel._replace(runs=df, catalog=sel.catalog.take(where_in)), key, keep


def _role(catalog, metric: str) -> str:
    flat = pc.list_flatten(catalog.column("metrics"))
    roles = dict(zip(pc.struct_field(flat, "name").to_pylist(), pc.struct_field(flat, "role").to_pylist()))
    return roles.get(metric, "other")


def _matrix(values: pd.DataFrame, run_ids: pd.Series, node_ids: np.ndarray) -> np.ndarray:
    pos = pd.Index(run_ids).get_indexer(values["run_id"])
    row = pd.Index(node_ids).get_indexer(values["node_id"])
    out = np.full((len(node_ids), len(run_ids)), np.nan)
    out[row, pos] = values["value"].to_numpy(float)
    return out


def changes(lake, order_by: str = "launch_time", *, where: str | None = None, runs=None, metric: str | None = None,
            show=None, min_size: int = 5, penalty: float | None = None, min_share: float = 0.0, clip: float = 3.0,
            scale: str = "log", unknown_keys: str = "warn") -> ChangeResult:
    """Change points of every call path over the runs ordered by ``order_by`` (module docstring);
    ``unknown_keys="error"``: a ``meta:KEY`` of ``show`` that no selected run has is a UsageError (else a
    warning)."""
    if min_size < 1:
        raise UsageError(f"min_size must be >= 1, not {min_size}")
    if penalty is not None and not (np.isfinite(penalty) and penalty >= 0):
        raise UsageError(f"penalty must be a finite number >= 0, not {penalty}")
    if not (np.isfinite(min_share) and 0 <= min_share <= 1):
        raise UsageError(f"min_share must be a share between 0 and 1, not {min_share}")
    check_mode(unknown_keys)
    if scale not in ("log", "linear"):
        raise UsageError(f"scale must be 'log' or 'linear', not {scale!r}")
    sel, key, shown = _ordered_runs(lake, order_by, show, where, runs, unknown_keys)
    metric = metric if metric is not None else selection_metric(sel)[0]
    rows = with_metric(sel, metric)
    ordered = sel.runs[sel.runs["run_id"].isin(set(rows["run_id"]))].reset_index(drop=True)
    one = bool(((rows["ranks"] == 1) & (rows["threads"] == 1)).all())
    with session(lake) as con:
        con.register("selection_t", ordered[["run_id", "batch"]].assign(group_id=0))
        spec = run_values(lake.catalog(), rows["batch"].unique(), metric, one)  # the rank summary where there is one
        values = sqlfiles.relation(con, spec["name"], **spec["params"]).df()
        nodes = union_nodes(lake, ordered["run_id"], rows["batch"].unique(), con=con).to_pandas()
    node_ids = nodes["node_id"].to_numpy()
    matrix = _matrix(values, ordered["run_id"], node_ids)
    paths = _analyse_paths(nodes, matrix, _role(sel.catalog, metric), min_share, min_size, scale)
    found, info, pen = detect(matrix, min_size=min_size, penalty=penalty, clip=clip, scale=scale,
                              analysed=paths["analysed"])
    paths = paths.assign(scale=info["scale"].to_numpy(), noise=info["noise"].to_numpy())
    runs_out = ordered[["run_id", key, *shown]].assign(position=np.arange(len(ordered)))
    runs_out = runs_out[["position", "run_id", key, *shown]]
    table = _changes_table(found, matrix, paths, runs_out)
    return ChangeResult(table, runs_out, paths, matrix, metric, key, pen, min_size)


def _analyse_paths(nodes, matrix, role, min_share, min_size, scale) -> pd.DataFrame:
    present = np.isfinite(matrix)
    counts = present.sum(axis=1)
    means = np.where(present, matrix, 0.0).sum(axis=1) / np.maximum(counts, 1)
    depth = nodes["path"].map(lambda p: len(p) if p is not None else 0).to_numpy()
    total = means[depth == 1].sum() if role == "inclusive" else means.sum()
    out = nodes[["node_id", "name", "path"]].copy()
    out["share"] = means / total if total > 0 else np.full(len(means), np.nan)
    out["analysed"] = (counts >= 2 * min_size) & ~(out["share"].to_numpy() < min_share)
    return out


def detect(values: np.ndarray, *, min_size: int = 5, penalty: float | None = None, clip: float = 3.0,
           scale: str = "log", analysed=None) -> tuple[dict[int, np.ndarray], pd.DataFrame, float]:
    """The change points of each row of ``values`` (call paths x ordered runs, NaN where a path has no value):
    ({row: positions}, per row ``scale``/``noise``/``analysed``, penalty).  What :func:`changes` runs on
    the lake's values; usable on any matrix (a row is segmented over its finite values)."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    present = np.isfinite(values)
    ok = present.sum(axis=1) >= 2 * min_size
    ok &= np.ones(len(values), bool) if analysed is None else np.asarray(analysed, bool)
    logs = (scale == "log") & ~(np.where(present, values, 1.0) <= 0).any(axis=1)
    info = pd.DataFrame({"scale": np.where(logs, "log", "linear"), "noise": np.nan, "analysed": ok})
    pen = float(penalty) if penalty is not None else changepoint.default_penalty(values.shape[1], int(ok.sum()))
    rows = np.flatnonzero(ok)
    found: dict[int, np.ndarray] = {}
    if not len(rows):
        return found, info, pen
    patterns, inverse = np.unique(np.packbits(present[rows], axis=1), axis=0, return_inverse=True)
    noise = info["noise"].to_numpy(copy=True)
    for g in range(len(patterns)):  # rows present in the same runs are segmented together
        members = rows[inverse.reshape(-1) == g]
        cols = np.flatnonzero(present[members[0]])
        y = values[np.ix_(members, cols)]
        y = np.where(logs[members, None], np.log(np.where(logs[members, None], y, 1.0)), y)
        z, sigma = changepoint.standardize(y, min_size, clip)
        noise[members] = sigma
        for r, pos in zip(members, changepoint.pelt(z, pen, min_size)):
            found[int(r)] = cols[pos]
    info["noise"] = noise
    return found, info, pen


def _changes_table(found, matrix, paths, runs_out) -> pd.DataFrame:
    recs = []
    for r, positions in found.items():
        if not len(positions):
            continue
        have = np.flatnonzero(np.isfinite(matrix[r]))
        y = matrix[r, have]
        cut = np.searchsorted(have, positions)
        medians = changepoint.segment_medians(y, cut)
        log = paths["scale"].iat[r] == "log"
        means = changepoint.segment_means(np.log(y) if log else y, cut)
        for j, pos in enumerate(positions):
            recs.append({"row": r, "position": int(pos), "before": medians[j], "after": medians[j + 1],
                         "step": (means[j + 1] - means[j]) / paths["noise"].iat[r]})
    cols = ["node_id", "name", "path", *runs_out.columns, "before", "after", "change", "step"]
    if not recs:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame(recs)
    df = df.join(paths[["node_id", "name", "path"]], on="row").merge(runs_out, on="position", how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        df["change"] = np.where(df["before"] != 0, df["after"] / df["before"] - 1, np.nan)
    df = df.sort_values(["position", "change"], key=lambda s: s if s.name == "position" else -s.abs(), kind="stable")
    return df[cols].reset_index(drop=True)
