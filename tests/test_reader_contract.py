"""The reader contract, for every registered reader on every real dataset it reads (fsspec-style abstract
suite): schema, every parent exists and precedes its child, no cycles, stable ids, float metrics, and a
complete catalog row after ingest."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from perflake.catalogs.schema import SCHEMA_VERSION
from perflake.ingest.normalize import normalize
from perflake.readers import REGISTRY, detect, get_reader
from perflake.readers.base import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER

# format -> datasets under ../shared/data (a dataset may name a file inside its folder); "generated:NAME" is
# made at test time by the real profiler (tests/pyprofiles.py, as tests/fuzz.py's source())
DATASETS = {
    "caliper": ["caliper-example-cali/example-profile.cali", "caliper-lulesh-cali/lulesh-annotation-profile.cali",
                "caliper-ordered-cali-mpi/230525-151723_1930647_FSY8b8cKSEEi.cali",
                "caliper-sw4-cuda-activity-profile-cali/caliper_cuda_activity_profile_summary_v2.cali"],
    "caliper_json": ["caliper-cpi-json/cpi-callpath-profile.json",
                     "caliper-lulesh-json/lulesh-annotation-profile.json"],
    "cprofile": ["generated:workload.pstats"],
    "gprof_dot": ["gprof2dot-cpi/callgrind.dot.64042.0.1"],
    "hatchet_json": ["json/hatchet-graph-literal.json"],
    "hpctoolkit": ["hpctoolkit-cpi-database"],
    "hpctoolkit_v4": ["hpctoolkit-gamess"],
    "perfflowaspect": ["generated:perfflow.node17.4001.pfw"],  # written by perflake.generators.perfflowaspect
    "pyinstrument": ["generated:session.json"],
    "tau": ["tau-cpi-mpi"],
}
CASES = [(kind, ds) for kind in sorted(REGISTRY) for ds in DATASETS.get(kind, [])]
# readers with no real dataset under ../shared/data: their own test file checks the contract on generated input
GENERATED = {"hpctoolkit_sparse": "tests/test_hpctoolkit_sparse.py"}


def _dataset(shared_data, ds: str):
    if ds.startswith("generated:"):
        import pyprofiles

        return pyprofiles.generated(ds.split(":", 1)[1])
    return shared_data(ds)


def test_every_registered_reader_has_datasets():
    assert all(DATASETS.get(kind) or kind in GENERATED for kind in REGISTRY), "add the reader's datasets to DATASETS"


@pytest.fixture
def read_case(shared_data):
    def read(kind, ds):
        path = _dataset(shared_data, ds)
        return path, get_reader(kind).read(str(path))

    return read


@pytest.mark.parametrize("kind,ds", CASES)
def test_sniffing_picks_the_reader(kind, ds, shared_data):
    assert detect(_dataset(shared_data, ds)) == kind


@pytest.mark.parametrize("kind,ds", CASES)
def test_frames_and_values(kind, ds, read_case):
    _, rows = read_case(kind, ds)
    assert rows.format == kind
    assert rows.frames.schema.equals(FRAME_SCHEMA)
    local = rows.frames.column("local_id").to_pylist()
    parent = rows.frames.column("parent_local").to_pylist()
    assert local == list(range(len(local))), "local ids are 0..n-1 in order"
    assert all(p == -1 or 0 <= p < i for i, p in enumerate(parent)), "every parent exists and comes first"
    assert None not in rows.frames.column("name").to_pylist()
    values = rows.values
    assert values.column_names[:3] == ["local_id", "rank", "thread"]
    assert set(values.column("local_id").to_pylist()) <= set(local)
    names = [m.name for m in rows.metrics]
    assert values.column_names[3:] == names and len(set(names)) == len(names)
    for m in rows.metrics:
        assert m.role in (EXCLUSIVE, INCLUSIVE, OTHER)
        col = values.column(m.name)
        assert col.type == pa.float64(), f"{m.name} must be float64, not {col.type}"
        arr = col.to_numpy()
        assert not np.isinf(arr).any(), f"{m.name}: metrics are finite or NaN"


@pytest.mark.parametrize("kind,ds", CASES)
def test_ids_are_stable_and_acyclic(kind, ds, read_case):
    _, rows = read_case(kind, ds)
    a, b = normalize(rows), normalize(rows)  # normalize raises on cycles / unreachable nodes
    assert a.nodes.column("node_id").to_pylist() == b.nodes.column("node_id").to_pylist()
    ids = set(a.nodes.column("node_id").to_pylist())
    assert all(p is None or p in ids for p in a.nodes.column("parent_id").to_pylist())


@pytest.mark.parametrize("kind,ds", CASES)
def test_catalog_row_is_complete(kind, ds, shared_data, lake):
    report = lake.ingest([_dataset(shared_data, ds)])
    assert len(report.ingested) == 1, report.failed
    row = lake.runs().iloc[0]
    assert row["format"] == kind and row["schema_version"] == SCHEMA_VERSION
    assert row["ranks"] >= 1 and row["threads"] >= 1 and row["n_nodes"] >= 1 and row["n_files"] >= 1
    assert len(row["content_sha256"]) == 64 and row["run_id"] == row["content_sha256"][:16]
    assert len(row["metrics"]) >= 1 and isinstance(json.loads(row["metadata"]), dict)
