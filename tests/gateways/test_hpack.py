"""HeaderEncoder: HPACK with remembered indexed fields must decode as plain HPACK does.

The encoder reuses the bytes of a header found whole in the dynamic table
until something is added to the table. If that bookkeeping were wrong, a
peer's decoder would read another header than was sent (an index pointing at
a moved entry): every block is checked against hpack's own Decoder, which
keeps its table in step, over random request sequences that make the table
fill, evict and resize.
"""

from __future__ import annotations

from hpack import Decoder, HeaderTuple, NeverIndexedHeaderTuple
from hypothesis import given, settings
from hypothesis import strategies as st

from pushcore.gateways.http2 import HeaderEncoder

Header = tuple[bytes, bytes]

# Few names and values, so that the same fields come back (cached, indexed)
# and new ones push old ones out of a small table.
names = st.sampled_from([b":method", b":path", b"authorization", b"apns-topic", b"apns-id", b"x"])
values = st.binary(min_size=0, max_size=40).map(lambda v: v.replace(b"\n", b""))
fields = st.tuples(names, values, st.booleans())  # (name, value, never indexed)
blocks = st.lists(st.lists(fields, min_size=1, max_size=8), min_size=1, max_size=30)
sizes = st.lists(st.sampled_from([None, 0, 64, 256, 4096]), min_size=30, max_size=30)


def as_sent(field: tuple[bytes, bytes, bool]) -> HeaderTuple | Header:
    name, value, never = field
    return NeverIndexedHeaderTuple(name, value) if never else (name, value)


@settings(max_examples=200, deadline=None)
@given(blocks, sizes)
def test_every_block_decodes_to_what_was_encoded(
    requests: list[list[tuple[bytes, bytes, bool]]], resizes: list[int | None]
) -> None:
    encoder, decoder = HeaderEncoder(), Decoder()
    for block, size in zip(requests, resizes, strict=False):
        if size is not None:
            # A peer's SETTINGS_HEADER_TABLE_SIZE: the encoder must signal it.
            encoder.header_table_size = size
        encoded = encoder.encode([as_sent(f) for f in block])
        decoded = decoder.decode(encoded, raw=True)
        assert [(bytes(n), bytes(v)) for n, v in decoded] == [(n, v) for n, v, _ in block]
        # Never-indexed fields reach the peer marked so (RFC 7541 §7.1.3).
        assert [not h.indexable for h in decoded] == [never for _, _, never in block]


def test_a_repeated_request_costs_a_byte_per_indexed_field() -> None:
    encoder = HeaderEncoder()
    constant = [(b":method", b"POST"), (b"authorization", b"bearer " + b"t" * 200)]
    first = encoder.encode([*constant, NeverIndexedHeaderTuple(b"apns-id", b"1" * 36)])
    second = encoder.encode([*constant, NeverIndexedHeaderTuple(b"apns-id", b"2" * 36)])
    assert len(first) > 240
    # :method POST is static index 3; authorization is now dynamic index 62:
    # one byte each, then the never-indexed literal (1 + 1 + 7 + 1 + 36 bytes).
    assert second[:2] == bytes([0x80 | 3, 0x80 | 62])
    assert len(second) == 2 + 1 + 1 + len(b"apns-id") + 1 + 36
    decoder = Decoder()
    decoder.decode(first, raw=True)
    assert list(decoder.decode(second, raw=True))[1] == (b"authorization", b"bearer " + b"t" * 200)
