"""HPACK encoding made cheap for many requests with the same headers."""

from __future__ import annotations

from typing import Any

from hpack import Encoder, HeaderTuple
from hpack.hpack import encode_integer
from hpack.table import HeaderTable


class HeaderEncoder(Encoder):
    """HPACK made cheap for many requests with the same headers.

    Literals are never Huffman-coded: in pure Python that was the costliest
    step of a request (about 70 µs of 200), to save some 25 bytes of a path
    and an apns-id. A header found whole in the table encodes to the same
    bytes until the table changes, so those bytes are remembered and reused
    until something is added to it; never-indexed headers (a device's path,
    a unique id) go out as literals without searching the table at all. In
    pure Python the search and the bookkeeping per header were most of the
    cost of a request's headers.
    """

    def __init__(self) -> None:
        super().__init__()
        self._indexed: dict[tuple[bytes, bytes], bytes] = {}
        self._never_prefix: dict[bytes, bytes] = {}

    def encode(self, headers: Any, huffman: bool = False) -> bytes:
        """Encode a header block (bytes names and values), never Huffman-coding."""
        table = self.header_table
        block: list[bytes] = []
        if table.resized:
            block.append(self._encode_table_size_change())
            table.resized = False
            self._indexed.clear()
        cached = self._indexed
        for header in headers:
            name, value = _to_bytes(header[0]), _to_bytes(header[1])
            if isinstance(header, HeaderTuple) and not header.indexable:
                block.append(self._never_indexed(name, value))
                continue
            encoded = cached.get((name, value))
            if encoded is None:
                encoded = self.add((name, value), False, False)
                if encoded[0] & 0x80:
                    # An indexed field: the table did not change.
                    cached[(name, value)] = encoded
                else:
                    # Added to the table: every dynamic index moved.
                    cached.clear()
            block.append(encoded)
        return b"".join(block)

    def _never_indexed(self, name: bytes, value: bytes) -> bytes:
        # RFC 7541 §6.2.3: 0001 + the name's static index (4-bit prefix), or a
        # literal name after index 0; then the value as a literal. The table is
        # untouched, so nothing cached goes stale.
        prefix = self._never_prefix.get(name)
        if prefix is None:
            static = HeaderTable.STATIC_TABLE_MAPPING.get(name)
            if static is not None:
                field = encode_integer(static[0], 4)
                field[0] |= 0x10
                prefix = bytes(field)
            else:
                prefix = b"\x10" + bytes(encode_integer(len(name), 7)) + name
            self._never_prefix[name] = prefix
        return prefix + bytes(encode_integer(len(value), 7)) + value


def _to_bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")
