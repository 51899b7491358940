"""Fitting perflake into a bounded address space (``ulimit -v``: RLIMIT_AS, a common batch-system limit).

Left alone, the libraries perflake loads reserve address space far beyond what they use, sized by the number
of cores rather than by the work (measured on 2 cores: 2.8 GB of address space for ingesting one 3.6 KB file,
of which 0.2 GB resident):

- glibc's malloc gives every thread that allocates an arena of its own, up to 8 per core, each reserving
  64 MiB (DuckDB's, Arrow's and delta-rs's threads all allocate);
- pyarrow's mimalloc reserves a 1 GiB arena at its first allocation, also when another pool is the default
  (Arrow's C data interface, which delta-rs uses, allocates with mimalloc);
- pyarrow's and delta-rs's jemallocs start background threads, delta-rs's tokio runtime one worker per core;
- DuckDB, Arrow's CPU pool and Dask's thread pool start one thread per core, Arrow's I/O pool and the async
  (I/O) pool of every DuckDB database eight, each with a stack of ``ulimit -s`` (8 MiB): on a 128-core node
  that alone is several GB;
- DuckDB's default memory limit is 80 % of the RAM, so it fills the address space before it spills.

Under a finite limit one reservation that does not fit aborts the process from Rust ("memory allocation of
26 bytes failed", exit 134, after jemalloc's "background thread creation failed" lines), or leaves Arrow
waiting for a pool thread that could not be created (a hang without CPU use).

:func:`configure` reads RLIMIT_AS once per process (the CLI calls it first; :mod:`perflake.engine.duck` and
the Delta store call it before their libraries start).  Unlimited: it does nothing, no behaviour changes.
Bounded: below :data:`MIN_ADDRESS_SPACE_KIB` it raises :class:`perflake.errors.AddressSpaceTooSmall` (the
CLI prints that one line and exits 2); otherwise it

- caps glibc's arenas at 2 (``mallopt(M_ARENA_MAX)`` here, ``MALLOC_ARENA_MAX`` for child processes);
- makes Arrow allocate with the system allocator (``ARROW_DEFAULT_MEMORY_POOL=system``, and
  ``pyarrow.set_memory_pool`` when pyarrow is already loaded), mimalloc reserve 64 MiB at a time
  (``MIMALLOC_ARENA_RESERVE``), and turns the jemallocs' background threads off (``JE_ARROW_MALLOC_CONF``,
  ``_RJEM_MALLOC_CONF``);
- sizes every thread pool to :func:`limits` ``.threads`` (a quarter of the spare address space in thread
  stacks, at most one thread per core): DuckDB's workers and async threads, Arrow's CPU and I/O pools
  (``OMP_NUM_THREADS``, ``ARROW_IO_THREADS``), tokio's workers (``TOKIO_WORKER_THREADS``), OpenBLAS
  (``OPENBLAS_NUM_THREADS``) and Dask's local pools (:mod:`perflake.engine.parallel`);
- gives DuckDB a memory limit of 40 % of the spare address space, shared by the databases that run at once
  (:func:`duckdb_config`), so that it spills to disk instead of failing.

An environment variable the user set is never overridden; ``PERFLAKE_THREADS`` and ``PERFLAKE_DUCKDB_MEMORY``
(a DuckDB size such as ``500MB``) replace the computed values.  Variables take effect on libraries not yet
started: call :func:`configure` (or run the CLI) before the first use of delta-rs or Arrow's default pool.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import threading
from dataclasses import dataclass

KIB, MIB = 1024, 1024 * 1024
# Measured with these settings on 2 cores (VmPeak): `perflake ingest` of a 3.6 KB file 830 MiB, `runs` and
# `sql` 660 MiB, `tree` 590 MiB; small inputs ingest under `ulimit -v 700000` (not 650000), the 5 MB
# HPCToolkit database of the shared data needs 1000000 (aborts at 900000): the minimum perflake accepts.
FOOTPRINT = 700 * MIB  # what the libraries take before the thread pools and DuckDB's buffers
MIN_ADDRESS_SPACE_KIB = 1_000_000
THREAD_SHARE = 0.25  # of the spare address space (limit - FOOTPRINT) for thread stacks
DUCKDB_SHARE = 0.40  # of the spare address space for DuckDB's buffer manager
THREAD_POOLS = 5  # pools sized by `threads`: DuckDB, Arrow CPU, Arrow I/O, tokio, Dask's local workers
DEFAULT_STACK = 8 * MIB  # glibc's thread stack when `ulimit -s` is unlimited is larger; 8 MiB is the usual limit
MIN_DUCKDB_MEMORY = 64 * MIB
ARENAS = 2  # glibc malloc arenas under a limit (each reserves 64 MiB)
MIMALLOC_ARENA = "64MiB"  # mimalloc's reservation (default 1 GiB): Arrow's C data interface still uses it
JEMALLOC_CONF = f"background_thread:false,narenas:{ARENAS}"  # pyarrow's and delta-rs's jemalloc
_M_ARENA_MAX = -8  # glibc's mallopt parameter number


@dataclass(frozen=True)
class Limits:
    """What perflake uses under the address-space limit of this process; all None when it is unlimited."""

    address_space: int | None = None  # bytes (soft RLIMIT_AS)
    threads: int | None = None  # threads of each pool; None: the libraries' defaults (one per core)
    duckdb_memory: int | None = None  # bytes for DuckDB's buffer managers together; None: DuckDB's default

    @property
    def bounded(self) -> bool:
        return self.address_space is not None


_LOCK = threading.Lock()
_DONE: dict[int, Limits] = {}  # pid -> this process's limits (a forked child decides again)


def address_space_limit() -> int | None:
    """The soft RLIMIT_AS of this process in bytes, or None when it is unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def thread_stack() -> int:
    """The stack a new thread gets by default (glibc: the soft ``ulimit -s``)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_STACK)
    return DEFAULT_STACK if soft == resource.RLIM_INFINITY or soft <= 0 else soft


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def plan(limit: int | None, *, cpus: int, stack: int) -> Limits:
    """The limits for an address space of ``limit`` bytes (None: unlimited), ``cpus`` cores and thread stacks
    of ``stack`` bytes, before the environment's overrides."""
    if limit is None:
        return Limits()
    spare = max(0, limit - FOOTPRINT)
    threads = int(min(cpus, max(1, spare * THREAD_SHARE // (THREAD_POOLS * stack))))
    return Limits(limit, threads, int(max(MIN_DUCKDB_MEMORY, spare * DUCKDB_SHARE)))


def configure(*, check: bool = True) -> Limits:
    """Read this process's address-space limit and, when it is finite, set the libraries up to fit (see the
    module's docstring); the setup runs once per process, later calls return the same :class:`Limits`.
    ``check``: raise :class:`perflake.errors.AddressSpaceTooSmall` when the limit is below
    :data:`MIN_ADDRESS_SPACE_KIB` (without: only the setup, e.g. at import time, before pyarrow loads)."""
    pid = os.getpid()
    got = _DONE.get(pid)
    if got is None:
        with _LOCK:
            got = _DONE.get(pid)
            if got is None:
                got = _setup()
                _DONE.clear()
                _DONE[pid] = got
    if check and got.bounded and got.address_space < MIN_ADDRESS_SPACE_KIB * KIB:
        from perflake.errors import AddressSpaceTooSmall

        raise AddressSpaceTooSmall(got.address_space // KIB, MIN_ADDRESS_SPACE_KIB)
    return got


def limits() -> Limits:
    """This process's :class:`Limits` (:func:`configure` on first use)."""
    return configure()


def _setup() -> Limits:
    limit = address_space_limit()
    if limit is None:
        return Limits()
    got = plan(limit, cpus=cores(), stack=thread_stack())
    got = Limits(limit, _env_int("PERFLAKE_THREADS") or got.threads,
                 _env_size("PERFLAKE_DUCKDB_MEMORY") or got.duckdb_memory)
    n = str(got.threads)
    user = {k for k in ("MALLOC_ARENA_MAX", "ARROW_DEFAULT_MEMORY_POOL", "OMP_NUM_THREADS", "ARROW_IO_THREADS")
            if k in os.environ}
    for key, value in (("MALLOC_ARENA_MAX", str(ARENAS)), ("ARROW_DEFAULT_MEMORY_POOL", "system"),
                       ("MIMALLOC_ARENA_RESERVE", MIMALLOC_ARENA),
                       ("JE_ARROW_MALLOC_CONF", JEMALLOC_CONF), ("_RJEM_MALLOC_CONF", JEMALLOC_CONF),
                       ("TOKIO_WORKER_THREADS", n),
                       ("OMP_NUM_THREADS", n), ("ARROW_IO_THREADS", n), ("OPENBLAS_NUM_THREADS", n)):
        os.environ.setdefault(key, value)  # child processes, and libraries this process has not started yet
    if "MALLOC_ARENA_MAX" not in user:  # set by the user: glibc took it when the process started
        _cap_arenas(ARENAS)
    if "pyarrow" in sys.modules:  # already loaded: its pools exist; resize them
        _arrow(got.threads, user)
    return got


def _cap_arenas(n: int) -> None:
    """``mallopt(M_ARENA_MAX, n)``: glibc reads MALLOC_ARENA_MAX only when a process starts."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_ARENA_MAX, n)
    except (OSError, AttributeError):  # not glibc: no per-thread arenas to cap
        pass


def _arrow(threads: int, user: set[str]) -> None:
    import pyarrow as pa

    if "ARROW_DEFAULT_MEMORY_POOL" not in user:
        pa.set_memory_pool(pa.system_memory_pool())
    if "OMP_NUM_THREADS" not in user:
        pa.set_cpu_count(threads)
    if "ARROW_IO_THREADS" not in user:
        pa.set_io_thread_count(threads)


def duckdb_config(share: int = 1) -> dict:
    """Settings for a new DuckDB database under the limit: ``threads`` and ``async_threads`` (I/O threads,
    8 by default whatever ``threads`` is), and a ``memory_limit`` of 1/``share`` of DuckDB's part (``share``: how
    many databases run at once); ``{}`` when unlimited."""
    got = configure()
    if not got.bounded:
        return {}
    memory = max(MIN_DUCKDB_MEMORY, got.duckdb_memory // max(1, share))
    return {"threads": got.threads, "async_threads": got.threads, "memory_limit": f"{memory // MIB}MiB"}


def workers(default: int | None = None) -> int | None:
    """Threads or processes for a local Dask pool: ``default`` when unlimited, else at most
    :func:`limits` ``.threads``."""
    got = configure()
    if not got.bounded:
        return default
    return got.threads if default is None else min(default, got.threads)


def _env_int(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        from perflake.errors import UsageError

        raise UsageError(f"{name}={text!r}: expected a whole number of threads >= 1")
    return int(text)


_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "KIB": KIB, "MIB": MIB, "GIB": 1024**3}


def _env_size(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    number = text.rstrip("KMGiBbkmgI ")
    unit = text[len(number):].strip().upper()
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        value = 0
    if value < MIN_DUCKDB_MEMORY:
        from perflake.errors import UsageError

        raise UsageError(f"{name}={text!r}: expected a size of at least 64MiB, such as 500MB or 1GiB")
    return int(value)
