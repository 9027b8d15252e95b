"""pushcore_http/rendering.py: orjson's answers are the bytes json.dumps gave."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pushcore_http.rendering import JSONResponse, render_json


def starlette_bytes(content: Any) -> bytes:
    """What Starlette's own JSONResponse renders."""
    return json.dumps(
        content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


# What the API answers hold: text (any code point a JSON string can carry), integers
# (past 64 bits too), booleans and null, in objects and arrays.
scalars = st.none() | st.booleans() | st.integers() | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@given(values)
def test_the_bytes_are_those_json_dumps_gives(content: Any) -> None:
    assert render_json(content) == starlette_bytes(content)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_is_the_same_number(number: float) -> None:
    assert json.loads(render_json({"f": number})) == {"f": number}


def test_a_value_orjson_refuses_is_rendered_as_json_dumps_renders_it() -> None:
    content = {"big": 2**64, "list": [-(2**70)]}
    assert (
        render_json(content)
        == starlette_bytes(content)
        == b'{"big":18446744073709551616,"list":[-1180591620717411303424]}'
    )


def test_keys_that_are_not_strings_and_tuples_are_written_as_json_dumps_writes_them() -> None:
    content = {1: ("a", 2), "n": {True: None}}
    assert render_json(content) == starlette_bytes(content) == b'{"1":["a",2],"n":{"true":null}}'


def test_the_response_class_renders_with_it() -> None:
    response = JSONResponse({"title": "é", "n": 2**70}, 201)
    assert response.status_code == 201
    assert response.body == '{"title":"é","n":1180591620717411303424}'.encode()
    assert response.headers["content-length"] == str(len(response.body))
