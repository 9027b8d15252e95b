"""pushctl's errors in the command line's words: options, not API fields or JSON terms."""

from __future__ import annotations

from pushcore.domain.errors import FieldError, ValidationError
from pushcore_cli.errors import api_name, renamed

OPTIONS = {"senderName": "--sender-name", "customDelay": "--delay", "metadata": "--metadata"}


def test_fields_become_options_from_the_clients_names_and_lose_json_words() -> None:
    error = ValidationError(
        [
            FieldError("sender_name", "must be a string or null"),
            FieldError("custom_delay", "must be from 1 to 86400"),
            FieldError("metadata.build_no", "must be a string"),
            FieldError("unknown_field", "is not a field"),
        ]
    )

    said = renamed(error, OPTIONS)

    assert [(d.field, d.message) for d in said.details] == [
        ("--sender-name", "must be a string"),
        ("--delay", "must be from 1 to 86400"),
        ("--metadata", "must be a string"),
        ("unknown_field", "is not a field"),
    ]
    assert said.message == "Invalid request: --sender-name, --delay, --metadata, unknown_field"


def test_api_names_keep_metadata_keys_as_given() -> None:
    assert api_name("notifications[3].custom_delay") == "notifications[3].customDelay"
    assert api_name("metadata.build_no") == "metadata.build_no"
    assert api_name("title") == "title"
