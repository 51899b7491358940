"""Hatchet JSON as an input format (readers/hatchet_json.py): the golden, ingest, and perflake's own export."""

from __future__ import annotations

import json

import pytest

import golden as golden_check
import perflake
from perflake.cli.app import main
from perflake.errors import ReaderError
from perflake.frame.graphframe import GraphFrame
from perflake.readers import detect
from perflake.readers.hatchet_json import Reader

DATASET = "json/hatchet-graph-literal.json"


def test_hatchet_json_matches_the_golden(shared_data, golden):
    path = shared_data(DATASET)
    assert detect(path) == "hatchet_json"
    gf = perflake.read(path)
    assert gf.default_metric == "time"  # Hatchet's from_json: GraphFrame's default
    gold = golden("hatchet-json")
    ours = golden_check.compare(gf, gold)
    assert len(ours) == len(gold.groupby("callpath"))  # node counts agree (same-name siblings summed)
    assert [r.frame["name"] for r in gf.graph.roots] == ["foo", "waldo"]
    values = gf.dataframe.loc[gf.graph.roots[0]]
    assert (values["time"], values["time (inc)"]) == (0.0, 135.0)  # the golden's ["foo"] row


def test_ingest_and_tree_take_hatchet_json_including_perflakes_export(tmp_path, shared_data):
    """perflake export writes Hatchet JSON; perflake ingest (and tree on the file) read it back: same values."""
    lake, copy = tmp_path / "lake", tmp_path / "copy"
    assert main(["ingest", str(shared_data("tau-cpi-mpi")), "--lake", str(lake), "--quiet"]) == 0
    run_id = perflake.Lake(lake).runs()["run_id"][0]
    out = tmp_path / "tau.json"
    assert main(["export", run_id, "--lake", str(lake), "-o", str(out)]) == 0
    assert main(["ingest", str(out), "--lake", str(copy), "--quiet"]) == 0
    runs = perflake.Lake(copy).runs()
    assert list(runs["format"]) == ["hatchet_json"]
    a, b = perflake.Lake(lake).graphframe(run_id), perflake.Lake(copy).graphframe(runs["run_id"][0])
    assert {n.node_id for n in a.graph} == {n.node_id for n in b.graph}  # same call paths, same ids
    for metric in ("time", "time (inc)"):  # (the default differs: Hatchet's from_json defaults to time)
        assert a.tree(metric, rank=2, render_header=False, colour=False) == \
            b.tree(metric, rank=2, render_header=False, colour=False)
    assert main(["tree", str(out), "--depth", "0", "--no-header"]) == 0


def test_sniffing_and_errors(tmp_path):
    thicket = tmp_path / "thicket.json"
    thicket.write_text(json.dumps({"graph": [{"0": {"data": {"name": "a"}, "children": []}}],
                                   "dataframe_indices": ["node", "profile"], "dataframe": []}))
    assert Reader.sniff(str(thicket))
    with pytest.raises(ReaderError, match="Thicket"):
        Reader().read(str(thicket))
    cut = tmp_path / "cut.json"
    cut.write_text('{"graph": [{"0": {"data": {"name": "a"}')
    with pytest.raises(ReaderError, match=r"cut\.json: not JSON"):
        Reader().read(str(cut))
    other = tmp_path / "other.json"
    other.write_text('{"data": [], "columns": []}')
    assert not Reader.sniff(str(other)) and not Reader.sniff(str(tmp_path))


def test_duplicate_records_key_order_and_a_caliper_lookalike_metadata(tmp_path, shared_data):
    """Review findings: one record per (node, rank) or a ReaderError; Hatchet JSON saved with sorted keys is
    still Hatchet JSON; metadata naming json-split's keys does not make caliper_json claim the file."""
    doc = json.loads(shared_data(DATASET).read_text())
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps({**doc, "dataframe": doc["dataframe"] + doc["dataframe"][:1]}))
    with pytest.raises(ReaderError, match=r"two dataframe records share a \(node\) key"):
        Reader().read(str(dup))
    sorted_keys = tmp_path / "sorted.json"
    sorted_keys.write_text(json.dumps(doc, sort_keys=True))
    assert detect(sorted_keys) == "hatchet_json"
    steal = tmp_path / "steal.json"
    steal.write_text(json.dumps({**doc, "metadata": {"data": 1, "columns": 2, "column_metadata": 3, "nodes": 4}}))
    assert detect(steal) == "hatchet_json" and perflake.read(steal).default_metric == "time"
    thicket = tmp_path / "thicket.json"
    thicket.write_text(json.dumps({**doc, "profile_mapping": {"1": "a"}, "profile_idx_name": "profile"}))
    assert detect(thicket) is None  # several profiles: not one run, passed over in a scan
    assert GraphFrame.from_json(shared_data(DATASET).read_text()).default_metric == "time"  # as Hatchet's from_json
