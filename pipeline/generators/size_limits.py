"""The sizes a synthetic study may have, checked in one place before anything is written.

Every writer of :mod:`perflake.generators` that ``perflake generate`` runs checks its sizes here (a ValueError
naming the first size out of range), and the command checks the same table first to refuse in one line naming
the option.  The upper bounds are far above any demo or benchmark (README: 1000 nodes x 256 ranks): they turn
a slip of the keyboard (``--ranks 1000000000``) into a message instead of hours of writing and an exhausted
memory -- the metric arrays of one run hold nodes x ranks x threads values, so that product is bounded too.
"""

from __future__ import annotations

import numbers

# name -> (lowest, highest) accepted value
SIZES = {
    "nodes": (1, 1_000_000),
    "ranks": (1, 1_000_000),
    "threads": (1, 4096),
    "runs": (0, 10_000),
    "seed": (0, 2**32 - 1),
}
MAX_VALUES = 20_000_000  # nodes x ranks x threads of one run (about 160 MB per metric array)


def size_problem(name: str, value) -> str | None:
    """What is wrong with ``value`` as the size ``name`` (``"must be between 1 and 1,000,000, not 0"``), or None."""
    low, high = SIZES[name]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return f"must be a whole number, not {value!r}"
    if not low <= value <= high:
        return f"must be between {low:,} and {high:,}, not {value:,}"
    return None


def values_problem(nodes: int, ranks: int, threads: int = 1) -> str | None:
    """What is wrong with a run of ``nodes`` x ``ranks`` x ``threads`` values (too many), or None."""
    total = nodes * ranks * threads
    if total > MAX_VALUES:
        threads_part = f" x {threads:,} threads" if threads != 1 else ""
        return f"{nodes:,} nodes x {ranks:,} ranks{threads_part} is {total:,} values per run; at most {MAX_VALUES:,}"
    return None


def check_sizes(**sizes) -> None:
    """A ValueError naming the first of ``sizes`` (nodes, ranks, threads, runs, seed) out of range, or one run too
    big (nodes x ranks x threads above MAX_VALUES)."""
    for name, value in sizes.items():
        problem = size_problem(name, value)
        if problem:
            raise ValueError(f"{name} {problem}")
    problem = values_problem(sizes.get("nodes", 1), sizes.get("ranks", 1), sizes.get("threads", 1))
    if problem:
        raise ValueError(problem)
