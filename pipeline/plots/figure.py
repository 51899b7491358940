"""The object every plot function returns: a matplotlib Figure that saves itself and shows inline in Jupyter.

Figures are built without pyplot (``matplotlib.figure.Figure`` on an Agg canvas), so making a plot touches no
global figure manager, needs no display, and leaves nothing open when the object is dropped.  ``save``
chooses PNG or SVG by the file's extension; SVG keeps its text as text (searchable, and the labels can be
read back), and both carry no timestamp and fixed SVG ids, so the same plot made from the same data gives
the same bytes.  Constrained layout stays active, so a figure restyled through ``.figure`` is laid out again
when it is drawn.

Call-path labels: a bar or a row is labelled with the last frames of its call path, each name shortened
(C++ argument and template lists are elided first), and more frames are added where two labels would
otherwise be equal.
"""

from __future__ import annotations

import io
import math
import os
import pathlib
import re
from collections import Counter
from collections.abc import Sequence

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from perflake.errors import PlotError

FORMATS = {".png": "png", ".svg": "svg"}
DPI = 100
MAX_DPI = 2400  # a 10 x 6 inch plot at 2400 dpi is already 24000 x 14400 pixels
# text stays text in SVG; ids derived from a fixed salt, so the same plot gives the same bytes
_SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "perflake"}
_METADATA = {"png": {"Software": "perflake"}, "svg": {"Date": None}}
SEPARATOR = " > "
ELLIPSIS = "\u2026"


def output_format(path: str | os.PathLike) -> str:
    """'png' or 'svg' from the file name's extension; a :class:`PlotError` for anything else."""
    suffix = pathlib.PurePath(os.fspath(path)).suffix.lower()
    if suffix not in FORMATS:
        shown = f"'{suffix}'" if suffix else "no extension"
        raise PlotError(f"{os.fspath(path)}: cannot write a plot with {shown}; use .png or .svg")
    return FORMATS[suffix]


