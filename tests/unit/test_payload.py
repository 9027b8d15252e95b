"""shorten_to_fit: the text cut for every platform's size limit (APNs, FCM, Web Push)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.payload import ELLIPSIS, shorten_to_fit

texts = st.text(max_size=300)


def size_of(texts: dict[str, str]) -> int:
    # As the platforms measure: UTF-8 JSON, escapes included.
    return len(json.dumps(texts, ensure_ascii=False).encode())


@given(title=texts, body=texts, limit=st.integers(min_value=0, max_value=900))
def test_what_fits_is_kept_and_the_rest_is_cut_body_first(
    title: str, body: str, limit: int
) -> None:
    fitted = {"title": title, "body": body}
    fits = shorten_to_fit(fitted, ("body", "title"), lambda: size_of(fitted), limit)
    if not fits:
        # Only when nothing but the text's neighbours are left, and still too large.
        assert size_of({"title": "", "body": ""}) > limit
        return
    assert size_of(fitted) <= limit
    if size_of({"title": title, "body": body}) <= limit:
        assert fitted == {"title": title, "body": body}  # untouched when it fits
        return
    for field, original in (("body", body), ("title", title)):
        cut = fitted[field]
        # Either whole, emptied, or a prefix ending in the ellipsis.
        assert cut in (original, "") or (
            cut.endswith(ELLIPSIS) and original.startswith(cut[: -len(ELLIPSIS)])
        )
    if fitted["title"] != title:
        assert fitted["body"] == ""  # the title is cut only once the body is gone


@given(body=st.text(min_size=50, max_size=300), limit=st.integers(min_value=40, max_value=400))
def test_the_cut_body_is_the_longest_prefix_that_fits(body: str, limit: int) -> None:
    fitted = {"title": "t", "body": body}
    if not shorten_to_fit(fitted, ("body", "title"), lambda: size_of(fitted), limit):
        return
    cut = fitted["body"]
    if cut in (body, "") or fitted["title"] != "t":
        return
    kept = len(cut) - len(ELLIPSIS)
    # No longer prefix (trimmed and ended as the cut is) would have fitted.
    longer_fits = [
        k
        for k in range(len(body))
        if len(body[:k].rstrip()) > kept
        and size_of({"title": "t", "body": body[:k].rstrip() + ELLIPSIS}) <= limit
    ]
    assert longer_fits == []
