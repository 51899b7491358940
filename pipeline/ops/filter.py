"""filter: keep the dataframe rows a callable accepts (vectorised when the callable works on a whole
DataFrame, row by row otherwise), or the nodes a call-path query matches (``perflake.query``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perflake.frame.tables import node_ids


def _vectorised(func, df: pd.DataFrame):
    try:
        mask = func(df)
    except Exception:
        return None
    if isinstance(mask, pd.Series) and mask.dtype == bool and mask.index.equals(df.index):
        return mask.to_numpy()
    return None


def filter_rows(gf, filter_obj, *, multi_index_mode: str = "off"):
    """A new GraphFrame (same, shared graph) holding only the selected rows."""
    from perflake.frame.graphframe import GraphFrame

    from perflake.query import is_query

    df = gf.dataframe
    if callable(filter_obj) and not is_query(filter_obj):
        mask = _vectorised(filter_obj, df)
        if mask is None:
            mask = np.fromiter((bool(filter_obj(row)) for _, row in df.iterrows()), bool, len(df))
    else:
        from perflake.query import match_node_ids

        matched = np.fromiter(match_node_ids(gf, filter_obj, multi_index_mode=multi_index_mode), np.uint64)
        mask = np.isin(node_ids(df), matched)
    return GraphFrame(gf.graph, df[mask].copy(), gf.exc_metrics, gf.inc_metrics, gf.default_metric, gf.metadata)
