"""What one ingest did: the report object, its one-line summary and its machine-readable form."""

from __future__ import annotations

from dataclasses import dataclass, field

from perflake._version import __version__
from perflake.ingest.log import Outcome


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
        return text

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
            "log_file": self.log_file,
        }
