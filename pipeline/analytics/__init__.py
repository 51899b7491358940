"""Questions across the runs of a lake: ensembles, load imbalance, comparisons, run selection.
"""
