"""Finding runs to ingest: walk the given paths, sniff formats, refuse symlinks out of the scanned directory,
and describe each run's input files cheaply (names, sizes, mtimes: no bytes read).

A path given explicitly is taken as it is (a symlink named on the command line is followed).  Below a
scanned directory, by default:

* a symlinked directory is not followed (it is reported in ``ignored``), and
* a symlinked file (or a run whose input files go through a symlink) is taken only when its target lies
  inside the scanned directory; otherwise it is reported in ``ignored``.

``follow_symlinks=True`` follows everything (directory cycles are still walked only once).

What cannot be read is named, never skipped silently (``Scan.unreadable``): a directory that cannot be listed
or a file that cannot be opened ("permission denied"), a symlink that points to itself or round a loop
("symbolic link loop"), a symlink whose target does not exist ("dangling symbolic link").  Each comes with the
key of its metadata, so that the ingest logs it once and, like a failed input, tries it again only when that
changed (a ``chmod`` changes the ctime).  An empty file named like a profile is "empty file", not "damaged".
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field

from perflake.readers import detect, get_reader, part_of

FOLLOW_HINT = "not followed (use --follow-symlinks)"


class SymlinkEscape(Exception):
    """A run's input file reaches outside the scanned directory through a symlink (message: one line)."""


@dataclass
class Scan:
    runs: list[tuple[str, str, str]] = field(default_factory=list)  # (format, run path, scanned root)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): explicit paths with no profile
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): symlinks not followed
    unrecognised: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): look like profiles, no reader
    unreadable: list[tuple[str, str, str]] = field(default_factory=list)  # (path, reason, stat key): see above


@dataclass
class RunFiles:
    """A run's input files as the file system describes them (no bytes read)."""

    files: list[str]
    nbytes: int
    stat_key: str  # digest of (relative name, size, mtime, ctime, inode) of every file: changes when any does
    newest: float = 0.0  # the latest mtime of the files and of the run's directory (seconds since the epoch)


def _inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def scan(paths, *, follow_symlinks: bool = False) -> Scan:
    """Expand ``paths`` into runs; a directory that is not itself a run is walked (sorted, deterministic)."""
    out = Scan()
    for p in paths:
        p = os.fspath(p)
        if not os.path.exists(p):
            if os.path.islink(p):
                _unreadable(p, out)
            else:
                out.problems.append((p, f"{p}: no such file or directory"))
            continue
        if kind := detect(p):
            out.runs.append((kind, p, p))
            continue
        if not os.path.isdir(p) and _unreadable(p, out):
            continue
        before = len(out.unreadable)
        found = _walk(p, follow_symlinks, out) if os.path.isdir(p) else []
        if not found and len(out.unreadable) == before:
            hint = part_of(p)
            out.problems.append((p, f"{p}: {hint}" if hint else
                                 f"{p}: not a profile perflake can read, and no profiles found inside"))
        out.runs += found
    return out


_CALIPER_JSON_START = re.compile(rb'^(?:\xef\xbb\xbf)?\s*\{\s*"data"\s*:\s*\[\s*\[')  # Caliper writes its rows first
_TAU_FILE = re.compile(r"^profile\.\d+\.\d+\.\d+$")
# pyinstrument writes start_time first
_PYINSTRUMENT_KEY = re.compile(rb'"root_frame"\s*:|^(?:\xef\xbb\xbf)?\s*\{\s*"start_time"\s*:')
_DOT_START = re.compile(rb"^(?:\xef\xbb\xbf)?\s*(?:strict\s+)?digraph\b", re.I)
_DIRECTORY_FORMATS = {"experiment.xml": "an HPCToolkit database", "meta.db": "an HPCToolkit v4 database"}


def _looks_like_profile(path: str) -> str | None:
    """Why a file no reader accepts still looks like a profile (a walk then reports it), or None: a ``.cali``
    file, or a ``.json`` file that starts as Caliper's json-split does (rows first) or names its
    ``column_metadata`` or pyinstrument's ``root_frame``, a ``.pstats``/``.prof`` file, a ``.dot``/``.gv`` file
    that starts as a digraph (empty, truncated or damaged files)."""
    name = os.path.basename(path)
    if name.endswith(".cali"):
        return "a .cali file"
    if name.endswith((".pstats", ".prof")):
        return "a cProfile .pstats file"
    if name.endswith((".dot", ".gv")) or ".dot." in name:
        try:
            with open(path, "rb") as fh:
                head = fh.read(1 << 12)
        except OSError:
            return None
        return "a gprof2dot DOT file" if not head.strip() or _DOT_START.match(head) else None
    if name.endswith(".json"):
        try:
            with open(path, "rb") as fh:
                head = fh.read(1 << 12)
        except OSError:
            return None
        if _CALIPER_JSON_START.match(head) or (head.lstrip().startswith(b"{") and b'"column_metadata"' in head):
            return "a JSON file with Caliper's keys"
        if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and _PYINSTRUMENT_KEY.search(head):
            return "a JSON file with pyinstrument's keys"
    return None


