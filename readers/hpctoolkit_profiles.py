"""Where each profile of an HPCToolkit sparse database goes: shared by the 2021-2022 sparse reader
(:mod:`perflake.readers.hpctoolkit_sparse`) and the v4 reader (:mod:`perflake.readers.hpctoolkit_v4`).

Each reader reads the id tuples its own way and decides which profiles are CPU threads (rank = the ``RANK`` id,
thread = the ``THREAD`` id, when that location is still free).  Every other profile of a rank -- a GPU stream, a
context, a CPU thread whose location is taken -- gets thread ``GPU_THREAD_BASE + k``, the lowest k free on that
rank, in the order of (rank, the profile's id tuple): the same database gives the same locations every time.
"""

from __future__ import annotations

from perflake.errors import ReaderError
from perflake.readers.base import INT32_MAX

GPU_THREAD_BASE = 10000
SUMMARY_RANK = -1


def checked_rank(value: dict, profile: int, path: str) -> int:
    """The ``RANK`` id of a profile's id tuple (``value``: kind -> id), 0 when it has none; a ReaderError naming
    ``path`` when its rank or thread id does not fit int32."""
    big = next((k for k in ("RANK", "THREAD") if not 0 <= value.get(k, 0) <= INT32_MAX), None)
    if big:
        raise ReaderError(path, f"damaged: profile {profile} has {big} id {value[big]}, beyond {INT32_MAX}")
    return value.get("RANK", 0)


def place_others(rank, thread, others: list, taken: set, records: list[dict]):
    """Threads from GPU_THREAD_BASE for ``others`` ((rank, sort key, profile index) of the profiles that are no
    free CPU thread; ``taken``: the (rank, thread) already given), then each record's ``rank`` and ``thread``
    (records: one per profile, ``profile`` its index).  Returns (rank, thread, records)."""
    next_k: dict[int, int] = {}
    for r, _, i in sorted(others, key=lambda o: (o[0], o[1])):
        k = next_k.get(r, 0)
        while (r, GPU_THREAD_BASE + k) in taken:
            k += 1
        thread[i] = GPU_THREAD_BASE + k
        taken.add((r, GPU_THREAD_BASE + k))
        next_k[r] = k + 1
    for rec in records:
        rec["rank"], rec["thread"] = int(rank[rec["profile"]]), int(thread[rec["profile"]])
    return rank, thread, records
