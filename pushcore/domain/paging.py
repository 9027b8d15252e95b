"""A page of a list read a page at a time, and how one is cut from what a store read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import attrs

from pushcore.domain.errors import FieldError, ValidationError

T = TypeVar("T")

MAX_PAGE = 100  # the largest page a list serves


@attrs.frozen
class Page(Generic[T]):
    """Items in the list's order; ``next_key`` is the last one's key when more follow."""

    items: Sequence[T]
    next_key: str | None


def cut(found: Sequence[T], limit: int, key: Callable[[T], str]) -> Page[T]:
    """The page of the first ``limit`` of ``found``, which was read as ``limit + 1``:
    the one more than asked tells whether another page follows."""
    items = found[:limit]
    return Page(items, key(items[-1]) if len(found) > limit else None)


def check_limit(limit: int) -> None:
    """A ValidationError naming ``limit`` unless it is a page size a list serves."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationError([FieldError("limit", f"must be from 1 to {MAX_PAGE}")])
