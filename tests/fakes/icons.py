"""An icon probe for tests that are not about fetching icons."""

from __future__ import annotations


class FakeIconProbe:
    """Accepts URLs ending in .png or .jpg; refuses the rest like the real probe would."""

    def __init__(self) -> None:
        self.checked: list[str] = []

    async def check(self, url: str, account_id: str) -> None:
        """ValueError unless the URL looks like a PNG or JPEG."""
        self.checked.append(url)
        if not url.endswith((".png", ".jpg")):
            raise ValueError("must be a PNG or JPEG image")
