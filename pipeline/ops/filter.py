"""filter: keep the dataframe rows a callable accepts (vectorised when the callable works on a whole
DataFrame, row by row otherwise), or the nodes a call-path query matches (``perflake.query``).

As in Hatchet, the callable sees the index levels as values too: ``row["node"]`` is the row's Node (and
``row["rank"]`` / ``row["thread"]`` its location when the frame has those levels), on the row-by-row path and on
the vectorised one (``df["node"]`` is then a column of Nodes).  Hatchet's errors: :class:`InvalidFilter` for an
argument that is neither a callable, a query list, a query string nor a query object; :class:`EmptyFilter` when
no row is left (``allow_empty=True``, for perflake's own callers, returns the empty frame instead).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.errors import EmptyFilter, InvalidFilter
from perflake.frame.tables import node_ids


def _with_levels(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (same index, columns shared, not copied) plus one column per index level it does not already have."""
    names = [n for n in df.index.names if n is not None and n not in df.columns]
    if not names:
        return df
    view = df.copy(deep=False)
    for name in names:
        view[name] = df.index.get_level_values(name)
    return view


def _vectorised(func, df: pd.DataFrame):
    try:
        mask = func(df)
    except Exception:
        return None
    if isinstance(mask, pd.Series) and mask.dtype == bool and mask.index.equals(df.index):
        return mask.to_numpy()
    return None


def _query_like(filter_obj) -> bool:
    from perflake.query import is_query

    return isinstance(filter_obj, (list, str)) or is_query(filter_obj)


def filter_rows(gf, filter_obj, *, multi_index_mode: str = "off", allow_empty: bool = False):
    """A new GraphFrame (same, shared graph) holding only the selected rows."""
    df = gf.dataframe
    if callable(filter_obj) and not _query_like(filter_obj):
        rows = _with_levels(df)
        mask = _vectorised(filter_obj, rows)
        if mask is None:
            mask = np.fromiter((bool(filter_obj(row)) for _, row in rows.iterrows()), bool, len(rows))
    elif _query_like(filter_obj):
        from perflake.query import match_node_ids

        matched = np.fromiter(match_node_ids(gf, filter_obj, multi_index_mode=multi_index_mode), np.uint64)
        mask = np.isin(node_ids(df), matched)
    else:
        raise InvalidFilter(f"filter takes a callable, a query path list, a query string or a query object, "
                            f"not {type(filter_obj).__name__}")
    if not allow_empty and not mask.any():
        raise EmptyFilter("the filter would have produced an empty GraphFrame (no row matches it)")
    return type(gf)(gf.graph, df[mask].copy(), gf.exc_metrics, gf.inc_metrics, gf.default_metric, gf.metadata)
