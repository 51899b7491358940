"""Text and pictures of one GraphFrame: tree, folded stacks, flame graph, flat profile, hot path.

Plots of lake-wide results (matplotlib) are the public package perflake.plots, at the top.
"""
