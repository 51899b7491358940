"""Reading a lake as it was (``Lake(root, as_of=...)``): every table as of one moment, or one clear error.

``as_of`` names a version of the runs table (an int) or a time (a datetime).  The runs version fixes the
moment: the commit time of that version (its commit file's modification time: the storage's clock).  Each
data table is then read at its newest version committed at or before that moment -- an ingest commits a batch's
data rows before its runs rows, so that version holds every row the pinned runs name, and nothing another tool
wrote to the data tables later (a delete, a compaction) changes the answer.  A time before the lake's first
commit, a version no longer in the log, or a version whose files a vacuum has removed is refused in one line:
never an empty or partial answer.
"""

from __future__ import annotations

import datetime as dt

from perflake.catalogs.schema import RUNS
from perflake.errors import LakeError


def runs_at(cat, as_of) -> tuple[int, list[str]]:
    """(the runs version ``as_of`` names, its live files), after checking they are all still there."""
    if isinstance(as_of, bool) or not isinstance(as_of, (int, dt.datetime)):
        raise LakeError(f"{cat.url}: as_of must be a version number of the runs table or a datetime, "
                        f"not {as_of!r}")
    if isinstance(as_of, dt.datetime):
        when = as_of if as_of.tzinfo else as_of.replace(tzinfo=dt.timezone.utc)
        first = _first_commit(cat, RUNS)
        if first is None or _to_ms(when) < first[1]:
            start = "" if first is None else f" (its first kept commit is at {_from_ms(first[1]).isoformat()})"
            raise LakeError(f"{cat.url}: the lake has no version at {when.isoformat()}{start}")
        version = _newest_at(cat, RUNS, _to_ms(when))
    else:
        version = as_of
    if version < 0:
        raise LakeError(f"{cat.url}: as_of={as_of!r}: versions of the runs table start at 0")
    found, live = cat.tables.live(RUNS, version)
    files = live.column("path").to_pylist()
    _check_present(cat, RUNS, found, files, as_of)
    return found, files


def version_at(cat, table: str) -> int:
    """The version of ``table`` current when the pinned runs version was committed (files checked present)."""
    moment = _moment(cat, RUNS, cat._runs_version)
    version = _newest_at(cat, table, moment)
    _found, live = cat.tables.live(table, version)
    _check_present(cat, table, version, live.column("path").to_pylist(), cat.as_of)
    return version


def _log(cat, table: str) -> str:
    return f"{cat.root}/{table}/_delta_log"


def _fresh(cat, path: str) -> None:
    """Forget what fsspec cached of a folder (s3fs keeps listings: a commit since would be missing)."""
    invalidate = getattr(cat.fs, "invalidate_cache", None)
    if invalidate is not None:
        invalidate(path)


def _versions(cat, table: str) -> list[tuple[int, int]]:
    """(version, commit time in ms) of the commits kept in the table's log, oldest first.  The commit time is
    the commit file's modification time: the storage's one clock, as Delta defines a commit's time (a writer's
    ``commitInfo.timestamp`` comes from its own clock, which may be behind another writer's)."""
    _fresh(cat, _log(cat, table))
    out = []
    for info in cat.fs.ls(_log(cat, table), detail=True):
        base = info["name"].rstrip("/").rsplit("/", 1)[-1]
        if base.endswith(".json") and len(base) == 25 and base[:20].isdigit():
            out.append((int(base[:20]), _mtime_ms(info)))
    return sorted(out)


def _mtime_ms(info: dict) -> int:
    when = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    if isinstance(when, dt.datetime):
        return int(when.timestamp() * 1000)
    return int(float(when) * 1000) if when is not None else 0


def _first_commit(cat, table: str) -> tuple[int, int] | None:
    versions = _versions(cat, table)
    return versions[0] if versions else None


def _times(cat, table: str, until: int | None = None):
    """(version, commit time) of the kept commits in order, the times made to grow with the versions as Delta's
    time travel does (a commit stamped before its predecessor -- a writer's clock behind -- counts as 1 ms after
    it); stops after ``until`` (a version)."""
    last = None
    for v, stamp in _versions(cat, table):
        last = stamp if last is None else max(stamp, last + 1)
        yield v, last
        if until is not None and v >= until:
            return


def _moment(cat, table: str, version: int) -> int:
    """The (monotonic) commit time of ``version``."""
    for v, stamp in _times(cat, table, until=version):
        if v == version:
            return stamp
    raise LakeError(f"{cat.url}: version {version} of the {table} table is no longer in its log")


def _newest_at(cat, table: str, moment: int) -> int:
    """The newest version of ``table`` committed at or before ``moment`` (every kept commit read in order)."""
    found = None
    for v, stamp in _times(cat, table):
        if stamp > moment:
            break
        found = v
    if found is None:
        raise LakeError(f"{cat.url}: the {table} table has no version at {_from_ms(moment).isoformat()} "
                        "that is still in its log")
    return found


def _check_present(cat, table: str, version: int, files: list[str], as_of) -> None:
    if not files:
        return
    folder = f"{cat.root}/{table}"
    _fresh(cat, folder)
    try:
        here = {n.rstrip("/").rsplit("/", 1)[-1] for n in cat.fs.ls(folder, detail=False)}
    except (FileNotFoundError, OSError):
        here = set()
    gone = [f for f in files if f.rsplit("/", 1)[-1] not in here and not cat.fs.exists(cat.duck_path(f))]
    if gone:
        raise LakeError(f"{cat.url}: as_of={as_of!r} needs version {version} of the {table} table, but "
                        f"{len(gone)} of its {len(files)} files are gone (removed by a vacuum): that version "
                        "can no longer be read")


def _to_ms(when: dt.datetime) -> int:
    return int(when.timestamp() * 1000)


def _from_ms(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
