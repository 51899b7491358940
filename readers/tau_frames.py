"""TAU timer names -> frame attributes (formats.md 5.3 and 5.5)."""

from __future__ import annotations

import re

_LOC_RE = re.compile(r"\s\[\{([^}]*)\}\s*\{(\d+)(?:,(\d+))?\}(?:-\{(\d+)(?:,(\d+))?\})?\]\s*$")


def parse_frame(text: str) -> tuple[str, str | None, int | None, int | None, str | None]:
    """Split one TAU timer name into (name, file, line, end_line, module) per formats.md 5.3/5.5.

    ``int main(int, char **) C [{cpi.c} {19,1}-{60,1}]`` -> ("int main(int, char **)", "cpi.c", 19, 60, None).
    ``{line,col}`` gives the line only (Hatchet stores the column as end_line: formats.md B.24).
    """
    name = text.strip()
    file = module = None
    line = end_line = None
    m = _LOC_RE.search(name)
    if m:
        file = m.group(1) or None
        line = int(m.group(2))
        if m.group(4) is not None:
            end_line = int(m.group(4))
        name = name[: m.start()].rstrip()
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
