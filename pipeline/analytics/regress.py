"""Regressions between two groups of runs: which call paths got slower, by how much, and is it noise?

``regress(lake, baseline, candidate)``: each side is an SQL condition on the runs catalog (``"meta:branch"``
is not SQL: write ``metadata->>'$.branch' = 'main'``) or a list of run ids.  A run's value at a call path is
its mean over locations, as in perflake.analytics.ensemble (``sql/ensemble_values.sql``); per call path,
one DuckDB pass gives each side's count, mean and variance (``sql/regress_moments.sql``) and one the
Mann-Whitney rank sums (``sql/regress_ranks.sql``); perflake.analytics.twogroup turns them into Welch's t
and Mann-Whitney U p-values (equal to SciPy's), Benjamini-Hochberg adjusted across the call paths tested
(those with a value in at least two runs of each side for Welch, one for Mann-Whitney), and Hedges' g.

Columns: ``share`` = the call path's baseline mean / the baseline's run total (the sum of the roots' means
for an inclusive metric, of every call path's for an exclusive one); ``change`` = cand_mean / base_mean - 1
(0.1: 10% slower); ``effect`` = Hedges' g (the difference of means in pooled standard deviations);
``prob_slower`` = U / (n0 n1), the probability that a candidate run is slower than a baseline run (ties
count half).  A call path is **flagged** when share >= ``min_share``, change > ``threshold`` and its
adjusted p (``q``) is below ``alpha`` -- for ``test="both"``, both q-values.  Rows: flagged first, then by
|effect|.  A call path measured on one side only cannot be tested (``status`` 'only baseline' / 'only
candidate'); with an inclusive metric its time still shows in its ancestors.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from perflake.analytics import twogroup
from perflake.analytics.rank_summary import run_values
from perflake.analytics.selection import select, selection_metric, session, union_nodes, with_metric
from perflake.engine import sqlfiles
from perflake.errors import LakeError, UsageError

TESTS = ("welch", "mannwhitney", "both")
COLUMNS = ["node_id", "name", "path", "status", "share", "n_base", "n_cand", "base_mean", "cand_mean", "delta",
           "change", "effect", "t", "p_welch", "q_welch", "prob_slower", "p_mwu", "q_mwu", "flagged"]


@dataclass
class RegressResult:
    """``table`` (one row per call path, COLUMNS), the settings, and the CI verdict ``exit_code``."""

    table: pd.DataFrame
    metric: str
    baseline: str
    candidate: str
    n_baseline: int
    n_candidate: int
    test: str
    alpha: float
    threshold: float
    min_share: float
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"RegressResult({self.summary()})"

    def _repr_html_(self) -> str:  # Jupyter: the verdict and the top rows
        return f"<p>{self.summary()}</p>" + self.table.head(15).to_html(index=False)

    @property
    def flagged(self) -> pd.DataFrame:
        return self.table[self.table["flagged"]]

    @property
    def exit_code(self) -> int:
        """1 when a call path is flagged (a regression), else 0."""
        return int(bool(self.table["flagged"].any()))

    def summary(self) -> str:
        k = int(self.table["flagged"].sum())
        verdict = (f"{k} call path{'s' if k != 1 else ''} slower by more than {self.threshold:.1%}"
                   if k else "no call path significantly slower")
        q = {"welch": "Welch t", "mannwhitney": "Mann-Whitney U", "both": "Welch t and Mann-Whitney U"}[self.test]
        return (f"{verdict} ({self.metric}; {self.n_candidate} candidate vs {self.n_baseline} baseline runs; "
                f"{q}, Benjamini-Hochberg q < {self.alpha:g}; share >= {self.min_share:.1%})")

    def to_dict(self, top: int | None = None) -> dict:
        rows = self.table if top is None else self.table.head(top)
        records = []
        for rec in rows.to_dict("records"):
            rec["path"] = [str(p) for p in rec["path"]] if rec["path"] is not None else None
            rec["node_id"] = int(rec["node_id"])
            records.append({k: _json_value(v) for k, v in rec.items()})
        return {"metric": self.metric, "baseline": self.baseline, "candidate": self.candidate,
                "n_baseline": self.n_baseline, "n_candidate": self.n_candidate, "test": self.test,
                "alpha": self.alpha, "threshold": self.threshold, "min_share": self.min_share,
                "exit_code": self.exit_code, "summary": self.summary(), "notes": self.notes,
                "flagged": int(self.table["flagged"].sum()), "call_paths": records}

    def to_json(self, top: int | None = None) -> str:
        return json.dumps(self.to_dict(top), indent=1, allow_nan=False)

    def to_markdown(self, top: int = 15) -> str:
        """A CI comment: the verdict, then the top rows as a Markdown table."""
        head = "### :red_circle: Performance regression" if self.exit_code else "### :green_circle: No regression"
        lines = [head, "", self.summary() + ".", ""]
        lines += [f"> {n}" for n in self.notes] + ([""] if self.notes else [])
        lines += ["| | call path | share | baseline | candidate | change | effect (g) | q |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        qcol = _q(self.table, self.test)
        for (_, r), q in zip(self.table.head(top).iterrows(), qcol[: top]):
            mark = ":x:" if r["flagged"] else ""
            frames = [] if r["path"] is None else [str(p) for p in r["path"]]
            path = ("… > " if len(frames) > 3 else "") + " > ".join(frames[-3:]).replace("|", "\\|")
            lines.append(f"| {mark} | `{path}` | {_pct(r['share'])} | {_num(r['base_mean'])} | "
                         f"{_num(r['cand_mean'])} | {_pct(r['change'], sign=True)} | {_num(r['effect'])} | "
                         f"{_num(q)} |")
        if len(self.table) > top:
            lines.append(f"\n{len(self.table) - top} more call paths in the JSON report.")
        return "\n".join(lines) + "\n"


def _json_value(v):
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else (None if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    return v


def _num(v) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}"


def _pct(v, sign: bool = False) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:+.1%}" if sign else f"{v:.1%}"


def _q(table: pd.DataFrame, test: str) -> np.ndarray:
    if test == "welch":
        return table["q_welch"].to_numpy(float)
    if test == "mannwhitney":
        return table["q_mwu"].to_numpy(float)
    return np.fmax(table["q_welch"].to_numpy(float), table["q_mwu"].to_numpy(float))


def _side(lake, spec, name: str):
    if isinstance(spec, str):
        sel = select(lake, where=spec)
        text = spec
    else:
        sel = select(lake, runs=list(spec))
        text = ", ".join(spec)
    if sel.runs.empty:
        raise LakeError(f"{name} {text!r}: no run selected")
    return sel, text


def _role(catalogs, metric: str) -> str:
    for cat in catalogs:
        flat = pc.list_flatten(cat.column("metrics"))
        for name, role in zip(pc.struct_field(flat, "name").to_pylist(), pc.struct_field(flat, "role").to_pylist()):
            if name == metric:
                return role
    return "other"


def regress(lake, baseline, candidate, *, metric: str | None = None, test: str = "welch", alpha: float = 0.05,
            threshold: float = 0.05, min_share: float = 0.01) -> RegressResult:
    """Call paths of ``candidate`` against ``baseline`` (module docstring)."""
    if test not in TESTS:
        raise UsageError(f"unknown test {test!r}: use {', '.join(TESTS)}")
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must be between 0 and 1, not {alpha}")
    base, base_text = _side(lake, baseline, "baseline")
    cand, cand_text = _side(lake, candidate, "candidate")
    metric = metric if metric is not None else selection_metric(base)[0]
    rows = pd.concat([with_metric(base, metric).assign(group_id=0), with_metric(cand, metric).assign(group_id=1)],
                     ignore_index=True)
    notes = []
    both = set(rows.loc[rows["group_id"] == 0, "run_id"]) & set(rows.loc[rows["group_id"] == 1, "run_id"])
    if both:
        notes.append(f"{len(both)} run(s) are in both the baseline and the candidate")
        warnings.warn(notes[-1], stacklevel=2)
    n_base, n_cand = int((rows["group_id"] == 0).sum()), int((rows["group_id"] == 1).sum())
    cat = lake.catalog()
    one = bool(((rows["ranks"] == 1) & (rows["threads"] == 1)).all())
    with session(lake) as con:
        con.register("selection_t", rows[["run_id", "batch", "group_id"]])
        spec = run_values(cat, rows["batch"].unique(), metric, one)  # from the rank summary where the lake has it
        sqlfiles.materialize(con, "run_values_t", spec["name"], **spec["params"])
        moments = sqlfiles.relation(con, "regress_moments").df()
        ranks = sqlfiles.relation(con, "regress_ranks").df()
        nodes = union_nodes(lake, rows["run_id"], rows["batch"].unique(), con=con).to_pandas()
    table = _table(moments.merge(ranks[["node_id", "rank_sum1", "tie_term"]], on="node_id", how="left"),
                   nodes, _role([base.catalog, cand.catalog], metric))
    q = _q(table, test)
    table["flagged"] = ((table["share"] >= min_share) & (table["change"] > threshold) & (q < alpha)).to_numpy()
    table["_key"] = -np.abs(table["effect"].to_numpy(float))
    table = table.sort_values(["flagged", "_key"], ascending=[False, True], na_position="last", kind="stable")
    table = table.drop(columns="_key").reset_index(drop=True)[COLUMNS]
    return RegressResult(table, metric, base_text, cand_text, n_base, n_cand, test, alpha, threshold, min_share, notes)


def _table(m: pd.DataFrame, nodes: pd.DataFrame, role: str) -> pd.DataFrame:
    n0, n1 = m["n0"].to_numpy(float), m["n1"].to_numpy(float)
    m0, m1 = m["mean0"].to_numpy(float), m["mean1"].to_numpy(float)
    v0, v1 = m["var0"].to_numpy(float), m["var1"].to_numpy(float)
    t, _df, p_t = twogroup.welch(n0, m0, v0, n1, m1, v1)
    u1, p_u = twogroup.mann_whitney(n0, n1, m["rank_sum1"].to_numpy(float), m["tie_term"].to_numpy(float))
    out = m[["node_id"]].merge(nodes[["node_id", "name", "path"]], on="node_id", how="left")
    depth = out["path"].map(lambda p: len(p) if p is not None else 0).to_numpy()
    base_means = np.where(np.isfinite(m0), m0, 0.0)
    total = base_means[depth == 1].sum() if role == "inclusive" else base_means.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["status"] = np.where(n0 == 0, "only candidate", np.where(n1 == 0, "only baseline", "both"))
        out["share"] = m0 / total if total > 0 else np.nan
        out["n_base"], out["n_cand"] = n0.astype(np.int64), n1.astype(np.int64)
        out["base_mean"], out["cand_mean"] = m0, m1
        out["delta"] = m1 - m0
        out["change"] = np.where(m0 != 0, m1 / m0 - 1, np.nan)
        out["effect"] = twogroup.hedges_g(n0, m0, v0, n1, m1, v1)
        out["t"], out["p_welch"], out["q_welch"] = t, p_t, twogroup.benjamini_hochberg(p_t)
        out["prob_slower"] = u1 / (n0 * n1)
        out["p_mwu"], out["q_mwu"] = p_u, twogroup.benjamini_hochberg(p_u)
    return out

