"""Draws the app's icons (pushcore_http/webapp/icons/*.png) without any image library.

Run once when the design changes; the PNGs are committed. A white "signal"
(a dot inside a ring) on blue: the "any" icons have rounded corners, the
maskable one is full bleed with the mark inside the central safe zone (80%).
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

BLUE = (29, 78, 216)
WHITE = (255, 255, 255)
SAMPLES = 4  # per axis: 16 samples a pixel smooth the edges


def _inside(x: float, y: float, corner: float, mark: float) -> tuple[bool, bool]:
    """(on the background, on the white mark) for a point of the unit square."""
    dx, dy = abs(x - 0.5), abs(y - 0.5)
    background = True
    if corner:
        inner = 0.5 - corner
        if dx > inner and dy > inner:
            background = (dx - inner) ** 2 + (dy - inner) ** 2 <= corner**2
    r = ((x - 0.5) ** 2 + (y - 0.5) ** 2) ** 0.5 / mark
    white = r <= 0.16 or 0.3 <= r <= 0.4
    return background, white and background


def draw(size: int, corner: float, mark: float) -> bytes:
    """RGBA rows of the icon."""
    rows = bytearray()
    n = SAMPLES * SAMPLES
    for py in range(size):
        rows.append(0)  # filter: none
        for px in range(size):
            bg = wh = 0
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    x = (px + (sx + 0.5) / SAMPLES) / size
                    y = (py + (sy + 0.5) / SAMPLES) / size
                    b, w = _inside(x, y, corner, mark)
                    bg += b
                    wh += w
            alpha = bg / n
            if bg == 0:
                rows += bytes(4)
                continue
            share = wh / bg
            rgb = [round(BLUE[i] * (1 - share) + WHITE[i] * share) for i in range(3)]
            rows += bytes([*rgb, round(alpha * 255)])
    return bytes(rows)


def png(size: int, rgba: bytes) -> bytes:
    """A PNG file of ``size`` x ``size`` RGBA pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rgba, 9))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    """Write the icons beside the app's files."""
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "pushcore_http/webapp/icons")
    out.mkdir(parents=True, exist_ok=True)
    for name, size, corner, mark in (
        ("icon-192.png", 192, 0.2, 1.0),
        ("icon-512.png", 512, 0.2, 1.0),
        ("maskable-512.png", 512, 0.0, 0.7),
        ("badge-96.png", 96, 0.2, 1.0),
    ):
        (out / name).write_bytes(png(size, draw(size, corner, mark)))


if __name__ == "__main__":
    main()
