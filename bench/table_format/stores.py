"""Open a store by name: ``delta``, ``delta-default`` (delta-rs' own Parquet settings), ``iceberg``; and the
baseline ``parquet`` (today's perflake layout: one Parquet file per table per batch + the runs file renamed
into place under the commit lock, perflake.catalogs.catalog)."""

from __future__ import annotations

import pyarrow as pa


def open_store(kind: str, root: str, s3: dict | None = None):
    if kind in ("delta", "delta-default"):
        from delta_store import DeltaStore

        return DeltaStore(root, storage_options=s3, tuned=kind == "delta")
    if kind == "iceberg":
        from iceberg_store import IcebergStore

        if s3:
            io = {"s3.endpoint": s3["AWS_ENDPOINT_URL"], "s3.access-key-id": s3["AWS_ACCESS_KEY_ID"],
                  "s3.secret-access-key": s3["AWS_SECRET_ACCESS_KEY"], "s3.region": s3.get("AWS_REGION", "us-east-1")}
            return IcebergStore(s3["catalog_dir"], warehouse=root, io_props=io)
        return IcebergStore(root)
    raise ValueError(kind)


class Baseline:
    """Commits the way perflake does them today (perflake.ingest.driver._Committer, without its ingest log):
    the batch's data files, then under the commit lock the committed hashes are refreshed (only batches not
    seen before are read) and the runs file is renamed into place."""

    name = "parquet"

    def __init__(self, root: str):
        from perflake.catalogs.catalog import Catalog

        self.cat = Catalog(root, create=True)
        self.seen: set[str] = set()
        self.present: set[str] = set()

    def commit(self, runs) -> None:
        import datetime as dt

        import lakeschema

        from perflake.catalogs.catalog import new_batch_id

        cat, batch = self.cat, new_batch_id()
        for name in ("nodes", "edges", "metrics"):
            cat.write_table(name, batch, pa.concat_tables([r.tables[name] for r in runs], promote_options="default"))
        with cat.commit_lock():
            new = [b for b in cat.batches() if b not in self.seen]
            if new:
                self.present |= set(cat.runs(new, ["content_sha256"]).column("content_sha256").to_pylist())
                self.seen |= set(new)
            keep = [r for r in runs if r.sha not in self.present]
            rows = [{**r.row, "batch": batch, "ingested_at": dt.datetime.now(dt.timezone.utc)} for r in keep]
            cat.commit(batch, lakeschema.runs_table(rows))
            self.present |= {r.sha for r in keep}
            self.seen.add(batch)
