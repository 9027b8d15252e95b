"""client.notifications.deliveries: a notification's deliveries, device by device."""

from __future__ import annotations

from pushcore.client._call import Auth, Call, one, path, query
from pushcore.client._resource import Pages
from pushcore.converter.deliveries import DeliveryPageView, DeliveryView
from pushcore.domain.receipts import PublicStatus

# The largest page the API serves: the fewest requests for a full listing.
PAGE_SIZE = 100


def deliveries_page(
    notification_id: str,
    status: PublicStatus | str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[DeliveryPageView]:
    """One page of the notification's deliveries, in id order: ``limit`` (1-100) after
    ``cursor``, only those in ``status`` when given."""
    params = query(limit=PAGE_SIZE if limit is None else limit, status=status, cursor=cursor)
    url = path("/api/notifications/{}/deliveries", notification_id)
    return Call("GET", url, Auth.KEY, one(DeliveryPageView), params=params)


def every_delivery(
    notification_id: str, status: PublicStatus | str | None = None
) -> Pages[DeliveryView]:
    """Every delivery of the notification (in ``status``, if given), page after page."""
    return Pages(lambda cursor: deliveries_page(notification_id, status, cursor=cursor))
