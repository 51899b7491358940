"""Deterministic synthetic HPC call-path profiles in real formats (for demos, tests and benchmarks)."""
from .caliper import write_caliper_json_runs
from .calltree import CallTree, Metrics, inclusive_from_exclusive, make_metrics, make_tree, perturb
from .hpctoolkit import write_hpctoolkit_runs
from .hpctoolkit_v4 import write_hpctoolkit_v4_runs
from .perfflowaspect import write_perfflowaspect_trace
from .tau import write_tau_runs

# format name -> writer(out_dir, *, nodes, ranks, runs, seed, ...) -> list of run paths
WRITERS = {"caliper": write_caliper_json_runs, "hpctoolkit": write_hpctoolkit_runs, "tau": write_tau_runs}

__all__ = ["CallTree", "Metrics", "WRITERS", "inclusive_from_exclusive", "make_metrics", "make_tree", "perturb",
           "write_caliper_json_runs", "write_hpctoolkit_runs", "write_hpctoolkit_v4_runs",
           "write_perfflowaspect_trace", "write_tau_runs"]
