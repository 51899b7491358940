"""Deterministic writer of RAJAPerf-sized Spot ``.cali`` profiles (benchmark input for bench_readers.py).

perflake has no ``.cali`` generator, so the ``ingest-cali-1000-files`` benchmark makes its own files here.  Each
file is laid out as Caliper 2.10's Spot channel writes a RAJAPerf run (``shared/docs/formats.md`` section 4;
the structure was read off ``shared/data/rajaperf-quartz``, no bytes of those files are used):

* ``__rec=node`` lines define the metric attributes first (``min/max/avg/sum#inclusive#sum#time.duration`` with
  aliases ``Min/Max/Avg time/rank``, ``Total time`` and unit ``sec``; hidden ``avg.sum#``/``avg.count#`` helpers;
  ``any#any#max#<kernel attribute>`` with aliases ``BlockSize``, ``Bytes/Rep``...; ``min#min#aggregate.slot``
  alias ``Node order``), then the ``spot.channel`` value node ``regionprofile``;
* one ``__rec=ctx`` record outside every region (the whole program), then the nested attribute ``region`` and,
  in pre-order, one region node followed by its ``ctx`` record: ``RAJAPerf`` > 6 groups > 67 kernels, i.e. 74
  regions and 75 records, one rank (min = max = avg = sum);
* the run metadata: the ``spot.*`` globals chained under ``cali.caliper.version``, the Adiak globals (with
  ``adiak.type``/``adiak.category``/``adiak.subcategory`` attribute metadata) chained under ``cali.channel``,
  and one ``__rec=globals`` line referencing both chains.  Values needing escapes (``\\,`` in list values,
  ``\\=`` in compiler options) are escaped as Caliper does.

Every file differs: its index picks the variant, problem size, tuning and compiler, seeds the kernel times
(``numpy.random.default_rng([seed, index])``), and sets ``launchdate``.  Same (index, seed): same bytes.

    from cali_writer import write_cali_profiles
    paths = write_cali_profiles("bench/work/cali-1000", 1000, seed=1)
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

GROUPS = {  # RAJAPerf suite groups and kernels (public kernel names)
    "Basic": ["COPY8", "DAXPY", "DAXPY_ATOMIC", "IF_QUAD", "INDEXLIST", "INDEXLIST_3LOOP", "INIT3", "INIT_VIEW1D",
              "INIT_VIEW1D_OFFSET", "MAT_MAT_SHARED", "MULADDSUB", "NESTED_INIT", "PI_ATOMIC", "PI_REDUCE",
              "REDUCE3_INT", "REDUCE_STRUCT", "TRAP_INT"],
    "Lcals": ["DIFF_PREDICT", "EOS", "FIRST_DIFF", "FIRST_MIN", "FIRST_SUM", "GEN_LIN_RECUR", "HYDRO_1D",
              "HYDRO_2D", "INT_PREDICT", "PLANCKIAN", "TRIDIAG_ELIM"],
    "Polybench": ["2MM", "3MM", "ADI", "ATAX", "FDTD_2D", "FLOYD_WARSHALL", "GEMM", "GEMVER", "GESUMMV", "HEAT_3D",
                  "JACOBI_1D", "JACOBI_2D", "MVT"],
    "Stream": ["ADD", "COPY", "DOT", "MUL", "TRIAD"],
    "Apps": ["CONVECTION3DPA", "DEL_DOT_VEC_2D", "DIFFUSION3DPA", "ENERGY", "FIR", "HALOEXCHANGE",
             "HALOEXCHANGE_FUSED", "LTIMES", "LTIMES_NOVIEW", "MASS3DEA", "MASS3DPA", "NODAL_ACCUMULATION_3D",
             "PRESSURE", "VOL3D", "ZONAL_ACCUMULATION_3D"],
    "Algorithm": ["SCAN", "SORT", "SORTPAIRS", "REDUCE_SUM", "MEMSET", "MEMCPY"],
}
ROOT = "RAJAPerf"
N_REGIONS = 1 + len(GROUPS) + sum(len(k) for k in GROUPS.values())  # 74
N_RECORDS = N_REGIONS + 1  # + the record outside every region
TIME_ATTRS = [("min", "Min time/rank"), ("max", "Max time/rank"), ("avg", "Avg time/rank")]
KERNEL_ATTRS = ["BlockSize", "Bytes/Rep", "Flops/Rep", "Iterations/Rep", "Kernels/Rep"]
VARIANTS = ["Base_Seq", "RAJA_Seq", "Base_OpenMP", "RAJA_OpenMP"]
SIZES = [1048576, 2097152, 4194304, 8388608]
TUNINGS = ["default", "default", "default", "library"]
COMPILERS = [("gcc", "10.3.1", "g++"), ("clang", "14.0.6", "clang++"), ("intel", "2021.6.0", "icpc")]
USERS = ["mckinsey", "jsmith", "alee"]
CLUSTERS = ["quartz", "ruby"]
BOOT_INT, BOOT_UINT, BOOT_STRING, BOOT_DOUBLE = 1, 2, 3, 5  # bootstrap type nodes (formats.md 4.2)
ATTR_NAME, ATTR_PROP = 8, 10
LAUNCH0 = 1_690_000_000


def escape(value: str) -> str:
    """Caliper's escaping of a value: ``\\``, ``,`` and ``=`` get a backslash; a newline is written ``\\n``."""
    return (value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=").replace("\n", "\\n"))


def _f(x: float) -> str:
    return f"{x:.6f}"


def text(col, i: int) -> str:
    """Cell ``i`` of a value column as Caliper writes it: integers in decimal, doubles with 6 decimals."""
    x = col[i]
    return str(int(x)) if isinstance(x, (int, np.integer)) else _f(float(x))


class _Writer:
    """Lines of one file and a node-id allocator (ids are arbitrary; 0-11 are the predefined bootstrap nodes)."""

    def __init__(self):
        self.lines: list[str] = []
        self.next_id = 12

    def node(self, attr: int, data: str, parent: int | None = None) -> int:
        nid = self.next_id
        self.next_id += 1
        tail = "" if parent is None else f",parent={parent}"
        self.lines.append(f"__rec=node,id={nid},attr={attr},data={escape(data)}{tail}")
        return nid

    def attribute(self, name: str, prop: int, parent: int) -> int:
        """An attribute: its property node under ``parent`` (a type node or a metadata chain), then its name."""
        return self.node(ATTR_NAME, name, self.node(ATTR_PROP, str(prop), parent))


def _region_tree() -> list[tuple[str, int]]:
    """(name, parent index or -1) in pre-order."""
    out = [(ROOT, -1)]
    for group, kernels in GROUPS.items():
        g = len(out)
        out.append((group, 0))
        out += [(f"{group}_{k}", g) for k in kernels]
    return out


REGIONS = _region_tree()
# per-kernel base seconds at the smallest size and reps, a fixed property of the "suite" (seed-independent)
_BASE = np.random.default_rng(20230729).lognormal(mean=-0.7, sigma=0.9, size=N_REGIONS)
_REPS = np.random.default_rng(20230730).choice([50, 100, 180, 500, 2500], size=N_REGIONS)


def dropped_kernels(index: int, seed: int, missing: float) -> np.ndarray:
    """Region positions of the kernels run ``index`` lacks: each kernel with probability ``missing`` (0: none;
    a generator of its own, so that ``missing=0`` writes the same bytes as before the option existed)."""
    if missing <= 0:
        return np.zeros(0, dtype=np.int64)
    kernels = np.array([i for i, (_, p) in enumerate(REGIONS) if p > 0])
    return kernels[np.random.default_rng([seed, index, 1]).random(len(kernels)) < missing]


def _run_values(index: int, seed: int, dropped: np.ndarray = np.zeros(0, dtype=np.int64)) -> dict:
    """Per-region values of run ``index``: inclusive seconds (children summed up) and the kernel attributes."""
    rng = np.random.default_rng([seed, index])
    size = SIZES[(index // 4) % len(SIZES)]
    variant = VARIANTS[index % len(VARIANTS)]
    scale = size / SIZES[0] * (0.35 if "OpenMP" in variant else 1.0) * (1.08 if variant.startswith("RAJA") else 1.0)
    own = _BASE * scale * rng.lognormal(0.0, 0.06, N_REGIONS)  # exclusive time of kernels; groups get overhead
    parents = np.array([p for _, p in REGIONS])
    kernel = np.array([p > 0 for p in parents])
    own[~kernel] = rng.uniform(0.0005, 0.004, int((~kernel).sum()))
    own[dropped] = 0.0
    incl = own.copy()
    for i in range(N_REGIONS - 1, 0, -1):  # children come after their parent in pre-order
        incl[parents[i]] += incl[i]
    incl = np.round(incl, 6)
    iters = np.where(kernel, size * rng.choice([1, 1, 1, 2, 3], N_REGIONS), 0).astype(float)
    attrs = {
        "BlockSize": np.zeros(N_REGIONS),
        "Bytes/Rep": iters * rng.choice([8, 16, 24, 32], N_REGIONS),
        "Flops/Rep": iters * rng.choice([0, 1, 2, 4], N_REGIONS),
        "Iterations/Rep": iters,
        "Kernels/Rep": np.where(kernel, rng.choice([1, 1, 3], N_REGIONS), 0).astype(float),
        "ProblemSize": np.where(kernel, float(size), 0.0),
        "Reps": _REPS.astype(float),
    }
    for v in attrs.values():
        v[dropped] = 0.0
    for i in range(N_REGIONS - 1, 0, -1):  # groups and the root show the max over their kernels (any#any#max)
        for v in attrs.values():
            v[parents[i]] = max(v[parents[i]], v[i])
    return {"size": size, "variant": variant, "incl": incl, "attrs": attrs,
            "outside": round(float(incl[0]) + rng.uniform(2.0, 9.0), 6)}


def cali_text(index: int, seed: int = 1, missing: float = 0.0) -> str:
    """The ``.cali`` text of run ``index``; it lacks each kernel with probability ``missing``."""
    dropped = dropped_kernels(index, seed, missing)
    v = _run_values(index, seed, dropped)
    w = _Writer()
    meta_prop = w.node(ATTR_PROP, "64", BOOT_STRING)
    alias = w.node(ATTR_NAME, "attribute.alias", meta_prop)
    unit = w.node(ATTR_NAME, "attribute.unit", meta_prop)
    sec = w.node(unit, "sec", BOOT_DOUBLE)
    metric_ids, names, values, outside = [], [], [], []  # per attribute of a ctx record

    def metric(name: str, prop: int, parent: int, column, out: str | None = None) -> None:
        """An attribute, its value per region and its value in the record outside every region."""
        metric_ids.append(w.attribute(name, prop, parent))
        names.append(name)
        values.append(column)
        outside.append(out if out is not None else text(column, 0))

    whole = _f(v["outside"])
    for op, al in TIME_ATTRS:
        metric(f"{op}#inclusive#sum#time.duration", 65, w.node(alias, al, sec), v["incl"], whole)
    metric("avg.sum#inclusive#sum#time.duration", 193, BOOT_DOUBLE, v["incl"], whole)  # hidden helpers of avg#
    metric("avg.count#inclusive#sum#time.duration", 193, BOOT_INT, np.ones(N_REGIONS, dtype=np.int64))
    metric("sum#inclusive#sum#time.duration", 65, w.node(alias, "Total time", sec), v["incl"], whole)
    for name in KERNEL_ATTRS:
        metric(f"any#any#max#{name}", 65, w.node(alias, name, BOOT_DOUBLE), v["attrs"][name])
    metric("min#min#aggregate.slot", 65, w.node(alias, "Node order", BOOT_UINT), np.arange(1, N_REGIONS + 1), "0")
    for name in ("ProblemSize", "Reps"):
        metric(f"any#any#max#{name}", 65, w.node(alias, name, BOOT_DOUBLE), v["attrs"][name])
    channel = w.node(ATTR_NAME, "spot.channel", meta_prop)
    regionprofile = w.node(channel, "regionprofile")
    attr_list = "=".join(map(str, metric_ids))

    def record(ref: str, i: int | None) -> None:
        """A ctx record of region ``i`` (None: outside every region -- the program's whole time, Node order 0)."""
        cells = outside if i is None else [text(c, i) for c in values]
        w.lines.append(f"__rec=ctx,ref={ref},attr={attr_list},data={'='.join(cells)}")

    record(str(regionprofile), None)
    region = w.attribute("region", 276, BOOT_STRING)
    ids: list[int] = []
    skip = set(dropped.tolist())
    for i, (name, parent) in enumerate(REGIONS):
        if i in skip:
            ids.append(-1)
            continue
        ids.append(w.node(region, name, None if parent < 0 else ids[parent]))
        record(f"{ids[-1]}={regionprofile}", i)

    # -- globals ---------------------------------------------------------------------------------------------
    spot_prop = w.node(ATTR_PROP, "512", BOOT_STRING)
    spot_attrs = {k: w.node(ATTR_NAME, k, spot_prop) for k in ("spot.channels", "spot.options")}
    spot_attrs["spot.format.version"] = w.attribute("spot.format.version", 512, BOOT_INT)
    for k in ("spot.timeseries.metrics", "spot.metrics"):
        spot_attrs[k] = w.node(ATTR_NAME, k, spot_prop)
    cali_prop = w.node(ATTR_PROP, "1612", BOOT_STRING)
    version = w.node(ATTR_NAME, "cali.caliper.version", cali_prop)
    chain = w.node(version, "2.10.0")
    for k, val in (("spot.metrics", ",".join(n for n in names if not n.startswith("avg."))),
                   ("spot.timeseries.metrics", ""), ("spot.format.version", "2"), ("spot.options", "node.order"),
                   ("spot.channels", "regionprofile")):
        chain = w.node(spot_attrs[k], val, chain)
    spot_leaf = chain

    sub = w.node(ATTR_PROP, "84", BOOT_STRING)
    subcategory = w.node(ATTR_NAME, "adiak.subcategory", sub)
    category = w.node(ATTR_NAME, "adiak.category", w.node(ATTR_PROP, "84", BOOT_INT))
    atype = w.node(ATTR_NAME, "adiak.type", sub)
    typed: dict[tuple[str, str], int] = {}

    def adiak(name: str, adiak_type: str, subcat: str) -> int:
        """An Adiak global attribute: type -> category 2 -> subcategory -> prop 1612 -> name (chains shared)."""
        base = {"double": BOOT_DOUBLE, "date": BOOT_UINT, "int": BOOT_INT}.get(adiak_type, BOOT_STRING)
        key = (adiak_type, subcat)
        if key not in typed:
            t = w.node(atype, adiak_type, base)
            typed[key] = w.node(ATTR_PROP, "1612", w.node(subcategory, subcat, w.node(category, "2", t)))
        return w.node(ATTR_NAME, name, typed[key])

    family, cver, cxx = COMPILERS[(index // 16) % len(COMPILERS)]
    size, variant = v["size"], v["variant"]
    tuning = TUNINGS[(index // 64) % len(TUNINGS)]
    user = USERS[index % len(USERS)]
    cluster = CLUSTERS[(index // 3) % len(CLUSTERS)]
    exe = f"/g/g20/{user}/rajaperf/bin/{family}{cver}_O3.exe"
    outdir = f"/usr/workspace/{user}/rajaperf/{cluster}/{family}{cver}_{size}/O3/{index % 10}"
    metadata = [  # (name, adiak type, subcategory, value)
        ("user", "string", "runinfo", user),
        ("launchdate", "date", "runinfo", str(LAUNCH0 + index * 911 + (seed % 97) * 86_400)),
        ("libraries", "set of path", "binary",
         "[" + ",".join(["linux-vdso.so.1", "/lib64/libdl.so.2", "/usr/lib64/libcaliper.so.2",
                         "/usr/lib64/libadiak.so", "/usr/lib64/libmpi.so.12", f"/usr/lib64/lib{family}.so.1",
                         "/lib64/libstdc++.so.6", "/lib64/libm.so.6", "/lib64/libgomp.so.1",
                         "/lib64/libc.so.6"]) + "]"),
        ("cmdline", "set of string", "runinfo",
         "[" + ",".join([exe, "--variants", variant, "--size", str(size), "--outdir", outdir, "-sp"]) + "]"),
        ("cluster", "string", "host", cluster),
        ("perfsuite_version", "string", "none", "1.10.0"),
        ("raja_version", "string", "none", "2022.10.5"),
        ("cmake_build_type", "string", "none", "Release"),
        ("cmake_cxx_flags", "string", "none", " -Wall -Wextra  -g -O3   "),
        ("cmake_exe_linker_flags", "string", "none", ""),
        ("rajaperf_compiler", "string", "none", f"/usr/tce/packages/{family}/{family}-{cver}/bin/{cxx}"),
        ("rajaperf_compiler_options", "string", "none", "-Ofast -march=native; -Wall -Wextra  -g -O3   "),
        ("compiler_version", "string", "none", cver),
        ("compiler", "string", "none", f"{cxx}-{cver}"),
        ("Compiler_path_version", "string", "none", f"{family}-{cver}"),
        ("systype_build", "string", "none", "toss_4_x86_64_ib"),
        ("machine_build", "string", "none", f"{cluster}{1000 + index % 1300}"),
        ("ProblemSizeRunParam", "double", "none", _f(float(size))),
        ("SizeMeaning", "string", "none", "Direct"),
        ("omp_version", "string", "none", "4.5"),
        ("omp_max_threads", "string", "none", "72" if "OpenMP" in variant else "1"),
        ("variant", "string", "none", variant),
        ("tuning", "string", "none", tuning),
    ]
    adiak_ids = {name: adiak(name, t, s) for name, t, s, _ in metadata}
    cali_channel = w.node(ATTR_NAME, "cali.channel", cali_prop)
    chain = w.node(cali_channel, "spot")
    for name, _t, _s, val in metadata:
        chain = w.node(adiak_ids[name], val, chain)
    w.lines.append(f"__rec=globals,ref={spot_leaf}={chain}")
    return "\n".join(w.lines) + "\n"


def write_cali_profiles(out_dir, n_files: int, *, seed: int = 1, missing: float = 0.0) -> list[pathlib.Path]:
    """Write ``n_files`` profiles ``out_dir/<variant>/p<index>.cali`` and return their paths (index order);
    each lacks a kernel with probability ``missing``."""
    out = pathlib.Path(out_dir)
    paths = []
    for i in range(n_files):
        sub = out / VARIANTS[i % len(VARIANTS)]
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"p{i:05d}.cali"
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(cali_text(i, seed, missing))
        paths.append(path)
    return paths


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    for p in write_cali_profiles(a.out_dir, a.n, seed=a.seed):
        print(os.fspath(p))
