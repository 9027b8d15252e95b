"""Reading request bodies: the media type, a size cap while streaming, then strict JSON.

Strict because a careful API refuses what it does not understand rather than
guessing: a body that is not JSON by its Content-Type, an object with the
same key twice (which one wins differs between parsers), text that is not
valid Unicode (a lone surrogate cannot be stored or sent on), nesting no real
request needs, an integer longer than any field holds. Each is a 4xx before
anything is stored.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request

from pushcore.domain.errors import (
    FieldError,
    InvalidJson,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationError,
)

MAX_BODY_BYTES = 64 * 1024
MAX_BATCH_BODY_BYTES = 1024 * 1024
"""The body limit of POST /api/notifications/batch (API.md): 500 items need room."""
MAX_DEPTH = 64
"""Levels of nesting allowed (the top-level object is level 1); API.md's limit."""
MAX_INT_DIGITS = 20
"""Digits of the longest JSON integer read: every 64-bit integer fits, no field holds more
(API.md: such a number is a 400). Longer ones are not converted at all: Python's int() of
a digit string takes time quadratic in its length, and past 4,300 digits it raises."""


class _TooLong:
    """Stands for an integer of more than MAX_INT_DIGITS digits until its field is named."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<integer too long>"


TOO_LONG = _TooLong()


def _integer(text: str) -> int | _TooLong:
    # The scanner calls this for integers only (sign and digits; floats it reads itself).
    if len(text) > MAX_INT_DIGITS and len(text) - text.startswith("-") > MAX_INT_DIGITS:
        return TOO_LONG
    return int(text)


TEXT_MEDIA_TYPES = ("text/plain", "application/x-www-form-urlencoded")
"""Bodies read as a message's text (API.md: `curl -d "Backup done" URL` publishes)."""


async def read_message(request: Request) -> Any:
    """A create's body: JSON, or a text body (:data:`TEXT_MEDIA_TYPES`) as ``{title, body}``."""
    content_type = request.headers.get("content-type") or ""
    media, *params = (part.strip().lower() for part in content_type.split(";"))
    if media not in TEXT_MEDIA_TYPES:
        return await read_json(request)
    _check_charset(params, "text")
    return message_of(await read_body(request, MAX_BODY_BYTES))


