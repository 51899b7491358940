"""How perflake computes: DuckDB connections, the one way into sql/, the Dask fan-out.

duck opens connections, sqlfiles loads the statements of sql/ (never SQL pasted from strings),
parallel fans tasks out over Dask schedulers.  Everything above this room computes through it.
"""
