"""Deterministic synthetic HPC call-path profiles (for demos, tests and benchmarks)."""
from .calltree import CallTree, Metrics, inclusive_from_exclusive, make_metrics, make_tree, perturb
from .tau import write_tau_runs

__all__ = ["CallTree", "Metrics", "inclusive_from_exclusive", "make_metrics", "make_tree", "perturb",
           "write_tau_runs"]
