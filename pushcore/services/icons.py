"""The check of the icon URLs people give (``senderIcon``, ``iconUrl``), for every use case."""

from __future__ import annotations

from collections.abc import Mapping

from pushcore.domain.errors import FieldError
from pushcore.ports import IconProbe


async def probe_icons(
    probe: IconProbe, account_id: str, urls: Mapping[str, str | None]
) -> list[FieldError]:
    """The field errors of the icon URLs named (field -> URL; None: no icon, no check).

    Awaited on the caller's event loop, so a slow icon server holds no thread
    (the probe raises RateLimited when too many checks run). The errors are
    returned, not raised: a use case reports them with its other field errors.
    """
    errors: list[FieldError] = []
    # One check per distinct URL: a batch may name one icon in every item.
    verdicts: dict[str, str | None] = {}
    for field, url in urls.items():
        if url is None:
            continue
        if url not in verdicts:
            try:
                await probe.check(url, account_id)
                verdicts[url] = None
            except ValueError as exc:
                verdicts[url] = str(exc)
        problem = verdicts[url]
        if problem is not None:
            errors.append(FieldError(field, problem))
    return errors
