"""Hatchet's layout -- a graph of frames plus a dataframe indexed by node[, rank][, thread] -- as reader rows.

Shared by the Hatchet JSON reader (:mod:`perflake.readers.hatchet_json`) and
:func:`perflake.interop.hatchet.from_hatchet` (a live Hatchet GraphFrame); the mapping of attributes,
placeholders and metric roles is described in :mod:`perflake.interop.hatchet`.
"""

from __future__ import annotations

import math
from numbers import Number

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import INT64_MAX, MAX_FRAME_TEXT, check_frames
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

ATTRIBUTES = ("name", "type", "file", "line", "end_line", "module")
LOCATIONS = ("rank", "thread")
NOT_METRICS = frozenset(ATTRIBUTES) | {"nid", "node", *LOCATIONS}


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _text(v) -> str | None:
    """A file or module: missing, and Hatchet's 0 for 'unknown', become None."""
    if _missing(v):
        return None
    if isinstance(v, Number) and not isinstance(v, bool):
        return None if v == 0 else str(v)
    return str(v)


def _line(v, has_file: bool) -> int | None:
    if _missing(v) or isinstance(v, bool):
        return None
    try:
        number = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    if not 0 <= number <= INT64_MAX:  # readers/base.py: lines fit int64, else unknown
        return None
    return None if number == 0 and not has_file else number


def _number(v) -> float:
    """A metric value as float64: numbers and numeric text (an int beyond float is infinite); else NaN."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return math.nan
    try:
        return float(v)
    except ValueError:
        return math.nan
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _first_values(columns: pd.DataFrame, node: np.ndarray, n: int) -> dict[str, list]:
    """For each attribute column of the dataframe: the first non-null value of every node (None if none)."""
    out = {}
    for c in ATTRIBUTES:
        if c in columns.columns:
            first = columns[c].groupby(node, sort=False).first()
            values = [None] * n
            for k, v in zip(first.index.tolist(), first.tolist()):
                values[int(k)] = None if _missing(v) else v
            out[c] = values
    return out


def _utf8(text: str | None) -> str | None:
    """``text`` with lone surrogates (JSON allows "\\ud800") replaced by U+FFFD: frame text is UTF-8."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # a valid pair joins


def _frames(attrs: list[dict], parents: list[int], firsts: dict[str, list]) -> pa.Table:
    cols = {k: [] for k in ATTRIBUTES}
    for i, a in enumerate(attrs):
        def get(key):
            return a[key] if key in a and not _missing(a[key]) else firsts.get(key, [None] * len(attrs))[i]

        name = get("name")
        kind = a.get("type")
        file = _text(get("file"))
        cols["name"].append(_utf8(str(name) if name is not None else str(a)))
        cols["type"].append(None if _missing(kind) or kind == "None" else _utf8(str(kind)))
        cols["file"].append(_utf8(file))
        cols["line"].append(_line(get("line"), file is not None))
        cols["end_line"].append(_line(get("end_line"), file is not None))
        cols["module"].append(_utf8(_text(get("module"))))
    return pa.table({"local_id": pa.array(range(len(attrs)), pa.int32()), "parent_local": pa.array(parents, pa.int32()),
                     **cols}, schema=FRAME_SCHEMA)


def metric_roles(columns: pd.DataFrame, exc_metrics, inc_metrics) -> list[Metric]:
    """The metric columns with their roles (module docstring); listed metrics stored as text are parsed."""
    exc, inc = set(exc_metrics), set(inc_metrics)
    names = []
    for c in columns.columns:
        if not isinstance(c, str) or c in NOT_METRICS:
            continue
        s = columns[c]
        if pd.api.types.is_bool_dtype(s):
            continue
        if pd.api.types.is_numeric_dtype(s) or c in exc | inc:
            names.append(c)
    present = set(names)
    out = []
    for c in names:
        if c in exc:
            pair = f"{c} (inc)" if f"{c} (inc)" in inc and f"{c} (inc)" in present else None
            out.append(Metric(c, EXCLUSIVE, None, pair))
        elif c in inc:
            base = c[: -len(" (inc)")] if c.endswith(" (inc)") else None
            out.append(Metric(c, INCLUSIVE, None, base if base in exc and base in present else None))
        else:
            out.append(Metric(c, OTHER))
    return out


def layout_rows(attrs: list[dict], parents: list[int], node: np.ndarray, locations: dict, columns: pd.DataFrame,
                exc_metrics, inc_metrics, *, metadata=None, source: str = "<hatchet>") -> ProfileRows:
    """Reader rows of a graph in Hatchet's layout.

    ``attrs[i]``: frame attributes of node i (pre-order); ``parents[i]``: index of its parent (smaller than i)
    or -1; ``node``: the node index of every dataframe row; ``locations``: ``rank``/``thread`` arrays (absent
    means 0); ``columns``: the dataframe's columns, one row per dataframe row.
    """
    if not attrs:
        raise ReaderError(source, "the graph has no nodes")
    node = np.asarray(node, dtype=np.int64)
    frames = check_frames(source, _frames(attrs, parents, _first_values(columns, node, len(attrs))))
    long = next((c for c in columns.columns if len(str(c).encode("utf-8", "replace")) > MAX_FRAME_TEXT), None)
    if long is not None:
        raise ReaderError(source, f"a column name of {len(str(long))} characters (more than {MAX_FRAME_TEXT} bytes): "
                                  "a damaged file")
    metrics = metric_roles(columns, exc_metrics, inc_metrics)
    n = len(columns)
    values = {"local_id": pa.array(node.astype(np.int32)),
              **{lv: pa.array(np.asarray(locations[lv], dtype=np.int64).astype(np.int32) if lv in locations
                              else np.zeros(n, np.int32)) for lv in LOCATIONS}}
    for m in metrics:
        col = columns[m.name]
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            data = col.to_numpy(dtype=np.float64, na_value=np.nan)
        else:  # text, mixed or huge values: one by one
            data = np.fromiter((_number(v) for v in col.tolist()), np.float64, len(col))
        values[m.name] = pa.array(data, pa.float64())
    meta = dict(metadata) if isinstance(metadata, dict) else {}
    return ProfileRows(format="hatchet", source=source, frames=frames, values=pa.table(values), metrics=metrics,
                       metadata=meta)
