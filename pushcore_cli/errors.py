"""The one error map of pushctl: error class -> exit code, looked up along the class hierarchy.

API.md fixes the codes: 0 on success, 1 when the service refuses, 2 for usage
errors (those are Typer's own and never reach this map). The table still
names the families so that a new one can get its own code in one place.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperGroup

from pushcore.domain import errors as e
from pushcore_cli import output

EXIT_REFUSED = 1

EXIT_CODES: dict[type[e.PushcoreError], int] = {
    e.ValidationError: EXIT_REFUSED,
    e.InvalidJson: EXIT_REFUSED,
    e.Unauthorized: EXIT_REFUSED,
    e.Forbidden: EXIT_REFUSED,
    e.NotFound: EXIT_REFUSED,
    e.Conflict: EXIT_REFUSED,
    e.RateLimited: EXIT_REFUSED,
    e.Unavailable: EXIT_REFUSED,
    e.ConfigError: EXIT_REFUSED,
    e.PushcoreError: EXIT_REFUSED,
}


def exit_code_for(error: e.PushcoreError) -> int:
    """The exit code of an error: that of the nearest class in :data:`EXIT_CODES`."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return EXIT_REFUSED


def report(error: e.PushcoreError) -> None:
    """Print an expected error on stderr, with one line per invalid field."""
    details = error.details if isinstance(error, e.ValidationError) else ()
    output.error(error.message, details)
    if isinstance(error, e.Unauthorized) and error.hint and error.hint not in error.message:
        output.say(f"hint: {error.hint}")


def renamed(error: e.ValidationError, options: Mapping[str, str]) -> e.ValidationError:
    """``error`` with its API field names replaced by the options that set them.

    ``options`` maps a field (``customDelay``) or its head (``metadata`` for
    ``metadata.team``, ``keys`` for ``keys.auth``) to an option; an exact
    field wins over its head. Fields no option sets keep their names.
    """
    details: list[e.FieldError] = []
    for detail in error.details:
        # The client names fields as its arguments (custom_delay); the tables use the
        # API's names (customDelay).
        field = api_name(detail.field)
        head = field.split(".")[0].split("[")[0]
        option = options.get(field) or options.get(head) or detail.field
        # JSON's words are not the command line's: an option cannot be null.
        renamed_detail = e.FieldError(option, detail.message.replace(" or null", ""))
        if renamed_detail not in details:
            details.append(renamed_detail)
    # A message of our own ("Invalid request: customDelay") is rebuilt; a server's
    # other wording is kept.
    message = None if error.message == e.ValidationError(error.details).message else error.message
    return e.ValidationError(details, message)


def api_name(field: str) -> str:
    """``custom_delay`` as the API names it (``customDelay``), up to a metadata key."""
    parts = field.split(".")
    for i, part in enumerate(parts):
        head, *rest = part.split("_")
        parts[i] = head + "".join(word[:1].upper() + word[1:] for word in rest)
        if head.split("[")[0] == "metadata":
            break
    return ".".join(parts)


@contextmanager
def naming_options(options: Mapping[str, str]) -> Iterator[None]:
    """Validation errors raised inside name the command's options, not API fields."""
    try:
        yield
    except e.ValidationError as error:
        raise renamed(error, options) from None


class PushctlGroup(TyperGroup):
    """The root command group: every subcommand runs inside it, so errors are mapped here once."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        """Run the command line; expected errors become a message and an exit code."""
        try:
            return super().invoke(ctx)
        except e.PushcoreError as error:
            report(error)
            raise typer.Exit(exit_code_for(error)) from None
        except BrokenPipeError:
            # `pushctl ... | head`: the reader has gone, which is not an error of
            # ours. Point stdout at /dev/null so the interpreter's final flush is
            # quiet too, and exit as a process killed by SIGPIPE does.
            import os
            import sys

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(141) from None
        except OSError as error:
            # An unreadable data directory or a port in use is the operator's to fix,
            # not a bug: a message, not a traceback.
            output.error(str(error))
            raise typer.Exit(EXIT_REFUSED) from None