def _looks_like_run_directory(files: list[str]) -> str | None:
    """Why a directory no reader accepts still looks like a run: TAU's profile.N.C.T files, an experiment.xml."""
    if any(_TAU_FILE.match(f) for f in files):
        return "a directory of TAU profile.N.C.T files"
    return next((what for name, what in _DIRECTORY_FORMATS.items() if name in files), None)


def _walk(root: str, follow: bool, out: Scan) -> list[tuple[str, str, str]]:
    ignored = out.ignored
    root_real = os.path.realpath(root)
    found, seen = [], set()

    def cannot_list(err: OSError) -> None:  # os.walk's onerror: a directory it could not list
        if err.filename is not None and (err.errno != errno.ENOENT or os.path.islink(err.filename)):
            _unreadable(os.fspath(err.filename), out, err)

    for top, dirs, files in os.walk(root, followlinks=follow, onerror=cannot_list):
        real = os.path.realpath(top)
        if real in seen:  # a cycle of symlinked directories
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        if not follow:
            for d in [d for d in dirs if os.path.islink(os.path.join(top, d))]:
                dirs.remove(d)
                ignored.append((os.path.join(top, d), f"{os.path.join(top, d)}: symlinked directory {FOLLOW_HINT}"))
        if top != root and (kind := detect(top)):
            found.append((kind, top, root))
            dirs[:] = []
            continue
        if looks := _looks_like_run_directory(files):
            out.unrecognised.append((top, f"{top}: {looks} that no reader accepts (empty, truncated or damaged?)"))
        for f in sorted(files):
            fp = os.path.join(top, f)
            if not follow and os.path.islink(fp) and not _inside(root_real, fp):
                ignored.append((fp, f"{fp}: symlink to outside the scanned directory {FOLLOW_HINT}"))
                continue
            if kind := detect(fp):
                found.append((kind, fp, root))
            elif _unreadable(fp, out):
                continue
            elif looks := _looks_like_profile(fp):
                if _empty(fp):
                    out.unrecognised.append((fp, f"{fp}: empty file: {looks} that no reader accepts"))
                else:
                    out.unrecognised.append((fp, f"{fp}: {looks} that no reader accepts (truncated or damaged?)"))
    return found


def _empty(path: str) -> bool:
    try:
        return os.path.getsize(path) == 0
    except OSError:
        return False


def entry_key(path: str) -> str:
    """The metadata key of one entry (its own, for a symlink): changes when it is replaced or re-moded."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    return hashlib.sha256(f"{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}".encode()
                          ).hexdigest()


def _unreadable(path: str, out: Scan, err: OSError | None = None) -> bool:
    """When ``path`` cannot be read (``err``: the error listing it, or found by opening it): note why in
    ``out.unreadable`` and say True."""
    if err is None:
        try:
            st = os.stat(path)
            if stat.S_ISDIR(st.st_mode):
                os.scandir(path).close()
            elif stat.S_ISREG(st.st_mode):
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            return False
        except OSError as exc:
            err = exc
    if err.errno == errno.ELOOP:
        what = "symbolic link loop"
    elif err.errno == errno.ENOENT and os.path.islink(path):
        what = f"dangling symbolic link (to {os.readlink(path)}, which does not exist)"
    elif err.errno in (errno.EACCES, errno.EPERM):
        what = "permission denied" + (" (cannot list the directory)" if os.path.isdir(path) else "")
    else:
        what = f"cannot be read: {err.strerror or err}"
    out.unreadable.append((path, f"{path}: {what}", entry_key(path)))
    return True


def describe(kind: str, path: str, root: str, *, follow_symlinks: bool = False) -> RunFiles:
    """The input files of the run at ``path`` with a key of their metadata.  Raises, when a
    file escapes the scanned directory ``root`` through a symlink (unless ``follow_symlinks``): SymlinkEscape;
    a file that cannot be stat'ed: OSError."""
    files = sorted(get_reader(kind).files(path))
    base = path if os.path.isdir(path) else os.path.dirname(path)
    check = not follow_symlinks and os.path.isdir(root)
    root_real = os.path.realpath(root) if check else ""
    h = hashlib.sha256()
    total = 0
    newest = os.stat(path).st_mtime if os.path.isdir(path) else 0.0  # a file added or removed changes it
    for f in files:
        if check and _through_link(f, base) and not _inside(root_real, f):
            raise SymlinkEscape(f"{f}: symlink to outside the scanned directory {FOLLOW_HINT}")
        st = os.stat(f)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{f}: not a regular file")
        rel = os.path.relpath(f, base)
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n".encode())
        total += st.st_size
        newest = max(newest, st.st_mtime)
    return RunFiles(files, total, h.hexdigest(), newest)


def _through_link(f: str, base: str) -> bool:
    """Whether ``f`` or a directory between ``base`` and it is a symlink (cheap: lstat per component)."""
    if os.path.islink(f):
        return True
    d = os.path.dirname(f)
    while len(d) > len(base) and d.startswith(base):
        if os.path.islink(d):
            return True
        d = os.path.dirname(d)
    return False
