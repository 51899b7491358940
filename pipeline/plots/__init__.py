"""Plots of perflake results (matplotlib figures, written as PNG/SVG or shown inline in Jupyter).

>>> from perflake.plots import plot_imbalance, plot_scaling, plot_heatmap
>>> plot_imbalance(lake.imbalance(metric="time")).save("imbalance.png")     # bars: top call paths by max/mean
>>> plot_scaling(lake.scaling_table("time", by="nprocs"), metric="time", logx=True, ideal=True)  # lines
>>> plot_heatmap(lake, "c364f4bf", metric="time")                            # call paths x ranks of one run
>>> plot_models(lake.model(by="nprocs", metric="time", predict=4096))       # fitted scaling models over the points
>>> plot_timeline(changes(lake, order_by="launch_time"))                      # values over runs, change points
>>> plot_distributions(lake.ensemble_of(), "time", top=10, group_by="compiler", kind="violin")  # box/violin

Every function returns a :class:`Plot` (``.figure``, ``.data``, ``.save(path)``; shown inline in Jupyter).
Figures are built without pyplot; importing this package imports matplotlib, nothing else in perflake does.
"""

from perflake.plots.distributions import plot_distributions
from perflake.plots.figure import Plot, output_format
from perflake.plots.heatmap import plot_heatmap
from perflake.plots.imbalance_bars import plot_imbalance
from perflake.plots.model_lines import plot_models
from perflake.plots.scaling_lines import plot_scaling
from perflake.plots.timeline import plot_timeline

__all__ = ["Plot", "output_format", "plot_distributions", "plot_heatmap", "plot_imbalance", "plot_models",
           "plot_scaling", "plot_timeline"]
