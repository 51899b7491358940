"""Profiles into the lake: scan, hash, read, normalise, write and commit, with a log of each attempt.

driver plans and runs an ingest (scan -> tasks -> commit), scan finds the runs, task is one unit of
work, log and report record what happened.  normalize (with rekey) turns any reader's ProfileRows into
the call-path tables: ingest writes them to the lake, perflake.read and the frame operations build
frames from them.
"""