def new_figure(width: float, height: float, *, dpi: int = DPI) -> Figure:
    """A Figure of ``width`` x ``height`` inches (rounded up to quarter inches, so that common resolutions give
    whole pixels) on its own Agg canvas, laid out by constrained layout."""
    size = (math.ceil(width * 4) / 4, math.ceil(height * 4) / 4)
    fig = Figure(figsize=size, dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


class Plot:
    """A finished plot: ``.figure`` (a matplotlib Figure, free to restyle), ``.data`` (the numbers drawn,
    a DataFrame in drawing order), ``save(path)``; displayed inline by Jupyter (PNG or SVG)."""

    def __init__(self, figure: Figure, *, kind: str, data=None):
        self.figure = figure
        self.kind = kind
        self.data = data

    @property
    def axes(self):
        """The main Axes (the bars, lines or image; a colourbar, if any, comes after it in ``figure.axes``)."""
        return self.figure.axes[0]

    def to_bytes(self, fmt: str = "png", *, dpi: int | None = None) -> bytes:
        """The plot rendered as PNG or SVG bytes."""
        if fmt not in _METADATA:
            raise PlotError(f"cannot render a plot as {fmt!r}; use 'png' or 'svg'")
        if dpi is not None and (isinstance(dpi, bool) or not 1 <= dpi <= MAX_DPI):
            raise PlotError(f"dpi must be between 1 and {MAX_DPI}, not {dpi!r}")
        buf = io.BytesIO()
        with matplotlib.rc_context(_SVG_RC if fmt == "svg" else {}):
            self.figure.savefig(buf, format=fmt, dpi=dpi or self.figure.dpi, metadata=_METADATA[fmt])
        return buf.getvalue()

    def save(self, path: str | os.PathLike, *, dpi: int | None = None) -> pathlib.Path:
        """Write the plot to ``path`` (.png or .svg, chosen by the extension); returns the path.

        The file is rendered completely before it is opened, so a failure leaves no half-written file.
        """
        fmt = output_format(path)
        data = self.to_bytes(fmt, dpi=dpi)
        target = pathlib.Path(path)
        try:
            target.write_bytes(data)
        except OSError as exc:
            raise PlotError(f"{os.fspath(path)}: cannot write: {exc.strerror or exc}") from None
        return target

    def _repr_png_(self) -> bytes:
        return self.to_bytes("png")

    def _repr_svg_(self) -> str:
        return self.to_bytes("svg").decode("utf-8")

    def __repr__(self) -> str:
        w, h = self.figure.get_size_inches()
        rows = "" if self.data is None else f", {len(self.data)} rows"
        return f"Plot({self.kind}, {w:g}x{h:g} in{rows})"


# -- labels -----------------------------------------------------------------------------------------------
_ARGS = re.compile(r"\((?:[^()]|\([^()]*\))*\)")
_TEMPLATE = re.compile(r"<(?:[^<>]|<[^<>]*>)*>")
_RETURN_TYPE = re.compile(r"^[^(]*?[\w*&>]\s+(?=[^\s(]+\(" + ELLIPSIS + r"\)\s*(?:const)?$)")


def shorten(name, width: int = 40) -> str:
    """One frame's name in at most ``width`` characters: the argument list is elided (``f(int, double)`` ->
    ``f(…)``), then template arguments, then a C++ return type, then the end is cut with an ellipsis."""
    text = "" if name is None else str(name)
    if len(text) <= width:
        return text
    text = _ARGS.sub(f"({ELLIPSIS})", text)
    if len(text) > width:
        text = _TEMPLATE.sub(f"<{ELLIPSIS}>", text)
    if len(text) > width:
        text = _RETURN_TYPE.sub("", text)
    if len(text) > width:
        text = text[: width - 1] + ELLIPSIS
    return text


def _label(path: Sequence, frames: int, leaf_width: int, width: int) -> str:
    kept = list(path)[-frames:]
    parts = [shorten(p, width) for p in kept[:-1]] + [shorten(kept[-1], leaf_width)]
    return (ELLIPSIS + SEPARATOR if len(path) > len(kept) else "") + SEPARATOR.join(parts)


def path_labels(paths: Sequence[Sequence], suffixes: Sequence[str] | None = None, *, frames: int = 2,
                leaf_width: int = 40, width: int = 24, max_chars: int = 90) -> list[str]:
    """A short, distinct label per call path (a sequence of frame names, root first): the last ``frames``
    names (the leaf up to ``leaf_width`` characters, its ancestors up to ``width``), more frames where two
    labels collide; ``suffixes`` (e.g. a run id) are appended as given.  A label longer than ``max_chars``
    keeps its end (collisions deep in a tree of look-alike frames, as HPCToolkit's ``<unknown procedure>``,
    would otherwise give labels wider than any figure), numbered ``[k]`` if that makes two equal."""
    return _fit(_distinct_labels(paths, suffixes, frames, leaf_width, width), max_chars)


def _fit(labels: list[str], max_chars: int) -> list[str]:
    out = [t if len(t) <= max_chars else "\u2026" + t[-(max_chars - 1):] for t in labels]
    total, seen = Counter(out), Counter()
    for i, text in enumerate(out):
        if total[text] > 1:
            seen[text] += 1
            out[i] = f"{text} [{seen[text]}]"
    return out


def _distinct_labels(paths, suffixes, frames: int, leaf_width: int, width: int) -> list[str]:
    paths = [tuple("" if p is None else p) or ("",) for p in paths]
    suffixes = list(suffixes) if suffixes is not None else [""] * len(paths)
    depth = [min(frames, len(p)) for p in paths]
    while True:
        labels = [_label(p, d, leaf_width, width) + s for p, d, s in zip(paths, depth, suffixes)]
        seen: dict[str, list[int]] = {}
        for i, text in enumerate(labels):
            seen.setdefault(text, []).append(i)
        grow = [i for group in seen.values() if len(group) > 1 for i in group if depth[i] < len(paths[i])]
        if not grow:
            return labels
        for i in grow:
            depth[i] += 1


def node_path(node) -> tuple[str, ...]:
    """The frame names from the root to a GraphFrame node."""
    return tuple(str(n.frame.get("name")) for n in node.path())


def fmt_value(value: float) -> str:
    """A number in at most about 6 characters (3 significant digits)."""
    return f"{value:.3g}"
