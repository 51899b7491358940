"""``GraphFrame.from_caliperreader`` with a ``caliperreader.CaliperReader`` object (issue 15, theme 4 of the issue):
Hatchet accepts a reader that has read a ``.cali`` file as well as the file's path.  perflake gives the same
GraphFrame either way (same call-path ids, frames, children order, values, metadata) on every real ``.cali`` file
of ../shared, and the object's frame has the order and names llnl-hatchet 2026.2.0 gives for the same object."""

from __future__ import annotations

import json

import pytest

import hatchet_load
from conftest import DATA, _need, need_bench_python
from perflake import GraphFrame
from perflake.errors import ReaderError
from perflake.generators.cali_stream import trace_2016
from perflake.readers.caliper_records import read_caliper_reader
from test_caliper_node_order import preorder

caliperreader = pytest.importorskip("caliperreader", reason="caliper-reader is not installed (test extra)")

FILES = ["caliper-example-cali/example-profile.cali", "caliper-lulesh-cali/lulesh-annotation-profile.cali",
         "caliper-ordered-cali/230525-151052_1930517_eWbGeyrlBOPT.cali",
         "caliper-ordered-cali-mpi/230525-151723_1930647_FSY8b8cKSEEi.cali",
         "caliper-sw4-cuda-activity-profile-cali/caliper_cuda_activity_profile_summary_v2.cali",
         "rajaperf-quartz/gcc10.3.1_1048576/O3/1/Base_Seq-default.cali"]


def from_object(path):
    r = caliperreader.CaliperReader()
    r.read(str(path))
    return GraphFrame.from_caliperreader(r)


@pytest.mark.parametrize("rel", FILES)
def test_object_gives_the_frame_of_the_path(rel):
    path = _need(DATA / rel)
    a, b = from_object(path), GraphFrame.from_caliperreader(path)
    assert [n.node_id for n in a.graph.traverse()] == [n.node_id for n in b.graph.traverse()]
    assert [n.frame.attrs for n in a.graph.traverse()] == [n.frame.attrs for n in b.graph.traverse()]
    assert a.dataframe.equals(b.dataframe) and list(a.dataframe.columns) == list(b.dataframe.columns)
    assert (a.exc_metrics, a.inc_metrics, a.default_metric) == (b.exc_metrics, b.inc_metrics, b.default_metric)
    assert a.metadata == b.metadata


HATCHET_CODE = """
import caliperreader
rows = []
for path in {paths!r}:
    r = caliperreader.CaliperReader()
    r.read(path)
    gf = hatchet.GraphFrame.from_caliperreader(r)
    rows.append([path, json.dumps([str(n.frame["name"]) for n in gf.graph.traverse()]),
                 json.dumps(sorted(set(gf.dataframe["name"])))])
result = pd.DataFrame(rows, columns=["path", "order", "names"])
"""


def test_object_order_and_names_are_hatchets():
    need_bench_python()
    paths = [str(_need(DATA / rel)) for rel in FILES[1:4]]
    report = hatchet_load.recipe("import json\n" + HATCHET_CODE.format(paths=paths))["frame"]["values"]
    for path, order, names in report:
        r = caliperreader.CaliperReader()
        r.read(path)
        # the reader's frames in profile order (children by local_id: the order GraphFrames keep)
        assert [p[-1] for p in preorder(read_caliper_reader(r))] == json.loads(order)
        assert sorted(set(from_object(path).dataframe["name"])) == json.loads(names)


def test_a_2016_stream_object_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "old.cali"
    path.write_text(trace_2016(3))
    r = caliperreader.CaliperReader()
    r.read(str(path))
    with pytest.raises(ReaderError, match="read the file by its path"):
        GraphFrame.from_caliperreader(r)
    assert len(GraphFrame.from_caliperreader(path).graph) > 1  # by its path it is read
