"""TAU timer names -> frame attributes (formats.md 5.3 and 5.5)."""

from __future__ import annotations

import re

from perflake.readers.base import line_number

# `` [{file} {line,col}-{line,col}]`` at the end of a name, found in two linear steps: the tail from the
# file's closing brace, then the leftmost `` [{`` after the brace before it (one regex searched from every
# `` [{`` would rescan the name from each of them: quadratic time on a damaged name)
_LOC_TAIL_RE = re.compile(r"\}\s*\{(\d+)(?:,(\d+))?\}(?:-\{(\d+)(?:,(\d+))?\})?\]\s*$")
_LOC_HEAD_RE = re.compile(r"\s\[\{")


def parse_frame(text: str) -> tuple[str, str | None, int | None, int | None, str | None]:
    """Split one TAU timer name into (name, file, line, end_line, module) per formats.md 5.3/5.5.

    ``int main(int, char **) C [{cpi.c} {19,1}-{60,1}]`` -> ("int main(int, char **)", "cpi.c", 19, 60, None).
    ``{line,col}`` gives the line only (Hatchet stores the column as end_line: formats.md B.24).
    """
    name = text.strip()
    file = module = None
    line = end_line = None
    tail = _LOC_TAIL_RE.search(name) if name.endswith("]") else None
    head = tail and _LOC_HEAD_RE.search(name, name.rfind("}", 0, tail.start()) + 1, tail.start())
    if head:
        file = name[head.end() : tail.start()] or None
        line = line_number(tail.group(1))  # None when absurd (not an int64)
        end_line = line_number(tail.group(3))
        name = name[: head.start()].rstrip()
        if name.endswith(" C"):
            name = name[:-2].rstrip()
    if name.startswith("[UNWIND] ") and " [@] " in name:
        where, _, func = name[len("[UNWIND] "):].partition(" [@] ")
        name = "[UNWIND] " + func.strip()
        module = where.strip() or None
    else:
        tokens = name.split()
        if len(tokens) == 3 and "/" in tokens[2] and not name.startswith("["):
            name, module = " ".join(tokens[:2]), tokens[2]
    return name, file, line, end_line, module
