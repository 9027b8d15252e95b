"""The one error tree of pushcore.

Every failure a caller can act on is a subclass of :class:`PushcoreError`.
Adapters map these classes once (HTTP status table, CLI exit code table),
looked up along the class hierarchy, so a new subclass inherits the mapping
of its parent until it needs its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

# The message of a 404 for a path the server has no route for, which a client tells
# apart from an unknown id (it then names the URL it tried).
NO_SUCH_ENDPOINT = "Not found: no such endpoint"


@attrs.frozen
class FieldError:
    """One invalid field of a request: where it is and what is wrong."""

    field: str
    message: str


class PushcoreError(Exception):
    """Base of every error pushcore raises on purpose.

    ``code`` is the API's snake_case error code. ``status`` is the HTTP status
    when the error is a server's answer to the client, else None.
    """

    code = "internal_error"
    status: int | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(PushcoreError):
    """The input is well-formed JSON but breaks a rule; lists every bad field."""

    code = "validation_error"

    def __init__(self, details: Sequence[FieldError], message: str | None = None) -> None:
        if message is None:
            fields = ", ".join(d.field for d in details)
            message = f"Invalid request: {fields}" if fields else "Invalid request"
        super().__init__(message)
        self.details = tuple(details)

    def __str__(self) -> str:
        # What went wrong with each field, not only which: "Invalid request: token: host
        # 'example.com' cannot be resolved".
        if not self.details:
            return self.message
        said = "; ".join(f"{d.field}: {d.message}" for d in self.details)
        return f"Invalid request: {said}"


class InvalidJson(PushcoreError):
    """The body is not JSON, or not a JSON object where one is required."""

    code = "invalid_json"


class Unauthorized(PushcoreError):
    """Credentials are missing, invalid, revoked, expired or lack a scope.

    ``hint``, when given, says what to do instead (API.md pins the message;
    over HTTP the hint is the ``error_description`` of the ``WWW-Authenticate``
    challenge, RFC 6750). Plain text without quotes or backslashes.
    """

    code = "unauthorized"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        # A server's message already ends with its hint (API.md: the hint follows the words).
        if self.hint is None or self.hint in self.message:
            return self.message
        return f"{self.message} ({self.hint})"


class InvalidSignature(Unauthorized):
    """A webhook's body, headers and secret do not verify (``pushcore.webhooks.verify``):
    a bad or missing signature, or a timestamp too far from the receiver's clock."""

    code = "invalid_signature"


class Forbidden(PushcoreError):
    """The caller is known but a business rule refuses the action."""

    code = "forbidden"


class PlanLimit(Forbidden):
    """The account's plan does not allow more of this resource."""

    code = "plan_limit"


class OwnStream(Forbidden):
    """A stream's creator tried to subscribe to their own stream."""

    code = "own_stream"


class SignupDisabled(Forbidden):
    """Sign-up is off on this server (PUSHCORE_SIGNUP): an operator makes accounts."""

    code = "signup_disabled"


class NotFound(PushcoreError):
    """No such resource in the caller's account (whether or not it exists elsewhere)."""

    code = "not_found"


class DeviceNotFound(NotFound):
    """A notification names a device token the account has not registered."""

    code = "device_not_found"


class Conflict(PushcoreError):
    """The resource's current state does not allow the action."""

    code = "conflict"


class AlreadySubscribed(Conflict):
    """The caller already has a subscription to this stream."""

    code = "already_subscribed"


class NotCancellable(Conflict):
    """The notification has been handed to a gateway, settled or cancelled."""

    code = "not_cancellable"


class NotEditable(Conflict):
    """A PATCH came after a delivery was handed to a gateway, or after it was settled."""

    code = "not_editable"


class RevisionMismatch(PushcoreError):
    """`If-Match` names a revision the notification no longer (or never) had."""

    code = "revision_mismatch"


class AccountExists(Conflict):
    """An account with this id exists already."""

    code = "account_exists"


class IllegalTransition(Conflict):
    """A state machine was asked for a transition its table does not have."""

    code = "illegal_transition"


class IdempotencyKeyInUse(Conflict):
    """The request with this Idempotency-Key is still being handled."""

    code = "idempotency_key_in_use"


class IdempotencyKeyReused(PushcoreError):
    """This Idempotency-Key was already used with a different request body."""

    code = "idempotency_key_reused"


class MethodNotAllowed(PushcoreError):
    """The path exists but does not take this HTTP method."""

    code = "method_not_allowed"


class PayloadTooLarge(PushcoreError):
    """The request body is over the size limit."""

    code = "payload_too_large"


class UnsupportedMediaType(PushcoreError):
    """The request body is not of a media type the endpoint reads (JSON)."""

    code = "unsupported_media_type"


class RateLimited(PushcoreError):
    """Too many requests; ``retry_after`` says how many seconds to wait."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(PushcoreError):
    """The database cannot serve now: unreachable, not answering, locked past a short
    wait, or unable to write (disk full); try again after ``retry_after`` seconds.
    Nothing was stored, unless the database went away while the write's COMMIT
    was under way.

    The storage adapters raise it in place of their driver's errors, within a
    bounded wait (see docs/deployment.md, "Database outages"), so that a caller
    hears of an outage in seconds rather than hanging or failing obscurely.
    """

    code = "unavailable"

    def __init__(self, message: str, retry_after: int = 2) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ConfigError(PushcoreError):
    """A setting is invalid; the message names the setting."""

    code = "config_error"


class ServerError(PushcoreError):
    """The server failed (a 5xx) or answered something that is not the API's JSON."""

    code = "internal_error"


class ConnectionFailed(PushcoreError):
    """No answer from the server: refused, unreachable, timed out (after the retries)."""

    code = "connection_failed"


class ScheduleEnded(Conflict):
    """A completed schedule was paused, resumed or triggered (API.md: 409)."""

    code = "schedule_ended"
