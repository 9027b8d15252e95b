"""JSON <-> domain: one cattrs converter, request structuring, and response views by resource."""

from pushcore.converter._base import (
    camel,
    converter,
    maybe_timestamp,
    parse_timestamp,
    structure_request,
)
from pushcore.converter.devices import device_json
from pushcore.converter.keys import api_key_created_json, api_key_json
from pushcore.converter.notifications import (
    decode_cursor,
    encode_cursor,
    notification_created_json,
    notification_json,
    parse_list_query,
    stats_json,
)
from pushcore.converter.streams import (
    lookup_json,
    send_result_json,
    stream_json,
    stream_summary_json,
    subscription_json,
)
from pushcore.domain.timefmt import format_timestamp

__all__ = [
    "api_key_created_json",
    "api_key_json",
    "camel",
    "converter",
    "decode_cursor",
    "device_json",
    "encode_cursor",
    "format_timestamp",
    "lookup_json",
    "maybe_timestamp",
    "notification_created_json",
    "notification_json",
    "parse_list_query",
    "parse_timestamp",
    "send_result_json",
    "stats_json",
    "stream_json",
    "stream_summary_json",
    "structure_request",
    "subscription_json",
]
