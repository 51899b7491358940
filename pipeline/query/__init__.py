"""Hatchet's call-path query language over perflake GraphFrames.

A query is a sequence of ``(quantifier, predicate)`` elements; applying it returns every node on every downward
path that matches (a path may start at any node).  Three ways to write one, all parsed into one model
(``model.py``):

* object dialect: ``[{"name": "solvers"}, ("*", {"time (inc)": "> 10"}), {"name": "p[a-z]+[0-9]"}]``;
* string dialect: ``'MATCH (".", p)->("*") WHERE p."name" =~ "MPI_.*" AND p."time (inc)" > 5'``;
* base syntax: ``QueryMatcher().match(".", lambda row: ...).rel("*")`` (Python predicates).

Compound queries: ``q1 & q2``, ``q1 | q2``, ``q1 ^ q2``, ``~q`` or the classes below.

    >>> from perflake import query
    >>> query.apply(gf, [{"name": "corge"}, "*"])          # list of Nodes, graph pre-order
    >>> query.match_node_ids(gf, '...', multi_index_mode="any")   # numpy uint64 call-path ids

Differences from llnl-hatchet 2026.2.0 (each covered by a test):

* two consecutive wildcard elements (e.g. ``"+"`` then ``"*"``) match like a regular expression; Hatchet
  looks one element ahead only, so its answer can depend on siblings;
* ``p... OR q...`` across two variables is read as Hatchet reads it (each variable's conditions grouped with
  their own AND/OR, the variables' predicates all required: ``p.a OR p.b AND q.c`` is ``(p.a OR p.b) AND q.c``),
  since a condition tests one node and no node-wise reading of "either node" exists; inside parentheses (a
  perflake extension, where the grouping is explicit) it is an InvalidQueryPath;
* ``query.query_pattern`` is Hatchet's view (expanded ``(quantifier, callable)``), built on demand: the dialects'
  callables are perflake's predicates evaluated on the one row given (perflake.query.row_predicate), not
  Hatchet's generated lambdas; QueryEngine's private methods (``_cache_node``, ``_match_1``, ``_match_pattern``,
  ``_match_0_or_more``...) are Hatchet internals perflake does not have;
* extensions: ``callpath_id`` (perflake's 64-bit call-path id; ``node_id``/``_hatchet_nid`` are Hatchet's
  pre-order numbers), parentheses in WHERE, case-insensitive keywords, ``<>``, frame attributes such as ``type``;
* ``multi_index_mode``: "off" (Hatchet's default) on a frame indexed by node plus rank/thread raises
  MultiIndexModeMismatch for the object dialect as in Hatchet, and for the string dialect too (where Hatchet fails
  with "Type mismatch"); base-syntax callables get the node's rows (a DataFrame), as in Hatchet.  perflake adds
  "mean": conditions read each node's mean over its rows (numeric columns, NaN skipped: Hatchet's
  ``drop_index_levels()`` default); it is the default of ``Lake.query`` and ``perflake query``, so one query runs
  on single- and multi-rank runs alike.  "any"/"all" test every row, then reduce per node;
* a missing string counts as None (``IS NONE``); a numeric NaN does not.
"""

from perflake.errors import (
    BadNumberNaryQueryArgs,
    InvalidMultiIndexMode,
    InvalidQueryFilter,
    InvalidQueryPath,
    MultiIndexModeMismatch,
    QueryError,
)
from perflake.query.compound import (
    AndQuery,
    CompoundQuery,
    ConjunctionQuery,
    DisjunctionQuery,
    ExclusiveDisjunctionQuery,
    IntersectionQuery,
    NaryQuery,
    NegationQuery,
    NotQuery,
    OrQuery,
    SymDifferenceQuery,
    UnionQuery,
    XorQuery,
)
from perflake.query.matching import QueryEngine, apply, compile_automaton, match_node_ids, to_query
from perflake.query.model import AbstractQuery, Query, QueryMatcher
from perflake.query.object_dialect import ObjectQuery
from perflake.query.string_dialect import StringQuery, parse_string_dialect

CypherQuery, parse_cypher_query = StringQuery, parse_string_dialect  # Hatchet's old-style names


def is_query(obj) -> bool:
    """True for a query object (base syntax, dialect or compound)."""
    return isinstance(obj, AbstractQuery)


is_hatchet_query = is_query  # Hatchet's name


__all__ = [
    "AbstractQuery", "BadNumberNaryQueryArgs", "InvalidMultiIndexMode", "InvalidQueryFilter", "InvalidQueryPath",
    "MultiIndexModeMismatch", "NaryQuery", "QueryEngine", "QueryError", "is_hatchet_query",
    "AndQuery", "CompoundQuery", "ConjunctionQuery", "CypherQuery", "DisjunctionQuery", "ExclusiveDisjunctionQuery",
    "IntersectionQuery", "NegationQuery", "NotQuery", "ObjectQuery", "OrQuery", "Query", "QueryMatcher",
    "StringQuery", "SymDifferenceQuery", "UnionQuery", "XorQuery", "apply", "compile_automaton", "is_query",
    "match_node_ids", "parse_cypher_query", "parse_string_dialect", "to_query",
]
