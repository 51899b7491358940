"""Hatchet's JSON (one run: what ``GraphFrame.to_json()`` of llnl-hatchet and ``perflake export`` write) as a
reader, so that ``perflake ingest``/``tree``/``read`` take such files like any profile.

The layout is described in :mod:`perflake.interop.json_files`; the rows are built as for a live Hatchet GraphFrame
(:mod:`perflake.readers.hatchet_layout`).  A Thicket JSON file (several profiles) is refused with a ReaderError.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pandas as pd
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import ProfileRows, check_text, finite, shown
from perflake.readers.hatchet_layout import LOCATIONS, layout_rows
from perflake.readers.single_file import SingleFileReader

_HEAD = 1 << 16
_START = re.compile(rb'^\s*\{\s*"graph"\s*:\s*\[')  # Hatchet's to_json and perflake write "graph" first
_THICKET = re.compile(rb'"profile_mapping"\s*:|"profile_idx_name"\s*:')


class Reader(SingleFileReader):
    kind = "hatchet_json"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        """A ``.json`` file holding one JSON object with Hatchet's ``graph`` and ``dataframe_indices`` (looked for
        in its first and last 64 KiB), and not Thicket's ``profile_mapping`` (several profiles)."""
        if not os.fspath(path).lower().endswith(".json") or not os.path.isfile(path):
            return False
        try:
            with open(path, "rb") as fh:
                head, size = fh.read(_HEAD), os.fstat(fh.fileno()).st_size
                if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
                    return False
                tail = b""
                if size > _HEAD:
                    fh.seek(max(_HEAD, size - _HEAD))
                    tail = fh.read()
        except OSError:
            return False
        ends = head + b"\n" + tail
        if _THICKET.search(ends):
            return False
        return (bool(_START.match(head.lstrip(b"\xef\xbb\xbf")))
                or (b'"graph"' in ends and b'"dataframe_indices"' in ends))

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        rows = rows_from_spec(load(path), path)
        rows.format = self.kind
        rows.reader_version = self.version
        # infinities as NaN (readers/base.finite); converting a live GraphFrame (perflake.interop.hatchet) keeps
        # them: a user's values
        for i, field in enumerate(rows.values.schema):
            if pa.types.is_floating(field.type):
                col = rows.values.column(i).to_numpy()
                rows.values = rows.values.set_column(i, field, pa.array(finite(col), field.type))
        return rows


