"""Metadata keys a question names (``meta:KEY`` in a group_by, a scaling key, an order key) that no selected run
has: almost always a typo.

The tabular API (``Lake.ensemble``, ``Lake.scaling_table``, ``Lake.model``, ``Lake.changes``) warns by default
and still answers (every run in the group where the key is missing); ``unknown_keys="error"`` -- what the
``perflake`` commands pass -- makes it a :class:`~perflake.errors.UsageError` naming the closest keys the selected
runs do have, as the Ensemble object's ``groupby`` raises.
"""

from __future__ import annotations

import difflib
import json
import warnings

from perflake.errors import MetadataKeyWarning, UsageError

UNKNOWN_KEYS = ("warn", "error")


def check_mode(unknown_keys: str) -> str:
    if unknown_keys not in UNKNOWN_KEYS:
        raise UsageError(f"unknown_keys must be 'warn' or 'error', not {unknown_keys!r}")
    return unknown_keys


def suggest(key, known) -> str:
    """`` (did you mean 'a', 'b'?)`` naming up to three close keys, or nothing."""
    close = difflib.get_close_matches(str(key), [str(k) for k in known], n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def selected_keys(lake, run_ids) -> set[str]:
    """Every metadata key at least one of the runs ``run_ids`` has (read from the catalog's metadata JSON)."""
    table = lake.catalog().runs(columns=["run_id", "metadata"]).to_pydict()
    chosen = set(run_ids)
    keys: set[str] = set()
    for run, meta in zip(table["run_id"], table["metadata"]):
        if run in chosen and meta:
            keys.update(json.loads(meta))
    return keys


def unknown_key_message(lake, run_ids, key: str) -> str:
    """``no selected run has metadata key 'KEY' (did you mean ...?)``; ``key`` without its ``meta:`` prefix."""
    return f"no selected run has metadata key {key!r}{suggest(key, selected_keys(lake, run_ids))}"


def report_unknown(lake, run_ids, key: str, consequence: str, unknown_keys: str = "warn", *, stacklevel: int = 3):
    """A key no selected run has: a UsageError (``unknown_keys="error"``) or a MetadataKeyWarning that also
    says what follows from it (``consequence``)."""
    message = unknown_key_message(lake, run_ids, key)
    if check_mode(unknown_keys) == "error":
        raise UsageError(message)
    warnings.warn(f"{message}: {consequence}", MetadataKeyWarning, stacklevel=stacklevel + 1)
