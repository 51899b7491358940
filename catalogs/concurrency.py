"""What lets several threads and processes work on one lake: an exclusive file lock with a timeout, and a call
run in a thread of its own whose error reaches whoever waits for it."""

from __future__ import annotations

import contextlib
import threading
import time

from perflake.errors import LockTimeout


@contextlib.contextmanager
def file_lock(path: str, timeout: float | None, holder: str):
    """An exclusive ``flock`` on ``path`` (created if absent); ``timeout``: seconds to wait, then LockTimeout
    saying ``holder`` held it longer (None: wait forever)."""
    import fcntl

    with open(path, "a+b") as fh:
        if timeout is None:
            fcntl.flock(fh, fcntl.LOCK_EX)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(f"{holder} for more than {timeout:g} s ({path})") from None
                    time.sleep(0.02)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class Background:
    """A call run in a thread of its own; :meth:`wait` joins it and raises what it raised (each time)."""

    def __init__(self, fn, *args):
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, *args), name="perflake-create-lake")
        self._thread.start()

    def _run(self, fn, *args) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # handed to the waiter
            self._error = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error.with_traceback(None)
