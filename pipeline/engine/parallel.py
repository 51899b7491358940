"""Dask fan-out over runs and rank ranges: plain-parameter tasks, one DuckDB connection per task.

A task is a dict of plain values (sql/ file name, Parquet paths, run ids, a rank range, small tables); it
opens its own ``duckdb.connect()``, runs one sql/ file and returns a small table (Arrow).  The caller reduces
the list of results with one more pandas or SQL step.

The task list depends only on the catalog (``plan``), never on the scheduler, and every task runs DuckDB
with one thread, so a task computes the same bits wherever it runs: the synchronous scheduler, the local
threaded one (the default, no setup), a local process pool, or an existing dask.distributed cluster
(``scheduler="tcp://host:port"`` or a ``distributed.Client``).

>>> tasks = plan(rows, lambda batch: catalog.files("metrics", [batch]))
>>> parts = fan_out(sql_task, [dict(name="...", params={...}) for t in tasks], scheduler="tcp://10.0.0.1:8786")
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import duckdb
import pyarrow as pa

from perflake.engine import duck, resources, sqlfiles
from perflake.errors import SchedulerName, UsageError

DEFAULT_TASK_ROWS = 1_000_000  # metric rows (node x location) one task reads at most, about 10 MB of Parquet
RANK_MAX = 2**31 - 1
CONNECT_SECONDS = 3.0  # a scheduler address that does not answer within this is an error, not a long hang
LOCAL_SCHEDULERS = {"sync": "synchronous", "synchronous": "synchronous", "single-threaded": "synchronous",
                    "threads": "threads", "threading": "threads", "processes": "processes",
                    "multiprocessing": "processes"}


def estimated_rows(row: dict) -> int:
    """Metric rows of a run as the catalog predicts them: nodes x ranks x threads."""
    return max(1, row.get("n_nodes") or 1) * max(1, row.get("ranks") or 1) * max(1, row.get("threads") or 1)


def plan(rows: Iterable[dict], files_of: Callable[[str], list[str]], *, task_rows: int = DEFAULT_TASK_ROWS,
         split_ranks: bool = True) -> list[dict]:
    """Cut catalog rows into tasks of at most about ``task_rows`` metric rows.

    Runs of one batch are packed together (they share one Parquet file, and row-group statistics on the
    sorted ``run_id`` prune the rest); a run bigger than ``task_rows`` gets tasks of its own, one per rank
    range (``rank_lo``..``rank_hi``, the last one open-ended) when ``split_ranks``.  Every task is
    ``{"files", "run_ids", "batch", "rank_lo", "rank_hi"}`` (a task's runs are of one batch); the order is
    deterministic (batch, then run id).
    """
    if task_rows < 1:
        raise ValueError("task_rows must be >= 1")
    by_batch: dict[str, list[dict]] = {}
    for r in rows:
        by_batch.setdefault(r["batch"], []).append(r)
    tasks: list[dict] = []
    for batch in sorted(by_batch):
        files = files_of(batch)
        for run_ids, lo, hi in _pack(sorted(by_batch[batch], key=lambda r: r["run_id"]), task_rows, split_ranks):
            tasks.append({"files": files, "run_ids": run_ids, "batch": batch, "rank_lo": lo, "rank_hi": hi})
    return tasks


def _pack(rows: list[dict], task_rows: int, split_ranks: bool):
    """(run ids, rank_lo, rank_hi) of the tasks of one batch."""
    chunk: list[str] = []
    size = 0
    for r in rows:
        n, ranks = estimated_rows(r), max(1, r.get("ranks") or 1)
        if split_ranks and n > task_rows and ranks > 1:
            width = math.ceil(ranks / min(ranks, math.ceil(n / task_rows)))
            parts = math.ceil(ranks / width)
            for i in range(parts):
                yield [r["run_id"]], i * width, RANK_MAX if i == parts - 1 else (i + 1) * width - 1
            continue
        if chunk and size + n > task_rows:
            yield chunk, 0, RANK_MAX
            chunk, size = [], 0
        chunk.append(r["run_id"])
        size += n
    if chunk:
        yield chunk, 0, RANK_MAX


def sql_task(name: str, params: dict, *, views: dict | None = None, tables: dict | None = None,
             threads: int = 1, filesystem=None) -> pa.Table:
    """Run ``sql/<name>.sql`` on a fresh single-threaded DuckDB connection and return the result (Arrow:
    cheap to ship between processes and to concatenate).

    ``tables``: ``{name: DataFrame or Arrow table}`` registered first, then ``views``: ``{view name: (sql file
    name, params)}`` defined in order (the inputs of the main file, as :func:`perflake.engine.sqlfiles.scope`
    takes them); ``filesystem``: an fsspec filesystem to register for a non-local lake.  Everything is a plain,
    picklable value, so this runs on any worker.
    """
    limit = resources.duckdb_config(share=resources.workers() or 1)  # {} unless the address space is limited
    con = duck.with_macros(duckdb.connect(config={**limit, "threads": threads, **duck.OFFLINE}))
    try:
        if filesystem is not None:
            con.register_filesystem(filesystem)
        with sqlfiles.scope(con, tables=tables, views=views) as cur:
            return sqlfiles.relation(cur, name, **params).to_arrow_table()
    finally:
        con.close()


def _local_get(name: str) -> Callable:
    """Dask's local scheduler function itself (naming it by string makes Dask import distributed first)."""
    if name == "synchronous":
        from dask.local import get_sync

        return get_sync
    if name == "processes":
        from dask.multiprocessing import get

        return get
    from dask.threaded import get

    return get


def fan_out(func: Callable, tasks: Iterable[dict], *, scheduler=None) -> list:
    """``[func(**t) for t in tasks]`` run by Dask; results in task order.

    ``scheduler``: None (Dask's local threaded scheduler; a single task runs inline), a local scheduler
    name (``"synchronous"``, ``"threads"``, ``"processes"``), the address of a running dask.distributed
    scheduler (``"tcp://host:port"``; a client is opened for the call and closed after it), or a
    ``distributed.Client``.
    """
    tasks = list(tasks)
    if not tasks:
        return []
    if scheduler is None and len(tasks) == 1:
        return [func(**tasks[0])]
    import dask

    lazy = [dask.delayed(func, pure=True)(**t) for t in tasks]
    if scheduler is None or isinstance(scheduler, str) and scheduler.lower() in LOCAL_SCHEDULERS:
        name = LOCAL_SCHEDULERS[(scheduler or "threads").lower()]
        pool = {} if name == "synchronous" or resources.workers() is None else {"num_workers": resources.workers()}
        return list(dask.compute(*lazy, scheduler=_local_get(name), **pool))  # pool: fewer under ulimit -v
    if isinstance(scheduler, str):
        if "://" not in scheduler:
            raise SchedulerName(f"scheduler {scheduler!r}: expected one of {sorted(LOCAL_SCHEDULERS)}, "
                                "an address such as 'tcp://host:8786', or a distributed.Client")
        client = connect_client(scheduler)
        with client:
            return list(dask.compute(*lazy, scheduler=client))
    return list(dask.compute(*lazy, scheduler=scheduler))


# -- a dask.distributed scheduler at an address: connected within CONNECT_SECONDS, or one line ---------------------
HANDSHAKE_GRACE = 0.5  # seconds beyond CONNECT_SECONDS a peer that accepted the connection has to answer


def connect_settings() -> dict:
    """The dask config perflake connects to a scheduler with (``dask.config.set`` around the connection): every
    connection attempt, retries included, ends after CONNECT_SECONDS."""
    return {"distributed.comm.timeouts.connect": f"{CONNECT_SECONDS:g}s"}


def _handshake(address: str) -> None:
    """Open one comm to ``address`` and complete distributed's handshake: within CONNECT_SECONDS, and
    HANDSHAKE_GRACE more for a peer that accepted the connection.

    ``distributed.Client(address, timeout=...)`` bounds the TCP connection, but not the handshake that follows:
    an address that accepts connections and never answers (a scheduler that hangs, another service, a firewall
    that swallows the traffic) kept it waiting for ever.  The probe runs in a thread of its own, with its own
    event loop, so it works under a running loop too (Jupyter)."""
    import asyncio
    import threading

    from distributed.comm import connect

    async def attempt():  # distributed's own limit ends a refused or unreachable address first, with its message
        comm = await asyncio.wait_for(connect(address, timeout=CONNECT_SECONDS), CONNECT_SECONDS + HANDSHAKE_GRACE)
        await comm.close()

    outcome: list[BaseException | None] = []

    def run():
        try:
            asyncio.run(attempt())
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=run, name="perflake-scheduler-probe", daemon=True)
    worker.start()
    worker.join(CONNECT_SECONDS + HANDSHAKE_GRACE + 1.0)  # wait_for ends the attempt; + 1 s: the loop's end
    if not outcome:
        raise TimeoutError("no answer")
    if outcome[0] is not None:
        raise outcome[0]


def connect_client(address: str):
    """A ``distributed.Client`` of the scheduler at ``address`` (the caller closes it), or a UsageError of one
    line naming the address when nothing answers within CONNECT_SECONDS: nothing listening (refused and retried
    until then) as well as a peer that accepts the connection and never speaks."""
    import dask
    from distributed import Client

    with dask.config.set(connect_settings()):
        try:
            _handshake(address)
            return Client(address, set_as_default=False, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError, ValueError) as exc:  # ValueError: a malformed address
            first = (str(exc).strip().splitlines() or ["no answer"])[0][:120]
            raise UsageError(f"scheduler {address}: cannot connect within {CONNECT_SECONDS:g} s ({first})") from None
