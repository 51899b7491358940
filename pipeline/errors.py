"""Every error perflake raises on purpose lives here.

A user error (bad input, unknown run, malformed query) is a :class:`PerflakeError`; its message is one line
that names the file or object and says what is wrong.  The CLI prints that line and exits non-zero; only
``--debug`` shows a traceback.  Anything else escaping is a bug in perflake.
"""

from __future__ import annotations

import errno
import os


class PerflakeError(Exception):
    """Base class of all user-facing perflake errors (one-line message)."""


class ReaderError(PerflakeError):
    """A profile could not be read: ``<path>: <what is wrong>``."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class FormatNotRecognized(ReaderError):
    """No reader recognises the input."""


class LakeError(PerflakeError):
    """The lake is missing, unreadable, of another schema version, or the request names something absent."""


class LockTimeout(LakeError):
    """The lake's commit lock was not obtained in time (another ingest holds it)."""


class StorageError(LakeError):
    """The lake's storage cannot be opened: its filesystem package is not installed (``perflake[s3]``), or the
    object store refuses or cannot be reached (no credentials, wrong ones, no such bucket, no network):
    ``<lake url>: <what is wrong>``."""

    def __init__(self, url: str, problem: str):
        self.url = url
        self.problem = problem
        super().__init__(f"{url}: {problem}")


class UnknownRun(LakeError):
    def __init__(self, run_id: str):
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} in the lake (list them with: perflake runs)")


class MultiplePathError(PerflakeError):
    """``node.path()`` of a node reachable by several paths (a DAG): use ``node.paths()`` (Hatchet's name)."""


class GraphFrameArgumentError(PerflakeError, ValueError):
    """``GraphFrame(graph, dataframe)`` got no graph, no dataframe, or a dataframe without a ``node`` index level
    (a ValueError, as Hatchet raises)."""


class QueryError(PerflakeError):
    """A malformed call-path query; the message points at the offending element or token."""

    def __init__(self, message: str, *, query: str | None = None, position: int | None = None):
        self.query, self.position = query, position
        if query is not None and position is not None:
            message = f"{message}\n  {query}\n  {' ' * position}^"
        super().__init__(message)


# Hatchet's query exception names (hatchet.query.errors): each is a QueryError, so `except QueryError` still works
class InvalidQueryPath(QueryError):
    """The path of a query is malformed: a bad quantifier, an element of the wrong kind, no first element."""


class InvalidQueryFilter(QueryError):
    """A predicate of a query is malformed: a bad value, comparison or attribute name."""


class BadNumberNaryQueryArgs(InvalidQueryPath):
    """A compound query got the wrong number of sub-queries."""


class MultiIndexModeMismatch(QueryError):
    """A dialect query with ``multi_index_mode="off"`` met a frame with several rows per node (rank/thread)."""


class InvalidMultiIndexMode(QueryError, AssertionError):
    """``multi_index_mode`` is not "off", "any" or "all" (an AssertionError as Hatchet's ``assert``)."""


class UsageError(PerflakeError):
    """An option value perflake cannot use (an unknown statistic, a bad choice); says what is accepted."""


class SchedulerName(UsageError, ValueError):
    """A ``scheduler`` that is neither a local scheduler's name, an address nor a distributed.Client."""


# Hatchet's filter exception names (hatchet.graphframe; exported there by perflake.frame.graphframe too)
class InvalidFilter(UsageError, TypeError):
    """``GraphFrame.filter`` got something that is neither a callable, a query list, a query string nor a query
    object."""


class EmptyFilter(PerflakeError):
    """``GraphFrame.filter`` would leave no row (Hatchet raises rather than return an empty GraphFrame)."""


class PlotError(PerflakeError):
    """A plot cannot be made or written: nothing to plot, an unknown column, an unsupported file type."""


class RenderError(PerflakeError):
    """A view of a GraphFrame (flame graph, folded stacks, DOT, flat profile, hot path) cannot be made: an
    unknown metric or column, a rank or thread that is not in the frame, or an unsupported output type."""


class InteropError(PerflakeError):
    """A conversion to or from another tool cannot be made: llnl-hatchet is not installed, an input is not in
    Hatchet's JSON format or layout, or an export cannot be written."""


class AddressSpaceTooSmall(PerflakeError):
    """The address-space limit of the process (``ulimit -v``: RLIMIT_AS) is below what perflake needs to run at
    all (perflake.engine.resources); the CLI prints the one line and exits 2 before any library starts."""

    def __init__(self, limit_kib: int, need_kib: int):
        self.limit_kib, self.need_kib = limit_kib, need_kib
        super().__init__(f"the address-space limit (ulimit -v {limit_kib} KiB) is below the {need_kib} KiB "
                         f"perflake needs; raise it (ulimit -v {need_kib} or more, or ulimit -v unlimited)")


class MetadataKeyWarning(UserWarning):
    """A metadata key some runs lack (their group or filter sees a missing value): named, never silent."""


class IngestStopped(LakeError):
    """An ingest stopped part-way for a failure writing the lake that every further batch would meet too (out of
    memory, the lake's filesystem refusing writes): ``<lake url>: <what>``.  The runs committed before stay; the
    batch being written is not visible.  ``report``: the :class:`perflake.ingest.report.IngestReport` of what the
    ingest did (its inputs that failed, and whether the ingest log could be written)."""

    def __init__(self, message: str, report=None):
        self.report = report
        super().__init__(message)


class LakeFull(IngestStopped, OSError):
    """The lake's filesystem is full (or its owner's disk quota used up) while an ingest writes it (an OSError
    with ``errno`` ENOSPC as well, for callers that catch the disk's own error)."""

    def __init__(self, message: str, report=None):
        super().__init__(message, report)
        self.errno = errno.ENOSPC
