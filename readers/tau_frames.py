"""TAU timer names -> frame attributes (formats.md 5.3 and 5.5), and the call tree they form."""

from __future__ import annotations

import re
from array import array

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import line_number
from perflake.readers.limits import MAX_CALL_DEPTH, MAX_FRAME_TEXT, MAX_NODES
from perflake.vocabulary import FRAME_SCHEMA

# the longest timer name: a frame name and its source file, each at most MAX_FRAME_TEXT, and the location syntax
TIMER_TEXT = 2 * MAX_FRAME_TEXT + 64

# `` [{file} {line,col}-{line,col}]`` at the end of a name, found in two linear steps: the tail from the
# file's closing brace, then the leftmost `` [{`` after the brace before it (one regex searched from every
# `` [{`` would rescan the name from each of them: quadratic time on a damaged name)
_LOC_TAIL_RE = re.compile(r"\}\s*\{(\d+)(?:,(\d+))?\}(?:-\{(\d+)(?:,(\d+))?\})?\]\s*$")
_LOC_HEAD_RE = re.compile(r"\s\[\{")


def parse_frame(text: str) -> tuple[str, str | None, int | None, int | None, str | None]:
    """Split one TAU timer name into (name, file, line, end_line, module) per formats.md 5.3/5.5.

    ``int main(int, char **) C [{cpi.c} {19,1}-{60,1}]`` -> ("int main(int, char **)", "cpi.c", 19, 60, None).
    ``{line,col}`` gives the line only (Hatchet stores the column as end_line: formats.md B.24).
    """
    name = text.strip()
    file = module = None
    line = end_line = None
    tail = _LOC_TAIL_RE.search(name) if name.endswith("]") else None
    head = tail and _LOC_HEAD_RE.search(name, name.rfind("}", 0, tail.start()) + 1, tail.start())
    if head:
        file = name[head.end() : tail.start()] or None
        line = line_number(tail.group(1))  # None when absurd (not an int64)
        end_line = line_number(tail.group(3))
        name = name[: head.start()].rstrip()
        if name.endswith(" C"):
            name = name[:-2].rstrip()
    if name.startswith("[UNWIND] ") and " [@] " in name:
        where, _, func = name[len("[UNWIND] "):].partition(" [@] ")
        name = "[UNWIND] " + func.strip()
        module = where.strip() or None
    else:
        tokens = name.split()
        if len(tokens) == 3 and "/" in tokens[2] and not name.startswith("["):
            name, module = " ".join(tokens[:2]), tokens[2]
    return name, file, line, end_line, module


class CallTree:
    """The call tree of a TAU profile, built one callpath at a time: ``node(path)`` gives the local id of a path
    (a tuple of timer names from the root), creating it and its missing ancestors.

    Nodes are keyed by (parent id, timer name): time and memory stay linear in the path length, however deep a
    callpath entry is (keys of whole paths, or a recursion per frame, would not).  Every node remembers the
    first entry that reached it, as (row of that entry's first appearance, mode, depth): :meth:`order` sorts
    the nodes by it, which is the order of first appearance in the files (an entry seen first as a flat entry
    of a callpath file, and only later used, is placed where it was first seen).  Limits (readers/limits.py):
    at most MAX_NODES nodes, MAX_CALL_DEPTH frames on a path, 2 x MAX_FRAME_TEXT + 64 bytes in a timer name
    (the name with its source location; the exact per-attribute limit is checked on the frames)."""

    def __init__(self, path: str):
        self.path = path
        self.ids: dict[tuple[int, str], int] = {}
        self.leaf: list[str] = []
        # per node, as machine integers (a million-node tree): parent id, depth, and the (row, mode) of the
        # first entry reaching it
        self.parent, self.depth, self.row, self.mode = (array("q") for _ in range(4))

    def refuse(self, problem: str):
        raise ReaderError(self.path, problem)

    def node(self, path, row: int, mode: int) -> int:
        if len(path) > MAX_CALL_DEPTH:
            self.refuse(f"a call path of {len(path)} frames (more than {MAX_CALL_DEPTH}, "
                        "readers/limits.py: MAX_CALL_DEPTH)")
        nid = -1
        for d, frame in enumerate(path):
            parent, nid = nid, self.ids.get((nid, frame))
            if nid is None:
                nid = self._new(parent, frame, d, row, mode)
            elif row < self.row[nid] or (row == self.row[nid] and mode < self.mode[nid]):
                self.row[nid], self.mode[nid] = row, mode
        return nid

    def children(self, parent: int, frames: list[str], rows: list[int], mode: int) -> list[int]:
        """``node(path of parent + (frame,))`` for many frames at once (the flat entries under the root)."""
        out, ids, depth = [], self.ids, self.depth[parent] + 1
        for frame, row in zip(frames, rows):
            nid = ids.get((parent, frame))
            if nid is None:
                nid = self._new(parent, frame, depth, row, mode)
            elif row < self.row[nid] or (row == self.row[nid] and mode < self.mode[nid]):
                self.row[nid], self.mode[nid] = row, mode
            out.append(nid)
        return out

    def _new(self, parent: int, frame: str, depth: int, row: int, mode: int) -> int:
        if len(frame) > TIMER_TEXT // 4 and len(frame.encode("utf-8", "surrogatepass")) > TIMER_TEXT:
            self.refuse(f"a timer name of {len(frame.encode('utf-8', 'surrogatepass'))} bytes (more than "
                        f"{TIMER_TEXT}, readers/limits.py: MAX_FRAME_TEXT)")
        nid = self.ids[parent, frame] = len(self.parent)
        if nid >= MAX_NODES:
            self.refuse(f"more than {MAX_NODES} call-tree nodes (readers/limits.py: MAX_NODES)")
        self.parent.append(parent)
        self.leaf.append(frame)
        self.depth.append(depth)
        self.row.append(row)
        self.mode.append(mode)
        return nid

    def mark(self) -> int:
        return len(self.parent)

    def rollback(self, mark: int) -> None:
        """Forget the nodes made since :meth:`mark` (a file re-read by the careful parser makes them again)."""
        for i in range(mark, len(self.parent)):
            del self.ids[self.parent[i], self.leaf[i]]
        for lst in (self.parent, self.leaf, self.depth, self.row, self.mode):
            del lst[mark:]

    def order(self) -> np.ndarray:
        """``new[old id]``: the final local id of every node (order of first appearance, parents first)."""
        n = len(self.parent)
        order = np.lexsort(tuple(np.frombuffer(a, dtype=np.int64) for a in (self.depth, self.mode, self.row)))
        new = np.empty(n, dtype=np.int64)
        new[order] = np.arange(n)
        return new

    def frames(self, new: np.ndarray) -> pa.Table:
        n = len(self.parent)
        order = np.empty(n, dtype=np.int64)
        order[new] = np.arange(n)
        parent = np.frombuffer(self.parent, dtype=np.int64)[order]
        parent = np.where(parent >= 0, new[np.maximum(parent, 0)], -1)
        parsed = [parse_frame(self.leaf[i]) for i in order.tolist()]
        return pa.table(
            {
                "local_id": pa.array(np.arange(n, dtype=np.int32)),
                "parent_local": pa.array(parent.astype(np.int32)),
                "name": [p[0] for p in parsed],
                "type": ["function"] * n,
                "file": [p[1] for p in parsed],
                "line": [p[2] for p in parsed],
                "end_line": [p[3] for p in parsed],
                "module": [p[4] for p in parsed],
            },
            schema=FRAME_SCHEMA,
        )
