"""A JSON integer longer than any field holds is a 400, never a 500 (API.md, "Limits and
fairness"), on a real `pushctl serve` process.

Python's int() refuses digit strings past 4,300 digits (ValueError, which the JSON
parser does not turn into a JSONDecodeError): such a body was a 500. The answer is a
`validation_error` naming each field that holds one, as for the NUL character,
and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.server import Server

pytestmark = pytest.mark.slow

HUGE = "9" * 5000  # past Python's int-string conversion limit (4,300 digits)
LONG = "1" + "0" * 24  # 25 digits: within that limit, beyond any field
MESSAGE = "is a number too large for any field (more than 20 digits)"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module."""
    running = Server(tmp_path_factory.mktemp("inputs") / "data")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def post(server: Server, path: str, body: str, headers: dict[str, str]) -> tuple[int, object]:
    """POST a raw JSON text (json.dumps cannot write such integers); status and body."""
    response = server.request(
        "POST", path, content=body, headers={**headers, "Content-Type": "application/json"}
    )
    return response.status_code, response.json()


def refusal(*fields: str) -> dict[str, object]:
    """API.md's validation error naming ``fields``."""
    return {
        "error": f"Invalid request: {', '.join(fields)}",
        "code": "validation_error",
        "details": [{"field": f, "message": MESSAGE} for f in fields],
    }


@pytest.mark.parametrize(
    "number",
    [HUGE, f"-{HUGE}", LONG, f"-{LONG}"],
    ids=["5000-digits", "minus-5000-digits", "25-digits", "minus-25-digits"],
)
def test_an_integer_no_field_holds_is_a_validation_error_and_nothing_is_stored(
    server: Server, number: str
) -> None:
    key = server.key("ints")
    body = f'{{"title": "t", "delay": "custom", "customDelay": {number}}}'
    assert post(server, "/api/notifications", body, key) == (400, refusal("customDelay"))
    listed = server.request("GET", "/api/notifications", headers=key).json()
    assert listed["items"] == []


def test_every_field_holding_one_is_named_nested_and_in_batches(server: Server) -> None:
    key = server.key("nested")
    body = f'{{"title": "t", "metadata": {{"k": {HUGE}}}, "extra": [1, {LONG}]}}'
    assert post(server, "/api/notifications", body, key) == (
        400,
        refusal("extra[1]", "metadata.k"),
    )
    batch = f'{{"notifications": [{{"title": "a"}}, {{"title": "b", "customDelay": {HUGE}}}]}}'
    assert post(server, "/api/notifications/batch", batch, key) == (
        400,
        refusal("notifications[1].customDelay"),
    )
    assert server.request("GET", "/api/notifications", headers=key).json()["items"] == []


def test_twenty_digits_are_read_and_left_to_the_field(server: Server) -> None:
    """The bound is the parser's; a 20-digit integer gets the field's own range check."""
    body = '{"title": "t", "delay": "custom", "customDelay": 99999999999999999999}'
    status, answer = post(server, "/api/notifications", body, server.key("twenty"))
    assert status == 400
    assert answer == {
        "error": "Invalid request: customDelay",
        "code": "validation_error",
        "details": [{"field": "customDelay", "message": "must be from 1 to 86400"}],
    }


def test_every_endpoint_that_reads_a_body_refuses_one(server: Server) -> None:
    user = server.user("everywhere")
    key = server.key("everywhere")
    stream = server.request("POST", "/api/streams", json={"name": "s"}, headers=key)
    assert stream.status_code == 201, stream.text
    stream_id = stream.json()["id"]
    for path, headers, field in [
        ("/api/devices", key, "token"),
        ("/api/keys", user, "name"),
        ("/api/streams", key, "name"),
        (f"/api/streams/{stream_id}/send", key, "title"),
        ("/api/streams/subscribe", user, "code"),
    ]:
        assert post(server, path, f'{{"{field}": {HUGE}}}', headers) == (400, refusal(field))


def test_a_page_size_of_many_digits_is_a_validation_error(server: Server) -> None:
    key = server.key("pages")
    for limit in (HUGE, LONG, "\u00b2"):  # "²" is a digit to str.isdigit, not to int()
        response = server.request("GET", "/api/notifications", params={"limit": limit}, headers=key)
        assert response.status_code == 400, limit
        assert response.json()["details"] == [
            {"field": "limit", "message": "must be an integer from 1 to 100"}
        ]
