"""Compare a GraphFrame with a golden CSV written by llnl-hatchet 2026.2.0 (../shared/golden).

The golden has one row per (call path of names, [rank], [thread]) with same-name siblings summed.  We build
the same table from the GraphFrame and compare every golden row (relative tolerance 1e-9).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LOCATION = ("rank", "thread")


def by_callpath(gf, metrics, locations) -> pd.DataFrame:
    """The GraphFrame as rows keyed by (callpath tuple, *locations), siblings with the same name summed."""
    df = gf.dataframe.reset_index()
    df["callpath"] = [tuple(str(n.frame.get("name")) for n in node.path()) for node in df["node"]]
    keys = ["callpath", *locations]
    for loc in locations:
        df[loc] = df[loc].astype("int64")
    return df.groupby(keys, sort=True)[list(metrics)].sum(min_count=1)


def compare(gf, gold: pd.DataFrame, *, skip_paths=(), rtol: float = 1e-9) -> pd.DataFrame:
    """Assert that every golden row exists in ``gf`` with equal values; returns our table for more checks.

    ``skip_paths``: golden call paths excluded on purpose (each must be justified in the calling test with the
    formats.md Appendix B item it follows from).
    """
    locations = [c for c in LOCATION if c in gold.columns]
    metrics = [c for c in gold.columns if c not in ("callpath", *locations)]
    ours = by_callpath(gf, metrics, locations)
    gold = gold[~gold["callpath"].isin(set(skip_paths))]
    gold = gold.groupby(["callpath", *locations], sort=True)[metrics].sum(min_count=1)
    missing = gold.index.difference(ours.index)
    assert missing.empty, f"{len(missing)} golden rows missing, e.g. {list(missing[:3])}"
    got = ours.loc[gold.index, metrics].astype(float)
    want = gold[metrics].astype(float)
    close = np.isclose(got.to_numpy(), want.to_numpy(), rtol=rtol, atol=0, equal_nan=True)
    if not close.all():
        r, c = np.argwhere(~close)[0]
        raise AssertionError(
            f"{(~close).sum()} values differ; first: {gold.index[r]} {metrics[c]}: ours {got.iat[r, c]} golden "
            f"{want.iat[r, c]}"
        )
    return ours