def message_of(raw: bytes) -> dict[str, str]:
    """A text body as a message: the first line the title, the rest (trimmed) the body.

    The text is taken as it is sent: ``curl -d`` does not URL-encode, so neither
    is a form body decoded here.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError([FieldError("title", "a text body must be UTF-8")]) from None
    title, _, rest = text.strip().partition("\n")
    fields = {"title": title.strip()}
    if rest.strip():
        fields["body"] = rest.strip()
    nul = [name for name, value in fields.items() if "\x00" in value]
    if nul:
        raise ValidationError([FieldError(f, "must not contain the NUL character") for f in nul])
    return fields


def check_media_type(content_type: str | None) -> None:
    """415 unless the Content-Type is JSON in UTF-8; a missing one is taken as JSON."""
    if content_type is None:
        return
    media, *params = (part.strip().lower() for part in content_type.split(";"))
    if media != "application/json" and not (
        media.startswith("application/") and media.endswith("+json")
    ):
        raise UnsupportedMediaType(
            f"Content-Type must be application/json, not {content_type[:100]!r}"
        )
    _check_charset(params, "JSON")


def _check_charset(params: list[str], kind: str) -> None:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip() == "charset" and value.strip().strip('"') not in ("utf-8", "utf8"):
            raise UnsupportedMediaType(f"{kind} bodies must be UTF-8 (charset=utf-8)")


async def read_json(request: Request, max_bytes: int = MAX_BODY_BYTES) -> Any:
    """The decoded JSON body; 415 when not JSON by type, 413 past ``max_bytes`` (without
    reading it all), 400 when not strict JSON, 400 naming the fields whose strings hold NUL."""
    check_media_type(request.headers.get("content-type"))
    return parse_json(await read_body(request, max_bytes))


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body; 413 past ``max_bytes``, refused by Content-Length before reading.

    Read once: later calls (the idempotency check reads it before the route)
    get the same bytes, and the limit is applied to them again.
    """
    declared = request.headers.get("content-length")
    if (
        declared is not None
        and declared.isascii()
        and declared.isdigit()
        and (len(declared) > 20 or int(declared) > max_bytes)
    ):
        raise _too_large(max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(max_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"Request body must be at most {max_bytes} bytes")


def parse_json(raw: bytes) -> Any:
    """``raw`` as strict JSON (see the module's docstring); InvalidJson or ValidationError."""
    if not raw.strip():
        raise InvalidJson("Request body must be a JSON object")
    try:
        # As json.loads reads bytes, with one decoder for every request: json.loads
        # with hooks builds a decoder a call, a tenth of what parsing a create costs.
        body = _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidJson(f"Malformed JSON: {exc}") from None
    except RecursionError:
        # The parser's own limit (about 1,000 levels) is far above ours.
        raise InvalidJson(f"JSON must not be nested deeper than {MAX_DEPTH} levels") from None
    if _plain(raw) and _LONG_DIGITS.search(raw) is None:
        # No string can hold NUL or a lone surrogate, no integer is too long: only
        # the depth is left to check.
        _check_depth(body)
        return body
    # Valid JSON ("\u0000"), but nothing may hold it: PostgreSQL cannot store it.
    # An integer too long is valid JSON too: a validation error that names its field.
    nul, too_long = _check_values(body)
    if nul or too_long:
        errors = dict.fromkeys(nul, "must not contain the NUL character")
        too_large = f"is a number too large for any field (more than {MAX_INT_DIGITS} digits)"
        errors.update(dict.fromkeys(too_long, too_large))
        raise ValidationError([FieldError(f, errors[f]) for f in sorted(errors)])
    return body


def _plain(raw: bytes) -> bool:
    """Whether no string of ``raw`` can hold NUL or a lone surrogate: no escape, no NUL
    byte (UTF-16 and UTF-32 JSON hold them), no surrogate spelled in UTF-8 bytes (the
    parser lets those through). Searched in C, so a batch's 500 items need no walk of
    every string (about 2 µs an item)."""
    return b"\\u" not in raw and b"\x00" not in raw and _SURROGATE.search(raw) is None


_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
# A run of digits that could be an integer too long (one inside a string too: then the
# values are walked, which finds only the integers).
_LONG_DIGITS = re.compile(rb"[0-9]{%d}" % (MAX_INT_DIGITS + 1))


def _check_depth(body: Any) -> None:
    """InvalidJson for nesting past MAX_DEPTH, as :func:`_check_values` counts it (a
    string may sit one level deeper than any other value), naming no field."""
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidJson(f"JSON must not be nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        for item in value:
            if not isinstance(item, str):
                stack.append((item, depth + 1))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InvalidJson(f"Malformed JSON: duplicate key {key!r}")
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_integer)
"""Strict JSON: a duplicate key refused, an integer too long kept as TOO_LONG."""


def _check_values(body: Any) -> tuple[set[str], set[str]]:
    """The fields (``metadata.build``, ``scopes[1]``; top level: "body") whose strings hold
    NUL, and those holding an integer too long; InvalidJson for a string that is not
    valid Unicode or nesting past MAX_DEPTH."""
    found: set[str] = set()
    too_long: set[str] = set()
    # Iterative, so that no depth the parser accepted can overflow the stack here.
    stack: list[tuple[Any, str, int]] = [(body, "", 1)]
    while stack:
        value, field, depth = stack.pop()
        if isinstance(value, str):
            if _bad_text(value, field or "body"):
                found.add(field or "body")
            continue
        if depth > MAX_DEPTH:
            raise InvalidJson(f"JSON must not be nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                inner = f"{field}.{key}" if field else key
                if _bad_text(key, inner):
                    found.add(inner)
                else:
                    stack.append((item, inner, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{field}[{i}]", depth + 1) for i, item in enumerate(value))
        elif value is TOO_LONG:
            too_long.add(field or "body")
    return found, too_long


def _bad_text(text: str, field: str) -> bool:
    """True when ``text`` holds NUL; InvalidJson when it holds a lone surrogate."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            shown = field.encode("utf-8", "backslashreplace").decode("ascii")
            raise InvalidJson(
                f"Malformed JSON: the string at {shown} is not valid Unicode (a lone surrogate)"
            ) from None
    return "\x00" in text
