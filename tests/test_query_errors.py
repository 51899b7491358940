"""Malformed queries: a QueryError whose position is the offending token (string dialect) or element index
(object dialect), raised at parse time when the text alone is wrong and at evaluation for type mismatches."""

from __future__ import annotations

import pytest

import literal as L
from perflake import query as Q
from perflake.errors import PerflakeError, QueryError


@pytest.fixture(scope="module")
def mock():
    return L.graphframe(L.MOCK_GRAPH)


# (query, the offending token, which occurrence of it, a phrase of the message)
STRING_ERRORS = [
    ('MATCH (".", p) WHERE p."name" == "x"', "=", 1, "expected a string or a number"),
    ('MATCH (".", p) WHERE q."name" = "x"', "q", 0, "not declared"),
    ('MATCH ("?", p)', '"?"', 0, "quantifier"),
    ('MATCH (0, p)', "0", 0, "quantifier"),
    ('MATCH (".", p) WHERE p."name" STARTS "x"', '"x"', 0, "expected WITH"),
    ('MATCH (".", p) WHERE p."name" =~ "[a-"', '"[a-"', 0, "bad regular expression"),
    # OR across variables inside parentheses (without them it is read as Hatchet reads it: test_query_hatchet.py)
    ('MATCH (".", p)->(".", q) WHERE (p."name" = "a" OR q."name" = "b")', "q.", 0, "different variables"),
    ('MATCH (".", p) WHERE p."time" > "5"', '"5"', 0, "expected a number"),
    ('MATCH (".", p) WHERE p."time" IS NULL', "NULL", 0, "expected NAN, INF or NONE"),
    ('MATCH (".", p) WHERE p."name" = "x" $', "$", 0, "unexpected character"),
    ('MATCH (".", p) WHERE p."name" = "x', '"x', 0, "unterminated string"),
    ('MATCH (".", p) (".", q)', "(", 1, "after the end of the query"),
    ('MATCH (".", p)->(".", p)', "p", 1, "already used"),
    ('MATCH (".", p) WHERE p."name" = "a" XOR p."name" = "b"', "XOR", 0, "after the end of the query"),
    ('{MATCH (".", p)} FOO {MATCH ("*")}', "FOO", 0, "after the end of the query"),
    ('MATCH (".", p) WHERE (p."name" = "a"', "", 0, "expected ')'"),
    ('MATCH (".", p) WHERE p', "", 0, "expected '.' and an attribute"),
    ('MATCH (".", p) WHERE p."time" BETWEEN 1', "BETWEEN", 0, "expected an operator"),
    ('MATCH', "", 0, "'(' starting a query node"),
    ('FIND (".", p)', "FIND", 0, "expected MATCH"),
]


def _offset(text: str, token: str, nth: int) -> int:
    if token == "":
        return len(text)
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(token, pos + 1)
    return pos


@pytest.mark.parametrize(("text", "token", "nth", "phrase"), STRING_ERRORS, ids=[e[0] for e in STRING_ERRORS])
def test_string_dialect_error_points_at_the_token(text, token, nth, phrase):
    with pytest.raises(QueryError) as info:
        Q.parse_string_dialect(text)
    err = info.value
    assert phrase in str(err)
    assert err.position == _offset(text, token, nth)
    assert err.query == text
    caret = str(err).splitlines()[-1]
    assert caret.index("^") - 2 == err.position  # the caret line sits under the token


def test_multi_line_query_positions_line_up():
    text = 'MATCH (".", p)\nWHERE p."name" STARTS\tWITH 5'
    with pytest.raises(QueryError) as info:
        Q.parse_string_dialect(text)
    assert info.value.position == text.index("5") and info.value.query == text.replace("\n", " ").replace("\t", " ")


@pytest.mark.parametrize(("text", "token", "phrase"), [
    ('MATCH (".", p) WHERE p."time" STARTS WITH "1"', "STARTS", "is numeric"),
    ('MATCH (".", p) WHERE p."name" > 5', ">", "holds strings"),
    ('MATCH (".", p)->("*", q) WHERE q."name" = 3', "=", "holds strings"),
])
def test_type_mismatch_is_reported_at_the_operator(mock, text, token, phrase):
    with pytest.raises(QueryError, match=phrase) as info:
        Q.apply(mock, text)
    assert info.value.position == text.index(token)


OBJECT_ERRORS = [
    ([{"name": "a"}, ("?", {"name": "b"})], 1, "quantifier"),
    ([{"name": "a"}, 3.5], 1, "expected a dict"),
    ([("*", "x")], 0, "expected a dict"),
    ([{"name": "a"}, 0], 1, "quantifier"),
    ([{"depth": "deep"}], 0, "must be a comparison"),
    ([{"name": "a"}, {"time": []}], 1, "empty list"),
]


@pytest.mark.parametrize(("query", "index", "phrase"), OBJECT_ERRORS, ids=[str(e[0]) for e in OBJECT_ERRORS])
def test_object_dialect_error_names_the_element(query, index, phrase):
    with pytest.raises(QueryError, match=phrase) as info:
        Q.ObjectQuery(query)
    assert info.value.position == index and f"query element {index}" in str(info.value)


@pytest.mark.parametrize(("query", "index", "phrase"), [
    ([{"name": "foo"}, {"time": "about 5"}], 1, "must be a comparison"),
    ([{"name": 5}], 0, "holds strings"),
    ([{"name": "[a-"}], 0, "bad regular expression"),
    # a value of no usable type: accepted by ObjectQuery, refused when applied (as Hatchet does)
    ([{"name": "a"}, {"time": object()}], 1, "must be a number, a string"),
    ([{"name": "foo"}, ("*", {"time (inc)": "> 1"}), {"time": "bigger"}], 2, "must be a comparison"),
])
def test_object_dialect_type_errors_at_evaluation(mock, query, index, phrase):
    with pytest.raises(QueryError, match=phrase) as info:
        Q.apply(mock, query)
    assert info.value.position == index


def test_api_misuse_is_a_query_error(mock):
    with pytest.raises(QueryError, match="is a list"):
        Q.ObjectQuery("MATCH")
    with pytest.raises(QueryError, match="at least one element"):
        Q.apply(mock, [])
    with pytest.raises(QueryError, match="not a query"):
        Q.apply(mock, 42)
    with pytest.raises(QueryError, match="multi_index_mode"):
        Q.apply(mock, [{"name": "foo"}], multi_index_mode="some")
    with pytest.raises(QueryError, match="match"):
        Q.Query().rel("*")
    with pytest.raises(QueryError, match="1 sub-queries"):
        Q.NegationQuery([{"name": "a"}], [{"name": "b"}])
    with pytest.raises(QueryError, match="2 or more"):
        Q.ConjunctionQuery([{"name": "a"}])
    with pytest.raises(QueryError, match="parse_string_dialect"):
        Q.StringQuery('{MATCH (".", p)} OR {MATCH ("*")}')
    with pytest.raises(QueryError, match="empty query"):
        Q.apply(mock, Q.Query())
    assert issubclass(QueryError, PerflakeError)
