"""What one ingest did: the report object, its one-line summary and its machine-readable form.

Problems are told without flooding: :meth:`IngestReport.problem_lines` gives the first ``PROBLEM_LINES`` of
them, then one line counting the rest by kind (:func:`problem_kind`: "empty file", "permission denied", ...);
``--json`` lists every one, with the counts by kind.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from perflake._version import __version__
from perflake.ingest.log import Outcome

PROBLEM_LINES = 10  # problems printed one per line; the rest are counted by kind

# (kind, words of the reason that tell it), the first match wins; the words are those perflake writes
_KINDS = (("disk full", ("disk full",)), ("out of memory", ("out of memory",)),
          ("permission denied", ("permission denied",)), ("symbolic link loop", ("symbolic link loop",)),
          ("dangling symbolic link", ("dangling symbolic link",)), ("empty file", ("empty file",)),
          ("no such file or directory", ("no such file or directory",)),
          ("truncated or damaged", ("truncated", "damaged", "not valid")),
          ("no reader accepts it", ("no reader accepts", "not a profile")))


def problem_kind(path: str, reason: str) -> str:
    """The kind of a problem, from its one-line reason (the path it starts with left out)."""
    text = (reason[len(path) + 2:] if reason.startswith(f"{path}: ") else reason).lower()
    return next((kind for kind, words in _KINDS if any(w in text for w in words)), "other")


@dataclass
class IngestReport:
    """What one :func:`perflake.ingest.driver.ingest` call did; ``summary()`` is the line the CLI prints."""

    ingested: list[str] = field(default_factory=list)  # run ids
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (source, run id already present)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (source, one-line reason)
    skipped_failed: list[tuple[str, str]] = field(default_factory=list)  # (source, reason it failed before)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (path, why not followed): symlinks
    settling: list[tuple[str, float]] = field(default_factory=list)  # (source, age s): younger than min_age
    unrecognised: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): in a walk, like a profile
    unchanged: int = 0  # of ``skipped``: not hashed again (same files, sizes, mtimes as when last logged)
    outcomes: list[Outcome] = field(default_factory=list)  # every attempt, as logged
    invocation: str = ""
    log_file: str | None = None
    log_error: str | None = None  # why the ingest log could not be written (the attempts are then not remembered)
    notes: list[str] = field(default_factory=list)  # housekeeping not done (compaction on a full disk)
    duration_s: float = 0.0

    def summary(self) -> str:
        text = (f"ingested {len(self.ingested)} runs, skipped {len(self.skipped)} already present, "
                f"{len(self.failed)} failed")
        if self.skipped_failed:
            text += f", {len(self.skipped_failed)} skipped: failed before and unchanged (--retry-failed)"
        if self.ignored:
            text += f", {len(self.ignored)} symlinks not followed"
        if self.settling:
            text += f", {len(self.settling)} left for later: modified within --min-age"
        if self.unrecognised:
            text += f", {len(self.unrecognised)} inputs look like profiles but no reader accepts them"
        if self.log_error:
            text += f"; ingest log not written ({self.log_error}): these attempts are not remembered"
        return text

    def problem_lines(self, limit: int = PROBLEM_LINES, *, leave_out=()) -> list[str]:
        """The failures then the warnings, one line each for the first ``limit``, then one line counting the
        rest by kind ("... and 1,990 more: 1,990 empty file").  ``leave_out``: sources told otherwise."""
        items = [(p, r) for p, r in self.failed if p not in leave_out]
        items += [(p, f"warning: {r}") for p, r in self.unrecognised]
        lines = [r for _, r in items[:limit]]
        rest = items[limit:]
        if rest:
            counts = Counter(problem_kind(p, r.removeprefix("warning: ")) for p, r in rest)
            lines.append(f"... and {len(rest):,} more: " + ", ".join(f"{n:,} {k}" for k, n in counts.most_common())
                         + " (--json lists them all)")
        return lines

    def problem_kinds(self) -> dict[str, int]:
        """Failures and warnings counted by kind (``--json``)."""
        return dict(Counter(problem_kind(p, r) for p, r in [*self.failed, *self.unrecognised]).most_common())

    @property
    def ok(self) -> bool:
        return not self.failed

    def as_dict(self, *, lake: str, exit_code: int) -> dict:
        """The ``perflake ingest --json`` summary (see README "Scheduled ingestion")."""
        by_status: dict[str, list[Outcome]] = {}
        for o in self.outcomes:
            by_status.setdefault(o.status, []).append(o)
        return {
            "lake": lake,
            "perflake_version": __version__,
            "invocation": self.invocation,
            "exit_code": exit_code,
            "duration_s": round(self.duration_s, 3),
            "counts": {"ingested": len(self.ingested), "skipped": len(self.skipped), "unchanged": self.unchanged,
                       "skipped_failed_before": len(self.skipped_failed), "failed": len(self.failed),
                       "ignored": len(self.ignored), "settling": len(self.settling),
                       "unrecognised": len(self.unrecognised)},
            "ingested": list(self.ingested),  # run ids
            "ingested_files": [{"path": o.source, "run_id": o.run_id, "duration_s": round(o.duration_s, 3)}
                               for o in by_status.get("ingested", [])],
            "skipped": [{"path": p, "run_id": r, "reason": f"already present as run {r}"} for p, r in self.skipped],
            "skipped_failed_before": [{"path": p, "reason": r} for p, r in self.skipped_failed],
            "failed": [{"path": p, "reason": r} for p, r in self.failed],
            "ignored": [{"path": p, "reason": r} for p, r in self.ignored],
            "settling": [{"path": p, "reason": f"modified {age:.0f} s ago, within --min-age"}
                         for p, age in self.settling],
            "unrecognised": [{"path": p, "reason": r} for p, r in self.unrecognised],
            "problem_kinds": self.problem_kinds(),
            "log_file": self.log_file,
            "log_error": self.log_error,
            "notes": list(self.notes),
        }
