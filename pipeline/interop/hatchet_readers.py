"""Hatchet's reader classes (``hatchet.readers.*``): ``CaliperReader(path).read()``, ``HPCToolkitReader(dir).read()``...

Hatchet scripts sometimes build a reader object and call its ``read()`` instead of the ``GraphFrame.from_*``
method that wraps it.  Each class here takes the arguments of Hatchet's class of the same name (llnl-hatchet
2026.2.0) and its ``read()`` returns what the matching ``GraphFrame.from_*`` returns -- perflake's GraphFrame,
made by perflake's readers.  The readers' internals (Hatchet's ``fill_tables``, ``read_json_sections``,
``create_graph``, ``json_data``...) are Hatchet implementation details and are not offered.
"""

from __future__ import annotations


def _frame_class():
    from perflake.read import frame_class

    return frame_class()


class _Reader:
    """A reader object: its arguments kept, ``read()`` calls the GraphFrame constructor."""

    def read(self):
        raise NotImplementedError


class CaliperReader(_Reader):
    """``hatchet.readers.caliper_reader.CaliperReader``: a json-split (or ``.cali``) file."""

    def __init__(self, filename_or_stream, query="", node_ordering=True):
        self.filename_or_stream, self.query, self.node_ordering = filename_or_stream, query, node_ordering

    def read(self):
        return _frame_class().from_caliper(self.filename_or_stream, self.query or None, self.node_ordering)


class CaliperNativeReader(_Reader):
    """``hatchet.readers.caliper_native_reader.CaliperNativeReader``: a ``.cali`` file or a caliper-reader
    object."""

    def __init__(self, filename_or_caliperreader, native=False, string_attributes=None, node_ordering=True):
        self.source, self.native = filename_or_caliperreader, native
        self.string_attributes, self.node_ordering = string_attributes, node_ordering

    def read(self):
        return _frame_class().from_caliperreader(self.source, self.native, self.string_attributes,
                                                 self.node_ordering)


class HPCToolkitReader(_Reader):
    """``hatchet.readers.hpctoolkit_reader.HPCToolkitReader``: an HPCToolkit database directory."""

    def __init__(self, dir_name):
        self.dir_name = dir_name

    def read(self):
        return _frame_class().from_hpctoolkit(self.dir_name)


class HPCToolkitReaderLatest(_Reader):
    """``hatchet.readers.hpctoolkit_reader_latest.HPCToolkitReaderLatest``: a v4 database as Hatchet shows it
    (``min_application_percentage_time`` is from_hpctoolkit_latest's ``min_percentage_of_application_time``)."""

    def __init__(self, dir_path, directory_mapping=None, parallel_profiles_mode=False, max_depth=None,
                 min_application_percentage_time=None, **keywords):
        self.dir_path = dir_path
        self.keywords = dict(directory_mapping=directory_mapping, parallel_profiles_mode=parallel_profiles_mode,
                             max_depth=max_depth,
                             min_percentage_of_application_time=min_application_percentage_time, **keywords)

    def read(self):
        return _frame_class().from_hpctoolkit_latest(self.dir_path, **self.keywords)


class TAUReader(_Reader):
    """``hatchet.readers.tau_reader.TAUReader``: a TAU profile directory."""

    def __init__(self, dirname):
        self.dirname = dirname

    def read(self):
        return _frame_class().from_tau(self.dirname)


class CProfileReader(_Reader):
    """``hatchet.readers.cprofile_reader.CProfileReader``: a cProfile ``.pstats`` file."""

    def __init__(self, filename):
        self.filename = filename

    def read(self):
        return _frame_class().from_cprofile(self.filename)


class PyinstrumentReader(_Reader):
    """``hatchet.readers.pyinstrument_reader.PyinstrumentReader``: pyinstrument's JSON."""

    def __init__(self, filename):
        self.filename = filename

    def read(self):
        return _frame_class().from_pyinstrument(self.filename)


class GprofDotReader(_Reader):
    """``hatchet.readers.gprof_dot_reader.GprofDotReader``: gprof2dot's DOT output."""

    def __init__(self, filename):
        self.filename = filename

    def read(self):
        return _frame_class().from_gprof_dot(self.filename)


class PerfFlowAspectReader(_Reader):
    """``hatchet.readers.perfflowaspect_reader.PerfFlowAspectReader``: a PerfFlowAspect trace, one node per
    event (perflake.interop.perfflow_trace)."""

    def __init__(self, filename, scan_cpu_mem=False):
        self.filename, self.scan_cpu_mem = filename, scan_cpu_mem

    def read(self):
        return _frame_class().from_perfflowaspect(self.filename, self.scan_cpu_mem)


class JsonReader(_Reader):
    """``hatchet.readers.json_reader.JsonReader``: Hatchet's JSON text."""

    def __init__(self, json_spec):
        self.json_spec = json_spec

    def read(self):
        return _frame_class().from_json(self.json_spec)


class LiteralReader(_Reader):
    """``hatchet.readers.literal_reader.LiteralReader``: a graph literal (list of root dicts)."""

    def __init__(self, graph_dict):
        self.graph_dict = graph_dict

    def read(self):
        return _frame_class().from_literal(self.graph_dict)


__all__ = ["CProfileReader", "CaliperNativeReader", "CaliperReader", "GprofDotReader", "HPCToolkitReader",
           "HPCToolkitReaderLatest", "JsonReader", "LiteralReader", "PerfFlowAspectReader", "PyinstrumentReader",
           "TAUReader"]
