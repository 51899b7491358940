"""The 2022 pre-release layout of HPCToolkit v4 databases (decoding helpers of
:mod:`perflake.readers.hpctoolkit_v4_sections`).

Databases written by an hpcprof pre-release of 2022 also say ``HPCTOOLKITmeta`` /
``HPCTOOLKITprof`` 4.0 but use an earlier layout (HPCToolkit's ``src/lib/prof-lean/formats/{metadb,profiledb}.[ch]``
of 2022, before the entry points and propagation scopes of the released 4.0).  They are recognised by their
recorded structure sizes -- metrics header ``szMetric`` 24, ``szScope`` 24 (byte 0x0d, ``szScopeInst`` in 4.0),
``szSummary`` 16 (4.0: 32/16/24); profile infos of 40 bytes (4.0: 48) -- and read as such:

* metric ``{pName, u16 nScopes @0x08, pScopes @0x10}``; scope ``{char* pScope (its name), u16 nSummaries @0x08,
  u16 propMetricId @0x0a, pSummaries @0x10}``, whose meaning comes from its name (``point``, ``function``,
  ``execution``: the scope types 1/3/2 of 4.0); summary ``{pFormula, u8 combine @0x08, u16 statMetricId @0x0a}``;
* context tree header ``{szRoots, pRoots}``: the roots are ordinary contexts; contexts are ``0x18 + 8*nFlexWords``
  bytes (flags @0x14, flex words @0x18, no ``propagation`` field; an early 2022 writer left the flags 0, then
  they follow from the number of flex words).  A root the released hpcprof turns into an entry
  point becomes one here too, as it does (``MetaDB::notifyContext``): a function context of the placeholder
  ``<program root>`` -> ``main thread``, ``<thread root>`` -> ``application thread``, and a root without a function
  (an unknown scope) -> ``unknown entry``; any other root stays a context;
* profile info ``{value block, pIdTuple}`` without ``flags``: the first profile is the summary (as in 4.0).

Any other structure smaller than its 4.0 size is a ReaderError naming the file (the format never removes fields).
The version reported for such a file is ``4.0 (2022 pre-release layout)``.

Sources: HPCToolkit's ``src/lib/prof-lean/formats/metadb.[ch]`` and ``profiledb.[ch]`` and
``src/lib/profile/sinks/metadb.cpp`` of 2022 (the released ``src/hpcprof/sinks/metadb.cpp`` for the entry points).
"""

from __future__ import annotations

PRE_2022 = "2022 pre-release layout"
PRE_METRIC_SIZES = (24, 24, 16)  # szMetric, szScope, szSummary (4.0: szMetric, szScopeInst, szSummary 32/16/24)
PRE_PROFILE_SIZE = 40  # profile info: value block + pIdTuple, no flags (4.0: 48)
PRE_SCOPE_TYPES = {"point": 1, "execution": 2, "function": 3}  # 4.0 scope types by pre-release scope name
PRE_ROOT_ENTRIES = {"<program root>": (1, "main thread"), "<thread root>": (2, "application thread")}
HAS_FUNCTION, HAS_SRCLOC, HAS_POINT = 1, 2, 4


def metrics_pre_2022(b, p_metrics: int, n_metrics: int, sz_metric: int, sz_scope: int,
                     sz_summary: int) -> list[dict]:
    """Metric descriptions of the 2022 pre-release layout (``b``: the meta.db ``Blob``), in the 4.0 shape (a
    scope's type from its name; its propagation index is not recorded: None)."""
    out = []
    for p_name, n_scopes, p_scopes in b.records("<QH6xQ", p_metrics, n_metrics, sz_metric, "metric descriptions"):
        insts, sums = [], []
        for p_scope, n_sums, prop_id, p_sums in b.records("<QHH4xQ", p_scopes, n_scopes, sz_scope,
                                                          "propagation scopes"):
            name = b.cstr(p_scope, "scope name")
            scope = {"scope": name, "type": PRE_SCOPE_TYPES.get(name, 0), "index": None}
            insts.append({**scope, "prop_id": prop_id})
            sums += [{**scope, "formula": b.cstr(pf, "summary formula"), "combine": comb, "stat_id": sid}
                     for pf, comb, sid in b.records("<QBxH", p_sums, n_sums, sz_summary, "summary statistics")]
        out.append({"name": b.cstr(p_name, "metric name"), "scopes": insts, "summaries": sums})
    return out


def pre_2022_flags(n_flex: int, lexical: int) -> int:
    """The flags of a pre-release context whose writer did not set them (HPCToolkit's ``metadb.c`` of early 2022
    wrote the flex words -- pFunction, then pFile + line, then pModule + offset, each only when present -- but
    not byte 0x14): 1 word = function, 2 = source line (point for an instruction), 3 = both, 4 = source line and
    point, 5 = all."""
    return {1: HAS_FUNCTION, 2: HAS_POINT if lexical == 3 else HAS_SRCLOC, 3: HAS_FUNCTION | HAS_SRCLOC,
            4: HAS_SRCLOC | HAS_POINT}.get(n_flex, HAS_FUNCTION | HAS_SRCLOC | HAS_POINT)


def pre_2022_entry(lexical: int, fields: dict, functions: dict) -> tuple[int, str] | None:
    """(entryPoint, pretty name) of a pre-release root context that the released hpcprof writes as an entry point."""
    if lexical != 0 or "file" in fields or "module" in fields:
        return None
    if "function" not in fields:  # an unknown scope
        return 0, "unknown entry"
    fn = functions.get(fields["function"])
    return PRE_ROOT_ENTRIES.get(fn[0]) if fn and not (fn[1] or fn[3]) else None
