"""Edits of a notification not yet sent: a JSON merge patch (RFC 7396) and `If-Match`.

API.md, "After sending": a PATCH names fields of the create request by their
API names; `null` clears an optional one, `metadata` is replaced whole, and
at most one timing is given (`scheduledAt`, or `delay` with `customDelay`,
or `deliverAt`), which replaces the original's timing. The merged request is
then validated by the create's own rules (the converter structures it into a
`NewNotification`), so an edit can never store what a create would refuse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pushcore.domain.errors import FieldError, ValidationError

# The one timing a request may give, each group a way to say when.
TIMINGS: tuple[frozenset[str], ...] = (
    frozenset({"scheduledAt"}),
    frozenset({"delay", "customDelay"}),
    frozenset({"deliverAt"}),
)
TIMING_FIELDS = frozenset().union(*TIMINGS)
# The two ways to say when it expires: a patch giving one drops the other.
EXPIRY_FIELDS = frozenset({"ttl", "expiresAt"})
EDITABLE = frozenset(
    {
        "title",
        "body",
        "iconStyle",
        "sound",
        "priority",
        "metadata",
        "senderName",
        "senderIcon",
        "targetDeviceToken",
        "ttl",
        "expiresAt",
        "renotify",
    }
    | TIMING_FIELDS
)
# Fields that say what a notification is, not how it reads: a different one is
# a different notification (send a new one, or /replace).
FIXED = frozenset({"collapseKey", "stream"})
NOT_EDITABLE_HINT = (
    "a delivery has been handed to a gateway: use POST /api/notifications/{}/replace"
)


def merge_patch(original: Mapping[str, Any], patch: object) -> dict[str, Any]:
    """The create request ``original`` with ``patch`` merged in; ValidationError naming
    every field the patch may not carry, an empty patch, or two timings."""
    if not isinstance(patch, Mapping):
        raise ValidationError([FieldError("body", "must be a JSON object (a merge patch)")])
    errors = [
        FieldError(name, "cannot change; send a new notification or use /replace")
        for name in patch
        if name in FIXED
    ]
    errors += [
        FieldError(name, "is not a field a PATCH can change")
        for name in patch
        if name not in EDITABLE and name not in FIXED
    ]
    if not patch:
        errors.append(FieldError("body", "names no field to change"))
    given = [group for group in TIMINGS if group & patch.keys()]
    if len(given) > 1:
        names = ", ".join(sorted(TIMING_FIELDS & patch.keys()))
        errors.append(FieldError("body", f"gives two timings ({names}): give one"))
    if errors:
        raise ValidationError(errors)
    merged = dict(original)
    if given:
        # A new timing replaces the old one whole: `delay` after `scheduledAt` is not both.
        for name in TIMING_FIELDS:
            merged.pop(name, None)
    if EXPIRY_FIELDS & patch.keys():
        for name in EXPIRY_FIELDS:
            merged.pop(name, None)
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


_ETAG = re.compile(r'\s*(?:W/)?(?:"([0-9]{1,18})"|([0-9]{1,18}))\s*')


def if_match_revision(header: str | None) -> int | None:
    """The revision an `If-Match` header asks for (bare `3`, quoted `"3"`, weak `W/"3"`);
    None when absent or `*` (any revision). ValidationError for anything else."""
    if header is None or header.strip() == "*":
        return None
    matched = _ETAG.fullmatch(header)
    if matched is None:
        raise ValidationError(
            [FieldError("If-Match", 'must be a revision number, as `3` or `"3"`')]
        )
    return int(matched.group(1) or matched.group(2))
