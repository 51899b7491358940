"""Python profiles made at test time by the real profilers: cProfile's ``.pstats`` and pyinstrument's JSON.

* :func:`write_pstats` profiles :data:`WORKLOAD` (recursion, mutual recursion, a function with two callers, a
  generator, a method) with ``cProfile.Profile``; with ``deterministic=True`` its timer is a counter (one tick of
  1 microsecond per call of the timer), so the file's values, and its bytes, are the same on every run;
* :func:`write_pyinstrument` profiles a busy workload with the real sampling profiler (values vary per run);
* :func:`pyinstrument_json` renders a pyinstrument ``Session`` of given samples with pyinstrument's own
  ``JSONRenderer`` (deterministic: hand-computable trees).

The workload's code is compiled under the fixed file name :data:`WORKLOAD_FILE`, so the pstats keys do not
depend on where the project lives.  Used by tests/test_cprofile.py, test_pyinstrument.py, test_gprof_dot.py
and by tests/fuzz.py for its generated sources.
"""

from __future__ import annotations

import marshal
import os
import tempfile
from pathlib import Path

WORKLOAD_FILE = "/perflake-tests/workload.py"
WORKLOAD = '''\
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def even(n):
    return True if n == 0 else odd(n - 1)


def odd(n):
    return False if n == 0 else even(n - 1)


def squares(k):
    return sum(i * i for i in range(k))


class Grid:
    def relax(self, n):
        return [squares(n) for _ in range(3)]


def work():
    fib(12)
    even(15)
    squares(200)
    Grid().relax(50)


def main():
    for _ in range(3):
        work()
    squares(100)
'''


def _workload_main():
    scope: dict = {}
    exec(compile(WORKLOAD, WORKLOAD_FILE, "exec"), scope)  # noqa: S102 - our own constant code
    return scope["main"]


def write_pstats(path, deterministic: bool = True) -> Path:
    """Profile the workload with cProfile and write its pstats file at ``path``."""
    import cProfile

    main = _workload_main()
    if deterministic:
        ticks = iter(range(1 << 62))
        profiler = cProfile.Profile(lambda: next(ticks), 1e-6)
    else:
        profiler = cProfile.Profile()
    profiler.enable()
    main()
    profiler.disable()
    profiler.create_stats()
    stats = {k: (*v[:4], dict(sorted(v[4].items()))) for k, v in sorted(profiler.stats.items())}
    path = Path(path)
    path.write_bytes(marshal.dumps(stats))
    return path


def write_pyinstrument(path, seconds: float = 0.06) -> Path:
    """Profile a busy workload for about ``seconds`` with pyinstrument's sampling profiler; write its JSON."""
    import time

    from pyinstrument import Profiler
    from pyinstrument.renderers import JSONRenderer

    main = _workload_main()
    profiler = Profiler(interval=0.0002)
    profiler.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        main()
    profiler.stop()
    path = Path(path)
    path.write_text(profiler.output(JSONRenderer()))
    return path


def frame(function: str, file: str = "app.py", line: int = 1) -> str:
    """A pyinstrument frame identifier."""
    return f"{function}\x00{file}\x00{line}"


def pyinstrument_json(samples: list[tuple[list[str], float]], processed: bool = False) -> str:
    """pyinstrument's JSON for a session of ``samples`` (stack of frame identifiers from the root, seconds);
    ``processed=False`` renders the tree as sampled (no processors), else with the JSON renderer's defaults."""
    from pyinstrument.renderers import JSONRenderer
    from pyinstrument.session import Session

    total = sum(t for _, t in samples)
    session = Session(frame_records=[(list(stack), t) for stack, t in samples], start_time=1_700_000_000.0,
                      duration=total, min_interval=0.001, max_interval=0.001, sample_count=len(samples),
                      start_call_stack=[samples[0][0][0]] if samples else [],
                      target_description="perflake test session", cpu_time=total,
                      sys_path=[], sys_prefixes=[])
    renderer = JSONRenderer() if processed else JSONRenderer(processor_options={}, show_all=True)
    if not processed:
        renderer.processors = []
    return renderer.render(session)


# -- generated sources of tests/fuzz.py ---------------------------------------------------------------------

SESSION = [([frame("main", "app.py", 1), frame("solve", "app.py", 10), frame("kernel", "k.py", 3)], 0.5),
           ([frame("main", "app.py", 1), frame("solve", "app.py", 10)], 0.25),
           ([frame("main", "app.py", 1), frame("io", "io.py", 7)], 0.125),
           ([frame("main", "app.py", 1)], 0.0625)]
def _perfflow(path):
    from perflake.generators import write_perfflowaspect_trace

    return write_perfflowaspect_trace(path, processes=2, threads=2, seed=3)


GENERATED = {"workload.pstats": lambda p: write_pstats(p),
             "session.json": lambda p: p.write_text(pyinstrument_json(SESSION)),
             "perfflow.node17.4001.pfw": _perfflow}  # a PerfFlowAspect trace (perflake.generators.perfflowaspect)


def generated(name: str) -> Path:
    """The generated input ``name`` (a key of GENERATED), made once per machine user in the temp directory."""
    folder = Path(tempfile.gettempdir()) / f"perflake-generated-{os.getuid()}"
    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}"
        GENERATED[name](tmp)
        os.replace(tmp, path)
    return path
