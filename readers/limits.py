"""The sizes a reader accepts: one place for every limit on input (docs/limits.md lists them for users).

Real profiles stay far below each limit; a file beyond one is damaged or hostile, and a reader refuses it with
one ReaderError naming the file and the limit, as soon as it sees the excess (before building anything more),
so the cost of a refusal is bounded by the limit, never by the file.

Peak memory of a reader grows with the call tree it builds (nodes x ranks x metrics), not with the size of the
file: readers stream or map their input (bench/bench_reader_memory.py measures it).
"""

from __future__ import annotations

# The longest frame name, file or module a reader accepts, in bytes.  Real names (demangled C++ templates
# included) stay far below it; a longer one is a damaged file, and it would cost far more than its size
# downstream (it is hashed into the call-path id of every node below it, perflake/identity.py).
MAX_FRAME_TEXT = 1 << 16

# The longest metadata value (a Caliper global attribute, an HPCToolkit or TAU metadata field), in bytes.
MAX_ATTRIBUTE_TEXT = 1 << 20

# The deepest call path, in frames from the root.  Recursive codes reach hundreds; Python stops at 1,000.
MAX_CALL_DEPTH = 4096

# The most call-tree nodes one run may have (before merging identical paths).
MAX_NODES = 5_000_000

# The most distinct call edges (caller -> callee pairs) of a call graph (gprof DOT, pstats): a real call graph
# has a few edges per function, so MAX_NODES functions need about as many edges.
MAX_EDGES = 4 * MAX_NODES