def load(path: str):
    """The parsed JSON of ``path``; ReaderError when it cannot be read or is not JSON."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise ReaderError(path, exc.strerror or str(exc)) from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, a number of thousands of digits
        raise ReaderError(path, f"not JSON: {str(exc)[:120]}") from None


def _require(spec, source: str) -> None:
    if not isinstance(spec, dict):
        raise ReaderError(source, "not Hatchet JSON: the top level is not an object")
    missing = [k for k in ("graph", "dataframe", "dataframe_indices") if k not in spec]
    if missing:
        raise ReaderError(source, f"not Hatchet JSON: no {', '.join(repr(k) for k in missing)} key")
    if not isinstance(spec["graph"], list) or not all(isinstance(g, dict) for g in spec["graph"]):
        raise ReaderError(source, "'graph' must be a list of objects (one per root)")
    indices = spec["dataframe_indices"]
    if not isinstance(spec["dataframe"], list) or not all(isinstance(r, dict) for r in spec["dataframe"]):
        raise ReaderError(source, "'dataframe' must be a list of records (objects)")
    if not isinstance(indices, list) or "node" not in indices or len(set(map(str, indices))) != len(indices):
        raise ReaderError(source, "'dataframe_indices' must be a list of distinct levels naming 'node', "
                                  f"not {shown(indices)}")
    for key in ("inclusive_metrics", "exclusive_metrics"):
        value = spec.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(m, str) for m in value)):
            raise ReaderError(source, f"'{key}' must be a list of column names, not {shown(value)}")


def _integers(values: list, source: str, what: str, low: int, high: int) -> np.ndarray:
    """``values`` as int64; a ReaderError naming ``what`` unless each is an integer in [low, high]."""
    out = np.empty(len(values), np.int64)
    for i, v in enumerate(values):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise ReaderError(source, f"{what} {shown(v)} is not an integer in [{low}, {high}]")
        out[i] = v
    return out


def _pre_order(spec: dict, source: str) -> tuple[dict[int, int], list[dict], list[int]]:
    """(nid -> local id, frame attributes, parent local ids) in pre-order from the roots."""
    data, children = {}, {}
    try:
        for g in spec["graph"]:
            for key, value in g.items():
                nid = int(key)
                attrs = value["data"]
                if not isinstance(attrs, dict) or not attrs:
                    raise ValueError(f"node {key}: 'data' must be a non-empty object")
                data[nid] = attrs
                children[nid] = [int(c) for c in value.get("children") or []]
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ReaderError(source, f"malformed 'graph': {str(exc)[:120]}") from None
    unknown = sorted({c for cs in children.values() for c in cs} - set(data))
    if unknown:
        raise ReaderError(source, f"'graph' names child {shown(unknown[0])} that has no entry")
    has_parent = {c for cs in children.values() for c in cs}
    local, attrs, parents = {}, [], []
    stack = [(nid, -1) for nid in reversed([n for n in data if n not in has_parent])]
    while stack:
        nid, parent = stack.pop()
        if nid in local:
            continue
        local[nid] = len(attrs)
        attrs.append(data[nid])
        parents.append(parent)
        stack.extend((c, local[nid]) for c in reversed(children[nid]))
    if len(local) != len(data):
        raise ReaderError(source, f"{len(data) - len(local)} nodes are not reachable from a root (a cycle)")
    return local, attrs, parents


def rows_from_spec(spec, source: str) -> ProfileRows:
    """Reader rows of a parsed Hatchet JSON document (one run); ReaderError naming ``source`` when malformed."""
    _require(spec, source)
    check_text(source, spec["graph"])  # frame names: as every reader, refuse text that is not text
    local, attrs, parents = _pre_order(spec, source)
    indices = list(spec["dataframe_indices"])
    extra = [lv for lv in indices if lv not in ("node", *LOCATIONS)]
    if extra:
        raise ReaderError(source, f"dataframe indexed by {shown(extra)}: only node, rank and thread are read "
                                  "(a Thicket's JSON is not one run)")
    records = spec["dataframe"]
    try:
        df = pd.DataFrame.from_records(records) if records else pd.DataFrame({"node": []})
    except UnicodeError:  # a lone surrogate ("\\ud800") in a text value: pandas' Arrow strings refuse it
        check_text(source, records)
        raise
    if any("node" not in r for r in records):
        raise ReaderError(source, "every dataframe record needs a 'node'")
    nids = _integers([r["node"] for r in records], source, "dataframe record node", -(2**63), 2**63 - 1)
    try:
        node = np.fromiter((local[int(n)] for n in nids), np.int64, len(nids))
    except KeyError as exc:
        raise ReaderError(source, f"dataframe record of node {shown(exc.args[0])}, which is not in 'graph'") from None
    locations = {}
    for lv in LOCATIONS:
        if lv in indices:
            if any(lv not in r for r in records):
                raise ReaderError(source, f"'{lv}' is an index level but not in every record")
            locations[lv] = _integers([r[lv] for r in records], source, lv, -(2**31), 2**31 - 1)
    key = np.stack([node, *locations.values()]) if len(node) else np.zeros((1, 0), np.int64)
    if len(node) and len(np.unique(key, axis=1)[0]) != len(node):
        raise ReaderError(source, f"two dataframe records share a ({', '.join(['node', *locations])}) key: "
                                  "one record per node and location")
    columns = df.drop(columns=[c for c in indices if c in df.columns]).reset_index(drop=True)
    return layout_rows(attrs, parents, node, locations, columns, spec.get("exclusive_metrics") or [],
                       spec.get("inclusive_metrics") or [], metadata=spec.get("metadata"), source=source)
