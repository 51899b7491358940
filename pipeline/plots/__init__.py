"""Plots of perflake results (matplotlib figures, written as PNG/SVG or shown inline in Jupyter)."""
