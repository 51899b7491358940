"""Change points in the mean of many series at once: PELT with an L2 cost, vectorised across series.

``pelt(y, penalty, min_size)`` segments each row of ``y`` (series x time) so that the sum over segments of
the squared deviations from the segment's mean, plus ``penalty`` per change, is minimal, with every
segment at least ``min_size`` long.  This is the exact optimum (Optimal Partitioning); PELT's pruning
(Killick, Fearnhead & Eckley 2012, K = 0 for this cost) only drops candidates that cannot be the last
change before any later end.  With a minimum segment length the pruning decided at ``t`` is valid from
``t + min_size`` on (before that, ``t`` itself is not an admissible last change), so it is applied then:
the result equals brute-force Optimal Partitioning (tests/test_changes.py checks both, and ruptures).

The series are processed together: at each end ``t`` the candidates of all series form one
(series x candidates) array, so the cost is numpy work over arrays, never a Python loop per series.

``standardize`` puts each series in units of its own noise, so that one penalty fits all: the noise
``sigma`` is the MAD of the first differences / sqrt(2) (a shift moves one difference only, so sigma is
not inflated by the changes it must find), and each point is winsorized to within ``clip`` sigma of the
running median of its ``2 * min_size + 1`` neighbours (a running median keeps steps sharp, while a single
slow run -- an outlier night -- is cut down to ``clip`` sigma and no longer pays for a segment of its own).

The default penalty is ``3 log n`` (the modified BIC of Zhang & Siegmund 2007 for a change in mean, in
units of sigma squared) plus ``2 log P`` for P series tested together: a Bonferroni term, since the
cost drop of a spurious split has a tail like ``exp(-x / 2)`` and P series get P chances of one.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

MAD_TO_SIGMA = 1.482602218505602  # 1 / Phi^-1(3/4)
CHUNK = 256  # series segmented together (memory: series x candidates per step)


def default_penalty(n: int, series: int) -> float:
    """``3 log n + 2 log P`` in units of the noise variance (module docstring)."""
    return 3.0 * math.log(max(n, 2)) + 2.0 * math.log(max(series, 1))


def noise_sigma(y: np.ndarray) -> np.ndarray:
    """Per row: the MAD of the first differences / sqrt(2), or their std / sqrt(2) where the MAD is 0; NaN
    for rows shorter than 3 points."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    if y.shape[1] < 3:
        return np.full(y.shape[0], np.nan)
    d = np.diff(y, axis=1)
    mad = np.median(np.abs(d - np.median(d, axis=1, keepdims=True)), axis=1) * MAD_TO_SIGMA
    std = d.std(axis=1, ddof=1)
    return np.where(mad > 0, mad, std) / math.sqrt(2.0)


def running_median(y: np.ndarray, half: int) -> np.ndarray:
    """Per row, the median of the ``2 * half + 1`` points centred on each point; near the ends, of the points
    there are (padding with the edge value would let an outlier at the end be its own median)."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    if half < 1 or y.shape[1] < 2:
        return y.copy()
    padded = np.pad(y, ((0, 0), (half, half)), constant_values=np.nan)
    out = np.empty_like(y)
    step = max(1, (1 << 22) // max(1, (2 * half + 1) * y.shape[1]))  # rows per block: ~4 M window cells
    for a in range(0, y.shape[0], step):
        out[a:a + step] = np.nanmedian(sliding_window_view(padded[a:a + step], 2 * half + 1, axis=1), axis=2)
    return out


def standardize(y: np.ndarray, min_size: int, clip: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """(z, sigma): each row in units of its noise, winsorized around its running median (module docstring).
    Rows with no noise (sigma 0 or NaN) come back as zeros: nothing to find there."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    sigma = noise_sigma(y)
    ok = np.isfinite(sigma) & (sigma > 0)
    z = np.zeros_like(y)
    if ok.any():
        scaled = y[ok] / sigma[ok, None]
        centre = running_median(scaled, max(1, min_size))
        z[ok] = centre + np.clip(scaled - centre, -clip, clip) if clip else scaled
    return z, sigma


def pelt(y: np.ndarray, penalty, min_size: int = 2) -> list[np.ndarray]:
    """Change positions per row of ``y`` (series x time): each position is the index of the first point of
    a new segment.  ``penalty``: a number or one per row; ``min_size`` >= 1 points per segment."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    if min_size < 1:
        raise ValueError("min_size must be >= 1")
    if not np.isfinite(y).all():
        raise ValueError("pelt needs finite values")
    pen = np.broadcast_to(np.asarray(penalty, dtype=float), (y.shape[0],))
    out: list[np.ndarray] = []
    for a in range(0, y.shape[0], CHUNK):
        out += _pelt_block(y[a:a + CHUNK], pen[a:a + CHUNK], min_size)
    return out


def _pelt_block(y: np.ndarray, pen: np.ndarray, m: int) -> list[np.ndarray]:
    rows, n = y.shape
    if n < 2 * m:
        return [np.empty(0, dtype=np.int64) for _ in range(rows)]
    s1 = np.zeros((rows, n + 1))
    s2 = np.zeros((rows, n + 1))
    np.cumsum(y, axis=1, out=s1[:, 1:])
    np.cumsum(y * y, axis=1, out=s2[:, 1:])
    best = np.full((rows, n + 1), np.inf)
    best[:, 0] = -pen
    last = np.zeros((rows, n + 1), dtype=np.int64)
    dead_from = np.full((rows, n + 1), n + 1, dtype=np.int64)  # candidate s is pruned for ends >= this
    cands = np.array([0], dtype=np.int64)
    index = np.arange(rows)
    for t in range(m, n + 1):
        if t - m >= m:
            cands = np.append(cands, t - m)
        length = (t - cands).astype(float)
        d1 = s1[:, t, None] - s1[:, cands]
        cost = (s2[:, t, None] - s2[:, cands]) - d1 * d1 / length
        value = best[:, cands] + cost
        alive = dead_from[:, cands] > t
        masked = np.where(alive, value, np.inf)
        j = np.argmin(masked, axis=1)
        best[:, t] = masked[index, j] + pen
        last[:, t] = cands[j]
        if t == n:
            break
        # prune s where F(s) + C(s, t) > F(t): dominated by t for every end >= t + m
        pruned = alive & (value > best[:, t, None])
        if pruned.any():
            sub = dead_from[:, cands]
            dead_from[:, cands] = np.where(pruned, np.minimum(sub, t + m), sub)
            keep = (dead_from[:, cands] > t + 1).any(axis=0)
            cands = cands[keep]
    out = []
    for r in range(rows):
        pos, t = [], n
        while t > 0:
            s = int(last[r, t])
            if s > 0:
                pos.append(s)
            t = s
        out.append(np.array(pos[::-1], dtype=np.int64))
    return out


def segment_means(y: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The mean of each segment of a 1-d series cut at ``positions``."""
    edges = np.concatenate([[0], positions, [len(y)]]).astype(np.int64)
    return np.array([y[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])


def segment_medians(y: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The median of each segment of a 1-d series cut at ``positions``."""
    edges = np.concatenate([[0], positions, [len(y)]]).astype(np.int64)
    return np.array([np.median(y[a:b]) for a, b in zip(edges[:-1], edges[1:])])
